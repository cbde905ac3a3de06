/* The template writer and tar layers (src/template/tpl_write.c,
 * tpl_archive.c) on a real directory: nothing escapes the tree, caps hold,
 * whiteouts apply to the layers below. Runs as root (it chowns). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "template/template.h"
#include "util/fileutil.h"

struct fixture {
	char base[64], root[96], outside[96];
	struct hu_tpl_writer w;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->base, sizeof(f->base), "/tmp/hutch-tpl-unit-XXXXXX");
	if (!mkdtemp(f->base))
		return -1;
	snprintf(f->root, sizeof(f->root), "%s/root", f->base);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->base);
	mkdir(f->root, 0755);
	mkdir(f->outside, 0755);
	f->w.root = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->w.caps.max_bytes = 1 << 20;
	f->w.caps.max_files = 1000;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	hu_err err;
	close(f->w.root);
	hu_rm_rf(f->base, &err);
	free(f);
	return 0;
}

struct buf {
	const char *p;
	size_t left;
};

static ssize_t rd(void *arg, void *out, size_t n)
{
	struct buf *b = arg;
	if (n > b->left)
		n = b->left;
	memcpy(out, b->p, n);
	b->p += n;
	b->left -= n;
	return (ssize_t)n;
}

static int put_file(struct fixture *f, const char *path, const char *data, mode_t mode, hu_err *err)
{
	struct buf b = {data, strlen(data)};
	struct hu_tpl_entry e = {.path = path, .mode = S_IFREG | mode, .size = (int64_t)strlen(data)};
	return hu_tpl_put(&f->w, &e, rd, &b, err);
}

static int put_link(struct fixture *f, const char *path, const char *target, hu_err *err)
{
	struct hu_tpl_entry e = {.path = path, .mode = S_IFLNK | 0777, .link = target};
	return hu_tpl_put(&f->w, &e, NULL, NULL, err);
}

static int exists_at(const char *dir, const char *name)
{
	char p[256];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

static void test_symlinks_stay_inside(void **state)
{
	struct fixture *f = *state;
	hu_err err;
	char rel[256];

	/* an absolute link to the host directory, then a write through it */
	assert_int_equal(put_link(f, "esc", f->outside, &err), 0);
	put_file(f, "esc/pwned", "x", 0644, &err);
	assert_false(exists_at(f->outside, "pwned"));
	/* a relative link climbing far above the root, then a write through it:
	 * the climb stops at the tree's root */
	snprintf(rel, sizeof(rel), "../../../../../../..%s", f->outside);
	assert_int_equal(put_link(f, "up", "../../../../../../../..", &err), 0);
	assert_int_equal(put_file(f, "up/landed", "y", 0644, &err), 0);
	assert_true(exists_at(f->root, "landed"));
	assert_int_equal(put_link(f, "up2", rel, &err), 0);
	put_file(f, "up2/pwned2", "z", 0644, &err);
	assert_false(exists_at(f->outside, "pwned2"));
	/* a file replacing a symlink replaces the link, not its target */
	char canary[128];
	snprintf(canary, sizeof(canary), "%s/canary", f->outside);
	assert_int_equal(hu_write_file(canary, "keep", 4, O_CREAT | O_TRUNC, 0644, &err), 0);
	assert_int_equal(put_link(f, "c", canary, &err), 0);
	assert_int_equal(put_file(f, "c", "over", 0644, &err), 0);
	char buf[16];
	assert_int_equal(hu_read_file(canary, buf, sizeof(buf), &err), 4);
	assert_string_equal(buf, "keep");
	/* a hard link through a symlinked parent names a file of the tree */
	assert_int_equal(put_link(f, "etc", f->outside, &err), 0);
	struct hu_tpl_entry hl = {.path = "hl", .mode = S_IFREG | 0644, .hardlink = 1, .link = "etc/canary"};
	assert_int_equal(hu_tpl_put(&f->w, &hl, NULL, NULL, &err), -1);
	struct stat st;
	assert_int_equal(stat(canary, &st), 0);
	assert_int_equal(st.st_nlink, 1);
}

static void test_specials_modes_owners(void **state)
{
	struct fixture *f = *state;
	hu_err err;
	struct stat st;
	char p[256];

	struct hu_tpl_entry dev = {.path = "dev/mem", .mode = S_IFCHR | 0666};
	struct hu_tpl_entry fifo = {.path = "fifo", .mode = S_IFIFO | 0644};
	assert_int_equal(hu_tpl_put(&f->w, &dev, NULL, NULL, &err), 0);
	assert_int_equal(hu_tpl_put(&f->w, &fifo, NULL, NULL, &err), 0);
	assert_int_equal(f->w.skipped, 2);
	assert_false(exists_at(f->root, "fifo"));
	assert_int_equal(put_file(f, "suid", "x", 06755, &err), 0);
	snprintf(p, sizeof(p), "%s/suid", f->root);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	struct buf b = {"o", 1};
	struct hu_tpl_entry own = {.path = "owned", .mode = S_IFREG | 0600, .uid = 1000, .gid = 1000, .size = 1};
	struct hu_tpl_entry far = {.path = "far", .mode = S_IFREG | 0600, .uid = 70000, .gid = 4000000000u};
	assert_int_equal(hu_tpl_put(&f->w, &own, rd, &b, &err), 0);
	assert_int_equal(hu_tpl_put(&f->w, &far, NULL, NULL, &err), 0);
	snprintf(p, sizeof(p), "%s/owned", f->root);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 1000);
	snprintf(p, sizeof(p), "%s/far", f->root);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 0); /* outside a sandbox's 65536 ids */
	assert_int_equal(st.st_gid, 0);
	/* the root entry of a layer changes nothing */
	struct hu_tpl_entry root = {.path = "", .mode = S_IFDIR | 0777};
	assert_int_equal(hu_tpl_put(&f->w, &root, NULL, NULL, &err), 0);
	struct hu_tpl_entry rootfile = {.path = "", .mode = S_IFREG | 0644};
	assert_int_equal(hu_tpl_put(&f->w, &rootfile, NULL, NULL, &err), -1);
}

