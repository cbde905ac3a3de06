/* libarchive, loaded on first use (archive_lib.h). */
#include <archive.h>
#include <archive_entry.h>
#include <pthread.h>

#include "template/archive_lib.h"
#include "util/dynlib.h"

/* the real names again: the table is filled from them */
#undef archive_read_new
#undef archive_read_free
#undef archive_error_string
#undef archive_read_support_format_tar
#undef archive_read_support_format_gnutar
#undef archive_read_support_filter_gzip
#undef archive_read_support_filter_zstd
#undef archive_read_open_fd
#undef archive_read_next_header
#undef archive_read_data
#undef archive_entry_uid
#undef archive_entry_gid
#undef archive_entry_symlink
#undef archive_entry_size
#undef archive_entry_pathname
#undef archive_entry_mtime
#undef archive_entry_mode
#undef archive_entry_hardlink
#undef archive_write_new
#undef archive_write_free
#undef archive_write_set_format_pax_restricted
#undef archive_write_set_format_option
#undef archive_write_open
#undef archive_write_header
#undef archive_write_data
#undef archive_write_close
#undef archive_entry_new
#undef archive_entry_free
#undef archive_entry_clear
#undef archive_entry_set_pathname
#undef archive_entry_set_mode
#undef archive_entry_set_uid
#undef archive_entry_set_gid
#undef archive_entry_set_size
#undef archive_entry_set_mtime
#undef archive_entry_set_symlink

struct hu_archive_lib hu_archive_lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static hu_err load_err;

static void load(void)
{
#define HU_ARCHIVE_SYM(f) {#f, (void **)&hu_archive_lib.f},
	static const struct hu_dynsym syms[] = {HU_ARCHIVE_FUNCS(HU_ARCHIVE_SYM)};
#undef HU_ARCHIVE_SYM
	load_rc = hu_dynlib_open(HU_LIBARCHIVE_SONAME, syms, sizeof(syms) / sizeof(syms[0]), &load_err);
}

int hu_archive_lib_load(hu_err *err)
{
	pthread_once(&once, load);
	if (load_rc < 0)
		*err = load_err;
	return load_rc;
}
