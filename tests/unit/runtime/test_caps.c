/*
 * Capability dropping. Every case runs in a forked child (dropping is
 * irreversible), which reads its own /proc/self/status and sends the five
 * capability sets back through a pipe. The tests need root (as in the
 * sandbox, where setup runs as root of the user namespace) and are skipped
 * otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/caps.h"

struct capsets {
	int rc;        /* what the step under test returned, or -errno */
	char msg[256]; /* its hu_err message on failure */
	uint64_t inh, prm, eff, bnd, amb;
	int parsed;    /* number of Cap* lines found */
};

/* Parse the Cap* lines of a /proc/<pid>/status text. */
static void parse_status(const char *text, struct capsets *c)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "CapInh:", offsetof(struct capsets, inh) },
		{ "CapPrm:", offsetof(struct capsets, prm) },
		{ "CapEff:", offsetof(struct capsets, eff) },
		{ "CapBnd:", offsetof(struct capsets, bnd) },
		{ "CapAmb:", offsetof(struct capsets, amb) },
	};
	c->parsed = 0;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *p = strstr(text, keys[i].key);
		if (!p)
			continue;
		uint64_t v = strtoull(p + strlen(keys[i].key), NULL, 16);
		memcpy((char *)c + keys[i].off, &v, sizeof(v));
		c->parsed++;
	}
}

static void read_self(struct capsets *c)
{
	char buf[8192];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	parse_status(buf, c);
}

/* After the drop, execute `cat /proc/self/status` and parse its output:
 * what a program hutch-init spawns ends up with after execve. */
