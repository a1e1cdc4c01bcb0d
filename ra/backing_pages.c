/* backing_pages.c - backing-file reads into LOCKED cache pages.
 *
 * The unit of I/O is a *piece*: pages with consecutive indexes that do not
 * cross a stripe-chunk boundary (file offset a multiple of the chunk) and
 * number at most IOV_MAX, read with one preadv() straight into the pages'
 * buffers.  ra_backing_read() cuts its pages into pieces, queues every piece
 * but the first to the worker pool, reads the first itself, then reads
 * inline whatever the pool refused:
 *
 *   caller ──▶ queue pieces 2..k ──▶ read piece 1 ──▶ read refused pieces
 *                   │
 *                   └─▶ workers read pieces 2..k in parallel
 *
 * A queued *window* (ra_backing_queue()) is one work item for all its pages:
 * the worker that takes it runs ra_backing_read() on them, which splits it
 * in the same way.
 *
 * Reading a piece [off, off + len):
 *   - preadv() returns len: every page uptodate.
 *   - it returns r < len with r a non-zero multiple of 4 KiB: the pages read
 *     are done, read the rest (a short read need not be EOF).
 *   - it returns 0 or an r that is not a multiple of 4 KiB at the file's
 *     end: EOF (the kernel gives an unaligned count only at EOF, O_DIRECT
 *     included; inside the file it is a short read: preadv_pages()); the page
 *     holding EOF gets its tail zeroed, later pages are zero pages; all
 *     uptodate.
 *   - it fails: the rest of the piece is read again page by page, so only
 *     the pages whose own read fails complete with the error.
 * EINTR is retried.  Buffered mode drops what it read from the kernel's page
 * cache (POSIX_FADV_DONTNEED): the data lives in aheadfs's cache only.
 *
 * Coherence with writes through the mount: fs/ writes through its own fd
 * with buffered writes; an O_DIRECT read first writes back and waits for the
 * dirty page-cache range it covers (the kernel does it), so it never reads
 * older data than a write that returned before it started.  Which cached
 * pages a write must update or drop is the cache's business.
 *
 * Measured on this machine (virtio disk, ext4, 1 GiB file, cold, fake pages,
 * 1 MiB reads): O_DIRECT 1.0-1.2 GB/s; buffered + FADV_RANDOM + DONTNEED
 * 0.86-0.99 GB/s; O_DIRECT split in 256 KiB chunks over 4 workers 1.0-1.2
 * GB/s (one unstriped disk: no gain expected, no loss seen).
 *
 * The object these reads go through (struct ra_backing, its descriptors,
 * the residency probe ra_backing_resident_pages()) is backing.c's.
 */
#include "backing_internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

/* A queued piece (whole = false) or window (whole = true). */
struct piece {
	struct ra_work w; /* first: the pool hands us &w */
	struct ra_backing *b; /* a reference */
	struct ra_pool *pool; /* windows: where their pieces go */
	bool whole;
	size_t n;
	struct cache_page *pages[];
};

/* Where a piece is read from: the O_DIRECT fd, or a buffered one; drop:
 * POSIX_FADV_DONTNEED what was read (buffered mode: pages this read brought
 * into the page cache are not kept twice); since: the file's fstat(2)
 * before a read from the backing's page cache, which no page is completed
 * from if the file changed since (ra_backing_changed(): the disk
 * descriptor reads those pages again), or NULL. */
struct source {
	int fd;
	bool buffered, drop;
	const struct stat *since;
};

/*
 * ra_backing_preadv() of whole pages (@iov: page buffers) from @src.  A
 * count that is not a page multiple is EOF (the kernel's rule for local file
 * systems, O_DIRECT included) only where the file ends: a backing that
 * returns a short count inside the file (a network or FUSE file system, a
 * signal) would otherwise have zeros served as its data.  Buffered mode
 * reads the rest of that page in place; O_DIRECT (aligned offsets only)
 * asks again a few times, then fails with -EIO.
 */
