/* Runtime configuration, directories, and the sealed copy of hutch-init. */
#include <fcntl.h>
#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "runtime/helper.h"
#include "runtime/init_keep.h"
#include "runtime/net_internal.h"
#include "runtime/seccomp_cache.h"
#include "runtime/sysfs_view.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

static void copy_env(char *dst, size_t n, const char *var, const char *fallback)
{
	const char *v = getenv(var);
	snprintf(dst, n, "%s", v && *v ? v : fallback);
}

void hu_runtime_config_defaults(struct hu_runtime_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	copy_env(cfg->data_dir, sizeof(cfg->data_dir), "HUTCH_DATA_DIR", "/var/lib/hutch");
	copy_env(cfg->run_dir, sizeof(cfg->run_dir), "HUTCH_RUN_DIR", "/run/hutch");
	copy_env(cfg->init_path, sizeof(cfg->init_path), "HUTCH_INIT", "");
	copy_env(cfg->cgroup_parent, sizeof(cfg->cgroup_parent), "HUTCH_CGROUP_PARENT", "hutch");
	copy_env(cfg->net_mode, sizeof(cfg->net_mode), "HUTCH_NET", "none");
	copy_env(cfg->net_name, sizeof(cfg->net_name), "HUTCH_NET_NAME", "hutch");
	copy_env(cfg->net_pool, sizeof(cfg->net_pool), "HUTCH_NET_POOL", "10.200.0.0/17");
	copy_env(cfg->net_pool6, sizeof(cfg->net_pool6), "HUTCH_NET_POOL6", HU_NET_POOL6_DEFAULT);
	copy_env(cfg->net_dns, sizeof(cfg->net_dns), "HUTCH_NET_DNS", "");
	copy_env(cfg->net_uplinks, sizeof(cfg->net_uplinks), "HUTCH_NET_UPLINK", "");
	copy_env(cfg->net_allow, sizeof(cfg->net_allow), "HUTCH_NET_ALLOW", "");
	copy_env(cfg->net_deny, sizeof(cfg->net_deny), "HUTCH_NET_DENY", "");
	copy_env(cfg->io_weight, sizeof(cfg->io_weight), "HUTCH_IO_WEIGHT", "100");
	copy_env(cfg->io_bps, sizeof(cfg->io_bps), "HUTCH_IO_BPS", "0");
	copy_env(cfg->io_iops, sizeof(cfg->io_iops), "HUTCH_IO_IOPS", "0");
	copy_env(cfg->net_flows, sizeof(cfg->net_flows), "HUTCH_NET_FLOWS", HU_NET_FLOWS_DEFAULT);
	copy_env(cfg->layers, sizeof(cfg->layers), "HUTCH_LAYERS", "auto");
	copy_env(cfg->layers_size, sizeof(cfg->layers_size), "HUTCH_LAYERS_SIZE", "");
}

/* A sealed memfd copy of a binary (hutch-init, hutch-build): every sandbox
 * executes hutch-init from such an fd, so no host path is reachable through /proc/1/exe and the bytes cannot be
 * changed by anyone (the runc /proc/self/exe overwrite class of attacks). */
int hu_runtime_seal_binary(const char *path, const char *name, struct stat *src_st, hu_err *err)
{
	_cleanup_close_ int src = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (src < 0)
		return hu_err_sys(err, "open %s", path);
	if (fstat(src, &st) < 0)
		return hu_err_sys(err, "stat %s", path);
	_cleanup_close_ int mfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return hu_err_sys(err, "memfd_create");
	off_t off = 0;
	while (off < st.st_size) {
		ssize_t n = sendfile(mfd, src, &off, (size_t)(st.st_size - off));
		if (n <= 0)
			return hu_err_sys(err, "copy %s", path);
	}
	if (fchmod(mfd, 0555) < 0)
		return hu_err_sys(err, "chmod memfd");
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
		return hu_err_sys(err, "seal memfd");
	if (src_st) {
		struct stat after;
		/* the copy is the file as stat says only if nothing changed meanwhile */
		if (fstat(src, &after) == 0 && after.st_size == st.st_size && after.st_ino == st.st_ino &&
		    after.st_mtim.tv_sec == st.st_mtim.tv_sec && after.st_mtim.tv_nsec == st.st_mtim.tv_nsec &&
		    after.st_ctim.tv_sec == st.st_ctim.tv_sec && after.st_ctim.tv_nsec == st.st_ctim.tv_nsec)
			*src_st = after;
		else
			memset(src_st, 0, sizeof(*src_st));
	}
	return hu_take_fd(&mfd);
}

