/* bdi.c - the kernel's readahead on the FUSE mount (bdi.h). */
#include "bdi.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs/data/data.h"
#include "fuse_internal.h"
#include "log.h"

uint64_t afs_mount_readahead(uint64_t cg_limit)
{
	uint64_t ra = AFS_MOUNT_RA_MAX;

	if (cg_limit && cg_limit / AFS_MOUNT_RA_LIMIT_SHARE < ra) {
		ra = cg_limit / AFS_MOUNT_RA_LIMIT_SHARE &
		     ~(uint64_t)(CACHE_PAGE_SIZE - 1);
		if (ra < AFS_MOUNT_RA_MIN)
			ra = AFS_MOUNT_RA_MIN;
	}
	return ra;
}

/*
 * Set the kernel's readahead on the FUSE mount (afs_mount_readahead():
 * 512 KiB, less under a memory cgroup; the kernel's default for FUSE is
 * 128 KiB).  The kernel sets the mount's bdi readahead when it processes our
 * INIT reply (to the smaller of its default and what INIT offered), so this
 * runs on the first request after INIT.  The bdi is named by the mount's
 * device number, found in mountinfo (a stat() of the mountpoint would wait
 * for this very daemon).
 */
void afs_tune_bdi_once(struct afs_fs *fs)
{
	const struct afs_opts *o = fs->opts;
	unsigned long kb = afs_mount_readahead(afs_cgroup_mem_limit("")) >> 10;
	char line[4096], dev[64] = "", path[PATH_MAX];
	unsigned maj, min;
	FILE *f;

	if (__atomic_load_n(&fs->bdi_tuned, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&fs->bdi_tuned, true, __ATOMIC_RELAXED))
		return;
	f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* "id parent maj:min root mountpoint ..." (a mountpoint
		 * with spaces is octal-escaped there: then not found, and the
		 * kernel's default stays) */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min,
			   path) == 3 &&
		    !strcmp(path, o->mountpoint_real))
			snprintf(dev, sizeof(dev), "%u:%u", maj, min);
	}
	fclose(f);
	if (!*dev)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	f = fopen(path, "w");
	if (!f) {
		afs_log(LOG_WARNING,
			"cannot raise the mount's read_ahead_kb (%s): %s", path,
			strerror(errno));
		return;
	}
	if (fprintf(f, "%lu\n", kb) < 0 || fclose(f))
		afs_log(LOG_WARNING,
			"cannot raise the mount's read_ahead_kb (%s): %s", path,
			strerror(errno));
}
