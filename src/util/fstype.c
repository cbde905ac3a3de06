#include <linux/magic.h>

#include "util/fstype.h"

const char *hu_fs_type_name(unsigned long f_type)
{
	switch (f_type) {
	case EXT4_SUPER_MAGIC: return "ext4";
	case XFS_SUPER_MAGIC: return "xfs";
	case TMPFS_MAGIC: return "tmpfs";
	case BTRFS_SUPER_MAGIC: return "btrfs";
	case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
	default: return "an unknown file system";
	}
}