static int make_dir(char *dst, size_t n, const char *base, const char *sub, mode_t mode, hu_err *err)
{
	if ((size_t)snprintf(dst, n, "%s/%s", base, sub) >= n)
		return hu_err_set(err, ENAMETOOLONG, "path %s/%s", base, sub);
	if (hu_mkdir_p(dst, mode, err) < 0)
		return -1;
	/* mkdir honours the umask; the modes here are part of the security model */
	if (chmod(dst, mode) < 0)
		return hu_err_sys(err, "chmod %s", dst);
	return 0;
}

/* A directory given whole (slots_dir), root's only like the others. */
static int shared_dir(char *dst, size_t n, const char *path, hu_err *err)
{
	if ((size_t)snprintf(dst, n, "%s", path) >= n)
		return hu_err_set(err, ENAMETOOLONG, "path %s", path);
	if (hu_mkdir_p(dst, 0700, err) < 0)
		return -1;
	if (chmod(dst, 0700) < 0)
		return hu_err_sys(err, "chmod %s", dst);
	return 0;
}

/* The sealed hutch-init: the one a lingering layers keeper holds when it
 * passes init_keep.c's checks for the file at `path` as it is now, else a
 * copy of our own. The keeper's sysfs view too, when it passes its checks
 * (else the first sandbox makes one, as before). */
static int open_init(struct hu_runtime *rt, const char *path, hu_err *err)
{
	struct stat st;
	int memfd = -1, view = -1, netns = -1;

	if (rt->cache_fd >= 0) {
		int have_src = stat(path, &st) == 0 && S_ISREG(st.st_mode);
		hu_init_keep_take(rt->cache_fd, have_src ? &st : NULL, &memfd, &view, &netns);
	}
	if (view >= 0)
		hu_sysfs_view_adopt(rt, view, netns);
	if (memfd >= 0) {
		rt->init_memfd = memfd;
		rt->init_stat = st;
		return 0;
	}
	rt->init_memfd = hu_runtime_seal_binary(path, "hutch-init", &rt->init_stat, err);
	return rt->init_memfd < 0 ? -1 : 0;
}

/* Closing the last runtime may leave a layers keeper (layers.h): offer it
 * our sealed hutch-init and our sysfs view to hold for the next runtime. */
static void offer_init(struct hu_runtime *rt)
{
	if (rt->init_memfd < 0 || rt->init_stat.st_ino == 0)
		return;
	rt->layers.keep_init_fd = rt->init_memfd;
	rt->layers.keep_init_stat = rt->init_stat;
	rt->layers.keep_dir_fd = rt->cache_fd;
	if (rt->sysfs_view >= 0 && rt->sysfs_netns >= 0) {
		rt->layers.keep_view_fd = rt->sysfs_view;
		rt->layers.keep_view_netns_fd = rt->sysfs_netns;
	}
}

