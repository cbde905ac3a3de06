#include "init/users.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/cleanup.h"
#include "util/fileutil.h"

/* The whole file in memory, split into lines in place, plus what it looked
 * like on disk so a change is noticed. */
struct dbfile {
	const char *path;
	char *text;
	size_t len;
	struct stat st;
	bool loaded;
	char name_buf[256]; /* last name handed out by *_name_of */
};

static struct dbfile passwd_db = {.path = "/etc/passwd"};
static struct dbfile group_db = {.path = "/etc/group"};

#define DB_MAX_SIZE (4u << 20) /* a larger passwd file is not a real one */

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void db_load(struct dbfile *db)
{
	struct stat st;
	hu_err err;

	if (stat(db->path, &st) < 0) {
		free(db->text);
		db->text = NULL;
		db->len = 0;
		db->loaded = false;
		return;
	}
	if (db->loaded && same_file(&st, &db->st))
		return;
	free(db->text);
	db->text = NULL;
	db->len = 0;
	db->loaded = false;
	size_t cap = (size_t)st.st_size + 1;
	if (!S_ISREG(st.st_mode) || cap > DB_MAX_SIZE)
		return;
	db->text = malloc(cap);
	if (!db->text)
		return;
	ssize_t n = hu_read_file(db->path, db->text, cap, &err);
	if (n < 0) {
		free(db->text);
		db->text = NULL;
		return;
	}
	db->len = (size_t)n;
	db->st = st;
	db->loaded = true;
}

void hu_users_refresh(void)
{
	db_load(&passwd_db);
	db_load(&group_db);
}

void hu_users_free(void)
{
	free(passwd_db.text);
	free(group_db.text);
	passwd_db.text = group_db.text = NULL;
	passwd_db.loaded = group_db.loaded = false;
}

/* Split a copy of one line into at most `max` colon-separated fields (a
 * passwd line has 7, a group line 4; extra ones are ignored). */
#define LINE_MAX_LEN 4096
static size_t split_line(const char *line, size_t len, char *copy, char **fields, size_t max)
{
	if (len >= LINE_MAX_LEN)
		return 0;
	memcpy(copy, line, len);
	copy[len] = '\0';
	size_t n = 0;
	char *p = copy;
	while (n < max) {
		fields[n++] = p;
		char *c = strchr(p, ':');
		if (!c)
			break;
		*c = '\0';
		p = c + 1;
	}
	return n;
}

/* Call fn for each line of db split into fields; stop when fn returns true. */
static bool db_each(struct dbfile *db, size_t nfields, bool (*fn)(char **f, void *ctx), void *ctx)
{
	char copy[LINE_MAX_LEN];
	char *fields[8];

	if (!db->loaded)
		return false;
	const char *p = db->text, *end = db->text + db->len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (split_line(p, len, copy, fields, HU_ARRAY_LEN(fields)) >= nfields && fn(fields, ctx))
			return true;
		p += len + 1;
	}
	return false;
}

static bool parse_id(const char *s, unsigned *out)
{
	char *end;
	if (!*s)
		return false;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v > 0xfffffffeul)
		return false;
	*out = (unsigned)v;
	return true;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src);
}

struct by_name {
	struct hu_user *u;
	const char *name;
};

static bool match_passwd_name(char **f, void *ctx)
{
	struct by_name *q = ctx;
	unsigned uid, gid;
	if (strcmp(f[0], q->name) || !parse_id(f[2], &uid) || !parse_id(f[3], &gid))
		return false;
	q->u->uid = uid;
	q->u->gid = gid;
	copy_str(q->u->home, sizeof(q->u->home), f[5]);
	copy_str(q->u->shell, sizeof(q->u->shell), f[6]);
	return true;
}

/* Supplementary groups: every group whose member list names the user. */
static bool collect_group(char **f, void *ctx)
{
	struct hu_user *u = ctx;
	unsigned gid;
	if (!parse_id(f[2], &gid) || gid == u->gid)
		return false;
	for (char *m = f[3]; *m;) {
		size_t len = strcspn(m, ",");
		if (len == strlen(u->name) && !strncmp(m, u->name, len)) {
			if (u->ngroups < HU_USER_MAX_GROUPS)
				u->groups[u->ngroups++] = gid;
			break;
		}
		m += len;
		if (*m == ',')
			m++;
	}
	return false;
}

int hu_user_resolve(const char *name, struct hu_user *u, hu_err *err)
{
	bool root = name && !strcmp(name, "root");

	if (name && !root && strcmp(name, "user"))
		return hu_err_set(err, EINVAL, "unknown user %s", name);
	hu_users_refresh();
	memset(u, 0, sizeof(*u));
	copy_str(u->name, sizeof(u->name), root ? "root" : "user");
	struct by_name q = {.u = u, .name = u->name};
	if (!db_each(&passwd_db, 7, match_passwd_name, &q)) {
		u->uid = u->gid = root ? 0 : HU_USER_FALLBACK_ID;
		copy_str(u->home, sizeof(u->home), root ? "/root" : "/home/user");
		u->shell[0] = '\0';
	}
	if (root)
		u->uid = u->gid = 0; /* root is root, whatever the image's files say */
	if (!u->home[0])
		copy_str(u->home, sizeof(u->home), "/");
	if (!u->shell[0])
		copy_str(u->shell, sizeof(u->shell), "/bin/sh");
	u->groups[u->ngroups++] = u->gid;
	db_each(&group_db, 4, collect_group, u);
	return 0;
}

struct by_id {
	unsigned id;
	char *out;
	size_t cap;
};

static bool match_id(char **f, void *ctx)
{
	struct by_id *q = ctx;
	unsigned id;
	if (!parse_id(f[2], &id) || id != q->id)
		return false;
	copy_str(q->out, q->cap, f[0]);
	return true;
}

static const char *name_of(struct dbfile *db, size_t nfields, unsigned id)
{
	struct by_id q = {.id = id, .out = db->name_buf, .cap = sizeof(db->name_buf)};
	return db_each(db, nfields, match_id, &q) ? db->name_buf : NULL;
}

const char *hu_user_name_of(uid_t uid)
{
	return name_of(&passwd_db, 3, uid);
}

const char *hu_group_name_of(gid_t gid)
{
	return name_of(&group_db, 3, gid);
}
