/* data.h - the data path: aheadfs's own page cache and readahead between the
 * FUSE adapter and the backing files.  Nothing here knows FUSE: a read is
 * served through a reply callback, so the same function serves the daemon
 * and every test that reads.
 *
 * Objects:
 *   struct afs_ahead   one per mount: the cache (cache/), the readahead
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
 * Concurrency: the read path runs on the adapter's threads, many at once
 * per file and per handle.  It takes no lock on a hit: pages are looked up
 * under rcu_read_lock() and the reply callback runs inside the read-side
 * section (the buffers cannot be recycled before it ends).  Misses call
 * into ra/, which takes its own locks (ra/ra.h) and never holds one across
 * I/O.  fc->size is an atomic word (the EOF reads and windows are clipped
 * to), written under fc->lock with the rest of the identity.  fc->raf, the
 * file's readahead side, is published under fc->lock with a release store
 * when a handle first needs it (afs_fcache_ra()), and read by holders of a
 * reference with an acquire load; it goes back to NULL only when the last
 * reference goes (afs_fcache_put() parks the file, under files_lock: no
 * holder is left to read it), and a revived file publishes a new one.  The
 * table of files, the idle LRU and every reference count are guarded by
 * the mount's files_lock, a leaf lock (the adapter may call in with its
 * inode table locked) but for fc->lock, which afs_ahead_files() takes
 * under it.  Every thread that enters here is made an RCU reader by
 * cache_thread_online() (lazy registration, see cache/cache.h).
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

/* Pieces queued for the write-behind thread at most (behind.c). */
#define AFS_BEHIND_QUEUE 64
/* How far a write may land from a run's end and still belong to it
 * (behind.c): the kernel's writeback has up to 64 requests of up to 1 MiB
 * in flight (AFS_MAX_BACKGROUND), and the serving threads take them in any
 * order. */
