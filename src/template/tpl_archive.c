/*
 * Tar layers (template.h): plain, gzip or zstd, read with libarchive's
 * reader only. libarchive's own disk writer (and its SECURE_* flags) is not
 * used: every entry goes through hu_tpl_put, which resolves beneath the
 * tree's root itself, so the archive's names are checked once, by us.
 *
 * A layer is read twice: first its whiteouts are applied to the tree (they
 * hide what the layers below brought), then its other entries are written.
 * That order is what OCI specifies, whatever order the tar holds them in.
 */
#include <archive.h>
#include <archive_entry.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "template/archive_lib.h"
#include "template/template.h"

static ssize_t read_data(void *arg, void *buf, size_t n)
{
	la_ssize_t r = archive_read_data(arg, buf, n);
	return r < 0 ? -1 : (ssize_t)r;
}

static struct archive *open_archive(int fd, hu_err *err)
{
	if (lseek(fd, 0, SEEK_SET) < 0) {
		hu_err_sys(err, "rewind the archive");
		return NULL;
	}
	if (hu_archive_lib_load(err) < 0)
		return NULL;
	struct archive *a = archive_read_new();
	if (!a) {
		hu_err_set(err, -ENOMEM, "archive reader");
		return NULL;
	}
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	if (archive_read_open_fd(a, fd, 65536) != ARCHIVE_OK) {
		hu_err_set(err, -EINVAL, "not a tar archive (plain, gzip or zstd): %s", archive_error_string(a));
		archive_read_free(a);
		return NULL;
	}
	return a;
}

/* pass 0: whiteouts only; pass 1: everything else */
static int import_pass(struct hu_tpl_writer *w, int fd, int pass, hu_err *err)
{
	struct archive *a = open_archive(fd, err);
	struct archive_entry *ae;
	char path[PATH_MAX], target[PATH_MAX], link[PATH_MAX];
	int rc = 0, r;

	if (!a)
		return -1;
	while (rc == 0 && (r = archive_read_next_header(a, &ae)) == ARCHIVE_OK) {
		const char *raw = archive_entry_pathname(ae);
		if (!raw || hu_tpl_norm_path(raw, path, sizeof(path), err) < 0) {
			if (!raw)
				hu_err_set(err, -EINVAL, "an entry without a name");
			rc = -1;
			break;
		}
		enum hu_tpl_wh wh = hu_tpl_whiteout(path, target, sizeof(target));
		if (pass == 0) {
			if (wh == HU_TPL_WH_FILE)
				rc = hu_tpl_remove(w, target, err);
			else if (wh == HU_TPL_WH_OPAQUE)
				rc = hu_tpl_clear_dir(w, target, err);
			continue;
		}
		if (wh != HU_TPL_WH_NONE)
			continue;
		struct hu_tpl_entry e = {
			.path = path,
			.mode = archive_entry_mode(ae),
			.uid = archive_entry_uid(ae) < 0 ? 0 : (uint32_t)archive_entry_uid(ae),
			.gid = archive_entry_gid(ae) < 0 ? 0 : (uint32_t)archive_entry_gid(ae),
			.size = archive_entry_size(ae),
			.mtime = archive_entry_mtime(ae),
		};
		if ((uint64_t)archive_entry_uid(ae) > UINT32_MAX)
			e.uid = UINT32_MAX;
		if ((uint64_t)archive_entry_gid(ae) > UINT32_MAX)
			e.gid = UINT32_MAX;
		const char *hl = archive_entry_hardlink(ae);
		if (hl) {
			if (hu_tpl_norm_path(hl, link, sizeof(link), err) < 0) {
				hu_err_prefix(err, "hard link '%.200s'", path);
				rc = -1;
				break;
			}
			e.hardlink = 1;
			e.link = link;
		} else if (S_ISLNK(e.mode)) {
			e.link = archive_entry_symlink(ae);
		}
		rc = hu_tpl_put(w, &e, S_ISREG(e.mode) && !hl ? read_data : NULL, a, err);
	}
	if (rc == 0 && r != ARCHIVE_EOF)
		rc = hu_err_set(err, -EINVAL, "corrupt archive: %s", archive_error_string(a));
	archive_read_free(a);
	return rc;
}

int hu_tpl_import_tar(struct hu_tpl_writer *w, int fd, hu_err *err)
{
	if (import_pass(w, fd, 0, err) < 0 || import_pass(w, fd, 1, err) < 0)
		return -1;
	return 0;
}
