/* xattr.h - the user.aheadfs.* extended attributes: stats, cache map,
 * per-file advice and run-time tunables, answered by the daemon itself.
 *
 * Names (the fields of the stats are defined once, in fs/stats/schema.h;
 * docs/stats.md documents them):
 *   user.aheadfs.stats         regular file: that file's cache and readahead
 *                              figures; mount root: the whole mount's
 *   user.aheadfs.map           regular file: its cached pages, as runs when
 *                              they fit, else a string of scaled cells
 *   user.aheadfs.advice        regular file, read/write: posix_fadvise by
 *                              xattr (normal|sequential|random|willneed|
 *                              dontneed)
 *   user.aheadfs.ra_max        mount root, read/write: tunables applied to
 *   user.aheadfs.context_ra    the readahead engine at run time
 *   user.aheadfs.stream_table
 * These names are never passed to the backing and never listed
 * (afs_xattr_ahead_filter_list()), so that cp -a does not copy them.
 *
 * Sizes: getxattr with size 0 answers the rendered length plus 512 bytes of
 * slack rounded up to 256 (at most 65536); the data call renders again and
 * answers the value unpadded, or -ERANGE if it does not fit the caller's
 * buffer.  A stats value grows little between the two calls (fixed keys,
 * at most RA_STATS_STREAMS streams); a map that outgrew the caller's
 * buffer is answered at a coarser resolution (pages_per_cell) instead, as
 * long as the buffer holds at least AFS_XATTR_MAP_MIN_BUF bytes.
 *
 * Errors (returned as -errno; fs/fuse/ops_xattr.c replies with them):
 *   get    -ENODATA  an aheadfs name that does not exist on this kind of
 *                    file (stats on a non-root directory, map on the root,
 *                    a tunable on a file, an unknown user.aheadfs.* name)
 *          -ERANGE   the value does not fit @size
 *          -ENOMEM   no memory for the map's render buffer
 *   set    -EPERM    stats and map (read only); a tunable set by a caller
 *                    who is neither root nor the mount's owner
 *          -ENOTSUP  a name that cannot be set on this kind of file (advice
 *                    on a directory, a tunable on a file, unknown names)
 *          -EEXIST   XATTR_CREATE: every settable name always exists
 *          -EINVAL   a bad value, or flags other than XATTR_CREATE and
 *                    XATTR_REPLACE; nothing changed
 *                    (XATTR_REPLACE is honoured trivially: the name exists)
 *   remove -EPERM    an aheadfs name that exists on this kind of file
 *          -ENODATA  one that does not
 *
 * Concurrency: every call may run on any libfuse worker thread, several at
 * once; nothing here keeps state between calls.  A file's state is read
 * through afs_fcache_stats(), the mount's through afs_data_stats() and its
 * neighbours' stats functions (xattr.c, afs_stats_aref()).  The figures are read
 * without stopping the cache or the readahead (relaxed counters, not a
 * snapshot).  The map walks the file's pages under rcu_read_lock() in
 * batches (cache_gang_lookup_rcu()), dropping the read lock between them so
 * a large file does not hold up grace periods.  Tunables go through
 * ra_engine_tune(), which readers see atomically.  Each entry point makes
 * its thread an RCU reader of the cache (cache_thread_online()).
 */
#ifndef AFS_STATS_XATTR_H
#define AFS_STATS_XATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fs/data/data.h"
#include "fs/warm/warm.h"
#include "fs/watch/watch.h"

#define AFS_XATTR_PREFIX "user.aheadfs."
/* The largest value any name renders (the VFS's XATTR_SIZE_MAX). */
#define AFS_XATTR_VALUE_MAX 65536
/* Slack added to the size answer, and its rounding. */
#define AFS_XATTR_SLACK 512
#define AFS_XATTR_ROUND 256
/* The smallest buffer a map too big for it is scaled down to fit. */
#define AFS_XATTR_MAP_MIN_BUF 512

/* The adapter's I/O modes of opens (fs/fuse/passthrough.h, docs/stats.md
 * "passthrough"): its counters, defined here because the stats render them
 * (the adapter sits above fs/stats). */
struct afs_xattr_pt_counts {
	uint64_t opens; /* answered with FOPEN_PASSTHROUGH */
	uint64_t opens_cached; /* through the kernel's page cache */
	uint64_t opens_direct; /* FOPEN_DIRECT_IO alone */
	/* of opens, read-only ones of a file the page cache held (resident) */
	uint64_t opens_resident;
	/* of opens, read-only ones of a file advised random (resident) */
	uint64_t opens_random;
	/* opens that asked for passthrough and went aheadfs's way: */
	uint64_t fallback_mount; /* the mount has none */
	uint64_t fallback_inode; /* the inode had cached opens */
	uint64_t fallback_file; /* the kernel refused the file's backing */
	uint64_t fallback_setid; /* a setuid/setgid file's writer */
	uint64_t backing_files; /* backing ids registered now (a gauge) */
};

