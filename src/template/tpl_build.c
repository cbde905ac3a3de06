/*
 * Build and delete templates (template.h). A build happens in
 * <templates>/.build-<id>-<pid>/ and ends with one rename to <templates>/<id>:
 * a daemon listing or resolving templates at the same moment sees either no
 * template or the whole one, and two builders of the same id cannot both
 * win (rename onto a non-empty directory fails).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "template/template.h"
#include "util/clock.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

static int import(struct hu_tpl_build *b, struct hu_tpl_writer *w, hu_err *err)
{
	struct hu_tpl_image_config cfg = {0};
	int rc;

	switch (b->source) {
	case HU_TPL_FROM_DIR:
		return hu_tpl_import_dir(w, b->path, err);
	case HU_TPL_FROM_TAR: {
		_cleanup_close_ int fd = open(b->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return hu_err_sys(err, "open %s", b->path);
		return hu_tpl_import_tar(w, fd, err);
	}
	case HU_TPL_FROM_OCI:
		rc = hu_tpl_import_oci(w, b->path, &cfg, err);
		if (rc == 0) {
			/* the image's Env, WorkingDir and User, under what the
			 * builder asked for */
			const char *k;
			json_t *v;
			json_object_foreach(cfg.envs, k, v)
				if (!json_object_get(b->meta.envs, k))
					json_object_set(b->meta.envs, k, v);
			if (!b->meta.cwd[0])
				snprintf(b->meta.cwd, sizeof(b->meta.cwd), "%s", cfg.cwd);
			if (!b->meta.user[0])
				snprintf(b->meta.user, sizeof(b->meta.user), "%s", cfg.user);
		}
		json_decref(cfg.envs);
		return rc;
	case HU_TPL_FROM_NODE:
		/* a copy is unpacked by its fetcher (template_fetch.c), never built */
		break;
	}
	return hu_err_set(err, -EINVAL, "unknown template source");
}