int hu_runtime_open(const struct hu_runtime_config *cfg, struct hu_runtime **out, hu_err *err)
{
	struct hu_runtime *rt = calloc(1, sizeof(*rt));
	char init_path[PATH_MAX];

	if (!rt)
		return hu_err_set(err, ENOMEM, "runtime");
	rt->cfg = *cfg;
	rt->init_memfd = -1;
	rt->cache_fd = -1;
	rt->host_netns = -1;
	rt->sysfs_view = HU_SYSFS_VIEW_UNTRIED;
	rt->sysfs_netns = -1;
	if (hu_cgroup_detect(&rt->cg, err) < 0 ||
	    hu_cgroup_io_parse(cfg->io_weight[0] ? cfg->io_weight : "100", cfg->io_bps[0] ? cfg->io_bps : "0",
			       cfg->io_iops[0] ? cfg->io_iops : "0", &rt->io, err) < 0)
		goto fail;
	snprintf(rt->cg.parent, sizeof(rt->cg.parent), "%s", cfg->cgroup_parent[0] ? cfg->cgroup_parent : "hutch");
	/* Everything under the run and data dirs is private to root: a sandbox's
	 * setup code works from a directory fd the parent hands it. */
	if (hu_mkdir_p(cfg->run_dir, 0700, err) < 0 || chmod(cfg->run_dir, 0700) < 0 ||
	    make_dir(rt->sandboxes_dir, sizeof(rt->sandboxes_dir), cfg->run_dir, "sandboxes", 0700, err) < 0 ||
	    make_dir(rt->ctl_dir, sizeof(rt->ctl_dir), cfg->run_dir, "ctl", 0700, err) < 0 ||
	    (cfg->slots_dir[0] ? shared_dir(rt->slots_dir, sizeof(rt->slots_dir), cfg->slots_dir, err)
			       : make_dir(rt->slots_dir, sizeof(rt->slots_dir), cfg->run_dir, "slots", 0700, err)) < 0 ||
	    make_dir(rt->templates_dir, sizeof(rt->templates_dir), cfg->data_dir, "templates", 0700, err) < 0) {
		if (err->code == 0)
			hu_err_sys(err, "chmod %s", cfg->run_dir);
		goto fail;
	}
	if (hu_layers_open(&rt->layers, cfg, err) < 0)
		goto fail;
	rt->have_layers = 1;
	if (cfg->init_path[0])
		snprintf(init_path, sizeof(init_path), "%s", cfg->init_path);
	else if (hu_helper_find("hutch-init", NULL, init_path, sizeof(init_path), err) < 0)
		goto fail;
	rt->cache_fd = hu_seccomp_cache_dir(cfg->run_dir);
	if (open_init(rt, init_path, err) < 0 || hu_seccomp_get_at(rt->cache_fd, &rt->seccomp, NULL, err) < 0 ||
	    hu_net_runtime_open(rt, err) < 0)
		goto fail;
	*out = rt;
	return 0;
fail:
	hu_err_prefix(err, "open runtime");
	hu_runtime_close(rt);
	return -1;
}

void hu_runtime_close(struct hu_runtime *rt)
{
	if (!rt)
		return;
	hu_seccomp_prog_free(&rt->seccomp);
	hu_net_runtime_close(rt);
	if (rt->have_layers) {
		offer_init(rt);
		hu_layers_close(&rt->layers);
	}
	if (rt->cache_fd >= 0)
		close(rt->cache_fd);
	hu_sysfs_view_close(rt);
	if (rt->init_memfd >= 0)
		close(rt->init_memfd);
	free(rt);
}

void hu_runtime_storage(const struct hu_runtime *rt, struct hu_storage_info *out)
{
	const struct hu_layers *ly = &rt->layers;

	memset(out, 0, sizeof(*out));
	snprintf(out->backend, sizeof(out->backend), "%s", ly->kind == HU_LAYERS_IMAGE ? "image" : "data-dir");
	snprintf(out->root, sizeof(out->root), "%s", ly->root);
	snprintf(out->image, sizeof(out->image), "%s", ly->image);
	snprintf(out->quota, sizeof(out->quota), "%s", ly->quota);
	snprintf(out->reason, sizeof(out->reason), "%s", ly->reason);
	out->ready = 1;
}

