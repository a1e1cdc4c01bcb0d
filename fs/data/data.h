/* data.h - the data path: aheadfs's own page cache and readahead between the
 * FUSE adapter and the backing files.  Nothing here knows FUSE: a read is
 * served through a reply callback, so the same function serves the daemon
 * and every test that reads.
 *
 * Objects:
 *   struct afs_data   one per mount: the cache (cache/), the readahead
 *                      engine (ra/), the read mode, the table of files.
 *   struct afs_fcache  one per backing regular file, found by its key
 *                      (struct afs_file_key: backing device, inode number,
 *                      generation -- what a file handle names): the ONE
 *                      owner of the file's identity (size, mtime, ctime)
 *                      and EOF, its cache mapping and its ra_file, shared
 *                      by every handle, thread and process.  Reference
 *                      counted; the FUSE inode holds one, each open one, so
 *                      it can outlive the FUSE inode (a lookup by key finds
 *                      it again while anyone holds it).  Unreferenced, it
 *                      stays in the table as an *idle* file ("Idle files"
 *                      below) while it has anything cached.
 *   struct afs_handle  one per open regular file, embedded by the adapter:
 *                      the backing fd opened with the caller's flags and the
 *                      handle's readahead state.  Reads without a handle
 *                      use the file's own readahead state instead.
 *
 * Read modes (-o read_mode=, docs/design.md "Read modes"):
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
 * (afs_fcache_changed(): safe against readers and in-flight I/O) and record
 * the backing's new identity.  A change made behind the mount is caught
 * where the adapter compares the backing with the identity
 * (afs_fcache_revalidate(), on open and getattr): the pages and streams go,
 * and the file's count of such changes (afs_fcache_changes()) tells the
 * adapter that the kernel's cached pages and attributes are stale too.
 * With a backing watcher (fs/watch/watch.h) a change is also caught as it
 * happens, for files held open too: afs_fcache_find() by key, then
 * afs_fcache_outside() drops the same state and counts the same change.
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
 * freed at its last put, as before.
 *
 * The faces: data.h (this file) the mount, its options and the read and
 * write contracts; file.h the files, their handles and coherency hooks;
 * tbuf.h the serving threads' buffers.  The structs are private
 * (data_internal.h): other modules reach them through the functions here.
 *
 * Concurrency: the read path runs on the adapter's threads, many at once
 * per file and per handle.  It takes no lock on a hit: pages are looked up
 * under rcu_read_lock() and the reply callback runs inside the read-side
 * section (the buffers cannot be recycled before it ends).  Misses call
 * into ra/, which takes its own locks (ra/ra.h) and never holds one across
 * I/O.  Every thread that enters here is made an RCU reader by
 * cache_thread_online() (lazy registration, see cache/cache.h).
 *
 * Locking (each function repeats its rule in a Context: line; debug builds
 * assert it where the function runs, cache/base/debug.h):
 *   the mount's files_lock (a leaf but for a file's lock, taken under it
 *   by afs_data_files() only): the table of files, the idle LRU, every
 *   file's reference count.  The adapter may call in with its inode table
 *   locked.
 *     takes it: afs_fcache_lookup(), afs_fcache_find(), afs_fcache_put(),
 *               afs_data_files(), afs_data_drop_idle(),
 *               afs_data_outside_all()
 *   a file's lock (leaf): its identity (size, mtime, ctime), the creation
 *   of its readahead side, the run of writes being handed over.
 *     takes it: afs_fcache_ra(), afs_fcache_revalidate(),
 *               afs_fcache_outside(), afs_fcache_changed(),
 *               afs_fcache_written()
 *   atomic, no lock: a file's size (written under its lock, read with one
 *   load: afs_fcache_size()), its readahead side (published under its lock
 *   with a release store, read with an acquire load by holders of a
 *   reference: afs_fcache_has_ra(); back to NULL only when the last
 *   reference goes, under files_lock, so no holder is left to read it),
 *   and every counter (cache/base/count.h).
 *   may sleep (never inside an RCU read-side section): afs_data_read(),
 *   afs_data_write(), afs_fcache_put(), afs_fcache_warm()
 */
