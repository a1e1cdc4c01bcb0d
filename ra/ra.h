/* ra.h - the readahead engine: what the FUSE read path calls on a miss or on
 * a READAHEAD mark, per-file advice, and the stats that say why a file is
 * fast or slow.
 *
 * Objects:
 *   struct ra_engine  one per mount: configuration, the worker pool, stripe
 *                     geometry per backing device, engine-wide counters.
 *   struct ra_file    one per backing inode (like its struct cache_mapping),
 *                     shared by every handle and thread: the backing fd for
 *                     readahead I/O, the stream table, the window cap, the
 *                     advice, per-file counters.  Reference counted.
 *   struct ra_state   one per open handle (fh), embedded by the caller: the
 *                     kernel's file_ra_state (window and prev_index).
 *                     Threads sharing a handle share it.
 *
 * The read path, for a read of pages [index, index + nr):
 *
 *   rcu_read_lock(); look each page up (cache_lookup_rcu())
 *     missing page i  -> (outside RCU) ra_sync_miss(f, st, i, index + nr - i):
 *                        decides, inserts the window's pages LOCKED, reads
 *                        the reader's own pages now (waiting only for the
 *                        first I/O piece), queues the rest to the workers;
 *                        then look the pages up again and wait on them.
 *     page with the READAHEAD mark (cache_page_test_clear_readahead() true)
 *                     -> ra_marker_hit(f, st, i, index + nr - i, flags):
 *                        queues the next window (not one the backing's page
 *                        cache holds whole, with RA_MARK_RESIDENT); never
 *                        waits for I/O.
 *   after the read, hit or miss: ra_note_read(st, index, nr).
 *
 * Concurrency contract:
 *   - st->lock guards a handle's window; prev_index is a single word written
 *     with an atomic store by ra_note_read() (no lock on the hit path) and
 *     read atomically under st->lock by the decisions.
 *   - f->lock guards the file's stream table, advice and window cap; it is
 *     taken after st->lock, never before.
 *   - Both are held only around a decision (a few hundred instructions and
 *     the RCU hole scans); never across backing I/O, a sleeping cache call
 *     (cache_insert_range(), cache_page_wait()) or a FUSE reply.
 *   - Counters are relaxed atomics: stats are not a snapshot.
 *   - Every thread that calls ra_* must be online for the cache
 *     (cache_thread_online()); the engine's workers are made so by the
 *     engine.
 */
#ifndef AHEADFS_RA_RA_H
#define AHEADFS_RA_RA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cache;
struct cache_mapping;
struct ra_engine;
struct ra_file;

/* ---------------------------------------------------------------------- */
/* Settings: one enum, one name table and one parser each                 */

/*
 * Every setting of the engine has its enum here, whose 0 is the default
 * (so that an all-zero struct ra_config is the default configuration), and
 * a name table indexed by it: the words the option parser (-o NAME=WORD),
 * the run-time tunables (user.aheadfs.NAME) and the stats use alike.  Name
 * tables are NULL-terminated; ra_name_parse() and ra_name_of() read any of
 * them (fs/data's afs_read_mode_names too).
 */

/* The context rule for a sync miss that is neither at page 0, oversize nor
 * sequential for its handle (docs/design.md, Readahead, sync rule 2).
 * Names: ra_context_names ("on", "loose", "off"). */
enum ra_context_rule {
	RA_CONTEXT_CONSERVATIVE = 0, /* default: contig > req, size =
				      * min(contig + req, max), async 1 */
	RA_CONTEXT_LOOSE, /* the 2009 patch: contig > 0, size =
			   * init_size(contig + req), async = size */
	RA_CONTEXT_OFF, /* no context readahead: such a miss is random */
};

/* The per-inode stream table (cooperative readers sharing one stream).
 * Names: ra_stream_table_names ("on", "off"). */
