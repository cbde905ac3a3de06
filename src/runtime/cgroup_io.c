/*
 * Block I/O of a sandbox's group: a weight (its share of a disk against the
 * other sandboxes) and optional caps (bytes and operations a second, read
 * and write each) on the disks its files live on.
 *
 *   v2:  io.weight "default N" (iocost) or io.bfq.weight "N" (bfq), and
 *        io.max "MAJ:MIN rbps=B wbps=B riops=I wiops=I" per disk.
 *   v1:  blkio.weight (cfq, 10..1000) or blkio.bfq.weight (1..1000), and
 *        blkio.throttle.{read,write}_{bps,iops}_device "MAJ:MIN N" per disk.
 *
 * A knob the kernel lacks (no iocost, no bfq, no throttling) is skipped:
 * the host decides what it offers and `hutch doctor` reports it. A knob
 * that exists but refuses a value is an error: the operator asked for a
 * cap, and a sandbox must not start silently without it.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cgroup.h"
#include "runtime/cgroup_internal.h"
#include "util/cleanup.h"
#include "util/fileutil.h"
#include "util/parse.h"

#define WEIGHT_MAX_V2 10000u
#define WEIGHT_MAX_BFQ 1000u
#define WEIGHT_MIN_CFQ 10u
#define BPS_MIN (1ull << 20)
#define IOPS_MIN 100u

int hu_cgroup_io_parse(const char *weight, const char *bps, const char *iops, struct hu_cgroup_io *out,
		       hu_err *err)
{
	uint64_t v;

	if (weight) {
		if (hu_parse_u64(weight, &v, err) < 0)
			return -1;
		if (v < 1 || v > WEIGHT_MAX_V2)
			return hu_err_set(err, -EINVAL, "I/O weight %llu: 1 .. %u (100 is the kernel's default)",
					  (unsigned long long)v, WEIGHT_MAX_V2);
		out->weight = (uint32_t)v;
	}
	if (bps) {
		if (hu_parse_size(bps, &v, err) < 0)
			return -1;
		if (v != 0 && v < BPS_MIN)
			return hu_err_set(err, -EINVAL, "I/O cap of %llu bytes a second: 0 (none) or at least 1M",
					  (unsigned long long)v);
		out->bps = v;
	}
	if (iops) {
		if (hu_parse_u64(iops, &v, err) < 0)
			return -1;
		if (v != 0 && v < IOPS_MIN)
			return hu_err_set(err, -EINVAL, "I/O cap of %llu operations a second: 0 (none) or at least %u",
					  (unsigned long long)v, IOPS_MIN);
		out->iops = v;
	}
	return 0;
}

static unsigned clamp(unsigned v, unsigned lo, unsigned hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The first of the weight knobs the kernel has, with the value it takes. */
struct weight_knob {
	const char *knob;
	bool keyed; /* "default N" rather than "N" */
	unsigned lo, hi;
};

static int set_weight(struct hu_cgroup *cg, enum hu_cg_hier h, const struct weight_knob *k, size_t n,
		      uint32_t weight, hu_err *err)
{
	char val[32];
	bool done = false;

	if (!weight)
		return 0;
	for (size_t i = 0; i < n && !done; i++) {
		snprintf(val, sizeof(val), "%s%u", k[i].keyed ? "default " : "", clamp(weight, k[i].lo, k[i].hi));
		if (hu_cg_write_if_present(cg, h, k[i].knob, val, &done, err) < 0)
			return -1;
	}
	return 0;
}

/* "max" for no cap, else the number. */
static void cap_text(char *buf, size_t n, uint64_t v)
{
	if (v)
		snprintf(buf, n, "%llu", (unsigned long long)v);
	else
		snprintf(buf, n, "max");
}

int hu_cg_v2_set_io(struct hu_cgroup *cg, const struct hu_cgroup_io *io, hu_err *err)
{
	static const struct weight_knob weights[] = {
		{"io.weight", true, 1, WEIGHT_MAX_V2},
		{"io.bfq.weight", false, 1, WEIGHT_MAX_BFQ},
	};
	char b[24], i[24], val[160];
	bool present;

	if (set_weight(cg, HU_CG_UNIFIED, weights, HU_ARRAY_LEN(weights), io->weight, err) < 0)
		return -1;
	if (!io->bps && !io->iops)
		return 0;
	cap_text(b, sizeof(b), io->bps);
	cap_text(i, sizeof(i), io->iops);
	for (unsigned d = 0; d < io->n_dev; d++) {
		snprintf(val, sizeof(val), "%u:%u rbps=%s wbps=%s riops=%s wiops=%s", io->dev[d].major,
			 io->dev[d].minor, b, b, i, i);
		if (hu_cg_write_if_present(cg, HU_CG_UNIFIED, "io.max", val, &present, err) < 0)
			return -1;
		if (!present)
			break; /* no throttling in this kernel */
	}
	return 0;
}

