/* backing.h - reading the backing file into LOCKED cache pages.
 *
 * Owns: one struct ra_backing per backing inode: a read-only fd of its own
 * (O_DIRECT where the backing filesystem allows it, else buffered with the
 * kernel's readahead off), the stripe chunk used to split I/O, and the I/O
 * counters.  It does not own the pages it reads: those come from
 * cache_insert_range(), each with a reference, and every page handed to
 * ra_backing_read() is completed exactly once through ops->complete(), which
 * drops that reference (cache_page_complete()).
 *
 * One read, pages sorted by index, possibly with gaps:
 *
 *   pages   [10 11 12 13][17 18 19 ... 40]         two contiguous runs
 *   chunk   |<------ 16 pages ------>|<-- ...      (stripe chunk, file offsets)
 *   pieces  [10..13]      [17..31][32..40]         runs split on chunk
 *                                                  boundaries (and IOV_MAX)
 *   issue   caller: piece 0 inline; the others queued to the worker pool at
 *           the caller's priority, so every disk of a RAID0 works at once; a
 *           piece the pool refuses (full, shut down) is done inline too.
 *
 * One preadv() per piece into the pages' 4 KiB aligned buffers -- from a
 * buffered fd where cachestat(2) finds the piece in the backing's page
 * cache (no device I/O for data another process just wrote or read), else
 * O_DIRECT.  Results:
 *   - full read: every page of the piece uptodate;
 *   - short read (EOF): the bytes read are data, the rest of the last page is
 *     zeroed; pages wholly past EOF complete as uptodate zero pages (a later
 *     read of them is answered from the cache and trimmed to the file size by
 *     the caller; the file growing behind the mount is caught by revalidation,
 *     growth through the mount by write-through);
 *   - error: the piece is retried page by page, so exactly the pages whose
 *     own read fails complete with the -errno, the others succeed.
 * O_DIRECT needs the offset, length and buffers aligned: pages are 4 KiB at
 * 4 KiB offsets, and the kernel returns an unaligned count only at EOF.
 *
 * Concurrency: ra_backing_read() may run on any number of threads at once for
 * the same backing (pieces of one read run on several workers).  Counters are
 * atomics.  The fd lives until the last reference is put (queued pieces hold
 * one).  No lock is held across I/O.
 */
#ifndef AHEADFS_RA_BACKING_H
#define AHEADFS_RA_BACKING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "ra/ra.h"
#include "worker.h"

struct cache_page;

#define RA_IO_PAGE_SHIFT 12
#define RA_IO_PAGE_SIZE (1u << RA_IO_PAGE_SHIFT)

/* What ra_backing_read() needs from a page.  In production these are the
 * cache's own accessors, whose signatures match exactly:
 *	static const struct ra_page_ops ops = RA_CACHE_PAGE_OPS;
 * in a file that includes "cache/cache.h" (ra.c); unit tests use fakes.  A
 * macro, not an object, so afs_ra's I/O files do not link against cache/. */
struct ra_page_ops {
	uint64_t (*index)(const struct cache_page *p);
	/* The page's RA_IO_PAGE_SIZE buffer, RA_IO_PAGE_SIZE-aligned. */
	void *(*data)(const struct cache_page *p);
	/* Once per page: 0 = uptodate, else the -errno; drops the ref. */
	void (*complete)(struct cache_page *p, int err);
	/* Before complete(p, 0) of a page that held the file's end: only its
	 * first @len bytes (0: none) are data, the rest was zeroed.  NULL:
	 * the owner keeps no lengths (every page is taken as full). */
	void (*set_len)(struct cache_page *p, unsigned int len);
};

#define RA_CACHE_PAGE_OPS                                                      \
	{                                                                      \
		.index = cache_page_index, .data = cache_page_data,            \
		.complete = cache_page_complete,                               \
		.set_len = cache_page_set_len,                                 \
	}

