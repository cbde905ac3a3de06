/*
 * A sandbox's mounts, between the API and the runtime.
 *
 * On create, the requests (mounts_json.h) are checked against the host and
 * the store and recorded in s->mounts, a JSON array that can be stored and
 * read back: [{kind: "volume"|"host", path, readOnly, hostPath, volume?,
 * volumeID?}]. hu_sbx_runtime_mounts() turns that list into the runtime's
 * hu_mount_spec entries, opening every source again (a volume by its id, a
 * host path beneath its root), so a sandbox can be started again over the
 * same files later (a restart after a memory release or a daemon restart).
 */
#ifndef HUTCH_DAEMON_SBX_MOUNTS_H
#define HUTCH_DAEMON_SBX_MOUNTS_H

#include <jansson.h>

#include "daemon/core/daemon.h"
#include "daemon/sandboxes/new_sandbox.h"
#include "daemon/sandboxes/registry.h"

/* The runtime's view of a sandbox's mounts; the fds are owned. */
struct hu_sbx_rt_mounts {
	size_t n;
	struct hu_mount_spec spec[HU_MOUNTS_MAX];
	int fds[HU_MOUNTS_MAX];
};

/* Build s->mounts from the requests of a new sandbox of team s->team: every
 * volume must exist for the team (ENOENT, 404), every host path must lie
 * beneath one of cfg.host_mount_roots (EINVAL, 400: host mounts disabled,
 * outside, a symlink leading out, missing, not a directory). Nothing is
 * mounted here. reqs may be NULL (no mounts: an empty array). */
int hu_sbx_mounts_build(struct hu_daemon *d, struct hu_sbx *s, const struct hu_mount_reqs *reqs, hu_err *err);
/* Open every source of s->mounts into rm (for hu_sandbox_spec.mounts);
 * release with hu_sbx_rt_mounts_close once the runtime has them. The
 * targets point into s->mounts. */
int hu_sbx_runtime_mounts(struct hu_daemon *d, const struct hu_sbx *s, struct hu_sbx_rt_mounts *rm, hu_err *err);
void hu_sbx_rt_mounts_close(struct hu_sbx_rt_mounts *rm);
/* Does s mount the volume with this id? */
int hu_sbx_mounts_volume(const struct hu_sbx *s, const char *volume_id);
/* volumeMounts for the SandboxDetail view: [{name, path}] (new reference). */
json_t *hu_sbx_volume_mounts_json(const struct hu_sbx *s);

/* host_mounts.c: an O_PATH fd of host_path, resolved beneath the directory
 * of a configured root that team may use (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS: no '..' and no symlink of
 * any kind is followed). EPERM when only another team's root holds it. */
int hu_host_mount_open(const struct hu_config *cfg, const char *team, const char *host_path, hu_err *err);

#endif