int hu_cg_v1_set_io(struct hu_cgroup *cg, const struct hu_cgroup_io *io, hu_err *err)
{
	static const struct weight_knob weights[] = {
		{"blkio.bfq.weight", false, 1, WEIGHT_MAX_BFQ},
		{"blkio.weight", false, WEIGHT_MIN_CFQ, WEIGHT_MAX_BFQ},
	};
	static const char *const caps[] = {"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
					   "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"};
	char val[64];
	bool present = true;

	if (set_weight(cg, HU_CG_BLKIO, weights, HU_ARRAY_LEN(weights), io->weight, err) < 0)
		return -1;
	for (unsigned d = 0; d < io->n_dev && present; d++) {
		for (size_t k = 0; k < HU_ARRAY_LEN(caps) && present; k++) {
			uint64_t v = k < 2 ? io->bps : io->iops;
			if (!v)
				continue;
			snprintf(val, sizeof(val), "%u:%u %llu", io->dev[d].major, io->dev[d].minor,
				 (unsigned long long)v);
			if (hu_cg_write_if_present(cg, HU_CG_BLKIO, caps[k], val, &present, err) < 0)
				return -1;
		}
	}
	return 0;
}

/* ---- what the host offers (hutch doctor) ---------------------------------- */

static bool has_file(const char *dir, const char *file)
{
	char path[PATH_MAX];

	return snprintf(path, sizeof(path), "%s/%s", dir, file) < (int)sizeof(path) && access(path, F_OK) == 0;
}

/* The per-group knobs appear in a child group only: look in a throw-away one. */
static int look_in_child(const char *root, struct hu_cgroup_io_support *out, const char *const *weights,
			 size_t n_weights, const char *cap_knob, hu_err *err)
{
	char dir[PATH_MAX];

	if (snprintf(dir, sizeof(dir), "%s/hutch-io-probe-%d", root, (int)getpid()) >= (int)sizeof(dir))
		return hu_err_set(err, ENAMETOOLONG, "cgroup path");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return hu_err_sys(err, "mkdir %s", dir);
	for (size_t i = 0; i < n_weights && !out->weight; i++)
		if (has_file(dir, weights[i]))
			out->weight = weights[i];
	out->caps = has_file(dir, cap_knob);
	if (rmdir(dir) < 0)
		return hu_err_sys(err, "rmdir %s", dir);
	return 0;
}

int hu_cgroup_io_probe(const struct hu_cgroup_env *env, struct hu_cgroup_io_support *out, hu_err *err)
{
	static const char *const v2_weights[] = {"io.weight", "io.bfq.weight"};
	static const char *const v1_weights[] = {"blkio.bfq.weight", "blkio.weight"};
	char path[PATH_MAX], list[512];

	memset(out, 0, sizeof(*out));
	if (env->mode == HU_CGROUP_V2) {
		if (hu_cg_format(path, sizeof(path), err, "%s/cgroup.controllers", env->v2_root) < 0 ||
		    hu_read_file(path, list, sizeof(list), err) < 0)
			return -1;
		if (!hu_cg_list_has(list, "io"))
			return 0;
		out->controller = "io (cgroup2)";
		if (hu_cg_format(path, sizeof(path), err, "%s/cgroup.subtree_control", env->v2_root) < 0 ||
		    hu_read_file(path, list, sizeof(list), err) < 0)
			return -1;
		if (!hu_cg_list_has(list, "io")) {
			out->unknown = 1; /* the first sandbox turns it on; the doctor does not */
			return 0;
		}
		return look_in_child(env->v2_root, out, v2_weights, HU_ARRAY_LEN(v2_weights), "io.max", err);
	}
	if (!env->v1_blkio[0])
		return 0;
	out->controller = "blkio (v1)";
	return look_in_child(env->v1_blkio, out, v1_weights, HU_ARRAY_LEN(v1_weights),
			     "blkio.throttle.read_bps_device", err);
}
