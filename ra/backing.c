/* backing.c - backing-file reads into LOCKED cache pages.
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
 */
#include "backing.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

struct ra_backing {
	int fd; /* read-only, O_DIRECT in RA_BACKING_IO_DIRECT mode */
	/* Buffered read-only fd for ranges the backing's page cache holds
	 * (DIRECT mode; BUFFERED mode reads b->fd), or -1.  probe: the
	 * kernel has cachestat(2) and it works on this file. */
	int cached_fd;
	bool probe;
	enum ra_backing_io mode; /* in force */
	uint64_t chunk_pages; /* split pieces on this; 0: no split */
	const struct ra_page_ops *ops;
	ra_preadv_fn hook;
	void *hook_ctx;
	int refs; /* __atomic */
	/* Reads that met the file's end (a zeroed tail or zero pages).  Every
	 * window is cut at the owner's EOF, so a read meets the end only in
	 * the file's last page -- or where the file shrank behind the owner
	 * (ra_backing_eofs()).  Release: counted before the pages it zeroed
	 * complete. */
	uint64_t eofs;
	/* __atomic: the CLOCK_MONOTONIC_COARSE second of the last
	 * ra_backing_cut(), plus one; 0: never (cut_lately()). */
	uint64_t changed_s;
	/* Counters: relaxed atomics, also added to *totals when set.  A page
	 * is counted before it is completed, so whoever saw it complete sees
	 * it counted. */
	struct ra_io_totals c;
	struct ra_io_totals *totals;
};

/* A queued piece (whole = false) or window (whole = true). */
struct piece {
	struct ra_work w; /* first: the pool hands us &w */
	struct ra_backing *b; /* a reference */
	struct ra_pool *pool; /* windows: where their pieces go */
	bool whole;
	size_t n;
	struct cache_page *pages[];
};

#define CTR_ADD(b, field, v)                                                   \
	do {                                                                   \
		__atomic_fetch_add(&(b)->c.field, (v), __ATOMIC_RELAXED);      \
		if ((b)->totals)                                               \
			__atomic_fetch_add(&(b)->totals->field, (v),           \
					   __ATOMIC_RELAXED);                  \
	} while (0)

static ssize_t do_preadv(struct ra_backing *b, int fd, const struct iovec *iov,
			 int iovcnt, off_t off)
{
	ssize_t r;

	do {
		if (b->hook) {
			r = b->hook(b->hook_ctx, fd, iov, iovcnt, off);
		} else {
			r = preadv(fd, iov, iovcnt, off);
			if (r < 0)
				r = -errno;
		}
	} while (r == -EINTR);
	return r;
}

static uint64_t coarse_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec;
}

void ra_backing_cut(struct ra_backing *b)
{
	__atomic_store_n(&b->changed_s, coarse_s() + 1, __ATOMIC_RELAXED);
}

/* The file was cut less than RA_CUT_S seconds ago (ra_backing_cut()):
 * read it from the disk descriptor only, never from the page cache. */
static bool cut_lately(const struct ra_backing *b)
{
	uint64_t at = __atomic_load_n(&b->changed_s, __ATOMIC_RELAXED);

	return at && coarse_s() + 1 - at < RA_CUT_S;
}

/*
 * A buffered read of @r bytes at @off of @fd just returned: if the file is
 * now shorter than that, it was cut during the read or since, and the bytes
 * past the new end may be the zeros the truncate wrote into the page cache
 * while they were copied (ra_backing_cut()).  Return the count cut at the
 * end found now, and note the cut.  One fstat(2) per buffered read; none
 * under a test hook (its file is not the descriptor's).
 */
static ssize_t cut_check(struct ra_backing *b, int fd, off_t off, ssize_t r)
{
	struct stat st;

	if (b->hook || fstat(fd, &st) || off + r <= st.st_size)
		return r;
	ra_backing_cut(b);
	return st.st_size > off ? (ssize_t)(st.st_size - off) : 0;
}

