// fuzz-sources: src/daemon/core/config.c src/daemon/common/log.c src/runtime/netaddr.c src/runtime/netaddr6.c src/runtime/netdomain.c src/runtime/cgroup_io_parse.c
/* hutch serve's settings: every input is a config file body ("key = value"
 * lines, through the real file reader) and then the same lines as single
 * hu_config_set calls. Whatever is accepted must leave a config within its
 * bounds (warm pool sizes and their table above all); nothing may crash. */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/core/config.h"

static void check(const struct hu_config *cfg)
{
	/* host mount roots: absolute, each owner a team without '/', "*" or "" */
	assert(cfg->n_host_mount_roots <= HU_HOST_MOUNT_ROOTS_MAX);
	for (unsigned i = 0; i < cfg->n_host_mount_roots; i++) {
		assert(cfg->host_mount_roots[i][0] == '/');
		assert(!strchr(cfg->host_mount_teams[i], '/'));
	}
	assert(cfg->pool_size <= 256);
	assert(cfg->n_pool_sizes <= HU_POOL_TEMPLATES_MAX);
	for (unsigned i = 0; i < cfg->n_pool_sizes; i++) {
		assert(cfg->pool_sizes[i].size <= 256);
		assert(cfg->pool_sizes[i].template_id[0]);
		for (unsigned j = 0; j < i; j++)
			assert(strcmp(cfg->pool_sizes[i].template_id, cfg->pool_sizes[j].template_id));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct hu_config cfg;
	hu_err err;

	if (size > 16384)
		return 0;
	if (fd < 0) {
		fd = memfd_create("fuzz-config", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	hu_config_defaults(&cfg);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	hu_config_load_file(&cfg, path, &err);
	check(&cfg);

	/* line by line, "key=value" split at the first '=' */
	char *copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	hu_config_defaults(&cfg);
	for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		hu_config_set(&cfg, line, eq + 1, &err);
		check(&cfg);
	}
	free(copy);
	return 0;
}
