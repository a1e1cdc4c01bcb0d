/* ahead.h - aheadfs's own page cache and readahead in the daemon's data path.
 *
 * Objects:
 *   struct afs_ahead   one per mount: the cache (cache/), the readahead
 *                      engine (ra/), the read mode and the options in force.
 *   struct afs_fcache  one per backing regular file the kernel has opened:
 *                      its cache mapping and ra_file, shared by every handle,
 *                      thread and process.  Owned by the inode table entry
 *                      (afs_inode.fc, released when the entry is freed) and
 *                      by every open handle (a reference each).
 *   struct afs_handle  one per open regular file (fi->fh points to it): the
 *                      backing fd opened with the caller's flags, the
 *                      handle's readahead state, and its afs_fcache.
 *
 * Read modes (-o read_mode=, DESIGN.md section 3):
 *   kernel  (default) the kernel's page cache sits on top and serves hits;
 *           aheadfs serves the kernel's misses and readahead from its own
 *           cache, which its readahead keeps ahead.  A page handed to the
 *           kernel is dropped to a history entry (one copy of the data in
 *           memory), which still counts for the context readahead's scan.
 *   direct  read-only opens are direct_io: every read reaches aheadfs.
 *           Writable opens use the kernel's cache (a shared writable
 *           mapping of a direct_io open fails with ENODEV on libfuse 3.14).
 *
 * Coherency: writes, truncates, hole punches and copy_file_range go to the
 * backing first, then drop the cached pages they cover
 * (cache_mapping_invalidate(): safe against readers and in-flight I/O) and
 * record the backing's new identity.  A change made behind the mount is
 * caught on open and getattr (afs_ahead_revalidate(): the backing's ino,
 * size, mtime and ctime against the snapshot the pages were read under):
 * close-to-open consistency, as NFS gives.
 *
 * Concurrency: the read path runs on libfuse's worker threads, many at once
 * per file and per handle.  It takes no lock on a hit: pages are looked up
 * under rcu_read_lock() and the reply is sent from inside the read-side
 * section (the buffers cannot be recycled before it ends).  Misses call
 * into ra/, which takes its own locks (see ra.h) and never holds one across
 * I/O.  afs_fcache.size is an atomic word (the EOF the reads are clipped
 * to).  Every thread that enters here is made an RCU reader by
 * cache_thread_online() (lazy registration, see cache.h).
 */
#ifndef AFS_AHEAD_H
#define AFS_AHEAD_H

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "cache/cache.h"
#include "ra/ra.h"

/* The least automatic readahead cap: windows of at most the kernel's
 * largest FUSE request (1 MiB) never get ahead of the kernel's own readahead
 * in kernel mode, nor of 1 MiB application reads in direct mode
 * (docs/benchmarks.md). */
#define AFS_RA_AUTO_FLOOR (4u << 20)

/* The largest request the daemon takes (max_write, and so the kernel's
 * max_pages of 256 for reads too). */
#define AFS_DATA_MAX_REQUEST (1U << 20)

/* -o read_mode=: names afs_read_mode_names ("kernel", "direct"),
 * NULL-terminated and indexed by the enum (read with ra_name_parse() and
 * ra_name_of(), as every setting's names). */
enum afs_read_mode {
	AFS_READ_KERNEL = 0, /* default */
	AFS_READ_DIRECT,
};

extern const char *const afs_read_mode_names[];

/**
 * struct afs_ahead_config - The data path options (-o cache_size=, ...).
 * @cache_size: Cache budget in bytes; 0: an eighth of RAM.
 * @ra: The readahead engine's options (ra_max=, ra_workers=, stripe=,
 *	chunk=, context_ra=, backing_io=).
 * @read_mode: -o read_mode=.
 */
struct afs_ahead_config {
	uint64_t cache_size;
	struct ra_config ra;
	enum afs_read_mode read_mode;
};

struct afs_ahead {
	struct cache *cache;
	struct ra_engine *ra;
	struct afs_ahead_config cfg; /* as in force (cache_size resolved) */
	struct timespec started; /* CLOCK_MONOTONIC */
	time_t started_wall;
	uint64_t uncached_reads; /* __atomic: reads served around the cache */
	uint64_t revalidations; /* __atomic: changes behind the mount seen */
};

struct afs_fcache {
	struct cache_mapping *map;
	struct ra_file *raf;
	uint64_t size; /* __atomic: the backing size reads are clipped to */
	uint64_t refs; /* __atomic */
	uint64_t uncached_reads; /* __atomic */
	uint64_t revalidations; /* __atomic */
};

struct afs_handle {
	int fd; /* backing fd, the caller's open flags */
	bool direct_io; /* opened with direct_io (read_mode=direct) */
	struct afs_fcache *fc; /* a reference; NULL for non-regular files */
	struct ra_state ra;
};

/**
 * afs_ahead_min_cache() - The smallest cache budget that lets @threads
 * FUSE threads and the readahead workers make progress: every thread's
 * largest request plus every worker's largest window.
 * Context: Pure.
 */
uint64_t afs_ahead_min_cache(const struct afs_ahead_config *cfg,
			     unsigned int threads);