#ifndef AFS_DATA_H
#define AFS_DATA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "cache/cache.h"
#include "ra/ra.h"
#include "fs/data/file.h"

/* The largest request the daemon takes (max_write, and so the kernel's
 * max_pages of 256 for reads too). */
#define AFS_DATA_MAX_REQUEST (1U << 20)
/* The most cache pages one request spans: an unaligned request of the
 * largest size spans one page more. */
#define AFS_DATA_MAX_REQUEST_PAGES (AFS_DATA_MAX_REQUEST / CACHE_PAGE_SIZE + 1)

/* The least automatic readahead cap: windows of at most the kernel's
 * largest FUSE request (1 MiB) never get ahead of the kernel's own readahead
 * in kernel mode, nor of 1 MiB application reads in direct mode
 * (docs/benchmarks.md). */
#define AFS_RA_AUTO_FLOOR (4u << 20)

/* The write-behind piece by default (-o write_behind=; behind.c,
 * docs/tuning.md). */
#define AFS_WRITE_BEHIND_DEFAULT (8u << 20)
/* What a direct write's offset, length and buffer are aligned to: the
 * page, a multiple of every block device's logical block size. */
#define AFS_WRITE_DIRECT_ALIGN 4096u

/* Idle files kept by default (-o idle_files=; docs/tuning.md). */
#define AFS_IDLE_FILES_DEFAULT 4096
/* The most -o idle_files= takes. */
#define AFS_IDLE_FILES_MAX (1u << 20)

/* -o read_mode=: names afs_read_mode_names ("kernel", "direct"),
 * NULL-terminated and indexed by the enum (read with ra_name_parse() and
 * ra_name_of(), as every setting's names). */
enum afs_read_mode {
	AFS_READ_KERNEL = 0, /* default */
	AFS_READ_DIRECT,
};

extern const char *const afs_read_mode_names[];

/* How writes reach the backing (-o write_mode=, docs/tuning.md): names
 * afs_write_mode_names ("writethrough", "writeback"), as above. */
enum afs_write_mode {
	AFS_WRITE_THROUGH = 0, /* default: every write(2) is a WRITE, at once */
	AFS_WRITE_BACK, /* the kernel's writeback cache: for data written
			 * only through the mount */
};

extern const char *const afs_write_mode_names[];

/**
 * struct afs_data_config - The data path options (-o cache_size=, ...).
 *
 * What 0 means: the default, worked out where it is used (here and in
 * struct ra_config), except in the two fields that can be turned off,
 * write_behind and write_direct, where 0 is off (the option table,
 * fs/fuse/opts_table.c, names each).  Start from afs_data_config_init(), the
 * daemon's defaults, not from {0}: with {0} write-behind is off.
 *
 * @cache_size: Cache budget in bytes; 0: the default (afs_data_cache_size()).
 * @threads: Serving threads: the default budget is never below what they
 *	and the readahead workers need (afs_data_min_cache()).
 * @ra: The readahead engine's options (ra_max=, ra_workers=, stripe=,
 *	chunk=, context_ra=, backing_io=).
 * @read_mode: -o read_mode=.
 * @write_mode: -o write_mode=.
 * @manual_reclaim: no reclaimer thread (unit tests evict by hand).
 * @idle_files: most idle files kept ("Idle files" above); 0: the default,
 *	AFS_IDLE_FILES_DEFAULT.
 * @write_behind: -o write_behind=: the piece of a sequential run of writes
 *	handed to the backing's writeback at once (behind.c); 0: off.
 * @write_direct: -o write_direct=: the smallest write of the kernel's
 *	writeback cache sent to the backing with O_DIRECT (write.c); 0: off,
 *	the default (docs/benchmarks.md, "Writes around the page caches":
 *	half the CPU time, but slower with 16 writers).
 */
struct afs_data_config {
	uint64_t cache_size;
	unsigned int threads;
	struct ra_config ra;
	enum afs_read_mode read_mode;
	enum afs_write_mode write_mode;
	bool manual_reclaim;
	unsigned int idle_files;
	uint64_t write_behind;
	uint64_t write_direct;
};

