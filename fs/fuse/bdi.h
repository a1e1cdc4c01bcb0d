/* bdi.h - the kernel's own readahead on the FUSE mount (its backing device
 * info's read_ahead_kb, docs/tuning.md): the policy and the code that
 * applies it, together.
 *
 * Concurrency: afs_mount_readahead() is pure; afs_tune_bdi_once() runs its
 * work once per mount (fs->bdi_tuned, an atomic exchange), from whichever
 * request handler comes first after INIT.
 */
#ifndef AFS_FUSE_BDI_H
#define AFS_FUSE_BDI_H

#include <stdint.h>

struct afs_fs;

/*
 * The kernel's readahead on the mount in kernel read mode (the bdi's
 * read_ahead_kb, docs/tuning.md): AFS_MOUNT_RA_MAX, 512 KiB, so that its
 * readahead comes in large asynchronous READs (of up to 512 KiB, half the
 * largest request, AFS_DATA_MAX_REQUEST) that aheadfs's windows are ahead
 * of; not more, because every page of it is held twice while it waits for its
 * reader (in the mount's page cache, and in aheadfs's window behind it) and
 * is what a memory limit evicts first.  Under a memory cgroup, its limit
 * over AFS_MOUNT_RA_LIMIT_SHARE (2048 readers each holding two windows in
 * half the limit), at least the kernel's own default for FUSE.  A reader's
 * window is fixed when it opens the file (the kernel copies the bdi's value
 * into the open file), so it cannot follow the number of readers: it is
 * sized for many.  Measured, a column scan of 2048 rows through one
 * descriptor read from the device 1.38x what it delivered with 512 KiB in a
 * 2 GiB cgroup and 1.00x (the backing's own) with 256 KiB; in 1 GiB 1.5x
 * with 512 KiB and 1.17x with 128 KiB; a lone stream pays with smaller
 * requests (docs/design.md, "The kernel's readahead on the mount").
 */
#define AFS_MOUNT_RA_MAX (UINT64_C(512) << 10)
#define AFS_MOUNT_RA_MIN (UINT64_C(128) << 10)
#define AFS_MOUNT_RA_LIMIT_SHARE 8192

/**
 * afs_mount_readahead() - The mount's readahead in bytes for a memory
 * cgroup limit @cg_limit (0: none): see AFS_MOUNT_RA_MAX.  A multiple of
 * 4 KiB in [AFS_MOUNT_RA_MIN, AFS_MOUNT_RA_MAX].
 * Context: Pure.
 */
uint64_t afs_mount_readahead(uint64_t cg_limit);

/**
 * afs_tune_bdi_once() - Raise the mount's read_ahead_kb, on the first call.
 *
 * Context: A request handler after INIT (the kernel resets the value when it
 * processes INIT); one atomic load on later calls.
 */
void afs_tune_bdi_once(struct afs_fs *fs);

#endif /* AFS_FUSE_BDI_H */
