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
 *
 * The user.aheadfs.* names (stats, map, advice, tunables: fs/stats/xattr.h)
 * are answered here and never reach the backing; listxattr leaves them out
 * even if the backing has such names of its own.  With default_permissions
 * the kernel already checked the caller's access (read for get, write for
 * set); without it, the daemon checks it as the caller.
 *
 * security.capability: the kernel asks for it before every write(2) to a
 * file (its kill-privilege check; only FUSE_HANDLE_KILLPRIV_V2, which
 * libfuse 3.14 cannot negotiate, would spare the round trip).  A regular
 * file known to have none is answered ENODATA at once, without switching
 * credentials or a backing call: the answer is kept per inode, valid while
 * the file's count of changes behind the mount stays where it was
 * (afs_fcache_changes()), and dropped by every setxattr and removexattr of
 * the name through the mount.  Every caller may read security.capability,
 * so the cached answer is the one the backing would give any of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fs/data/data.h"
#include "fs/data/tbuf.h"
#include "fuse_internal.h"
#include "uring.h"
#include "fs/stats/xattr.h"

enum xattr_op { X_GET, X_SET, X_LIST, X_REMOVE };

struct xattr_args {
	const char *name;
	const char *value; /* X_SET */
	size_t size;
	int flags; /* X_SET */
};

/* A user.aheadfs.* name: answered by the daemon from @i's cache state. */
static int xattr_ours(fuse_req_t req, struct afs_inode *i, enum xattr_op op,
		      const struct xattr_args *a, char *buf, ssize_t *n)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_xattr_target t = {0};
	struct afs_fcache *fc = NULL;
	struct stat st;
	int rc = 0;

	if (fstat(i->fd, &st))
		return -errno;
	t.is_root = i->nodeid == AFS_ROOT_NODEID;
	t.is_reg = S_ISREG(st.st_mode);
	t.shown_ino = afs_shown_ino(i);
	t.st = &st;
	t.warm = fs->warm;
	t.watch = fs->watch;
	afs_pt_stats(&fs->pt, &t.passthrough);
	afs_uring_stats(fs->uring, &t.transport);
	if (!fs->default_permissions) {
		char proc[AFS_PROCPATH_LEN];
		struct afs_creds c;

		afs_procpath(proc, i->fd);
		rc = afs_req_creds_enter(req, &c, false);
		if (rc)
			return rc;
		/* AT_EACCESS: as the caller's fsuid, fsgid and groups.
		 * access() would check as the real uid, root's, and let
		 * everyone read any file's stats and advise any file. */
		if (faccessat(AT_FDCWD, proc, op == X_GET ? R_OK : W_OK,
			      AT_EACCESS))
			rc = -errno;
		afs_creds_leave(&c);
		if (rc)
			return rc;
	}
	if (t.is_reg) {
		/* A file never opened gets its readahead side now (empty). */
		fc = afs_inode_fcache(fs, i, &st);
		if (!fc)
			return -ENOMEM;
		rc = afs_fcache_ra(fc, i->fd);
		if (rc)
			return rc;
		t.fc = fc;
		t.passthrough_opens = afs_pt_opens(&fs->pt, i);
	}
	switch (op) {
	case X_GET:
		*n = afs_xattr_ahead_get(fs->data, &t, a->name, buf, a->size);
		rc = *n < 0 ? (int)*n : 0;
		break;
	case X_SET:
		rc = afs_xattr_ahead_set(fs->data, &t, a->name, a->value,
					 a->size, a->flags,
					 fuse_req_ctx(req)->uid, getuid());
		break;
	case X_REMOVE:
		rc = afs_xattr_ahead_remove(&t, a->name);
		break;
	case X_LIST:
		rc = -EINVAL;
		break;
	}
	return rc;
}

#define XATTR_CAPABILITY "security.capability"

/* The inode's "no security.capability" answer, if still valid. */
static bool cap_known_absent(struct afs_inode *i)
{
	struct afs_fcache *fc = afs_inode_fc(i);
	uint64_t mark = __atomic_load_n(&i->nocap, __ATOMIC_ACQUIRE);

	return fc && mark && mark == afs_fcache_changes(fc) + 1;
}

