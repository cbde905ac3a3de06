/*
 * A template's description (template.h): <id>/template.json, written once
 * at build time, read by the daemon for every create from it (a few hundred
 * bytes) and for GET /templates. The built-in `base` has no file: it is
 * described here.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "template/template.h"
#include "util/fileutil.h"

#define META_MAX 65536
#define MIB (1024ULL * 1024ULL)

void hu_tpl_meta_init(struct hu_tpl_meta *m)
{
	memset(m, 0, sizeof(*m));
}

void hu_tpl_meta_free(struct hu_tpl_meta *m)
{
	json_decref(m->envs);
	m->envs = NULL;
}

static void rfc3339(int64_t ms, char *buf, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *hu_tpl_meta_json(const struct hu_tpl_meta *m)
{
	char created[40];
	rfc3339(m->created_ms, created, sizeof(created));
	json_t *o = json_pack("{s:s, s:[s], s:[s], s:b, s:s, s:s, s:i, s:I, s:I, s:s, s:s, s:O, s:s, s:s, s:s, s:I, s:I, s:i, s:i}",
			      "templateID", m->id, "aliases", m->id, "names", m->id, "public", m->is_public,
			      "createdAt", created, "updatedAt", created,
			      "cpuCount", m->cpu_millis ? (int)((m->cpu_millis + 999) / 1000) : 0,
			      "memoryMB", (json_int_t)(m->memory_bytes / MIB), "diskSizeMB", (json_int_t)(m->disk_bytes / MIB),
			      "buildStatus", "ready", "envdVersion", "0.6.3", "envs", m->envs ? m->envs : json_object(),
			      "cwd", m->cwd, "user", m->user, "source", m->source, "sizeBytes", (json_int_t)m->size_bytes,
			      "files", (json_int_t)m->files, "spawnCount", 0, "buildCount", 1);
	/* E2B's Template also has these; a template here has one build, named
	 * like the template, and no spawn bookkeeping */
	if (o) {
		json_object_set_new(o, "buildID", json_string(m->id));
		json_object_set_new(o, "createdBy", json_null());
		json_object_set_new(o, "lastSpawnedAt", json_null());
	}
	if (o && m->start_cmd[0])
		json_object_set_new(o, "startCmd", json_string(m->start_cmd));
	if (o && m->ready_cmd[0])
		json_object_set_new(o, "readyCmd", json_string(m->ready_cmd));
	if (o && !m->envs)
		json_object_set_new(o, "envs", json_object());
	if (o && m->team[0])
		json_object_set_new(o, "team", json_string(m->team));
	if (o && m->recipe[0])
		json_object_set_new(o, "recipe", json_string(m->recipe));
	return o;
}

/* Exact shape the build writes: id, team, public, createdAt (unix ms),
 * cpuMillis, memoryBytes, diskBytes, envs, cwd, user, source, sizeBytes,
 * files, and recipe when a recipe script built it. Unknown fields are ignored. */
int hu_tpl_meta_parse(const char *json, size_t len, struct hu_tpl_meta *m, hu_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, 0, &je);
	const char *id = NULL, *team = "", *cwd = "", *user = "", *source = "", *start = "", *ready = "",
		   *recipe = "", *checksum = "";
	json_int_t created = 0, cpu = 0, mem = 0, disk = 0, size = 0, files = 0, ready_timeout = 0;
	int pub = 0;
	json_t *envs = NULL;

	hu_tpl_meta_init(m);
	if (!root || json_unpack_ex(root, &je, 0, "{s:s, s?s, s?b, s?I, s?I, s?I, s?I, s?o, s?s, s?s, s?s, s?I, s?I, s?s, s?s, s?I, s?s, s?s}",
				    "id", &id, "team", &team, "public", &pub, "createdAt", &created, "cpuMillis", &cpu,
				    "memoryBytes", &mem, "diskBytes", &disk, "envs", &envs, "cwd", &cwd, "user", &user,
				    "source", &source, "sizeBytes", &size, "files", &files, "startCmd", &start, "readyCmd",
				    &ready, "readyTimeout", &ready_timeout, "recipe", &recipe, "checksum", &checksum) < 0) {
		json_decref(root);
		return hu_err_set(err, -EINVAL, "template description: %s", je.text);
	}
	int bad = !hu_sandbox_id_valid(id) || strlen(team) >= sizeof(m->team) || strlen(cwd) >= sizeof(m->cwd) ||
		  strlen(user) >= sizeof(m->user) || cpu < 0 || cpu > 1000000 || mem < 0 || disk < 0 ||
		  (envs && !json_is_object(envs)) || strlen(start) >= sizeof(m->start_cmd) ||
		  strlen(ready) >= sizeof(m->ready_cmd) || strlen(recipe) >= sizeof(m->recipe) || ready_timeout < 0 || ready_timeout > 3600 ||
		  (*checksum && !hu_tpl_checksum_valid(checksum));
	const char *k;
	json_t *v;
	json_object_foreach(envs, k, v)
		bad |= !json_is_string(v);
	if (bad) {
		json_decref(root);
		return hu_err_set(err, -EINVAL, "template description: a field is out of range");
	}
	snprintf(m->id, sizeof(m->id), "%s", id);
	snprintf(m->team, sizeof(m->team), "%s", team);
	snprintf(m->cwd, sizeof(m->cwd), "%s", cwd);
	snprintf(m->user, sizeof(m->user), "%s", user);
	snprintf(m->source, sizeof(m->source), "%s", source);
	snprintf(m->start_cmd, sizeof(m->start_cmd), "%s", start);
	snprintf(m->ready_cmd, sizeof(m->ready_cmd), "%s", ready);
	snprintf(m->recipe, sizeof(m->recipe), "%s", recipe);
	snprintf(m->checksum, sizeof(m->checksum), "%s", checksum);
	m->ready_timeout_s = (uint32_t)ready_timeout;
	m->is_public = pub;
	m->created_ms = created;
	m->cpu_millis = (uint32_t)cpu;
	m->memory_bytes = (uint64_t)mem;
	m->disk_bytes = (uint64_t)disk;
	m->size_bytes = (uint64_t)size;
	m->files = (uint64_t)files;
	m->envs = envs ? json_incref(envs) : json_object();
	json_decref(root);
	return 0;
}

