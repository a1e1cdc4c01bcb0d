/* read_mode.c - the names of enum afs_read_mode (data.h). */
#include "fs/data/data.h"

const char *const afs_read_mode_names[] = {
	[AFS_READ_KERNEL] = "kernel",
	[AFS_READ_DIRECT] = "direct",
	NULL,
};