/* Test hook: called instead of preadv(2); returns bytes or -errno. */
typedef ssize_t (*ra_preadv_fn)(void *ctx, int fd, const struct iovec *iov,
				int iovcnt, off_t offset);

struct ra_backing_config {
	enum ra_backing_io mode; /* what is asked for */
	uint64_t chunk; /* split runs on this many bytes (stripe chunk);
			   0: no split (runs still split at IOV_MAX pages) */
	const struct ra_page_ops *ops; /* required; kept: must outlive b */
	ra_preadv_fn preadv_hook; /* NULL: preadv(2); tests only */
	void *hook_ctx;
	struct ra_io_totals *totals; /* optional engine-wide sums, kept */
};

struct ra_backing_stats {
	uint64_t reads; /* preadv calls that returned (ok or short) */
	uint64_t bytes; /* bytes they returned */
	uint64_t pieces_queued; /* pieces handed to the worker pool */
	uint64_t pages_ok; /* pages completed uptodate */
	uint64_t pages_eof; /* of those, pages wholly past EOF (zeros) */
	uint64_t errors; /* failed preadv calls */
	uint64_t pages_failed; /* pages completed with an error */
	uint64_t cached_reads; /* of reads, those the backing's page cache
				  held whole (buffered, no device I/O) */
	uint64_t cached_bytes; /* ... and their bytes */
	enum ra_backing_io mode; /* in force: DIRECT or BUFFERED */
};

/* Engine-wide sums over every backing opened with it (they outlive the
 * files): zero-initialise, pass in ra_backing_config.totals, read with
 * ra_io_totals_read().  Updated with relaxed atomics. */
struct ra_io_totals {
	uint64_t reads, bytes, pieces_queued, pages_ok, pages_eof, errors,
		pages_failed, cached_reads,
		cached_bytes; /* as in struct ra_backing_stats */
	uint64_t opens_direct; /* backings opened in O_DIRECT mode */
	uint64_t opens_buffered; /* ... in buffered mode */
};

struct ra_backing; /* opaque, reference counted */

/**
 * ra_backing_open() - Open the backing inode of @fd for readahead I/O.
 * @fd: any fd of the backing inode (O_PATH is fine); not kept: the backing
 *	reopens it read-only through /proc/self/fd (dup() if /proc is missing,
 *	then buffered mode only, since flags live in the shared open file).
 *
 * RA_BACKING_IO_AUTO opens with O_DIRECT and does one aligned 4 KiB read at
 * offset 0; if the open or that read is refused (EINVAL: tmpfs before 6.6,
 * some FUSE and network filesystems) it falls back to buffered.  Buffered
 * mode sets POSIX_FADV_RANDOM on its own fd (no second readahead under ours)
 * and drops what it read with POSIX_FADV_DONTNEED (no second cached copy).
 *
 * Context: Opens a file and may do one read; sleeps.
 * Return: 0 and *@out with one reference, -EINVAL (bad config: no ops, a
 * chunk not a multiple of RA_IO_PAGE_SIZE, an unknown mode), -ENOMEM, or
 * the open's -errno (RA_BACKING_IO_DIRECT refused: -EINVAL).
 */
int ra_backing_open(int fd, const struct ra_backing_config *cfg,
		    struct ra_backing **out);

/** ra_backing_get() - Take a reference.  Context: any thread. */
void ra_backing_get(struct ra_backing *b);

/**
 * ra_backing_put() - Drop a reference; the last one closes the fd.
 *
 * Context: Any thread; may close a file.
 */
void ra_backing_put(struct ra_backing *b);

/** ra_backing_mode() - The mode in force: RA_BACKING_IO_DIRECT or _BUFFERED
 * (enum ra_backing_io of ra.h). */
enum ra_backing_io ra_backing_mode(const struct ra_backing *b);

