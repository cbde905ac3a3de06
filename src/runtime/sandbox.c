/*
 * Sandbox create / freeze / thaw / destroy: the parent side.
 *
 * create: take a uid slot, prepare <run>/sandboxes/<id>/ and the sandbox's
 * capped writable layer under the data dir (owned by its host uid), bind
 * the init socket, create the cgroup, clone3 the child into fresh namespaces
 * (directly into the cgroup2 group where there is one), write its uid/gid
 * maps, make the idmapped template and /usr mounts for it, say "go", and
 * wait until it has executed hutch-init (or reported why it could not).
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/clone3.h"
#include "runtime/coredump.h"
#include "runtime/mountapi.h"
#include "runtime/net_internal.h"
#include "runtime/sandbox_internal.h"
#include "runtime/sandbox_priv.h"
#include "runtime/sysfs_view.h"
#include "util/cleanup.h"
#include "util/psi.h"
#include "util/fdpass.h"
#include "util/fileutil.h"

#define CHILD_START_TIMEOUT_MS 10000
#define MIB (1024ull * 1024ull)

void hu_sandbox_spec_defaults(struct hu_sandbox_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	snprintf(spec->template_name, sizeof(spec->template_name), "base");
	spec->limits.memory_bytes = 512 * MIB;
	spec->limits.pids = 256;
	spec->limits.cpu_millis = 1000;
	spec->disk_bytes = 1024 * MIB;
	spec->first_conn_fd = -1;
}

int hu_sandbox_id_valid(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n >= HU_ID_MAX || id[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return 0;
	}
	return 1;
}

const char *hu_sandbox_id(const struct hu_sandbox *sb) { return sb->id; }
const char *hu_sandbox_socket(const struct hu_sandbox *sb) { return sb->sock; }
pid_t hu_sandbox_init_pid(const struct hu_sandbox *sb) { return sb->pid; }
int hu_sandbox_pidfd(const struct hu_sandbox *sb) { return sb->pidfd; }
uint32_t hu_sandbox_uid_base(const struct hu_sandbox *sb) { return sb->uid_base; }

static int validate_spec(const struct hu_sandbox_spec *spec, hu_err *err)
{
	if (!hu_sandbox_id_valid(spec->id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s' (1-63 of a-z, 0-9, '-')", spec->id);
	if (spec->limits.memory_bytes != 0 && spec->limits.memory_bytes < 16 * MIB)
		return hu_err_set(err, EINVAL, "memory limit below 16 MiB");
	if (spec->limits.pids != 0 && spec->limits.pids < 4)
		return hu_err_set(err, EINVAL, "pids limit below 4");
	if (spec->disk_bytes < MIB)
		return hu_err_set(err, EINVAL, "disk limit below 1 MiB");
	return hu_mounts_check(spec->mounts, spec->n_mounts, spec->limits.memory_bytes, err);
}

static int sub_path(char *buf, size_t n, const char *dir, const char *name, hu_err *err)
{
	if ((size_t)snprintf(buf, n, "%s/%s", dir, name) >= n)
		return hu_err_set(err, ENAMETOOLONG, "path %s/%s", dir, name);
	return 0;
}

/* <run>/sandboxes/<id>/ for what is volatile (the pid file), and the layer
 * under the data dir for the files: a capped subvolume holding everything
 * the sandbox's setup needs (rootfs/, lower/, rw/upper/, rw/work/). Nothing is
 * mounted here: the child mounts its overlay in its own namespace. */
static int prepare_dirs(struct hu_sandbox *sb, const struct hu_sandbox_spec *spec, hu_err *err)
{
	if (mkdir(sb->sbdir, 0700) < 0)
		return hu_err_sys(err, "mkdir %s", sb->sbdir);
	sb->have_dir = 1;
	if (spec->from_snapshot[0] ? hu_layer_from_snapshot(&sb->rt->layers, spec->from_snapshot, sb->id,
							     spec->disk_bytes, sb->uid_base, err) < 0
				   : hu_layer_create(&sb->rt->layers, sb->id, spec->disk_bytes, sb->uid_base,
						     spec->die_with_parent, err) < 0)
		return -1;
	sb->have_layer = 1;
	return 0;
}

int hu_sbx_bind_init_socket(struct hu_sandbox *sb, hu_err *err)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};

	if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sb->sock) >= sizeof(addr.sun_path))
		return hu_err_set(err, ENAMETOOLONG, "socket path %s", sb->sock);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hu_err_sys(err, "socket");
	unlink(sb->sock);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		return hu_err_sys(err, "bind %s", sb->sock);
	if (chmod(sb->sock, 0600) < 0 || listen(fd, 128) < 0)
		return hu_err_sys(err, "listen %s", sb->sock);
	return hu_take_fd(&fd);
}

