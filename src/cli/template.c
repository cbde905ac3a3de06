/*
 * hutch template: build and list templates in the data dir that
 * `hutch serve` uses (the same --data-dir / HUTCH_DATA_DIR). Building while
 * the daemon runs is safe: the template appears by one rename when it is
 * complete, and the daemon reads the templates directory on every request.
 *
 *   hutch template build NAME --from DIR | --from-tar FILE | --from-oci DIR [options]
 *   hutch template ls
 *   hutch template rm NAME        (template_rm.c)
 */
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "template/template.h"
#include "util/cleanup.h"
#include "util/parse.h"

#define MIB (1024ULL * 1024ULL)

static void usage(FILE *f)
{
	fprintf(f, "usage: hutch template build NAME (--from DIR | --from-tar FILE | --from-oci DIR) [options]\n"
		   "       hutch template ls [--data-dir DIR]\n"
		   "       hutch template rm NAME [--data-dir DIR] [--force]   (stop `hutch serve` first)\n\n"
		   "  NAME              the template id and alias: 1 to 63 of [a-z0-9-] (not 'base')\n"
		   "  --from DIR        copy a directory tree (a root file system)\n"
		   "  --from-tar FILE   a tar archive, plain, gzip or zstd\n"
		   "  --from-oci DIR    an OCI image layout (index.json, blobs/sha256/...), e.g. from\n"
		   "                    `skopeo copy docker://IMG oci:DIR` or an unpacked `docker save`\n"
		   "  --data-dir DIR    where `hutch serve` keeps its state (default $HUTCH_DATA_DIR or\n"
		   "                    /var/lib/hutch)\n"
		   "  --team NAME       private to this team (default: public, every team may use it)\n"
		   "  --cpu N           default CPUs of its sandboxes (decimals allowed)\n"
		   "  --memory MB       default memory of its sandboxes\n"
		   "  --disk MB         default size cap of its sandboxes' writable layer\n"
		   "  --env K=V         default environment variable (repeatable)\n"
		   "  --cwd PATH        default working directory of commands\n"
		   "  --user NAME       default user of commands (default: user)\n"
		   "  --start-cmd CMD   run (sh -c) in the background when a sandbox starts\n"
		   "  --ready-cmd CMD   a create answers once this (sh -c) exits 0, polled every 200 ms\n"
		   "  --ready-timeout S how long a create waits for --ready-cmd (default 60)\n"
		   "  --max-size MB     refuse a source larger than this (default 4096)\n"
		   "  --max-files N     refuse a source with more entries (default 500000)\n"
		   "  --recipe HASH     record what a recipe script built it from (1 to 64 of [0-9a-f]),\n"
		   "                    which the script compares to decide whether to rebuild\n");
}

static int parse_mib(const char *v, uint64_t *out, const char *what)
{
	uint64_t n;
	hu_err err;
	if (hu_parse_u64(v, &n, &err) < 0 || n == 0 || n > (1ULL << 30)) {
		cli_error("%s: expected a number of MiB, got '%s'", what, v);
		return -1;
	}
	*out = n * MIB;
	return 0;
}

static int parse_cpu(const char *v, uint32_t *millis)
{
	char *end;
	double d = strtod(v, &end);
	if (*end || !(d > 0) || d > 1024) {
		cli_error("--cpu: expected a positive number, got '%s'", v);
		return -1;
	}
	*millis = (uint32_t)(d * 1000 + 0.5);
	return 0;
}

/* hutch-init beside this binary (or $HUTCH_INIT): the sudo shim */
static int open_init(void)
{
	char self[PATH_MAX], path[PATH_MAX + 16];
	const char *env = getenv("HUTCH_INIT");
	if (env && *env)
		return open(env, O_RDONLY | O_CLOEXEC);
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return -1;
	self[n] = '\0';
	snprintf(path, sizeof(path), "%s/hutch-init", dirname(self));
	return open(path, O_RDONLY | O_CLOEXEC);
}

static void templates_dir(const char *data_dir, char *buf, size_t n)
{
	const char *env = getenv("HUTCH_DATA_DIR");
	snprintf(buf, n, "%s/templates", data_dir ? data_dir : env && *env ? env : "/var/lib/hutch");
}

