#include "init/fileops.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init/users.h"
#include "init/xattrmeta.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

/* An ENTRIES frame is closed (with MORE) once its payload passes this, well
 * under HU_PROTO_MAX_PAYLOAD so the next entry always fits. */
#define ENTRIES_FRAME_SOFT_MAX (HU_PROTO_MAX_PAYLOAD - 64 * 1024)

struct hu_fileop_read {
	struct hu_fileop_read *next;
	uint32_t id;
	int fd;
	uint64_t sent;
};

struct hu_fileop_write {
	struct hu_fileop_write *next;
	uint32_t id;
	int fd;
	char *path;
	hu_err failure; /* code != 0 once a write failed: later DATA is dropped */
};

/* ---- acting as the user -------------------------------------------------------- */

/* setfsuid returns the previous value and no error; calling it twice is the
 * documented way to learn whether the change took. */
static bool set_fsuid(uid_t uid)
{
	setfsuid(uid);
	return (uid_t)setfsuid(uid) == uid;
}

static bool set_fsgid(gid_t gid)
{
	setfsgid(gid);
	return (gid_t)setfsgid(gid) == gid;
}

void hu_fs_become_init(struct hu_fs_identity *s)
{
	if (!s->switched)
		return;
	set_fsuid(s->fsuid);
	set_fsgid(s->fsgid);
	setgroups((size_t)s->ngroups, s->groups);
	s->switched = false;
}

/* Init is single-threaded, so switching its own file-system identity around
 * one request affects nothing else. */
int hu_fs_become_user(const struct hu_user *u, struct hu_fs_identity *s, hu_err *err)
{
	s->switched = false;
	if (geteuid() != 0)
		return 0; /* unprivileged (tests): our own identity is all there is */
	s->ngroups = getgroups(HU_USER_MAX_GROUPS, s->groups);
	if (s->ngroups < 0)
		return hu_err_sys(err, "getgroups");
	s->fsuid = geteuid();
	s->fsgid = getegid();
	s->switched = true;
	if (setgroups(u->ngroups, u->groups) < 0) {
		hu_err_sys(err, "setgroups");
		hu_fs_become_init(s);
		return -1;
	}
	if (!set_fsgid(u->gid) || !set_fsuid(u->uid)) {
		hu_fs_become_init(s);
		return hu_err_set(err, EPERM, "switch to uid %u", (unsigned)u->uid);
	}
	return 0;
}

/* ---- paths and entries ------------------------------------------------------------ */