enum ra_stream_table_mode {
	RA_STREAM_TABLE_ON = 0, /* default */
	RA_STREAM_TABLE_OFF, /* the per-handle rules alone */
};

/* How the backing file is read: asked for in ra_config, in force in the
 * stats (DIRECT or BUFFERED there).  Names: ra_backing_io_names ("auto",
 * "direct", "buffered"). */
enum ra_backing_io {
	RA_BACKING_IO_AUTO = 0, /* O_DIRECT if the backing allows it */
	RA_BACKING_IO_DIRECT, /* O_DIRECT or fail the open */
	RA_BACKING_IO_BUFFERED, /* buffered, kernel readahead off, DONTNEED */
};

extern const char *const ra_context_names[];
extern const char *const ra_stream_table_names[];
extern const char *const ra_backing_io_names[];

/* Limits and defaults of struct ra_config (and of the options and
 * tunables that set it). */
#define RA_MAX_BYTES_LIMIT (UINT64_C(1) << 30) /* window, stripe, chunk */
#define RA_AUTO_MAX_MIN (UINT64_C(1) << 20) /* least automatic window cap */
#define RA_WORKERS_DEFAULT 4
#define RA_WORKERS_MAX 64
#define RA_QUEUE_DEPTH_DEFAULT 1024
#define RA_QUEUE_DEPTH_MAX 65536

/**
 * ra_name_parse() - The index of @s in the NULL-terminated @names.
 * Context: Pure.
 * Return: The index (the enum value), or -EINVAL.
 */
int ra_name_parse(const char *const *names, const char *s);

/**
 * ra_name_of() - Entry @v of the NULL-terminated @names.
 * Context: Pure.
 * Return: The name, or NULL for a value past the table.
 */
const char *ra_name_of(const char *const *names, unsigned int v);

/**
 * ra_parse_size() - Parse a byte count for an option or a tunable:
 * "524288", "512K", "512k", "4M", "1G", "1T" (binary multiples), optional
 * trailing "B"/"iB" ("4MiB").  The one size grammar of the command line and
 * of setxattr.
 *
 * Context: Pure.
 * Return: 0 and *@out, or -EINVAL (empty, sign, garbage, unknown suffix),
 * -ERANGE (does not fit in 64 bits).
 */
int ra_parse_size(const char *s, uint64_t *out);

/* Why a decision came out as it did.  Every decision is counted by kind. */
enum ra_kind {
	RA_KIND_NONE = 0, /* no decision */
	RA_KIND_INITIAL, /* sync: read at page 0 */
	RA_KIND_OVERSIZE, /* sync: req > max */
	RA_KIND_SEQ_MISS, /* sync: index - prev_index <= 1 */
	RA_KIND_CONTEXT, /* sync: prev_hole found a stream's history */
	RA_KIND_RANDOM, /* sync: read exactly the request, state unchanged */
	RA_KIND_ASYNC, /* async: own mark, window pushed forward */
	RA_KIND_ASYNC_RECOVER, /* async: another reader's mark, next_hole, or the
				* end of a followed stream it is behind */
	RA_KIND_ASYNC_GIVEUP, /* async: next hole more than max away */
	RA_KIND_STREAM_SEQ, /* table: sequential to a candidate stream */
	RA_KIND_STREAM_AHEAD, /* table: miss at/after a stream's window */
	RA_KIND_STREAM_REFILL, /* table: miss inside a stream's window */
	RA_KIND_STREAM_BEHIND, /* table: miss before a stream's window */
	RA_KIND_STREAM_ASYNC, /* table: a stream's own mark, pushed */
	RA_KIND_COUNT
};

/* Per-file advice: FUSE does not forward posix_fadvise(), so the daemon
 * takes it through the user.aheadfs.advice xattr. */
