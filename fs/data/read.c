/* read.c - the read path, FUSE-free; see data.h.
 *
 * A read of pages [first, last]:
 *
 *   rcu_read_lock
 *     every page present and UPTODATE?  -- yes --> reply(iovec over the page
 *     |                                            buffers), rcu_read_unlock
 *     | a page with the READAHEAD mark: (unlock) ra_marker_hit(), look again
 *     | no: page @miss is not UPTODATE
 *     v
 *   rcu_read_unlock
 *   @miss absent, kernel mode, the whole read in the backing's page cache
 *                -> read it from there into the reply (or splice it),
 *                   around the cache
 *   @miss absent -> ra_sync_miss(): decide, insert the window LOCKED, read
 *                   the reader's own pages, queue the rest; kernel mode,
 *                   every page of the read absent, decided random: read
 *                   it from the disk into the reply, around the cache
 *   wait for the LOCKED pages of [miss, last] (cancellable through @wait)
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
#include <unistd.h>

#include "data_internal.h"

/* Rounds of miss -> wait -> look again before serving around the cache
 * (pages evicted or invalidated between their I/O and the reply). */
#define READ_ATTEMPTS 4
#define NO_INDEX UINT64_MAX

/* Reply with @n bytes of @buf (none: the EOF). */
static void reply_buf(const struct afs_read *r, char *buf, size_t n)
{
	struct iovec iov = {buf, n};

	r->reply(r->ctx, &iov, n ? 1 : 0);
}

