/*
 * The name of a file system type as statfs(2) reports it, for messages that
 * tell an operator where something lives ("the data dir is on ext4").
 */
#ifndef HUTCH_UTIL_FSTYPE_H
#define HUTCH_UTIL_FSTYPE_H

/* "ext4", "xfs", "tmpfs", "btrfs", "overlayfs", or "an unknown file system". */
const char *hu_fs_type_name(unsigned long f_type);

#endif