enum ra_advice {
	RA_ADVICE_NORMAL = 0, /* the rules as they are */
	RA_ADVICE_SEQUENTIAL, /* window cap doubled (as the kernel does) */
	RA_ADVICE_RANDOM, /* no readahead: every miss reads only the request */
	RA_ADVICE_WILLNEED, /* read [off, off + len) ahead now (once) */
	RA_ADVICE_DONTNEED, /* drop [off, off + len) from the cache (once) */
};

/**
 * struct ra_config - Engine parameters; all-zero is the default.
 * @max_bytes:	window cap (-o ra_max=); 0: automatic, ra_auto_max_bytes()
 *		of each backing device.  A multiple of 4 KiB, at most
 *		RA_MAX_BYTES_LIMIT.
 * @context:	the context rule (default conservative).
 * @stream_table: the per-inode stream table, on by default.
 * @workers:	worker threads (-o ra_workers=), 1..RA_WORKERS_MAX;
 *		0: RA_WORKERS_DEFAULT (ra_workers_of()).
 * @queue_depth: queued windows per priority, 1..RA_QUEUE_DEPTH_MAX;
 *		0: RA_QUEUE_DEPTH_DEFAULT.
 * @stripe_bytes, @chunk_bytes: geometry overrides (-o stripe=, -o chunk=);
 *		0: probe sysfs.  At most RA_MAX_BYTES_LIMIT.
 * @backing_io: O_DIRECT or buffered backing reads.
 * @sysfs_root:	NULL: "/sys" (tests pass a fake tree).
 * @auto_floor_bytes: the least automatic cap (@max_bytes 0); 0 (or less
 *		than RA_AUTO_MAX_MIN): RA_AUTO_MAX_MIN.
 *		The daemon raises it above the kernel's largest FUSE request,
 *		or its windows could never get ahead of the kernel's own
 *		readahead (docs/benchmarks.md).  A multiple of 4 KiB, at most
 *		RA_MAX_BYTES_LIMIT.
 * @reads_dropped: pages leave the cache as soon as they are read (the
 *		kernel read mode keeps their history only): the fair share
 *		(pace.c ra_share_max()) gives the readers' windows the whole
 *		budget; else half, the other half holding what was read.
 */
struct ra_config {
	uint64_t max_bytes;
	uint64_t auto_floor_bytes;
	enum ra_context_rule context;
	enum ra_stream_table_mode stream_table;
	unsigned int workers;
	unsigned int queue_depth;
	uint64_t stripe_bytes;
	uint64_t chunk_bytes;
	enum ra_backing_io backing_io;
	const char *sysfs_root;
	bool reads_dropped;
};

/** ra_workers_of() - The worker threads @cfg gives (its default resolved).
 * Context: Pure. */
unsigned int ra_workers_of(const struct ra_config *cfg);

/**
 * ra_auto_max_bytes() - The automatic window cap (struct ra_config
 * max_bytes 0): max(RA_AUTO_MAX_MIN, @floor, 2 x @stripe), so that one
 * window keeps every disk of a stripe busy twice over, rounded up to a
 * whole number of @max_io when it is larger, so that a window at the cap
 * reaches the device as whole requests (a 4 MiB window on a 1280 KiB
 * queue would end in a 256 KiB one; 5 MiB is four full ones).
 * @stripe: stripe width in bytes (ra/geometry.h); 0: not striped.
 * @floor: struct ra_config auto_floor_bytes; 0: none.
 * @max_io: the device's largest request in bytes (queue/max_sectors_kb),
 *	a multiple of 4 KiB; 0: unknown, no rounding.
 *
 * The one definition of the automatic cap: the engine's windows
 * (ra/geometry.c, ra/ra.c), the data path's least cache budget and the
 * daemon's --help all take it from here.
 * Context: Pure.
 * Return: The cap in bytes, a multiple of 4 KiB when @stripe and @floor
 *	are.
 */
uint64_t ra_auto_max_bytes(uint64_t stripe, uint64_t floor, uint64_t max_io);

