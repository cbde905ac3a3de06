/*
 * uid/gid range slots. Every live sandbox owns one slot; the slot decides its
 * host uid range, so two sandboxes never share a host uid and a process that
 * escapes one sandbox's namespaces still cannot touch another's files.
 *
 * A slot is taken by creating <run>/slots/<n> with O_EXCL (atomic across
 * processes: the daemon and any number of `hutch run`); the file holds the
 * sandbox id so that leftovers can be traced.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime_internal.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

int hu_slot_acquire(struct hu_runtime *rt, const char *id, uint32_t *slot, hu_err *err)
{
	struct timespec ts;
	char path[PATH_MAX];

	/* start at a time-derived point so concurrent creators rarely collide */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint32_t start = (uint32_t)(ts.tv_nsec / 1000) % HU_SLOTS_MAX;
	for (uint32_t i = 0; i < HU_SLOTS_MAX; i++) {
		uint32_t s = (start + i) % HU_SLOTS_MAX;
		snprintf(path, sizeof(path), "%s/%u", rt->slots_dir, s);
		_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			if (errno == EEXIST)
				continue;
			return hu_err_sys(err, "create %s", path);
		}
		if (hu_write_all(fd, id, strlen(id)) < 0) {
			unlink(path);
			return hu_err_sys(err, "write %s", path);
		}
		*slot = s;
		return 0;
	}
	return hu_err_set(err, EAGAIN, "all %u uid slots are in use", HU_SLOTS_MAX);
}

int hu_slot_acquire_exact(struct hu_runtime *rt, const char *id, uint32_t slot, hu_err *err)
{
	char path[PATH_MAX], buf[HU_ID_MAX + 1];
	hu_err ignore;

	if (slot >= HU_SLOTS_MAX)
		return hu_err_set(err, EINVAL, "uid slot %u out of range", slot);
	snprintf(path, sizeof(path), "%s/%u", rt->slots_dir, slot);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		if (hu_read_file(path, buf, sizeof(buf), &ignore) >= 0 && !strcmp(buf, id))
			return 0; /* already ours */
		return hu_err_set(err, EBUSY, "uid slot %u is held by another sandbox", slot);
	}
	if (fd < 0)
		return hu_err_sys(err, "create %s", path);
	if (hu_write_all(fd, id, strlen(id)) < 0) {
		unlink(path);
		return hu_err_sys(err, "write %s", path);
	}
	return 0;
}

void hu_slot_release(struct hu_runtime *rt, uint32_t slot)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%u", rt->slots_dir, slot);
	unlink(path);
}

/* Call fn for every slot file recording sandbox `id`. */
static void each_slot_of(struct hu_runtime *rt, const char *id, void (*fn)(const char *path, const char *name, void *),
			 void *arg)
{
	DIR *d = opendir(rt->slots_dir);
	struct dirent *de;
	char path[PATH_MAX], buf[HU_ID_MAX + 1];
	hu_err ignore;

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", rt->slots_dir, de->d_name);
		if (hu_read_file(path, buf, sizeof(buf), &ignore) >= 0 && !strcmp(buf, id))
			fn(path, de->d_name, arg);
	}
	closedir(d);
}

static void unlink_slot(const char *path, const char *name, void *arg)
{
	(void)name;
	(void)arg;
	unlink(path);
}

void hu_slot_release_id(struct hu_runtime *rt, const char *id)
{
	each_slot_of(rt, id, unlink_slot, NULL);
}

struct found_slot {
	int found;
	uint32_t slot;
};

static void note_slot(const char *path, const char *name, void *arg)
{
	struct found_slot *f = arg;
	char *end;
	unsigned long v = strtoul(name, &end, 10);
	(void)path;
	if (*end == '\0' && v < HU_SLOTS_MAX) {
		f->found = 1;
		f->slot = (uint32_t)v;
	}
}

int hu_slot_find_id(struct hu_runtime *rt, const char *id, uint32_t *slot, hu_err *err)
{
	struct found_slot f = {0};
	each_slot_of(rt, id, note_slot, &f);
	if (!f.found)
		return hu_err_set(err, ENOENT, "no uid slot of sandbox %s", id);
	*slot = f.slot;
	return 0;
}