int hu_path_normalize(const char *in, const char *home, char *out, size_t cap, hu_err *err)
{
	char joined[PATH_MAX * 2];
	size_t len = 0;

	int n = in[0] == '/' ? snprintf(joined, sizeof(joined), "%s", in) : snprintf(joined, sizeof(joined), "%s/%s", home, in);
	if (n < 0 || (size_t)n >= sizeof(joined))
		return hu_err_set(err, ENAMETOOLONG, "path %s", in);
	/* Walk the components; out always holds a normalised absolute prefix. */
	for (char *save = NULL, *comp = strtok_r(joined, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--; /* drop the slash too; at the root ".." stays at the root */
			continue;
		}
		size_t clen = strlen(comp);
		if (len + 1 + clen + 1 > cap)
			return hu_err_set(err, ENAMETOOLONG, "path %s", in);
		out[len++] = '/';
		memcpy(out + len, comp, clen);
		len += clen;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	return 0;
}

static uint8_t entry_type(mode_t m)
{
	if (S_ISREG(m))
		return HU_ENTRY_FILE;
	if (S_ISDIR(m))
		return HU_ENTRY_DIR;
	if (S_ISLNK(m))
		return HU_ENTRY_SYMLINK;
	return HU_ENTRY_OTHER;
}

static void put_name_or_id(struct hu_buf *b, uint16_t tag, const char *name, unsigned id)
{
	char num[16];
	if (!name) {
		snprintf(num, sizeof(num), "%u", id);
		name = num;
	}
	hu_put_str(b, tag, name);
}

/* One ENTRY; at_fd/name locate a symlink for readlinkat. */
void hu_fileops_put_entry(struct hu_buf *b, const char *path, const struct stat *st, int at_fd, const char *name)
{
	const char *base = strrchr(path, '/');
	base = base && base[1] ? base + 1 : path;

	size_t e = hu_put_nested_begin(b, HU_F_ENTRY);
	hu_put_str(b, HU_F_NAME, base);
	hu_put_str(b, HU_F_PATH, path);
	hu_put_u8(b, HU_F_TYPE, entry_type(st->st_mode));
	hu_put_u64(b, HU_F_SIZE, (uint64_t)st->st_size);
	hu_put_u32(b, HU_F_MODE, st->st_mode);
	hu_put_u32(b, HU_F_UID, st->st_uid);
	hu_put_u32(b, HU_F_GID, st->st_gid);
	put_name_or_id(b, HU_F_OWNER, hu_user_name_of(st->st_uid), st->st_uid);
	put_name_or_id(b, HU_F_GROUP, hu_group_name_of(st->st_gid), st->st_gid);
	hu_put_u64(b, HU_F_MTIME_NS, (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec);
	if (S_ISLNK(st->st_mode)) {
		/* envd reports where the link leads (filepath.EvalSymlinks); a
		 * dangling link as its text. Resolution stays inside the
		 * sandbox's root, which is init's root. */
		char target[PATH_MAX];
		ssize_t n;
		if (realpath(path, target))
			hu_put_str(b, HU_F_SYMLINK, target);
		else if ((n = readlinkat(at_fd, name, target, sizeof(target) - 1)) >= 0) {
			target[n] = '\0';
			hu_put_str(b, HU_F_SYMLINK, target);
		}
	}
	hu_xmeta_put(b, path);
	hu_put_nested_end(b, e);
}

/* Reply ENTRIES with the one entry at path (not following a final symlink). */
static int reply_entry(struct hu_conn *c, uint32_t id, const char *path, hu_err *err)
{
	struct stat st;
	struct hu_buf b = {0};

	if (lstat(path, &st) < 0)
		return hu_err_sys(err, "stat %s", path);
	size_t f = hu_frame_begin(&b, HU_MSG_ENTRIES, id);
	hu_fileops_put_entry(&b, path, &st, AT_FDCWD, path);
	hu_frame_end(&b, f);
	hu_conn_send(c, &b);
	hu_buf_free(&b);
	return 0;
}

/* ---- LIST_DIR ---------------------------------------------------------------------- */

struct lister {
	struct hu_buf out;
	uint32_t id;
	size_t frame;
	size_t entries;
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in directory d, sorted (envd lists in Go's WalkDir order). */
static int read_names(DIR *d, const char *path, char ***out, size_t *count, size_t budget, hu_err *err)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n >= budget) {
			free_names(names, n);
			return hu_err_set(err, E2BIG, "more than %d entries under %s", HU_FILEOPS_MAX_ENTRIES, path);
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				free_names(names, n);
				return hu_err_set(err, ENOMEM, "list %s", path);
			}
			names = grown;
		}
		if (!(names[n] = strdup(de->d_name))) {
			free_names(names, n);
			return hu_err_set(err, ENOMEM, "list %s", path);
		}
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	*out = names;
	*count = n;
	return 0;
}

static int list_dir_at(struct lister *l, int fd, const char *path, uint32_t depth_left, hu_err *err)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return hu_err_sys(err, "opendir %s", path);
	}
	char **names = NULL;
	size_t count = 0;
	int rc = read_names(d, path, &names, &count, HU_FILEOPS_MAX_ENTRIES - l->entries, err);
	if (rc < 0) {
		closedir(d);
		return rc;
	}
	char child[PATH_MAX];
	struct stat st;

	for (size_t i = 0; rc == 0 && i < count; i++) {
		const char *name = names[i];
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* vanished meanwhile */
		int n = snprintf(child, sizeof(child), "%s%s%s", path, strcmp(path, "/") ? "/" : "", name);
		if (n < 0 || (size_t)n >= sizeof(child))
			continue;
		if (++l->entries > HU_FILEOPS_MAX_ENTRIES) {
			rc = hu_err_set(err, E2BIG, "more than %d entries under %s", HU_FILEOPS_MAX_ENTRIES, path);
			break;
		}
		if (l->out.len - l->frame > ENTRIES_FRAME_SOFT_MAX) {
			hu_put_u8(&l->out, HU_F_MORE, 1);
			hu_frame_end(&l->out, l->frame);
			l->frame = hu_frame_begin(&l->out, HU_MSG_ENTRIES, l->id);
		}
		hu_fileops_put_entry(&l->out, child, &st, dirfd(d), name);
		/* Symlinks are listed, never followed (lstat says "link", not "dir"). */
		if (S_ISDIR(st.st_mode) && depth_left > 1) {
			int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				rc = list_dir_at(l, sub, child, depth_left - 1, err);
		}
	}
	free_names(names, count);
	closedir(d);
	return rc;
}