#define AFS_BEHIND_GAP (16u << 20)

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
 * struct afs_ahead_config - The data path options (-o cache_size=, ...).
 *
 * What 0 means: the default, worked out where it is used (here and in
 * struct ra_config), except in the two fields that can be turned off,
 * write_behind and write_direct, where 0 is off (the option table,
 * fs/fuse/opts_table.c, names each).  Start from afs_ahead_config_init(), the
 * daemon's defaults, not from {0}: with {0} write-behind is off.
 *
 * @cache_size: Cache budget in bytes; 0: the default (afs_ahead_cache_size()).
 * @threads: Serving threads: the default budget is never below what they
 *	and the readahead workers need (afs_ahead_min_cache()).
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
struct afs_ahead_config {
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
 * afs_ahead_config_init() - The data path's defaults, as the daemon's option
 * parser starts from them: write-behind pieces of AFS_WRITE_BEHIND_DEFAULT,
 * AFS_IDLE_FILES_DEFAULT idle files, RA_WORKERS_DEFAULT readahead workers;
 * every other field 0 (its default, or off for write_direct).  A test that
 * builds a configuration starts here and changes what it is about.
 * Context: Pure.
 */
void afs_ahead_config_init(struct afs_ahead_config *cfg);

struct afs_fcache;

struct afs_pressure;
/* The backing watcher's counters (fs/watch/watch.h, docs/stats.md "watch"),
 * kept with the mount's so that its stats read them; all __atomic. */
struct afs_watch_counts {
	const char *mode; /* "fanotify", "inotify" or "off"; set once */
	uint64_t events; /* events read from the notification queue */
	uint64_t ignored_own; /* the daemon's own changes */
	uint64_t ignored_unknown; /* files and names aheadfs does not know */
	uint64_t invalidated; /* files and names dropped (both caches) */
	uint64_t overflows; /* queue overflows: everything dropped */
};

/* The adapter's I/O modes of opens (fs/fuse/passthrough.h, docs/stats.md
 * "passthrough"), kept with the mount's so that its stats read them; all
 * __atomic. */
struct afs_passthrough_counts {
	const char *mode; /* -o passthrough=; set once */
	const char *state; /* "on", or why not (passthrough.h) */
	uint64_t opens; /* answered with FOPEN_PASSTHROUGH */
	uint64_t opens_cached; /* through the kernel's page cache */
	uint64_t opens_direct; /* FOPEN_DIRECT_IO alone */
	/* opens that asked for passthrough and went aheadfs's way: */
	uint64_t fallback_mount; /* the mount has none */
	uint64_t fallback_inode; /* the inode had cached opens */
	uint64_t fallback_file; /* the kernel refused the file's backing */
	uint64_t fallback_setid; /* a setuid/setgid file's writer */
	uint64_t backing_files; /* backing ids registered now */
};

struct afs_ahead {
	struct cache *cache;
	struct ra_engine *ra;
	struct afs_ahead_config cfg; /* as in force (cache_size resolved) */
	struct timespec started; /* CLOCK_MONOTONIC */
	time_t started_wall;
	uint64_t uncached_reads; /* __atomic: reads served around the cache */
	/* __atomic: reads served from the backing's page cache (read.c) */
	uint64_t resident_reads;
	uint64_t resident_spliced; /* __atomic: of those, spliced (read.c) */
	uint64_t revalidations; /* __atomic: changes behind the mount seen */
	struct afs_pressure *pressure; /* pressure.h; NULL: no cgroup limit */
	uint64_t demand_misses; /* __atomic: reads that missed (not hits) */
	/* write-behind (behind.c): its thread and queue, NULL when off */
	struct afs_behind *behind;
	struct afs_behind_counts {
		uint64_t pieces; /* handed to the backing's writeback */
		uint64_t bytes; /* their bytes */
		uint64_t failed; /* sync_file_range() calls that failed */
		uint64_t skipped; /* pieces left to the kernel (queue full) */
	} behind_counts; /* __atomic */
	/* direct writes (write.c), __atomic */
	struct afs_direct_counts {
		uint64_t writes; /* written with O_DIRECT */
		uint64_t bytes; /* their bytes */
		uint64_t refused; /* files whose backing refused O_DIRECT */
	} direct_counts;
	/* what the backing watcher did (fs/watch/watch.h), __atomic */
	struct afs_watch_counts watch;
	/* the opens' I/O modes (fs/fuse/passthrough.h), __atomic */
	struct afs_passthrough_counts passthrough;
	pthread_mutex_t files_lock; /* the table below, every fc->refs */
	struct afs_fcache **files; /* hash buckets by key */
	size_t nbuckets, nfiles;
	/* Idle files, most recently idle first (files_lock): */
	struct afs_fcache *idle_head, *idle_tail;
	size_t nidle; /* written under files_lock, read __atomic */
	uint64_t revived; /* __atomic: idle files looked up again */
	uint64_t revived_changed; /* __atomic: ... found changed */
	uint64_t idle_dropped; /* __atomic: idle files freed past the limit */
	/* Warm restart's counters (fs/warm/warm.h), __atomic: */
	struct afs_warm_counters {
		uint64_t files; /* files whose saved ranges were read back */
		uint64_t skipped; /* saved files changed or gone */
		uint64_t bytes; /* bytes read back */
		uint64_t pauses; /* times the warm-up yielded to readers */
		uint64_t pending; /* 1 while a warm-up is running */
		uint64_t checkpoints; /* state files written */
		uint64_t refused; /* state files refused as malformed */
	} warm;
};

/* What names a backing file: its filesystem, inode number, generation. */
struct afs_file_key {
	dev_t dev;
	uint64_t ino;
	uint32_t gen;
};

struct afs_fcache {
	struct afs_ahead *a;
	struct afs_file_key key; /* immutable */
	struct cache_mapping *map; /* immutable */
	/* __atomic: published under lock, NULL while the file is idle
	 * ("Concurrency" above) */
	struct ra_file *raf;
	pthread_mutex_t lock; /* leaf: identity, raf's creation */
	/* The identity the cached pages were read under: */
	uint64_t size; /* __atomic (written under lock): EOF */
	struct timespec mtime, ctime; /* under lock */
	struct ra_state ra; /* readahead state of reads without a handle */
	/* The file's O_DIRECT write descriptor (write.c), __atomic: -1 not
	 * open; taken out under a->files_lock when the last reference goes
	 * and closed outside it.  direct_refused: the backing refused one. */
	int direct_fd;
	bool direct_refused; /* __atomic */
	/* under lock: the run of writes being handed over (behind.c) */
	uint64_t behind_from, behind_next, behind_bytes;
	uint64_t changes; /* __atomic: changes behind the mount seen */
	/* __atomic: ra_file_eofs() when the size was last taken again for it
	 * (read.c eof_check()) */
	uint64_t eofs_seen;
	uint64_t uncached_reads; /* __atomic */
	uint64_t resident_reads; /* __atomic */
	uint64_t resident_spliced; /* __atomic */
	uint64_t revalidations; /* __atomic */
	uint64_t refs; /* under a->files_lock */
	struct afs_fcache *next; /* hash chain, a->files_lock */
	/* a->files_lock: on the idle LRU (refs 0), its links */
	bool idle;
	struct afs_fcache *idle_prev, *idle_next;
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
 * afs_ahead_min_cache() - The smallest cache budget that lets @threads
 * serving threads and the readahead workers make progress: every thread's
 * largest request plus every worker's largest window.
 * Context: Pure.
 */
uint64_t afs_ahead_min_cache(const struct afs_ahead_config *cfg,
			     unsigned int threads);

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
 * afs_ahead_default_size() - The default budget: an eighth of @ram (256 MiB
 * when @ram is 0); where a memory cgroup limit @cg_limit below @ram is set,
 * a quarter of it when that is smaller, but never below @min.
 * Context: Pure.
 */
uint64_t afs_ahead_default_size(uint64_t ram, uint64_t cg_limit, uint64_t min);

/*
 * The kernel's readahead on the mount in kernel read mode (the bdi's
 * read_ahead_kb, docs/tuning.md): AFS_MOUNT_RA_MAX, 512 KiB, so that its
 * readahead comes in large asynchronous READs (of up to 512 KiB, half the
 * largest request, AFS_DATA_MAX_REQUEST) that aheadfs's windows are ahead
 * of; not more, because every page of it is held twice while it waits for its
 * reader (in the mount's page cache, and in aheadfs's window behind it) and
 * is what a memory limit evicts first.  Under a memory cgroup, its limit
 * over AFS_MOUNT_RA_LIMIT_SHARE (128 readers each holding two windows in
 * half the limit), at least the kernel's own default for FUSE.
 */
#define AFS_MOUNT_RA_MAX (UINT64_C(512) << 10)
#define AFS_MOUNT_RA_MIN (UINT64_C(128) << 10)
#define AFS_MOUNT_RA_LIMIT_SHARE 512

/**
 * afs_mount_readahead() - The mount's readahead in bytes for a memory
 * cgroup limit @cg_limit (0: none): see AFS_MOUNT_RA_MAX.  A multiple of
 * 4 KiB in [AFS_MOUNT_RA_MIN, AFS_MOUNT_RA_MAX].
 * Context: Pure.
 */
uint64_t afs_mount_readahead(uint64_t cg_limit);

/**
 * afs_ahead_cache_size() - The budget @cfg asks for: cache_size, or when it
 * is 0 the default for this machine and this process's memory cgroup
 * (afs_ahead_default_size() of RAM, afs_cgroup_mem_limit() and
 * afs_ahead_min_cache() of @cfg->threads).  The one place the default is
 * resolved.
 * Context: sysconf() and the cgroup files; before mounting.
 */
uint64_t afs_ahead_cache_size(const struct afs_ahead_config *cfg);

/**
 * afs_ahead_check() - Whether @cfg's budget lets @threads serving threads
 * and the readahead workers make progress (afs_ahead_min_cache()).
 * @err: One line naming the minimum when it does not.
 * Context: Pure but for sysconf(); before mounting.
 * Return: 0 or -EINVAL.
 */
int afs_ahead_check(const struct afs_ahead_config *cfg, unsigned int threads,
		    char *err, size_t errlen);

/**
 * afs_ahead_create() - Start the cache and the readahead engine.
 * @err: One line on failure.
 *
 * The budget is taken as it is: the daemon checks it first with
 * afs_ahead_check(); a smaller one (unit tests of eviction) only makes
 * readers wait for room and serve more reads around the cache.
 * Context: Before serving; starts threads.
 * Return: 0 and *@out, -EINVAL (bad readahead options), -ENOMEM, or a
 * thread creation's -errno.
 */
int afs_ahead_create(const struct afs_ahead_config *cfg, struct afs_ahead **out,
		     char *err, size_t errlen);

/**
 * afs_ahead_destroy() - Stop the engine and free the cache.
 * Context: After serving ended and every afs_fcache was put.
 */
void afs_ahead_destroy(struct afs_ahead *a);

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
int afs_fcache_lookup(struct afs_ahead *a, const struct afs_file_key *key,
		      const struct stat *st, struct afs_fcache **out);

/** afs_fcache_get() - Another reference.  Context: a holder of one. */
void afs_fcache_get(struct afs_fcache *fc);

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
 * afs_ahead_idle_max() - The most idle files kept: cfg.idle_files, or
 * AFS_IDLE_FILES_DEFAULT.  Context: pure.
 */
unsigned int afs_ahead_idle_max(const struct afs_ahead *a);

/**
 * afs_ahead_drop_idle() - Free every idle file now (with its pages).
 * Context: Online thread, outside RCU read-side sections; takes
 * a->files_lock.  afs_ahead_destroy() calls it.
 * Return: The number of files freed.
 */
size_t afs_ahead_drop_idle(struct afs_ahead *a);

/**
 * struct afs_file_snap - One file of afs_ahead_files(): its key and the
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
 * afs_ahead_files() - Every file of the table as snapshots (the warm
 * restart's checkpoint walks their mappings): the files in use first, then
 * the idle ones from the most recently used.
 * Context: Online thread; takes a->files_lock and each fc->lock under it.
 * Return: 0 and *@out (free() it after putting each map) with *@n entries,
 * or -ENOMEM.
 */
int afs_ahead_files(struct afs_ahead *a, struct afs_file_snap **out, size_t *n);

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
int afs_fcache_find(struct afs_ahead *a, const struct afs_file_key *key,
		    struct afs_fcache **out);

/**
 * afs_fcache_outside() - A backing watcher saw the file change behind the
 * mount: as afs_fcache_revalidate(), but with @force the pages and streams
 * go and a change is counted even when @st looks the same (a write within
 * the timestamps' granularity).  @st NULL: the identity is unknown now; the
 * next afs_fcache_revalidate() takes the backing's.
 * Context: Any thread (the watcher's); takes fc->lock and the mapping's.
 * Return: true if the pages were dropped and a change counted.
 */
bool afs_fcache_outside(struct afs_fcache *fc, const struct stat *st,
			bool force);

/**
 * afs_alloc_locked() - An array of at least *@count elements of @size
 * bytes, allocated outside @lock and returned with @lock held and *@count
 * (read under it) within it; a count that grew meanwhile is tried again.
 * For a snapshot of a table under its lock without allocating under it.
 * Context: Takes @lock: held on success, not on failure.
 * Return: The array (free() it), or NULL on ENOMEM.
 */
void *afs_alloc_locked(pthread_mutex_t *lock, const size_t *count, size_t size);

/**
 * afs_ahead_outside_all() - Events behind the mount were lost (a watcher's
 * queue overflowed): every file's pages and streams go, each counts a
 * change, and each identity is taken again at its next comparison.
 * Context: Any thread; takes a->files_lock, then each file's locks
 * without it.
 * Return: 0 and *@count (files dropped), or -ENOMEM (nothing dropped).
 */
int afs_ahead_outside_all(struct afs_ahead *a, size_t *count);

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

/**
 * afs_fcache_direct_take() - Take @fc's O_DIRECT write descriptor out (-1
 * if none) for the caller to close.  Context: under a->files_lock with no
 * reference left (so no writer uses it), or when freeing.
 */
int afs_fcache_direct_take(struct afs_fcache *fc);

struct afs_behind;
struct afs_behind_counts;
/**
 * afs_behind_create() - The write-behind queue of a mount (behind.c),
 * counting into @counts; its thread starts with the first piece.
 * Return: 0, or -ENOMEM or another negative errno.
 */
int afs_behind_create(struct afs_behind_counts *counts,
		      struct afs_behind **out);
/**
 * afs_behind_destroy() - Hand over what is queued, stop the thread, free.
 * @b may be NULL.
 */
void afs_behind_destroy(struct afs_behind *b);

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
int afs_data_read(struct afs_ahead *a, const struct afs_read *r, uint64_t off,
		  size_t size);

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
 * afs_thread_buf_contig() - As afs_thread_buf(), but in one huge page
 * where the kernel gives one (madvise MADV_HUGEPAGE; 2 MiB aligned): a
 * buffer physically contiguous, so that an O_DIRECT transfer of up to
 * AFS_DATA_MAX_REQUEST reaches the device as one request, not in pieces
 * of as many 4 KiB pages as the queue takes segments.  The thread's one
 * buffer: it replaces a plain one (and afs_thread_buf() returns it after).
 *
 * Context: Serving thread.
 * Return: The buffer, or NULL on ENOMEM.
 */
void *afs_thread_buf_contig(size_t size);

/**
 * afs_thread_buf_release() - Free the calling thread's buffer now (the main
 * thread in -s mode, whose exit runs no destructor before LeakSanitizer).
 *
 * Context: The thread itself, when it serves no more requests.
 */
void afs_thread_buf_release(void);

/**
 * afs_thread_buf_key_init() - Create the thread buffer key (once; every
 * later call returns the first one's result).  afs_ahead_create() calls it.
 *
 * Context: Before serving.
 * Return: 0 or -errno.
 */
int afs_thread_buf_key_init(void);

#endif /* AFS_DATA_H */
