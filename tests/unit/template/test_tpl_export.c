/* The transfer stream of a template (src/template/tpl_export.c) on a real
 * tree: the same tree gives the same bytes, a change gives others, the
 * sudo shim is not part of it, and a copy unpacked by the template writer
 * sends the very same stream on (what a node that fetched a template
 * offers the next). Runs as root (the writer chowns). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "template/template.h"
#include "util/fileutil.h"

struct fixture {
	char base[64], tree[96], copy[96], tar[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char p[320];
	hu_err err;

	snprintf(f->base, sizeof(f->base), "/tmp/hutch-tpl-export-XXXXXX");
	if (!mkdtemp(f->base))
		return -1;
	snprintf(f->tree, sizeof(f->tree), "%s/tree", f->base);
	snprintf(f->copy, sizeof(f->copy), "%s/copy", f->base);
	snprintf(f->tar, sizeof(f->tar), "%s/stream.tar", f->base);
	mkdir(f->tree, 0755);
	mkdir(f->copy, 0755);
	const char *dirs[] = {"etc", "opt", "opt/hutch", "opt/hutch/bin", "usr", "usr/bin", "home", "home/user"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", f->tree, dirs[i]);
		mkdir(p, 0755);
	}
	snprintf(p, sizeof(p), "%s/etc/passwd", f->tree);
	hu_write_file(p, "root:x:0:0::/root:/bin/sh\n", 26, O_CREAT | O_TRUNC, 0644, &err);
	snprintf(p, sizeof(p), "%s/usr/bin/tool", f->tree);
	hu_write_file(p, "#!/bin/sh\necho tool\n", 20, O_CREAT | O_TRUNC, 0755, &err);
	snprintf(p, sizeof(p), "%s/home/user/notes", f->tree);
	hu_write_file(p, "mine\n", 5, O_CREAT | O_TRUNC, 0600, &err);
	if (chown(p, 1000, 1000) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/usr/bin/sh", f->tree);
	if (symlink("tool", p) < 0)
		return -1;
	/* names that are not UTF-8 (Debian's ca-certificates has Latin-1 ones,
	 * which a pax writer could not translate in the C locale) and one
	 * longer than a tar header's 100 bytes */
	snprintf(p, sizeof(p), "%s/etc/NetLock_F\xf5tan\xfas\xedtv\xe1ny.pem", f->tree);
	hu_write_file(p, "cert\n", 5, O_CREAT | O_TRUNC, 0644, &err);
	snprintf(p, sizeof(p), "%s/etc/988a38cb.0", f->tree);
	if (symlink("NetLock_F\xf5tan\xfas\xedtv\xe1ny.pem", p) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/etc/%0120d", f->tree, 7);
	hu_write_file(p, "long\n", 5, O_CREAT | O_TRUNC, 0644, &err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	hu_err err;
	hu_rm_rf(f->base, &err);
	free(f);
	return 0;
}

static void sum_of(const char *dir, char out[HU_TPL_CHECKSUM_MAX])
{
	hu_err err;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(hu_tpl_checksum(fd, out, &err), 0);
	close(fd);
	assert_true(hu_tpl_checksum_valid(out));
}

static int to_file(void *arg, const void *buf, size_t n)
{
	return hu_write_all(*(int *)arg, buf, n);
}

static void test_same_tree_same_stream(void **state)
{
	struct fixture *f = *state;
	char a[HU_TPL_CHECKSUM_MAX], b[HU_TPL_CHECKSUM_MAX], p[160];
	hu_err err;

	sum_of(f->tree, a);
	sum_of(f->tree, b);
	assert_string_equal(a, b);
	/* the sudo shim each daemon installs, and directory times, are not the tree's */
	snprintf(p, sizeof(p), "%s/opt/hutch/bin/sudo", f->tree);
	assert_int_equal(hu_write_file(p, "shim", 4, O_CREAT | O_TRUNC, 0755, &err), 0);
	sum_of(f->tree, b);
	assert_string_equal(a, b);
	/* a byte of a file is */
	snprintf(p, sizeof(p), "%s/etc/passwd", f->tree);
	assert_int_equal(hu_write_file(p, "root:x:0:0::/root:/bin/bash", 27, O_CREAT | O_TRUNC, 0644, &err), 0);
	sum_of(f->tree, b);
	assert_string_not_equal(a, b);
	/* and so are a mode and an owner */
	char c[HU_TPL_CHECKSUM_MAX];
	assert_int_equal(chmod(p, 0600), 0);
	sum_of(f->tree, c);
	assert_string_not_equal(b, c);
	assert_int_equal(chown(p, 5, 5), 0);
	sum_of(f->tree, a);
	assert_string_not_equal(a, c);
}

static void test_copy_sends_the_same_stream(void **state)
{
	struct fixture *f = *state;
	char orig[HU_TPL_CHECKSUM_MAX], sent[HU_TPL_CHECKSUM_MAX], again[HU_TPL_CHECKSUM_MAX], p[320];
	struct hu_tpl_export *x;
	hu_err err;
	int rc;

	sum_of(f->tree, orig);
	int out = open(f->tar, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int root = open(f->tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(hu_tpl_export_open(root, to_file, &out, &x, &err), 0);
	close(root);
	while ((rc = hu_tpl_export_step(x, &err)) > 0)
		;
	assert_int_equal(rc, 0);
	hu_tpl_export_digest(x, sent);
	assert_true(hu_tpl_export_bytes(x) > 0);
	hu_tpl_export_free(x);
	assert_string_equal(sent, orig);
	/* unpacked as a fetching node does, through the writer */
	struct hu_tpl_writer w = {.caps = {1 << 20, 100}};
	w.root = open(f->copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(hu_tpl_import_tar(&w, out, &err), 0);
	close(w.root);
	close(out);
	snprintf(p, sizeof(p), "%s/home/user/notes", f->copy);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_uid, 1000);
	assert_int_equal(st.st_mode & 07777, 0600);
	sum_of(f->copy, again);
	assert_string_equal(again, orig);
}

static int failing_sink(void *arg, const void *buf, size_t n)
{
	(void)arg, (void)buf, (void)n;
	return -1;
}

static void test_sink_failure_stops_it(void **state)
{
	struct fixture *f = *state;
	struct hu_tpl_export *x;
	hu_err err;
	int rc;

	int root = open(f->tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(hu_tpl_export_open(root, failing_sink, NULL, &x, &err), 0);
	close(root);
	while ((rc = hu_tpl_export_step(x, &err)) > 0)
		;
	assert_int_equal(rc, -1);
	hu_tpl_export_free(x);
	assert_false(hu_tpl_checksum_valid("sha256:00"));
	assert_false(hu_tpl_checksum_valid("md5:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_same_tree_same_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy_sends_the_same_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sink_failure_stops_it, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
