/* ops_name.c - the namespace: mknod, mkdir, symlink, link, unlink, rmdir,
 * rename, and readlink.
 *
 * Each runs as the caller (creds.h) with *at() calls relative to the
 * O_PATH fds of the inode table, never on path names from SOURCE, and
 * returns the backing's errno unchanged; what creates a name then looks it
 * up and replies its entry (ops_entry.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "fuse_internal.h"

void afs_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	char buf[PATH_MAX + 1];
	ssize_t n;

	if (!i)
		return;
	n = readlinkat(i->fd, "", buf, sizeof(buf));
	if (n < 0)
		n = -errno;
	afs_itable_put(&fs->itable, i);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
	} else if (n == sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
	} else {
		buf[n] = '\0';
		fuse_reply_readlink(req, buf);
	}
}

enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK };

/* mknod, mkdir, symlink: create as the caller, then look the name up. */
static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
		       enum make_kind kind, mode_t mode, dev_t rdev,
		       const char *link)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *dir = afs_req_inode(req, parent);
	struct fuse_entry_param e;
	struct afs_creds c;
	int rc, res;

	if (!dir)
		return;
	rc = afs_req_creds_enter(req, &c, kind != MAKE_SYMLINK);
	if (rc)
		goto out_put;
	switch (kind) {
	case MAKE_NODE:
		res = mknodat(dir->fd, name, mode, rdev);
		break;
	case MAKE_DIR:
		res = mkdirat(dir->fd, name, mode);
		break;
	default:
		res = symlinkat(link, dir->fd, name);
		break;
	}
	rc = res ? -errno : 0;
	afs_creds_leave(&c);
	if (!rc)
		rc = afs_lookup_entry(fs, NULL, dir, name, &e);
out_put:
	afs_itable_put(&fs->itable, dir);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		afs_reply_entry(req, &e);
}

void afs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, dev_t rdev)
{
	make_entry(req, parent, name, MAKE_NODE, mode, rdev, NULL);
}

void afs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode)
{
	make_entry(req, parent, name, MAKE_DIR, mode, 0, NULL);
}

void afs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		    const char *name)
{
	make_entry(req, parent, name, MAKE_SYMLINK, 0, 0, link);
}

void afs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		 const char *newname)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_itable_get(&fs->itable, ino);
	struct afs_inode *dir = afs_itable_get(&fs->itable, newparent);
	char proc[AFS_PROCPATH_LEN];
	struct fuse_entry_param e;
	struct afs_creds c;
	struct stat st;
	int rc;

	if (!i || !dir) {
		rc = -ESTALE;
		goto out_put;
	}
	rc = afs_req_creds_enter(req, &c, false);
	if (rc)
		goto out_put;
	/* linkat(fd, "", AT_EMPTY_PATH) wants CAP_DAC_READ_SEARCH, which
	 * the caller's fsuid does not carry; the /proc link names the inode
	 * just as well. */
	afs_procpath(proc, i->fd);
	if (linkat(AT_FDCWD, proc, dir->fd, newname, AT_SYMLINK_FOLLOW))
		rc = -errno;
	afs_creds_leave(&c);
	if (!rc)
		rc = afs_stat(i, &st);
	if (!rc) {
		afs_itable_lookup_ref(&fs->itable, i);
		afs_fill_entry(fs, i, &st, &e);
	}
out_put:
	if (i)
		afs_itable_put(&fs->itable, i);
	if (dir)
		afs_itable_put(&fs->itable, dir);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		afs_reply_entry(req, &e);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			 int flags)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *dir = afs_req_inode(req, parent);
	struct afs_creds c;
	int rc;

	if (!dir)
		return;
	rc = afs_req_creds_enter(req, &c, false);
	if (!rc) {
		if (unlinkat(dir->fd, name, flags))
			rc = -errno;
		afs_creds_leave(&c);
	}
	afs_itable_put(&fs->itable, dir);
	fuse_reply_err(req, -rc);
}

void afs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

void afs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

void afs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname,
		   unsigned int flags)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *from = afs_itable_get(&fs->itable, parent);
	struct afs_inode *to = afs_itable_get(&fs->itable, newparent);
	struct afs_creds c;
	int rc;

	if (!from || !to) {
		rc = -ESTALE;
		goto out_put;
	}
	rc = afs_req_creds_enter(req, &c, false);
	if (rc)
		goto out_put;
	if (renameat2(from->fd, name, to->fd, newname, flags))
		rc = -errno;
	afs_creds_leave(&c);
out_put:
	if (from)
		afs_itable_put(&fs->itable, from);
	if (to)
		afs_itable_put(&fs->itable, to);
	fuse_reply_err(req, -rc);
}
