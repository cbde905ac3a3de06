/*
 * cgroups: detection from /proc/self/mountinfo, the operations every mode
 * shares (paths, creation with rollback, attach, kill, destroy, stats) and the
 * dispatch to the per-mode backend (cgroup_v1.c, cgroup_v2.c).
 */
#include "runtime/cgroup.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cgroup_internal.h"
#include "util/cleanup.h"
#include "util/fileutil.h"
#include "util/parse.h"

static const char *const hier_names[HU_CG_NHIER] = {
	[HU_CG_MEMORY] = "memory", [HU_CG_PIDS] = "pids",       [HU_CG_CPU] = "cpu",
	[HU_CG_CPUACCT] = "cpuacct", [HU_CG_FREEZER] = "freezer", [HU_CG_BLKIO] = "blkio",
	[HU_CG_UNIFIED] = "cgroup2",
};

/* ---- names ---------------------------------------------------------------- */

static int name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == '-';
}

int hu_cgroup_validate_name(const char *name, hu_err *err)
{
	size_t len = strnlen(name, HU_CGROUP_NAME_MAX + 1);

	if (len == 0 || len > HU_CGROUP_NAME_MAX)
		return hu_err_set(err, EINVAL, "cgroup name must be 1..%d characters", HU_CGROUP_NAME_MAX);
	for (size_t i = 0; i < len; i++)
		if (!name_char_ok(name[i]))
			return hu_err_set(err, EINVAL, "cgroup name '%s' has a character outside [A-Za-z0-9._-]",
					  name);
	/* "." and ".." would name the parent itself or leave it */
	if (!strcmp(name, ".") || strstr(name, ".."))
		return hu_err_set(err, EINVAL, "cgroup name '%s' must not be '.' or contain '..'", name);
	return 0;
}

const char *hu_cgroup_mode_name(enum hu_cgroup_mode mode)
{
	switch (mode) {
	case HU_CGROUP_V1:
		return "v1";
	case HU_CGROUP_V2:
		return "v2";
	case HU_CGROUP_HYBRID:
		return "hybrid";
	}
	return "unknown";
}

/* ---- small shared helpers ------------------------------------------------- */

int hu_cg_format(char *buf, size_t n, hu_err *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= n)
		return hu_err_set(err, ENAMETOOLONG, "path or value too long: %.200s...", buf);
	return 0;
}

int hu_cg_join(char *buf, size_t n, const char *dir, const char *leaf, hu_err *err)
{
	return hu_cg_format(buf, n, err, "%s/%s", dir, leaf);
}

int hu_cg_write(const struct hu_cgroup *cg, enum hu_cg_hier h, const char *knob, const char *val, hu_err *err)
{
	char path[PATH_MAX];

	if (hu_cg_join(path, sizeof(path), cg->dir[h], knob, err) < 0)
		return -1;
	if (hu_write_str(path, val, err) < 0) {
		hu_err_prefix(err, "set %s to '%s'", knob, val);
		return -1;
	}
	return 0;
}

int hu_cg_write_if_present(const struct hu_cgroup *cg, enum hu_cg_hier h, const char *knob, const char *val,
			   bool *written, hu_err *err)
{
	char path[PATH_MAX];

	if (written)
		*written = false;
	if (hu_cg_join(path, sizeof(path), cg->dir[h], knob, err) < 0)
		return -1;
	if (access(path, F_OK) < 0) {
		if (errno == ENOENT)
			return 0;
		return hu_err_sys(err, "access %s", path);
	}
	if (hu_cg_write(cg, h, knob, val, err) < 0)
		return -1;
	if (written)
		*written = true;
	return 0;
}

int hu_cg_write_limit(const struct hu_cgroup *cg, enum hu_cg_hier h, const char *knob, uint64_t v,
		      const char *unlimited, hu_err *err)
{
	char val[32];

	if (v == 0)
		return hu_cg_write(cg, h, knob, unlimited, err);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
	return hu_cg_write(cg, h, knob, val, err);
}

ssize_t hu_cg_read(const struct hu_cgroup *cg, enum hu_cg_hier h, const char *knob, char *buf, size_t n,
		   hu_err *err)
{
	char path[PATH_MAX];

	if (hu_cg_join(path, sizeof(path), cg->dir[h], knob, err) < 0)
		return -1;
	return hu_read_file(path, buf, n, err);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!strncmp(s, "max", 3)) {
		*out = UINT64_MAX;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || (*end && *end != '\n' && *end != ' '))
		return -1;
	*out = v;
	return 0;
}

