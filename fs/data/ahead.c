/* ahead.c - the cached read path and its coherency hooks; see ahead.h.
 *
 * A READ of pages [first, last]:
 *
 *   rcu_read_lock
 *     every page present and UPTODATE?  -- yes --> fuse_reply_iov() over the
 *     |                                            page buffers, rcu_read_unlock,
 *     | no: page @miss is not                      then the READAHEAD mark (if
 *     v                                            one was hit) -> ra_marker_hit
 *   rcu_read_unlock
 *   @miss absent -> ra_sync_miss(): decide, insert the window LOCKED, read
 *                   the reader's own pages, queue the rest
 *   wait for the LOCKED pages of [miss, last] (cancelled by INTERRUPT)
 *   and try again; after a few rounds, or when the cache has no room,
 *   serve the read from the backing directly.
 *
 * The page buffers a reply points at stay valid until rcu_read_unlock():
 * an invalidation or eviction racing the reply frees them only after a
 * grace period, so the reply carries either the old or the new bytes of a
 * page, never a recycled buffer.
 */
/* The read side of liburcu inlined (docs/benchmarks.md: ~1.5 ns for a
 * lock/unlock pair instead of ~12 ns through the library). */
#define _LGPL_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/data/data.h"

#define PAGE_SHIFT CACHE_PAGE_SHIFT
#define PAGE_SIZE CACHE_PAGE_SIZE
/* An unaligned request of max_write bytes spans one page more. */
#define READ_MAX_PAGES (AFS_DATA_MAX_REQUEST / PAGE_SIZE + 1)
/* Rounds of miss -> wait -> look again before serving around the cache
 * (pages evicted or invalidated between their I/O and the reply). */
#define READ_ATTEMPTS 4
#define NO_INDEX UINT64_MAX

uint64_t afs_ahead_min_cache(const struct afs_ahead_config *cfg,
			     unsigned int threads)
{
	uint64_t window = cfg->ra.max_bytes;
	uint64_t workers = ra_workers_of(&cfg->ra);

	if (!window) {
		window = 2 * cfg->ra.stripe_bytes;
		if (window < cfg->ra.auto_floor_bytes)
			window = cfg->ra.auto_floor_bytes;
		if (window < (1u << 20))
			window = 1u << 20;
	}
	/* Each FUSE thread holds at most one request's pages while it waits;
	 * each worker fills at most one window at a time. */
	return (threads + workers) * (uint64_t)READ_MAX_PAGES * PAGE_SIZE +
	       workers * window;
}

int afs_ahead_check_budget(const struct afs_ahead_config *cfg,
			   unsigned int threads, char *err, size_t errlen)
{
	uint64_t min = afs_ahead_min_cache(cfg, threads);

	if (!cfg->cache_size || cfg->cache_size >= min)
		return 0;
	snprintf(err, errlen,
		 "cache_size=%llu is too small: %u threads and %u "
		 "readahead workers need at least %llu MiB",
		 (unsigned long long)cfg->cache_size, threads,
		 ra_workers_of(&cfg->ra),
		 (unsigned long long)((min + (1u << 20) - 1) >> 20));
	return -EINVAL;
}

int afs_ahead_create(const struct afs_ahead_config *cfg, unsigned int threads,
		     struct afs_ahead **out, char *err, size_t errlen)
{
	struct afs_ahead *a = calloc(1, sizeof(*a));
	struct cache_config cc = {0};
	uint64_t min;
	int rc;

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	a->cfg = *cfg;
	if (!a->cfg.cache_size) {
		long pages = sysconf(_SC_PHYS_PAGES);
		long psize = sysconf(_SC_PAGESIZE);

		a->cfg.cache_size =
			pages > 0 && psize > 0
				? (uint64_t)pages * (uint64_t)psize / 8
				: 256u << 20;
	}
	min = afs_ahead_min_cache(cfg, threads);
	rc = afs_ahead_check_budget(&a->cfg, threads, err, errlen);
	if (rc)
		goto out_free;
	cache_thread_online();
	cc.budget_bytes = a->cfg.cache_size;
	cc.min_bytes = min;
	rc = cache_create(&cc, &a->cache);
	if (rc) {
		snprintf(err, errlen, "cannot create the page cache: %s",
			 strerror(-rc));
		goto out_free;
	}
	rc = ra_engine_create(&a->cfg.ra, a->cache, &a->ra);
	if (rc) {
		snprintf(err, errlen, "cannot start the readahead engine: %s",
			 rc == -EINVAL ? "invalid readahead options"
				       : strerror(-rc));
		goto out_cache;
	}
	clock_gettime(CLOCK_MONOTONIC, &a->started);
	a->started_wall = time(NULL);
	*out = a;
	return 0;

out_cache:
	cache_destroy(a->cache);
out_free:
	free(a);
	return rc;
}

