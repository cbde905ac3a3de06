/*
 * Templates: the read-only root trees sandboxes are built on, and how they
 * are made. A built template lives in <data_dir>/templates/<id>/:
 *
 *   rootfs/        the tree (files owned by ids 0..65535 on disk; sandboxes
 *                  see it through an idmapped mount, so 0 is root and 1000
 *                  is user inside)
 *   template.json  its description and per-sandbox defaults (hu_tpl_meta)
 *   own-usr        present: the tree brings its own /usr (the runtime then
 *                  does not bind the host's)
 *
 * It is built in a private directory beside the others and renamed into
 * place, so a reader (a running daemon) never sees half a template. The
 * template id is its name ([a-z0-9-], 1..63), which is also its one alias.
 * Every path of an archive or a directory goes through one writer
 * (tpl_write.c) that resolves beneath the tree's root and enforces the caps.
 */
#ifndef HUTCH_TEMPLATE_TEMPLATE_H
#define HUTCH_TEMPLATE_TEMPLATE_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/sandbox.h"
#include "util/err.h"

#define HU_TPL_CWD_MAX 256
#define HU_TPL_USER_MAX 32
#define HU_TPL_TEAM_MAX 64
#define HU_TPL_CMD_MAX 1024
#define HU_TPL_READY_TIMEOUT_S 60
#define HU_TPL_META_FILE "template.json"
#define HU_TPL_OWN_USR_FILE "own-usr"

/* ---- entry paths and whiteouts (tpl_path.c, pure) ---- */

/* Normalise an archive entry's path to a relative one ("a/b"): "./" and
 * empty components dropped; absolute paths, ".." components and components
 * longer than NAME_MAX are refused (EINVAL, the reason in err). "" is the
 * root itself. */
int hu_tpl_norm_path(const char *raw, char *out, size_t n, hu_err *err);

/* OCI whiteouts, on a normalised path: "d/.wh.x" deletes d/x from the layers
 * below (target = "d/x"); "d/.wh..wh..opq" hides everything below d in them
 * (target = "d", "" for the root); other ".wh..wh." names are the layer
 * tool's own metadata and are skipped. */
enum hu_tpl_wh { HU_TPL_WH_NONE, HU_TPL_WH_FILE, HU_TPL_WH_OPAQUE, HU_TPL_WH_META };
enum hu_tpl_wh hu_tpl_whiteout(const char *norm, char *target, size_t n);

/* ---- the writer (tpl_write.c) ---- */

struct hu_tpl_caps {
	uint64_t max_bytes; /* total size of regular files */
	uint64_t max_files; /* entries written */
};
#define HU_TPL_DEFAULT_MAX_BYTES (4ULL << 30)
#define HU_TPL_DEFAULT_MAX_FILES 500000ULL

struct hu_tpl_writer {
	int root; /* the tree's root directory */
	struct hu_tpl_caps caps;
	uint64_t bytes, files;
	uint64_t skipped; /* device nodes, fifos, sockets: not written */
};

struct hu_tpl_entry {
	const char *path; /* normalised (hu_tpl_norm_path) */
	mode_t mode;      /* type and permission bits */
	uint32_t uid, gid;
	int64_t size;     /* regular files */
	const char *link; /* symlink target, or the normalised path a hard link names */
	int hardlink;
	int64_t mtime;
};

/* Read up to n bytes of the entry's content: bytes read, 0 at the end, -1. */
typedef ssize_t (*hu_tpl_read_fn)(void *arg, void *buf, size_t n);

/* Write one entry beneath w->root. Its parent is resolved inside the tree
 * (RESOLVE_IN_ROOT: a symlink in the tree can redirect a later entry only to
 * another place in the tree, never out of it); missing parents are made.
 * What is at the name is replaced (a directory over a directory is kept:
 * layers merge). Device nodes, fifos and sockets are counted in w->skipped
 * and not written. setuid/setgid bits are dropped; owners outside
 * 0..65535 become 0. EFBIG / EMFILE when a cap is passed. */
int hu_tpl_put(struct hu_tpl_writer *w, const struct hu_tpl_entry *e, hu_tpl_read_fn rd, void *arg, hu_err *err);
/* Whiteouts: remove path (and all below it) / everything below dir. */
int hu_tpl_remove(struct hu_tpl_writer *w, const char *path, hu_err *err);
int hu_tpl_clear_dir(struct hu_tpl_writer *w, const char *dir, hu_err *err);
/* A directory of the tree (O_RDONLY), resolved inside it; with `create`,
 * missing components are made (0755). -1 and err otherwise. */
int hu_tpl_open_dir(int root, const char *path, int create, hu_err *err);

/* ---- sources ---- */

/* A tar archive (plain, gzip or zstd) from fd, as one layer: whiteouts are
 * applied to what the tree holds, then the other entries are written. fd
 * must be seekable (read twice). */
