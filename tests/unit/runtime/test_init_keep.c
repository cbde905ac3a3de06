/*
 * The sealed hutch-init held between runtimes (runtime/init_keep.h). This
 * process plays the keeper: it holds a descriptor and records it; a record
 * that passes every check is taken, and every forgery or change is refused
 * (take returns -1, so the runtime seals a copy of its own): a copy that is
 * not sealed against writes, a file on disk instead of a memfd, a changed
 * source file, a record naming a dead process or another start time, and a
 * record that others could have written (mode, owner, links, symlink); and
 * a sysfs view other than the runtime's own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/init_keep.h"
#include "runtime/mountapi.h"
#include "runtime/runtime_internal.h"
#include "runtime/sysfs_view.h"

struct fixture {
	char dir[64];   /* the cache directory, 0700 */
	char src[96];   /* the "hutch-init" copied */
	char rec[96];   /* the record's path */
	struct stat st; /* of src as copied */
	int memfd;      /* its sealed copy */
	int dirfd;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char buf[8192];
	hu_err err;

	snprintf(f->dir, sizeof(f->dir), "/tmp/hutch-initkeep.XXXXXX");
	if (!f || !mkdtemp(f->dir))
		return -1;
	snprintf(f->src, sizeof(f->src), "%s/hutch-init.src", f->dir);
	snprintf(f->rec, sizeof(f->rec), "%s/%s", f->dir, HU_INIT_KEEP_RECORD);
	memset(buf, 'x', sizeof(buf));
	int fd = open(f->src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || close(fd) < 0)
		return -1;
	f->memfd = hu_runtime_seal_binary(f->src, "hutch-init", &f->st, &err);
	f->dirfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->memfd < 0 || f->dirfd < 0 || f->st.st_ino == 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	close(f->memfd);
	close(f->dirfd);
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* The sealed copy the record offers for a source of stat `src`, or -1
 * (hu_init_keep_take; any view it also hands over is closed). */
static int take(int dirfd, const struct stat *src)
{
	int init, view, netns;

	hu_init_keep_take(dirfd, src, &init, &view, &netns);
	if (view >= 0)
		close(view);
	if (netns >= 0)
		close(netns);
	return init;
}

/* The view and namespace the record offers: 0 (both set) or -1 (neither). */
static int take_view(int dirfd, int *view, int *netns)
{
	int init;

	hu_init_keep_take(dirfd, NULL, &init, view, netns);
	assert_int_equal(init, -1); /* no source given: no copy taken */
	return *view >= 0 ? 0 : -1;
}

/* Record `fd` as ours and try to take it back: the descriptor taken, or -1. */
static int record_and_take(struct fixture *f, int fd)
{
	hu_err err;
	assert_int_equal(hu_init_keep_record(f->dirfd, fd, &f->st, -1, -1, &err), 0);
	return take(f->dirfd, &f->st);
}

static void test_take_sealed_copy(void **state)
{
	struct fixture *f = *state;
	struct stat a, b;

	int fd = record_and_take(f, f->memfd);
	assert_true(fd >= 0);
	/* the same file, not a copy of it */
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(f->memfd, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	struct stat rec;
	assert_int_equal(stat(f->rec, &rec), 0);
	assert_int_equal(rec.st_mode & 07777, 0600);
	close(fd);
}

/* A memfd with the same bytes, mode and size that someone could still write */
static void test_unsealed_refused(void **state)
{
	struct fixture *f = *state;
	char buf[8192];

	memset(buf, 'x', sizeof(buf));
	int fd = memfd_create("hutch-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	assert_int_equal(fchmod(fd, 0555), 0);
	assert_int_equal(record_and_take(f, fd), -1);
	/* sealed against growing and shrinking, but not against writes */
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW), 0);
	assert_int_equal(record_and_take(f, fd), -1);
	close(fd);
}

/* The source file itself, opened read-only: root could still write it */
static void test_disk_file_refused(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(chmod(f->src, 0555), 0);
	int fd = open(f->src, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &f->st), 0);
	assert_int_equal(record_and_take(f, fd), -1);
	close(fd);
}

/* The file hutch-init is copied from changed since the copy (rebuilt,
 * rewritten in place): the copy held is of the old bytes */
static void test_changed_source_refused(void **state)
{
	struct fixture *f = *state;
	struct stat now;
	hu_err err;

	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, -1, -1, &err), 0);
	int fd = open(f->src, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "y", 1, 100), 1); /* same size, one byte other */
	close(fd);
	assert_int_equal(stat(f->src, &now), 0);
	assert_int_equal(take(f->dirfd, &now), -1);
	/* the recorded key still takes it: the check is the key, not luck */
	assert_true((fd = take(f->dirfd, &f->st)) >= 0);
	close(fd);
}

/* A record written by a process that has ended since (its pid may be reused) */
static void test_dead_keeper_refused(void **state)
{
	struct fixture *f = *state;
	hu_err err;
	int status;

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(hu_init_keep_record(f->dirfd, f->memfd, &f->st, -1, -1, &err) == 0 ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(take(f->dirfd, &f->st), -1);
}

/* Rewrite the record with one field changed (root-only file, as before). */
static void forge(struct fixture *f, void (*change)(struct hu_init_keep_record *))
{
	struct hu_init_keep_record r;
	hu_err err;

	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, -1, -1, &err), 0);
	int fd = open(f->rec, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &r, sizeof(r), 0), (ssize_t)sizeof(r));
	change(&r);
	assert_int_equal(pwrite(fd, &r, sizeof(r), 0), (ssize_t)sizeof(r));
	close(fd);
}

