/*
 * envd's filesystem messages as JSON (filesystem.proto, proto3 JSON), built
 * from hutch-init's replies. Pure functions: no daemon, no I/O.
 *
 * EntryInfo follows what envd reports: permissions in Go's FileMode.String()
 * form ("-rw-r--r--", "drwxr-xr-x", "Lrwxrwxrwx"), mode as the permission
 * bits, modifiedTime as an RFC 3339 timestamp. One difference: a symlink is
 * FILE_TYPE_SYMLINK with its target as read by readlink (the SDK maps it to
 * "symlink"), where envd reports the type of what it points to.
 */
#ifndef HUTCH_DAEMON_FS_JSON_H
#define HUTCH_DAEMON_FS_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define HU_FS_PERMISSIONS_MAX 24 /* type letters + rwxrwxrwx + NUL */
#define HU_FS_TIME_MAX 40

/* Go's os.FileMode.String() for a stat st_mode. */
void hu_fs_permissions(uint32_t st_mode, char out[HU_FS_PERMISSIONS_MAX]);
/* Nanoseconds since the epoch as protobuf's JSON Timestamp (UTC, "Z",
 * 0/3/6/9 fraction digits). */
void hu_fs_timestamp(uint64_t ns, char out[HU_FS_TIME_MAX]);

/* EntryInfo from the value of one ENTRY field. */
int hu_fs_entry_info(const uint8_t *entry, size_t len, json_t **out, hu_err *err);
/* Append an EntryInfo for every ENTRY of an ENTRIES payload to array. */
int hu_fs_entries_append(const uint8_t *payload, size_t len, json_t *array, hu_err *err);
/* The first ENTRY of an ENTRIES payload (STAT, MKDIR, MOVE, WRITE_CLOSE);
 * EPROTO when there is none. */
int hu_fs_first_entry(const uint8_t *payload, size_t len, json_t **out, hu_err *err);
/* The name and path fields of the first ENTRY (what POST /files answers
 * with); malloc'd strings. */
int hu_fs_first_entry_path(const uint8_t *payload, size_t len, char **name, char **path, hu_err *err);

/* WatchDirResponse for a WATCH_EVENT payload:
 * {"filesystem":{"name":"a/b","type":"EVENT_TYPE_CREATE"}}. */
int hu_fs_watch_event(const uint8_t *payload, size_t len, json_t **out, hu_err *err);

#endif