/* A handle's readahead state (the kernel's file_ra_state: start, size,
 * async_size, prev_index), the one the decisions (decide.c) work on.
 * Embedded by the caller; fields private: use the functions.
 * ra_state_init() before use, ra_state_destroy() after. */
struct ra_state {
	/* private: */
	pthread_mutex_t lock;
	uint64_t start, size, async_size; /* under lock */
	uint64_t prev_index; /* __atomic */
	/* The reader's consumption rate (pace.c ra_rate_max()), under lock: the
	 * page and time of the last mark it reached, pages a second. */
	uint64_t mark_index, mark_ns, rate;
	/* The fair share's epoch it was last counted in (pace.c
	 * ra_share_count()), under lock. */
	uint64_t share_epoch;
	/* __atomic: its last miss was of a page the kernel had taken and
	 * dropped (ra.c ra_sync_miss(), issue()): its windows read history
	 * again. */
	bool refault;
};
#define RA_SHARE_NONE UINT64_MAX

/* A stream's state in the stats (free slots are not listed).  Names:
 * ra_stream_state_name(). */
enum ra_stream_stats_state {
	/* a read that a following read may continue */
	RA_STREAM_STATS_CANDIDATE = 1,
	/* a stream with a window */
	RA_STREAM_STATS_ACTIVE = 2,
};

/* One stream of a file, for the stats. */
struct ra_stream_stats {
	enum ra_stream_stats_state state;
	uint64_t start, size, async_size; /* window, pages */
	uint64_t cap; /* window cap after thrash feedback, pages */
	uint64_t windows, thrash, waste;
};

#define RA_STATS_STREAMS 8

/* What the decisions did, per file and summed per engine. */
struct ra_counts {
	uint64_t decisions[RA_KIND_COUNT]; /* by kind: ra_kind_name() */
	uint64_t windows; /* decisions that opened or pushed a window */
	uint64_t sync_pages; /* pages inserted for the reader's own request */
	uint64_t async_pages; /* pages inserted ahead of the readers */
	uint64_t queued; /* async windows queued to the workers */
	uint64_t queue_refused; /* ... refused (duplicate, queue full) */
	uint64_t enospc; /* insertions refused by the cache budget */
	uint64_t thrash; /* misses on pages evicted prefetched-unused */
	uint64_t waste; /* prefetched pages evicted unused (from the cache) */
	uint64_t errors; /* reader's backing reads that failed */
	uint64_t resident_skipped; /* async windows not read: the backing's
				     page cache held them (RA_MARK_RESIDENT) */
};

struct ra_file_stats {
	struct ra_counts c;
	uint64_t max_window; /* pages, after advice */
	uint64_t stripe_pages; /* stripe width used to round windows, 0: none */
	enum ra_advice advice;
	enum ra_backing_io backing_io; /* in force: DIRECT or BUFFERED */
	uint64_t backing_reads, backing_bytes; /* preadv calls, bytes */
	uint64_t cached_reads, cached_bytes; /* of those, from the backing's
						page cache (no device I/O) */
	unsigned int nr_streams; /* entries below */
	struct ra_stream_stats streams[RA_STATS_STREAMS];
};

struct ra_engine_stats {
	struct ra_counts c; /* summed over every file, closed ones too */
	uint64_t files; /* open ra_files */
	uint64_t backing_reads, backing_bytes, backing_errors;
	uint64_t cached_reads, cached_bytes; /* as in ra_file_stats */
	uint64_t opens_direct, opens_buffered;
	uint64_t queue_depth_now; /* async windows waiting */
	uint64_t workers_busy; /* items being run */
	uint64_t queue_dropped; /* refused by the pool: full */
	uint64_t queue_late; /* started after their reader was due there */
	unsigned int workers;
};

/**
 * ra_engine_create() - Start a readahead engine over @cache.
 *
 * Validates @cfg (the geometry overrides too), starts the workers.
 * Context: Creates threads; may sleep.  The caller keeps @cache alive
 * until ra_engine_destroy() has returned.
 * Return: 0 and *@out, -EINVAL (a value out of range, see struct
 * ra_config), -ENOMEM, or a thread creation's -errno.
 */
