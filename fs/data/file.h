/* file.h - the data path's files (fs/data/data.h): one struct afs_fcache
 * per backing regular file, found by its key, the one owner of the file's
 * identity, EOF, cache mapping and readahead side; the coherency hooks the
 * adapter calls around every change; struct afs_handle, an open file's part.
 *
 * Idle files: the last afs_fcache_put() does not free a file that has pages
 * or history cached: it closes the file's readahead side (ra_file: its
 * backing fd, its queued windows) and puts the file at the head of the
 * mount's LRU of idle files, still in the table by key, its mapping intact
 * and under the one budget (the cache evicts its pages as any others).  A
 * later afs_fcache_lookup() of the key takes it off the LRU ("revived") and
 * compares its identity with the caller's stat (afs_fcache_revalidate()):
 * a changed size, mtime or ctime drops its pages and streams.  At most
 * cfg.idle_files idle files are kept (AFS_IDLE_FILES_DEFAULT); past it the
 * oldest are freed first ("idle_dropped").  A file with nothing cached is
 * freed at its last put.
 *
 * Concurrency: the lock table of fs/data/data.h (files_lock, a file's
 * lock, the atomics); each function's Context: line repeats its rule.
 */
#ifndef AFS_DATA_FILE_H
#define AFS_DATA_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "cache/cache.h"
#include "ra/ra.h"

struct afs_data;
struct afs_fcache;

/* What names a backing file: its filesystem, inode number, generation. */
struct afs_file_key {
	dev_t dev;
	uint64_t ino;
	uint32_t gen;
};

/* An open regular file's part of the data path.  fi->fh does not point
 * here: it points to the adapter's struct afs_file, which embeds this. */
struct afs_handle {
	int fd; /* backing fd, the caller's open flags */
	bool shared_fd; /* @fd is the inode's, not closed with the handle */
	bool direct_io; /* opened with direct_io (read_mode=direct) */
	bool cached; /* reads use the file's cache (else served around it) */
	struct ra_state ra;
};

/**
 * afs_fcache_lookup() - The file named @key, created on first use with the
 * identity in @st (fstat of the backing file now).
 *
 * A file in use is returned as it is: comparing it with the backing is
 * afs_fcache_revalidate()'s job.  An idle file (no reference) is revived:
 * taken off the idle LRU and revalidated against @st at once, so a file
 * changed while idle brings nothing stale back (counted in revived and
 * revived_changed).
 * Context: Serving thread; takes a->files_lock (and fc->lock to revalidate
 * a revived file).
 * Return: 0 and *@out with a reference (afs_fcache_put()), or -ENOMEM.
 */
int afs_fcache_lookup(struct afs_data *a, const struct afs_file_key *key,
		      const struct stat *st, struct afs_fcache **out);

/**
 * afs_fcache_put() - Drop a reference; the last closes the file's ra_file
 * and keeps the file idle while it has pages or history cached (freeing
 * the oldest idle files past cfg.idle_files), else frees it with its
 * pages.  @fc may be NULL.
 * Context: Online or not; outside RCU read-side sections; may sleep
 * (cancels queued readahead); takes a->files_lock.
 */
void afs_fcache_put(struct afs_fcache *fc);

/**
 * afs_fcache_ra() - The readahead side of @fc, opened on first use.
 * @fd: Any fd on the backing file (not kept: ra/ reopens it read-only as
 *	the daemon).
 *
 * Context: Serving thread; takes fc->lock; opens the backing file once.
 * Return: 0; -EACCES where the daemon may not read the file (a non-root
 * daemon, a write-only open); -ENOMEM or the backing open's -errno.
 */
int afs_fcache_ra(struct afs_fcache *fc, int fd);

/**
 * afs_fcache_has_ra() - Whether @fc's readahead side is open (its reads
 * use the cache).  @fc may be NULL.
 * Context: A holder of a reference; one acquire load.
 */
bool afs_fcache_has_ra(const struct afs_fcache *fc);

/**
 * afs_fcache_map() - @fc's cache mapping (immutable).
 * Context: A holder of a reference.
 */
struct cache_mapping *afs_fcache_map(const struct afs_fcache *fc);

/**
 * afs_fcache_ra_file() - @fc's readahead side, NULL while closed.
 * Context: A holder of a reference; one acquire load.
 */
struct ra_file *afs_fcache_ra_file(const struct afs_fcache *fc);

/**
 * struct afs_fcache_stats - What one file counted (docs/stats.md, a
 * file's "data"), read by afs_fcache_stats().
 */
struct afs_fcache_stats {
	struct cache_mapping *map; /* its pages (valid while @fc is held) */
	struct ra_file *raf; /* its readahead side, NULL while closed */
	uint64_t size; /* the EOF of the identity */
	uint64_t uncached_reads, resident_reads, resident_spliced;
	uint64_t random_around;
	uint64_t revalidations;
};

/**
 * afs_fcache_stats() - @fc's state and counters now.
 * Context: A holder of a reference; atomic loads.
 */
void afs_fcache_stats(const struct afs_fcache *fc,
		      struct afs_fcache_stats *out);

/**
 * afs_fcache_revalidate() - Compare @st (the backing now) with the
 * identity; a change behind the mount drops the file's pages and streams,
 * takes the new identity and counts a change (afs_fcache_changes()).
 * Context: Serving thread; takes fc->lock and the mapping's lock.
 * Return: true if the file changed.
 */