static ssize_t preadv_pages(struct ra_backing *b, const struct source *src,
			    const struct iovec *iov, int iovcnt, off_t off)
{
	for (int tries = 0;; tries++) {
		ssize_t r = ra_backing_preadv(b, src->fd, iov, iovcnt, off);
		size_t tail;
		struct stat st;

		tail = (size_t)r & (RA_IO_PAGE_SIZE - 1);
		if (r <= 0 || !tail)
			return r;
		if (fstat(src->fd, &st) || off + r >= st.st_size)
			return r; /* EOF */
		if (src->buffered) {
			char *page = iov[r >> RA_IO_PAGE_SHIFT].iov_base;

			while (tail < RA_IO_PAGE_SIZE) {
				struct iovec rest = {page + tail,
						     RA_IO_PAGE_SIZE - tail};
				ssize_t n = ra_backing_preadv(b, src->fd, &rest,
							      1, off + r);

				if (n <= 0)
					return n < 0 ? n : r; /* n: EOF */
				r += n;
				tail += (size_t)n;
			}
			return r;
		}
		if (tries == 3)
			return -EIO;
	}
}

static uint64_t pindex(struct ra_backing *b, struct cache_page *p)
{
	return b->ops->index(p);
}

static off_t page_off(uint64_t index)
{
	return (off_t)(index << RA_IO_PAGE_SHIFT);
}

/* Complete @p, which held the file's end: @len bytes of data (0: none),
 * its tail zeroed.  The length goes with the page, so that no reader takes
 * the zeros for data once the file is longer again. */
static void complete_end(struct ra_backing *b, struct cache_page *p, size_t len)
{
	memset((char *)b->ops->data(p) + len, 0, RA_IO_PAGE_SIZE - len);
	if (b->ops->set_len)
		b->ops->set_len(p, (unsigned int)len);
	b->ops->complete(p, 0);
}

/* Pages [@from, @n) of a piece lie wholly past EOF: uptodate zero pages. */
static void complete_zero(struct ra_backing *b, struct cache_page **pages,
			  size_t from, size_t n)
{
	CTR_ADD(b, pages_ok, n - from);
	CTR_ADD(b, pages_eof, n - from);
	for (size_t i = from; i < n; i++)
		complete_end(b, pages[i], 0);
}

static void complete_ok(struct ra_backing *b, struct cache_page **pages,
			size_t n)
{
	CTR_ADD(b, pages_ok, n);
	for (size_t i = 0; i < n; i++)
		b->ops->complete(pages[i], 0);
}

static void drop_from_page_cache(const struct source *src, off_t off,
				 size_t len)
{
	if (src->drop && len)
		posix_fadvise(src->fd, off, (off_t)len, POSIX_FADV_DONTNEED);
}

/*
 * Read one page alone (after a failed multi-page read).  Returns 0 and
 * completes it, or returns 1 when it held EOF (completed, the caller zeroes
 * the rest), or returns the -errno (completed with it).
 */
static int read_one(struct ra_backing *b, const struct source *src,
		    struct cache_page *p)
{
	struct iovec iov = {b->ops->data(p), RA_IO_PAGE_SIZE};
	off_t off = page_off(pindex(b, p));
	ssize_t r = preadv_pages(b, src, &iov, 1, off);

	if (r < 0) {
		CTR_ADD(b, errors, 1);
		CTR_ADD(b, pages_failed, 1);
		b->ops->complete(p, (int)r);
		return (int)r;
	}
	CTR_ADD(b, reads, 1);
	CTR_ADD(b, bytes, (uint64_t)r);
	drop_from_page_cache(src, off, (size_t)r);
	CTR_ADD(b, pages_ok, 1);
	if (r == 0)
		CTR_ADD(b, pages_eof, 1);
	if ((size_t)r == RA_IO_PAGE_SIZE) {
		b->ops->complete(p, 0);
		return 0;
	}
	__atomic_fetch_add(&b->eofs, 1, __ATOMIC_RELEASE);
	complete_end(b, p, (size_t)r);
	return 1;
}

/*
 * Read pages [0, @n) of one piece (consecutive indexes) from @src and
 * complete them.  Return: 0, or the first -errno a page was completed with.
 */
/* The disk descriptor as a source: O_DIRECT, or buffered (dropping what it
 * brought in) in buffered mode. */
static struct source disk_source(const struct ra_backing *b)
{
	bool buffered = b->mode == RA_BACKING_IO_BUFFERED;

	return (struct source){b->fd, buffered, buffered, NULL};
}

/* A read of @r bytes at @off from the backing's page cache just returned:
 * whether the file changed since @src->since (then a file left shorter
 * than the read is marked cut, as cut_check() would). */
static bool changed_since(struct ra_backing *b, const struct source *src,
			  off_t off, ssize_t r)
{
	struct stat st;

	if (fstat(src->fd, &st))
		return true;
	if (!ra_backing_changed(src->since, &st))
		return false;
	if (st.st_size < off + r)
		ra_backing_cut(b);
	return true;
}

