/* req.c - what every request handler starts from: the request's inode
 * (afs_req_inode()), its caller's credentials (afs_req_creds_enter()),
 * the /proc/self/fd/N name of an O_PATH fd (afs_procpath()) and an
 * inode's attributes as the kernel sees them (afs_stat()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuse_internal.h"

void afs_procpath(char buf[AFS_PROCPATH_LEN], int fd)
{
	snprintf(buf, AFS_PROCPATH_LEN, "/proc/self/fd/%d", fd);
}

struct afs_inode *afs_req_inode(fuse_req_t req, fuse_ino_t ino)
{
	struct afs_inode *i = afs_itable_get(&afs_req_fs(req)->itable, ino);

	if (!i)
		fuse_reply_err(req, ESTALE);
	return i;
}

int afs_req_creds_enter(fuse_req_t req, struct afs_creds *c, bool umask)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct afs_fs *fs = afs_req_fs(req);
	gid_t groups[AFS_CREDS_MAX_GROUPS], *list = groups;
	int n = 0, rc;

	if (fs->as_root && ctx->uid != 0) {
		n = fuse_req_getgroups(req, AFS_CREDS_MAX_GROUPS, groups);
		if (n > AFS_CREDS_MAX_GROUPS) {
			list = malloc(n * sizeof(*list));
			if (!list)
				return -ENOMEM;
			n = fuse_req_getgroups(req, n, list);
		}
		/* The caller may be gone, or /proc unreadable: then only its
		 * primary group counts, which errs on the side of refusal. */
		if (n < 0)
			n = 0;
	}
	rc = afs_creds_enter(c, ctx->uid, ctx->gid, list, n, umask, ctx->umask);
	if (list != groups)
		free(list);
	return rc;
}

int afs_stat(const struct afs_inode *inode, struct stat *st)
{
	if (fstatat(inode->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return -errno;
	st->st_ino = afs_shown_ino(inode);
	return 0;
}
