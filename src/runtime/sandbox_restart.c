/*
 * The paths that bring a sandbox back instead of creating it: adopt (a
 * restarted daemon takes over what its predecessor left running), stop
 * (memory release: every process ends, the files stay) and restart (a fresh
 * hutch-init over the kept files).
 *
 * What identifies a sandbox on the host, so that it can be found again
 * without any state of the daemon: its layer <data>/layers/<id> (its owner
 * is the uid base, hence the slot), <run>/slots/<slot> (holding the id), the
 * cgroup named after the id, and <run>/sandboxes/<id>/pid (hutch-init).
 * After a reboot only the layer is left: revive rebuilds the rest from it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/net.h"
#include "runtime/net_internal.h"
#include "runtime/sandbox_priv.h"
#include "util/cleanup.h"
#include "util/fileutil.h"
#include "util/parse.h"

#define RESTART_TIMEOUT_MS 10000

/* Does /proc/<pid>/cgroup put the process in a group named `id` (the last
 * path component on some hierarchy)? */
static int in_group(pid_t pid, const char *id)
{
	char path[64], line[1024];
	size_t idlen = strlen(id);
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");
		line[n] = '\0';
		found = n > idlen && line[n - idlen - 1] == '/' && !strcmp(line + n - idlen, id);
	}
	fclose(f);
	return found;
}

/* Is pid PID 1 of its own namespace (NSpid ends in " 1")? */
static int is_ns_init(pid_t pid)
{
	char path[64], line[256];
	int yes = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		size_t n = strcspn(line, "\n");
		line[n] = '\0';
		char *last = strrchr(line, '\t');
		if (!last)
			last = strrchr(line, ' ');
		yes = last && last != line + 5 && !strcmp(last + 1, "1");
		break;
	}
	fclose(f);
	return yes;
}

/* Find hutch-init from <sbdir>/pid: a pidfd of it, checked to still be this
 * sandbox's init (pids are reused). The check runs after the pidfd is open
 * and the pidfd is then checked alive, so the process checked is the one
 * the pidfd holds. -1 (ESRCH) when init is gone. */
static int find_init(struct hu_sandbox *sb, hu_err *err)
{
	char path[PATH_MAX + 8], buf[32];
	uint64_t pid;

	snprintf(path, sizeof(path), "%s/pid", sb->sbdir);
	if (hu_read_file(path, buf, sizeof(buf), err) < 0)
		return hu_err_set(err, ESRCH, "sandbox %s has no init pid", sb->id);
	buf[strcspn(buf, "\n")] = '\0';
	if (hu_parse_u64(buf, &pid, err) < 0 || pid == 0 || pid > 4194304)
		return hu_err_set(err, ESRCH, "sandbox %s: bad pid file", sb->id);
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (fd < 0)
		return hu_err_set(err, ESRCH, "sandbox %s: its init is gone", sb->id);
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	if (!is_ns_init((pid_t)pid) || !in_group((pid_t)pid, sb->id) || poll(&pfd, 1, 0) != 0) {
		close(fd);
		return hu_err_set(err, ESRCH, "sandbox %s: its init is gone", sb->id);
	}
	sb->pid = (pid_t)pid;
	sb->pidfd = fd;
	return 0;
}

/* The slot the layer's files belong to: the owner of its top directory is
 * the sandbox's uid base. */
static int layer_slot(struct hu_sandbox *sb, hu_err *err)
{
	uint32_t uid;

	if (hu_layer_owner(&sb->rt->layers, sb->id, &uid, err) < 0)
		return -1;
	if (uid < HU_UID_FIRST || (uid - HU_UID_FIRST) % HU_UID_RANGE || (uid - HU_UID_FIRST) / HU_UID_RANGE >= HU_SLOTS_MAX)
		return hu_err_set(err, EUCLEAN, "sandbox %s: its layer is owned by uid %u, not a slot base", sb->id,
				  (unsigned)uid);
	sb->slot = (uid - HU_UID_FIRST) / HU_UID_RANGE;
	sb->uid_base = uid;
	return 0;
}