/* The sudo shim is hutch-init under another name (src/init/sudo.h). */
static int install_sudo(int root, int init_fd, hu_err *err)
{
	char buf[65536];
	ssize_t n;
	off_t off = 0;

	if (init_fd < 0)
		return 0;
	_cleanup_close_ int bin = hu_tpl_open_dir(root, "opt/hutch/bin", 0, err);
	if (bin < 0)
		return -1;
	unlinkat(bin, "sudo", 0);
	_cleanup_close_ int out = openat(bin, "sudo", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
	if (out < 0)
		return hu_err_sys(err, "create opt/hutch/bin/sudo");
	while ((n = pread(init_fd, buf, sizeof(buf), off)) > 0) {
		if (hu_write_all(out, buf, (size_t)n) < 0)
			return hu_err_sys(err, "write opt/hutch/bin/sudo");
		off += n;
	}
	if (n < 0 || fchmod(out, 0755) < 0)
		return hu_err_sys(err, "install opt/hutch/bin/sudo");
	return 0;
}

static const char *source_name(enum hu_tpl_source s)
{
	return s == HU_TPL_FROM_DIR ? "dir" : s == HU_TPL_FROM_TAR ? "tar" : s == HU_TPL_FROM_NODE ? "node" : "oci";
}

int hu_tpl_stage_replacing(const char *templates_dir, const char *id, const char *tag, char *tmp, size_t n,
			   hu_err *err)
{
	char path[PATH_MAX + 32];

	if (!hu_sandbox_id_valid(id) || !strcmp(id, "base"))
		return hu_err_set(err, -EINVAL, "template name '%.64s': 1 to 63 of [a-z0-9-], not 'base'", id);
	if (hu_mkdir_p(templates_dir, 0700, err) < 0)
		return -1;
	if ((size_t)snprintf(tmp, n, "%s/.build-%s-%s", templates_dir, id, tag) >= n)
		return hu_err_set(err, ENAMETOOLONG, "build directory of %s", id);
	if (hu_rm_rf(tmp, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/rootfs", tmp);
	if (mkdir(tmp, 0700) < 0 || mkdir(path, 0755) < 0) {
		hu_err_sys(err, "mkdir %s", path);
		hu_rm_rf(tmp, &(hu_err){0});
		return -1;
	}
	return 0;
}

int hu_tpl_stage(const char *templates_dir, const char *id, const char *tag, char *tmp, size_t n, hu_err *err)
{
	char final[PATH_MAX];
	struct stat st;

	snprintf(final, sizeof(final), "%s/%s", templates_dir, id);
	if (hu_sandbox_id_valid(id) && lstat(final, &st) == 0)
		return hu_err_set(err, -EEXIST, "template '%s' exists (delete it first)", id);
	return hu_tpl_stage_replacing(templates_dir, id, tag, tmp, n, err);
}

int hu_tpl_commit(struct hu_tpl_build *b, const char *tmp, hu_err *err)
{
	char final[PATH_MAX], path[PATH_MAX + 32];

	if (!b->meta.envs && !(b->meta.envs = json_object()))
		return hu_err_set(err, -ENOMEM, "envs");
	snprintf(final, sizeof(final), "%s/%s", b->templates_dir, b->meta.id);
	if (!b->meta.created_ms || b->source != HU_TPL_FROM_NODE)
		b->meta.created_ms = hu_wall_ms();
	/* the checksum of the transfer stream, which other nodes of a cluster
	 * check their copy against (a copy brings its own, already checked) */
	if (!b->meta.checksum[0]) {
		snprintf(path, sizeof(path), "%s/rootfs", tmp);
		int root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return hu_err_sys(err, "open %s", path);
		int crc = hu_tpl_checksum(root, b->meta.checksum, err);
		close(root);
		if (crc < 0)
			return -1;
	}
	snprintf(b->meta.source, sizeof(b->meta.source), "%s", source_name(b->source));
	json_t *stored = hu_tpl_meta_stored(&b->meta);
	char *text = stored ? json_dumps(stored, JSON_COMPACT) : NULL;
	json_decref(stored);
	snprintf(path, sizeof(path), "%s/%s", tmp, HU_TPL_META_FILE);
	int rc = text ? hu_write_file(path, text, strlen(text), O_CREAT | O_TRUNC, 0644, err)
		      : hu_err_set(err, -ENOMEM, "describe the template");
	free(text);
	if (rc < 0)
		return -1;
	/* every built template brings its own /usr: the host's is never bound */
	snprintf(path, sizeof(path), "%s/%s", tmp, HU_TPL_OWN_USR_FILE);
	if (hu_write_file(path, "", 0, O_CREAT | O_TRUNC, 0644, err) < 0)
		return -1;
	if (chmod(tmp, 0755) < 0)
		return hu_err_sys(err, "chmod %s", tmp);
	if (rename(tmp, final) < 0) {
		if (errno == EEXIST || errno == ENOTEMPTY)
			return hu_err_set(err, -EEXIST, "template '%s' exists (delete it first)", b->meta.id);
		return hu_err_sys(err, "rename %s", tmp);
	}
	return 0;
}

int hu_tpl_build(struct hu_tpl_build *b, hu_err *err)
{
	char tmp[PATH_MAX], path[PATH_MAX + 32], tag[24];
	hu_err ignore;

	snprintf(tag, sizeof(tag), "%d", (int)getpid());
	if (hu_tpl_stage(b->templates_dir, b->meta.id, tag, tmp, sizeof(tmp), err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/rootfs", tmp);
	struct hu_tpl_writer w = {.caps = b->caps};
	if (!w.caps.max_bytes)
		w.caps.max_bytes = HU_TPL_DEFAULT_MAX_BYTES;
	if (!w.caps.max_files)
		w.caps.max_files = HU_TPL_DEFAULT_MAX_FILES;
	w.root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w.root < 0) {
		hu_err_sys(err, "open %s", path);
		goto fail;
	}
	if (import(b, &w, err) < 0 || hu_tpl_fixup(w.root, err) < 0 || install_sudo(w.root, b->init_fd, err) < 0)
		goto fail;
	close(w.root);
	w.root = -1;
	b->meta.size_bytes = w.bytes;
	b->meta.files = w.files;
	if (hu_tpl_commit(b, tmp, err) < 0)
		goto fail;
	return 0;
fail:
	if (w.root >= 0)
		close(w.root);
	hu_rm_rf(tmp, &ignore);
	hu_err_prefix(err, "build template %s", b->meta.id);
	return -1;
}

int hu_tpl_delete(const char *templates_dir, const char *id, hu_err *err)
{
	char path[PATH_MAX], gone[PATH_MAX];

	if (!strcmp(id, "base"))
		return hu_err_set(err, -EPERM, "the built-in template 'base' cannot be deleted");
	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, -ENOENT, "template '%.64s' not found", id);
	snprintf(path, sizeof(path), "%s/%s", templates_dir, id);
	snprintf(gone, sizeof(gone), "%s/.delete-%s-%d", templates_dir, id, (int)getpid());
	if (rename(path, gone) < 0)
		return errno == ENOENT ? hu_err_set(err, -ENOENT, "template '%s' not found", id)
				       : hu_err_sys(err, "rename %s", path);
	return hu_rm_rf(gone, err);
}