int ra_engine_create(const struct ra_config *cfg, struct cache *cache,
		     struct ra_engine **out);

/**
 * ra_engine_destroy() - Stop the workers (queued async windows are
 * cancelled and their pages completed, in-flight I/O finishes) and free.
 *
 * Context: Every ra_file has been put; online thread; sleeps.
 * Return: 0, or -EBUSY (nothing done) while files remain.
 */
int ra_engine_destroy(struct ra_engine *e);

/**
 * ra_file_open() - The readahead side of one backing inode.
 * @m:		its mapping; the file takes its own reference.
 * @backing_fd:	any fd of the backing inode (not kept: reopened read-only,
 *		O_DIRECT where allowed).
 * @dev:	st_dev of the backing filesystem (stripe geometry).
 * @size:	the file's size in bytes, kept by the file's owner (the data
 *		path) and read with an atomic load at every decision: windows
 *		are clipped to it.  Valid until the last ra_file_put().
 *
 * One per inode, shared by every handle: the caller keeps it with the
 * inode.  Returns with one reference.
 * Context: Opens a file, may read sysfs once per device; sleeps.
 * Return: 0 and *@out, -ENOMEM, or the backing open's -errno.
 */
int ra_file_open(struct ra_engine *e, struct cache_mapping *m, int backing_fd,
		 dev_t dev, const uint64_t *size, struct ra_file **out);

/** ra_file_get() - Another reference.  Context: a holder of one. */
void ra_file_get(struct ra_file *f);

/**
 * ra_file_put() - Drop a reference; the last one cancels the file's queued
 * windows, closes the backing fd and puts the mapping.
 * Context: Online thread, outside RCU read-side sections; may sleep.
 */
void ra_file_put(struct ra_file *f);

/**
 * ra_file_invalidate() - The backing changed (revalidation, truncate):
 * forget the file's streams and cancel its queued windows.  @cut: it was
 * cut short (or may have been): read it from the disk only for a while
 * (ra_backing_cut(), backing.h).  The caller invalidates the cache pages
 * itself.
 * Context: Online thread; takes f->lock; runs cancellations (may sleep).
 */
void ra_file_invalidate(struct ra_file *f, bool cut);

/** ra_state_init() - A fresh handle state (no window, prev_index -1). */
void ra_state_init(struct ra_state *st);

/** ra_state_destroy() - Release @st's lock.  Context: no user left. */
void ra_state_destroy(struct ra_state *st);

/* ra_sync_miss() @flags, and its answer. */
#define RA_MISS_AROUND 0x1u /* the caller can read a random miss itself */
#define RA_MISS_READ_AROUND 1 /* ... and is to: nothing was inserted */

/**
 * ra_sync_miss() - A read of @nr pages at @index found page @index missing.
 *
 * Decides (counting the decision), inserts the window's missing pages as
 * LOCKED (the reader's own pages as demand, the rest as prefetched, the
 * mark page with the READAHEAD mark), queues the pages ahead of the reader
 * to the workers and reads the reader's own pages (the first I/O piece on
 * this thread, the rest on workers).  On return the reader looks its pages
 * up again and waits on those that are LOCKED; a READAHEAD mark on one of
 * them is handled with ra_marker_hit() as on any hit.
 *
 * With RA_MISS_AROUND in @flags (a caller that keeps no copy of what it
 * serves, whose @nr pages are all absent): a random decision on a backing
 * read O_DIRECT inserts nothing and answers RA_MISS_READ_AROUND; the caller
 * reads the request itself (ra_file_read_random()) and notes it
 * (ra_file_served_around()).  Its pages would be read for this reader
 * alone and dropped to history at the reply: going around spares the page
 * allocation, the tree insertion and the grace period that frees them
 * (docs/design.md, "Random misses around the cache").
 * Context: Online thread, no RCU read lock, no ra lock; does backing I/O
 * and may sleep (bounded at the cache's hard limit).
 * Return: 0; RA_MISS_READ_AROUND (above); -ENOSPC if the cache had no room
 * for the reader's pages (serve the read uncached); -EINVAL for @nr 0 or
 * an index beyond the cache's limit; -ENOMEM.  A backing error is not
 * returned: the pages carry it (cache_page_wait() gives it to every
 * waiter).
 */
