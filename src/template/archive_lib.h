/*
 * libarchive, loaded on first use (util/dynlib.h): the reader functions
 * tpl_archive.c calls and the writer functions tpl_export.c calls, through a table filled by hu_archive_lib_load().
 * Include after <archive.h> and <archive_entry.h>; the macros below send the
 * usual names to the table, so the calling code reads as plain libarchive.
 */
#ifndef HUTCH_TEMPLATE_ARCHIVE_LIB_H
#define HUTCH_TEMPLATE_ARCHIVE_LIB_H

#include <archive.h>
#include <archive_entry.h>

#include "util/err.h"

#define HU_ARCHIVE_FUNCS(X)                                                                                  \
	X(archive_read_new) X(archive_read_free) X(archive_error_string) X(archive_read_support_format_tar)   \
	X(archive_read_support_format_gnutar) X(archive_read_support_filter_gzip)                             \
	X(archive_read_support_filter_zstd) X(archive_read_open_fd) X(archive_read_next_header)               \
	X(archive_read_data) X(archive_entry_uid) X(archive_entry_gid) X(archive_entry_symlink)               \
	X(archive_entry_size) X(archive_entry_pathname) X(archive_entry_mtime) X(archive_entry_mode)          \
	X(archive_entry_hardlink)                                                                             \
	/* the writer of the template transfer stream (tpl_export.c) */                                        \
	X(archive_write_new) X(archive_write_free) X(archive_write_set_format_pax_restricted)                  \
	X(archive_write_set_format_option)                                                                    \
	X(archive_write_open) X(archive_write_header) X(archive_write_data) X(archive_write_close)             \
	X(archive_entry_new) X(archive_entry_free) X(archive_entry_clear) X(archive_entry_set_pathname)        \
	X(archive_entry_set_mode) X(archive_entry_set_uid) X(archive_entry_set_gid)                            \
	X(archive_entry_set_size) X(archive_entry_set_mtime) X(archive_entry_set_symlink)

#define HU_ARCHIVE_SLOT(f) __typeof__(f) *f;
struct hu_archive_lib {
	HU_ARCHIVE_FUNCS(HU_ARCHIVE_SLOT)
};
#undef HU_ARCHIVE_SLOT
extern struct hu_archive_lib hu_archive_lib;

/* Load libarchive once per process (thread-safe); -1 if it cannot be. */
int hu_archive_lib_load(hu_err *err);

#define archive_read_new (hu_archive_lib.archive_read_new)
#define archive_read_free (hu_archive_lib.archive_read_free)
#define archive_error_string (hu_archive_lib.archive_error_string)
#define archive_read_support_format_tar (hu_archive_lib.archive_read_support_format_tar)
#define archive_read_support_format_gnutar (hu_archive_lib.archive_read_support_format_gnutar)
#define archive_read_support_filter_gzip (hu_archive_lib.archive_read_support_filter_gzip)
#define archive_read_support_filter_zstd (hu_archive_lib.archive_read_support_filter_zstd)
#define archive_read_open_fd (hu_archive_lib.archive_read_open_fd)
#define archive_read_next_header (hu_archive_lib.archive_read_next_header)
#define archive_read_data (hu_archive_lib.archive_read_data)
#define archive_entry_uid (hu_archive_lib.archive_entry_uid)
#define archive_entry_gid (hu_archive_lib.archive_entry_gid)
#define archive_entry_symlink (hu_archive_lib.archive_entry_symlink)
#define archive_entry_size (hu_archive_lib.archive_entry_size)
#define archive_entry_pathname (hu_archive_lib.archive_entry_pathname)
#define archive_entry_mtime (hu_archive_lib.archive_entry_mtime)
#define archive_entry_mode (hu_archive_lib.archive_entry_mode)
#define archive_entry_hardlink (hu_archive_lib.archive_entry_hardlink)

#define archive_write_new (hu_archive_lib.archive_write_new)
#define archive_write_free (hu_archive_lib.archive_write_free)
#define archive_write_set_format_pax_restricted (hu_archive_lib.archive_write_set_format_pax_restricted)
#define archive_write_set_format_option (hu_archive_lib.archive_write_set_format_option)
#define archive_write_open (hu_archive_lib.archive_write_open)
#define archive_write_header (hu_archive_lib.archive_write_header)
#define archive_write_data (hu_archive_lib.archive_write_data)
#define archive_write_close (hu_archive_lib.archive_write_close)
#define archive_entry_new (hu_archive_lib.archive_entry_new)
#define archive_entry_free (hu_archive_lib.archive_entry_free)
#define archive_entry_clear (hu_archive_lib.archive_entry_clear)
#define archive_entry_set_pathname (hu_archive_lib.archive_entry_set_pathname)
#define archive_entry_set_mode (hu_archive_lib.archive_entry_set_mode)
#define archive_entry_set_uid (hu_archive_lib.archive_entry_set_uid)
#define archive_entry_set_gid (hu_archive_lib.archive_entry_set_gid)
#define archive_entry_set_size (hu_archive_lib.archive_entry_set_size)
#define archive_entry_set_mtime (hu_archive_lib.archive_entry_set_mtime)
#define archive_entry_set_symlink (hu_archive_lib.archive_entry_set_symlink)

#endif