int hu_tpl_import_tar(struct hu_tpl_writer *w, int fd, hu_err *err);
/* A host directory tree (symlinks copied as symlinks, never followed). */
int hu_tpl_import_dir(struct hu_tpl_writer *w, const char *dir, hu_err *err);

/* What an image's config suggests as defaults (OCI config: Env, WorkingDir,
 * User); envs is an object the caller owns, or NULL. */
struct hu_tpl_image_config {
	json_t *envs;
	char cwd[HU_TPL_CWD_MAX];
	char user[HU_TPL_USER_MAX];
};

/* OCI image layout parsing (tpl_oci.c, pure): a descriptor digest is
 * "sha256:" + 64 lowercase hex. */
#define HU_OCI_DIGEST_MAX 72
#define HU_OCI_LAYERS_MAX 256
/* From an index (index.json or a nested image index): the manifest for
 * linux and this machine's architecture (or the only/first one); *nested = 1
 * when that descriptor is itself an image index. */
int hu_oci_pick_manifest(const char *json, size_t len, char digest[HU_OCI_DIGEST_MAX], int *nested, hu_err *err);
/* From a manifest: the config digest and the layer digests, in order. */
int hu_oci_manifest_layers(const char *json, size_t len, char config[HU_OCI_DIGEST_MAX],
			   char (*layers)[HU_OCI_DIGEST_MAX], size_t max, size_t *n, hu_err *err);
/* From an image config: Env, WorkingDir, User. */
int hu_oci_image_config(const char *json, size_t len, struct hu_tpl_image_config *out, hu_err *err);
/* An OCI image layout directory: index.json -> manifest -> layers applied
 * in order; every blob's sha256 checked against its digest. */
int hu_tpl_import_oci(struct hu_tpl_writer *w, const char *dir, struct hu_tpl_image_config *cfg, hu_err *err);

/* Make a foreign tree fit to run as a sandbox (tpl_fixup.c): the
 * directories the runtime mounts over (proc, sys, dev, tmp, etc, usr, ...)
 * and /opt/hutch/bin are real directories (a symlink there is replaced),
 * /etc/passwd and /etc/group know root and `user` (uid 1000, added when
 * missing, home /home/user), /home/user exists and is user's. */
int hu_tpl_fixup(int root, hu_err *err);

/* ---- description (tpl_meta.c) ---- */

#define HU_TPL_RECIPE_MAX 72
#define HU_TPL_CHECKSUM_MAX 72 /* "sha256:" + 64 lowercase hex */

struct hu_tpl_meta {
	char id[HU_ID_MAX];
	char team[HU_TPL_TEAM_MAX]; /* owner team ("" for a public operator template) */
	int is_public;              /* every team may use it */
	int host_usr;               /* the runtime binds the host's /usr (base); not stored */
	int64_t created_ms;
	uint32_t cpu_millis;        /* per-sandbox defaults; 0 = the server's */
	uint64_t memory_bytes;
	uint64_t disk_bytes;
	json_t *envs;               /* object str -> str (owned), never NULL after read */
	char cwd[HU_TPL_CWD_MAX];   /* default working directory of commands ("" = user's home) */
	char user[HU_TPL_USER_MAX]; /* default user of commands ("" = user) */
	char start_cmd[HU_TPL_CMD_MAX]; /* run (sh -c) in the background when a sandbox starts, or "" */
	char ready_cmd[HU_TPL_CMD_MAX]; /* create answers once this (sh -c) exits 0, or "" */
	uint32_t ready_timeout_s;   /* how long create waits for it (0 = HU_TPL_READY_TIMEOUT_S) */
	char source[8];             /* dir | tar | oci | host */
	char recipe[HU_TPL_RECIPE_MAX]; /* what a recipe script built it from (a hash), or "": scripts
	                                 * compare it to decide whether to rebuild */
	uint64_t size_bytes, files;
	char checksum[HU_TPL_CHECKSUM_MAX]; /* of its transfer stream (hu_tpl_export), set by the build; ""
	                                     * for one built before there was one */
};

void hu_tpl_meta_init(struct hu_tpl_meta *m);
void hu_tpl_meta_free(struct hu_tpl_meta *m);
/* The E2B-shaped view: templateID, aliases, public, createdAt, cpuCount,
 * memoryMB, diskSizeMB, buildStatus, envs, cwd, user, ... */
json_t *hu_tpl_meta_json(const struct hu_tpl_meta *m);
/* The stored form (template.json), which hu_tpl_meta_parse reads. */
json_t *hu_tpl_meta_stored(const struct hu_tpl_meta *m);
int hu_tpl_meta_parse(const char *json, size_t len, struct hu_tpl_meta *m, hu_err *err);
/* "sha256:" + 64 lowercase hex */
int hu_tpl_checksum_valid(const char *s);
/* <templates_dir>/<id>/template.json; ENOENT when there is no such
 * template. The built-in `base` is described here too (public, host /usr). */
