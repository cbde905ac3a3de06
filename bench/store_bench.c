/*
 * store_bench: what the store costs the daemon, per backend.
 *
 *   store_bench LOCATION [--n N] [--node]
 *
 * LOCATION is a data dir (SQLite) or a postgresql:// URI (a database the
 * bench may fill: it writes rows with ids "ibench-*" and deletes them).
 * --node registers as a node first (the fenced writes of a cluster).
 * Rows:
 *   key check       one API key lookup: every control-plane request
 *   create          the store writes of one create and one kill: the
 *                   `creating` row, the `running` row, the delete
 *   tick of 50      one lifecycle tick saving 50 moved deadlines in one group
 * Each prints the median and p90 over N runs, in microseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/store/store.h"

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	printf("%-14s median %8.1f us   p90 %8.1f us\n", what, v[n / 2], v[n * 9 / 10]);
}

static void row_init(struct hu_sandbox_row *r, int i)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "ibench-%d", i);
	snprintf(r->team, sizeof(r->team), "bench");
	snprintf(r->template_id, sizeof(r->template_id), "base");
	snprintf(r->access_token, sizeof(r->access_token), "%064d", i);
	r->state = HU_SBX_CREATING;
	r->started_at_ms = 1700000000000;
	r->end_at_ms = 1700000300000;
	r->timeout_s = 300;
	r->allow_internet = -1;
	r->cpu_millis = 1000;
	r->memory_bytes = 512u << 20;
	r->disk_bytes = 1u << 30;
}

int main(int argc, char **argv)
{
	struct hu_store *st;
	struct hu_sandbox_row rows[50];
	char key[128], team[64];
	int n = 200, node = 0;
	hu_err err;

	if (argc < 2) {
		fprintf(stderr, "usage: store_bench LOCATION [--n N] [--node]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--node"))
			node = 1;
	}
	if (n < 10)
		n = 10;
	double *v = calloc(n, sizeof(*v));
	if (!v || hu_store_open(argv[1], &st, &err) < 0) {
		fprintf(stderr, "store_bench: %s\n", v ? err.msg : "out of memory");
		return 1;
	}
	if (node) {
		struct hu_node self = {.name = "bench", .address = "http://127.0.0.1:1", .memory_bytes = 1,
				       .cpu_millis = 1, .pids = 1, .max_sandboxes = 1};
		int64_t gen;
		if (hu_store_node_register(st, &self, 600000, &gen, &err) < 0) {
			fprintf(stderr, "store_bench: %s\n", err.msg);
			return 1;
		}
	}
	printf("store_bench: %s backend, %d runs%s\n", hu_store_backend_name(st), n, node ? ", as a node" : "");
	if (hu_store_key_create(st, "bench", key, sizeof(key), &err) < 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		if (hu_store_key_team(st, key, team, sizeof(team), &err) < 0)
			goto fail;
		v[i] = now_us() - t0;
	}
	report("key check", v, n);
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		row_init(&rows[0], i);
		if (hu_store_sandbox_put(st, &rows[0], &err) < 0)
			goto fail;
		rows[0].state = HU_SBX_RUNNING;
		if (hu_store_sandbox_put(st, &rows[0], &err) < 0 || hu_store_sandbox_delete(st, rows[0].id, &err) < 0)
			goto fail;
		v[i] = now_us() - t0;
	}
	report("create", v, n);
	for (int j = 0; j < 50; j++) {
		row_init(&rows[j], 100000 + j);
		rows[j].state = HU_SBX_RUNNING;
		if (hu_store_sandbox_put(st, &rows[j], &err) < 0)
			goto fail;
	}
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		if (hu_store_begin(st, &err) < 0)
			goto fail;
		for (int j = 0; j < 50; j++) {
			rows[j].end_at_ms += 1000;
			if (hu_store_sandbox_put(st, &rows[j], &err) < 0)
				goto fail;
		}
		if (hu_store_commit(st, &err) < 0)
			goto fail;
		v[i] = now_us() - t0;
	}
	report("tick of 50", v, n);
	for (int j = 0; j < 50; j++)
		hu_store_sandbox_delete(st, rows[j].id, &err);
	hu_store_close(st);
	free(v);
	return 0;
fail:
	fprintf(stderr, "store_bench: %s\n", err.msg);
	hu_store_close(st);
	free(v);
	return 1;
}