static int list_dir(struct hu_conn *c, const struct hu_request *req, const char *path, hu_err *err)
{
	struct lister l = {.id = req->id};
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return hu_err_sys(err, "open directory %s", path);
	l.frame = hu_frame_begin(&l.out, HU_MSG_ENTRIES, req->id);
	int rc = list_dir_at(&l, fd, path, req->depth, err);
	if (rc == 0 && hu_frame_end(&l.out, l.frame) < 0)
		rc = hu_err_set(err, ENOMEM, "list %s", path);
	if (rc == 0)
		hu_conn_send(c, &l.out);
	hu_buf_free(&l.out);
	return rc;
}

/* ---- READ ---------------------------------------------------------------------------- */

static void read_free(struct hu_fileop_read *r)
{
	close(r->fd);
	free(r);
}

/* Stream the connection's reads while its queue has room: a 1 GiB file
 * never sits in init's memory. */
static void pump_reads(struct hu_conn *c)
{
	static uint8_t chunk[HU_PROTO_CHUNK];
	struct hu_buf b = {0};
	hu_err err;

	while (!c->dead && c->reads && !hu_conn_over_bound(c)) {
		struct hu_fileop_read *r = c->reads;
		ssize_t n = read(r->fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		hu_buf_reset(&b);
		if (n > 0) {
			size_t f = hu_frame_begin(&b, HU_MSG_READ_DATA, r->id);
			hu_put_bytes(&b, HU_F_DATA, chunk, (size_t)n);
			hu_frame_end(&b, f);
			r->sent += (uint64_t)n;
			/* Round robin: the next read gets a turn. */
			if (r->next) {
				struct hu_fileop_read **tail = &c->reads;
				c->reads = r->next;
				r->next = NULL;
				while (*tail)
					tail = &(*tail)->next;
				*tail = r;
			}
			hu_conn_send(c, &b);
			continue;
		}
		c->reads = r->next;
		if (n == 0) {
			size_t f = hu_frame_begin(&b, HU_MSG_READ_END, r->id);
			hu_put_u64(&b, HU_F_SIZE, r->sent);
			hu_frame_end(&b, f);
			hu_conn_send(c, &b);
		} else {
			hu_err_sys(&err, "read");
			hu_conn_send_error(c, r->id, &err);
		}
		read_free(r);
	}
	hu_buf_free(&b);
}

static int start_read(struct hu_conn *c, uint32_t id, const char *path, hu_err *err)
{
	struct stat st;
	/* O_NONBLOCK so opening a FIFO cannot hang init; cleared right after. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return hu_err_sys(err, "open %s", path);
	if (fstat(fd, &st) < 0)
		return hu_err_sys(err, "stat %s", path);
	if (S_ISDIR(st.st_mode))
		return hu_err_set(err, EISDIR, "read %s", path);
	if (!S_ISREG(st.st_mode))
		return hu_err_set(err, EINVAL, "read %s: not a regular file", path);
	if (fcntl(fd, F_SETFL, 0) < 0)
		return hu_err_sys(err, "fcntl %s", path);
	struct hu_fileop_read *r = calloc(1, sizeof(*r));
	if (!r)
		return hu_err_set(err, ENOMEM, "read %s", path);
	r->id = id;
	r->fd = hu_take_fd(&fd);
	struct hu_fileop_read **tail = &c->reads;
	while (*tail)
		tail = &(*tail)->next;
	*tail = r;
	return 0;
}

/* ---- WRITE_* ---------------------------------------------------------------------------- */

static struct hu_fileop_write **find_write(struct hu_conn *c, uint32_t id)
{
	struct hu_fileop_write **w = &c->writes;
	while (*w && (*w)->id != id)
		w = &(*w)->next;
	return w;
}

static void write_free(struct hu_fileop_write *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->path);
	free(w);
}

/* mkdir -p of the parent of path with init's identity; every directory it
 * creates is handed to u. Runs before init takes u's identity. */
static int make_parents_owned(const char *path, const struct hu_user *u, hu_err *err)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", path);
	char *slash = strrchr(tmp, '/');
	if (!slash || slash == tmp)
		return 0;
	*slash = '\0';
	for (char *p = tmp + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(tmp, 0755) == 0) {
			if (chown(tmp, u->uid, u->gid) < 0 && geteuid() == 0)
				return hu_err_sys(err, "chown %s", tmp);
		} else if (errno != EEXIST) {
			return hu_err_sys(err, "mkdir %s", tmp);
		}
		*p = saved;
		if (!saved)
			return 0;
	}
}