static int read_piece_from(struct ra_backing *b, const struct source *src,
			   struct cache_page **pages, size_t n)
{
	struct iovec iov[IOV_MAX];
	size_t done = 0; /* pages completed */
	int rc = 0;

	assert(n > 0 && n <= IOV_MAX);
	for (size_t i = 0; i < n; i++) {
		iov[i].iov_base = b->ops->data(pages[i]);
		iov[i].iov_len = RA_IO_PAGE_SIZE;
		assert(((uintptr_t)iov[i].iov_base & (RA_IO_PAGE_SIZE - 1)) ==
		       0);
		assert(i == 0 ||
		       pindex(b, pages[i]) == pindex(b, pages[0]) + i);
	}
	while (done < n) {
		off_t off = page_off(pindex(b, pages[done]));
		ssize_t r =
			preadv_pages(b, src, iov + done, (int)(n - done), off);
		size_t full, tail;

		/* From the page cache: nothing of it is kept if the read
		 * failed or the file changed meanwhile. */
		if (src->since && (r < 0 || changed_since(b, src, off, r))) {
			const struct source disk = disk_source(b);

			return read_piece_from(b, &disk, pages + done,
					       n - done);
		}
		if (r < 0) {
			/* Narrow the failure down to the pages it covers. */
			CTR_ADD(b, errors, 1);
			for (; done < n; done++) {
				int one = read_one(b, src, pages[done]);

				if (one < 0 && !rc)
					rc = one;
				if (one == 1) {
					complete_zero(b, pages, done + 1, n);
					return rc;
				}
			}
			return rc;
		}
		CTR_ADD(b, reads, 1);
		CTR_ADD(b, bytes, (uint64_t)r);
		drop_from_page_cache(src, off, (size_t)r);
		full = (size_t)r >> RA_IO_PAGE_SHIFT;
		tail = (size_t)r & (RA_IO_PAGE_SIZE - 1);
		complete_ok(b, pages + done, full);
		done += full;
		if (done == n)
			break;
		if (r > 0 && tail == 0)
			continue; /* short, not EOF: read the rest */
		/* EOF inside (or at the start of) pages[done]. */
		CTR_ADD(b, pages_ok, 1);
		if (tail == 0)
			CTR_ADD(b, pages_eof, 1);
		__atomic_fetch_add(&b->eofs, 1, __ATOMIC_RELEASE);
		complete_end(b, pages[done], tail);
		complete_zero(b, pages, done + 1, n);
		break;
	}
	return rc;
}

/* Pieces at least this long with some pages resident are split in halves
 * and probed again; shorter ones are read whole from the disk. */
#define PROBE_SPLIT_PAGES 32

/*
 * Read one piece, taking what the backing's page cache already holds from
 * there: data another process just wrote or read is in memory, and an
 * O_DIRECT read would fetch it from the disk again.  cachestat(2) counts
 * the resident pages without starting any I/O (a buffered RWF_NOWAIT read
 * would start the backing's readahead on a miss).  All resident: one
 * buffered read, nothing dropped (those pages are someone else's); none:
 * the O_DIRECT read (buffered mode: buffered, dropping what it brought in);
 * some: halves, down to PROBE_SPLIT_PAGES.  A page evicted between probe
 * and read is read from the disk by the buffered read itself.
 */
static int read_piece(struct ra_backing *b, struct cache_page **pages, size_t n)
{
	struct source disk = disk_source(b);
	uint64_t off = page_off(pindex(b, pages[0]));
	int64_t res = 0;

	/* None resident a moment ago (this thread's probe of the request
	 * it reads now): no second probe. */
	if (b->probe && !ra_backing_cut_lately(b) &&
	    !ra_backing_none_resident(b, off, n << RA_IO_PAGE_SHIFT))
		res = ra_backing_resident_pages(b->fd, (off_t)off,
						n << RA_IO_PAGE_SHIFT);
	if (res > 0 && (size_t)res >= n) {
		struct stat since;
		struct source mem = {b->cached_fd >= 0 ? b->cached_fd : b->fd,
				     true, false, &since};

		if (fstat(mem.fd, &since))
			return read_piece_from(b, &disk, pages, n);
		CTR_ADD(b, cached_reads, 1);
		CTR_ADD(b, cached_bytes, n << RA_IO_PAGE_SHIFT);
		return read_piece_from(b, &mem, pages, n);
	}
	if (res > 0 && n >= 2 * PROBE_SPLIT_PAGES) {
		int rc = read_piece(b, pages, n / 2);
		int rc2 = read_piece(b, pages + n / 2, n - n / 2);

		return rc ? rc : rc2;
	}
	return read_piece_from(b, &disk, pages, n);
}

