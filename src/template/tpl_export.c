/*
 * The transfer stream of a built template (template.h hu_tpl_export): a
 * walk of the tree in byte order of the names, each entry written by
 * libarchive's pax writer with only the fields that define the tree, so
 * that the same tree always gives the same bytes (and so the same sha256).
 * The walk keeps its place between calls: a stack of open directories,
 * each with its sorted names, and at most one open file being read.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "template/archive_lib.h"
#include "template/template.h"
#include "util/hex.h"

#define EXPORT_DEPTH_MAX 128
#define EXPORT_CHUNK (64 * 1024)
/* rewritten on every daemon start (hu_template_refresh): not the tree's */
#define EXPORT_SKIP "opt/hutch/bin/sudo"

struct frame {
	int fd;
	char **names;
	size_t n, next;
	size_t prefix_len; /* of x->path: this directory's path + "/" ("" for the root) */
};

struct hu_tpl_export {
	struct archive *a;
	struct archive_entry *e;
	hu_tpl_sink_fn sink;
	void *arg;
	EVP_MD_CTX *md;
	uint64_t bytes;
	int sink_failed;
	struct frame stack[EXPORT_DEPTH_MAX];
	int depth;
	int file;          /* the regular file being sent, or -1 */
	int64_t file_left; /* its bytes still to send */
	char path[PATH_MAX];
	char digest[HU_TPL_CHECKSUM_MAX];
	int done;
	char *chunk;
};