/* mkdir -p of the parent of path (as the user: the directories are theirs). */
static int make_parents(const char *path, hu_err *err)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return 0;
	*slash = '\0';
	return hu_mkdir_p(parent, 0755, err);
}

static int write_open(struct hu_conn *c, const struct hu_request *req, const char *path, hu_err *err)
{
	uint32_t id = req->id;
	size_t open_writes = 0;
	for (struct hu_fileop_write *w = c->writes; w; w = w->next)
		open_writes++;
	if (*find_write(c, id))
		return hu_err_set(err, EBUSY, "a write with id %u is already open", id);
	if (open_writes >= HU_FILEOPS_MAX_WRITES)
		return hu_err_set(err, EMFILE, "more than %d writes open", HU_FILEOPS_MAX_WRITES);
	if (make_parents(path, err) < 0)
		return -1;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0)
		return hu_err_sys(err, "open %s", path);
	/* envd chowns every upload to its user after opening it, so a watcher
	 * of the directory sees CREATE, CHMOD, WRITE; the file is already the
	 * user's here, and chowning it to its own owner gives watchers the same
	 * events. It changes nothing else, so a failure is of no consequence. */
	struct stat st;
	if (fstat(fd, &st) == 0 && fchown(fd, st.st_uid, st.st_gid) < 0) {
		/* nothing to undo */
	}
	/* envd: an upload replaces the file's metadata, also with none */
	if (hu_xmeta_replace(fd, req->metav, req->metac, err) < 0) {
		close(fd);
		hu_err_prefix(err, "%s", path);
		return -1;
	}
	struct hu_fileop_write *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		close(fd);
		return hu_err_set(err, ENOMEM, "write %s", path);
	}
	w->id = id;
	w->fd = fd;
	w->next = c->writes;
	c->writes = w;
	return 0;
}

static void write_data(struct hu_conn *c, const struct hu_request *req)
{
	struct hu_fileop_write *w = *find_write(c, req->id);
	hu_err err;

	if (!w) {
		hu_err_set(&err, EBADF, "no open write with id %u", req->id);
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	if (w->failure.code)
		return; /* reported once already; WRITE_CLOSE repeats it */
	if (hu_write_all(w->fd, req->data, req->data_len) < 0) {
		hu_err_sys(&w->failure, "write %s", w->path);
		hu_conn_send_error(c, req->id, &w->failure);
	}
}

static int write_close(struct hu_conn *c, uint32_t id, hu_err *err)
{
	struct hu_fileop_write **slot = find_write(c, id);
	struct hu_fileop_write *w = *slot;
	int rc = 0;

	if (!w)
		return hu_err_set(err, EBADF, "no open write with id %u", id);
	*slot = w->next;
	if (w->failure.code) {
		*err = w->failure;
		rc = -1;
	} else if (close(w->fd) < 0) {
		rc = hu_err_sys(err, "close %s", w->path);
	}
	w->fd = -1;
	if (rc == 0)
		rc = reply_entry(c, id, w->path, err);
	write_free(w);
	return rc;
}

/* ---- the other requests ---------------------------------------------------------------- */

static int do_mkdir(struct hu_conn *c, uint32_t id, const char *path, hu_err *err)
{
	struct stat st;
	if (lstat(path, &st) == 0)
		return hu_err_set(err, EEXIST, "mkdir %s", path);
	if (hu_mkdir_p(path, 0755, err) < 0)
		return -1;
	return reply_entry(c, id, path, err);
}

static int do_move(struct hu_conn *c, uint32_t id, const char *from, const char *to, hu_err *err)
{
	struct stat st;
	if (lstat(from, &st) < 0)
		return hu_err_sys(err, "move %s", from);
	if (make_parents(to, err) < 0)
		return -1;
	if (rename(from, to) < 0)
		return hu_err_sys(err, "move %s to %s", from, to);
	return reply_entry(c, id, to, err);
}

static int do_remove(struct hu_conn *c, uint32_t id, const char *path, hu_err *err)
{
	struct stat st;
	if (!strcmp(path, "/"))
		return hu_err_set(err, EBUSY, "refusing to remove /");
	/* envd removes with os.RemoveAll: a path that is not there is fine */
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return hu_err_sys(err, "remove %s", path);
	} else if (hu_rm_rf(path, err) < 0) {
		return -1;
	}
	hu_conn_send_empty(c, HU_MSG_OK, id);
	return 0;
}