json_t *hu_tpl_meta_stored(const struct hu_tpl_meta *m)
{
	json_t *o = json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:O, s:s, s:s, s:s, s:I, s:I, s:s, s:s, s:I}", "id",
			 m->id, "team", m->team, "public", m->is_public, "createdAt", (json_int_t)m->created_ms,
			 "cpuMillis", (json_int_t)m->cpu_millis, "memoryBytes", (json_int_t)m->memory_bytes, "diskBytes",
			 (json_int_t)m->disk_bytes, "envs", m->envs, "cwd", m->cwd, "user", m->user, "source", m->source,
			 "sizeBytes", (json_int_t)m->size_bytes, "files", (json_int_t)m->files, "startCmd", m->start_cmd,
			 "readyCmd", m->ready_cmd, "readyTimeout", (json_int_t)m->ready_timeout_s);
	if (o && m->recipe[0])
		json_object_set_new(o, "recipe", json_string(m->recipe));
	if (o && m->checksum[0])
		json_object_set_new(o, "checksum", json_string(m->checksum));
	return o;
}

int hu_tpl_checksum_valid(const char *s)
{
	return !strncmp(s, "sha256:", 7) && strlen(s + 7) == 64 && strspn(s + 7, "0123456789abcdef") == 64;
}

static void base_meta(struct hu_tpl_meta *m)
{
	hu_tpl_meta_init(m);
	snprintf(m->id, sizeof(m->id), "base");
	snprintf(m->source, sizeof(m->source), "host");
	m->is_public = 1;
	m->host_usr = 1;
	m->envs = json_object();
}

int hu_tpl_meta_read(const char *templates_dir, const char *id, struct hu_tpl_meta *m, hu_err *err)
{
	char path[PATH_MAX];
	char buf[META_MAX];

	hu_tpl_meta_init(m);
	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, -ENOENT, "template '%.64s' not found", id);
	if (!strcmp(id, "base")) {
		base_meta(m);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s/%s", templates_dir, id, HU_TPL_META_FILE);
	ssize_t n = hu_read_file(path, buf, sizeof(buf), err);
	if (n < 0) {
		if (err->code == ENOENT)
			return hu_err_set(err, -ENOENT, "template '%s' not found", id);
		return -1;
	}
	if (hu_tpl_meta_parse(buf, (size_t)n, m, err) < 0 || strcmp(m->id, id)) {
		hu_tpl_meta_free(m);
		if (!err->code)
			hu_err_set(err, -EINVAL, "template '%s': its description names another id", id);
		hu_err_prefix(err, "template '%s'", id);
		return -1;
	}
	return 0;
}

int hu_tpl_list(const char *templates_dir, int (*fn)(const struct hu_tpl_meta *m, void *arg), void *arg, hu_err *err)
{
	struct hu_tpl_meta m;
	int stop;

	base_meta(&m);
	stop = fn(&m, arg);
	hu_tpl_meta_free(&m);
	if (stop)
		return 0;
	DIR *d = opendir(templates_dir);
	if (!d)
		return errno == ENOENT ? 0 : hu_err_sys(err, "open %s", templates_dir);
	struct dirent *de;
	while (!stop && (de = readdir(d)) != NULL) {
		hu_err ignore;
		/* dot-names are builds and deletions in progress */
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "base") ||
		    hu_tpl_meta_read(templates_dir, de->d_name, &m, &ignore) < 0)
			continue;
		stop = fn(&m, arg);
		hu_tpl_meta_free(&m);
	}
	closedir(d);
	return 0;
}