int ra_sync_miss(struct ra_file *f, struct ra_state *st, uint64_t index,
		 uint64_t nr, unsigned int flags);

/* ra_marker_hit() @flags: the reader's misses read the backing's page
 * cache where it holds them. */
#define RA_MARK_RESIDENT 0x1u

/**
 * ra_marker_hit() - A read of @nr pages at @index hit page @index with the
 * READAHEAD mark, which the caller cleared (cache_page_test_clear_
 * readahead() returned true).  Decides and queues the next window.
 *
 * With RA_MARK_RESIDENT in @flags (a reader whose miss on data the
 * backing's page cache holds whole is served from there, fs/data's
 * read_resident()): a window the backing's page cache holds whole is
 * decided but not read (counted resident_skipped).  Read ahead, it would
 * be copied from that page cache into this one, held twice, and the
 * stream's later windows with it: one residency probe that came out short
 * (cachestat(2) now and then counts a resident range short) sent the rest
 * of a resident file through the cache.  Skipped, the reader's next miss
 * is served from the page cache, and the stream's windows resume where
 * the data is not there (docs/design.md, "What the backing's page cache
 * holds").
 * Context: Online thread, no RCU read lock; never waits for backing I/O
 * (it may wait, bounded, for cache memory).
 * Return: 0 (also when nothing was worth reading), -EINVAL, -ENOMEM.
 */
int ra_marker_hit(struct ra_file *f, struct ra_state *st, uint64_t index,
		  uint64_t nr, unsigned int flags);

/**
 * ra_note_read() - A read of @nr pages at @index happened (hit or miss):
 * record prev_index.  One atomic store; call once per read, at its end.
 * The decisions read prev_index and never write it, so a read that
 * triggers several (a miss, then a mark further on) is judged against the
 * read before it, as in the kernel.
 * Context: Any thread.
 */
void ra_note_read(struct ra_state *st, uint64_t index, uint64_t nr);

/**
 * ra_state_sequential() - Whether a read at page @index goes on from @st's
 * last read (the page after it, or the same page again) or starts the
 * file: the test of docs/design.md's sync rule 1, as the decisions make it.
 * Context: Any thread; reads prev_index (one atomic load).
 */
bool ra_state_sequential(const struct ra_state *st, uint64_t index);

/**
 * ra_file_served_around() - A read of [@index, @index + @nr) was served
 * around the cache, from the backing's page cache, and the kernel was
 * given the pages: the slots become history (cache_note_given(), so the
 * context readahead sees the stream and windows leave the range alone)
 * and the read is noted (ra_note_read()); @nr 0 (nothing given) does
 * nothing.  The one call a read served that way makes.
 * Context: Online thread; takes the mapping's lock.
 */
void ra_file_served_around(struct ra_file *f, struct ra_state *st,
			   uint64_t index, uint64_t nr);

/**
 * ra_file_read_resident() - Read [@off, @off + @len) of @f's backing file
 * into @buf if the backing's page cache holds every page of it: the read a
 * caller serves around aheadfs's cache (one copy, nothing cached twice).
 * No window, no decision: the caller notes the read
 * (ra_file_served_around()).
 * Context: Any thread; see ra_backing_read_resident() (backing.h).
 * Return: the bytes read (short only at the EOF), -EAGAIN when not every
 * page is resident, the file changed while it was read, or residency
 * cannot be probed (ra_backing_read_resident()), or the read's -errno.
 */