bool afs_fcache_revalidate(struct afs_fcache *fc, const struct stat *st);

/**
 * afs_fcache_find() - The file named @key if the table has it (never
 * creates one): what a backing watcher asks for a file it saw change.
 * Context: Any thread; takes a->files_lock.
 * Return: 0 and *@out with a reference (afs_fcache_put()), or -ENOENT
 * (*@out NULL).
 */
int afs_fcache_find(struct afs_data *a, const struct afs_file_key *key,
		    struct afs_fcache **out);

/**
 * afs_fcache_outside() - A backing watcher saw the file change behind the
 * mount: as afs_fcache_revalidate() with the identity of @fd now (any
 * descriptor of the file, O_PATH included), but with @force the pages and
 * streams go and a change is counted even when the identity looks the
 * same (a write within the timestamps' granularity).  @fd -1, or a failed
 * fstat: the identity is unknown now; the next afs_fcache_revalidate()
 * takes the backing's.
 *
 * Without @force the identity is taken and compared while none of the
 * daemon's own changes is in flight (afs_fcache_own_begin()): a change of
 * its own, seen between its system call and the identity it records,
 * would look like one behind the mount.  It waits for them (polling, at
 * most about 100 ms; then it compares anyway, and may drop the pages for
 * nothing).
 * Context: Any thread (the watcher's); takes fc->lock and the mapping's;
 * may sleep.
 * Return: true if the pages were dropped and a change counted.
 */
bool afs_fcache_outside(struct afs_fcache *fc, int fd, bool force);

/**
 * afs_fcache_own_begin() - The daemon is about to change @fc's file (data
 * or metadata: a WRITE, a SETATTR, an xattr) and will record the identity
 * it leaves (afs_fcache_changed(), afs_fcache_touched()); then
 * afs_fcache_own_end(), whether the change was made or failed.  Meanwhile
 * the watcher's comparison waits (afs_fcache_outside()).  @fc NULL: nothing.
 * Context: Any thread; one atomic add each.
 */
void afs_fcache_own_begin(struct afs_fcache *fc);
void afs_fcache_own_end(struct afs_fcache *fc);

/**
 * afs_fcache_changes() - How many changes behind the mount were seen: the
 * kernel's cached pages and attributes of the file are stale when this
 * moved since the adapter last told the kernel.
 * Context: Any thread; one atomic load.
 */
uint64_t afs_fcache_changes(const struct afs_fcache *fc);

/**
 * afs_fcache_size() - The file's size as the identity has it (the EOF
 * reads are clipped to).
 * Context: Any thread; one atomic load.
 */
uint64_t afs_fcache_size(const struct afs_fcache *fc);

/**
 * afs_fcache_changed() - The daemon changed bytes [@off, @off + @len) of
 * the file through @fd (write, fallocate, copy_file_range destination);
 * @len 0 with @to_end: everything from @off on (truncate).  Drops the
 * cached pages covered, then records the backing's new identity from
 * fstat(@fd).  @fc may be NULL (nothing cached).
 * Context: Serving thread, after the backing call returned; takes fc->lock
 * and the mapping's lock.
 */
void afs_fcache_changed(struct afs_fcache *fc, int fd, uint64_t off,
			uint64_t len, bool to_end);

/**
 * afs_fcache_touched() - The daemon changed the file's metadata through @fd
 * (mode, owner, times, xattrs): take the backing's new identity without
 * dropping pages, so that the new ctime is not taken for a change behind
 * the mount.  @fc may be NULL.
 * Context: Serving thread, after the backing call returned.
 */
void afs_fcache_touched(struct afs_fcache *fc, int fd);

/**
 * afs_fcache_written() - A write of [@off, @off + @len) through @fd has
 * been answered: with cfg.write_behind set, a sequential run's finished
 * pieces are handed to the backing's writeback (behind.c: what a run is,
 * why, what is left to the kernel).  @fc may be NULL.
 * Context: Serving thread, after the reply (sync_file_range() may wait for
 * the device's queue); takes fc->lock.
 */
void afs_fcache_written(struct afs_fcache *fc, int fd, uint64_t off,
			uint64_t len);

/**
 * afs_handle_init() - A handle on @fc's file: @fd opened with the caller's
 * flags.  @fc NULL, or without a readahead side (afs_fcache_ra() failed),
 * makes an uncached handle.
 * Context: Serving thread.
 */
void afs_handle_init(struct afs_handle *h, struct afs_fcache *fc, int fd,
		     bool direct_io);

/** afs_handle_destroy() - Close the fd; free the readahead state. */
void afs_handle_destroy(struct afs_handle *h);

/**
 * afs_fcache_warm() - Read pages [@first, @first + @npages) of @fc into the
 * cache ahead of any reader (the warm restart), as readahead (probation,
 * prefetched), and wait for them.  @npages at most the readahead cap.
 * Reads of the mount are not counted or slowed: they only find the pages.
 * Context: Online thread outside RCU read-side sections, holding a
 * reference on @fc with its readahead side open (afs_fcache_ra()); sleeps
 * on the I/O.
 * Return: The pages of the range cached now (those the workers' queue or
 * the budget refused are not), or -errno: -EINVAL (no readahead side, a
 * bad range), the backing's error.
 */
int afs_fcache_warm(struct afs_fcache *fc, uint64_t first, uint64_t npages);

#endif /* AFS_DATA_FILE_H */