void afs_ahead_destroy(struct afs_ahead *a)
{
	if (!a)
		return;
	cache_thread_online();
	ra_engine_destroy(a->ra);
	cache_destroy(a->cache);
	free(a);
}

static void identity_of(const struct stat *st, struct cache_identity *id)
{
	id->ino = (uint64_t)st->st_ino;
	id->size = (uint64_t)st->st_size;
	id->mtime = st->st_mtim;
	id->ctime = st->st_ctim;
}

void afs_fcache_get(struct afs_fcache *fc)
{
	__atomic_add_fetch(&fc->refs, 1, __ATOMIC_RELAXED);
}

void afs_fcache_put(struct afs_fcache *fc)
{
	if (!fc || __atomic_sub_fetch(&fc->refs, 1, __ATOMIC_ACQ_REL))
		return;
	cache_thread_online();
	ra_file_put(fc->raf);
	cache_mapping_put(fc->map);
	free(fc);
}

int afs_fcache_attach(struct afs_ahead *a, struct afs_fcache **slot, int fd,
		      const struct stat *st, struct afs_fcache **out)
{
	struct afs_fcache *fc = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	struct afs_fcache *expected = NULL;
	struct cache_identity id;
	int rc;

	if (fc) {
		afs_fcache_get(fc);
		*out = fc;
		return 0;
	}
	cache_thread_online();
	fc = calloc(1, sizeof(*fc));
	if (!fc)
		return -ENOMEM;
	identity_of(st, &id);
	rc = cache_mapping_create(a->cache, &id, &fc->map);
	if (rc)
		goto out_free;
	rc = ra_file_open(a->ra, fc->map, fd, st->st_dev, &fc->raf);
	if (rc)
		goto out_map;
	fc->size = (uint64_t)st->st_size;
	fc->refs = 1; /* the slot's */
	if (!__atomic_compare_exchange_n(slot, &expected, fc, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Another open of the file attached first: use its. */
		afs_fcache_put(fc);
		fc = expected;
	}
	afs_fcache_get(fc);
	*out = fc;
	return 0;

out_map:
	cache_mapping_put(fc->map);
out_free:
	free(fc);
	return rc;
}

bool afs_ahead_revalidate(struct afs_ahead *a, struct afs_fcache *fc,
			  const struct stat *st)
{
	struct cache_identity now;

	cache_thread_online();
	identity_of(st, &now);
	if (!cache_mapping_revalidate(fc->map, &now))
		return false;
	/* Streams describe the old contents: forget them with the pages. */
	ra_file_invalidate(fc->raf);
	__atomic_store_n(&fc->size, now.size, __ATOMIC_RELEASE);
	__atomic_add_fetch(&fc->revalidations, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&a->revalidations, 1, __ATOMIC_RELAXED);
	return true;
}

void afs_ahead_changed(struct afs_fcache *fc, int fd, uint64_t off,
		       uint64_t len, bool to_end)
{
	struct cache_identity id;
	struct stat st;
	uint64_t first, last;

	if (!fc || (!len && !to_end))
		return;
	cache_thread_online();
	if (to_end) {
		/* A truncate: from the page holding the lower of the old and
		 * new EOF on (its tail changes either way). */
		uint64_t old = __atomic_load_n(&fc->size, __ATOMIC_ACQUIRE);

		first = (off < old ? off : old) >> PAGE_SHIFT;
		last = UINT64_MAX;
	} else {
		first = off >> PAGE_SHIFT;
		last = (off + len - 1) >> PAGE_SHIFT;
	}
	cache_mapping_invalidate(fc->map, first, last);
	if (to_end)
		ra_file_invalidate(fc->raf);
	if (fstat(fd, &st) == 0) {
		identity_of(&st, &id);
		cache_mapping_set_identity(fc->map, &id);
		__atomic_store_n(&fc->size, id.size, __ATOMIC_RELEASE);
	} else {
		/* Without the new identity, the next open must not trust the
		 * pages: drop them all (revalidation then starts afresh). */
		cache_mapping_invalidate(fc->map, 0, UINT64_MAX);
	}
}

void afs_ahead_touched(struct afs_fcache *fc, int fd)
{
	struct cache_identity id;
	struct stat st;

	if (!fc)
		return;
	cache_thread_online();
	if (fstat(fd, &st)) {
		cache_mapping_invalidate(fc->map, 0, UINT64_MAX);
		return;
	}
	identity_of(&st, &id);
	cache_mapping_set_identity(fc->map, &id);
	__atomic_store_n(&fc->size, id.size, __ATOMIC_RELEASE);
}

void afs_read_uncached(fuse_req_t req, int fd, size_t size, off_t off)
{
	char *buf = afs_thread_buf(size);
	size_t done = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	while (done < size) {
		ssize_t n =
			pread(fd, buf + done, size - done, off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (done)
				break; /* short read: what was read is data */
			fuse_reply_err(req, errno);
			return;
		}
		if (n == 0)
			break; /* end of file */
		done += (size_t)n;
	}
	fuse_reply_buf(req, buf, done);
}

static void read_interrupted(fuse_req_t req, void *data)
{
	cache_wait_cancel(data);
}

/* The backing's size now, when a read reaches past the EOF we know: a file
 * that grew behind the mount is revalidated (its pages dropped) before the
 * read is clipped. */
static uint64_t refresh_size(struct afs_ahead *a, struct afs_handle *h)
{
	struct afs_fcache *fc = h->fc;
	struct stat st;

	if (fstat(h->fd, &st) == 0 &&
	    (uint64_t)st.st_size !=
		    __atomic_load_n(&fc->size, __ATOMIC_ACQUIRE))
		afs_ahead_revalidate(a, fc, &st);
	return __atomic_load_n(&fc->size, __ATOMIC_ACQUIRE);
}

/*
 * One attempt at the whole reply from the cache.  Returns 0 after replying,
 * or 1 with *@miss the first page that is not UPTODATE and *@locked whether
 * it is there with its I/O in flight (else it is absent).
 *
 * The reply is the last thing done with the request's handle: once the
 * application has its data it may close the file, and the RELEASE that
 * frees the handle may be served before this thread runs again.  So the
 * READAHEAD mark is acted on first (ra_marker_hit() may wait for cache
 * memory, so outside the RCU section, then the pages are looked up again),
 * and the bookkeeping is done inside the section, before the reply.
 */
static int try_reply(fuse_req_t req, struct afs_handle *h, uint64_t off,
		     uint64_t end, uint64_t *miss, bool *locked)
{
	struct afs_fcache *fc = h->fc;
	struct iovec iov[READ_MAX_PAGES];
	uint64_t first = off >> PAGE_SHIFT, last = (end - 1) >> PAGE_SHIFT;
	uint64_t marker, idx;
	bool marks = true; /* act on one mark per read at most */
	unsigned int n;

again:
	marker = NO_INDEX;
	n = 0;
	rcu_read_lock();
	for (idx = first; idx <= last; idx++) {
		struct cache_page *p = cache_lookup_rcu(fc->map, idx);
		uint64_t pstart = idx << PAGE_SHIFT, from, to;

		if (!p || !cache_page_uptodate(p)) {
			*locked = p && cache_page_locked(p);
			break;
		}
		if (marks && marker == NO_INDEX &&
		    cache_page_test_clear_readahead(p))
			marker = idx;
		cache_page_mark_accessed(p);
		from = idx == first ? off - pstart : 0;
		to = idx == last ? end - pstart : PAGE_SIZE;
		iov[n].iov_base = (char *)cache_page_data(p) + from;
		iov[n].iov_len = to - from;
		n++;
	}
	if (idx <= last || marker != NO_INDEX) {
		rcu_read_unlock();
		/* The mark was cleared: no one else acts on it. */
		if (marker != NO_INDEX)
			ra_marker_hit(fc->raf, &h->ra, marker,
				      last - marker + 1);
		marks = false;
		if (idx > last)
			goto again;
		*miss = idx;
		return 1;
	}
	cache_count_hit(fc->map, n, end - off);
	ra_note_read(&h->ra, first, last - first + 1);
	/* The kernel keeps the copy it is given: keep only the fact that the
	 * pages were read (one copy of the data in memory).  The buffers stay
	 * valid for the reply until rcu_read_unlock(). */
	if (!h->direct_io)
		cache_page_drop_to_history(fc->map, first, last);
	fuse_reply_iov(req, iov, (int)n);
	rcu_read_unlock();
	return 0;
}

/* Pages of [@first, @last] that a read finds absent, for the stats: a page
 * under I/O (a window read ahead, not yet complete) is waited for, not
 * missed. */
static uint64_t count_missing(struct cache_mapping *m, uint64_t first,
			      uint64_t last)
{
	uint64_t missing = 0;

	rcu_read_lock();
	for (uint64_t idx = first; idx <= last; idx++)
		if (!cache_lookup_rcu(m, idx))
			missing++;
	rcu_read_unlock();
	return missing;
}

/* Wait for every LOCKED page of [@first, @last].  Absent pages are left to
 * the next attempt.  Returns 0, or the first failed wait's -errno. */
static int wait_range(struct cache_mapping *m, uint64_t first, uint64_t last,
		      struct cache_wait_cancel *wc)
{
	for (uint64_t idx = first; idx <= last; idx++) {
		struct cache_page *p;
		bool held = false;
		int rc;

		rcu_read_lock();
		p = cache_lookup_rcu(m, idx);
		if (p && cache_page_locked(p))
			held = cache_page_tryget(p);
		rcu_read_unlock();
		if (!held)
			continue;
		rc = cache_page_wait(p, wc);
		cache_page_put(p);
		if (rc)
			return rc;
	}
	return 0;
}

void afs_ahead_read(fuse_req_t req, struct afs_ahead *a, struct afs_handle *h,
		    size_t size, off_t off)
{
	struct afs_fcache *fc = h->fc;
	struct cache_wait_cancel wc;
	uint64_t start = (uint64_t)off, end, fsize, miss;
	bool counted = false, locked = false;
	int rc = 0;

	if (!fc || !size || off < 0) {
		afs_read_uncached(req, h->fd, size, off);
		return;
	}
	cache_thread_online();
	fsize = __atomic_load_n(&fc->size, __ATOMIC_ACQUIRE);
	end = start + size;
	if (end > fsize)
		fsize = refresh_size(a, h);
	if (start >= fsize) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (end > fsize)
		end = fsize;
	if (((end - 1) >> PAGE_SHIFT) >= CACHE_INDEX_LIMIT)
		goto uncached;

	for (int attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
		uint64_t last = (end - 1) >> PAGE_SHIFT;

		if (!try_reply(req, h, start, end, &miss, &locked))
			return;
		if (!counted) {
			cache_count_miss(fc->map,
					 count_missing(fc->map, miss, last));
			counted = true;
		}
		/* A page under I/O is someone's window: wait for it.  An
		 * absent one is this reader's miss: readahead decides. */
		if (!locked) {
			rc = ra_sync_miss(fc->raf, &h->ra, miss,
					  last - miss + 1);
			if (rc)
				break; /* -ENOSPC: no room; around the cache */
		}
		/* The interrupt callback is registered only while waiting:
		 * a replied request is freed, so it must be gone by then. */
		cache_wait_cancel_init(&wc);
		fuse_req_interrupt_func(req, read_interrupted, &wc);
		rc = wait_range(fc->map, miss, last, &wc);
		fuse_req_interrupt_func(req, NULL, NULL);
		if (rc == -EAGAIN) {
			rc = 0; /* invalidated under us: look again */
			continue;
		}
		if (rc) {
			fuse_reply_err(req, -rc);
			return;
		}
	}
uncached:
	__atomic_add_fetch(&fc->uncached_reads, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&a->uncached_reads, 1, __ATOMIC_RELAXED);
	ra_note_read(&h->ra, start >> PAGE_SHIFT,
		     ((end - 1) >> PAGE_SHIFT) - (start >> PAGE_SHIFT) + 1);
	afs_read_uncached(req, h->fd, end - start, off);
}