/**
 * ra_backing_read() - Read @nr LOCKED pages and complete each of them.
 * @pages: sorted by strictly increasing index; the array is not kept (the
 *	   caller may reuse it on return), the references in it are consumed.
 * @pool: where pieces other than the first go; NULL: all inline.
 * @prio: priority of those pieces (RA_PRIO_DEMAND for a reader's pages).
 *
 * Returns after the first piece is done; the queued pieces complete their
 * pages on workers.  Every page is completed exactly once, whatever happens
 * (a piece that cannot be queued or allocated is done inline).
 *
 * Context: Does backing I/O and may sleep; holds no lock across it.  Any
 * thread, worker callbacks included.
 * Return: 0, or the first -errno a page read on this thread was completed
 * with (the first piece's, or a refused piece's), for accounting only.
 */
int ra_backing_read(struct ra_backing *b, struct cache_page **pages, size_t nr,
		    struct ra_pool *pool, enum ra_prio prio);

/**
 * ra_backing_read_resident() - Read [@off, @off + @len) into @buf when the
 * backing's page cache holds every page of it.
 *
 * One cachestat(2) decides (no I/O is started to find out); then one
 * buffered read from the descriptor that reads ranges the page cache holds
 * (POSIX_FADV_RANDOM: no readahead of the backing's; nothing dropped, the
 * pages are someone else's).  A page evicted between the two is read from
 * the disk by that read.  Nothing is counted here: the caller counts.
 * The file's ctime and size are taken before and after the read: when the
 * file changed meanwhile the read is refused (-EAGAIN), since a truncate
 * may have zeroed pages while they were copied and a write since may have
 * put the size back; the caller reads the disk descriptor instead (and a
 * file left shorter than the read is marked cut, ra_backing_cut()).
 *
 * Context: Any thread; sleeps only if a page was evicted meanwhile.
 * Return: the bytes read (short only at the EOF), -EAGAIN when a page is
 * not resident, the file changed while it was read, or there is no probe
 * (no cachestat(2), a test hook), or the read's -errno.
 */
ssize_t ra_backing_read_resident(struct ra_backing *b, void *buf, uint64_t off,
				 size_t len);

/**
 * ra_backing_resident_fd() - The descriptor ra_backing_read_resident() would
 * read [@off, @off + @len) from, when the backing's page cache holds every
 * page of it: for a caller that hands the pages on without reading them
 * itself (splice).  The same probe; nothing is read.  Only for a file
 * that has not changed for RA_SPLICE_QUIET_S (its ctime): a spliced page is
 * copied when the reply is, after any check could be made, so a truncate
 * that zeroes it meanwhile could not be taken back; a file written lately
 * is read with ra_backing_read_resident(), which sees such a change.
 * Context: Any thread; the descriptor is valid while @b lives.
 * Return: the descriptor; -EBUSY when every page is resident but the file
 * changed less than RA_SPLICE_QUIET_S ago (its pages may still be read with
 * ra_backing_read_resident()); or -EAGAIN as ra_backing_read_resident().
 */
int ra_backing_resident_fd(struct ra_backing *b, uint64_t off, size_t len);

/**
 * ra_backing_holds() - Whether the backing's page cache holds every page
 * of [@off, @off + @len): the probe of ra_backing_read_resident(), for a
 * caller that decides, not reads (a window the readers' misses would find
 * there is not read ahead, ra_marker_hit()).  False where there is no
 * probe or the file was cut lately, as the reads say -EAGAIN.
 * Context: Any thread; one cachestat(2) (two for a short count).
 */
bool ra_backing_holds(struct ra_backing *b, uint64_t off, size_t len);

/* How long a cut keeps a file off the page-cache reads. */
#define RA_CUT_S 10