/**
 * afs_data_config_init() - The data path's defaults, as the daemon's option
 * parser starts from them: write-behind pieces of AFS_WRITE_BEHIND_DEFAULT,
 * AFS_IDLE_FILES_DEFAULT idle files, RA_WORKERS_DEFAULT readahead workers;
 * every other field 0 (its default, or off for write_direct).  A test that
 * builds a configuration starts here and changes what it is about.
 * Context: Pure.
 */
void afs_data_config_init(struct afs_data_config *cfg);

struct afs_data;

/**
 * afs_cgroup_mem_limit() - The memory limit of the calling process's memory
 * cgroup, found through @root/proc/self/cgroup: cgroup v1 (a "memory"
 * controller line): the smaller of hierarchical_memory_limit in
 * memory.stat and memory.limit_in_bytes under @root/sys/fs/cgroup/memory;
 * v2 (the "0::" line, when no v1 memory line): the smallest memory.max of
 * the cgroup and its ancestors under @root/sys/fs/cgroup.
 * @root: Prefix of /proc and /sys: "" for the machine, a directory of fake
 *	files for tests.
 * Context: Reads files; any thread.
 * Return: The limit in bytes; 0 for none ("max", unlimited, or nothing
 *	readable).
 */
uint64_t afs_cgroup_mem_limit(const char *root);

/**
 * afs_data_check() - Whether @cfg's budget lets @threads serving threads
 * and the readahead workers make progress (afs_data_min_cache()).
 * @err: One line naming the minimum when it does not.
 * Context: Pure but for sysconf(); before mounting.
 * Return: 0 or -EINVAL.
 */
int afs_data_check(const struct afs_data_config *cfg, unsigned int threads,
		   char *err, size_t errlen);

/**
 * afs_data_create() - Start the cache and the readahead engine.
 * @err: One line on failure.
 *
 * The budget is taken as it is: the daemon checks it first with
 * afs_data_check(); a smaller one (unit tests of eviction) only makes
 * readers wait for room and serve more reads around the cache.
 * Context: Before serving; starts threads.
 * Return: 0 and *@out, -EINVAL (bad readahead options), -ENOMEM, or a
 * thread creation's -errno.
 */
int afs_data_create(const struct afs_data_config *cfg, struct afs_data **out,
		    char *err, size_t errlen);

/**
 * afs_data_destroy() - Stop the engine and free the cache.
 * Context: After serving ended and every afs_fcache was put.
 */
void afs_data_destroy(struct afs_data *a);

/**
 * afs_data_idle_max() - The most idle files kept: cfg.idle_files, or
 * AFS_IDLE_FILES_DEFAULT.  Context: pure.
 */
unsigned int afs_data_idle_max(const struct afs_data *a);

/**
 * afs_data_drop_idle() - Free every idle file now (with its pages).
 * Context: Online thread, outside RCU read-side sections; takes
 * a->files_lock.  afs_data_destroy() calls it.
 * Return: The number of files freed.
 */
size_t afs_data_drop_idle(struct afs_data *a);

/**
 * struct afs_file_snap - One file of afs_data_files(): its key and the
 * identity its pages were read under, and a reference on its mapping
 * (cache_mapping_put() it) -- not on the file, so taking the list neither
 * revives idle files nor reorders their LRU.
 */
struct afs_file_snap {
	struct afs_file_key key;
	uint64_t size;
	struct timespec mtime, ctime;
	struct cache_mapping *map;
};

/**
 * afs_data_files() - Every file of the table as snapshots (the warm
 * restart's checkpoint walks their mappings): the files in use first, then
 * the idle ones from the most recently used.
 * Context: Online thread; takes a->files_lock and each fc->lock under it.
 * Return: 0 and *@out (free() it after putting each map) with *@n entries,
 * or -ENOMEM.
 */
int afs_data_files(struct afs_data *a, struct afs_file_snap **out, size_t *n);

