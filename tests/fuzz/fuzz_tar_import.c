// fuzz-sources: src/template/tpl_archive.c src/template/archive_lib.c src/template/tpl_write.c src/template/tpl_path.c
/*
 * libFuzzer driver for importing a tar layer into a template tree
 * (tpl_archive.c through tpl_write.c): the input is the archive (plain,
 * gzip or zstd). Whatever it holds, nothing may appear or change outside
 * the tree: beside the tree's root sits a canary directory that must stay
 * exactly as it was. Runs as root (the writer chowns).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "template/template.h"
#include "util/fileutil.h"

static char base[64];

static void remove_base(void)
{
	hu_err err;
	hu_rm_rf(base, &err);
}

static size_t count_entries(const char *dir)
{
	size_t n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	if (!d)
		abort();
	while ((de = readdir(d)) != NULL)
		n++;
	closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char root[128], canary[128], outside[128], buf[16];
	hu_err err;

	if (!base[0]) {
		snprintf(base, sizeof(base), "/tmp/hutch-fuzz-tar-%d", (int)getpid());
		mkdir(base, 0700);
		atexit(remove_base);
		snprintf(outside, sizeof(outside), "%s/outside", base);
		mkdir(outside, 0700);
		snprintf(canary, sizeof(canary), "%s/canary", outside);
		hu_write_file(canary, "ok", 2, O_CREAT | O_TRUNC, 0644, &err);
	}
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	snprintf(canary, sizeof(canary), "%s/canary", outside);
	mkdir(root, 0755);
	int fd = memfd_create("layer", MFD_CLOEXEC);
	if (fd < 0 || hu_write_all(fd, data, size) < 0)
		abort();
	struct hu_tpl_writer w = {.root = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
				  .caps = {.max_bytes = 1 << 20, .max_files = 2000}};
	if (w.root < 0)
		abort();
	hu_tpl_import_tar(&w, fd, &err);
	close(w.root);
	close(fd);
	/* only root/ and outside/ beside each other; the canary alone, unchanged */
	if (count_entries(base) != 4 || count_entries(outside) != 3 ||
	    hu_read_file(canary, buf, sizeof(buf), &err) != 2 || memcmp(buf, "ok", 2))
		abort();
	if (hu_rm_rf(root, &err) < 0)
		abort();
	return 0;
}
