#include "init/watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init/fileops.h"
#include "init/loop.h"
#include "init/users.h"
#include "util/cleanup.h"

/* The inotify events that map onto envd's event types (as fsnotify maps them). */
#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_DELETE_SELF | IN_MODIFY | IN_MOVED_FROM | IN_MOVE_SELF | IN_ATTRIB)
/* Events read per read(); small enough that one batch of frames stays modest. */
#define EVENT_BUF 16384

struct watched_dir {
	int wd;
	char *rel;      /* path relative to the watched root, "" for the root */
	uint32_t depth; /* 1 for the root */
};

struct hu_dirwatch {
	struct hu_watch watch; /* the inotify descriptor in init's loop */
	struct hu_dirwatch *next;
	struct hu_conn *conn;
	uint32_t id;        /* of the WATCH_START: every event carries it */
	uint32_t max_depth; /* 1: the root only */
	bool with_entry;    /* events carry the ENTRY of the changed path */
	struct hu_user user;
	char root[PATH_MAX];
	struct watched_dir *dirs; /* sorted by wd */
	size_t ndirs, cap;
	bool ended;
};

static struct hu_dirwatch *watches;
static size_t nwatches;

/* ---- the table of watched directories ------------------------------------------- */

/* Index of wd, or where it would go (with *found false). */
static size_t dir_slot(const struct hu_dirwatch *w, int wd, bool *found)
{
	size_t lo = 0, hi = w->ndirs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->dirs[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < w->ndirs && w->dirs[lo].wd == wd;
	return lo;
}

static void dir_remove_at(struct hu_dirwatch *w, size_t i)
{
	free(w->dirs[i].rel);
	memmove(&w->dirs[i], &w->dirs[i + 1], (w->ndirs - i - 1) * sizeof(w->dirs[0]));
	w->ndirs--;
}

static const char *rel_of(const struct hu_dirwatch *w, const char *abs)
{
	size_t n = strlen(w->root);
	if (abs[n] == '\0')
		return "";
	return abs + (strcmp(w->root, "/") ? n + 1 : 1);
}

/* Watch the directory at abs (as the current identity). */
static int add_dir(struct hu_dirwatch *w, const char *abs, uint32_t depth, hu_err *err)
{
	/* The root may be reached through a symlink (as envd allows); below it
	 * symlinks are not followed, so a link cannot loop the walk. */
	uint32_t flags = IN_ONLYDIR | (depth > 1 ? IN_DONT_FOLLOW : 0);
	int wd = inotify_add_watch(w->watch.fd, abs, WATCH_MASK | flags);
	if (wd < 0) {
		if (errno == ENOSPC)
			return hu_err_set(err, ENOSPC, "watch %s: the sandbox's inotify watch limit is reached", abs);
		return hu_err_sys(err, "watch %s", abs);
	}
	bool found;
	size_t i = dir_slot(w, wd, &found);
	if (found)
		return 0; /* the same directory seen twice (a bind mount): one watch */
	if (w->ndirs >= HU_DIRWATCH_MAX_DIRS) {
		inotify_rm_watch(w->watch.fd, wd);
		return hu_err_set(err, ENOSPC, "watch %s: more than %d directories", w->root, HU_DIRWATCH_MAX_DIRS);
	}
	if (w->ndirs == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 8;
		struct watched_dir *d = realloc(w->dirs, cap * sizeof(*d));
		if (!d)
			return hu_err_set(err, ENOMEM, "watch %s", abs);
		w->dirs = d;
		w->cap = cap;
	}
	char *rel = strdup(rel_of(w, abs));
	if (!rel)
		return hu_err_set(err, ENOMEM, "watch %s", abs);
	memmove(&w->dirs[i + 1], &w->dirs[i], (w->ndirs - i) * sizeof(w->dirs[0]));
	w->dirs[i] = (struct watched_dir){.wd = wd, .rel = rel, .depth = depth};
	w->ndirs++;
	return 0;
}

/* A directory that is gone or not ours to read is not an error of the watch. */
static bool skippable(int code)
{
	return code == ENOENT || code == EACCES || code == ENOTDIR || code == ELOOP;
}

/* Watch the subdirectories of abs (a PATH_MAX buffer, restored on return)
 * down to max_depth. */
static int walk(struct hu_dirwatch *w, char *abs, uint32_t depth, hu_err *err)
{
	if (depth >= w->max_depth)
		return 0;
	int fd = open(abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return skippable(errno) ? 0 : hu_err_sys(err, "open directory %s", abs);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return hu_err_sys(err, "opendir %s", abs);
	}
	size_t len = strlen(abs);
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (de->d_type != DT_DIR &&
		    (de->d_type != DT_UNKNOWN || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		     !S_ISDIR(st.st_mode)))
			continue;
		int n = snprintf(abs + len, PATH_MAX - len, "%s%s", len > 1 ? "/" : "", de->d_name);
		if (n < 0 || (size_t)n >= PATH_MAX - len)
			continue;
		rc = add_dir(w, abs, depth + 1, err);
		if (rc < 0 && skippable(err->code))
			rc = 0;
		else if (rc == 0)
			rc = walk(w, abs, depth + 1, err);
		abs[len] = '\0';
	}
	closedir(d);
	return rc;
}