static int write_id_maps(pid_t pid, uint32_t base, hu_err *err)
{
	char path[64], map[64];
	snprintf(map, sizeof(map), "0 %u %u\n", base, HU_UID_RANGE);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (hu_write_str(path, map, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	return hu_write_str(path, map, err);
}

/* A detached, idmapped copy of `path` for the child to attach, read-only
 * unless `writable`. The idmap is the child's user namespace: on-disk uid 0
 * appears as the sandbox's root, 1000 as its user (and what the sandbox
 * writes through a writable one is stored the same way). */
static int idmapped_tree(const char *path, int userns_fd, int recursive, int writable, hu_err *err)
{
	unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
	_cleanup_close_ int fd = hu_open_tree(AT_FDCWD, path, flags);
	if (fd < 0)
		return hu_err_sys(err, "open_tree %s", path);
	struct hu_mount_attr attr = {
		.attr_set = MOUNT_ATTR_IDMAP | (writable ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
		.userns_fd = (uint64_t)userns_fd,
	};
	if (hu_mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr) < 0)
		return hu_err_sys(err, "idmap %s", path);
	return hu_take_fd(&fd);
}

/* Read the child's verdict (the sync socket is readable): EOF = it executed
 * hutch-init; a report = setup failed, and why. */
int hu_sbx_read_verdict(int sync_fd, hu_err *err)
{
	struct hu_child_report r;
	ssize_t got = recv(sync_fd, &r, sizeof(r), MSG_DONTWAIT);
	if (got < 0 && errno == EAGAIN)
		return hu_err_set(err, ETIMEDOUT, "sandbox setup did not finish in %d ms", CHILD_START_TIMEOUT_MS);
	if (got == 0)
		return 0;
	if (got == (ssize_t)sizeof(r)) {
		r.msg[sizeof(r.msg) - 1] = '\0';
		snprintf(err->msg, sizeof(err->msg), "%s", r.msg); /* already carries its strerror */
		err->code = r.code > 0 ? r.code : EIO;
		return -1;
	}
	return hu_err_set(err, EIO, "sandbox setup failed without a report");
}

/* What the vfork-style child needs, prepared by the parent: the child may
 * not allocate or touch anything the parent uses, it only places its fds
 * and executes hutch-init. */
struct spawn_args {
	int listen_fd, sync_fd, init_memfd, devnull;
	/* the `tasks` files of the v1 hierarchies (hu_cgroup_open_self_attach) */
	const int *cg_tasks;
	size_t n_cg_tasks;
	char *const *argv;
	char *const *envp;
	/* the child's errno when it fails before exec (it shares our memory):
	 * without it the parent only met a dead child later, as an ENOENT on
	 * /proc/<pid>/root, where the cause was EMFILE */
	int *failed_errno;
	const char **failed_step;
	int *ran; /* set by the child's first statement */
};

/* Runs on its own stack in the parent's memory (CLONE_VM) while the parent
 * waits (CLONE_VFORK), so it does nothing but place fds and exec: the
 * sandbox's PID 1 never holds a copy of the caller's memory (a daemon's
 * tokens, keys and database pages), and the caller's pages are never
 * copy-on-write shared with a child, which made concurrent creates slow. */
__attribute__((no_sanitize("address", "undefined"))) static int spawn_child(void *arg)
{
	const struct spawn_args *a = arg;
	sigset_t none;

	*a->ran = 1;
	/* into the v1 hierarchies before hutch-init's first instruction, by
	 * itself (no global lock, cgroup.h); the cgroup2 group, where there
	 * is one, took it in at the clone */
	for (size_t i = 0; i < a->n_cg_tasks; i++) {
		if (write(a->cg_tasks[i], "0", 1) != 1) {
			*a->failed_errno = errno;
			*a->failed_step = "join its cgroups";
			_exit(126);
		}
	}
	/* hutch-init starts with 0-2 on /dev/null, 3 = the init socket and 4 =
	 * the sync socket; everything else the caller had open is closed */
	/* first copies above every target (F_DUPFD takes the lowest free fd
	 * >= 6, so no copy can land on another), then into place */
	int nul = fcntl(a->devnull, F_DUPFD, 6), lis = fcntl(a->listen_fd, F_DUPFD, 6);
	int syn = fcntl(a->sync_fd, F_DUPFD, 6), mem = fcntl(a->init_memfd, F_DUPFD, 6);
	if (nul < 0 || lis < 0 || syn < 0 || mem < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0 ||
	    dup2(lis, HU_SETUP_LISTEN_FD) < 0 || dup2(syn, HU_SETUP_SYNC_FD) < 0 || dup2(mem, 5) < 0) {
		*a->failed_errno = errno;
		*a->failed_step = "place its descriptors";
		_exit(126);
	}
	syscall(SYS_close_range, 6, ~0U, 0);
	/* The uid map is written after this exec, so at exec time the process is
	 * not root of its user namespace and would lose the capabilities a new
	 * namespace grants its creator (setup needs them for setresuid(0) and the
	 * mounts). Ambient capabilities survive exec: raise them all here (they
	 * only count inside the new namespace); hutch-init clears the ambient
	 * set as soon as setup is done. */
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[2];
	if (syscall(SYS_capget, &hdr, caps) == 0) {
		caps[0].inheritable = caps[0].permitted;
		caps[1].inheritable = caps[1].permitted;
		syscall(SYS_capset, &hdr, caps);
	}
	for (int cap = 0; cap < 64; cap++)
		prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	syscall(SYS_execveat, 5, "", a->argv, a->envp, AT_EMPTY_PATH);
	*a->failed_errno = errno;
	*a->failed_step = "execute it";
	_exit(127);
}

#define SPAWN_STACK (64 * 1024)

/* The child, in its namespaces; with clone3 straight into the cgroup2
 * group (*placed then says so), which a pid written into cgroup.procs
 * afterwards would cost an RCU grace period (cgroup.h). clone() where
 * clone3 is missing (an older kernel, a seccomp filter, an architecture
 * clone3.c has no entry code for). */
static pid_t clone_child(struct hu_sandbox *sb, const struct spawn_args *args, int *placed, hu_err *err)
{
	int pidfd = -1;
	int cgfd = sb->cg ? hu_cgroup_clone_fd(sb->cg) : -1;
	/* the child runs on this stack only until it execs (CLONE_VFORK) */
	char *stack = malloc(SPAWN_STACK);
	if (!stack)
		return hu_err_set(err, ENOMEM, "spawn stack");
	const uint64_t flags = CLONE_VM | CLONE_VFORK | CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
			       CLONE_NEWUTS | CLONE_NEWNET | CLONE_PIDFD;
	struct hu_clone_args ca = {
		.flags = flags | (cgfd >= 0 ? CLONE_INTO_CGROUP : 0),
		.pidfd = (uint64_t)(uintptr_t)&pidfd,
		.exit_signal = SIGCHLD,
		.stack = (uint64_t)(uintptr_t)stack,
		.stack_size = SPAWN_STACK,
		.cgroup = cgfd >= 0 ? (uint64_t)cgfd : 0,
	};
	*args->ran = 0;
	pid_t pid = hu_clone3_call(&ca, spawn_child, (void *)args);
	*placed = pid >= 0 && cgfd >= 0;
	if (pid >= 0 && !*args->ran) {
		/* It died before its first instruction: the kernel (6.18 here)
		 * SIGKILLs a child cloned into a group that cgroup.kill emptied
		 * before (a stopped sandbox's, restarted), and a vfork parent
		 * then goes on at once. Reaped, and cloned the old way. */
		waitpid(pid, NULL, 0);
		close(pidfd);
		pidfd = -1;
		*placed = 0;
		pid = -1;
		errno = ENOSYS;
	}
	if (pid < 0 && (errno == ENOSYS || errno == E2BIG))
		pid = clone(spawn_child, stack + SPAWN_STACK, (int)flags | SIGCHLD, (void *)args, &pidfd);
	int saved = errno;
	free(stack);
	if (pid < 0) {
		errno = saved;
		return hu_err_sys(err, "clone");
	}
	sb->pidfd = pidfd;
	return pid;
}

/* The "go" message: the setup header, the compiled seccomp program and the
 * extra mounts (target, type, tmpfs size); fds are the fixed ones, then one
 * for each directory mount (a tmpfs has none: the child makes it). */
static int send_go(struct hu_sandbox *sb, const struct hu_sandbox_spec *spec, int sync_fd, const int *fds,
		   uint32_t setup_flags, hu_err *err)
{
	const struct hu_seccomp_prog *prog = &sb->rt->seccomp;
	size_t bpf_len = prog->len * sizeof(struct sock_filter);
	size_t len = sizeof(struct hu_setup_go) + bpf_len + spec->n_mounts * sizeof(struct hu_setup_mount);
	_cleanup_free_ unsigned char *msg = calloc(1, len);
	struct hu_setup_go go = {
		.magic = HU_SETUP_MAGIC,
		.bpf_len = prog->len,
		.shm_bytes = hu_sandbox_shm_bytes(&spec->limits),
		.flags = (spec->die_with_parent ? HU_SETUP_DIE_WITH_PARENT : 0) | setup_flags,
		.n_mounts = (uint32_t)spec->n_mounts,
	};

	if (!msg)
		return hu_err_set(err, ENOMEM, "setup message");
	snprintf(go.id, sizeof(go.id), "%s", sb->id);
	memcpy(msg, &go, sizeof(go));
	memcpy(msg + sizeof(go), prog->insns, bpf_len);
	for (size_t i = 0; i < spec->n_mounts; i++) {
		struct hu_setup_mount *m = (struct hu_setup_mount *)(msg + sizeof(go) + bpf_len) + i;
		snprintf(m->target, sizeof(m->target), "%s", spec->mounts[i].target);
		m->type = (uint32_t)spec->mounts[i].type;
		m->tmpfs_bytes = spec->mounts[i].tmpfs_bytes;
	}
	/* the fixed fds, the directory mounts', then the first connection (if any) */
	int all[HU_CHILD_NFDS + HU_MOUNTS_MAX + 1];
	size_t nfds = HU_CHILD_NFDS;
	memcpy(all, fds, nfds * sizeof(*fds));
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (spec->mounts[i].type == HU_MOUNT_TYPE_DIR)
			all[nfds++] = fds[HU_CHILD_NFDS + i];
	if (setup_flags & HU_SETUP_FIRST_CONN)
		all[nfds++] = spec->first_conn_fd;
	if (hu_send_fds(sync_fd, msg, len, all, nfds) < 0)
		return hu_err_sys(err, "hand mounts to the sandbox");
	return 0;
}

int hu_sbx_start_child(struct hu_sandbox *sb, const struct hu_sandbox_spec *spec, int listen_fd, hu_err *err)
{
	int sv[2];
	char tpl[PATH_MAX], path[64], asan[320], rw[PATH_MAX + 8], upper[PATH_MAX + 16];

	/* every start (create, resume, restart) looks again: the pattern is
	 * host-wide and may change while the daemon runs */
	if (hu_core_pattern_check(err) < 0)
		return -1;
	if (hu_template_rootfs(sb->rt, spec->template_name, tpl, sizeof(tpl), err) < 0)
		return -1;
	/* rw/ (idmapped: its files serve any uid slot), or a layer of an older
	 * hutch with upper/ at its top and the files at this slot's host uids */
	_cleanup_close_ int layer_fd = open(sb->layer, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (layer_fd < 0)
		return hu_err_sys(err, "open %s", sb->layer);
	int idmapped_rw = hu_layer_idmapped(layer_fd);
	snprintf(rw, sizeof(rw), "%s/%s", sb->layer, HU_LAYER_RW);
	if ((size_t)snprintf(upper, sizeof(upper), "%s/upper", idmapped_rw ? rw : sb->layer) >= sizeof(upper))
		return hu_err_set(err, ENAMETOOLONG, "path %s", sb->layer);
	if (access(tpl, F_OK) < 0)
		return hu_err_sys(err, "template %s", spec->template_name);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return hu_err_sys(err, "socketpair");
	_cleanup_close_ int parent_end = sv[0];
	_cleanup_close_ int child_end = sv[1];
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		return hu_err_sys(err, "open /dev/null");

	/* A sanitizer-built init must not run LeakSanitizer (it needs ptrace,
	 * which the filter denies), and must not install ASan's SEGV/BUS/FPE
	 * handlers: a PID namespace's init receives every signal it handles, so
	 * with them root inside could kill init with `kill -SEGV 1`. */
	const char *asan_env = getenv("ASAN_OPTIONS");
	snprintf(asan, sizeof(asan), "ASAN_OPTIONS=%s%sdetect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0",
		 asan_env ? asan_env : "", asan_env ? ":" : "");
	char *argv[] = {"hutch-init", "--setup", NULL};
	char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", asan, NULL};
	int failed_errno = 0, placed = 0, ran = 0, cg_tasks[HU_CGROUP_V1_MAX];
	const char *failed_step = "";
	size_t n_cg_tasks = 0;
	if (hu_cgroup_open_self_attach(sb->cg, cg_tasks, &n_cg_tasks, err) < 0)
		return -1;
	struct spawn_args args = {
		.listen_fd = listen_fd, .sync_fd = child_end, .init_memfd = sb->rt->init_memfd, .devnull = devnull,
		.cg_tasks = cg_tasks, .n_cg_tasks = n_cg_tasks,
		.argv = argv, .envp = envp, .failed_errno = &failed_errno, .failed_step = &failed_step,
		.ran = &ran,
	};
	sb->pid = clone_child(sb, &args, &placed, err);
	for (size_t i = 0; i < n_cg_tasks; i++)
		close(cg_tasks[i]);
	if (sb->pid < 0)
		return -1;
	/* CLONE_VFORK: the child has executed or exited by now */
	if (failed_errno)
		return hu_err_set(err, failed_errno, "start the sandbox's init: %s", failed_step);
	close(hu_take_fd(&child_end));
	/* a restarted daemon finds hutch-init again through this file (and
	 * checks that the pid still names this sandbox's init) */
	char pidfile[PATH_MAX + 8], pidtext[24];
	snprintf(pidfile, sizeof(pidfile), "%s/pid", sb->sbdir);
	snprintf(pidtext, sizeof(pidtext), "%d\n", (int)sb->pid);
	if (hu_write_file(pidfile, pidtext, strlen(pidtext), O_CREAT | O_TRUNC | O_NOFOLLOW, 0600, err) < 0)
		return -1;
	/* the child has executed hutch-init (or failed to: then it is gone and
	 * its end of the sync socket with it, which the verdict reports) */
	if ((!placed && hu_cgroup_attach_unified(sb->cg, sb->pid, err) < 0) ||
	    write_id_maps(sb->pid, sb->uid_base, err) < 0)
		return -1;
	/* the network is in place before the child is told to go on */
	if (hu_net_attach(sb->rt, sb->id, sb->slot, sb->pid, upper, idmapped_rw ? 0 : sb->uid_base, &spec->net, err) < 0)
		return -1;
	sb->have_net = spec->net.internet;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)sb->pid);
	_cleanup_close_ int userns = open(path, O_RDONLY | O_CLOEXEC);
	if (userns < 0)
		return hu_err_sys(err, "open %s", path);
	int fds[HU_CHILD_NFDS + HU_MOUNTS_MAX];
	int rc = -1, have_mounts = 0, shared_sys = 0;
	for (int i = 0; i < HU_CHILD_NFDS; i++)
		fds[i] = -1;
	/* the sandbox dir as seen from the child's own mount namespace (through
	 * /proc/<pid>/root): the child can only mount onto mounts it owns */
	char dirpath[PATH_MAX + 64];
	snprintf(dirpath, sizeof(dirpath), "/proc/%d/root%s", (int)sb->pid, sb->layer);
	fds[HU_CHILD_FD_DIR] = open(dirpath, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fds[HU_CHILD_FD_DIR] < 0) {
		hu_err_sys(err, "open %s", dirpath);
		goto out;
	}
	fds[HU_CHILD_FD_TEMPLATE] = idmapped_tree(tpl, userns, 0, 0, err);
	if (fds[HU_CHILD_FD_TEMPLATE] < 0)
		goto out;
	fds[HU_CHILD_FD_RW] = idmapped_rw ? idmapped_tree(rw, userns, 0, 1, err) : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!idmapped_rw && fds[HU_CHILD_FD_RW] < 0)
		hu_err_sys(err, "open /dev/null");
	if (fds[HU_CHILD_FD_RW] < 0)
		goto out;
	/* a built template brings its own /usr (template.h): the slot then
	 * carries /dev/null, which the child closes unused */
	int own_usr = hu_template_own_usr(sb->rt, spec->template_name);
	fds[HU_CHILD_FD_USR] = own_usr ? open("/dev/null", O_RDONLY | O_CLOEXEC) : idmapped_tree("/usr", userns, 1, 0, err);
	if (own_usr && fds[HU_CHILD_FD_USR] < 0)
		hu_err_sys(err, "open /dev/null");
	if (fds[HU_CHILD_FD_USR] < 0)
		goto out;
	/* /sys: a clone of the runtime's one read-only view, or (a kernel
	 * without it) /dev/null and the child mounts its own */
	if (hu_sysfs_view_clone(sb->rt, &fds[HU_CHILD_FD_SYS], err) < 0)
		goto out;
	shared_sys = fds[HU_CHILD_FD_SYS] >= 0;
	if (!shared_sys && (fds[HU_CHILD_FD_SYS] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		hu_err_sys(err, "open /dev/null");
		goto out;
	}
	if (hu_mounts_open(spec, userns, fds + HU_CHILD_NFDS, err) < 0)
		goto out;
	have_mounts = 1;
	uint32_t setup_flags = (own_usr ? HU_SETUP_OWN_USR : 0) | (idmapped_rw ? HU_SETUP_IDMAPPED_RW : 0) |
			       (shared_sys ? HU_SETUP_SHARED_SYS : 0) | (spec->volatile_layer ? HU_SETUP_VOLATILE : 0) |
			       (spec->first_conn_fd > 2 ? HU_SETUP_FIRST_CONN : 0);
	rc = send_go(sb, spec, parent_end, fds, setup_flags, err);
out:
	for (int i = 0; i < HU_CHILD_NFDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (size_t i = 0; have_mounts && i < spec->n_mounts; i++)
		if (fds[HU_CHILD_NFDS + i] >= 0)
			close(fds[HU_CHILD_NFDS + i]);
	if (rc < 0)
		return -1;
	sb->sync_fd = hu_take_fd(&parent_end); /* readable once the child has a verdict */
	return 0;
}

/* SIGKILL hutch-init: when a PID namespace's init dies the kernel kills
 * every other process in it before the pidfd reports the exit. 0 if sent. */
static int kill_init(struct hu_sandbox *sb)
{
	hu_err ignore;
	if (sb->pidfd < 0 || syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0) < 0)
		return -1;
	/* a paused sandbox: a v1-frozen init cannot die until thawed */
	if (sb->cg)
		hu_cgroup_thaw(sb->cg, &ignore);
	return 0;
}

/* SIGKILL hutch-init (unless hu_sandbox_destroy_start did and its caller
 * waited) and wait for its exit, bounded: after SIGKILL nothing can delay it
 * for long. 0 when init is dead or dying, -1 when it could not be signalled
 * (its pidfd is gone). */
static int kill_init_and_wait(struct hu_sandbox *sb)
{
	if (sb->init_killed)
		return 0;
	if (kill_init(sb) < 0)
		return -1;
	struct pollfd pfd = {.fd = sb->pidfd, .events = POLLIN};
	poll(&pfd, 1, HU_SANDBOX_EXIT_WAIT_MS);
	return 0;
}

static void reap_init(struct hu_sandbox *sb)
{
	if (sb->pid > 0 && waitpid(sb->pid, NULL, WNOHANG) == 0)
		waitpid(sb->pid, NULL, 0);
}

/* init first: the cgroup is empty by then and its kill finds nothing to
 * wait for. The cgroup kill stays as the safety net (and is the only way
 * for a sandbox whose pidfd is gone). */
void hu_sbx_stop_processes(struct hu_sandbox *sb)
{
	hu_err ignore;

	kill_init_and_wait(sb);
	if (sb->cg)
		hu_cgroup_kill_all(sb->cg, &ignore);
	reap_init(sb);
}

/* Every process of the sandbox ends, and its cgroup goes. Once init is
 * reaped its PID namespace is empty, so the groups usually are too:
 * hu_cgroup_kill_destroy then only removes them, and kills what it finds
 * in one that is still busy. Before the layer goes, as in
 * hu_sbx_stop_processes, so that nothing of the sandbox still runs on it. */
static int end_processes(struct hu_sandbox *sb, hu_err *err)
{
	hu_err ignore;
	int rc = 0;

	if (kill_init_and_wait(sb) < 0 && sb->cg)
		hu_cgroup_kill_all(sb->cg, &ignore);
	reap_init(sb);
	if (sb->cg && hu_cgroup_kill_destroy(sb->cg, err) < 0)
		rc = -1;
	sb->cg = NULL;
	return rc;
}

/* Remove sbdir: its files, and the tmpfs disk a sandbox made by an older
 * hutch had there. rmdir, not rm -rf: anything else left is a mount we
 * failed to remove, and must not be emptied. Missing pieces are fine. */
int hu_sbx_remove_dir(const char *sbdir, hu_err *err)
{
	static const char *const files[] = {"pid", "stopped"};
	char p[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s/disk", sbdir);
	if (umount2(p, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
		return hu_err_sys(err, "unmount %s", p);
	if (rmdir(p) < 0 && errno != ENOENT)
		return hu_err_sys(err, "remove %s", p);
	for (size_t i = 0; i < HU_ARRAY_LEN(files); i++) {
		snprintf(p, sizeof(p), "%s/%s", sbdir, files[i]);
		unlink(p);
	}
	if (rmdir(sbdir) < 0 && errno != ENOENT)
		return hu_err_sys(err, "remove %s", sbdir);
	return 0;
}

static int teardown(struct hu_sandbox *sb, hu_err *err)
{
	int rc = 0;
	hu_err e2;

	if (end_processes(sb, err) < 0)
		rc = -1;
	/* the veth goes with the namespace; an adopted sandbox's init is not
	 * ours to reap, and the host's init may take seconds to, so its veth
	 * is deleted here */
	if (sb->have_net && hu_net_detach(sb->rt, sb->id, sb->slot, sb->adopted, rc == 0 ? err : &e2) < 0)
		rc = -1;
	/* the layer before the run dir: a layer without its run dir is a
	 * sandbox to bring back (after a reboot), never half a teardown */
	if (sb->have_layer && hu_layer_destroy(&sb->rt->layers, sb->id, rc == 0 ? err : &e2) < 0)
		rc = -1;
	if (sb->have_dir && hu_sbx_remove_dir(sb->sbdir, rc == 0 ? err : &e2) < 0)
		rc = -1;
	unlink(sb->sock);
	if (sb->have_slot)
		hu_slot_release(sb->rt, sb->slot);
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	if (sb->sync_fd >= 0)
		close(sb->sync_fd);
	free(sb);
	return rc;
}

int hu_sbx_handle_new(struct hu_runtime *rt, const char *id, struct hu_sandbox **out, hu_err *err)
{
	struct hu_sandbox *sb = calloc(1, sizeof(*sb));

	*out = NULL;
	if (!sb)
		return hu_err_set(err, ENOMEM, "sandbox");
	sb->rt = rt;
	sb->pidfd = -1;
	sb->sync_fd = -1;
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	if (sub_path(sb->sbdir, sizeof(sb->sbdir), rt->sandboxes_dir, id, err) < 0 ||
	    hu_layer_path(&rt->layers, id, sb->layer, sizeof(sb->layer), err) < 0 ||
	    (size_t)snprintf(sb->sock, sizeof(sb->sock), "%s/%s.sock", rt->ctl_dir, id) >= sizeof(sb->sock)) {
		free(sb);
		return hu_err_set(err, ENAMETOOLONG, "paths of sandbox %s", id);
	}
	*out = sb;
	return 0;
}

int hu_sandbox_create_start(struct hu_runtime *rt, const struct hu_sandbox_spec *spec, struct hu_sandbox **out,
			    hu_err *err)
{
	struct hu_sandbox *sb;
	struct hu_cgroup_limits lim;
	hu_err ignore;
	int listen_fd = -1;

	if (validate_spec(spec, err) < 0 || hu_sbx_handle_new(rt, spec->id, &sb, err) < 0)
		return -1;
	if (access(sb->sbdir, F_OK) == 0) {
		hu_err_set(err, EEXIST, "sandbox %s exists", spec->id);
		free(sb);
		return -1;
	}
	if (hu_slot_acquire(rt, spec->id, &sb->slot, err) < 0)
		goto fail;
	sb->have_slot = 1;
	sb->uid_base = HU_UID_FIRST + sb->slot * HU_UID_RANGE;
	if (prepare_dirs(sb, spec, err) < 0)
		goto fail;
	lim = spec->limits;
	hu_sbx_io_limits(rt, spec, &lim.io);
	if (hu_cgroup_create(&rt->cg, spec->id, &lim, &sb->cg, err) < 0)
		goto fail;
	listen_fd = hu_sbx_bind_init_socket(sb, err);
	if (listen_fd < 0 || hu_sbx_start_child(sb, spec, listen_fd, err) < 0)
		goto fail;
	close(listen_fd); /* hutch-init holds it now */
	*out = sb;
	return 0;
fail:
	if (listen_fd >= 0)
		close(listen_fd);
	hu_err_prefix(err, "create sandbox %s", spec->id);
	teardown(sb, &ignore);
	return -1;
}

int hu_sandbox_ready_fd(const struct hu_sandbox *sb)
{
	return sb->sync_fd;
}

int hu_sandbox_create_finish(struct hu_sandbox *sb, hu_err *err)
{
	hu_err ignore;
	int rc = hu_sbx_read_verdict(sb->sync_fd, err);

	close(sb->sync_fd);
	sb->sync_fd = -1;
	if (rc < 0) {
		hu_err_prefix(err, "create sandbox %s", sb->id);
		teardown(sb, &ignore);
		return -1;
	}
	return 0;
}

int hu_sandbox_create(struct hu_runtime *rt, const struct hu_sandbox_spec *spec, struct hu_sandbox **out,
		      hu_err *err)
{
	struct hu_sandbox *sb;

	if (hu_sandbox_create_start(rt, spec, &sb, err) < 0)
		return -1;
	struct pollfd pfd = {.fd = sb->sync_fd, .events = POLLIN};
	while (poll(&pfd, 1, CHILD_START_TIMEOUT_MS) < 0 && errno == EINTR)
		;
	if (hu_sandbox_create_finish(sb, err) < 0)
		return -1;
	*out = sb;
	return 0;
}

int hu_sandbox_freeze(struct hu_sandbox *sb, hu_err *err)
{
	return hu_cgroup_freeze(sb->cg, err);
}

int hu_sandbox_thaw(struct hu_sandbox *sb, hu_err *err)
{
	return hu_cgroup_thaw(sb->cg, err);
}

int hu_sandbox_stats(struct hu_sandbox *sb, struct hu_cgroup_stats *st, uint64_t *disk_used, hu_err *err)
{
	if (hu_cgroup_stats(sb->cg, st, err) < 0)
		return -1;
	return hu_layer_usage(&sb->rt->layers, sb->id, disk_used, err);
}

int hu_sandbox_disk_settle(struct hu_sandbox *sb, hu_err *err)
{
	_cleanup_close_ int fd = open(sb->layer, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return hu_err_sys(err, "open %s", sb->layer);
	if (syncfs(fd) < 0)
		return hu_err_sys(err, "sync %s", sb->layer);
	return 0;
}

double hu_sandbox_memory_psi(struct hu_sandbox *sb)
{
	int dir = sb->cg ? hu_cgroup_clone_fd(sb->cg) : -1;
	return dir < 0 ? -1 : hu_psi_read_some_avg10(dir, "memory.pressure");
}

double hu_runtime_sandboxes_memory_psi(struct hu_runtime *rt)
{
	char p[PATH_MAX];

	if (!rt->cg.v2_root[0])
		return -1;
	snprintf(p, sizeof(p), "%s/%s/memory.pressure", rt->cg.v2_root, rt->cg.parent);
	return hu_psi_read_some_avg10(AT_FDCWD, p);
}

int hu_sandbox_cleanup_leftover(struct hu_runtime *rt, const char *id, hu_err *err)
{
	struct hu_cgroup *cg = NULL;
	char dir[PATH_MAX], sock[PATH_MAX];
	hu_err e;
	int rc = 0;

	if (!hu_sandbox_id_valid(id))
		return hu_err_set(err, EINVAL, "invalid sandbox id '%s'", id);
	/* every process of the sandbox is in its cgroup: kill them first, so
	 * nothing holds the mounts below */
	if (hu_cgroup_open(&rt->cg, id, &cg, &e) == 0) {
		hu_cgroup_kill_all(cg, &e);
		if (hu_cgroup_destroy(cg, &e) < 0)
			rc = hu_err_set(err, e.code, "%s", e.msg);
	}
	if (hu_net_cleanup_leftover(rt, id, rc == 0 ? err : &e) < 0)
		rc = -1;
	if (hu_layer_destroy(&rt->layers, id, rc == 0 ? err : &e) < 0)
		rc = -1;
	snprintf(dir, sizeof(dir), "%s/%s", rt->sandboxes_dir, id);
	if (hu_sbx_remove_dir(dir, rc == 0 ? err : &e) < 0)
		rc = -1;
	snprintf(sock, sizeof(sock), "%s/%s.sock", rt->ctl_dir, id);
	unlink(sock);
	hu_slot_release_id(rt, id);
	return rc;
}

void hu_sandbox_close(struct hu_sandbox *sb)
{
	if (!sb)
		return;
	if (sb->cg)
		hu_cgroup_close(sb->cg);
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	free(sb);
}

int hu_sandbox_destroy_start(struct hu_sandbox *sb)
{
	if (sb->init_killed || kill_init(sb) < 0)
		return -1;
	sb->init_killed = 1;
	return sb->pidfd;
}

int hu_sandbox_destroy(struct hu_sandbox *sb, hu_err *err)
{
	if (teardown(sb, err) < 0) {
		hu_err_prefix(err, "destroy sandbox");
		return -1;
	}
	return 0;
}
