/*
 * The compiled seccomp program's cache: a first use compiles and stores, a
 * second reads; an entry made for another key is rebuilt; an entry that was
 * tampered with (bytes, mode, owner, links, symlink, size) or a directory
 * that others could write is refused, and the program used is then the one
 * compiled afresh, never the cached one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/seccomp_cache.h"

struct fixture {
	char run[64];
	char cache[96];
	char entry[128];
	struct hu_seccomp_prog fresh; /* hu_seccomp_compile's program */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	hu_err err;

	snprintf(f->run, sizeof(f->run), "/tmp/hutch-sccache.XXXXXX");
	if (!mkdtemp(f->run))
		return -1;
	snprintf(f->cache, sizeof(f->cache), "%s/cache", f->run);
	snprintf(f->entry, sizeof(f->entry), "%s/seccomp.bpf", f->cache);
	if (hu_seccomp_compile(&f->fresh, &err) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", f->run);
	if (system(cmd) != 0)
		return -1;
	hu_seccomp_prog_free(&f->fresh);
	free(f);
	return 0;
}

/* hu_seccomp_get's state, and that its program is the compiled one */
static enum hu_seccomp_cache_state get(struct fixture *f)
{
	struct hu_seccomp_prog p;
	enum hu_seccomp_cache_state st;
	hu_err err;

	assert_int_equal(hu_seccomp_get(f->run, &p, &st, &err), 0);
	assert_int_equal(p.len, f->fresh.len);
	assert_memory_equal(p.insns, f->fresh.insns, p.len * sizeof(*p.insns));
	hu_seccomp_prog_free(&p);
	return st;
}

static void test_miss_then_hit(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	assert_int_equal(get(f), HU_SECCOMP_CACHE_MISS);
	assert_int_equal(stat(f->cache, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(f->entry, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT);
}

/* an entry stored under another key (another binary, libseccomp or kernel) */
static void test_stale_rebuilt(void **state)
{
	struct fixture *f = *state;
	struct hu_seccomp_key key;
	hu_err err;

	assert_int_equal(get(f), HU_SECCOMP_CACHE_MISS);
	assert_int_equal(hu_seccomp_cache_key(&key, &err), 0);
	key.ctime_ns ^= 1; /* as if the binary had been rewritten */
	int d = open(f->cache, O_RDONLY | O_DIRECTORY);
	assert_true(d >= 0);
	assert_int_equal(hu_seccomp_cache_store(d, &key, &f->fresh, &err), 0);
	close(d);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_STALE);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT); /* replaced with the right key */
}

/* The key is this binary's identity: the same for two calls, and made of
 * the executable's inode and change time (any rewrite changes the latter). */
static void test_key_is_stable(void **state)
{
	struct hu_seccomp_key a, b;
	struct stat st;
	hu_err err;
	(void)state;

	assert_int_equal(hu_seccomp_cache_key(&a, &err), 0);
	assert_int_equal(hu_seccomp_cache_key(&b, &err), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(stat("/proc/self/exe", &st), 0);
	assert_int_equal(a.ino, st.st_ino);
	assert_int_equal(a.ctime_ns, st.st_ctim.tv_nsec);
}

/* One byte of the cached program's last instruction (the filter's final
 * action) flipped: the checksum refuses it. */
static void test_tampered_bytes_refused(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	assert_int_equal(get(f), HU_SECCOMP_CACHE_MISS);
	int fd = open(f->entry, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, st.st_size - 2), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(fd, &b, 1, st.st_size - 2), 1);
	close(fd);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_REFUSED); /* and the compiled program is used */
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT);     /* the entry was replaced */
}

static void test_truncated_refused(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	assert_int_equal(get(f), HU_SECCOMP_CACHE_MISS);
	assert_int_equal(stat(f->entry, &st), 0);
	assert_int_equal(truncate(f->entry, st.st_size - 8), 0);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_REFUSED);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT);
}

/* readable or writable by others: someone else could have written it */
static void test_mode_refused(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(get(f), HU_SECCOMP_CACHE_MISS);
	assert_int_equal(chmod(f->entry, 0644), 0);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_REFUSED);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT);
}

static void test_owner_refused(void **state)
{
	struct fixture *f = *state;

	if (geteuid() != 0)
		skip();
	assert_int_equal(get(f), HU_SECCOMP_CACHE_MISS);
	assert_int_equal(chown(f->entry, 1000, 1000), 0);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_REFUSED);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT);
}

/* a second name (from a directory someone else controls) */
static void test_hardlink_refused(void **state)
{
	struct fixture *f = *state;
	char other[160];

	assert_int_equal(get(f), HU_SECCOMP_CACHE_MISS);
	snprintf(other, sizeof(other), "%s/other", f->run);
	assert_int_equal(link(f->entry, other), 0);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_REFUSED);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT); /* renamed over: the entry has one name again */
}

/* a symlink to a valid entry elsewhere is not followed */
static void test_symlink_refused(void **state)
{
	struct fixture *f = *state;
	char elsewhere[160];

	assert_int_equal(get(f), HU_SECCOMP_CACHE_MISS);
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", f->run);
	assert_int_equal(rename(f->entry, elsewhere), 0);
	assert_int_equal(symlink(elsewhere, f->entry), 0);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_REFUSED);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT);
}

/* a cache directory that others can enter: neither read nor written */
static void test_open_dir_refused(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	assert_int_equal(mkdir(f->cache, 0700), 0);
	assert_int_equal(chmod(f->cache, 0777), 0);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_REFUSED);
	assert_int_equal(stat(f->entry, &st), -1); /* nothing stored there */
	assert_int_equal(get(f), HU_SECCOMP_CACHE_REFUSED);
}

/* garbage of the right size */
static void test_garbage_refused(void **state)
{
	struct fixture *f = *state;
	char buf[512];

	assert_int_equal(mkdir(f->cache, 0700), 0);
	int fd = open(f->entry, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	memset(buf, 'A', sizeof(buf));
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_REFUSED);
	assert_int_equal(get(f), HU_SECCOMP_CACHE_HIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_miss_then_hit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_rebuilt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_is_stable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tampered_bytes_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mode_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hardlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_dir_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
