/*
 * What a create asks for, as the sandboxes layer takes it: the decoded
 * NewSandbox body and its mount requests. The API decodes JSON into these
 * (api/api_json.c, api/mounts_json.c); sandbox_ops.c, sbx_network.c and
 * sbx_mounts.c act on them.
 */
#ifndef HUTCH_DAEMON_SANDBOXES_NEW_SANDBOX_H
#define HUTCH_DAEMON_SANDBOXES_NEW_SANDBOX_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/sandboxes/volumes.h"
#include "runtime/net.h"
#include "runtime/sandbox.h"

#define HU_HOST_PATH_MAX 1024
#define HU_HOST_MOUNT_KEY "host-mount"

enum hu_mount_kind { HU_MOUNT_VOLUME = 1, HU_MOUNT_HOST = 2 };

struct hu_mount_req {
	enum hu_mount_kind kind;
	char volume[HU_VOLUME_NAME_MAX];  /* HU_MOUNT_VOLUME: its name */
	char host_path[HU_HOST_PATH_MAX]; /* HU_MOUNT_HOST: absolute, normalised */
	char path[HU_MOUNT_TARGET_MAX];   /* where it appears in the sandbox */
	int read_only;
};

struct hu_mount_reqs {
	size_t n;
	struct hu_mount_req m[HU_MOUNTS_MAX];
};

/* NewSandbox / NewSandboxV2 (POST /sandboxes, POST /v2/sandboxes). */
struct hu_new_sandbox {
	char template_id[HU_ID_MAX]; /* "base" when not given */
	int32_t timeout_s;           /* 0 = not given: the daemon's default */
	json_t *metadata;            /* object of string -> string, owned, never NULL after decode */
	json_t *env_vars;            /* object of string -> string, owned, never NULL after decode */
	int allow_internet;          /* -1 = not given, else 0/1 */
	int auto_pause;              /* onTimeout: 1 = pause, 0 = kill */
	int auto_pause_memory;       /* 1 unless "autoPauseMemory": false */
	int auto_resume;             /* autoResume.enabled */
	int32_t reclaim_after_s;     /* reclaimAfter (hutch): 0 = the server's setting, -1 = never */
	struct hu_mount_reqs *mounts; /* volumeMounts + metadata["host-mount"] (owned), NULL = none */
	int has_network;             /* a "network" object was given */
	struct hu_net_rules net;     /* its allowOut / denyOut */
	int private_traffic;         /* network.allowPublicTraffic: false: ports need a traffic token */
	char mask_host[256];         /* network.maskRequestHost ("" = none): the Host port requests carry */
};

#endif
