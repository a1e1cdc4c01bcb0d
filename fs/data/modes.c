/* modes.c - the names of the data path's modes (data.h), as the options,
 * the stats and the docs spell them, and the defaults of its options (apart
 * from the data path, so that the option parser links without it:
 * tests/fuzz). */
#include <string.h>

#include "fs/data/data.h"

void afs_ahead_config_init(struct afs_ahead_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->write_behind = AFS_WRITE_BEHIND_DEFAULT;
	cfg->idle_files = AFS_IDLE_FILES_DEFAULT;
	cfg->ra.workers = RA_WORKERS_DEFAULT;
}

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
