/*
 * The sealed copy of hutch-init (and the sandboxes' sysfs view), handed
 * from one runtime to the next.
 *
 * Every runtime executes hutch-init from a sealed memfd (runtime.c,
 * hu_runtime_seal_binary). Making one copies the binary (~1 MB), a tenth of
 * a `hutch run -- true`. A memfd lives only while a process holds it, so the
 * layers keeper (layers_keeper.c), which outlives a `hutch run` for the
 * linger time anyway, holds it, and records where it is in the run dir's
 * root-only cache directory: its pid, its start time, the descriptor's number
 * and the stat of the file the copy was made from. The next runtime takes the
 * descriptor with pidfd_getfd only if every check passes (docs/security.md,
 * "The sealed hutch-init, held between runs"), and seals a copy of its own
 * otherwise. The sysfs view (sysfs_view.h), whose network namespace costs
 * about as much to make as the sealed copy, travels the same way.
 */
#ifndef HUTCH_RUNTIME_INIT_KEEP_H
#define HUTCH_RUNTIME_INIT_KEEP_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "util/err.h"

/* The seals a copy must carry: nobody, root included, can change its bytes
 * or its size, or lift a seal. */
#define HU_INIT_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

/* What ties a copy to the file it was made from: any write, rename over or
 * rebuild of that file changes its ctime, which nobody can set. */
struct hu_init_key {
	uint64_t dev, ino, size, mtime_s, mtime_ns, ctime_s, ctime_ns;
};

void hu_init_key_of(const struct stat *st, struct hu_init_key *key);

/* The record, a file of this name in the cache directory, written whole by
 * the keeper (a record of another layout fails the size or magic check). */
#define HU_INIT_KEEP_RECORD "init.keeper"
struct hu_init_keep_record {
	char magic[8];       /* "HUINIT1\n" */
	int32_t pid;         /* the keeper */
	int32_t fd;          /* the memfd's number in the keeper */
	uint64_t start_time; /* the keeper's (hu_proc_start_time) */
	struct hu_init_key key;
	int32_t view_fd;       /* the sandboxes' sysfs view (sysfs_view.h) in the keeper, or -1 */
	int32_t view_netns_fd; /* and its network namespace */
};

/* The start time of process `pid` (field 22 of /proc/<pid>/stat, in clock
 * ticks since boot): with the pid, it names one process, never a later one
 * that reuses the pid. */
int hu_proc_start_time(pid_t pid, uint64_t *ticks, hu_err *err);

/* In the process that holds `memfd` (the keeper): record it in the cache
 * directory `dirfd` as this process's descriptor, made from a file with
 * stat `src`, with the sysfs view it also holds (`view`, `view_netns`; -1:
 * none) (written to a private temporary file and renamed into place). */
int hu_init_keep_record(int dirfd, int memfd, const struct stat *src, int view, int view_netns, hu_err *err);

/* Remove the record if it still names this process (a keeper that ends). */
void hu_init_keep_forget(int dirfd);

/* What the recorded keeper holds, for a runtime about to execute the file
 * whose stat is `src` (NULL: the view alone). Nothing is taken (nothing to
 * report: the runtime makes its own) unless the record is root's alone and
 * names a live process by pid and start time. Then:
 * - *init: the sealed copy, if the record's key is `src`'s and the
 *   descriptor is a memfd of src's size, mode 0555, carrying HU_INIT_SEALS;
 *   else -1;
 * - *view and *netns: the sysfs view's mount and network namespace, if both
 *   pass hu_sysfs_view_check; else -1 both. */
void hu_init_keep_take(int dirfd, const struct stat *src, int *init, int *view, int *netns);

#endif
