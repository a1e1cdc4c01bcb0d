/* ops_xattr.c - extended attributes: getxattr, setxattr, listxattr,
 * removexattr, passed through to the backing inode.
 *
 * The f*xattr() calls refuse O_PATH fds, so these go through
 * /proc/self/fd/N, which names the inode itself (a symlink's own
 * attributes for a symlink).  All four run as the caller: the backing then
 * decides what the caller may read and change (trusted.* needs
 * CAP_SYS_ADMIN, security.* and ACLs follow the backing's rules), exactly as
 * for a program on the backing.  POSIX ACLs travel as system.posix_acl_*
 * attributes; with FUSE_CAP_POSIX_ACL the kernel also enforces them.
 */
#include <errno.h>
#include <sys/xattr.h>

#include "fs/ahead.h"
#include "fs/fs_internal.h"

enum xattr_op { X_GET, X_SET, X_LIST, X_REMOVE };

struct xattr_args {
	const char *name;
	const char *value; /* X_SET */
	size_t size;
	int flags; /* X_SET */
};

static void xattr_common(fuse_req_t req, fuse_ino_t ino, enum xattr_op op,
			 const struct xattr_args *a)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	char proc[AFS_PROCPATH_LEN];
	char *buf = NULL;
	struct afs_creds c;
	ssize_t n = 0;
	int rc;

	if (!i)
		return;
	if ((op == X_GET || op == X_LIST) && a->size) {
		buf = afs_thread_buf(a->size);
		if (!buf) {
			rc = -ENOMEM;
			goto out_put;
		}
	}
	rc = afs_req_creds_enter(req, &c, false);
	if (rc)
		goto out_put;
	afs_procpath(proc, i->fd);
	switch (op) {
	case X_GET:
		n = getxattr(proc, a->name, buf, a->size);
		break;
	case X_SET:
		n = setxattr(proc, a->name, a->value, a->size, a->flags);
		break;
	case X_LIST:
		n = listxattr(proc, buf, a->size);
		break;
	case X_REMOVE:
		n = removexattr(proc, a->name);
		break;
	}
	if (n < 0)
		rc = -errno;
	afs_creds_leave(&c);
	/* A changed attribute moves ctime: not a change behind the mount. */
	if (!rc && (op == X_SET || op == X_REMOVE) && S_ISREG(i->type))
		afs_ahead_touched(__atomic_load_n(&i->fc, __ATOMIC_ACQUIRE),
				  i->fd);
out_put:
	afs_itable_put(&fs->itable, i);
	if (rc)
		fuse_reply_err(req, -rc);
	else if (op == X_SET || op == X_REMOVE)
		fuse_reply_err(req, 0);
	else if (a->size)
		fuse_reply_buf(req, buf, (size_t)n);
	else
		fuse_reply_xattr(req, (size_t)n);
}

void afs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		     size_t size)
{
	struct xattr_args a = {.name = name, .size = size};

	xattr_common(req, ino, X_GET, &a);
}

void afs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		     const char *value, size_t size, int flags)
{
	struct xattr_args a = {
		.name = name, .value = value, .size = size, .flags = flags};

	xattr_common(req, ino, X_SET, &a);
}

void afs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct xattr_args a = {.size = size};

	xattr_common(req, ino, X_LIST, &a);
}

void afs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct xattr_args a = {.name = name};

	xattr_common(req, ino, X_REMOVE, &a);
}