/**
 * afs_data_outside_all() - Events behind the mount were lost (a watcher's
 * queue overflowed): every file's pages and streams go, each counts a
 * change, and each identity is taken again at its next comparison.
 * Context: Any thread; takes a->files_lock, then each file's locks
 * without it.
 * Return: 0 and *@count (files dropped), or -ENOMEM (nothing dropped).
 */
int afs_data_outside_all(struct afs_data *a, size_t *count);

/**
 * afs_data_write() - Write @iov[0..@n) at @off of the file through @fd:
 * the one way the adapter's WRITE reaches the backing.
 * @fc: The file (NULL: no data path state; the write is buffered).
 * @rwf: pwritev2() flags (RWF_APPEND, RWF_DSYNC, RWF_SYNC: a request
 *	without a handle, whose descriptor does not carry them).
 * @writeback: the write is a page of the kernel's writeback cache
 *	(FUSE_WRITE_CACHE): no writer waits on it.
 * @at: Where the bytes went (with RWF_APPEND, the end the backing chose).
 * @direct: Set when the bytes went with O_DIRECT (nothing is left dirty in
 *	the backing's page cache for write-behind to hand over).
 *
 * Buffered (pwritev2() on @fd) but for a @writeback write of at least
 * cfg.write_direct bytes at an offset and of a length aligned to
 * AFS_WRITE_DIRECT_ALIGN, without RWF_APPEND: that goes with O_DIRECT
 * (write.c: why, through which descriptor, from which buffer, and what a
 * backing that refuses it gets).
 * Context: Serving thread; may sleep on the device.
 * Return: Bytes written (short as the backing's), or -errno.
 */
ssize_t afs_data_write(struct afs_fcache *fc, int fd, const struct iovec *iov,
		       int n, uint64_t off, int rwf, bool writeback,
		       uint64_t *at, bool *direct);

/* The cache budget under a memory cgroup (pressure.c, docs/stats.md
 * "memory"). */
struct afs_pressure_stats {
	bool watching; /* a limited memory cgroup is watched */
	uint64_t limit; /* bytes, 0: none */
	uint64_t unreclaimable; /* bytes, at the last tick */
	uint64_t budget; /* bytes, in force */
	uint64_t shrinks, grows; /* budget changes */
	uint64_t trimmed; /* bytes handed back to the kernel */
};

/**
 * struct afs_data_stats - What the mount counted (docs/stats.md "data"),
 * read by afs_data_stats().
 */
struct afs_data_stats {
	struct timespec started; /* CLOCK_MONOTONIC, at afs_data_create() */
	time_t started_wall;
	uint64_t uncached_reads; /* reads served around the cache */
	uint64_t resident_reads; /* from the backing's page cache */
	uint64_t resident_spliced; /* of those, spliced */
	uint64_t random_around; /* random misses read around the cache */
	uint64_t revalidations; /* changes behind the mount seen */
	uint64_t demand_misses; /* reads that missed (not hits) */
	uint64_t idle, idle_max; /* idle files now, the most kept */
	uint64_t revived, revived_changed, idle_dropped;
	struct afs_behind_stats {
		uint64_t pieces; /* handed to the backing's writeback */
		uint64_t bytes; /* their bytes */
		uint64_t failed; /* sync_file_range() calls that failed */
		uint64_t skipped; /* pieces left to the kernel (queue full) */
	} behind; /* write-behind (behind.c) */
	struct afs_direct_stats {
		uint64_t writes; /* written with O_DIRECT */
		uint64_t bytes; /* their bytes */
		uint64_t refused; /* files whose backing refused O_DIRECT */
	} direct; /* direct writes (write.c) */
	struct afs_pressure_stats pressure; /* the budget under a cgroup */
};

/**
 * afs_data_stats() - @a's counters now (relaxed loads: each is exact, the
 * set is not one instant's).  Context: Any thread.
 */
void afs_data_stats(const struct afs_data *a, struct afs_data_stats *out);

/** afs_data_options() - The options in force.  Context: Any thread. */
const struct afs_data_config *afs_data_options(const struct afs_data *a);