ssize_t ra_file_read_resident(struct ra_file *f, void *buf, uint64_t off,
			      size_t len);

/**
 * ra_file_read_whole() - Read [@off, @off + @len) of @f's backing file
 * around every cache, from the disk (ra_backing_read_whole(), backing.h):
 * the read a reader falls back to when the cache cannot serve it.  Not
 * counted as the backing's reads.
 * Return: the bytes (short only at the EOF), or -errno.
 */
ssize_t ra_file_read_whole(struct ra_file *f, char *abuf, uint64_t off,
			   size_t len, char **data);

/**
 * ra_file_read_random() - The read of a random miss that ra_sync_miss()
 * answered RA_MISS_READ_AROUND: as ra_file_read_whole(), counted as the
 * backing's reads, as the same pages read into the cache would be.
 * Return: the bytes (short only at the EOF), or -errno.
 */
ssize_t ra_file_read_random(struct ra_file *f, char *abuf, uint64_t off,
			    size_t len, char **data);
/* How long a file must not have changed (its ctime) to be spliced from the
 * backing's page cache (ra_file_resident_fd(), ra_backing_resident_fd()):
 * a spliced page is copied when the reply is, too late to see a truncate
 * that zeroed it.  In whole seconds of the ctime, so at least one. */
#define RA_SPLICE_QUIET_S 2

/**
 * ra_file_resident_fd() - The backing descriptor that reads [@off, @off +
 * @len) from the backing's page cache, when it holds every page of it: for a
 * caller that splices the pages into its reply instead of copying them
 * (ra_backing_resident_fd(), backing.h).  Valid while @f lives.
 * Return: the descriptor; -EBUSY when every page is resident but the file
 * changed too lately to be spliced (ra_file_read_resident() may still read
 * it); or -EAGAIN as ra_file_read_resident().
 */
int ra_file_resident_fd(struct ra_file *f, uint64_t off, size_t len);

/**
 * ra_held_resident() - Whether the page cache holds the first @size bytes
 * of @fd, a backing file, all but at most 1 page in 2^RA_RESIDENT_SLACK_SHIFT
 * (a file under 64 pages: every page): too little is left for readahead
 * to read to be worth a round trip per read.  The slack is for the pages a
 * proactive reclaimer takes here and there from a file the page cache
 * holds: on the benchmark's machine DAMON's pageout took 0.2–1.4 % of a
 * 2 GiB file within 3 s of a full read of it (design.md, "What the
 * backing's page cache holds").  A file of a memory filesystem (tmpfs,
 * ramfs) is held by nature, answered by fstatfs(2): cachestat(2) walks shmem
 * 4 KiB at a time (about 10 ms a GiB on Linux 6.18, 0.05 ms for ext4's
 * large folios).  Else cachestat(2) over RA_RESIDENT_PIECE at a time,
 * stopping once the pages missing pass the slack.  A size of 0 is held.
 * Context: Any thread; system calls only, no lock, no I/O.
 * Return: false too where the kernel has no cachestat(2) (before 6.5).
 */
bool ra_held_resident(int fd, uint64_t size);
#define RA_RESIDENT_PIECE (1ull << 30)
#define RA_RESIDENT_SLACK_SHIFT 6

/**
 * ra_file_eofs() - How many reads of @f's backing file met its end
 * (ra_backing_eofs(), backing.h): moved by a read of the last page, or of
 * pages the file no longer has since it shrank behind the owner, who
 * should then take its size again before serving them.
 * Context: Any thread.
 */
uint64_t ra_file_eofs(const struct ra_file *f);

/**
 * ra_file_advise() - Apply @advice to @f (bytes @off, @len; @len 0 = to
 * the end of the file).  NORMAL, SEQUENTIAL and RANDOM last until the next
 * call; WILLNEED queues the range as readahead (in windows of the cap);
 * DONTNEED drops the range's pages.
 * Context: Online thread, no RCU read lock; may sleep (bounded).
 * Return: 0, or -EINVAL for an unknown advice.
 */