static int run_request(struct hu_conn *c, const struct hu_request *req, const char *path, const char *dest, hu_err *err)
{
	switch (req->type) {
	case HU_MSG_STAT:
		return reply_entry(c, req->id, path, err);
	case HU_MSG_LIST_DIR:
		return list_dir(c, req, path, err);
	case HU_MSG_MKDIR:
		return do_mkdir(c, req->id, path, err);
	case HU_MSG_MOVE:
		return do_move(c, req->id, path, dest, err);
	case HU_MSG_REMOVE:
		return do_remove(c, req->id, path, err);
	case HU_MSG_READ:
		return start_read(c, req->id, path, err);
	case HU_MSG_WRITE_OPEN:
		if (write_open(c, req, path, err) < 0)
			return -1;
		hu_conn_send_empty(c, HU_MSG_OK, req->id);
		return 0;
	default:
		return hu_err_set(err, EOPNOTSUPP, "not a file request: %u", req->type);
	}
}

void hu_fileops_handle(struct hu_conn *c, const struct hu_request *req)
{
	char path[PATH_MAX], dest[PATH_MAX];
	struct hu_user user;
	struct hu_fs_identity saved = {0};
	hu_err err;
	int rc;

	/* These act on an already open file: the identity was checked at open. */
	if (req->type == HU_MSG_WRITE_DATA) {
		write_data(c, req);
		return;
	}
	if (req->type == HU_MSG_WRITE_CLOSE) {
		if (write_close(c, req->id, &err) < 0)
			hu_conn_send_error(c, req->id, &err);
		return;
	}

	if (hu_user_resolve(req->user, &user, &err) < 0 ||
	    hu_path_normalize(req->path, user.home, path, sizeof(path), &err) < 0 ||
	    (req->dest && hu_path_normalize(req->dest, user.home, dest, sizeof(dest), &err) < 0)) {
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	/* envd creates missing parent directories as root, owned by the user,
	 * so a user's upload to /new/dir/file works. The caller of the API may
	 * act as root anyway (user "root"), so this grants it nothing; sandbox
	 * processes never reach init's socket. */
	rc = 0;
	if (req->type == HU_MSG_WRITE_OPEN || req->type == HU_MSG_MOVE)
		rc = make_parents_owned(req->type == HU_MSG_MOVE ? dest : path, &user, &err);
	if (rc == 0 && hu_fs_become_user(&user, &saved, &err) < 0) {
		hu_conn_send_error(c, req->id, &err);
		return;
	}
	if (rc == 0)
		rc = run_request(c, req, path, dest, &err);
	hu_fs_become_init(&saved);
	if (rc < 0)
		hu_conn_send_error(c, req->id, &err);
	if (req->type == HU_MSG_READ)
		pump_reads(c);
}

void hu_fileops_forget_conn(struct hu_conn *c)
{
	while (c->reads) {
		struct hu_fileop_read *r = c->reads;
		c->reads = r->next;
		read_free(r);
	}
	while (c->writes) {
		struct hu_fileop_write *w = c->writes;
		c->writes = w->next;
		write_free(w);
	}
}

void hu_fileops_conn_drained(struct hu_conn *c)
{
	pump_reads(c);
}