/* The value of `key` in "key value" lines; 0 when the kernel has no such key. */
static int parse_keyed(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);

	*out = 0;
	for (const char *line = text; *line;) {
		if (!strncmp(line, key, klen) && line[klen] == ' ')
			return parse_u64(line + klen + 1, out);
		const char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	return 0;
}

int hu_cg_read_counter(const struct hu_cgroup *cg, const struct hu_cg_counter *c, uint64_t *out, hu_err *err)
{
	char buf[4096];
	int rc;

	if (hu_cg_read(cg, c->hier, c->knob, buf, sizeof(buf), err) < 0)
		return -1;
	rc = c->key ? parse_keyed(buf, c->key, out) : parse_u64(buf, out);
	if (rc < 0)
		return hu_err_set(err, EINVAL, "unexpected content in %s/%s: %.40s", cg->dir[c->hier], c->knob, buf);
	if (c->divisor > 1 && *out != UINT64_MAX)
		*out /= c->divisor;
	return 0;
}

bool hu_cg_list_has(const char *list, const char *ctrl)
{
	size_t len = strlen(ctrl);
	const char *p = list;

	while (*p) {
		p += strspn(p, " \t\n+");
		size_t tok = strcspn(p, " \t\n");
		if (tok == len && !strncmp(p, ctrl, len))
			return true;
		p += tok;
	}
	return false;
}

static long elapsed_ms(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

int hu_cg_wait(struct hu_cgroup *cg, hu_cg_probe probe, int arg, int timeout_ms, const char *what, hu_err *err)
{
	struct timespec start;
	/* freezing and thawing a sandbox usually completes within tens of
	 * microseconds: start polling that fine, back off to 16 ms */
	long delay_us = 25;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int r = probe(cg, arg, err);
		if (r != 0)
			return r > 0 ? 0 : -1;
		if (elapsed_ms(&start) >= timeout_ms)
			return hu_err_set(err, ETIMEDOUT, "%s: not done after %d ms", what, timeout_ms);
		struct timespec ts = { 0, delay_us * 1000 };
		nanosleep(&ts, NULL);
		if (delay_us < 16000)
			delay_us *= 2;
	}
}

int hu_cg_is_empty(struct hu_cgroup *cg, int h, hu_err *err)
{
	char buf[64];
	ssize_t n = hu_cg_read(cg, (enum hu_cg_hier)h, "cgroup.procs", buf, sizeof(buf), err);

	if (n < 0)
		return -1;
	return buf[strspn(buf, " \n")] == '\0';
}

int hu_cg_set_frozen(struct hu_cgroup *cg, const struct hu_cg_freezer *fz, bool frozen, hu_err *err)
{
	char what[HU_CG_DIR_MAX + 32];

	if (hu_cg_write(cg, fz->hier, fz->knob, fz->values[frozen], err) < 0)
		return -1;
	snprintf(what, sizeof(what), "%s %s", frozen ? "freeze" : "thaw", cg->dir[fz->hier]);
	if (hu_cg_wait(cg, fz->reached, frozen, HU_CG_FREEZE_TIMEOUT_MS, what, err) == 0)
		return 0;
	if (frozen) {
		hu_err ignored;
		hu_cg_write(cg, fz->hier, fz->knob, fz->values[0], &ignored);
	}
	return -1;
}