/* A directory appeared at rel (created or moved in): follow it and what is
 * already inside it. */
static int follow_dir(struct hu_dirwatch *w, const char *rel, uint32_t depth, hu_err *err)
{
	char abs[PATH_MAX];
	struct hu_fs_identity saved;
	int n = snprintf(abs, sizeof(abs), "%s%s%s", w->root, strcmp(w->root, "/") ? "/" : "", rel);
	if (n < 0 || (size_t)n >= sizeof(abs))
		return 0;
	if (hu_fs_become_user(&w->user, &saved, err) < 0)
		return -1;
	int rc = add_dir(w, abs, depth, err);
	if (rc == 0)
		rc = walk(w, abs, depth, err);
	hu_fs_become_init(&saved);
	if (rc < 0 && skippable(err->code))
		return 0;
	return rc;
}

/* A directory left (removed or moved away): forget it and its subtree. */
static void unfollow_dir(struct hu_dirwatch *w, const char *rel)
{
	size_t len = strlen(rel);
	for (size_t i = w->ndirs; i-- > 0;) {
		const char *r = w->dirs[i].rel;
		if (!strncmp(r, rel, len) && (r[len] == '\0' || r[len] == '/')) {
			inotify_rm_watch(w->watch.fd, w->dirs[i].wd);
			dir_remove_at(w, i);
		}
	}
}

/* ---- events ------------------------------------------------------------------------ */

/* The ENTRY of root/name, looked up with the watcher's identity; nothing
 * when it is gone (a REMOVE, a RENAME away) or not the user's to see. */
static void put_event_entry(struct hu_dirwatch *w, struct hu_buf *out, const char *name)
{
	char abs[PATH_MAX];
	struct hu_fs_identity saved;
	struct stat st;
	hu_err err;
	int n = strcmp(name, ".") ? snprintf(abs, sizeof(abs), "%s%s%s", w->root, strcmp(w->root, "/") ? "/" : "", name)
				  : snprintf(abs, sizeof(abs), "%s", w->root);

	if (n < 0 || (size_t)n >= sizeof(abs) || hu_fs_become_user(&w->user, &saved, &err) < 0)
		return;
	if (lstat(abs, &st) == 0)
		hu_fileops_put_entry(out, abs, &st, AT_FDCWD, abs);
	hu_fs_become_init(&saved);
}