/* After the backing's answer to @op on @name for @i. */
static void cap_note(struct afs_inode *i, enum xattr_op op, const char *name,
		     int rc)
{
	struct afs_fcache *fc = afs_inode_fc(i);

	if (!fc || !name || strcmp(name, XATTR_CAPABILITY))
		return;
	if (op == X_GET && rc == -ENODATA)
		__atomic_store_n(&i->nocap, afs_fcache_changes(fc) + 1,
				 __ATOMIC_RELEASE);
	else if (op == X_SET || op == X_REMOVE)
		__atomic_store_n(&i->nocap, 0, __ATOMIC_RELEASE);
}

/*
 * The kernel removes security.capability itself (kill-privilege) before a
 * write, truncate or chown reaches the daemon, for any caller, and with
 * no_default_permissions before it knows whether the truncate or chown is
 * allowed.  The serving thread keeps CAP_SETFCAP under the caller's fsuid,
 * so the removal would succeed for anyone: a stranger's refused chown or
 * truncate used to strip a file's capabilities.  The backing drops them
 * for a caller who may write the file or change its owner, as part of the
 * write, truncate or chown itself.  So for a caller who is not root, not
 * the owner and may not write the file, the removal is answered as done
 * and left to the backing's own call that follows: refused, it keeps the
 * capability and answers the backing's errno; a write by a caller whose
 * write access went after the open drops it on the backing anyway.  (A
 * removexattr(2) of it by such a caller reaches the daemon only when the
 * caller has CAP_SETFCAP, without being root: that one is not done.)
 */
static bool may_remove(fuse_req_t req, const char *name, const char *proc)
{
	uid_t uid = fuse_req_ctx(req)->uid;
	struct stat st;

	if (strcmp(name, "security.capability") || !afs_req_fs(req)->as_root ||
	    uid == 0)
		return true;
	if (!stat(proc, &st) && st.st_uid == uid)
		return true;
	return !faccessat(AT_FDCWD, proc, W_OK, AT_EACCESS);
}

static void xattr_common(fuse_req_t req, fuse_ino_t ino, enum xattr_op op,
			 const struct xattr_args *a)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	char proc[AFS_PROCPATH_LEN];
	struct afs_fcache *fc = NULL;
	char *buf = NULL;
	struct afs_creds c;
	ssize_t n = 0;
	int rc;

	if (!i)
		return;
	if (op == X_GET && S_ISREG(i->type) &&
	    !strcmp(a->name, XATTR_CAPABILITY) && cap_known_absent(i)) {
		rc = -ENODATA;
		goto out_put;
	}
	/* A list is always read whole: its size answer must leave out the
	 * aheadfs names too. */
	if ((op == X_GET && a->size) || op == X_LIST) {
		buf = afs_thread_buf(op == X_LIST ? AFS_XATTR_VALUE_MAX
						  : a->size);
		if (!buf) {
			rc = -ENOMEM;
			goto out_put;
		}
	}
	if (op != X_LIST && afs_xattr_ours(a->name)) {
		rc = xattr_ours(req, i, op, a, buf, &n);
		goto out_put;
	}
	/* A set or a removal, to the identity it leaves: the daemon's own
	 * change (afs_fcache_outside()). */
	if ((op == X_SET || op == X_REMOVE) && S_ISREG(i->type))
		fc = afs_inode_fc(i);
	afs_fcache_own_begin(fc);
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
		n = listxattr(proc, buf, AFS_XATTR_VALUE_MAX);
		if (n >= 0)
			n = (ssize_t)afs_xattr_ahead_filter_list(buf,
								 (size_t)n);
		if (n > 0 && a->size && (size_t)n > a->size) {
			errno = ERANGE;
			n = -1;
		}
		break;
	case X_REMOVE:
		n = may_remove(req, a->name, proc) ? removexattr(proc, a->name)
						   : 0;
		break;
	}
	if (n < 0)
		rc = -errno;
	afs_creds_leave(&c);
	if (S_ISREG(i->type))
		cap_note(i, op, a->name, rc);
	/* A changed attribute moves ctime: not a change behind the mount. */
	if (!rc && (op == X_SET || op == X_REMOVE) && S_ISREG(i->type))
		afs_fcache_touched(afs_inode_fc(i), i->fd);
out_put:
	afs_fcache_own_end(fc);
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
