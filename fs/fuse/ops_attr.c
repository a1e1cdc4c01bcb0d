/* ops_attr.c - attributes and checks: getattr, setattr (with the kernel's
 * kill-privilege SETATTR served as the backing's own write would), statfs,
 * access.
 *
 * Calls that change something run with the caller's credentials
 * (creds.h).  Where a call has no *at() form that takes an O_PATH fd
 * (chmod, truncate, utimes, access), it goes through /proc/self/fd/N,
 * which names the inode itself.  No attribute is kept: every getattr asks
 * the backing.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs/data/data.h"
#include "fuse_internal.h"

void afs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);

	afs_tune_bdi_once(fs);
	struct stat st;
	int rc;

	if (!i)
		return;
	rc = afs_stat(i, &st);
	/* Close-to-open plus: a change behind the mount seen here drops
	 * aheadfs's pages (what direct-mode reads and the kernel's next misses
	 * get); the kernel's own pages go at the next open. */
	if (!rc && S_ISREG(i->type)) {
		struct afs_fcache *fc = afs_inode_fc(i);

		if (fc) {
			afs_fcache_revalidate(fc, &st);
			afs_tell_changes(fs, i, fc);
		}
	}
	afs_itable_put(&fs->itable, i);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

/* @io_fd: the inode's own descriptor for an ftruncate() through an open
 * file that has no handle (opens=none), or -1. */
static int do_setattr(struct afs_inode *i, struct stat *attr, int valid,
		      struct fuse_file_info *fi, int io_fd)
{
	char proc[AFS_PROCPATH_LEN];
	int fd = io_fd;

	/* Only truncation carries an open file, and only regular files have
	 * a struct afs_file in fh (a directory's is a struct afs_dir). */
	if (fi && fi->fh && S_ISREG(i->type))
		fd = afs_fi_fd(fi);
	afs_procpath(proc, i->fd);
	if (valid & FUSE_SET_ATTR_MODE) {
		if (fd >= 0 ? fchmod(fd, attr->st_mode)
			    : chmod(proc, attr->st_mode))
			return -errno;
	}
	if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid =
			valid & FUSE_SET_ATTR_UID ? attr->st_uid : (uid_t)-1;
		gid_t gid =
			valid & FUSE_SET_ATTR_GID ? attr->st_gid : (gid_t)-1;

		if (fchownat(i->fd, "", uid, gid,
			     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			return -errno;
	}
	if (valid & FUSE_SET_ATTR_SIZE) {
		if (fd >= 0 ? ftruncate(fd, attr->st_size)
			    : truncate(proc, attr->st_size))
			return -errno;
		/* Pages past the new end (and the one holding it) go; an
		 * O_PATH fd is enough for the fstat of the new identity. */
		afs_fcache_changed(afs_inode_fc(i), fd >= 0 ? fd : i->fd,
				   (uint64_t)attr->st_size, 0, true);
	}
	if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT},
					 {.tv_nsec = UTIME_OMIT}};

		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		if (fd >= 0 ? futimens(fd, tv)
			    : utimensat(AT_FDCWD, proc, tv, 0))
			return -errno;
	}
	return 0;
}

/*
 * Kill privileges.  On a write, truncate or chown of a regular file by a
 * caller without CAP_FSETID the kernel clears setuid (and setgid with group
 * execute) itself, with a SETATTR of the mode less those bits, alone
 * (before a WRITE) or beside the size or the owner.  Performed as the
 * caller, that chmod fails with EPERM for anyone but the owner, where the
 * backing's own write, truncate or chown succeeds and clears the bits.
 * kill_bits() recognises the shape: a mode that is the file's current
 * mode less some of S_ISUID and S_ISGID, nothing else changed; those bits
 * are cleared after the rest of the request succeeded (the backing may
 * have cleared them already: a truncate or chown as the caller does) and
 * never set again.  Where the caller may not chmod, the daemon clears
 * them with its own rights when the request carries the truncate or chown
 * that earned the clearing, or, for the mode alone (a write's), when the
 * caller may write the file: such a caller could clear the bits on the
 * backing with any write, so it gains nothing.  (A chmod u-s by such a
 * caller with no_default_permissions looks the same and succeeds; with
 * default_permissions the kernel refuses it first.)  security.capability
 * the kernel removes with a REMOVEXATTR, the backing on a write.
 */
static mode_t kill_bits(const struct afs_inode *i, const struct stat *attr,
			int valid)
{
	struct stat st;
	mode_t kill;

	if (!(valid & FUSE_SET_ATTR_MODE) || !S_ISREG(i->type) ||
	    fstatat(i->fd, "", &st, AT_EMPTY_PATH))
		return 0;
	kill = st.st_mode & (S_ISUID | S_ISGID) & ~attr->st_mode;
	if (!kill || (attr->st_mode & 07777) != (st.st_mode & 07777 & ~kill))
		return 0;
	return kill;
}

