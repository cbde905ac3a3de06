/*
 * hutch doctor [--json] [--config FILE]: what this host provides for sandboxes.
 *
 * Every check probes for real (a namespace is unshared, a mount is made, a
 * filter is loaded) instead of guessing from version numbers, because distros
 * patch, configure and disable features independently of the kernel version.
 * Anything that changes process or mount state runs in a forked child
 * (probe.h), so the doctor itself ends exactly as it started; every temporary
 * directory, group and descriptor is removed again.
 *
 * Each check is a small function that fills a struct doctor_result: a status,
 * a finding and, for warn/FAIL, what is disabled by the missing piece. FAIL is
 * reserved for what a sandbox cannot start without; the exit status is 1 when
 * any check FAILs, 0 otherwise (2 for a usage error).
 *
 * This file is the verb: its arguments, the table of checks in the order they
 * are reported, and the run. The checks live one group per file beside it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/doctor/doctor.h"
#include "util/cleanup.h"

/* The report's lines, in this order. */
static const struct {
	const char *name;
	doctor_check_fn *fn;
} checks[] = {
	{"running as root", doctor_check_root},
	{"user namespaces", doctor_check_userns},
	{"namespaces", doctor_check_namespaces},
	{"idmapped mounts", doctor_check_idmap},
	{"overlayfs", doctor_check_overlay},
	{"overlay in user namespace", doctor_check_overlay_userns},
	{"tmpfs size limit", doctor_check_tmpfs},
	{"cgroups", doctor_check_cgroups},
	{"cgroup swap accounting", doctor_check_cg_swap},
	{"cgroup2 freeze/kill/clone3", doctor_check_cg2_features},
	{"block I/O limits", doctor_check_block_io},
	{"pressure stall info", doctor_check_psi},
	{"seccomp", doctor_check_seccomp},
	{"core dumps", doctor_check_core_pattern},
	{"Landlock", doctor_check_landlock},
	{"memory", doctor_check_memory},
	{"resource floor", doctor_check_floor},
	{"file descriptors", doctor_check_nofile},
	{"sandbox capacity", doctor_check_capacity},
	{"capped volumes", doctor_check_volumes},
	{"writable layers", doctor_check_storage},
	{"run dir", doctor_check_run_dir},
	{"store", doctor_check_store},
	{"IPv6", doctor_check_ipv6},
	{"kernel", doctor_check_kernel},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hutch doctor [--json] [--config FILE]\n\n"
		   "Check what this host provides for sandboxes (run as root). Each line is\n"
		   "ok, warn or FAIL; FAIL means sandboxes cannot start. Exit status 0 when\n"
		   "nothing FAILs, 1 otherwise.\n\n"
		   "  --json          print the results as one JSON object\n"
		   "  --config FILE   the configuration `hutch serve` uses (for the IPv6 and\n"
		   "                  store checks; default: what `hutch serve` reads without flags)\n");
}

struct options {
	bool json;
	const char *config_path; /* NULL: what `hutch serve` reads without flags */
};

/* 0 to run, 1 when --help was answered, -1 on a usage error (reported). */
static int parse_args(int argc, char **argv, struct options *opt)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			opt->json = true;
		} else if (!strcmp(argv[i], "--config") && i + 1 < argc) {
			opt->config_path = argv[++i];
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 1;
		} else {
			cli_error("doctor: unknown %s '%s' (usage: hutch doctor [--json] [--config FILE])",
				  argv[i][0] == '-' ? "option" : "argument", argv[i]);
			return -1;
		}
	}
	return 0;
}

/* Run every check in table order into res[], counting each status. */
static void run_checks(const struct doctor_ctx *cx, struct doctor_result *res, int count[3])
{
	for (size_t i = 0; i < HU_ARRAY_LEN(checks); i++) {
		res[i].status = DOCTOR_OK;
		res[i].name = checks[i].name;
		checks[i].fn(cx, &res[i]);
		count[res[i].status]++;
	}
}

int cmd_doctor(int argc, char **argv)
{
	struct options opt = {.json = false, .config_path = NULL};
	struct doctor_ctx cx;
	int count[3] = {0, 0, 0};

	int parsed = parse_args(argc, argv, &opt);
	if (parsed != 0)
		return parsed > 0 ? 0 : 2;
	struct doctor_result *res = calloc(HU_ARRAY_LEN(checks), sizeof(*res));
	if (!res) {
		cli_error("doctor: out of memory");
		return 1;
	}
	doctor_ctx_init(&cx);
	cx.config_path = opt.config_path;
	run_checks(&cx, res, count);
	doctor_ctx_fini(&cx);
	if (opt.json)
		doctor_print_json(res, HU_ARRAY_LEN(checks), count);
	else
		doctor_print_text(res, HU_ARRAY_LEN(checks), count);
	free(res);
	fflush(stdout);
	return count[DOCTOR_FAIL] ? 1 : 0;
}