/* Length of the piece starting at pages[@i]. */
static size_t piece_len(struct ra_backing *b, struct cache_page **pages,
			size_t i, size_t nr)
{
	uint64_t first = pindex(b, pages[i]);
	size_t j = i + 1;

	while (j < nr && j - i < IOV_MAX) {
		uint64_t idx = pindex(b, pages[j]);

		if (idx != first + (j - i))
			break; /* a gap: next run */
		if (b->chunk_pages && idx % b->chunk_pages == 0)
			break; /* a chunk boundary */
		j++;
	}
	return j - i;
}

static void complete_all(struct ra_backing *b, struct cache_page **pages,
			 size_t n, int err)
{
	for (size_t i = 0; i < n; i++)
		b->ops->complete(pages[i], err);
}

static void piece_run(struct ra_work *w)
{
	struct piece *pc = (struct piece *)w;
	struct ra_backing *b = pc->b;

	if (pc->whole)
		ra_backing_read(b, pc->pages, pc->n, pc->pool, RA_PRIO_ASYNC);
	else
		read_piece(b, pc->pages, pc->n);
	free(pc);
	ra_backing_put(b);
}

/* Cancelled (stream stopped, shutdown): nobody reads these pages now; a
 * reader waiting on one gets -EAGAIN and reads it itself. */
static void piece_cancel(struct ra_work *w, int reason)
{
	struct piece *pc = (struct piece *)w;
	struct ra_backing *b = pc->b;

	complete_all(b, pc->pages, pc->n, -EAGAIN);
	free(pc);
	ra_backing_put(b);
}

static struct piece *piece_new(struct ra_backing *b, struct cache_page **pages,
			       size_t n, enum ra_prio prio)
{
	struct piece *pc = malloc(sizeof(*pc) + n * sizeof(pc->pages[0]));

	if (!pc)
		return NULL;
	memset(pc, 0, sizeof(*pc));
	pc->w.run = piece_run;
	pc->w.cancel = piece_cancel;
	pc->w.prio = prio;
	pc->w.start = pindex(b, pages[0]);
	pc->w.nr = pindex(b, pages[n - 1]) - pc->w.start + 1;
	pc->b = b;
	pc->n = n;
	memcpy(pc->pages, pages, n * sizeof(pages[0]));
	return pc;
}

int ra_backing_read(struct ra_backing *b, struct cache_page **pages, size_t nr,
		    struct ra_pool *pool, enum ra_prio prio)
{
	size_t first, i, inline_from;
	int rc, r2;

	if (nr == 0)
		return 0;
	first = piece_len(b, pages, 0, nr);
	/* Queue pieces 2..k; stop at the first the pool will not take. */
	for (i = first; pool && i < nr;) {
		size_t len = piece_len(b, pages, i, nr);
		struct piece *pc = piece_new(b, pages + i, len, prio);

		if (!pc)
			break;
		ra_backing_get(b);
		if (ra_pool_submit(pool, &pc->w)) {
			ra_backing_put(b);
			free(pc);
			break;
		}
		CTR_ADD(b, pieces_queued, 1);
		i += len;
	}
	inline_from = pool ? i : first;
	rc = read_piece(b, pages, first);
	for (i = inline_from; i < nr;) {
		size_t len = piece_len(b, pages, i, nr);

		r2 = read_piece(b, pages + i, len);
		if (r2 && !rc)
			rc = r2;
		i += len;
	}
	return rc;
}

int ra_backing_queue(struct ra_backing *b, struct cache_page **pages, size_t nr,
		     struct ra_pool *pool, const void *file, const void *owner,
		     uint64_t due)
{
	struct piece *pc;
	int rc;

	if (nr == 0)
		return 0;
	pc = pool ? piece_new(b, pages, nr, RA_PRIO_ASYNC) : NULL;
	if (!pc) {
		rc = pool ? -ENOMEM : -EINVAL;
		goto out_drop;
	}
	pc->whole = true;
	pc->pool = pool;
	pc->w.file = file;
	pc->w.owner = owner;
	pc->w.due = due;
	ra_backing_get(b);
	rc = ra_pool_submit(pool, &pc->w);
	if (!rc)
		return 0;
	ra_backing_put(b);
	free(pc);
out_drop:
	complete_all(b, pages, nr, -EAGAIN);
	return rc;
}
