/* fhandle.h - backing file handles: which filesystems let a handle be
 * rebuilt from an inode number alone, a backing inode's generation, and
 * reopening an inode from (inode number, generation).
 *
 * aheadfs names a backing file by (backing filesystem, inode number,
 * generation).  Node ids carry only the inode number, so after the kernel
 * forgot an inode (NFS re-export) the daemon must rebuild a handle from it:
 * this works where the filesystem's handle layout is known --
 *   ext4: FILEID_INO32_GEN {u32 ino, u32 gen}; a generation of 0 skips
 *         ext4's generation check;
 *   xfs:  FILEID_INO32_GEN, or its 64-bit variant 0x81 {u64 ino, u32 gen}
 *         packed; xfs checks the generation, so it is read first with
 *         XFS_IOC_BULKSTAT (v5, Linux 5.4+, CAP_SYS_ADMIN).
 * Elsewhere no handle is rebuilt and the caller answers -ESTALE.  Either
 * way the kernel compares the generation the reopened inode has with the
 * one in its own handle, so a reused inode number is refused as stale.
 *
 * Concurrency: none kept; every function is a few system calls on the
 * descriptors it is given.
 */
#ifndef AFS_FHANDLE_H
#define AFS_FHANDLE_H

#include <stdbool.h>
#include <stdint.h>

/* How handles of one backing filesystem are rebuilt. */
struct afs_fhandle_fs {
	int type; /* handle type to rebuild, 0: handles cannot be rebuilt */
	bool gen_lookup; /* ask the filesystem for the generation first (xfs) */
};

/**
 * afs_fhandle_probe() - How handles on the filesystem of @dir_fd are
 * rebuilt from inode numbers.
 * @dir_fd: A real (not O_PATH) descriptor on a directory of that filesystem.
 *
 * Context: fstatfs() and name_to_handle_at() on @dir_fd.
 * Return: The way (type 0 where handles cannot be rebuilt).
 */
struct afs_fhandle_fs afs_fhandle_probe(int dir_fd);

/**
 * afs_fhandle_generation() - The backing inode's generation, read from its
 * file handle (ext4's and xfs's layouts).
 * @fd: Any descriptor on the inode, O_PATH included.
 *
 * Context: One name_to_handle_at() call.
 * Return: The generation, or 0 where the handle does not carry one.
 */
uint32_t afs_fhandle_generation(int fd);

/**
 * afs_fhandle_open() - Open backing inode @ino again from its number.
 * @mount_fd: A real descriptor on a directory of its filesystem (the one
 *	@fs was probed on).
 * @flags: open_by_handle_at() flags (O_PATH|O_NOFOLLOW|O_CLOEXEC ...).
 *
 * Context: open_by_handle_at() (CAP_DAC_READ_SEARCH); an ioctl on xfs.
 * Return: The new descriptor; -ESTALE where no handle can be rebuilt or the
 * inode is gone; -EMFILE or -ENFILE.
 */
int afs_fhandle_open(int mount_fd, const struct afs_fhandle_fs *fs,
		     uint64_t ino, int flags);

/**
 * afs_fhandle_decode() - The inode number and generation in a handle of
 * @type with @len bytes at @bytes, as name_to_handle_at() or fanotify
 * report it, for the layouts above (ext4's and xfs's).
 * Context: Pure.
 * Return: true and *@ino, *@gen; false for any other layout.
 */
bool afs_fhandle_decode(int type, const void *bytes, unsigned int len,
			uint64_t *ino, uint32_t *gen);

#endif /* AFS_FHANDLE_H */