int hu_tpl_meta_read(const char *templates_dir, const char *id, struct hu_tpl_meta *m, hu_err *err);
/* Call fn for every template (base first); stops at fn's non-zero. */
int hu_tpl_list(const char *templates_dir, int (*fn)(const struct hu_tpl_meta *m, void *arg), void *arg, hu_err *err);

/* ---- build and delete (tpl_build.c) ---- */

/* FROM_NODE: a copy of another node's template (its transfer stream,
 * already unpacked into the staged rootfs; keeps its createdAt and checksum) */
enum hu_tpl_source { HU_TPL_FROM_DIR, HU_TPL_FROM_TAR, HU_TPL_FROM_OCI, HU_TPL_FROM_NODE };
struct hu_tpl_build {
	const char *templates_dir;
	enum hu_tpl_source source;
	const char *path;         /* the directory, archive or layout */
	struct hu_tpl_caps caps;  /* 0 = defaults */
	struct hu_tpl_meta meta;  /* id, team, public and defaults; the rest is filled */
	int init_fd;              /* hutch-init, installed as /opt/hutch/bin/sudo; -1: none
				   * (the daemon installs it at its next start) */
};
/* Build into a private directory beside the templates and rename it into
 * place. EEXIST if the id is taken (delete first); on any failure nothing is
 * left behind. */
int hu_tpl_build(struct hu_tpl_build *b, hu_err *err);
/* The two ends of a build done by someone else (hutch-build): make
 * <templates_dir>/.build-<id>-<tag>/rootfs/ (its path into tmp; EEXIST if
 * the id is taken), and, once the rootfs is filled, write the description
 * of b (size_bytes and files set by the caller) beside it and rename the
 * directory into place. On failure the caller removes tmp. */
int hu_tpl_stage(const char *templates_dir, const char *id, const char *tag, char *tmp, size_t n, hu_err *err);
/* The same, for a copy that is to replace the template of that id (the
 * caller sets the old one aside just before hu_tpl_commit): no EEXIST. */
int hu_tpl_stage_replacing(const char *templates_dir, const char *id, const char *tag, char *tmp, size_t n,
			   hu_err *err);
int hu_tpl_commit(struct hu_tpl_build *b, const char *tmp, hu_err *err);
/* Remove a built template (its name first, then its files). The caller
 * checks that no sandbox uses it. `base` cannot be deleted. */
int hu_tpl_delete(const char *templates_dir, const char *id, hu_err *err);

/* ---- the transfer stream (tpl_export.c) ---- */

/* A built template's tree as one tar stream (POSIX pax, libarchive's
 * writer), the same bytes every time for the same tree, so that its
 * sha256, taken when the template is built, checks a copy sent to another
 * node (cluster/template_fetch.h): entries in byte order of their names,
 * each with its type, permission bits, owner, size, and (files and
 * symlinks) mtime; directories carry mtime 0; hard links are sent as
 * separate files; device nodes, fifos and sockets (the builder writes
 * none) are left out, and so is /opt/hutch/bin/sudo (every daemon installs
 * its own: hu_template_refresh). The stream goes to `sink` piece by piece:
 * hu_tpl_export_step does a bounded amount of work per call, so an event
 * loop can send a tree of any size with backpressure. */
typedef int (*hu_tpl_sink_fn)(void *arg, const void *buf, size_t n); /* 0 or -1 */
struct hu_tpl_export;
/* Export the tree whose root is the directory fd `root` (dup'ed). */
int hu_tpl_export_open(int root, hu_tpl_sink_fn sink, void *arg, struct hu_tpl_export **out, hu_err *err);
/* 1: more to come; 0: the stream is complete (hu_tpl_export_digest); -1. */
int hu_tpl_export_step(struct hu_tpl_export *x, hu_err *err);
/* "sha256:<hex>" of what went to the sink, once step returned 0. */
void hu_tpl_export_digest(const struct hu_tpl_export *x, char out[HU_TPL_CHECKSUM_MAX]);
uint64_t hu_tpl_export_bytes(const struct hu_tpl_export *x);
void hu_tpl_export_free(struct hu_tpl_export *x);
/* The checksum of the tree at `root`: its whole stream, hashed. */
int hu_tpl_checksum(int root, char out[HU_TPL_CHECKSUM_MAX], hu_err *err);

/* ---- the builder's confinement (tpl_confine.c) ---- */

/* Irreversibly confine the calling process (hutch-build) to what a build
 * into the directory root_fd needs: no network and no sockets, a few file
 * capabilities, Landlock (root_fd and /usr only) and the sandboxes' seccomp
 * filter. */
int hu_tpl_confine_builder(int root_fd, hu_err *err);

#endif
