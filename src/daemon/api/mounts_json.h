/*
 * The mount requests of a new sandbox, decoded by pure functions (no I/O)
 * so unit tests and a fuzzer can drive them:
 *
 * - `volumeMounts: [{name, path, readOnly?}]` (E2B), named volumes;
 * - `metadata["host-mount"]` (CubeSandbox): a JSON string
 *   `[{"hostPath": "/abs", "mountPath": "/abs", "readOnly": bool}]`.
 *
 * Everything a request can get wrong without looking at the host is refused
 * here with EINVAL and a message naming the entry: wrong types, a path that
 * is not absolute or has '..', '.' or empty components, a mount point that
 * hu_mount_target_check refuses, two mounts on one path, too many mounts.
 * Whether a volume exists and whether a host path lies under an allowed
 * root is decided later (sbx_mounts.c).
 */
#ifndef HUTCH_DAEMON_MOUNTS_JSON_H
#define HUTCH_DAEMON_MOUNTS_JSON_H

#include <jansson.h>

#include "daemon/sandboxes/new_sandbox.h"
#include "runtime/sandbox.h"

/* Append the entries of a volumeMounts array (JSON null or absent: none). */
int hu_api_decode_volume_mounts(const json_t *arr, struct hu_mount_reqs *out, hu_err *err);
/* Append the entries of a host-mount metadata value (the JSON text). */
int hu_api_decode_host_mounts(const char *text, struct hu_mount_reqs *out, hu_err *err);
/* A volume name: 1..63 of [A-Za-z0-9._-], starting with a letter or digit. */
int hu_volume_name_valid(const char *name);

/* POST /volumes: {"name": "...", "size": bytes | "1G"?} (size 0 or absent:
 * no cap). */
int hu_api_decode_new_volume(const json_t *body, char name[HU_VOLUME_NAME_MAX], uint64_t *size, hu_err *err);

#endif
