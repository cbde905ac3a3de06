/* The sandbox handle and the parent-side steps that create (sandbox.c) and
 * the restart paths (sandbox_restart.c) share; not part of the API. */
#ifndef HUTCH_RUNTIME_SANDBOX_PRIV_H
#define HUTCH_RUNTIME_SANDBOX_PRIV_H

#include "runtime/runtime_internal.h"

struct hu_sandbox {
	struct hu_runtime *rt;
	char id[HU_ID_MAX];
	char sbdir[PATH_MAX]; /* <run>/sandboxes/<id>: pid, stopped (volatile) */
	char layer[PATH_MAX]; /* <data>/layers/<id>: the files (layer.c) */
	char sock[PATH_MAX];
	uint32_t slot;
	uint32_t uid_base;
	pid_t pid;
	int pidfd;
	int sync_fd; /* while being created: the child's verdict arrives here */
	struct hu_cgroup *cg;
	int have_slot, have_dir, have_net, have_layer;
	int adopted; /* not our child: its reaping (and so its namespaces' end) is up to the host's init */
	int init_killed; /* hu_sandbox_destroy_start sent init its SIGKILL; its caller waited for the exit */
};

/* A handle for sandbox `id`: its directory and socket paths, nothing
 * opened or created (create and adopt fill in the rest). */
int hu_sbx_handle_new(struct hu_runtime *rt, const char *id, struct hu_sandbox **out, hu_err *err);
/* Bind and listen on sb->sock (an old socket file is replaced); the fd. */
int hu_sbx_bind_init_socket(struct hu_sandbox *sb, hu_err *err);
/* Clone the child into fresh namespaces, put it in sb->cg, map its ids,
 * record its pid in <sbdir>/pid and hand it its mounts; sb->sync_fd then
 * reports the verdict. */
int hu_sbx_start_child(struct hu_sandbox *sb, const struct hu_sandbox_spec *spec, int listen_fd, hu_err *err);
/* The verdict on sync_fd: 0 once the child executed hutch-init. */
int hu_sbx_read_verdict(int sync_fd, hu_err *err);
/* SIGKILL hutch-init (and so the whole PID namespace) and the cgroup, and
 * wait until they are gone (bounded). */
void hu_sbx_stop_processes(struct hu_sandbox *sb);
/* Remove sbdir and what it holds (missing pieces are fine). */
int hu_sbx_remove_dir(const char *sbdir, hu_err *err);

#endif