/**
 * afs_ahead_check_budget() - Whether @cfg's cache_size (0: not given, not
 * checked) holds what @threads FUSE threads and the workers need
 * (afs_ahead_min_cache()).
 * @err: One line on failure, naming the minimum.
 * Context: Pure.
 * Return: 0, or -EINVAL.
 */
int afs_ahead_check_budget(const struct afs_ahead_config *cfg,
			   unsigned int threads, char *err, size_t errlen);

/**
 * afs_ahead_create() - Start the cache and the readahead engine.
 * @threads: The most FUSE worker threads (-o max_threads=).
 * @err: One line on failure (a budget too small names the minimum).
 *
 * Context: Before serving; starts threads.
 * Return: 0 and *@out, -EINVAL (bad configuration), -ENOMEM, or a thread
 * creation's -errno.
 */
int afs_ahead_create(const struct afs_ahead_config *cfg, unsigned int threads,
		     struct afs_ahead **out, char *err, size_t errlen);

/**
 * afs_ahead_destroy() - Stop the engine and free the cache.
 * Context: After the session loop ended and every inode entry was freed.
 */
void afs_ahead_destroy(struct afs_ahead *a);

/**
 * afs_fcache_attach() - The afs_fcache of a regular file, created on first
 * use and stored in *@slot (the inode entry's field) for every later open.
 * @fd: An fd on the backing file (not kept).
 * @st: fstat() of @fd: the identity pages will be read under.
 *
 * A racing attach of the same file loses and uses the winner's.  On
 * success the caller holds one reference of its own (afs_fcache_put()).
 * Context: Serving thread; opens the backing file for readahead.
 * Return: 0 and *@out, -ENOMEM, or the backing open's -errno.
 */
int afs_fcache_attach(struct afs_ahead *a, struct afs_fcache **slot, int fd,
		      const struct stat *st, struct afs_fcache **out);

/** afs_fcache_get() - Another reference.  Context: a holder of one. */
void afs_fcache_get(struct afs_fcache *fc);

/**
 * afs_fcache_put() - Drop a reference; the last drops the file's pages and
 * its ra_file.
 * Context: Online or not; outside RCU read-side sections; may sleep
 * (cancels queued readahead).
 */
void afs_fcache_put(struct afs_fcache *fc);

/**
 * afs_ahead_revalidate() - Compare @st (the backing now) with the snapshot;
 * a change behind the mount drops the file's pages and streams.
 * Context: Serving thread; takes the mapping's lock.
 * Return: true if the file changed (the kernel's cached pages are stale
 * too: the caller does not set keep_cache on this open).
 */
bool afs_ahead_revalidate(struct afs_ahead *a, struct afs_fcache *fc,
			  const struct stat *st);

/**
 * afs_ahead_changed() - The daemon changed bytes [@off, @off + @len) of the
 * file through @fd (write, fallocate, copy_file_range destination); @len 0
 * with @to_end: everything from @off on (truncate).  Drops the cached pages
 * covered, then records the backing's new identity from fstat(@fd).
 * Context: Serving thread, after the backing call returned; takes the
 * mapping's lock.
 */
void afs_ahead_changed(struct afs_fcache *fc, int fd, uint64_t off,
		       uint64_t len, bool to_end);

/**
 * afs_ahead_touched() - The daemon changed the file's metadata through @fd
 * (mode, owner, times, xattrs): take the backing's new identity without
 * dropping pages, so that the new ctime is not taken for a change behind
 * the mount.  @fc may be NULL (a file never opened).
 * Context: Serving thread, after the backing call returned.
 */
void afs_ahead_touched(struct afs_fcache *fc, int fd);

/**
 * afs_ahead_read() - Serve a READ of @size bytes at @off on @h and reply.
 *
 * Hits reply with an iovec over the cache pages from inside the RCU
 * read-side section (no copy, no allocation); misses and READAHEAD marks
 * drive ra/; the reader waits only for its own pages and stops waiting if
 * the request is interrupted.  When the cache has no room the read is
 * served from the backing directly.  Errors are the backing's.
 * Context: Serving thread; may sleep on I/O.
 */
void afs_ahead_read(fuse_req_t req, struct afs_ahead *a, struct afs_handle *h,
		    size_t size, off_t off);

/**
 * afs_read_uncached() - pread() @size bytes at @off of @fd into the
 * thread's buffer and reply (the passthrough read).
 * Context: Serving thread.
 */
void afs_read_uncached(fuse_req_t req, int fd, size_t size, off_t off);

/**
 * afs_thread_buf() - This thread's buffer, at least @size bytes, page
 * aligned; grows once to the largest request and is kept for the thread's
 * life (freed at thread exit).
 *
 * Context: Serving thread.
 * Return: The buffer, or NULL on ENOMEM.
 */
void *afs_thread_buf(size_t size);

/**
 * afs_thread_buf_release() - Free the calling thread's buffer now (the main
 * thread in -s mode, whose exit runs no destructor before LeakSanitizer).
 *
 * Context: The thread itself, when it serves no more requests.
 */
void afs_thread_buf_release(void);

/**
 * afs_thread_buf_key_init() - Create the thread buffer key.
 *
 * Context: Before serving.
 * Return: 0 or -errno.
 */
int afs_thread_buf_key_init(void);

#endif /* AFS_AHEAD_H */