static void other_start(struct hu_init_keep_record *r) { r->start_time++; }
static void other_pid(struct hu_init_keep_record *r) { r->pid = 1; }
static void other_fd(struct hu_init_keep_record *r) { r->fd = 0; }
static void other_magic(struct hu_init_keep_record *r) { r->magic[0] = 'X'; }

/* A live pid with another start time is a later process under a reused pid;
 * pid 1 holds no such copy at that number; fd 0 is no sealed memfd */
static void test_forged_records_refused(void **state)
{
	struct fixture *f = *state;

	forge(f, other_start);
	assert_int_equal(take(f->dirfd, &f->st), -1);
	forge(f, other_pid);
	assert_int_equal(take(f->dirfd, &f->st), -1);
	forge(f, other_fd);
	assert_int_equal(take(f->dirfd, &f->st), -1);
	forge(f, other_magic);
	assert_int_equal(take(f->dirfd, &f->st), -1);
}

/* A record that anyone but root could have written, or that reaches us
 * through a name outside the cache directory */
static void test_record_file_refused(void **state)
{
	struct fixture *f = *state;
	char other[128];
	hu_err err;

	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, -1, -1, &err), 0);
	assert_int_equal(chmod(f->rec, 0644), 0);
	assert_int_equal(take(f->dirfd, &f->st), -1);
	assert_int_equal(chmod(f->rec, 0600), 0);
	assert_int_equal(chown(f->rec, 1000, 1000), 0);
	assert_int_equal(take(f->dirfd, &f->st), -1);

	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, -1, -1, &err), 0);
	snprintf(other, sizeof(other), "%s/second-name", f->dir);
	assert_int_equal(link(f->rec, other), 0);
	assert_int_equal(take(f->dirfd, &f->st), -1);
	assert_int_equal(unlink(f->rec), 0);
	assert_int_equal(symlink(other, f->rec), 0);
	assert_int_equal(take(f->dirfd, &f->st), -1);
}

/* A keeper that ends removes its own record, and only its own */
static void test_forget(void **state)
{
	struct fixture *f = *state;
	hu_err err;
	int status;

	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, -1, -1, &err), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		hu_init_keep_forget(f->dirfd);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(access(f->rec, F_OK), 0);
	hu_init_keep_forget(f->dirfd);
	assert_int_equal(access(f->rec, F_OK), -1);
	assert_int_equal(take(f->dirfd, &f->st), -1);
}

/* The sysfs view travels with the copy: the runtime's own view is taken,
 * the host's /sys and network namespace recorded in its place are refused
 * (hu_sysfs_view_check; test_sysfs_view.c has every refusal) */
static void test_view_taken_only_if_checked(void **state)
{
	struct fixture *f = *state;
	struct hu_runtime rt = {.sysfs_view = HU_SYSFS_VIEW_UNTRIED, .sysfs_netns = -1};
	hu_err err = {0};
	int clone = -1, v = -1, ns = -1;

	assert_int_equal(hu_sysfs_view_clone(&rt, &clone, &err), 0);
	if (clone < 0) {
		hu_sysfs_view_close(&rt);
		skip(); /* no view on this kernel */
	}
	close(clone);
	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, rt.sysfs_view, rt.sysfs_netns, &err), 0);
	assert_int_equal(take_view(f->dirfd, &v, &ns), 0);
	assert_true(v >= 0 && ns >= 0);
	close(v);
	close(ns);
	/* one call takes both; a changed source costs the copy, not the view */
	int init;
	hu_init_keep_take(f->dirfd, &f->st, &init, &v, &ns);
	assert_true(init >= 0 && v >= 0 && ns >= 0);
	close(init);
	close(v);
	close(ns);
	struct stat other = f->st;
	other.st_ctim.tv_nsec ^= 1;
	hu_init_keep_take(f->dirfd, &other, &init, &v, &ns);
	assert_true(init == -1 && v >= 0 && ns >= 0);
	close(v);
	close(ns);

	int host = hu_open_tree(AT_FDCWD, "/sys", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	int host_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(host >= 0 && host_net >= 0);
	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, host, host_net, &err), 0);
	assert_int_equal(take_view(f->dirfd, &v, &ns), -1);
	assert_true(v == -1 && ns == -1);
	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, host, rt.sysfs_netns, &err), 0);
	assert_int_equal(take_view(f->dirfd, &v, &ns), -1);
	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, rt.sysfs_view, host_net, &err), 0);
	assert_int_equal(take_view(f->dirfd, &v, &ns), -1);
	close(host);
	close(host_net);
	/* none held */
	assert_int_equal(hu_init_keep_record(f->dirfd, f->memfd, &f->st, -1, -1, &err), 0);
	assert_int_equal(take_view(f->dirfd, &v, &ns), -1);
	hu_sysfs_view_close(&rt);
}

static void test_start_time(void **state)
{
	uint64_t a = 0, b = 0;
	hu_err err;

	(void)state;
	assert_int_equal(hu_proc_start_time(getpid(), &a, &err), 0);
	assert_int_equal(hu_proc_start_time(getpid(), &b, &err), 0);
	assert_true(a > 0 && a == b);
	assert_int_equal(hu_proc_start_time(0x3fffffff, &a, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_take_sealed_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsealed_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disk_file_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_changed_source_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_keeper_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forged_records_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_file_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view_taken_only_if_checked, setup, teardown),
		cmocka_unit_test(test_start_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
