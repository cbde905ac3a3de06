/*
 * hutch template rm NAME [--data-dir DIR] [--force]
 *
 * Remove a template from the data dir, under the rules DELETE /templates
 * keeps: never `base`, never a template that a stored sandbox (running or
 * paused, or being created or killed) stands on, and nothing changed when
 * it refuses.
 *
 * It works on the data dir directly and only while no `hutch serve` or
 * `hutch run` uses that data dir (datadir_lock.h): a running daemon keeps
 * sandboxes the store does not list (warm pools, creates in flight) and
 * reads templates at any moment, and the API gives the operator no
 * credential of its own to ask it. So the command takes the data dir lock
 * exclusive and refuses while a daemon holds it; a daemon started meanwhile
 * waits the moment it takes. Sandboxes keep running while the daemon is
 * stopped and are in the store, so the in-use check still sees them.
 *
 * The template's name goes first (one rename to templates/.delete-<id>-<pid>,
 * which no reader lists), then its files: a crash in between leaves the
 * template whole or no template at all; leftovers are finished by the next
 * `template rm`. Nothing is followed: templates/<id> must be a real
 * directory, and the removal never crosses a symlink or a mount.
 */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/core/config.h"
#include "daemon/core/datadir_lock.h"
#include "daemon/store/store.h"
#include "template/template.h"
#include "util/cleanup.h"
#include "util/fileutil.h"

#define EXIT_USAGE 2
#define DELETE_PREFIX ".delete-"

static void rm_usage(FILE *f)
{
	fprintf(f, "usage: hutch template rm NAME [--data-dir DIR] [--config FILE] [--store URI] [--force]\n\n"
		   "Remove template NAME from the data dir. Stop `hutch serve` on that data dir first\n"
		   "(its sandboxes keep running); refused while any sandbox uses the template, and for\n"
		   "'base'.\n\n"
		   "  --data-dir DIR    the daemon's data dir (default $HUTCH_DATA_DIR or /var/lib/hutch)\n"
		   "  --config FILE     the daemon's config file, for its store (default <data-dir>/hutch.conf)\n"
		   "  --store URI       the daemon's store: sqlite or a postgresql:// URI\n"
		   "  --force           a template that does not exist is not an error (the safety\n"
		   "                    refusals still apply)\n");
}

/* Finish removals a crash interrupted (their names are no template). Only
 * called under the exclusive lock, so no other removal is running. */
static void sweep_deleted(int tdir)
{
	_cleanup_close_ int fd = dup(tdir);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	hu_err err;

	if (!d)
		return;
	fd = -1; /* owned by d */
	while ((de = readdir(d)) != NULL)
		if (!strncmp(de->d_name, DELETE_PREFIX, strlen(DELETE_PREFIX)) && hu_rm_at(tdir, de->d_name, &err) < 0)
			cli_error("warning: %s", err.msg);
	closedir(d);
}

/* The daemon's store, as its config says (--config FILE, else the data
 * dir's hutch.conf when it exists) or --store URI: "" for the data dir's
 * SQLite. A template counts as used when any sandbox of the store stands
 * on it, on any node: a shared store's nodes have templates of the same
 * names. */
static int store_of(const char *data_dir, const char *config, const char *store, char *out, size_t n, hu_err *err)
{
	struct hu_config cfg;
	char path[PATH_MAX];

	hu_config_defaults(&cfg);
	snprintf(path, sizeof(path), "%s/hutch.conf", data_dir);
	if (!config && access(path, F_OK) == 0)
		config = path;
	if ((config && hu_config_load_file(&cfg, config, err) < 0) ||
	    (store && hu_config_set(&cfg, "store", store, err) < 0))
		return -1;
	snprintf(out, n, "%s", cfg.store);
	return 0;
}

/* How many stored sandboxes use the template; a data dir without a store
 * has none (and gets no store from this). */
static int users(const char *data_dir, const char *store, const char *id, int *count, hu_err *err)
{
	char path[PATH_MAX];
	struct hu_store *st = NULL;

	*count = 0;
	snprintf(path, sizeof(path), "%s/hutch.db", data_dir);
	if (!store[0] && access(path, F_OK) < 0)
		return errno == ENOENT ? 0 : hu_err_sys(err, "access %s", path);
	if (hu_store_open(store[0] ? store : data_dir, &st, err) < 0)
		return -1;
	int rc = hu_store_template_users(st, id, count, err);
	hu_store_close(st);
	return rc;
}

