/* ops_watch.c - the adapter's side of the backing watcher (fs/watch/
 * watch.h): a backing identity the watcher saw change becomes the data
 * path's file state, found by key (afs_fcache_find(), then
 * afs_fcache_outside(): its pages and streams go, and its count of changes
 * moves, so the next open's check drops the kernel's pages too), and the
 * node id the kernel knows it by (fuse_lowlevel_notify_inval_inode(): the
 * kernel's pages and attributes; _inval_entry() for a name).
 *
 * An event for a file aheadfs does not know -- outside SOURCE on the same
 * filesystem, or never looked up -- costs the inode table's lookup and the
 * data path's, nothing else.
 *
 * Concurrency: these run on the watcher's thread, which serves no FUSE
 * request, so a notification that waits for a request (dirty pages written
 * back, a directory lock a lookup holds) is served by the workers.  No lock
 * is held across a notification: the table's lookup takes a reference and
 * drops the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/data/data.h"
#include "fuse_internal.h"
#include "log.h"

/* The table's entry for @id, with a reference, or NULL. */
static struct afs_inode *watch_inode(struct afs_fs *fs,
				     const struct afs_watch_id *id)
{
	struct afs_inode *i;
	uint32_t fsidx;

	if (afs_itable_fsidx_of(&fs->itable, id->dev, &fsidx))
		return NULL;
	i = afs_itable_find(&fs->itable, fsidx, id->ino, false);
	if (i && id->has_gen && i->generation && i->generation != id->gen) {
		/* The number was reused: not the file the kernel knows. */
		afs_itable_put(&fs->itable, i);
		return NULL;
	}
	return i;
}

static enum afs_watch_result
watch_file(void *ctx, const struct afs_watch_id *id, bool force)
{
	struct afs_fs *fs = ctx;
	struct afs_inode *i = watch_inode(fs, id);
	struct afs_file_key key = {
		.dev = id->dev, .ino = id->ino, .gen = id->gen};
	struct afs_fcache *fc = NULL;
	bool dropped = true;

	/* A passthrough writer's writes are the kernel's, made in the
	 * writer's name: the mount's own.  Its readers go around the cache
	 * meanwhile, which its last release drops (passthrough.h); events
	 * that come later are judged by the identity that release took
	 * (afs_pt_wrote(): the pid tells nothing for such a file). */
	if (i && afs_pt_writing(i)) {
		afs_itable_put(&fs->itable, i);
		return AFS_WATCH_SAME;
	}
	if (i)
		key.gen = i->generation;
	if (i || id->has_gen)
		afs_fcache_find(fs->data, &key, &fc);
	if (!i && !fc)
		return AFS_WATCH_UNKNOWN;
	/* The identity is taken there, clear of the daemon's own changes
	 * (afs_fcache_own_begin()). */
	if (fc) {
		dropped = afs_fcache_outside(fc, i ? i->fd : -1,
					     force && !(i && afs_pt_wrote(i)));
		afs_fcache_put(fc);
	}
	/* Offset 0, length 0: the attributes and every cached page. */
	if (dropped && i && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, i->nodeid, 0, 0);
	if (i)
		afs_itable_put(&fs->itable, i);
	return dropped ? AFS_WATCH_DROPPED : AFS_WATCH_SAME;
}

static enum afs_watch_result
watch_name(void *ctx, const struct afs_watch_id *dir, const char *name)
{
	struct afs_fs *fs = ctx;
	struct afs_inode *i = watch_inode(fs, dir);
	bool known = i && S_ISDIR(i->type);

	/* The kernel may hold no entry for the name (-ENOENT): fine. */
	if (known && fs->se)
		fuse_lowlevel_notify_inval_entry(fs->se, i->nodeid, name,
						 strlen(name));
	if (i)
		afs_itable_put(&fs->itable, i);
	return known ? AFS_WATCH_DROPPED : AFS_WATCH_UNKNOWN;
}

static void watch_overflow(void *ctx)
{
	struct afs_fs *fs = ctx;
	uint64_t *ids;
	size_t n = 0, files = 0;

	if (afs_data_outside_all(fs->data, &files))
		afs_log(LOG_WARNING, "watch: events were lost and there was "
				     "no memory to drop the cached pages");
	if (!afs_itable_nodeids(&fs->itable, &ids, &n)) {
		for (size_t k = 0; fs->se && k < n; k++)
			fuse_lowlevel_notify_inval_inode(fs->se, ids[k], 0, 0);
		free(ids);
	}
	afs_log(LOG_WARNING,
		"watch: the event queue overflowed: dropped the pages of %zu "
		"files and the kernel's caches of %zu inodes",
		files, n);
}

const struct afs_watch_ops afs_watch_adapter = {
	.file = watch_file,
	.name = watch_name,
	.overflow = watch_overflow,
};