static void read_after_exec(struct capsets *c)
{
	int p[2];
	char buf[8192];
	size_t len = 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execl("/bin/cat", "cat", "/proc/self/status", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ssize_t n;
	while (len < sizeof(buf) - 1 && (n = read(p[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(p[0]);
	waitpid(pid, NULL, 0);
	parse_status(buf, c);
}

enum step {
	DROP_TO,          /* hu_caps_drop_to(mask) */
	DROP_TO_EXEC,     /* hu_caps_drop_to(mask), then look at an exec'd child */
	USER_SEQUENCE,    /* bound_to(0) as root, setresuid(1000), caps_set(0) */
	BOUND_AFTER_SETUID, /* setresuid(1000) first, then bound_to(0): must fail */
	REGAIN,           /* drop_to(0), then drop_to(mask): must fail */
};

static struct capsets run(enum step step, uint64_t mask)
{
	struct capsets c;
	int p[2];
	memset(&c, 0, sizeof(c));
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		hu_err err;
		hu_err_clear(&err);
		close(p[0]);
		switch (step) {
		case DROP_TO:
		case DROP_TO_EXEC:
			c.rc = hu_caps_drop_to(mask, &err);
			break;
		case USER_SEQUENCE:
			c.rc = hu_caps_bound_to(0, &err);
			if (c.rc == 0 && setresgid(1000, 1000, 1000) == 0 && setresuid(1000, 1000, 1000) == 0)
				c.rc = hu_caps_set(0, &err);
			else if (c.rc == 0)
				c.rc = -errno;
			break;
		case BOUND_AFTER_SETUID:
			if (setresuid(1000, 1000, 1000) < 0)
				c.rc = -errno;
			else
				c.rc = hu_caps_bound_to(0, &err) < 0 ? -err.code : 0;
			break;
		case REGAIN:
			c.rc = hu_caps_drop_to(0, &err);
			if (c.rc == 0)
				c.rc = hu_caps_drop_to(mask, &err) < 0 ? -err.code : 0;
			break;
		}
		snprintf(c.msg, sizeof(c.msg), "%s", err.msg);
		if (step == DROP_TO_EXEC && c.rc == 0)
			read_after_exec(&c);
		else
			read_self(&c);
		if (write(p[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	ssize_t n = read(p[0], &c, sizeof(c));
	close(p[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(n, (ssize_t)sizeof(c));
	return c;
}

static int need_root(void **state)
{
	if (geteuid() != 0)
		skip();
	return 0;
}

#define ASSERT_SETS(c, i, p, e, b, a)                                                    \
	do {                                                                             \
		if ((c).rc != 0)                                                         \
			fail_msg("drop failed: %s", (c).msg);                            \
		assert_int_equal((c).parsed, 5);                                         \
		assert_int_equal((c).inh, (i));                                          \
		assert_int_equal((c).prm, (p));                                          \
		assert_int_equal((c).eff, (e));                                          \
		assert_int_equal((c).bnd, (b));                                          \
		assert_int_equal((c).amb, (a));                                          \
	} while (0)

static void test_drop_to_nothing(void **state)
{
	struct capsets c = run(DROP_TO, 0);
	ASSERT_SETS(c, 0, 0, 0, 0, 0);
}

static void test_drop_to_root_default(void **state)
{
	uint64_t m = HU_CAPS_ROOT_DEFAULT;
	struct capsets c = run(DROP_TO, m);
	ASSERT_SETS(c, m, m, m, m, 0);
}

/* Root keeps exactly the mask across execve (legacy root semantics compute
 * the new permitted set from the bounding set). */
static void test_root_default_survives_exec(void **state)
{
	uint64_t m = HU_CAPS_ROOT_DEFAULT;
	struct capsets c = run(DROP_TO_EXEC, m);
	ASSERT_SETS(c, m, m, m, m, 0);
}

static void test_nothing_survives_exec(void **state)
{
	struct capsets c = run(DROP_TO_EXEC, 0);
	ASSERT_SETS(c, 0, 0, 0, 0, 0);
}

/* The `user` sequence hutch-init follows. */
static void test_user_sequence(void **state)
{
	struct capsets c = run(USER_SEQUENCE, 0);
	ASSERT_SETS(c, 0, 0, 0, 0, 0);
}

/* Dropping the bounding set needs CAP_SETPCAP: after setresuid it fails
 * loudly instead of leaving the set in place. */
static void test_bound_after_setuid_fails(void **state)
{
	struct capsets c = run(BOUND_AFTER_SETUID, 0);
	assert_int_equal(c.rc, -EPERM);
}

static void test_cannot_regain(void **state)
{
	struct capsets c = run(REGAIN, HU_CAPS_ROOT_DEFAULT);
	assert_int_equal(c.rc, -EPERM);
	assert_int_equal(c.eff, 0);
	assert_int_equal(c.bnd, 0);
}

static void test_root_default_mask(void **state)
{
	/* The eleven capabilities caps.h documents, and nothing else. */
	const int want[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID,
			     CAP_KILL, CAP_SETGID, CAP_SETUID, CAP_SETPCAP,
			     CAP_NET_BIND_SERVICE, CAP_AUDIT_WRITE, CAP_SETFCAP };
	uint64_t m = 0;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		m |= UINT64_C(1) << want[i];
	assert_int_equal(HU_CAPS_ROOT_DEFAULT, m);
	assert_int_equal(HU_CAPS_ROOT_DEFAULT & (UINT64_C(1) << CAP_SYS_ADMIN), 0);
	assert_int_equal(HU_CAPS_ROOT_DEFAULT & (UINT64_C(1) << CAP_NET_ADMIN), 0);
	assert_int_equal(HU_CAPS_ROOT_DEFAULT & (UINT64_C(1) << CAP_NET_RAW), 0);
	assert_int_equal(HU_CAPS_ROOT_DEFAULT & (UINT64_C(1) << CAP_SYS_PTRACE), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_default_mask),
		cmocka_unit_test_setup(test_drop_to_nothing, need_root),
		cmocka_unit_test_setup(test_drop_to_root_default, need_root),
		cmocka_unit_test_setup(test_root_default_survives_exec, need_root),
		cmocka_unit_test_setup(test_nothing_survives_exec, need_root),
		cmocka_unit_test_setup(test_user_sequence, need_root),
		cmocka_unit_test_setup(test_bound_after_setuid_fails, need_root),
		cmocka_unit_test_setup(test_cannot_regain, need_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