int ra_file_advise(struct ra_file *f, enum ra_advice advice, uint64_t off,
		   uint64_t len);

/**
 * ra_file_advice() - The advice in force on @f (NORMAL, SEQUENTIAL or
 * RANDOM: WILLNEED and DONTNEED act once and leave none).
 * Context: Any online thread; takes f->lock.
 */
enum ra_advice ra_file_advice(struct ra_file *f);

/** ra_file_stats() - Fill @st.  Context: any online thread; takes f->lock. */
void ra_file_stats(struct ra_file *f, struct ra_file_stats *st);

/** ra_engine_stats() - Fill @st.  Context: any thread; pool lock briefly. */
void ra_engine_stats(struct ra_engine *e, struct ra_engine_stats *st);

/* The names of the decision kinds, indexed by enum ra_kind and
 * NULL-terminated: the stats keys (fs/stats/schema.h takes them from here). */
extern const char *const ra_kind_names[RA_KIND_COUNT + 1];

/** ra_kind_name() - ra_kind_names[@kind], "unknown" out of range. */
const char *ra_kind_name(enum ra_kind kind);

/** ra_backing_io_name() - "auto", "direct", "buffered"; "unknown" for a
 * bad value. */
const char *ra_backing_io_name(enum ra_backing_io m);

/** ra_stream_state_name() - "candidate" or "active"; NULL for a bad value. */
const char *ra_stream_state_name(enum ra_stream_stats_state state);

/** ra_advice_name() - "normal", "sequential", ...; NULL for a bad value. */
const char *ra_advice_name(enum ra_advice advice);

/**
 * ra_advice_parse() - The advice named @s (an xattr value; trailing
 * newline allowed).
 * Return: 0 and *@out, or -EINVAL.
 */
int ra_advice_parse(const char *s, enum ra_advice *out);

/* ---------------------------------------------------------------------- */
/* Run-time tuning (the mount root's user.aheadfs.* tunables)              */

/**
 * struct ra_tuning - The engine parameters that may change while files are
 * open.
 * @max_bytes:	as ra_config.max_bytes: the window cap; 0: automatic per
 *		backing device.  A multiple of 4 KiB, at most
 *		RA_MAX_BYTES_LIMIT.
 * @context:	as ra_config.context.
 * @stream_table: as ra_config.stream_table.
 */
struct ra_tuning {
	uint64_t max_bytes;
	enum ra_context_rule context;
	enum ra_stream_table_mode stream_table;
};

/* ra_engine_tune() @what: the fields of struct ra_tuning to change. */
#define RA_TUNE_MAX 0x1u
#define RA_TUNE_CONTEXT 0x2u
#define RA_TUNE_STREAM_TABLE 0x4u

/**
 * ra_engine_tune() - Change the fields of @t named by @what.
 *
 * Checked as ra_engine_create() checks them; on -EINVAL nothing changes
 * (the other fields of the same call neither).  Every decision that starts
 * after this returns, on every file open or opened later, uses the new
 * values (the window cap of a file with sequential advice is twice the new
 * cap); windows already decided or queued are not redone.  Concurrent
 * calls each change only their own fields.
 * Context: Any thread; no lock (one atomic word the decisions read).
 * Return: 0, or -EINVAL (a value out of range, an unknown bit in @what,
 * @t NULL).
 */
int ra_engine_tune(struct ra_engine *e, const struct ra_tuning *t,
		   unsigned int what);

/**
 * ra_engine_tuning() - The values in force (those of ra_engine_create()
 * until ra_engine_tune() changed them).
 * Context: Any thread; one atomic load.
 */
void ra_engine_tuning(struct ra_engine *e, struct ra_tuning *out);

#endif /* AHEADFS_RA_RA_H */
