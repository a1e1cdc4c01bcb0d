/* backing.c - the backing object (ra_backing_open(): its descriptors, the
 * O_DIRECT probe, counters) and the reads that go around the cache: what the
 * backing's page cache holds (ra_backing_resident_fd(),
 * ra_backing_read_resident(); a file held, ra_held_resident()) and a read
 * whole from the disk descriptor (ra_backing_read_whole()).  The reads into
 * LOCKED cache pages, pieces and windows, are backing_pages.c's; the two
 * share struct ra_backing and the helpers of backing_internal.h.
 *
 * Resident data: cachestat(2) counts what the backing's page cache holds
 * without starting any I/O; a range wholly resident is read buffered from a
 * second descriptor (DIRECT mode) and nothing is dropped: those pages are
 * someone else's.  A file cut lately (ra_backing_cut()) is read from the
 * disk descriptor only: the page cache may hold the zeros a truncate wrote
 * while a read copied them (cut_check()).
 *
 * Concurrency: as backing.h -- any number of threads at once per backing,
 * counters atomic, no lock held across I/O.
 */
#include "backing_internal.h"
#include "cache/base/count.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

ssize_t ra_backing_preadv(struct ra_backing *b, int fd, const struct iovec *iov,
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
bool ra_backing_cut_lately(const struct ra_backing *b)
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
int64_t ra_backing_resident_pages(int fd, off_t off, size_t len)
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

bool ra_held_resident(int fd, uint64_t size)
{
	uint64_t pages = (size + RA_IO_PAGE_SIZE - 1) / RA_IO_PAGE_SIZE;
	uint64_t slack = pages >> RA_RESIDENT_SLACK_SHIFT, missing = 0;
	struct statfs sf;

	if (!fstatfs(fd, &sf) &&
	    (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC))
		return true;
	for (uint64_t off = 0; off < size; off += RA_RESIDENT_PIECE) {
		size_t len = size - off < RA_RESIDENT_PIECE
				     ? (size_t)(size - off)
				     : (size_t)RA_RESIDENT_PIECE;
		uint64_t want = (len + RA_IO_PAGE_SIZE - 1) / RA_IO_PAGE_SIZE;
		int64_t held = ra_backing_resident_pages(fd, (off_t)off, len);

		if (held < 0)
			return false;
		if ((uint64_t)held < want)
			missing += want - (uint64_t)held;
		if (missing > slack)
			return false;
	}
	return true;
}

uint64_t ra_backing_eofs(const struct ra_backing *b)
{
	return __atomic_load_n(&b->eofs, __ATOMIC_ACQUIRE);
}

/* This thread's last probe by ra_backing_resident_fd() that found nothing
 * resident (ra_backing_none_resident()); b NULL: none.  A stale one (its
 * backing freed, another at the same address) costs at most a disk read of
 * pages that were resident meanwhile: the data are the same. */
static __thread struct {
	const struct ra_backing *b;
	uint64_t off, end;
} none_resident;

bool ra_backing_none_resident(const struct ra_backing *b, uint64_t off,
			      size_t len)
{
	bool hit = none_resident.b == b && b && off >= none_resident.off &&
		   off + len <= none_resident.end;

	none_resident.b = NULL;
	return hit;
}

/* The probe of ra_backing_resident_fd(), without its quiet rule. */
static int resident_fd(struct ra_backing *b, uint64_t off, size_t len)
{
	uint64_t pages;
	int64_t res;

	none_resident.b = NULL;
	if (!b->probe || !len || ra_backing_cut_lately(b))
		return -EAGAIN;
	pages = ((off + len - 1) >> RA_IO_PAGE_SHIFT) -
		(off >> RA_IO_PAGE_SHIFT) + 1;
	res = ra_backing_resident_pages(b->fd, (off_t)off, len);
	if (res == 0) {
		none_resident.b = b;
		/* cachestat counts the pages the range touches */
		none_resident.off = off & ~(uint64_t)(RA_IO_PAGE_SIZE - 1);
		none_resident.end = (off + len + RA_IO_PAGE_SIZE - 1) &
				    ~(uint64_t)(RA_IO_PAGE_SIZE - 1);
	}
	if (res < 0 || (uint64_t)res < pages)
		return -EAGAIN;
	return b->cached_fd >= 0 ? b->cached_fd : b->fd;
}

bool ra_backing_holds(struct ra_backing *b, uint64_t off, size_t len)
{
	return resident_fd(b, off, len) >= 0;
}

bool ra_backing_changed(const struct stat *a, const struct stat *b)
{
	return a->st_ctim.tv_sec != b->st_ctim.tv_sec ||
	       a->st_ctim.tv_nsec != b->st_ctim.tv_nsec ||
	       a->st_size != b->st_size;
}

int ra_backing_resident_fd(struct ra_backing *b, uint64_t off, size_t len)
{
	struct timespec now;
	struct stat st;
	int fd = resident_fd(b, off, len);

	/* The probe first: most misses find nothing resident, and a file
	 * not held needs no look at its ctime (one fstat(2) a cold miss). */
	if (fd < 0)
		return fd;
	/* Quiet for RA_SPLICE_QUIET_S: the bytes are copied when the reply
	 * is, and a cut meanwhile could not be taken back. */
	if (fstat(b->fd, &st) || clock_gettime(CLOCK_REALTIME, &now) ||
	    now.tv_sec - st.st_ctim.tv_sec < RA_SPLICE_QUIET_S)
		return -EBUSY;
	return fd;
}

ssize_t ra_backing_read_resident(struct ra_backing *b, void *buf, uint64_t off,
				 size_t len)
{
	size_t done = 0;
	struct stat st0, st1;
	int fd = resident_fd(b, off, len);

	if (fd < 0)
		return fd;
	if (fstat(fd, &st0))
		return -EAGAIN;
	while (done < len) {
		struct iovec iov = {(char *)buf + done, len - done};
		ssize_t n =
			ra_backing_preadv(b, fd, &iov, 1, (off_t)(off + done));

		if (n < 0 && !done)
			return n;
		if (n <= 0)
			break; /* the EOF, or an error after some data */
		done += (size_t)n;
	}
	if (!done)
		return 0;
	/* Changed while it was read: a truncate then may have zeroed pages
	 * the read copied, and a write since may have put the size back
	 * (cut_check() would not see it).  The disk descriptor reads it
	 * again: O_DIRECT is a snapshot. */
	if (fstat(fd, &st1))
		return -EAGAIN;
	if (ra_backing_changed(&st0, &st1)) {
		if ((uint64_t)st1.st_size < off + done)
			ra_backing_cut(b); /* left shorter: as cut_check() */
		return -EAGAIN;
	}
	return (ssize_t)done;
}

ssize_t ra_backing_read_whole(struct ra_backing *b, char *abuf, uint64_t off,
			      size_t len, char **data, bool counted)
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
		ssize_t n = ra_backing_preadv(b, b->fd, &iov, 1,
					      (off_t)(aoff + done));

		if (n < 0) {
			if (counted)
				CTR_ADD(b, errors, 1);
			if (!done)
				return n;
			break; /* a short read: what was read is data */
		}
		if (n > 0 && !direct)
			n = cut_check(b, b->fd, (off_t)(aoff + done), n);
		done += (size_t)n;
		if (counted) {
			CTR_ADD(b, reads, 1);
			CTR_ADD(b, bytes, (uint64_t)n);
		}
		if (n == 0 || (direct && (n & (RA_IO_PAGE_SIZE - 1))))
			break; /* the EOF (O_DIRECT: an unaligned count) */
	}
	/* Short of the range: the file ends before the size the caller cut
	 * at (shrunk behind the mount), which ra_backing_eofs() tells. */
	if (counted && done < alen && aoff + done < off + len)
		__atomic_fetch_add(&b->eofs, 1, __ATOMIC_RELEASE);
	if (done <= off - aoff)
		return 0;
	done -= off - aoff;
	return (ssize_t)(done < len ? done : len);
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
	r = ra_backing_preadv(b, fd, &iov, 1, 0);
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
	b->probe = !b->hook &&
		   ra_backing_resident_pages(nfd, 0, RA_IO_PAGE_SIZE) >= 0;
	if (b->probe && b->mode == RA_BACKING_IO_DIRECT) {
		b->cached_fd = reopen(fd, 0);
		if (b->cached_fd < 0)
			b->probe = false;
		else
			posix_fadvise(b->cached_fd, 0, 0, POSIX_FADV_RANDOM);
	}
	b->totals = cfg->totals;
	if (b->totals && b->mode == RA_BACKING_IO_DIRECT)
		afs_count(&b->totals->opens_direct, 1);
	else if (b->totals)
		afs_count(&b->totals->opens_buffered, 1);
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