int hu_storage_probe(const struct hu_runtime_config *cfg, struct hu_storage_info *out, hu_err *err)
{
	return hu_layers_probe(cfg, out, err);
}

const struct hu_cgroup_env *hu_runtime_cgroup_env(const struct hu_runtime *rt)
{
	return &rt->cg;
}

/* Whether a listener still accepts on the sandbox's init socket. */
static int init_alive(const struct hu_runtime *rt, const char *id)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", rt->ctl_dir, id) >= sizeof(sa.sun_path))
		return 1; /* cannot probe: leave it alone */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	int alive = rc == 0 || (errno != ECONNREFUSED && errno != ENOENT);
	close(fd);
	return alive;
}

/* A sandbox stopped on purpose (memory release), waiting for its owner to
 * restart it: <sbdir>/stopped. */
static int stopped_on_purpose(DIR *d, const char *id)
{
	char path[HU_ID_MAX + 16];
	snprintf(path, sizeof(path), "%s/stopped", id);
	return faccessat(dirfd(d), path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Layers of sandboxes that died with their creator (hutch run) and whose
 * run dir is gone (a reboot came between): nobody will ever bring them
 * back. A daemon's layers are never touched here (its own restart brings
 * them back or removes them). A layer is only ever without its run dir in
 * that case: create makes the run dir first, destroy removes it last. */
static int sweep_orphan_layers(struct hu_runtime *rt, unsigned min_age_s, unsigned *cleaned, hu_err *err)
{
	int fd = openat(rt->layers.root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	time_t now = time(NULL);
	int rc = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return err ? hu_err_sys(err, "open %s", rt->layers.root) : -1;
	}
	while ((de = readdir(d)) != NULL) {
		char sbdir[PATH_MAX];
		struct stat st;
		hu_err e;
		if (!hu_sandbox_id_valid(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now - st.st_mtime < (time_t)min_age_s || !hu_layer_ephemeral(&rt->layers, de->d_name))
			continue;
		snprintf(sbdir, sizeof(sbdir), "%s/%s", rt->sandboxes_dir, de->d_name);
		if (access(sbdir, F_OK) == 0 || errno != ENOENT)
			continue;
		if (hu_sandbox_cleanup_leftover(rt, de->d_name, &e) < 0) {
			if (rc == 0 && err)
				hu_err_set(err, e.code, "%s", e.msg);
			rc = -1;
			continue;
		}
		(*cleaned)++;
	}
	closedir(d);
	return rc;
}

int hu_runtime_sweep(struct hu_runtime *rt, unsigned min_age_s, int (*owned)(const char *id, void *arg), void *arg,
		     unsigned *cleaned, hu_err *err)
{
	DIR *d = opendir(rt->sandboxes_dir);
	struct dirent *de;
	time_t now = time(NULL);
	int rc = 0;

	*cleaned = 0;
	if (!d)
		return hu_err_sys(err, "open %s", rt->sandboxes_dir);
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		hu_err e;
		if (!hu_sandbox_id_valid(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		/* young: maybe being created right now (its socket is bound a
		 * moment after its directory is made) */
		if (now - st.st_mtime < (time_t)min_age_s || init_alive(rt, de->d_name))
			continue;
		/* the owner decides about its own; without one, a stopped
		 * sandbox is some daemon's released sandbox, not debris */
		if (owned ? owned(de->d_name, arg) : stopped_on_purpose(d, de->d_name))
			continue;
		if (hu_sandbox_cleanup_leftover(rt, de->d_name, &e) < 0) {
			if (rc == 0)
				rc = hu_err_set(err, e.code, "%s", e.msg);
			continue;
		}
		(*cleaned)++;
	}
	closedir(d);
	if (sweep_orphan_layers(rt, min_age_s, cleaned, rc == 0 ? err : NULL) < 0)
		rc = -1;
	return rc;
}