/* As the caller: clear @kill.  Return 0 (done), 1 (the daemon must clear
 * them with its rights, into *@mode) or -errno. */
static int kill_as_caller(struct afs_inode *i, mode_t kill, int valid,
			  mode_t *mode)
{
	char proc[AFS_PROCPATH_LEN];
	struct stat st;

	if (fstatat(i->fd, "", &st, AT_EMPTY_PATH))
		return -errno;
	if (!(st.st_mode & kill))
		return 0;
	*mode = st.st_mode & 07777 & ~kill;
	afs_procpath(proc, i->fd);
	if (!chmod(proc, *mode))
		return 0;
	if (errno != EPERM)
		return -errno;
	if (valid &
	    (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		return 1;
	return faccessat(AT_FDCWD, proc, W_OK, AT_EACCESS) ? -EPERM : 1;
}

void afs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		    int valid, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	struct afs_fcache *fc;
	struct afs_creds c;
	struct stat st;
	mode_t kill, mode = 0;
	int rc, times = 0, io_fd = -1;

	if (!i)
		return;
	kill = kill_bits(i, attr, valid);
	if (kill)
		valid &= ~FUSE_SET_ATTR_MODE;
	/* With the writeback cache the kernel stamps a file's times itself
	 * and sends them on with SETATTR, in the context of whoever closes or
	 * syncs the file -- a caller who may write it but, not owning it, may
	 * not set its times explicitly.  The kernel has checked every SETATTR
	 * already (default_permissions), so the times are set as the daemon;
	 * the rest stays the caller's. */
	if (__atomic_load_n(&fs->writeback, __ATOMIC_ACQUIRE) &&
	    fs->default_permissions)
		times = valid &
			(FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			 FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW);
	/* ftruncate() through a file opened with no OPEN (opens=none): the
	 * kernel checked the descriptor's write access when it was opened, as
	 * it does for every open under opens=none -- a descriptor made with
	 * O_CREAT and mode 0 may be truncated.  The path, opened again as the
	 * caller, would not be: truncate through the inode's own read-write
	 * descriptor, still as the caller (who clears setuid and setgid as the
	 * backing would). */
	if (fi && !fi->fh && S_ISREG(i->type) && (valid & FUSE_SET_ATTR_SIZE)) {
		io_fd = afs_inode_io_fd(fs, i);
		if (io_fd >= 0 &&
		    __atomic_load_n(&i->io_wr_err, __ATOMIC_ACQUIRE))
			io_fd = -1; /* read-only: the path, as before */
	}
	/* From the first change to the identity it leaves: the daemon's
	 * own, not one behind the mount (afs_fcache_outside()). */
	fc = S_ISREG(i->type) ? afs_inode_fc(i) : NULL;
	afs_fcache_own_begin(fc);
	rc = afs_req_creds_enter(req, &c, false);
	if (!rc) {
		rc = do_setattr(i, attr, valid & ~times, fi, io_fd);
		if (!rc && kill)
			rc = kill_as_caller(i, kill, valid, &mode);
		afs_creds_leave(&c);
	}
	if (rc == 1) {
		char proc[AFS_PROCPATH_LEN];

		afs_procpath(proc, i->fd);
		rc = chmod(proc, mode) ? -errno : 0;
	}
	if (!rc && times)
		rc = do_setattr(i, attr, times, fi, -1);
	if (!rc)
		rc = afs_stat(i, &st);
	/* Our own change of mode, owner or times moves ctime: take the new
	 * identity so it is not taken for a change behind the mount. */
	if (!rc && S_ISREG(i->type))
		afs_fcache_touched(afs_inode_fc(i), i->fd);
	afs_fcache_own_end(fc);
	afs_itable_put(&fs->itable, i);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

void afs_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	struct statvfs sv;
	int rc = 0;

	if (!i)
		return;
	if (fstatvfs(i->fd, &sv))
		rc = -errno;
	afs_itable_put(&fs->itable, i);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_statfs(req, &sv);
}

void afs_op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	char proc[AFS_PROCPATH_LEN];
	struct afs_creds c;
	int rc;

	if (!i)
		return;
	rc = afs_req_creds_enter(req, &c, false);
	if (!rc) {
		/* AT_EACCESS: check with the fs ids just switched to, not
		 * the daemon's real ids. */
		afs_procpath(proc, i->fd);
		if (faccessat(AT_FDCWD, proc, mask, AT_EACCESS))
			rc = -errno;
		afs_creds_leave(&c);
	}
	afs_itable_put(&fs->itable, i);
	fuse_reply_err(req, -rc);
}
