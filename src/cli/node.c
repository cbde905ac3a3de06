/*
 * hutch node list | drain NAME | undrain NAME | remove NAME
 *            [--data-dir DIR] [--config FILE] [--store URI]
 *
 * The nodes of a store that several `hutch serve` share (PostgreSQL). A
 * drained node takes no new placements and keeps serving what it has, so an
 * operator drains, waits for `list` to show no sandboxes on it, stops it and
 * removes it. These work on the store itself, from any host that reaches it,
 * whether or not the node runs.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/store_flags.h"
#include "daemon/store/store.h"

#define EXIT_USAGE 2

static void node_usage(FILE *f)
{
	fprintf(f, "usage: hutch node list | drain NAME | undrain NAME | remove NAME\n"
		   "                  [--data-dir DIR] [--config FILE] [--store URI]\n\n"
		   "The nodes of a shared (PostgreSQL) store:\n"
		   "  list           every node: address, lease, draining, its admission budgets\n"
		   "  drain NAME     no new placements on NAME; its sandboxes run on\n"
		   "  undrain NAME   NAME takes placements again\n"
		   "  remove NAME    forget a stopped node (its lease expired) that owns no sandbox\n\n" CLI_STORE_FLAGS_HELP);
}

static void print_node(const struct hu_node *n, void *arg)
{
	int *count = arg;

	(*count)++;
	printf("%-24s %-28s %s %5" PRId64 " s%s  memory %" PRIu64 " MiB, cpu %" PRIu64 " m, pids %" PRIu64 "\n",
	       n->name, n->address, n->alive ? "lease live,    " : "lease expired, ",
	       (n->lease_left_ms < 0 ? -n->lease_left_ms : n->lease_left_ms) / 1000, n->alive ? " left" : " ago ",
	       n->memory_bytes >> 20, n->cpu_millis, n->pids);
	if (n->draining)
		printf("%-24s draining: takes no new placements\n", "");
}

int cmd_node(int argc, char **argv)
{
	struct hu_config cfg;
	struct hu_store *st = NULL;
	const char *verb, *name = NULL;
	int rc = 0, count = 0;
	hu_err err;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		node_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	verb = argv[1];
	bool takes_name = !strcmp(verb, "drain") || !strcmp(verb, "undrain") || !strcmp(verb, "remove");
	if (!takes_name && strcmp(verb, "list")) {
		cli_error("unknown node command '%s'", verb);
		node_usage(stderr);
		return EXIT_USAGE;
	}
	hu_config_defaults(&cfg);
	for (int i = 2; i < argc; i++) {
		int taken = cli_store_flag(argc, argv, &i, &cfg);
		if (taken < 0)
			return EXIT_USAGE;
		if (taken)
			continue;
		if (takes_name && !name && argv[i][0] != '-') {
			name = argv[i];
			continue;
		}
		cli_error("node %s: unexpected argument '%s'", verb, argv[i]);
		return EXIT_USAGE;
	}
	if (takes_name && !name) {
		cli_error("node %s needs the node's NAME (hutch node list shows them)", verb);
		return EXIT_USAGE;
	}
	if (hu_store_open(hu_config_store_location(&cfg), &st, &err) < 0) {
		cli_error("%s", err.msg);
		return 1;
	}
	if (!strcmp(verb, "list"))
		rc = hu_store_node_each(st, print_node, &count, &err);
	else if (!strcmp(verb, "remove"))
		rc = hu_store_node_remove(st, name, &err);
	else
		rc = hu_store_node_set_draining(st, name, !strcmp(verb, "drain"), &err);
	hu_store_close(st);
	if (rc < 0) {
		cli_error("node %s: %s", verb, err.msg);
		return 1;
	}
	if (!strcmp(verb, "list") && !count)
		printf("no nodes have registered in this store yet\n");
	else if (!strcmp(verb, "drain"))
		printf("node %s is draining: it takes no new placements; its sandboxes run on\n", name);
	else if (!strcmp(verb, "undrain"))
		printf("node %s takes placements again\n", name);
	else if (!strcmp(verb, "remove"))
		printf("node %s removed from the store\n", name);
	return 0;
}