static void put_event(struct hu_dirwatch *w, struct hu_buf *out, const char *name, uint8_t type)
{
	size_t f = hu_frame_begin(out, HU_MSG_WATCH_EVENT, w->id);
	hu_put_str(out, HU_F_NAME, name);
	hu_put_u8(out, HU_F_EVENT, type);
	if (w->with_entry)
		put_event_entry(w, out, name);
	hu_frame_end(out, f);
}

/* Turn one inotify event into WATCH_EVENT frames in out. -1 when the watch
 * must end (err says why). */
static int handle_event(struct hu_dirwatch *w, const struct inotify_event *ev, struct hu_buf *out, hu_err *err)
{
	if (ev->mask & IN_Q_OVERFLOW)
		return hu_err_set(err, EOVERFLOW, "watch %s: events were lost (the client read too slowly)", w->root);
	bool found;
	size_t i = dir_slot(w, ev->wd, &found);
	if (!found)
		return 0; /* a watch dropped a moment ago */
	const struct watched_dir *d = &w->dirs[i];
	if (ev->mask & IN_IGNORED) {
		if (d->depth == 1)
			return hu_err_set(err, ENOENT, "watch %s: the directory is gone", w->root);
		dir_remove_at(w, i);
		return 0;
	}
	bool self = ev->len == 0 || ev->name[0] == '\0';
	if (self && d->depth > 1)
		return 0; /* its parent reports the same change under the child's name */

	char name[PATH_MAX];
	int n = self ? snprintf(name, sizeof(name), ".")
		     : snprintf(name, sizeof(name), "%s%s%s", d->rel, d->rel[0] ? "/" : "", ev->name);
	if (n < 0 || (size_t)n >= sizeof(name))
		return 0;
	uint32_t depth = d->depth; /* d may move when the table changes below */

	/* One inotify event may carry several changes; envd's order. */
	if (ev->mask & (IN_CREATE | IN_MOVED_TO))
		put_event(w, out, name, HU_WATCH_CREATE);
	if (ev->mask & (IN_MOVED_FROM | IN_MOVE_SELF))
		put_event(w, out, name, HU_WATCH_RENAME);
	if (ev->mask & IN_ATTRIB)
		put_event(w, out, name, HU_WATCH_CHMOD);
	if (ev->mask & IN_MODIFY)
		put_event(w, out, name, HU_WATCH_WRITE);
	if (ev->mask & (IN_DELETE | IN_DELETE_SELF))
		put_event(w, out, name, HU_WATCH_REMOVE);

	if (self || !(ev->mask & IN_ISDIR))
		return 0;
	if (ev->mask & (IN_MOVED_FROM | IN_DELETE))
		unfollow_dir(w, name);
	if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && depth < w->max_depth)
		return follow_dir(w, name, depth + 1, err);
	return 0;
}

static void dirwatch_free(void *p)
{
	struct hu_dirwatch *w = p;
	for (size_t i = 0; i < w->ndirs; i++)
		free(w->dirs[i].rel);
	free(w->dirs);
	free(w);
}

static void end_watch(struct hu_dirwatch *w)
{
	if (w->ended)
		return;
	w->ended = true;
	for (struct hu_dirwatch **p = &watches; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			break;
		}
	}
	nwatches--;
	hu_loop_del(&w->watch);
	close(w->watch.fd);
	hu_loop_defer_free(w, dirwatch_free);
}

static void update_interest(struct hu_dirwatch *w)
{
	if (!w->ended)
		hu_loop_mod(&w->watch, hu_conn_over_bound(w->conn) ? 0 : EPOLLIN);
}