/* pread() @size bytes at @off of @fd into the thread's buffer and reply. */
static int read_backing(const struct afs_read *r, size_t size, uint64_t off)
{
	char *buf = afs_thread_buf(size);
	size_t done = 0;

	if (!buf)
		return -ENOMEM;
	while (done < size) {
		ssize_t n = pread(r->fd, buf + done, size - done,
				  (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (done)
				break; /* short read: what was read is data */
			return -errno;
		}
		if (n == 0)
			break; /* end of file */
		done += (size_t)n;
	}
	reply_buf(r, buf, done);
	return 0;
}

/* The bookkeeping of a read served from the backing's page cache: one
 * call down (ra_file_served_around()) and the counters. */
static void note_resident(struct afs_data *a, const struct afs_read *r,
			  struct ra_file *raf, struct ra_state *ra,
			  uint64_t off, size_t n, bool spliced)
{
	uint64_t first = off >> PAGE_SHIFT;

	ra_file_served_around(raf, ra, first,
			      n ? ((off + n - 1) >> PAGE_SHIFT) - first + 1
				: 0);
	afs_count(&r->fc->resident_reads, 1);
	afs_count(&a->resident_reads, 1);
	if (spliced) {
		afs_count(&r->fc->resident_spliced, 1);
		afs_count(&a->resident_spliced, 1);
	}
}

/*
 * A miss on [@off, @end) whose every page the backing's page cache holds
 * (data another process just wrote or read): read it from there straight
 * into the reply, as a plain passthrough does -- no cache pages, no
 * window; a length @r->reply_fd takes is spliced, not read.  In kernel
 * mode aheadfs's copy would be dropped to history at the reply anyway (the
 * kernel keeps its own), so staging it would cost page allocation, a tree
 * insertion and the workers' pass over the bytes for nothing, and there is
 * nothing to read ahead of data already in memory.  In direct mode the
 * same holds for a stream (a read that goes on from its handle's last
 * one): staged, its pages would be held twice (the backing's page cache
 * and aheadfs's) and copied twice; a read out of sequence still goes
 * through the cache, where the next read of the same pages is a hit with
 * no probe (docs/design.md, "What the backing's page cache holds").
 * The slots become history (what the reply gives the kernel) and the read
 * is noted, so a stream that runs on into data the page cache lacks gets
 * its windows (the handle's state, or the context rule for a reader
 * without one).  A file changed in the last RA_SPLICE_QUIET_S is copied,
 * not spliced: the copy is checked against a change while it was made
 * (ra_file_read_resident()), a splice could not be.
 * Return: 1 when not every page is resident (go on), 0 after replying, or
 * the backing's -errno.
 */
static int read_resident(struct afs_data *a, const struct afs_read *r,
			 struct ra_file *raf, struct ra_state *ra, uint64_t off,
			 uint64_t end)
{
	size_t len = end - off;
	char *buf;
	ssize_t n;

	/* Spliced: the backing's pages go into the reply by reference, one
	 * copy (the kernel's, into the mount's page cache) instead of two. */
	if (r->reply_fd && len >= r->fd_min && len <= r->fd_max) {
		int fd = ra_file_resident_fd(raf, off, len);

		if (fd == -EBUSY)
			goto copied; /* changed lately: read and checked */
		if (fd < 0)
			return 1;
		note_resident(a, r, raf, ra, off, len, true);
		/* Last: the reader may close the file once it has its data. */
		r->reply_fd(r->ctx, fd, off, len);
		return 0;
	}
copied:
	buf = afs_thread_buf(len);
	if (!buf)
		return 1;
	n = ra_file_read_resident(raf, buf, off, len);
	if (n == -EAGAIN)
		return 1;
	if (n < 0)
		return (int)n;
	note_resident(a, r, raf, ra, off, (size_t)n, false);
	reply_buf(r, buf, (size_t)n);
	return 0;
}

/* The backing's size now, when a read reaches past the EOF we know: a file
 * that grew behind the mount is revalidated (its pages dropped) before the
 * read is clipped. */
static uint64_t refresh_size(const struct afs_read *r)
{
	struct stat st;

	if (fstat(r->fd, &st) == 0 &&
	    (uint64_t)st.st_size != afs_fcache_size(r->fc))
		afs_fcache_revalidate(r->fc, &st);
	return afs_fcache_size(r->fc);
}

/*
 * The bookkeeping of a kernel-mode random miss read around the cache
 * (read_around() with @random): every page of [@off, @off + @len) was
 * absent and ra_sync_miss() answered RA_MISS_READ_AROUND.  Through the
 * cache its pages would be allocated, inserted LOCKED, read, served,
 * dropped to history at the reply and freed after a grace period, all for
 * this one reader; what stays of them is the same here: history entries
 * (ra_file_served_around()), and the counts a miss read through the cache
 * leaves -- the backing's read and bytes (ra_file_read_random()), the
 * pages served (cache.hits).  A read cut short (@n < @len: the file shrank
 * behind the mount) takes the size again now, as a read through the cache
 * would (eof_check()).  Measured: docs/design.md, "Random misses around the
 * cache".
 */
static void note_random(struct afs_data *a, const struct afs_read *r,
			struct ra_file *raf, struct ra_state *ra, uint64_t off,
			size_t len, size_t n)
{
	uint64_t first = off >> PAGE_SHIFT;

	if (n < len)
		refresh_size(r);
	if (n) {
		uint64_t nr = ((off + n - 1) >> PAGE_SHIFT) - first + 1;

		cache_count_hit(r->fc->map, nr, n);
		ra_file_served_around(raf, ra, first, nr);
	}
	afs_count(&r->fc->random_around, 1);
	afs_count(&a->random_around, 1);
}

/* Around the cache, from the backing's disk descriptor (O_DIRECT where the
 * backing takes it): a snapshot even while the file is cut behind the
 * mount, where a buffered read may copy the zeros a truncate writes into
 * the page cache (ra_backing_cut()).  @random: a random miss
 * (note_random()); else a read the cache could not serve, not counted as
 * the backing's. */
static int read_around(struct afs_data *a, const struct afs_read *r,
		       struct ra_file *raf, struct ra_state *ra, uint64_t off,
		       uint64_t end, bool random)
{
	size_t len = end - off;
	char *buf = afs_thread_buf(len + 2 * PAGE_SIZE);
	char *data;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	n = random ? ra_file_read_random(raf, buf, off, len, &data)
		   : ra_file_read_whole(raf, buf, off, len, &data);
	if (n < 0)
		return (int)n;
	if (random)
		note_random(a, r, raf, ra, off, len, (size_t)n);
	/* Last: the reader may close the file once it has its data. */
	reply_buf(r, data, (size_t)n);
	return 0;
}

/*
 * The size to cut a read at, taken again (refresh_size()) when a backing
 * read met the file's end since the last look: a read in the last page,
 * or one that found the file shorter than the size we know -- shrunk
 * behind the mount with no word (no watcher event, or its pages dropped
 * without a new identity) -- whose pages past the real end are zeros no
 * reader may be served.  A size that moved drops every page
 * (afs_fcache_revalidate()), those zeros with them.  The count is stored
 * after the size is taken, so a reader that finds it unchanged finds the
 * new size too.
 */
static uint64_t eof_check(const struct afs_read *r, struct ra_file *raf,
			  uint64_t fsize)
{
	uint64_t eofs = ra_file_eofs(raf);

	if (__builtin_expect(eofs == __atomic_load_n(&r->fc->eofs_seen,
						     __ATOMIC_ACQUIRE),
			     1))
		return fsize;
	fsize = refresh_size(r);
	__atomic_store_n(&r->fc->eofs_seen, eofs, __ATOMIC_RELEASE);
	return fsize;
}

/*
 * The READAHEAD mark of a window whose I/O is in flight: the read stopped
 * at @p (page @idx, LOCKED) and will wait for it.  Clear the first mark
 * among the pages present from @idx to @last and return its index, or
 * NO_INDEX.  Acted on now, as the kernel does (it starts the async window
 * on a marked page before waiting for it), the next window is queued while
 * this one is read; acted on after the wait, it came only once the window
 * had arrived, and a server's other threads, already further on, missed
 * past its end (smbd: most of the sync decisions).  RCU read lock held.
 */
static uint64_t inflight_mark(struct cache_mapping *m, struct cache_page *p,
			      uint64_t idx, uint64_t last)
{
	for (;;) {
		if (cache_page_test_clear_readahead(p))
			return idx;
		if (++idx > last)
			return NO_INDEX;
		p = cache_lookup_rcu(m, idx);
		if (!p)
			return NO_INDEX;
	}
}

/* ra_marker_hit()'s flags for a read at page @first: RA_MARK_RESIDENT
 * where this reader's misses try the backing's page cache first (the rule
 * of afs_data_read(): kernel mode, or a read that goes on from its
 * handle's last one). */
static unsigned int resident_next(const struct afs_read *r,
				  const struct ra_state *ra, uint64_t first)
{
	return !r->keep_data || ra_state_sequential(ra, first)
		       ? RA_MARK_RESIDENT
		       : 0;
}

/*
 * One attempt at the whole reply from the cache.  Returns 0 after replying,
 * 1 with *@miss the first page that is not UPTODATE and *@locked whether it
 * is there with its I/O in flight (else it is absent), or 2 with *@miss a
 * page whose data ends before the read does (cache_page_len()): it was read
 * when the file ended there, and the file we know is longer, so either the
 * page is stale (the file grew) or our size is (it shrank).  Its zeros are
 * never served.
 *
 * The reply is the last thing done with the reader's state: once the
 * application has its data it may close the file, and whatever frees the
 * handle may run before this thread does again.  So the READAHEAD mark is
 * acted on first (ra_marker_hit() may wait for cache memory, so outside
 * the RCU section, then the pages are looked up again), and the
 * bookkeeping is done inside the section, before the reply.
 */
static int try_reply(const struct afs_read *r, struct ra_file *raf,
		     struct ra_state *ra, uint64_t off, uint64_t end,
		     uint64_t *miss, bool *locked, uint64_t *missing)
{
	struct cache_mapping *m = r->fc->map;
	struct iovec iov[AFS_DATA_MAX_REQUEST_PAGES];
	struct cache_page *pages[AFS_DATA_MAX_REQUEST_PAGES];
	uint64_t first = off >> PAGE_SHIFT, last = (end - 1) >> PAGE_SHIFT;
	uint64_t marker, idx;
	bool marks = true; /* act on one mark per read at most */
	bool short_page;
	unsigned int n;

again:
	marker = NO_INDEX;
	short_page = false;
	n = 0;
	rcu_read_lock();
	for (idx = first; idx <= last; idx++) {
		struct cache_page *p = cache_lookup_rcu(m, idx);
		uint64_t pstart = idx << PAGE_SHIFT, from, to;

		if (!p || !cache_page_uptodate(p)) {
			*locked = p && cache_page_locked(p);
			if (*locked && marks && marker == NO_INDEX)
				marker = inflight_mark(m, p, idx, last);
			break;
		}
		to = idx == last ? end - pstart : PAGE_SIZE;
		if (__builtin_expect(to > cache_page_len(p), 0)) {
			short_page = true;
			break;
		}
		if (marks && marker == NO_INDEX &&
		    cache_page_test_clear_readahead(p))
			marker = idx;
		pages[n] = p;
		from = idx == first ? off - pstart : 0;
		iov[n].iov_base = (char *)cache_page_data(p) + from;
		iov[n].iov_len = to - from;
		n++;
	}
	/* The read's first miss: its absent pages counted in the same pass,
	 * for the stats (a page under I/O, someone's window, is waited for,
	 * not missed).  Not when a mark is acted on first: its window may
	 * cover them (the caller counts after it, NO_INDEX). */
	if (missing)
		*missing = NO_INDEX;
	if (idx <= last && missing && marker == NO_INDEX) {
		*missing = 0;
		for (uint64_t i = idx; i <= last; i++)
			if (!cache_lookup_rcu(m, i))
				(*missing)++;
	}
	if (idx <= last || marker != NO_INDEX) {
		rcu_read_unlock();
		/* The mark was cleared: no one else acts on it. */
		if (marker != NO_INDEX)
			ra_marker_hit(raf, ra, marker, last - marker + 1,
				      resident_next(r, ra, first));
		marks = false;
		if (idx > last)
			goto again;
		*miss = idx;
		return short_page ? 2 : 1;
	}
	/* One use per read, counted on the attempt that replies: a page
	 * marked again after a mark or a wait would count as used twice, and
	 * go to the main queue as if read again (direct mode: read-once
	 * pages then filled main, and prefetch lost its room in probation). */
	for (unsigned int i = 0; i < n; i++)
		cache_page_mark_accessed(pages[i]);
	cache_count_hit(m, n, end - off);
	ra_note_read(ra, first, last - first + 1);
	/* A reader that keeps the copy it is given leaves only the fact that
	 * the pages were read (one copy of the data in memory).  The buffers
	 * stay valid for the reply until rcu_read_unlock(). */
	if (!r->keep_data)
		cache_page_drop_to_history(m, first, last);
	r->reply(r->ctx, iov, (int)n);
	rcu_read_unlock();
	return 0;
}

/* Pages of [@first, @last] absent now: a read's misses after a mark's
 * window was queued, what a warm-up could not bring in. */
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

int afs_data_read(struct afs_data *a, const struct afs_read *r, uint64_t off,
		  size_t size)
{
	struct afs_fcache *fc = r->fc;
	struct ra_file *raf = fc ? fc_raf(fc) : NULL;
	struct ra_state *ra;
	struct cache_wait_cancel wc;
	uint64_t end, fsize, miss, missing = 0, first = off >> PAGE_SHIFT;
	bool counted = false, locked = false;
	int rc = 0;

	if (size > AFS_DATA_MAX_REQUEST)
		return -EINVAL;
	if (!raf || !size)
		return read_backing(r, size, off);
	ra = r->ra ? r->ra : &fc->ra;
	cache_thread_online();
	fsize = afs_fcache_size(fc);
	end = off + size;
	if (end > fsize)
		fsize = refresh_size(r);

	for (int attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
		uint64_t last;

		/* Cut at the EOF, looked at again when a backing read (what
		 * this reader waited for included) met an end: the file may
		 * have shrunk. */
		fsize = eof_check(r, raf, fsize);
		if (off >= fsize) {
			r->reply(r->ctx, NULL, 0);
			return 0;
		}
		if (end > fsize)
			end = fsize;
		last = (end - 1) >> PAGE_SHIFT;
		if (last >= CACHE_INDEX_LIMIT)
			goto uncached;
		rc = try_reply(r, raf, ra, off, end, &miss, &locked,
			       counted ? NULL : &missing);
		if (!rc)
			return 0;
		if (rc == 2) {
			/* A page that ended short of the read: drop it and take
			 * the size again, then look again (read anew, or cut at
			 * the new end). */
			cache_mapping_invalidate(fc->map, miss, miss);
			fsize = refresh_size(r);
			rc = 0;
			continue;
		}
		rc = 0;
		if (!counted) {
			if (missing == NO_INDEX) /* after a mark's window */
				missing = count_missing(fc->map, miss, last);
			cache_count_miss(fc->map, missing);
			afs_count(&a->demand_misses, 1);
			counted = true;
		}
		/* A page under I/O is someone's window: wait for it.  An
		 * absent one is this reader's miss: served from the backing's
		 * page cache when it holds the whole read (kernel mode; direct
		 * mode, a read that goes on from its handle's last one), else
		 * readahead decides. */
		if (!locked && resident_next(r, ra, first)) {
			rc = read_resident(a, r, raf, ra, off, end);
			if (rc <= 0)
				return rc;
		}
		if (!locked) {
			/* Every page absent, none kept: a random decision
			 * is read around the cache (read_around()). */
			bool around = !r->keep_data && !attempt &&
				      miss == first &&
				      missing == last - first + 1;

			rc = ra_sync_miss(raf, ra, miss, last - miss + 1,
					  around ? RA_MISS_AROUND : 0);
			if (rc == RA_MISS_READ_AROUND)
				return read_around(a, r, raf, ra, off, end,
						   true);
			if (rc)
				break; /* -ENOSPC: no room; around the cache */
		}
		/* The reader hears of the cancellation token only while it
		 * waits: a replied request may be gone right after. */
		cache_wait_cancel_init(&wc);
		if (r->wait)
			r->wait(r->ctx, &wc);
		rc = wait_range(fc->map, miss, last, &wc);
		if (r->wait)
			r->wait(r->ctx, NULL);
		if (rc == -EAGAIN) {
			rc = 0; /* invalidated under us: look again */
			continue;
		}
		if (rc)
			return rc;
	}
uncached:
	afs_count(&fc->uncached_reads, 1);
	afs_count(&a->uncached_reads, 1);
	ra_note_read(ra, off >> PAGE_SHIFT,
		     ((end - 1) >> PAGE_SHIFT) - (off >> PAGE_SHIFT) + 1);
	return read_around(a, r, raf, ra, off, end, false);
}

int afs_fcache_warm(struct afs_fcache *fc, uint64_t first, uint64_t npages)
{
	struct ra_file *raf = fc_raf(fc);
	uint64_t last = first + npages - 1;
	int rc;

	if (!raf || !npages || last < first || last >= CACHE_INDEX_LIMIT)
		return -EINVAL;
	cache_thread_online();
	rc = ra_file_advise(raf, RA_ADVICE_WILLNEED, first << PAGE_SHIFT,
			    npages << PAGE_SHIFT);
	if (!rc)
		rc = wait_range(fc->map, first, last, NULL);
	if (rc && rc != -EAGAIN)
		return rc; /* the backing's error */
	return (int)(npages - count_missing(fc->map, first, last));
}