static la_ssize_t on_write(struct archive *a, void *arg, const void *buf, size_t n)
{
	struct hu_tpl_export *x = arg;

	(void)a;
	/* A failure is kept here, not told to libarchive: an archive in its
	 * fatal state is freed without its write buffer (libarchive 3.6 leaks
	 * it). The step after the failing one reports it. */
	if (x->sink_failed)
		return (la_ssize_t)n;
	if (EVP_DigestUpdate(x->md, buf, n) != 1 || x->sink(x->arg, buf, n) < 0) {
		x->sink_failed = 1;
		return (la_ssize_t)n;
	}
	x->bytes += n;
	return (la_ssize_t)n;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Push directory fd (taken) whose path is x->path[0..prefix_len). */
static int push_dir(struct hu_tpl_export *x, int fd, size_t prefix_len, hu_err *err)
{
	struct frame *f;
	struct dirent *de;
	size_t cap = 0;
	DIR *dh;

	if (x->depth == EXPORT_DEPTH_MAX) {
		close(fd);
		return hu_err_set(err, -ELOOP, "export %s: deeper than %d directories", x->path, EXPORT_DEPTH_MAX);
	}
	f = &x->stack[x->depth];
	memset(f, 0, sizeof(*f));
	f->prefix_len = prefix_len;
	int scan = dup(fd);
	if (scan < 0 || !(dh = fdopendir(scan))) {
		if (scan >= 0)
			close(scan);
		close(fd);
		return hu_err_sys(err, "export: open directory %s", x->path);
	}
	f->fd = fd;
	x->depth++;
	while ((de = readdir(dh))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (f->n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nn = realloc(f->names, ncap * sizeof(*nn));
			if (!nn)
				goto oom;
			f->names = nn;
			cap = ncap;
		}
		if (!(f->names[f->n] = strdup(de->d_name)))
			goto oom;
		f->n++;
	}
	closedir(dh);
	if (f->n) /* qsort takes no NULL, even for nothing */
		qsort(f->names, f->n, sizeof(*f->names), by_name);
	return 0;
oom:
	closedir(dh);
	return hu_err_set(err, -ENOMEM, "export: list %s", x->path);
}

static void pop_dir(struct hu_tpl_export *x)
{
	struct frame *f = &x->stack[--x->depth];

	for (size_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
	close(f->fd);
}

static int write_header(struct hu_tpl_export *x, const struct stat *st, int64_t mtime, const char *link,
			hu_err *err)
{
	archive_entry_clear(x->e);
	archive_entry_set_pathname(x->e, x->path);
	archive_entry_set_mode(x->e, st->st_mode & (S_IFMT | 07777));
	archive_entry_set_uid(x->e, st->st_uid);
	archive_entry_set_gid(x->e, st->st_gid);
	archive_entry_set_mtime(x->e, mtime, 0);
	archive_entry_set_size(x->e, S_ISREG(st->st_mode) ? st->st_size : 0);
	if (link)
		archive_entry_set_symlink(x->e, link);
	if (archive_write_header(x->a, x->e) != ARCHIVE_OK)
		return hu_err_set(err, x->sink_failed ? -EPIPE : -EIO, "export %s: %s", x->path,
				  archive_error_string(x->a));
	return 0;
}

/* The next entry of the top directory: its header, and for a directory
 * its frame, for a file its descriptor. */
static int next_entry(struct hu_tpl_export *x, hu_err *err)
{
	struct frame *f = &x->stack[x->depth - 1];
	const char *name = f->names[f->next++];
	size_t len = f->prefix_len + strlen(name);
	char link[PATH_MAX];
	struct stat st;

	if (len + 2 >= sizeof(x->path))
		return hu_err_set(err, -ENAMETOOLONG, "export: a path longer than %d bytes", PATH_MAX);
	memcpy(x->path + f->prefix_len, name, strlen(name) + 1);
	if (!strcmp(x->path, EXPORT_SKIP))
		return 0;
	if (fstatat(f->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return hu_err_sys(err, "export: stat %s", x->path);
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(f->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return hu_err_sys(err, "export: open %s", x->path);
		if (write_header(x, &st, 0, NULL, err) < 0) {
			close(fd);
			return -1;
		}
		x->path[len] = '/';
		x->path[len + 1] = '\0';
		return push_dir(x, fd, len + 1, err);
	}
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(f->fd, name, link, sizeof(link) - 1);
		if (n < 0)
			return hu_err_sys(err, "export: readlink %s", x->path);
		link[n] = '\0';
		return write_header(x, &st, st.st_mtime, link, err);
	}
	if (!S_ISREG(st.st_mode))
		return 0; /* devices, fifos, sockets: a template has none to send */
	x->file = openat(f->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (x->file < 0)
		return hu_err_sys(err, "export: open %s", x->path);
	x->file_left = st.st_size;
	return write_header(x, &st, st.st_mtime, NULL, err);
}

/* One chunk of the open file. */
static int send_chunk(struct hu_tpl_export *x, hu_err *err)
{
	size_t want = x->file_left < EXPORT_CHUNK ? (size_t)x->file_left : EXPORT_CHUNK;
	ssize_t n = want ? read(x->file, x->chunk, want) : 0;

	if (n < 0)
		return hu_err_sys(err, "export: read %s", x->path);
	if (n == 0 && want)
		return hu_err_set(err, -EIO, "export: %s shrank while it was sent", x->path);
	if (n && archive_write_data(x->a, x->chunk, (size_t)n) != n)
		return hu_err_set(err, x->sink_failed ? -EPIPE : -EIO, "export %s: %s", x->path,
				  archive_error_string(x->a));
	x->file_left -= n;
	if (x->file_left == 0) {
		close(x->file);
		x->file = -1;
	}
	return 0;
}

int hu_tpl_export_open(int root, hu_tpl_sink_fn sink, void *arg, struct hu_tpl_export **out, hu_err *err)
{
	struct hu_tpl_export *x;

	*out = NULL;
	if (hu_archive_lib_load(err) < 0)
		return -1;
	if (!(x = calloc(1, sizeof(*x))) || !(x->chunk = malloc(EXPORT_CHUNK))) {
		free(x);
		return hu_err_set(err, -ENOMEM, "export");
	}
	x->file = -1;
	x->sink = sink;
	x->arg = arg;
	x->md = EVP_MD_CTX_new();
	x->a = archive_write_new();
	x->e = archive_entry_new();
	if (!x->md || !x->a || !x->e || EVP_DigestInit_ex(x->md, EVP_sha256(), NULL) != 1) {
		hu_tpl_export_free(x);
		return hu_err_set(err, -ENOMEM, "export");
	}
	/* names are bytes, as the file system has them: Debian's ca-certificates
	 * has Latin-1 ones, which pax would otherwise try to translate to UTF-8
	 * (and fail on, in the C locale) */
	if (archive_write_set_format_pax_restricted(x->a) != ARCHIVE_OK ||
	    archive_write_set_format_option(x->a, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK ||
	    archive_write_open(x->a, x, NULL, on_write, NULL) != ARCHIVE_OK) {
		hu_err_set(err, -EIO, "export: %s", archive_error_string(x->a));
		hu_tpl_export_free(x);
		return -1;
	}
	int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		hu_err_sys(err, "export: dup");
		hu_tpl_export_free(x);
		return -1;
	}
	if (push_dir(x, fd, 0, err) < 0) {
		hu_tpl_export_free(x);
		return -1;
	}
	*out = x;
	return 0;
}

int hu_tpl_export_step(struct hu_tpl_export *x, hu_err *err)
{
	if (x->done)
		return 0;
	if (x->sink_failed)
		return hu_err_set(err, -EPIPE, "export %s: the receiver stopped taking the stream", x->path);
	if (x->file >= 0)
		return send_chunk(x, err) < 0 ? -1 : 1;
	while (x->depth && x->stack[x->depth - 1].next == x->stack[x->depth - 1].n)
		pop_dir(x);
	if (x->depth)
		return next_entry(x, err) < 0 ? -1 : 1;
	/* the end-of-archive blocks, then the digest */
	if (archive_write_close(x->a) != ARCHIVE_OK)
		return hu_err_set(err, x->sink_failed ? -EPIPE : -EIO, "export: %s", archive_error_string(x->a));
	if (x->sink_failed)
		return hu_err_set(err, -EPIPE, "export: the receiver stopped taking the stream");
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (EVP_DigestFinal_ex(x->md, md, &n) != 1 || n != 32)
		return hu_err_set(err, -EIO, "export: sha256");
	memcpy(x->digest, "sha256:", 7);
	hu_hex_encode(md, n, x->digest + 7);
	x->done = 1;
	return 0;
}

void hu_tpl_export_digest(const struct hu_tpl_export *x, char out[HU_TPL_CHECKSUM_MAX])
{
	snprintf(out, HU_TPL_CHECKSUM_MAX, "%s", x->done ? x->digest : "");
}

uint64_t hu_tpl_export_bytes(const struct hu_tpl_export *x)
{
	return x->bytes;
}

void hu_tpl_export_free(struct hu_tpl_export *x)
{
	if (!x)
		return;
	while (x->depth)
		pop_dir(x);
	if (x->file >= 0)
		close(x->file);
	if (x->a)
		archive_write_free(x->a); /* closes first when still open: the sink may be called */
	if (x->e)
		archive_entry_free(x->e);
	EVP_MD_CTX_free(x->md);
	free(x->chunk);
	free(x);
}

static int discard(void *arg, const void *buf, size_t n)
{
	(void)arg, (void)buf, (void)n;
	return 0;
}

int hu_tpl_checksum(int root, char out[HU_TPL_CHECKSUM_MAX], hu_err *err)
{
	struct hu_tpl_export *x;
	int rc;

	out[0] = '\0';
	if (hu_tpl_export_open(root, discard, NULL, &x, err) < 0)
		return -1;
	while ((rc = hu_tpl_export_step(x, err)) > 0)
		;
	if (rc == 0)
		hu_tpl_export_digest(x, out);
	hu_tpl_export_free(x);
	return rc;
}