/** afs_data_cache() - The mount's page cache.  Context: Any thread. */
struct cache *afs_data_cache(const struct afs_data *a);

/** afs_data_engine() - The mount's readahead engine.  Context: Any thread. */
struct ra_engine *afs_data_engine(const struct afs_data *a);

/**
 * afs_data_demand_misses() - Reads of the mount that missed so far (the
 * warm-up yields when it moves).  Context: Any thread; one atomic load.
 */
uint64_t afs_data_demand_misses(const struct afs_data *a);

/**
 * afs_read_reply_fn - Hands a read's data to the reader.
 * @iov, @n: The bytes, in order (@n 0: end of file).  For cached pages the
 *	call runs inside the RCU read-side section and the buffers are valid
 *	only until it returns.
 * Return: 0, or -errno if the data could not be handed over (the read is
 *	over either way: nothing is retried).
 */
typedef int (*afs_read_reply_fn)(void *ctx, const struct iovec *iov, int n);

/**
 * afs_read_reply_fd_fn - Hands a read's data to the reader as @len bytes of
 * @fd at @off, moved by reference (splice: the pages of the backing's page
 * cache go into the reply with no copy through the daemon).  A read short
 * at the EOF replies with what there is; a backing error fails the read.
 * Return: 0, or -errno as afs_read_reply_fn.
 */
typedef int (*afs_read_reply_fd_fn)(void *ctx, int fd, uint64_t off,
				    size_t len);

/**
 * afs_read_wait_fn - The reader is about to wait for pages under I/O with
 * @wc (non-NULL), or has stopped waiting (@wc NULL).  The adapter lets an
 * interrupt call cache_wait_cancel(@wc) meanwhile.
 */
typedef void (*afs_read_wait_fn)(void *ctx, struct cache_wait_cancel *wc);

/**
 * struct afs_read - One read, as the adapter describes it.
 * @fc:		the file; NULL: served from @fd around the cache.
 * @ra:		the handle's readahead state; NULL: the file's own (a read
 *		that arrived with no handle).
 * @fd:		a backing fd for reads served around the cache.
 * @keep_data:	the pages stay data after the reply (direct mode); false:
 *		the reader keeps its own copy (the kernel's page cache), so
 *		the pages become history.
 * @reply, @wait, @ctx: the callbacks (@wait may be NULL).
 * @reply_fd:	NULL, or the reply for reads the backing's page cache holds
 *		whole, taken for lengths in [@fd_min, @fd_max] (what the
 *		adapter's splice moves without a copy or an allocation).
 */
struct afs_read {
	struct afs_fcache *fc;
	struct ra_state *ra;
	int fd;
	bool keep_data;
	afs_read_reply_fn reply;
	afs_read_reply_fd_fn reply_fd;
	size_t fd_min, fd_max;
	afs_read_wait_fn wait;
	void *ctx;
};

/**
 * afs_data_read() - Serve a read of @size bytes at @off, at most
 * AFS_DATA_MAX_REQUEST (the largest request the kernel sends).
 *
 * Hits reply with an iovec over the cache pages from inside the RCU
 * read-side section (no copy, no allocation); a page with the READAHEAD
 * mark queues the next window first; a miss asks ra/ for a window, and the
 * reader waits only for its own pages (a wait ended by cache_wait_cancel()
 * fails the read with -EINTR).  A read past the EOF the identity knows
 * checks the backing's size first (a file grown behind the mount is
 * revalidated).  When the cache has no room, or pages keep vanishing
 * between their I/O and the reply, the read is served from @r->fd.
 * Context: Serving thread, outside RCU read-side sections; may sleep on
 * I/O.
 * Return: 0 after @r->reply ran (its own failure is not reported), or
 * -errno without a reply: the backing's error for pages that failed, -EINTR
 * for a cancelled wait, -ENOMEM, -EINVAL for a read larger than
 * AFS_DATA_MAX_REQUEST.
 */
int afs_data_read(struct afs_data *a, const struct afs_read *r, uint64_t off,
		  size_t size);

#endif /* AFS_DATA_H */