static void test_caps(void **state)
{
	struct fixture *f = *state;
	hu_err err;
	char big[64];

	f->w.caps.max_bytes = 32;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(put_file(f, "big", big, 0644, &err), -1);
	assert_int_equal(err.code, EFBIG);
	/* a header that lies about the size is caught by counting */
	struct buf b = {big, strlen(big)};
	struct hu_tpl_entry liar = {.path = "liar", .mode = S_IFREG | 0644, .size = 1};
	assert_int_equal(hu_tpl_put(&f->w, &liar, rd, &b, &err), -1);
	assert_int_equal(err.code, EFBIG);
	f->w.caps.max_bytes = 1 << 20;
	f->w.files = 0;
	f->w.caps.max_files = 3;
	assert_int_equal(put_file(f, "1", "", 0644, &err), 0);
	assert_int_equal(put_file(f, "2", "", 0644, &err), 0);
	assert_int_equal(put_file(f, "3", "", 0644, &err), 0);
	assert_int_equal(put_file(f, "4", "", 0644, &err), -1);
	assert_int_equal(err.code, EMFILE);
}

/* a tar file with the given entries: name, type ('f','d','l'), data */
static void write_tar(const char *path, const char *const (*entries)[3], size_t n)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_add_filter_gzip(a);
	assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, entries[i][0]);
		char t = entries[i][1][0];
		archive_entry_set_filetype(e, t == 'd' ? AE_IFDIR : t == 'l' ? AE_IFLNK : AE_IFREG);
		archive_entry_set_perm(e, t == 'd' ? 0755 : 0644);
		if (t == 'l')
			archive_entry_set_symlink(e, entries[i][2]);
		if (t == 'f')
			archive_entry_set_size(e, (la_int64_t)strlen(entries[i][2]));
		archive_write_header(a, e);
		if (t == 'f')
			archive_write_data(a, entries[i][2], strlen(entries[i][2]));
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
}

static void test_layers_and_whiteouts(void **state)
{
	struct fixture *f = *state;
	hu_err err;
	char tar[128];
	static const char *const l1[][3] = {
		{"./", "d", ""}, {"keep", "f", "k"}, {"gone", "f", "g"}, {"dir", "d", ""}, {"dir/a", "f", "a"},
		{"dir/sub", "d", ""}, {"dir/sub/b", "f", "b"}, {"gonedir", "d", ""}, {"gonedir/x", "f", "x"},
	};
	/* the whiteouts come after the new entries in this tar: they still
	 * only hide the lower layer */
	static const char *const l2[][3] = {
		{"dir/new", "f", "n"}, {"dir/.wh..wh..opq", "f", ""}, {".wh.gone", "f", ""}, {".wh.gonedir", "f", ""},
		{".wh.never-existed", "f", ""}, {"missing/.wh.x", "f", ""},
	};
	snprintf(tar, sizeof(tar), "%s/l1.tar.gz", f->base);
	write_tar(tar, l1, sizeof(l1) / sizeof(l1[0]));
	int fd = open(tar, O_RDONLY | O_CLOEXEC);
	assert_int_equal(hu_tpl_import_tar(&f->w, fd, &err), 0);
	close(fd);
	snprintf(tar, sizeof(tar), "%s/l2.tar.gz", f->base);
	write_tar(tar, l2, sizeof(l2) / sizeof(l2[0]));
	fd = open(tar, O_RDONLY | O_CLOEXEC);
	assert_int_equal(hu_tpl_import_tar(&f->w, fd, &err), 0);
	close(fd);
	char p[160];
	assert_true(exists_at(f->root, "keep"));
	assert_false(exists_at(f->root, "gone"));
	assert_false(exists_at(f->root, "gonedir"));
	snprintf(p, sizeof(p), "%s/dir", f->root);
	assert_true(exists_at(p, "new"));
	assert_false(exists_at(p, "a"));
	assert_false(exists_at(p, "sub"));
	assert_false(exists_at(p, ".wh..wh..opq"));
	assert_false(exists_at(f->root, ".wh.gone"));
	/* an absolute name fails the whole layer */
	static const char *const bad[][3] = {{"ok", "f", ""}, {"/abs", "f", ""}};
	snprintf(tar, sizeof(tar), "%s/bad.tar.gz", f->base);
	write_tar(tar, bad, 2);
	fd = open(tar, O_RDONLY | O_CLOEXEC);
	assert_int_equal(hu_tpl_import_tar(&f->w, fd, &err), -1);
	assert_non_null(strstr(err.msg, "absolute"));
	close(fd);
	/* not an archive at all */
	snprintf(tar, sizeof(tar), "%s/junk", f->base);
	hu_write_file(tar, "this is not a tar file, not at all, no", 38, O_CREAT | O_TRUNC, 0644, &err);
	fd = open(tar, O_RDONLY | O_CLOEXEC);
	assert_int_equal(hu_tpl_import_tar(&f->w, fd, &err), -1);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_symlinks_stay_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_specials_modes_owners, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_layers_and_whiteouts, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