static int build(int argc, char **argv)
{
	static const struct option opts[] = {
		{"from", required_argument, NULL, 'f'}, {"from-tar", required_argument, NULL, 't'},
		{"from-oci", required_argument, NULL, 'o'}, {"data-dir", required_argument, NULL, 'D'},
		{"team", required_argument, NULL, 'T'}, {"cpu", required_argument, NULL, 'c'},
		{"memory", required_argument, NULL, 'm'}, {"disk", required_argument, NULL, 'd'},
		{"env", required_argument, NULL, 'e'}, {"cwd", required_argument, NULL, 'w'},
		{"user", required_argument, NULL, 'u'}, {"max-size", required_argument, NULL, 'S'},
		{"max-files", required_argument, NULL, 'F'}, {"start-cmd", required_argument, NULL, 's'},
		{"ready-cmd", required_argument, NULL, 'r'}, {"ready-timeout", required_argument, NULL, 'R'},
		{"recipe", required_argument, NULL, 'H'}, {"help", no_argument, NULL, 'h'}, {0},
	};
	struct hu_tpl_build b = {.init_fd = -1};
	const char *data_dir = NULL;
	char dir[PATH_MAX];
	int sources = 0, c, rc = 1;
	hu_err err = {0};

	hu_tpl_meta_init(&b.meta);
	b.meta.envs = json_object();
	b.meta.is_public = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': b.source = HU_TPL_FROM_DIR; b.path = optarg; sources++; break;
		case 't': b.source = HU_TPL_FROM_TAR; b.path = optarg; sources++; break;
		case 'o': b.source = HU_TPL_FROM_OCI; b.path = optarg; sources++; break;
		case 'D': data_dir = optarg; break;
		case 'T':
			if (!*optarg || strlen(optarg) >= sizeof(b.meta.team)) {
				cli_error("--team: 1 to %zu characters", sizeof(b.meta.team) - 1);
				goto out;
			}
			snprintf(b.meta.team, sizeof(b.meta.team), "%s", optarg);
			b.meta.is_public = 0;
			break;
		case 'c': if (parse_cpu(optarg, &b.meta.cpu_millis) < 0) goto out; break;
		case 'm': if (parse_mib(optarg, &b.meta.memory_bytes, "--memory") < 0) goto out; break;
		case 'd': if (parse_mib(optarg, &b.meta.disk_bytes, "--disk") < 0) goto out; break;
		case 'S': if (parse_mib(optarg, &b.caps.max_bytes, "--max-size") < 0) goto out; break;
		case 'F':
			if (hu_parse_u64(optarg, &b.caps.max_files, &err) < 0 || !b.caps.max_files) {
				cli_error("--max-files: expected a positive number, got '%s'", optarg);
				goto out;
			}
			break;
		case 'e': {
			const char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg || eq - optarg > 255) {
				cli_error("--env: expected K=V, got '%s'", optarg);
				goto out;
			}
			char key[256];
			snprintf(key, sizeof(key), "%.*s", (int)(eq - optarg), optarg);
			json_object_set_new(b.meta.envs, key, json_string(eq + 1));
			break;
		}
		case 'w':
			if (optarg[0] != '/' || strlen(optarg) >= sizeof(b.meta.cwd)) {
				cli_error("--cwd: an absolute path of at most %zu bytes", sizeof(b.meta.cwd) - 1);
				goto out;
			}
			snprintf(b.meta.cwd, sizeof(b.meta.cwd), "%s", optarg);
			break;
		case 'u':
			if (!*optarg || strlen(optarg) >= sizeof(b.meta.user)) {
				cli_error("--user: 1 to %zu characters", sizeof(b.meta.user) - 1);
				goto out;
			}
			snprintf(b.meta.user, sizeof(b.meta.user), "%s", optarg);
			break;
		case 's':
		case 'r': {
			char *dst = c == 's' ? b.meta.start_cmd : b.meta.ready_cmd;
			if (!*optarg || strlen(optarg) >= HU_TPL_CMD_MAX) {
				cli_error("--%s: 1 to %d bytes", c == 's' ? "start-cmd" : "ready-cmd", HU_TPL_CMD_MAX - 1);
				goto out;
			}
			snprintf(dst, HU_TPL_CMD_MAX, "%s", optarg);
			break;
		}
		case 'R': {
			uint64_t n;
			if (hu_parse_u64(optarg, &n, &err) < 0 || n == 0 || n > 3600) {
				cli_error("--ready-timeout: 1 to 3600 seconds");
				goto out;
			}
			b.meta.ready_timeout_s = (uint32_t)n;
			break;
		}
		case 'H':
			if (!*optarg || strlen(optarg) > 64 || strspn(optarg, "0123456789abcdef") != strlen(optarg)) {
				cli_error("--recipe: 1 to 64 of [0-9a-f]");
				goto out;
			}
			snprintf(b.meta.recipe, sizeof(b.meta.recipe), "%s", optarg);
			break;
		case 'h': usage(stdout); rc = 0; goto out;
		default: usage(stderr); rc = 2; goto out;
		}
	}
	if (optind != argc - 1 || sources != 1) {
		usage(stderr);
		rc = 2;
		goto out;
	}
	snprintf(b.meta.id, sizeof(b.meta.id), "%.63s", argv[optind]);
	if (strlen(argv[optind]) >= sizeof(b.meta.id)) {
		cli_error("template name too long");
		goto out;
	}
	templates_dir(data_dir, dir, sizeof(dir));
	b.templates_dir = dir;
	b.init_fd = open_init();
	if (hu_tpl_build(&b, &err) < 0) {
		cli_error("%s", err.msg);
		goto out;
	}
	printf("template %s built: %llu files, %llu bytes\n", b.meta.id, (unsigned long long)b.meta.files,
	       (unsigned long long)b.meta.size_bytes);
	rc = 0;
out:
	if (b.init_fd >= 0)
		close(b.init_fd);
	hu_tpl_meta_free(&b.meta);
	return rc;
}

static int print_one(const struct hu_tpl_meta *m, void *arg)
{
	printf("%-24s %-6s %-8s %s\n", m->id, m->source, m->is_public ? "public" : "team", m->team);
	return 0;
}

static int list(int argc, char **argv)
{
	static const struct option opts[] = {{"data-dir", required_argument, NULL, 'D'}, {0}};
	const char *data_dir = NULL;
	char dir[PATH_MAX];
	hu_err err;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'D') {
			usage(stderr);
			return 2;
		}
		data_dir = optarg;
	}
	templates_dir(data_dir, dir, sizeof(dir));
	printf("%-24s %-6s %-8s %s\n", "TEMPLATE", "SOURCE", "ACCESS", "TEAM");
	if (hu_tpl_list(dir, print_one, NULL, &err) < 0) {
		cli_error("%s", err.msg);
		return 1;
	}
	return 0;
}

int cmd_template(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "build"))
		return build(argc - 1, argv + 1);
	if (!strcmp(argv[1], "ls"))
		return list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "rm"))
		return cmd_template_rm(argc - 1, argv + 1);
	cli_error("unknown template command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
