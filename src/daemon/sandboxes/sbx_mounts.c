/* A sandbox's mounts: from the API's requests to s->mounts, and from
 * s->mounts to the runtime's spec (sbx_mounts.h). */
#include "daemon/sandboxes/sbx_mounts.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "daemon/sandboxes/volumes.h"

static json_t *entry_volume(const struct hu_mount_req *m, const struct hu_volume *v, const char *host_path)
{
	return json_pack("{s:s, s:s, s:b, s:s, s:s, s:s}", "kind", "volume", "path", m->path, "readOnly",
			 m->read_only, "hostPath", host_path, "volume", v->name, "volumeID", v->id);
}

static json_t *entry_host(const struct hu_mount_req *m)
{
	return json_pack("{s:s, s:s, s:b, s:s}", "kind", "host", "path", m->path, "readOnly", m->read_only,
			 "hostPath", m->host_path);
}

int hu_sbx_mounts_build(struct hu_daemon *d, struct hu_sbx *s, const struct hu_mount_reqs *reqs, hu_err *err)
{
	json_t *arr = json_array();
	char root[PATH_MAX], path[PATH_MAX + HU_VOLUME_ID_MAX + 8];

	if (!arr)
		return hu_err_set(err, ENOMEM, "mounts");
	for (size_t i = 0; reqs && i < reqs->n; i++) {
		const struct hu_mount_req *m = &reqs->m[i];
		json_t *e = NULL;
		if (m->kind == HU_MOUNT_VOLUME) {
			struct hu_volume v;
			if (hu_store_volume_find(d->store, s->team, m->volume, &v, err) < 0)
				goto fail;
			/* informational: where the files are (the image for a capped one) */
			hu_volume_root(&d->cfg, root, sizeof(root));
			snprintf(path, sizeof(path), "%s/%s%s", root, v.id, v.size ? ".img" : "");
			e = entry_volume(m, &v, path);
		} else {
			/* resolve once now, so a bad path is a 400 before anything runs */
			int fd = hu_host_mount_open(&d->cfg, s->team, m->host_path, err);
			if (fd < 0)
				goto fail;
			close(fd);
			e = entry_host(m);
		}
		if (!e || json_array_append_new(arr, e) < 0) {
			hu_err_set(err, ENOMEM, "mounts");
			goto fail;
		}
	}
	json_decref(s->mounts);
	s->mounts = arr;
	return 0;
fail:
	json_decref(arr);
	return -1;
}

static const char *str(const json_t *e, const char *name)
{
	const char *v = json_string_value(json_object_get(e, name));
	return v ? v : "";
}

int hu_sbx_runtime_mounts(struct hu_daemon *d, const struct hu_sbx *s, struct hu_sbx_rt_mounts *rm, hu_err *err)
{
	size_t i;
	json_t *e;

	memset(rm, 0, sizeof(*rm));
	if (json_array_size(s->mounts) > HU_MOUNTS_MAX)
		return hu_err_set(err, -EINVAL, "too many mounts");
	json_array_foreach(s->mounts, i, e) {
		int fd;
		if (!strcmp(str(e, "kind"), "volume")) {
			struct hu_volume v;
			if (hu_store_volume_find(d->store, s->team, str(e, "volumeID"), &v, err) < 0 ||
			    (fd = hu_volume_open(&d->cfg, &v, err)) < 0)
				goto fail;
		} else if (!strcmp(str(e, "kind"), "host")) {
			if ((fd = hu_host_mount_open(&d->cfg, s->team, str(e, "hostPath"), err)) < 0)
				goto fail;
		} else {
			hu_err_set(err, -EINVAL, "mount %zu: unknown kind '%s'", i, str(e, "kind"));
			goto fail;
		}
		rm->fds[rm->n] = fd;
		rm->spec[rm->n] = (struct hu_mount_spec){
			.source_fd = fd,
			.target = str(e, "path"),
			.read_only = json_is_true(json_object_get(e, "readOnly")),
			/* canonical ids on disk: sandbox uid N is stored as N */
			.idmap = 1,
		};
		rm->n++;
	}
	return 0;
fail:
	hu_err_prefix(err, "mount %s", str(e, "path"));
	hu_sbx_rt_mounts_close(rm);
	return -1;
}

void hu_sbx_rt_mounts_close(struct hu_sbx_rt_mounts *rm)
{
	for (size_t i = 0; i < rm->n; i++)
		close(rm->fds[i]);
	rm->n = 0;
}

int hu_sbx_mounts_volume(const struct hu_sbx *s, const char *volume_id)
{
	size_t i;
	json_t *e;

	json_array_foreach(s->mounts, i, e)
		if (!strcmp(str(e, "kind"), "volume") && !strcmp(str(e, "volumeID"), volume_id))
			return 1;
	return 0;
}

json_t *hu_sbx_volume_mounts_json(const struct hu_sbx *s)
{
	json_t *arr = json_array(), *e;
	size_t i;

	json_array_foreach(s->mounts, i, e)
		if (arr && !strcmp(str(e, "kind"), "volume"))
			json_array_append_new(arr, json_pack("{s:s, s:s}", "name", str(e, "volume"), "path",
							     str(e, "path")));
	return arr;
}
