/* ops_entry.c - entries: lookup, forget, and the entry replies that lookup,
 * create and the name-making handlers (ops_name.c) end with; the inode's
 * data path state, attached by the first entry reply of a regular file.
 *
 * Everything acts on the backing with *at() calls relative to the O_PATH
 * fds of the inode table, never on path names from SOURCE, and returns the
 * backing's errno unchanged.  An entry reply counts one kernel lookup on
 * the inode (inode.h); a reply the kernel refuses takes it back
 * (afs_reply_entry()).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fs/data/data.h"
#include "fuse_internal.h"
#include "log.h"

/* opens=none: no open will tell the kernel that its cached pages of @i
 * are stale (ops_open.c finish_open() does, otherwise); a LOOKUP or GETATTR
 * that finds the count of changes behind the mount moved does, here.
 * Attributes and pages go; the kernel's lock on neither is held. */
void afs_tell_changes(struct afs_fs *fs, struct afs_inode *i,
		      struct afs_fcache *fc)
{
	uint64_t changes;

	if (fs->opts->opens != AFS_OPENS_NONE || !fs->se || !fc)
		return;
	changes = afs_fcache_changes(fc);
	if (__atomic_exchange_n(&i->changes_told, changes, __ATOMIC_ACQ_REL) !=
	    changes)
		fuse_lowlevel_notify_inval_inode(fs->se, i->nodeid, 0, 0);
}

void afs_fill_entry(struct afs_fs *fs, struct afs_inode *i,
		    const struct stat *st, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = i->nodeid;
	e->generation = i->generation;
	e->attr = *st;
	e->attr.st_ino = afs_shown_ino(i);
	e->attr_timeout = fs->attr_timeout;
	e->entry_timeout = fs->entry_timeout;
	/* The file's identity starts with what the kernel is told first;
	 * later entry replies compare, as getattr does. */
	if (S_ISREG(i->type)) {
		struct afs_fcache *fc = afs_inode_fc(i);

		if (fc) {
			afs_fcache_revalidate(fc, st);
			afs_tell_changes(fs, i, fc);
		} else {
			afs_inode_fcache(fs, i, st);
		}
	}
}

struct afs_fcache *afs_inode_fcache(struct afs_fs *fs, struct afs_inode *inode,
				    const struct stat *st)
{
	struct afs_fcache *fc = afs_inode_fc(inode), *expected = NULL;
	struct afs_file_key key;
	struct stat now;

	if (fc || !S_ISREG(inode->type))
		return fc;
	if (!st) {
		if (fstatat(inode->fd, "", &now, AT_EMPTY_PATH))
			return NULL;
		st = &now;
	}
	key.dev = st->st_dev;
	key.ino = inode->ino;
	key.gen = inode->generation;
	if (afs_fcache_lookup(fs->data, &key, st, &fc))
		return NULL;
	if (!__atomic_compare_exchange_n(&inode->fc, &expected, fc, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Another request attached first: the same file, by key. */
		afs_fcache_put(fc);
		fc = expected;
	}
	return fc;
}

int afs_entry_from_fd(struct afs_fs *fs, int fd, struct fuse_entry_param *e)
{
	struct afs_inode *i;
	struct stat st;
	uint32_t fsidx;
	int rc;

	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = afs_itable_fsidx(&fs->itable, st.st_dev, fd, &fsidx);
	if (rc == -EOVERFLOW) {
		fsidx = UINT32_MAX; /* synthetic node id */
	} else if (rc) {
		close(fd);
		return rc;
	}
	i = afs_itable_find(&fs->itable, fsidx, st.st_ino, true);
	if (i) {
		close(fd);
	} else {
		i = afs_itable_insert(&fs->itable, fsidx, st.st_ino, fd,
				      st.st_mode, afs_fhandle_generation(fd),
				      true);
		if (!i)
			return -ENOMEM;
	}
	afs_fill_entry(fs, i, &st, e);
	afs_itable_put(&fs->itable, i);
	return 0;
}

int afs_lookup_entry(struct afs_fs *fs, fuse_req_t caller,
		     struct afs_inode *dir, const char *name,
		     struct fuse_entry_param *e)
{
	struct afs_creds c;
	struct stat st;
	int fd, rc;

	if (!strcmp(name, ".") ||
	    (!strcmp(name, "..") && dir->nodeid == AFS_ROOT_NODEID)) {
		rc = afs_stat(dir, &st);
		if (rc)
			return rc;
		afs_itable_lookup_ref(&fs->itable, dir);
		afs_fill_entry(fs, dir, &st, e);
		return 0;
	}
	/* Without default_permissions nobody else checks that the caller
	 * may search @dir: the backing does, for the caller. */
	if (caller && !fs->default_permissions) {
		rc = afs_req_creds_enter(caller, &c, false);
		if (rc)
			return rc;
		fd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? -errno : 0;
		afs_creds_leave(&c);
	} else {
		fd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? -errno : 0;
	}
	if (rc)
		return rc;
	return afs_entry_from_fd(fs, fd, e);
}

void afs_reply_entry(fuse_req_t req, struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) == -ENOENT && e->ino)
		afs_itable_forget(&afs_req_fs(req)->itable, e->ino, 1);
}

void afs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct fuse_entry_param e;
	struct afs_inode *dir;
	int rc;

	afs_tune_bdi_once(fs);
	/* "." and ".." come from NFS export on node ids the kernel may have
	 * forgotten: reopen those from the id. */
	rc = afs_itable_reopen(&fs->itable, parent, &dir);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	rc = afs_lookup_entry(fs, req, dir, name, &e);
	afs_itable_put(&fs->itable, dir);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		afs_reply_entry(req, &e);
}

void afs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct afs_fs *fs = afs_req_fs(req);

	if (afs_itable_forget(&fs->itable, ino, nlookup))
		afs_log(LOG_WARNING,
			"forget of %llu lookups of unknown node "
			"%#llx",
			(unsigned long long)nlookup, (unsigned long long)ino);
	fuse_reply_none(req);
}

void afs_op_forget_multi(fuse_req_t req, size_t count,
			 struct fuse_forget_data *forgets)
{
	struct afs_fs *fs = afs_req_fs(req);

	for (size_t n = 0; n < count; n++)
		if (afs_itable_forget(&fs->itable, forgets[n].ino,
				      forgets[n].nlookup))
			afs_log(LOG_WARNING, "forget of unknown node %#llx",
				(unsigned long long)forgets[n].ino);
	fuse_reply_none(req);
}