/* SIGKILL every process listed in cgroup.procs of h; returns how many. */
static int kill_listed(struct hu_cgroup *cg, enum hu_cg_hier h, hu_err *err)
{
	char path[PATH_MAX];
	long pid;
	int found = 0;

	if (hu_cg_join(path, sizeof(path), cg->dir[h], "cgroup.procs", err) < 0)
		return -1;
	FILE *f = fopen(path, "re");
	if (!f)
		return hu_err_sys(err, "open %s", path);
	while (fscanf(f, "%ld", &pid) == 1) {
		found++;
		/* 0 stands for a process outside our pid namespace; kill(0) would
		 * hit our own process group */
		if (pid > 0 && kill((pid_t)pid, SIGKILL) < 0 && errno != ESRCH) {
			hu_err_sys(err, "kill %ld", pid);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return found;
}

/* One round: a frozen group cannot fork while we list and kill it. */
static int kill_round(struct hu_cgroup *cg, int h, hu_err *err)
{
	hu_err ignored;
	bool frozen = cg->be->freeze(cg, true, &ignored) == 0;
	int found = kill_listed(cg, (enum hu_cg_hier)h, err);

	if (frozen && cg->be->freeze(cg, false, found < 0 ? &ignored : err) < 0)
		return -1;
	if (found < 0)
		return -1;
	return found == 0;
}

int hu_cg_kill_by_enumeration(struct hu_cgroup *cg, enum hu_cg_hier h, hu_err *err)
{
	return hu_cg_wait(cg, kill_round, h, HU_CG_KILL_TIMEOUT_MS, "kill every process", err);
}

/* ---- detection ------------------------------------------------------------ */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* The env field for each v1 controller name found in the super options. */
static char *v1_field(struct hu_cgroup_env *env, const char *ctrl)
{
	if (!strcmp(ctrl, "memory"))
		return env->v1_memory;
	if (!strcmp(ctrl, "pids"))
		return env->v1_pids;
	if (!strcmp(ctrl, "cpu"))
		return env->v1_cpu;
	if (!strcmp(ctrl, "cpuacct"))
		return env->v1_cpuacct;
	if (!strcmp(ctrl, "freezer"))
		return env->v1_freezer;
	if (!strcmp(ctrl, "blkio"))
		return env->v1_blkio;
	return NULL;
}

/* Every path field of hu_cgroup_env has this size. */
#define ENV_PATH_SIZE sizeof(((struct hu_cgroup_env *)NULL)->v2_root)

/* The first mount of a hierarchy wins; a path too long for env is skipped. */
static void remember(char *field, const char *mountpoint)
{
	if (field && !field[0] && strlen(mountpoint) < ENV_PATH_SIZE)
		strcpy(field, mountpoint);
}

/* "id parent maj:min root mountpoint opts [optional...] - fstype source superopts" */
static void parse_mount_line(char *line, struct hu_cgroup_env *env)
{
	char *sep = strstr(line, " - ");
	char *save = NULL, *mountpoint = NULL;

	if (!sep)
		return;
	*sep = '\0';
	char *tok = strtok_r(line, " ", &save);
	for (int i = 0; tok && i < 4; i++)
		tok = strtok_r(NULL, " ", &save);
	mountpoint = tok;
	char *fstype = strtok_r(sep + 3, " ", &save);
	strtok_r(NULL, " ", &save); /* source */
	char *superopts = strtok_r(NULL, " \n", &save);
	if (!mountpoint || !fstype || !superopts)
		return;
	unescape_octal(mountpoint);
	if (!strcmp(fstype, "cgroup2")) {
		remember(env->v2_root, mountpoint);
	} else if (!strcmp(fstype, "cgroup")) {
		char *osave = NULL;
		for (char *o = strtok_r(superopts, ",", &osave); o; o = strtok_r(NULL, ",", &osave))
			remember(v1_field(env, o), mountpoint);
	}
}

/* Whether the cgroup2 mount offers every controller the v2 backend uses. */
static bool v2_has_controllers(const char *root)
{
	char path[PATH_MAX], list[512];
	hu_err ignored;

	if (snprintf(path, sizeof(path), "%s/cgroup.controllers", root) >= (int)sizeof(path) ||
	    hu_read_file(path, list, sizeof(list), &ignored) < 0)
		return false;
	return hu_cg_list_has(list, "memory") && hu_cg_list_has(list, "pids") && hu_cg_list_has(list, "cpu");
}

static void clear_v1(struct hu_cgroup_env *env)
{
	env->v1_memory[0] = env->v1_pids[0] = env->v1_cpu[0] = env->v1_cpuacct[0] = env->v1_freezer[0] = '\0';
	env->v1_blkio[0] = '\0';
}

int hu_cgroup_detect_from(const char *mountinfo_path, struct hu_cgroup_env *env, hu_err *err)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	memset(env, 0, sizeof(*env));
	strcpy(env->parent, "hutch");
	FILE *f = fopen(mountinfo_path, "re");
	if (!f)
		return hu_err_sys(err, "open %s", mountinfo_path);
	while (getline(&line, &cap, f) > 0)
		parse_mount_line(line, env);
	fclose(f);

	bool v1_limits = env->v1_memory[0] && env->v1_pids[0] && env->v1_cpu[0];
	if (env->v2_root[0] && v2_has_controllers(env->v2_root)) {
		env->mode = HU_CGROUP_V2;
		clear_v1(env); /* a controller is in one hierarchy only: none left for v1 */
	} else if (v1_limits && env->v2_root[0]) {
		/* The controller-less cgroup2 tree gives atomic freeze and kill and
		 * clone3(CLONE_INTO_CGROUP); v1 keeps only the limits. */
		env->mode = HU_CGROUP_HYBRID;
	} else if (v1_limits && env->v1_cpuacct[0] && env->v1_freezer[0]) {
		env->mode = HU_CGROUP_V1;
	} else {
		return hu_err_set(err, ENOTSUP,
				  "no usable cgroups in %s: need cgroup2 with the memory, pids and cpu controllers, "
				  "or v1 memory, pids and cpu hierarchies plus cgroup2 or v1 cpuacct and freezer",
				  mountinfo_path);
	}
	return 0;
}

int hu_cgroup_detect(struct hu_cgroup_env *env, hu_err *err)
{
	return hu_cgroup_detect_from("/proc/self/mountinfo", env, err);
}

/* ---- the handle ----------------------------------------------------------- */

static const struct hu_cg_stat_layout hybrid_stats = {
	.memory = { HU_CG_MEMORY, "memory.usage_in_bytes", NULL, 1 },
	.memory_limit = { HU_CG_MEMORY, "memory.limit_in_bytes", NULL, 1 },
	/* cpu.stat is a core file of cgroup2, there without any controller */
	.cpu_usec = { HU_CG_UNIFIED, "cpu.stat", "usage_usec", 1 },
	.pids = { HU_CG_PIDS, "pids.current", NULL, 1 },
	.oom_kills = { HU_CG_MEMORY, "memory.oom_control", "oom_kill", 1 },
};

/* Limits stay with v1 (the controllers are bound there); the cgroup2 group
 * freezes and kills atomically, where the v1 freezer can stall in FREEZING
 * and killing by enumeration races with fork. */
static const struct hu_cg_backend hybrid_backend = {
	.uses = { [HU_CG_MEMORY] = true, [HU_CG_PIDS] = true, [HU_CG_CPU] = true, [HU_CG_BLKIO] = true,
		  [HU_CG_UNIFIED] = true },
	.optional = { [HU_CG_BLKIO] = true },
	.prepare_parent = NULL,
	.set_limits = hu_cg_v1_set_limits,
	.freeze = hu_cg_v2_freeze,
	.kill = hu_cg_v2_kill,
	.stats = &hybrid_stats,
};

static const struct hu_cg_backend *backend_for(enum hu_cgroup_mode mode)
{
	switch (mode) {
	case HU_CGROUP_V1:
		return &hu_cg_backend_v1;
	case HU_CGROUP_V2:
		return &hu_cg_backend_v2;
	case HU_CGROUP_HYBRID:
		return &hybrid_backend;
	}
	return NULL;
}

static const char *env_root(const struct hu_cgroup_env *env, enum hu_cg_hier h)
{
	switch (h) {
	case HU_CG_MEMORY:
		return env->v1_memory;
	case HU_CG_PIDS:
		return env->v1_pids;
	case HU_CG_CPU:
		return env->v1_cpu;
	case HU_CG_CPUACCT:
		return env->v1_cpuacct;
	case HU_CG_FREEZER:
		return env->v1_freezer;
	case HU_CG_BLKIO:
		return env->v1_blkio;
	case HU_CG_UNIFIED:
	case HU_CG_NHIER:
		break;
	}
	return env->v2_root;
}

static bool uses(const struct hu_cgroup *cg, enum hu_cg_hier h)
{
	return cg->present[h];
}

/* Co-mounted v1 controllers (cpu,cpuacct) share one directory: only the first
 * hierarchy using it creates, joins and removes the group. */
static bool is_alias(const struct hu_cgroup *cg, enum hu_cg_hier h)
{
	for (int o = 0; o < (int)h; o++)
		if (uses(cg, o) && !strcmp(cg->dir[o], cg->dir[h]))
			return true;
	return false;
}

static bool owns(const struct hu_cgroup *cg, enum hu_cg_hier h)
{
	return uses(cg, h) && !is_alias(cg, h);
}

static int fill_dirs(struct hu_cgroup *cg, const struct hu_cgroup_env *env, hu_err *err)
{
	for (int h = 0; h < HU_CG_NHIER; h++) {
		if (!cg->be->uses[h])
			continue;
		const char *root = env_root(env, h);
		if (!root[0] && cg->be->optional[h])
			continue;
		if (!root[0])
			return hu_err_set(err, EINVAL, "no %s hierarchy configured for cgroup mode %s",
					  hier_names[h], hu_cgroup_mode_name(cg->mode));
		cg->present[h] = true;
		if (hu_cg_format(cg->root[h], sizeof(cg->root[h]), err, "%s", root) < 0 ||
		    hu_cg_join(cg->parent_dir[h], sizeof(cg->parent_dir[h]), root, env->parent, err) < 0 ||
		    hu_cg_join(cg->dir[h], sizeof(cg->dir[h]), cg->parent_dir[h], cg->name, err) < 0)
			return -1;
	}
	return 0;
}

/* A handle with every path filled in; nothing touched on disk yet. */
static int new_handle(const struct hu_cgroup_env *env, const char *name, struct hu_cgroup **out, hu_err *err)
{
	const struct hu_cg_backend *be = backend_for(env->mode);
	struct hu_cgroup *cg;

	if (hu_cgroup_validate_name(name, err) < 0)
		return -1;
	if (hu_cgroup_validate_name(env->parent, err) < 0) {
		hu_err_prefix(err, "parent group");
		return -1;
	}
	if (!be)
		return hu_err_set(err, EINVAL, "unknown cgroup mode %d", (int)env->mode);
	cg = calloc(1, sizeof(*cg));
	if (!cg)
		return hu_err_set(err, ENOMEM, "cgroup %s", name);
	cg->mode = env->mode;
	cg->be = be;
	cg->unified_fd = -1;
	strcpy(cg->name, name);
	if (fill_dirs(cg, env, err) < 0) {
		free(cg);
		return -1;
	}
	*out = cg;
	return 0;
}

static int open_unified_fd(struct hu_cgroup *cg, hu_err *err)
{
	if (!uses(cg, HU_CG_UNIFIED))
		return 0;
	/* O_PATH would not do: clone3() needs a real open file */
	cg->unified_fd = open(cg->dir[HU_CG_UNIFIED], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->unified_fd < 0)
		return hu_err_sys(err, "open %s", cg->dir[HU_CG_UNIFIED]);
	return 0;
}

/* mkdir found the group already there: a leftover of a crash can be taken
 * over when no process is in it (a busy one belongs to someone). */
static int adopt_leftover(struct hu_cgroup *cg, enum hu_cg_hier h, hu_err *err)
{
	int empty = hu_cg_is_empty(cg, h, err);

	if (empty < 0) {
		hu_err_prefix(err, "%s exists", cg->dir[h]);
		return -1;
	}
	if (!empty)
		return hu_err_set(err, EEXIST, "%s exists and has processes", cg->dir[h]);
	return 0;
}

static int make_group(struct hu_cgroup *cg, enum hu_cg_hier h, bool *adopted, hu_err *err)
{
	if (hu_mkdir_p(cg->parent_dir[h], 0755, err) < 0)
		return -1;
	if (cg->be->prepare_parent && cg->be->prepare_parent(cg, h, err) < 0)
		return -1;
	if (mkdir(cg->dir[h], 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return hu_err_sys(err, "mkdir %s", cg->dir[h]);
	*adopted = true;
	return adopt_leftover(cg, h, err);
}

/* rmdir fails with EBUSY while the last processes are still exiting. */
static int try_rmdir(struct hu_cgroup *cg, int h, hu_err *err)
{
	if (rmdir(cg->dir[h]) == 0 || errno == ENOENT)
		return 1;
	if (errno == EBUSY)
		return 0;
	return hu_err_sys(err, "rmdir %s", cg->dir[h]);
}

static int remove_group(struct hu_cgroup *cg, enum hu_cg_hier h, hu_err *err)
{
	char what[HU_CG_DIR_MAX + 32];

	snprintf(what, sizeof(what), "rmdir %s (busy)", cg->dir[h]);
	return hu_cg_wait(cg, try_rmdir, h, HU_CG_RMDIR_TIMEOUT_MS, what, err);
}

/* Remove the groups flagged in `which`, last first; the first error wins. */
static int remove_groups(struct hu_cgroup *cg, const bool which[HU_CG_NHIER], hu_err *err)
{
	int rc = 0;
	hu_err later;

	for (int h = HU_CG_NHIER - 1; h >= 0; h--)
		if (which[h] && remove_group(cg, h, rc < 0 ? &later : err) < 0)
			rc = -1;
	return rc;
}

/* Whether a v1 blkio group would hold anything for these limits: a weight
 * the kernel has a knob for (the cfq or bfq scheduler), or a cap on a disk.
 * Without either it enforces nothing and is not made: it would be a dozen
 * kernfs files made and removed with every sandbox. The knobs are looked up
 * in the parent group, which has those of every group below the root; while
 * the parent does not exist yet, the group is made. */
static bool blkio_needed(const struct hu_cgroup *cg, const struct hu_cgroup_limits *lim)
{
	static const char *const weights[] = {"blkio.bfq.weight", "blkio.weight"};
	char path[HU_CG_DIR_MAX + 32];

	if ((lim->io.bps || lim->io.iops) && lim->io.n_dev)
		return true;
	if (!lim->io.weight)
		return false;
	if (access(cg->parent_dir[HU_CG_BLKIO], F_OK) < 0)
		return true;
	for (size_t i = 0; i < HU_ARRAY_LEN(weights); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", cg->parent_dir[HU_CG_BLKIO], weights[i]) >= (int)sizeof(path))
			return true;
		if (access(path, F_OK) == 0)
			return true;
	}
	return false;
}

static int make_groups(struct hu_cgroup *cg, const struct hu_cgroup_limits *lim, bool made[HU_CG_NHIER],
		       hu_err *err)
{
	bool adopted = false;

	for (int h = 0; h < HU_CG_NHIER; h++) {
		if (!owns(cg, h))
			continue;
		if (h == HU_CG_BLKIO && !blkio_needed(cg, lim)) {
			cg->present[h] = false;
			continue;
		}
		if (make_group(cg, h, &adopted, err) < 0)
			return -1;
		made[h] = true;
	}
	/* a crash may have left the adopted group frozen */
	if (adopted && cg->be->freeze(cg, false, err) < 0)
		return -1;
	return 0;
}

int hu_cgroup_create(const struct hu_cgroup_env *env, const char *name, const struct hu_cgroup_limits *lim,
		     struct hu_cgroup **out, hu_err *err)
{
	static const struct hu_cgroup_limits unlimited;
	bool made[HU_CG_NHIER] = { false };
	struct hu_cgroup *cg;
	hu_err ignored;

	if (new_handle(env, name, &cg, err) < 0)
		goto fail_early;
	if (!lim)
		lim = &unlimited;
	if (make_groups(cg, lim, made, err) < 0 || open_unified_fd(cg, err) < 0 || cg->be->set_limits(cg, lim, err) < 0)
		goto fail;
	*out = cg;
	return 0;
fail:
	/* nothing is in the groups yet, so removal cannot be busy for long;
	 * its own errors would only hide the cause */
	remove_groups(cg, made, &ignored);
	hu_cgroup_close(cg);
fail_early:
	hu_err_prefix(err, "create cgroup %s", name);
	return -1;
}

int hu_cgroup_open(const struct hu_cgroup_env *env, const char *name, struct hu_cgroup **out, hu_err *err)
{
	struct hu_cgroup *cg;
	struct stat st;

	if (new_handle(env, name, &cg, err) < 0)
		goto fail_early;
	for (int h = 0; h < HU_CG_NHIER; h++) {
		if (!uses(cg, h))
			continue;
		if (stat(cg->dir[h], &st) < 0) {
			/* a group made before the host (or hutch) had this one */
			if (errno == ENOENT && cg->be->optional[h]) {
				cg->present[h] = false;
				continue;
			}
			hu_err_sys(err, "stat %s", cg->dir[h]);
			goto fail;
		}
		if (!S_ISDIR(st.st_mode)) {
			hu_err_set(err, ENOTDIR, "%s", cg->dir[h]);
			goto fail;
		}
	}
	if (open_unified_fd(cg, err) < 0)
		goto fail;
	*out = cg;
	return 0;
fail:
	hu_cgroup_close(cg);
fail_early:
	hu_err_prefix(err, "open cgroup %s", name);
	return -1;
}

int hu_cgroup_clone_fd(const struct hu_cgroup *cg)
{
	return cg->unified_fd;
}

void hu_cgroup_drop_clone_fd(struct hu_cgroup *cg)
{
	if (cg->unified_fd >= 0)
		close(cg->unified_fd);
	cg->unified_fd = -1;
}

int hu_cgroup_take_clone_fd(struct hu_cgroup *cg, hu_err *err)
{
	return cg->unified_fd >= 0 ? 0 : open_unified_fd(cg, err);
}

/* Write pid into cgroup.procs of h. */
static int attach_one(struct hu_cgroup *cg, enum hu_cg_hier h, pid_t pid, hu_err *err)
{
	char val[24];

	snprintf(val, sizeof(val), "%d", (int)pid);
	if (hu_cg_write(cg, h, "cgroup.procs", val, err) < 0) {
		hu_err_prefix(err, "attach %d to %s", (int)pid, cg->dir[h]);
		return -1;
	}
	return 0;
}

int hu_cgroup_attach(struct hu_cgroup *cg, pid_t pid, int placed_by_clone, hu_err *err)
{
	for (int h = 0; h < HU_CG_NHIER; h++) {
		if (!owns(cg, h) || (h == HU_CG_UNIFIED && placed_by_clone))
			continue;
		if (attach_one(cg, h, pid, err) < 0)
			return -1;
	}
	return 0;
}

int hu_cgroup_attach_unified(struct hu_cgroup *cg, pid_t pid, hu_err *err)
{
	return owns(cg, HU_CG_UNIFIED) ? attach_one(cg, HU_CG_UNIFIED, pid, err) : 0;
}

int hu_cgroup_open_self_attach(const struct hu_cgroup *cg, int fds[HU_CGROUP_V1_MAX], size_t *n, hu_err *err)
{
	char path[PATH_MAX];
	int rc = 0;

	*n = 0;
	for (int h = 0; h < HU_CG_NHIER && rc == 0; h++) {
		if (h == HU_CG_UNIFIED || !owns(cg, h))
			continue;
		if (*n == HU_CGROUP_V1_MAX) {
			rc = hu_err_set(err, E2BIG, "more than %d v1 hierarchies", HU_CGROUP_V1_MAX);
		} else if (hu_cg_join(path, sizeof(path), cg->dir[h], "tasks", err) < 0) {
			rc = -1;
		} else {
			int fd = open(path, O_WRONLY | O_CLOEXEC);
			if (fd < 0)
				rc = hu_err_sys(err, "open %s", path);
			else
				fds[(*n)++] = fd;
		}
	}
	if (rc < 0) {
		for (size_t i = 0; i < *n; i++)
			close(fds[i]);
		*n = 0;
	}
	return rc;
}

int hu_cgroup_set_limits(struct hu_cgroup *cg, const struct hu_cgroup_limits *lim, hu_err *err)
{
	if (cg->be->set_limits(cg, lim, err) < 0) {
		hu_err_prefix(err, "cgroup %s limits", cg->name);
		return -1;
	}
	return 0;
}

int hu_cgroup_freeze(struct hu_cgroup *cg, hu_err *err)
{
	return cg->be->freeze(cg, true, err);
}

int hu_cgroup_thaw(struct hu_cgroup *cg, hu_err *err)
{
	return cg->be->freeze(cg, false, err);
}

int hu_cgroup_kill_all(struct hu_cgroup *cg, hu_err *err)
{
	if (cg->be->kill(cg, err) < 0)
		goto fail;
	for (int h = 0; h < HU_CG_NHIER; h++)
		if (owns(cg, h) && hu_cg_wait(cg, hu_cg_is_empty, h, HU_CG_KILL_TIMEOUT_MS, cg->dir[h], err) < 0)
			goto fail;
	return 0;
fail:
	hu_err_prefix(err, "kill cgroup %s", cg->name);
	return -1;
}

/* The hierarchy the backend kills through (cgroup.kill, or the v1 freezer's
 * enumeration): a removal pass leaves it for last, so that a group found
 * busy can still be killed. */
static enum hu_cg_hier kill_hier(const struct hu_cgroup *cg)
{
	return owns(cg, HU_CG_UNIFIED) ? HU_CG_UNIFIED : HU_CG_FREEZER;
}

/* rmdir h; a group that is gone is forgotten, so that a kill or a later
 * pass skips it. 1 removed, 0 busy, -1 another error. */
static int remove_once(struct hu_cgroup *cg, enum hu_cg_hier h, hu_err *err)
{
	int r = try_rmdir(cg, h, err);

	if (r > 0)
		cg->present[h] = false;
	return r;
}

/* One rmdir per group, the kill hierarchy last, stopping at the first busy
 * one: 1 when every group is gone, 0 when one still holds a process. */
static int remove_if_empty(struct hu_cgroup *cg, hu_err *err)
{
	enum hu_cg_hier last = kill_hier(cg);

	for (int h = 0; h < HU_CG_NHIER; h++) {
		if (h == (int)last || !owns(cg, h))
			continue;
		int r = remove_once(cg, h, err);
		if (r <= 0)
			return r;
	}
	return owns(cg, last) ? remove_once(cg, last, err) : 1;
}

int hu_cgroup_kill_destroy(struct hu_cgroup *cg, hu_err *err)
{
	/* A sandbox's processes are usually gone already (its init reaped,
	 * and with it its PID namespace): the rmdirs are then both the check
	 * and the removal, with no kill and no reading of cgroup.procs. */
	int r = remove_if_empty(cg, err);

	if (r == 0 && hu_cgroup_kill_all(cg, err) < 0)
		r = -1;
	if (r < 0) {
		hu_err_prefix(err, "destroy cgroup %s", cg->name);
		hu_cgroup_close(cg);
		return -1;
	}
	return hu_cgroup_destroy(cg, err);
}

int hu_cgroup_drop_cache(struct hu_cgroup *cg, hu_err *err)
{
	char buf[32];
	bool written = false;
	uint64_t cur;
	hu_err e;

	/* v2: ask for as much as the group holds; EAGAIN = less was reclaimable
	 * (already gone, or pages in use elsewhere), which is fine */
	if (owns(cg, HU_CG_UNIFIED) && hu_cg_read(cg, HU_CG_UNIFIED, "memory.current", buf, sizeof(buf), &e) > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		if (hu_parse_u64(buf, &cur, &e) < 0 || cur == 0)
			return 0;
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cur);
		if (hu_cg_write_if_present(cg, HU_CG_UNIFIED, "memory.reclaim", buf, &written, &e) < 0 &&
		    e.code != EAGAIN)
			return hu_err_set(err, e.code, "%s", e.msg);
		return 0;
	}
	/* v1: force_empty reclaims everything of a group without tasks */
	if (owns(cg, HU_CG_MEMORY) && hu_cg_write_if_present(cg, HU_CG_MEMORY, "memory.force_empty", "0", &written, &e) < 0 &&
	    e.code != EBUSY)
		return hu_err_set(err, e.code, "%s", e.msg);
	return 0;
}

int hu_cgroup_destroy(struct hu_cgroup *cg, hu_err *err)
{
	bool all[HU_CG_NHIER];
	int rc;

	if (!cg)
		return 0;
	for (int h = 0; h < HU_CG_NHIER; h++)
		all[h] = owns(cg, h);
	rc = remove_groups(cg, all, err);
	if (rc < 0)
		hu_err_prefix(err, "destroy cgroup %s", cg->name);
	hu_cgroup_close(cg);
	return rc;
}

void hu_cgroup_close(struct hu_cgroup *cg)
{
	if (!cg)
		return;
	if (cg->unified_fd >= 0)
		close(cg->unified_fd);
	free(cg);
}

/* v2 reads "max", v1 LONG_MAX rounded down to a page, for "no limit". */
static uint64_t limit_or_zero(uint64_t v)
{
	return v >= (UINT64_C(1) << 62) ? 0 : v;
}

int hu_cgroup_stats(struct hu_cgroup *cg, struct hu_cgroup_stats *st, hu_err *err)
{
	const struct hu_cg_stat_layout *l = cg->be->stats;

	memset(st, 0, sizeof(*st));
	if (hu_cg_read_counter(cg, &l->memory, &st->memory_bytes, err) < 0 ||
	    hu_cg_read_counter(cg, &l->memory_limit, &st->memory_limit, err) < 0 ||
	    hu_cg_read_counter(cg, &l->cpu_usec, &st->cpu_usage_usec, err) < 0 ||
	    hu_cg_read_counter(cg, &l->pids, &st->pids_current, err) < 0 ||
	    hu_cg_read_counter(cg, &l->oom_kills, &st->oom_kills, err) < 0) {
		hu_err_prefix(err, "stats of cgroup %s", cg->name);
		return -1;
	}
	st->memory_limit = limit_or_zero(st->memory_limit);
	return 0;
}