/* Where a piece is read from: the O_DIRECT fd, or a buffered one; drop:
 * POSIX_FADV_DONTNEED what was read (buffered mode: pages this read brought
 * into the page cache are not kept twice). */
struct source {
	int fd;
	bool buffered, drop;
};

/*
 * do_preadv() of whole pages (@iov: page buffers) from @src.  A count that
 * is not a page multiple is EOF (the kernel's rule for local file systems,
 * O_DIRECT included) only where the file ends: a backing that returns a
 * short count inside the file (a network or FUSE file system, a signal)
 * would otherwise have zeros served as its data.  Buffered mode reads the
 * rest of that page in place; O_DIRECT (aligned offsets only) asks again a
 * few times, then fails with -EIO.
 */
static ssize_t preadv_pages(struct ra_backing *b, const struct source *src,
			    const struct iovec *iov, int iovcnt, off_t off)
{
	for (int tries = 0;; tries++) {
		ssize_t r = do_preadv(b, src->fd, iov, iovcnt, off);
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
				ssize_t n = do_preadv(b, src->fd, &rest, 1,
						      off + r);

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

/* cachestat(2) (Linux 6.5), called by number: glibc 2.36 has no wrapper. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
struct afs_cachestat_range {
	uint64_t off, len;
};
struct afs_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted,
		nr_recently_evicted;
};

static int64_t cachestat_pages(int fd, off_t off, size_t len)
{
	struct afs_cachestat_range r = {(uint64_t)off, len};
	struct afs_cachestat cs;

	if (syscall(__NR_cachestat, fd, &r, &cs, 0))
		return -errno;
	return (int64_t)cs.nr_cache;
}

/*
 * Pages of [@off, @off + @len) the backing's page cache holds, or -errno.
 * A count short of the range, but not zero, is taken again: cachestat(2)
 * now and then counts a wholly resident range short while nothing changes
 * it (Linux 6.18, a 32 MiB file just written: one 128-page probe in about
 * 8000 counted 97-125, and the next probe of the same range counted all
 * 128).  Believed, a short count sends a resident read through readahead,
 * which caches again what the page cache holds.  A range truly partly
 * resident costs one more call, against the disk read that follows.
 */
static int64_t resident_pages(int fd, off_t off, size_t len)
{
	uint64_t want = ((uint64_t)off + len - 1) / RA_IO_PAGE_SIZE -
			(uint64_t)off / RA_IO_PAGE_SIZE + 1;
	int64_t res = cachestat_pages(fd, off, len);
	int64_t again;

	if (res <= 0 || (uint64_t)res >= want)
		return res;
	again = cachestat_pages(fd, off, len);
	return again > res ? again : res;
}

uint64_t ra_backing_eofs(const struct ra_backing *b)
{
	return __atomic_load_n(&b->eofs, __ATOMIC_ACQUIRE);
}

int ra_backing_resident_fd(struct ra_backing *b, uint64_t off, size_t len)
{
	uint64_t pages;
	int64_t res;

	if (!b->probe || !len || cut_lately(b))
		return -EAGAIN;
	pages = ((off + len - 1) >> RA_IO_PAGE_SHIFT) -
		(off >> RA_IO_PAGE_SHIFT) + 1;
	res = resident_pages(b->fd, (off_t)off, len);
	if (res < 0 || (uint64_t)res < pages)
		return -EAGAIN;
	return b->cached_fd >= 0 ? b->cached_fd : b->fd;
}

ssize_t ra_backing_read_resident(struct ra_backing *b, void *buf, uint64_t off,
				 size_t len)
{
	size_t done = 0;
	int fd = ra_backing_resident_fd(b, off, len);

	if (fd < 0)
		return fd;
	while (done < len) {
		struct iovec iov = {(char *)buf + done, len - done};
		ssize_t n = do_preadv(b, fd, &iov, 1, (off_t)(off + done));

		if (n < 0)
			return done ? (ssize_t)done : n;
		if (n == 0)
			break; /* the EOF */
		done += (size_t)n;
	}
	return done ? cut_check(b, fd, (off_t)off, (ssize_t)done) : 0;
}

ssize_t ra_backing_read_whole(struct ra_backing *b, char *abuf, uint64_t off,
			      size_t len, char **data)
{
	uint64_t aoff = off & ~(uint64_t)(RA_IO_PAGE_SIZE - 1);
	size_t alen = (size_t)(((off + len + RA_IO_PAGE_SIZE - 1) &
				~(uint64_t)(RA_IO_PAGE_SIZE - 1)) -
			       aoff);
	size_t done = 0;
	bool direct = b->mode == RA_BACKING_IO_DIRECT;

	*data = abuf + (off - aoff);
	while (done < alen) {
		struct iovec iov = {abuf + done, alen - done};
		ssize_t n = do_preadv(b, b->fd, &iov, 1, (off_t)(aoff + done));

		if (n < 0) {
			if (!done)
				return n;
			break; /* a short read: what was read is data */
		}
		if (n > 0 && !direct)
			n = cut_check(b, b->fd, (off_t)(aoff + done), n);
		done += (size_t)n;
		if (n == 0 || (direct && (n & (RA_IO_PAGE_SIZE - 1))))
			break; /* the EOF (O_DIRECT: an unaligned count) */
	}
	if (done <= off - aoff)
		return 0;
	done -= off - aoff;
	return (ssize_t)(done < len ? done : len);
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
	struct source disk = {b->fd, b->mode == RA_BACKING_IO_BUFFERED,
			      b->mode == RA_BACKING_IO_BUFFERED};
	int64_t res = 0;

	if (b->probe && !cut_lately(b))
		res = resident_pages(b->fd, page_off(pindex(b, pages[0])),
				     n << RA_IO_PAGE_SHIFT);
	if (res > 0 && (size_t)res >= n) {
		struct source mem = {b->cached_fd >= 0 ? b->cached_fd : b->fd,
				     true, false};

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

/* One aligned read at offset 0: does this fd really take O_DIRECT? */
static int probe_direct(struct ra_backing *b, int fd)
{
	struct iovec iov;
	void *buf;
	ssize_t r;

	if (posix_memalign(&buf, RA_IO_PAGE_SIZE, RA_IO_PAGE_SIZE))
		return -ENOMEM;
	iov.iov_base = buf;
	iov.iov_len = RA_IO_PAGE_SIZE;
	r = do_preadv(b, fd, &iov, 1, 0);
	free(buf);
	/* EINVAL is the refusal; any other error is the data's, and reads
	 * will report it page by page. */
	return r == -EINVAL ? -EINVAL : 0;
}

/* Our own read-only open of @fd's inode. */
static int reopen(int fd, int flags)
{
	char path[32];
	int nfd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	nfd = open(path, O_RDONLY | O_CLOEXEC | flags);
	return nfd < 0 ? -errno : nfd;
}

int ra_backing_open(int fd, const struct ra_backing_config *cfg,
		    struct ra_backing **out)
{
	struct ra_backing *b;
	int nfd = -1, rc;

	if (fd < 0 || !cfg || !out || !cfg->ops || !cfg->ops->index ||
	    !cfg->ops->data || !cfg->ops->complete ||
	    cfg->chunk % RA_IO_PAGE_SIZE ||
	    (cfg->mode != RA_BACKING_IO_AUTO &&
	     cfg->mode != RA_BACKING_IO_DIRECT &&
	     cfg->mode != RA_BACKING_IO_BUFFERED))
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->ops = cfg->ops;
	b->hook = cfg->preadv_hook;
	b->hook_ctx = cfg->hook_ctx;
	b->chunk_pages = cfg->chunk >> RA_IO_PAGE_SHIFT;
	b->refs = 1;

	if (cfg->mode != RA_BACKING_IO_BUFFERED) {
		nfd = reopen(fd, O_DIRECT);
		if (nfd >= 0) {
			rc = probe_direct(b, nfd);
			if (rc) {
				close(nfd);
				nfd = rc; /* -EINVAL refused, or -ENOMEM */
			}
		}
		if (nfd >= 0) {
			b->mode = RA_BACKING_IO_DIRECT;
		} else if (cfg->mode == RA_BACKING_IO_DIRECT ||
			   nfd == -ENOMEM) {
			rc = nfd;
			goto out_free;
		}
	}
	if (nfd < 0) {
		nfd = reopen(fd, 0);
		if (nfd == -ENOENT) {
			/* No /proc: share the caller's open file. */
			nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
			if (nfd < 0)
				nfd = -errno;
		}
		if (nfd < 0) {
			rc = nfd;
			goto out_free;
		}
		b->mode = RA_BACKING_IO_BUFFERED;
		/* Our windows are the readahead: none from the kernel. */
		posix_fadvise(nfd, 0, 0, POSIX_FADV_RANDOM);
	}
	b->fd = nfd;
	b->cached_fd = -1;
	/* The residency probe (read_piece()): not under a test hook, whose
	 * fake file the page cache knows nothing of. */
	b->probe = !b->hook && resident_pages(nfd, 0, RA_IO_PAGE_SIZE) >= 0;
	if (b->probe && b->mode == RA_BACKING_IO_DIRECT) {
		b->cached_fd = reopen(fd, 0);
		if (b->cached_fd < 0)
			b->probe = false;
		else
			posix_fadvise(b->cached_fd, 0, 0, POSIX_FADV_RANDOM);
	}
	b->totals = cfg->totals;
	if (b->totals && b->mode == RA_BACKING_IO_DIRECT)
		__atomic_fetch_add(&b->totals->opens_direct, 1,
				   __ATOMIC_RELAXED);
	else if (b->totals)
		__atomic_fetch_add(&b->totals->opens_buffered, 1,
				   __ATOMIC_RELAXED);
	*out = b;
	return 0;

out_free:
	free(b);
	return rc;
}

void ra_backing_get(struct ra_backing *b)
{
	__atomic_fetch_add(&b->refs, 1, __ATOMIC_RELAXED);
}

void ra_backing_put(struct ra_backing *b)
{
	if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL))
		return;
	close(b->fd);
	if (b->cached_fd >= 0)
		close(b->cached_fd);
	free(b);
}

enum ra_backing_io ra_backing_mode(const struct ra_backing *b)
{
	return b->mode;
}

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

void ra_backing_stats(const struct ra_backing *b, struct ra_backing_stats *st)
{
	st->reads = LOAD(b->c.reads);
	st->bytes = LOAD(b->c.bytes);
	st->pieces_queued = LOAD(b->c.pieces_queued);
	st->pages_ok = LOAD(b->c.pages_ok);
	st->pages_eof = LOAD(b->c.pages_eof);
	st->errors = LOAD(b->c.errors);
	st->pages_failed = LOAD(b->c.pages_failed);
	st->cached_reads = LOAD(b->c.cached_reads);
	st->cached_bytes = LOAD(b->c.cached_bytes);
	st->mode = b->mode;
}

void ra_io_totals_read(const struct ra_io_totals *t, struct ra_io_totals *out)
{
	out->reads = LOAD(t->reads);
	out->bytes = LOAD(t->bytes);
	out->pieces_queued = LOAD(t->pieces_queued);
	out->pages_ok = LOAD(t->pages_ok);
	out->pages_eof = LOAD(t->pages_eof);
	out->errors = LOAD(t->errors);
	out->pages_failed = LOAD(t->pages_failed);
	out->cached_reads = LOAD(t->cached_reads);
	out->cached_bytes = LOAD(t->cached_bytes);
	out->opens_direct = LOAD(t->opens_direct);
	out->opens_buffered = LOAD(t->opens_buffered);
}
