/*
 * OCI image layouts (template.h): index.json -> (image index ->) manifest
 * -> config and layers. The JSON parsers are pure (and fuzzed); the import
 * opens blobs only as blobs/sha256/<64 hex> beneath the layout directory,
 * with no symlink on the way, and checks each one's sha256 before use.
 */
#include <fcntl.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "template/template.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

#define JSON_BLOB_MAX (4u << 20) /* index, manifest and config are small */
#define INDEX_DEPTH_MAX 3

static int digest_valid(const char *d)
{
	if (strncmp(d, "sha256:", 7) || strlen(d) != 7 + 64)
		return 0;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

static int copy_digest(const json_t *desc, char out[HU_OCI_DIGEST_MAX], hu_err *err)
{
	const char *d = json_string_value(json_object_get(desc, "digest"));
	if (!d || !digest_valid(d))
		return hu_err_set(err, -EINVAL, "a descriptor without a valid sha256 digest");
	snprintf(out, HU_OCI_DIGEST_MAX, "%s", d);
	return 0;
}

static const char *host_arch(void)
{
	struct utsname u;
	if (uname(&u) < 0)
		return "amd64";
	if (!strcmp(u.machine, "x86_64"))
		return "amd64";
	if (!strcmp(u.machine, "aarch64"))
		return "arm64";
	return "";
}

static json_t *parse(const char *json, size_t len, const char *what, hu_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root || !json_is_object(root)) {
		json_decref(root);
		hu_err_set(err, -EINVAL, "%s: not a JSON object%s%s", what, root ? "" : ": ", root ? "" : je.text);
		return NULL;
	}
	return root;
}