/**
 * ra_backing_cut() - The file was cut short (a truncate, here or behind the
 * reader; or a change not known to be none): for the next RA_CUT_S seconds
 * every read of it goes to the disk descriptor -- O_DIRECT in DIRECT mode --
 * and none to the backing's page cache (the residency probe answers "not
 * resident", ra_backing_read_resident() and ra_backing_resident_fd() say
 * -EAGAIN).
 *
 * Why: a buffered read takes no lock against truncate on ext4 (nor on
 * tmpfs): it takes the size, then copies pages that a truncate meanwhile
 * zeroes in place past its new end -- the tail of the folio holding it, a
 * large folio's many pages -- so a file cut and extended again while it is
 * read returns zeros it never held (tests/integration/cut_churn.sh).  A
 * spliced page is worse: it is copied only when the reply is.  An O_DIRECT
 * read holds the inode's lock shared against truncate and writes (ext4,
 * xfs) and reads the disk after writing back the dirty range: a snapshot.
 * BUFFERED mode has no such read and keeps the race.  Appends and writes
 * inside the file zero nothing: a file only written keeps its page-cache
 * reads (the O_DIRECT read would write its dirty pages back first).
 * Context: Any thread; one relaxed store.
 */
void ra_backing_cut(struct ra_backing *b);

/**
 * ra_backing_read_whole() - Read [@off, @off + @len) around any cache, from
 * the disk descriptor: O_DIRECT in DIRECT mode (the pages covering the
 * range, into @abuf), else buffered, cut at the size found after the read
 * (see ra_backing_cut()).  @abuf: page-aligned, room for @len plus two
 * pages.  *@data receives where [@off...) starts in @abuf.  @counted: the
 * read counts as the backing's (reads, bytes, errors; a read that met the
 * file's end before @off + @len moves ra_backing_eofs()), as the reads into
 * cache pages do; else it is the caller's to count.
 * Context: Any thread; sleeps in the read.
 * Return: the bytes read (short only at the EOF the read met), or -errno.
 */
ssize_t ra_backing_read_whole(struct ra_backing *b, char *abuf, uint64_t off,
			      size_t len, char **data, bool counted);

/**
 * ra_backing_eofs() - How many reads of @b met the file's end (the page
 * holding it got a zeroed tail, pages after it were completed as zeros).
 * A caller that cuts its reads at the size it knows sees this move only in
 * the last page, or when the file shrank: then pages it takes as inside the
 * file may be zeros, and it should look at the size again.
 * Context: Any thread; acquire: the pages such a read completed are counted.
 */
uint64_t ra_backing_eofs(const struct ra_backing *b);

/**
 * ra_backing_queue() - Queue @nr LOCKED pages (an async window) to @pool as
 * one RA_PRIO_ASYNC work item that a worker reads with ra_backing_read().
 * @file: dedupe key (the mapping), or NULL; the item's range is
 *	  [first index, last index + 1).
 * @owner: cancellation key (the stream), for ra_pool_cancel(); or NULL.
 * @due: when its first page will be read (ra_work.due; 0: at once).
 *
 * The item holds a reference on @b.  A cancelled item (ra_pool_cancel(),
 * shutdown) completes its pages with -EAGAIN: "not read, look it up again",
 * so a reader waiting on one reads it itself.
 *
 * Context: Takes the pool's lock briefly; never waits for room; may call
 * ops->complete().  Any thread.
 * Return: 0 queued (the pool completes the pages), or -EEXIST (the range is
 * already queued or running), -EAGAIN (queue full), -ESHUTDOWN, -ENOMEM:
 * not queued, and every page has been completed with -EAGAIN.
 */
int ra_backing_queue(struct ra_backing *b, struct cache_page **pages, size_t nr,
		     struct ra_pool *pool, const void *file, const void *owner,
		     uint64_t due);

/**
 * ra_backing_stats() - Snapshot of @b's counters (each read atomically).
 *
 * Context: Any thread.
 */
void ra_backing_stats(const struct ra_backing *b, struct ra_backing_stats *st);

/**
 * ra_io_totals_read() - Snapshot of @t (each field read atomically).
 *
 * Context: Any thread.
 */
void ra_io_totals_read(const struct ra_io_totals *t, struct ra_io_totals *out);

#endif /* AHEADFS_RA_BACKING_H */