/* The slot, which the slot file must still record for this sandbox. */
static int find_slot(struct hu_sandbox *sb, hu_err *err)
{
	char path[PATH_MAX + 8], buf[HU_ID_MAX + 1];

	if (layer_slot(sb, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%u", sb->rt->slots_dir, sb->slot);
	if (hu_read_file(path, buf, sizeof(buf), err) < 0 || strcmp(buf, sb->id))
		return hu_err_set(err, EUCLEAN, "sandbox %s: uid slot %u is not recorded for it", sb->id, sb->slot);
	sb->have_slot = 1;
	return 0;
}

int hu_sandbox_adopt(struct hu_runtime *rt, const char *id, struct hu_sandbox **out, int *alive, hu_err *err)
{
	struct hu_sandbox *sb;
	hu_err e;

	*out = NULL;
	*alive = 0;
	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s'", id);
	if (hu_sbx_handle_new(rt, id, &sb, err) < 0)
		return -1;
	sb->adopted = 1;
	if (find_slot(sb, err) < 0 || hu_cgroup_open(&rt->cg, id, &sb->cg, err) < 0)
		goto fail;
	sb->have_dir = 1;
	sb->have_layer = 1;
	if (find_init(sb, &e) == 0) {
		*alive = 1;
		sb->have_net = hu_net_adopt(rt, sb->slot); /* its veth is there: it has a network */
	} else {
		hu_cgroup_drop_clone_fd(sb->cg); /* stopped: taken again at a restart */
	}
	*out = sb;
	return 0;
fail:
	hu_err_prefix(err, "adopt sandbox %s", id);
	hu_sandbox_close(sb);
	return -1;
}

int hu_sandbox_revive(struct hu_runtime *rt, const struct hu_sandbox_spec *spec, struct hu_sandbox **out,
		      hu_err *err)
{
	struct hu_sandbox *sb;
	char path[PATH_MAX + 16];
	hu_err ignore;

	*out = NULL;
	if (!hu_sandbox_id_valid(spec->id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s'", spec->id);
	if (hu_sbx_handle_new(rt, spec->id, &sb, err) < 0)
		return -1;
	if (access(sb->sbdir, F_OK) == 0) {
		hu_err_set(err, EEXIST, "sandbox %s is known to this boot (adopt it)", spec->id);
		free(sb);
		return -1;
	}
	if (layer_slot(sb, err) < 0) {
		free(sb);
		goto out;
	}
	/* the same uids as before: its files carry them */
	if (hu_slot_acquire_exact(rt, sb->id, sb->slot, err) < 0) {
		free(sb);
		goto out;
	}
	sb->have_slot = 1;
	if (mkdir(sb->sbdir, 0700) < 0) {
		hu_err_sys(err, "mkdir %s", sb->sbdir);
		goto fail;
	}
	sb->have_dir = 1;
	snprintf(path, sizeof(path), "%s/stopped", sb->sbdir);
	if (hu_write_file(path, "", 0, O_CREAT | O_TRUNC | O_NOFOLLOW, 0600, err) < 0 ||
	    hu_cgroup_create(&rt->cg, spec->id, &spec->limits, &sb->cg, err) < 0)
		goto fail;
	hu_cgroup_drop_clone_fd(sb->cg); /* stopped: taken again at a restart */
	sb->have_layer = 1;
	*out = sb;
	return 0;
fail:
	/* the files stay: only what this call made goes */
	if (sb->have_dir)
		hu_sbx_remove_dir(sb->sbdir, &ignore);
	hu_slot_release(rt, sb->slot);
	free(sb);
out:
	hu_err_prefix(err, "revive sandbox %s", spec->id);
	return -1;
}

int hu_runtime_layers(struct hu_runtime *rt, int (*fn)(const char *id, void *arg), void *arg, hu_err *err)
{
	/* a fresh open: btrfs lists only the entries a directory had when it
	 * was opened */
	int fd = openat(rt->layers.root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int rc = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return hu_err_sys(err, "read %s", rt->layers.root);
	}
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (hu_sandbox_id_valid(de->d_name) && de->d_type == DT_DIR)
			rc = fn(de->d_name, arg);
	closedir(d);
	return rc;
}

int hu_sandbox_stop(struct hu_sandbox *sb, hu_err *err)
{
	char path[PATH_MAX + 8];
	hu_err e;

	hu_sbx_stop_processes(sb);
	/* the veth went with the namespace; its rules go too (a restart adds
	 * them again), so that nothing of it outlives the sandbox */
	if (sb->have_net && hu_net_detach(sb->rt, sb->id, sb->slot, 0, &e) < 0)
		hu_err_clear(&e);
	sb->have_net = 0;
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	sb->pidfd = -1;
	sb->pid = 0;
	snprintf(path, sizeof(path), "%s/pid", sb->sbdir);
	unlink(path);
	unlink(sb->sock);
	/* sweeps leave a sandbox stopped on purpose alone (runtime.c) */
	snprintf(path, sizeof(path), "%s/stopped", sb->sbdir);
	if (hu_write_file(path, "", 0, O_CREAT | O_TRUNC | O_NOFOLLOW, 0600, err) < 0)
		return -1;
	/* the group must really be empty: a survivor would keep running with
	 * no init and no owner */
	if (hu_cgroup_kill_all(sb->cg, &e) < 0)
		return hu_err_set(err, e.code, "stop sandbox %s: %s", sb->id, e.msg);
	/* the files go to disk and their cache out of RAM: a released sandbox
	 * holds only files */
	_cleanup_close_ int lfd = open(sb->layer, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (lfd >= 0)
		syncfs(lfd);
	if (hu_cgroup_drop_cache(sb->cg, &e) < 0)
		hu_err_clear(&e);
	/* no descriptor stays open for it: its files and a row are all it holds */
	hu_cgroup_drop_clone_fd(sb->cg);
	return 0;
}

int hu_sandbox_restart(struct hu_sandbox *sb, const struct hu_sandbox_spec *spec, hu_err *err)
{
	_cleanup_close_ int listen_fd = -1;
	hu_err ignore;
	int rc;

	if (sb->pidfd >= 0)
		return hu_err_set(err, EALREADY, "sandbox %s is running", sb->id);
	/* the group may be frozen (a paused sandbox whose processes were
	 * stopped): the new init must run */
	if (hu_cgroup_thaw(sb->cg, err) < 0 || hu_cgroup_take_clone_fd(sb->cg, err) < 0)
		goto fail_early;
	listen_fd = hu_sbx_bind_init_socket(sb, err);
	if (listen_fd < 0)
		goto fail_early;
	if (hu_sbx_start_child(sb, spec, listen_fd, err) < 0)
		goto fail;
	struct pollfd pfd = {.fd = sb->sync_fd, .events = POLLIN};
	while (poll(&pfd, 1, RESTART_TIMEOUT_MS) < 0 && errno == EINTR)
		;
	rc = hu_sbx_read_verdict(sb->sync_fd, err);
	close(sb->sync_fd);
	sb->sync_fd = -1;
	if (rc < 0)
		goto fail;
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/stopped", sb->sbdir);
	unlink(path);
	sb->adopted = 0; /* the new init is our child */
	return 0;
fail:
	if (sb->sync_fd >= 0)
		close(sb->sync_fd);
	sb->sync_fd = -1;
	hu_sandbox_stop(sb, &ignore); /* the files stay, as before the attempt */
fail_early:
	hu_err_prefix(err, "restart sandbox %s", sb->id);
	return -1;
}