static int absent(const char *tdir_path, const char *id, int force)
{
	if (force)
		return 0;
	cli_error("template '%s' not found in %s", id, tdir_path);
	return 1;
}

/* Everything after the arguments: 0 removed (or absent with --force), 1 refused. */
static int remove_template(const char *data_dir, const char *store, const char *id, int force)
{
	char tdir_path[PATH_MAX];
	struct stat stt;
	pid_t holder;
	hu_err err = {0};
	int n;

	snprintf(tdir_path, sizeof(tdir_path), "%s/templates", data_dir);
	_cleanup_close_ int tdir = open(tdir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tdir < 0 && errno == ENOENT)
		return absent(tdir_path, id, force);
	if (tdir < 0) {
		hu_err_sys(&err, "open %s", tdir_path);
		cli_error("%s", err.msg);
		return 1;
	}
	_cleanup_close_ int lock = hu_datadir_lock_exclusive(data_dir, &holder, &err);
	if (lock < 0) {
		if (err.code == EBUSY)
			cli_error("a hutch daemon or `hutch run` (pid %d) is using data dir %s: stop it first (its "
				  "sandboxes keep running), then run `hutch template rm %s` again",
				  (int)holder, data_dir, id);
		else
			cli_error("%s", err.msg);
		return 1;
	}
	if (fstatat(tdir, id, &stt, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return absent(tdir_path, id, force);
		hu_err_sys(&err, "stat %s/%s", tdir_path, id);
		cli_error("%s", err.msg);
		return 1;
	}
	if (!S_ISDIR(stt.st_mode)) {
		cli_error("%s/%s is not a directory (%s): refusing to remove it; no template is built that way, "
			  "look at it by hand", tdir_path, id, S_ISLNK(stt.st_mode) ? "a symlink" : "another file type");
		return 1;
	}
	if (users(data_dir, store, id, &n, &err) < 0) {
		cli_error("%s", err.msg);
		return 1;
	}
	if (n > 0) {
		cli_error("template '%s' is in use by %d sandbox%s (running or paused): kill %s first", id, n,
			  n == 1 ? "" : "es", n == 1 ? "it" : "them");
		return 1;
	}
	sweep_deleted(tdir);
	if (hu_tpl_delete(tdir_path, id, &err) < 0) {
		cli_error("%s", err.msg);
		return 1;
	}
	printf("template %s removed\n", id);
	return 0;
}

int cmd_template_rm(int argc, char **argv)
{
	static const struct option opts[] = {
		{"data-dir", required_argument, NULL, 'D'}, {"force", no_argument, NULL, 'f'},
		{"config", required_argument, NULL, 'c'}, {"store", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'}, {0},
	};
	const char *data_dir = getenv("HUTCH_DATA_DIR"), *config = NULL, *store_flag = NULL;
	char store[1024];
	hu_err err;
	int force = 0, c;

	if (!data_dir || !*data_dir)
		data_dir = "/var/lib/hutch";
	optind = 1;
	while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		switch (c) {
		case 'D': data_dir = optarg; break;
		case 'f': force = 1; break;
		case 'c': config = optarg; break;
		case 's': store_flag = optarg; break;
		case 'h': rm_usage(stdout); return 0;
		default: rm_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		rm_usage(stderr);
		return EXIT_USAGE;
	}
	const char *id = argv[optind];
	if (!strcmp(id, "base")) {
		cli_error("the built-in template 'base' cannot be removed");
		return 1;
	}
	/* the id is a single path component of [a-z0-9-]: no '/', no '..' */
	if (!hu_sandbox_id_valid(id)) {
		cli_error("'%.80s' is not a template id (1 to 63 of a-z, 0-9 and '-', not starting with '-')", id);
		return 1;
	}
	if (store_of(data_dir, config, store_flag, store, sizeof(store), &err) < 0) {
		cli_error("%s", err.msg);
		return EXIT_USAGE;
	}
	return remove_template(data_dir, store, id, force);
}
