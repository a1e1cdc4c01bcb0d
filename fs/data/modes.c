/* modes.c - the names of the data path's modes (data.h), as the options,
 * the stats and the docs spell them. */
#include "fs/data/data.h"

const char *const afs_read_mode_names[] = {
	[AFS_READ_KERNEL] = "kernel",
	[AFS_READ_DIRECT] = "direct",
	NULL,
};

const char *const afs_write_mode_names[] = {
	[AFS_WRITE_THROUGH] = "writethrough",
	[AFS_WRITE_BACK] = "writeback",
	NULL,
};