/* The adapter's passthrough as the stats show it (afs_pt_stats()). */
struct afs_xattr_passthrough {
	const char *mode; /* -o passthrough=; NULL: "off" */
	const char *state; /* "on", or why not; NULL: "off" */
	struct afs_xattr_pt_counts c;
};

/* The adapter's request transport as the stats show it (fs/fuse/uring.h,
 * afs_uring_stats()). */
struct afs_xattr_transport {
	const char *mode; /* -o transport=; NULL: "dev" */
	const char *state; /* "on", or why not; NULL: "off" */
	uint64_t requests; /* served through io_uring */
	uint64_t unanswered; /* of them, answered EIO: no reply came */
};

/* Which file a call is about, and the mount's modules beside the data
 * path that the root's stats show. */
struct afs_xattr_target {
	bool is_root; /* the mount's root directory */
	bool is_reg; /* a regular file */
	uint64_t shown_ino; /* st_ino as the kernel sees it */
	const struct stat *st; /* fstat of the backing inode now */
	struct afs_fcache
		*fc; /* regular files: attached (never NULL); else NULL */
	const struct afs_warm *warm; /* NULL: no warm_state */
	const struct afs_watch *watch; /* NULL: watch=off */
	struct afs_xattr_passthrough passthrough; /* a snapshot */
	/* regular files: the file's passthrough opens now (afs_pt_opens()) */
	uint32_t passthrough_opens;
	struct afs_xattr_transport transport; /* a snapshot */
};

/**
 * afs_xattr_ours() - Whether @name is answered by aheadfs (the
 * "user.aheadfs." prefix), whatever the file.
 * Context: Pure.
 */
bool afs_xattr_ours(const char *name);

/**
 * afs_xattr_ahead_get() - getxattr of an aheadfs name.
 * @size: 0: the size query (rendered length + AFS_XATTR_SLACK, rounded up
 *	to AFS_XATTR_ROUND, at most AFS_XATTR_VALUE_MAX); else render into
 *	@buf (@size bytes; more than AFS_XATTR_VALUE_MAX is not used).
 *
 * Context: Serving thread, outside RCU read-side sections; takes the ra
 * file's and the cache's locks briefly; allocates one buffer of at most
 * AFS_XATTR_VALUE_MAX bytes for the map.
 * Return: The length (of the value, or the size answer), -ENODATA,
 * -ERANGE or -ENOMEM (see the top of this file).
 */
ssize_t afs_xattr_ahead_get(struct afs_data *a,
			    const struct afs_xattr_target *t, const char *name,
			    char *buf, size_t size);

/**
 * afs_xattr_ahead_set() - setxattr of an aheadfs name: advice on a regular
 * file, tunables on the root.
 * @flags: setxattr's flags (XATTR_CREATE, XATTR_REPLACE).
 * @caller_uid: The requesting user (the FUSE request's uid).
 * @owner_uid: The mount's owner (the daemon's uid); with root, the only
 *	callers who may set tunables.
 *
 * willneed and dontneed act once, on the whole file; normal, sequential
 * and random stay in force until the next advice.
 * Context: Serving thread, outside RCU read-side sections; willneed may
 * wait (bounded) for cache memory while it queues the file's readahead.
 * Return: 0, -EINVAL, -EPERM, -ENOTSUP or -EEXIST (see the top of this
 * file).
 */
int afs_xattr_ahead_set(struct afs_data *a, const struct afs_xattr_target *t,
			const char *name, const char *value, size_t size,
			int flags, uid_t caller_uid, uid_t owner_uid);

/**
 * afs_xattr_ahead_remove() - removexattr of an aheadfs name.
 * Context: Pure.
 * Return: -EPERM for a name that exists on this kind of file (it cannot be
 * removed), -ENODATA for one that does not.
 */
int afs_xattr_ahead_remove(const struct afs_xattr_target *t, const char *name);

/**
 * afs_xattr_ahead_filter_list() - Remove every user.aheadfs.* name from a
 * listxattr answer, in place.
 * @list: @len bytes of NUL-terminated names; a last name without its NUL
 *	is kept or removed like the others (and stays unterminated).
 *
 * Context: Pure.
 * Return: The new length.
 */
size_t afs_xattr_ahead_filter_list(char *list, size_t len);

#endif /* AFS_STATS_XATTR_H */