/* Read and forward events while the connection has room. */
static void read_events(struct hu_dirwatch *w)
{
	static uint8_t buf[EVENT_BUF] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct hu_buf out = {0};
	struct hu_conn *c = w->conn;
	hu_err err;
	int rc = 0;

	while (rc == 0 && !w->ended && !c->dead && !hu_conn_over_bound(c)) {
		ssize_t n = read(w->watch.fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			rc = n < 0 ? hu_err_sys(&err, "read inotify events") : hu_err_set(&err, EIO, "inotify closed");
			break;
		}
		for (size_t off = 0; rc == 0 && off + sizeof(struct inotify_event) <= (size_t)n;) {
			const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
			rc = handle_event(w, ev, &out, &err);
			off += sizeof(*ev) + ev->len;
		}
		hu_conn_send(c, &out);
		hu_buf_reset(&out);
	}
	hu_buf_free(&out);
	if (rc < 0 && !w->ended && !c->dead) {
		hu_conn_send_error(c, w->id, &err);
		end_watch(w);
	}
	update_interest(w);
}

static void on_inotify(struct hu_watch *hw, uint32_t events)
{
	struct hu_dirwatch *w = HU_CONTAINER_OF(hw, struct hu_dirwatch, watch);
	read_events(w);
}

/* ---- requests ---------------------------------------------------------------------- */

static int watch_tree(struct hu_dirwatch *w, hu_err *err)
{
	struct stat st;
	char abs[PATH_MAX];

	if (stat(w->root, &st) < 0)
		return hu_err_sys(err, "watch %s", w->root);
	if (!S_ISDIR(st.st_mode))
		return hu_err_set(err, ENOTDIR, "watch %s", w->root);
	if (add_dir(w, w->root, 1, err) < 0)
		return -1;
	snprintf(abs, sizeof(abs), "%s", w->root);
	return walk(w, abs, 1, err);
}

static int start(struct hu_conn *c, const struct hu_request *req, hu_err *err)
{
	struct hu_fs_identity saved;

	if (nwatches >= HU_DIRWATCH_MAX)
		return hu_err_set(err, EMFILE, "more than %d directory watches", HU_DIRWATCH_MAX);
	for (struct hu_dirwatch *o = watches; o; o = o->next)
		if (o->conn == c && o->id == req->id)
			return hu_err_set(err, EBUSY, "a watch with id %u is already running", req->id);
	struct hu_dirwatch *w = calloc(1, sizeof(*w));
	if (!w)
		return hu_err_set(err, ENOMEM, "watch");
	w->conn = c;
	w->id = req->id;
	w->max_depth = req->depth ? req->depth : 1;
	w->with_entry = req->with_entry;
	w->watch.fd = -1;
	int rc = hu_user_resolve(req->user, &w->user, err);
	if (rc == 0)
		rc = hu_path_normalize(req->path, w->user.home, w->root, sizeof(w->root), err);
	if (rc == 0 && (w->watch.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		rc = hu_err_sys(err, "inotify_init1");
	if (rc == 0 && (rc = hu_fs_become_user(&w->user, &saved, err)) == 0) {
		rc = watch_tree(w, err);
		hu_fs_become_init(&saved);
	}
	if (rc == 0)
		rc = hu_loop_add(&w->watch, w->watch.fd, EPOLLIN, on_inotify, err);
	if (rc < 0) {
		if (w->watch.fd >= 0)
			close(w->watch.fd);
		dirwatch_free(w);
		return -1;
	}
	w->next = watches;
	watches = w;
	nwatches++;
	return 0;
}

void hu_dirwatch_start(struct hu_conn *c, const struct hu_request *req)
{
	hu_err err;

	if (start(c, req, &err) < 0)
		hu_conn_send_error(c, req->id, &err);
	else
		hu_conn_send_empty(c, HU_MSG_OK, req->id);
}

void hu_dirwatch_forget_conn(struct hu_conn *c)
{
	for (struct hu_dirwatch *w = watches, *next; w; w = next) {
		next = w->next;
		if (w->conn == c)
			end_watch(w);
	}
}

void hu_dirwatch_conn_drained(struct hu_conn *c)
{
	for (struct hu_dirwatch *w = watches, *next; w; w = next) {
		next = w->next;
		if (w->conn != c)
			continue;
		read_events(w);
		if (c->dead)
			return; /* every watch of c ended with it */
	}
}
