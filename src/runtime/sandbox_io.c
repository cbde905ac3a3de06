/*
 * A sandbox's block I/O settings: the runtime's weight and caps (the
 * operator's), tightened by the sandbox's own, applied to the disks its
 * files live on: the templates (its lower layer), the run dir, the host's
 * /usr, and every volume or host mount it gets. Its writable layer is a
 * tmpfs and no disk. A filesystem without one block device of its own
 * (tmpfs, overlay, btrfs, NFS: an anonymous st_dev) names no disk and gets
 * no cap; the weight still counts wherever the group's I/O lands.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "runtime/sandbox_internal.h"
#include "util/fileutil.h"

/* The whole disk a filesystem's device belongs to (io.max and blkio
 * throttling take disks, not partitions): 1 with its numbers set, 0 when dev is
 * no block device the kernel lists. */
static int whole_disk(dev_t dev, uint32_t *major_out, uint32_t *minor_out)
{
	char path[96], text[32];
	unsigned ma, mi;
	hu_err ignore;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	if (access(path, F_OK) < 0)
		return 0;
	/* a partition's directory sits in its disk's: ".." is the disk */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition", major(dev), minor(dev));
	if (access(path, F_OK) == 0)
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../dev", major(dev), minor(dev));
	else
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/dev", major(dev), minor(dev));
	if (hu_read_file(path, text, sizeof(text), &ignore) < 0 || sscanf(text, "%u:%u", &ma, &mi) != 2)
		return 0;
	*major_out = ma;
	*minor_out = mi;
	return 1;
}

static void add_disk(struct hu_cgroup_io *io, dev_t dev)
{
	uint32_t ma, mi;

	if (io->n_dev >= HU_CG_IO_DEVS_MAX || !whole_disk(dev, &ma, &mi))
		return;
	for (unsigned i = 0; i < io->n_dev; i++)
		if (io->dev[i].major == ma && io->dev[i].minor == mi)
			return;
	io->dev[io->n_dev].major = ma;
	io->dev[io->n_dev].minor = mi;
	io->n_dev++;
}

static void add_path(struct hu_cgroup_io *io, const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0)
		add_disk(io, st.st_dev);
}

/* The tighter of two caps (0 = none). */
static uint64_t tighter(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

void hu_sbx_io_limits(const struct hu_runtime *rt, const struct hu_sandbox_spec *spec, struct hu_cgroup_io *io)
{
	const struct hu_cgroup_io *own = &spec->limits.io;
	struct stat st;

	memset(io, 0, sizeof(*io));
	io->weight = own->weight ? own->weight : rt->io.weight;
	io->bps = tighter(rt->io.bps, own->bps);
	io->iops = tighter(rt->io.iops, own->iops);
	if (!io->bps && !io->iops)
		return; /* no cap: the disks are not needed */
	add_path(io, rt->templates_dir);
	add_path(io, rt->sandboxes_dir);
	add_path(io, "/usr");
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct hu_mount_spec *m = &spec->mounts[i];
		if (m->source_fd >= 0 ? fstat(m->source_fd, &st) == 0 : (m->source && stat(m->source, &st) == 0))
			add_disk(io, st.st_dev);
	}
}