static int is_index_type(const char *mt)
{
	return mt && (!strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
		      !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json"));
}

int hu_oci_pick_manifest(const char *json, size_t len, char digest[HU_OCI_DIGEST_MAX], int *nested, hu_err *err)
{
	json_t *root = parse(json, len, "image index", err);
	if (!root)
		return -1;
	const json_t *mans = json_object_get(root, "manifests");
	const json_t *pick = NULL, *m;
	size_t i;
	int rc = -1;

	if (!json_is_array(mans) || json_array_size(mans) == 0) {
		hu_err_set(err, -EINVAL, "image index: no manifests");
		goto out;
	}
	json_array_foreach(mans, i, m) {
		if (!json_is_object(m)) {
			hu_err_set(err, -EINVAL, "image index: a manifest descriptor is not an object");
			goto out;
		}
		const json_t *plat = json_object_get(m, "platform");
		const char *os = json_string_value(json_object_get(plat, "os"));
		const char *arch = json_string_value(json_object_get(plat, "architecture"));
		if (!pick)
			pick = m; /* the first one unless a better one comes */
		if (plat && os && arch && !strcmp(os, "linux") && !strcmp(arch, host_arch())) {
			pick = m;
			break;
		}
	}
	if (copy_digest(pick, digest, err) < 0)
		goto out;
	*nested = is_index_type(json_string_value(json_object_get(pick, "mediaType")));
	rc = 0;
out:
	json_decref(root);
	return rc;
}

int hu_oci_manifest_layers(const char *json, size_t len, char config[HU_OCI_DIGEST_MAX],
			   char (*layers)[HU_OCI_DIGEST_MAX], size_t max, size_t *n, hu_err *err)
{
	json_t *root = parse(json, len, "image manifest", err);
	if (!root)
		return -1;
	const json_t *ls = json_object_get(root, "layers"), *l;
	size_t i;
	int rc = -1;

	*n = 0;
	if (copy_digest(json_object_get(root, "config"), config, err) < 0) {
		hu_err_prefix(err, "image manifest: config");
		goto out;
	}
	if (!json_is_array(ls)) {
		hu_err_set(err, -EINVAL, "image manifest: no layers");
		goto out;
	}
	if (json_array_size(ls) > max) {
		hu_err_set(err, -E2BIG, "image manifest: more than %zu layers", max);
		goto out;
	}
	json_array_foreach(ls, i, l) {
		const char *mt = json_string_value(json_object_get(l, "mediaType"));
		if (!json_is_object(l) || (mt && !strstr(mt, "tar"))) {
			hu_err_set(err, -EINVAL, "image manifest: layer %zu is not a tar layer", i);
			goto out;
		}
		if (copy_digest(l, layers[i], err) < 0) {
			hu_err_prefix(err, "image manifest: layer %zu", i);
			goto out;
		}
		(*n)++;
	}
	rc = 0;
out:
	json_decref(root);
	return rc;
}

int hu_oci_image_config(const char *json, size_t len, struct hu_tpl_image_config *out, hu_err *err)
{
	json_t *root = parse(json, len, "image config", err);
	if (!root)
		return -1;
	const json_t *c = json_object_get(root, "config"), *v;
	const char *s;
	size_t i;

	out->envs = json_object();
	out->cwd[0] = out->user[0] = '\0';
	json_array_foreach(json_object_get(c, "Env"), i, v) {
		const char *kv = json_string_value(v);
		const char *eq = kv ? strchr(kv, '=') : NULL;
		if (!eq || eq == kv || eq - kv > 255)
			continue;
		char key[256];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
		json_object_set_new(out->envs, key, json_string(eq + 1));
	}
	if ((s = json_string_value(json_object_get(c, "WorkingDir"))) && s[0] == '/' && strlen(s) < sizeof(out->cwd))
		snprintf(out->cwd, sizeof(out->cwd), "%s", s);
	/* a name only: "uid:gid" forms would bypass the template's passwd */
	if ((s = json_string_value(json_object_get(c, "User"))) && *s && strlen(s) < sizeof(out->user) &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == strlen(s) && !(s[0] >= '0' && s[0] <= '9'))
		snprintf(out->user, sizeof(out->user), "%s", s);
	json_decref(root);
	return 0;
}

/* blobs/sha256/<hex> beneath the layout, no symlinks, checked against its
 * digest; the fd is rewound. */
static int open_blob(int layout, const char *digest, hu_err *err)
{
	char rel[128];
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	snprintf(rel, sizeof(rel), "blobs/sha256/%s", digest + 7);
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, layout, rel, &how, sizeof(how));
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return hu_err_sys(err, "blob %s", digest);
	if (!S_ISREG(st.st_mode))
		return hu_err_set(err, -EINVAL, "blob %s is not a file", digest);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	ssize_t n;
	if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return hu_err_set(err, -ENOMEM, "sha256");
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		EVP_DigestUpdate(ctx, buf, (size_t)n);
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	if (n < 0)
		return hu_err_sys(err, "read blob %s", digest);
	char hex[65];
	for (unsigned i = 0; i < 32 && i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	if (strcmp(hex, digest + 7))
		return hu_err_set(err, -EINVAL, "blob %s: its content has sha256 %s", digest, hex);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return hu_err_sys(err, "rewind blob %s", digest);
	return hu_take_fd(&fd);
}

/* A small JSON file of the layout, read whole. */
static char *read_json(int fd, size_t *len, const char *what, hu_err *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		hu_err_sys(err, "%s", what);
		return NULL;
	}
	if (st.st_size > JSON_BLOB_MAX) {
		hu_err_set(err, -EFBIG, "%s: larger than %u bytes", what, JSON_BLOB_MAX);
		return NULL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	ssize_t n = buf ? pread(fd, buf, (size_t)st.st_size, 0) : -1;
	if (n != st.st_size) {
		free(buf);
		hu_err_set(err, -EIO, "read %s", what);
		return NULL;
	}
	*len = (size_t)n;
	return buf;
}

int hu_tpl_import_oci(struct hu_tpl_writer *w, const char *dir, struct hu_tpl_image_config *cfg, hu_err *err)
{
	char digest[HU_OCI_DIGEST_MAX], config[HU_OCI_DIGEST_MAX];
	char (*layers)[HU_OCI_DIGEST_MAX] = NULL;
	size_t n_layers = 0, len;
	int nested = 0, rc = -1;
	_cleanup_close_ int layout = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (layout < 0)
		return hu_err_sys(err, "open %s", dir);

	_cleanup_close_ int idx = openat(layout, "index.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (idx < 0)
		return hu_err_sys(err, "%s/index.json (an OCI image layout is expected)", dir);
	_cleanup_free_ char *text = read_json(idx, &len, "index.json", err);
	if (!text || hu_oci_pick_manifest(text, len, digest, &nested, err) < 0)
		return -1;
	for (int depth = 0; nested; depth++) {
		if (depth >= INDEX_DEPTH_MAX)
			return hu_err_set(err, -ELOOP, "image indexes nested deeper than %d", INDEX_DEPTH_MAX);
		_cleanup_close_ int fd = open_blob(layout, digest, err);
		if (fd < 0)
			return -1;
		free(text);
		text = read_json(fd, &len, digest, err);
		if (!text || hu_oci_pick_manifest(text, len, digest, &nested, err) < 0)
			return -1;
	}
	{
		_cleanup_close_ int fd = open_blob(layout, digest, err);
		if (fd < 0)
			return -1;
		free(text);
		text = read_json(fd, &len, digest, err);
		layers = calloc(HU_OCI_LAYERS_MAX, sizeof(*layers));
		if (!text || !layers ||
		    hu_oci_manifest_layers(text, len, config, layers, HU_OCI_LAYERS_MAX, &n_layers, err) < 0) {
			if (!layers)
				hu_err_set(err, -ENOMEM, "layers");
			goto out;
		}
	}
	{
		_cleanup_close_ int fd = open_blob(layout, config, err);
		if (fd < 0)
			goto out;
		free(text);
		text = read_json(fd, &len, "image config", err);
		if (!text || hu_oci_image_config(text, len, cfg, err) < 0)
			goto out;
	}
	for (size_t i = 0; i < n_layers; i++) {
		_cleanup_close_ int fd = open_blob(layout, layers[i], err);
		if (fd < 0 || hu_tpl_import_tar(w, fd, err) < 0) {
			hu_err_prefix(err, "layer %zu (%.19s)", i, layers[i]);
			goto out;
		}
	}
	rc = 0;
out:
	free(layers);
	return rc;
}
