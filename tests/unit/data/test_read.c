/* test_read.c - the data path's read function (afs_data_read()) and the
 * file identity it owns, without FUSE: a temporary file with a known
 * pattern, read through a reply callback that checks every byte.
 *
 * Covered: hits served from the cache pages themselves; misses read from
 * the backing and windows opened; the READAHEAD mark queueing the next
 * window; EOF (short, empty); reads without a handle; a backing error
 * reaching the reader and leaving nothing cached; a wait cancelled by the
 * reader's interrupt; the fallback around a cache with no room; random
 * misses read around the cache in kernel mode; the daemon's own changes
 * not taken for changes behind the mount by the watcher; the
 * identity (changes behind the mount told from the daemon's own).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "data_internal.h"
#include "ra/ra.h"

#include "../fixture/data_path.h"

#define PAGE 4096u
#define NPAGES 512u

struct fixture {
	struct data_path dp; /* the file, its mount, its afs_fcache */
	struct afs_fcache *other; /* a second file a test made, or NULL */
	int other_fd;
};

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)((off >> 12) * 11 + (off & 4095) * 3 + 7);
}

/* The file's bytes, then out of the kernel's page cache, as a file on disk
 * that no one read lately: a read whose pages the backing's page cache holds
 * may be served from there (read.c), around the cache these tests look at. */
static void write_file(struct fixture *fx, uint64_t size)
{
	uint8_t buf[PAGE];

	assert_int_equal(ftruncate(fx->dp.fd, 0), 0);
	for (uint64_t off = 0; off < size; off += PAGE) {
		uint64_t n = size - off < PAGE ? size - off : PAGE;

		for (uint64_t b = 0; b < n; b++)
			buf[b] = pattern(off + b);
		assert_int_equal(pwrite(fx->dp.fd, buf, n, (off_t)off),
				 (ssize_t)n);
	}
	assert_int_equal(fstat(fx->dp.fd, &fx->dp.st), 0);
	data_path_uncache(&fx->dp);
}

static int setup_budget(void **state, uint64_t budget, uint64_t size)
{
	struct afs_data_config cfg;
	struct fixture *fx = calloc(1, sizeof(*fx));

	cache_thread_online();
	assert_non_null(fx);
	data_path_tmpfile(&fx->dp, "afs-read");
	write_file(fx, size);
	afs_data_config_init(&cfg);
	cfg.cache_size = budget;
	cfg.manual_reclaim = true;
	cfg.ra.max_bytes = 256 << 10;
	cfg.ra.workers = 2;
	data_path_mount(&fx->dp, &cfg, true);
	*state = fx;
	return 0;
}

static int setup(void **state)
{
	return setup_budget(state, 64u << 20, NPAGES * PAGE);
}

static int setup_small_file(void **state)
{
	return setup_budget(state, 64u << 20, 10000);
}

/* The smallest budget the cache takes: a few requests' worth. */
#define TINY_PAGES CACHE_MIN_BUDGET_PAGES
static int setup_tiny_cache(void **state)
{
	return setup_budget(state, TINY_PAGES * (PAGE + 128), NPAGES * PAGE);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	afs_fcache_put(fx->other);
	if (fx->other_fd > 0)
		close(fx->other_fd);
	data_path_close(&fx->dp);
	free(fx);
	return 0;
}

/* What one read replied. */
struct reply {
	struct afs_fcache *fc; /* set: check that iovecs point into pages */
	uint64_t off; /* of the next byte */
	uint64_t bytes;
	int calls, iovs, fd_calls;
	bool bad, from_pages;
	bool cancel; /* the wait hook cancels at once (an interrupt) */
	int waits;
};

static int reply_check(void *ctx, const struct iovec *iov, int n)
{
	struct reply *r = ctx;

	r->calls++;
	r->iovs = n;
	r->from_pages = n > 0;
	for (int v = 0; v < n; v++) {
		const uint8_t *b = iov[v].iov_base;

		/* A reply from cached pages comes inside the read's RCU
		 * section: the page of this byte must hold it at this very
		 * address.  (A reply from a buffer comes outside it: the
		 * lookup takes its own section, nested or not.) */
		if (r->fc) {
			struct cache_page *p;

			rcu_read_lock();
			p = cache_lookup_rcu(r->fc->map, r->off / PAGE);
			if (!p || (const uint8_t *)cache_page_data(p) +
						  r->off % PAGE !=
					  b)
				r->from_pages = false;
			rcu_read_unlock();
		}
		for (size_t i = 0; i < iov[v].iov_len; i++, r->off++)
			if (b[i] != pattern(r->off))
				r->bad = true;
		r->bytes += iov[v].iov_len;
	}
	return 0;
}

/* A spliced reply, as the adapter's: the bytes are read from @fd at @off
 * here (the test stands where the kernel's pipe would). */
static int reply_fd_check(void *ctx, int fd, uint64_t off, size_t len)
{
	struct reply *r = ctx;
	static uint8_t b[256 * PAGE];
	ssize_t n;

	r->fd_calls++;
	if (off != r->off || len > sizeof(b)) {
		r->bad = true;
		return -EINVAL;
	}
	n = pread(fd, b, len, (off_t)off);
	if (n != (ssize_t)len) {
		r->bad = true;
		return -EIO;
	}
	for (size_t i = 0; i < len; i++, r->off++)
		if (b[i] != pattern(r->off))
			r->bad = true;
	r->bytes += len;
	return 0;
}

static void wait_hook(void *ctx, struct cache_wait_cancel *wc)
{
	struct reply *r = ctx;

	if (!wc)
		return;
	r->waits++;
	if (r->cancel)
		cache_wait_cancel(wc);
}

static int do_read(struct fixture *fx, struct ra_state *st, uint64_t off,
		   size_t size, bool keep, struct reply *out)
{
	struct afs_read r = {.fc = fx->dp.fc,
			     .ra = st,
			     .fd = fx->dp.fd,
			     .keep_data = keep,
			     .reply = reply_check,
			     .wait = wait_hook,
			     .ctx = out};

	out->off = off;
	return afs_data_read(fx->dp.a, &r, off, size);
}

/* Wait until no page of the file has I/O in flight. */
static void settle(struct fixture *fx)
{
	for (uint64_t i = 0; i < NPAGES; i++) {
		struct cache_page *p;

		rcu_read_lock();
		p = cache_lookup_rcu(fx->dp.fc->map, i);
		if (p && !cache_page_tryget(p))
			p = NULL;
		rcu_read_unlock();
		if (p) {
			cache_page_wait(p, NULL);
			cache_page_put(p);
		}
	}
}

static void file_stats(struct fixture *fx, struct ra_file_stats *rs,
		       struct cache_mapping_stats *ms)
{
	ra_file_stats(fx->dp.fc->raf, rs);
	cache_mapping_stats(fx->dp.fc->map, ms);
}

static void test_miss_then_hit_from_pages(void **state)
{
	struct fixture *fx = *state;
	struct reply miss = {0}, hit = {.fc = fx->dp.fc};
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	uint64_t reads;
	struct ra_state st;

	ra_state_init(&st);
	assert_int_equal(do_read(fx, &st, 100, 3 * PAGE, true, &miss), 0);
	assert_int_equal(miss.calls, 1);
	assert_int_equal(miss.bytes, 3 * PAGE);
	assert_false(miss.bad);
	settle(fx);
	file_stats(fx, &rs, &ms);
	assert_true(rs.backing_reads >= 1);
	assert_int_equal(ms.misses, 4); /* pages 0..3, none cached before */
	reads = rs.backing_reads;

	/* The same bytes again: from the cache pages, no backing read. */
	rcu_read_lock();
	assert_int_equal(do_read(fx, &st, 100, 3 * PAGE, true, &hit), 0);
	rcu_read_unlock();
	assert_int_equal(hit.bytes, 3 * PAGE);
	assert_false(hit.bad);
	assert_true(hit.from_pages);
	assert_int_equal(hit.iovs, 4); /* one iovec per page, no copy */
	file_stats(fx, &rs, &ms);
	assert_int_equal(rs.backing_reads, reads);
	assert_int_equal(ms.misses, 4);
	assert_true(ms.hits >= 8);
	ra_state_destroy(&st);
}

/* Read 16 pages at page @p on @st, checked whole and right. */
static void read_16(struct fixture *fx, struct ra_state *st, uint64_t p,
		    bool keep)
{
	struct reply r = {0};

	assert_int_equal(do_read(fx, st, p * PAGE, 16 * PAGE, keep, &r), 0);
	assert_int_equal(r.bytes, 16 * PAGE);
	assert_false(r.bad);
}

/* A stream of 16-page reads: the first miss opens a window, its mark
 * queues the next, and later reads find their pages read ahead. */
static void test_sequential_marks_queue_windows(void **state)
{
	struct fixture *fx = *state;
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	struct ra_state st;

	ra_state_init(&st);
	for (uint64_t p = 0; p < NPAGES; p += 16)
		read_16(fx, &st, p, true);
	settle(fx);
	file_stats(fx, &rs, &ms);
	assert_int_equal(rs.c.decisions[RA_KIND_INITIAL], 1);
	assert_true(rs.c.decisions[RA_KIND_ASYNC] +
			    rs.c.decisions[RA_KIND_STREAM_ASYNC] >=
		    3);
	assert_true(rs.c.async_pages > NPAGES / 2);
	assert_true(ms.misses < 32); /* only the start missed */
	ra_state_destroy(&st);
}

/* Reads without a handle (ra NULL) use the file's own state: still a
 * stream, not random reads. */
static void test_no_handle_still_streams(void **state)
{
	struct fixture *fx = *state;
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;

	for (uint64_t p = 0; p < 128; p += 8) {
		struct reply r = {0};

		assert_int_equal(
			do_read(fx, NULL, p * PAGE, 8 * PAGE, true, &r), 0);
		assert_false(r.bad);
	}
	settle(fx);
	file_stats(fx, &rs, &ms);
	assert_int_equal(rs.c.decisions[RA_KIND_RANDOM], 0);
	assert_true(rs.c.async_pages > 0);
}

/* A 10000-byte file: a read across EOF is short, at or past it empty. */
static void test_eof(void **state)
{
	struct fixture *fx = *state;
	struct reply a = {0}, b = {0}, c = {0};

	assert_int_equal(do_read(fx, NULL, 8192, 8192, true, &a), 0);
	assert_int_equal(a.bytes, 10000 - 8192);
	assert_false(a.bad);
	assert_int_equal(do_read(fx, NULL, 10000, 4096, true, &b), 0);
	assert_int_equal(b.calls, 1);
	assert_int_equal(b.bytes, 0);
	assert_int_equal(do_read(fx, NULL, 1 << 20, 4096, true, &c), 0);
	assert_int_equal(c.bytes, 0);
	assert_int_equal(
		do_read(fx, NULL, 0, AFS_DATA_MAX_REQUEST + 1, true, &c),
		-EINVAL);
}

/* The file grew behind the mount: a read past the EOF the identity knows
 * looks at the backing and returns the new bytes. */
static void test_grown_behind(void **state)
{
	struct fixture *fx = *state;
	struct reply r = {0};
	uint64_t changes = afs_fcache_changes(fx->dp.fc);

	write_file(fx, 20000);
	assert_int_equal(do_read(fx, NULL, 8192, 12000, true, &r), 0);
	assert_int_equal(r.bytes, 20000 - 8192);
	assert_false(r.bad);
	assert_int_equal(afs_fcache_size(fx->dp.fc), 20000);
	assert_int_equal(afs_fcache_changes(fx->dp.fc), changes + 1);
}

/* The file shrank behind the mount, with no word to aheadfs: a read the
 * size it knows still takes as inside the file meets the backing's end.
 * The pages past it are not served as zeros: the read ends at the new EOF,
 * which the next reads see too.  (tests/integration/changes.sh once read
 * zeros through a handle held across such a truncate, its pages dropped.) */
static void test_shrunk_behind(void **state)
{
	struct fixture *fx = *state;
	struct reply a = {0}, b = {0}, c = {0}, d = {0};
	uint64_t changes = afs_fcache_changes(fx->dp.fc);

	assert_int_equal(ftruncate(fx->dp.fd, 16 * PAGE), 0);
	assert_int_equal(afs_fcache_size(fx->dp.fc), NPAGES * PAGE);
	assert_int_equal(do_read(fx, NULL, 64 * PAGE, 4 * PAGE, true, &a), 0);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.bytes, 0);
	assert_false(a.bad);
	assert_int_equal(afs_fcache_size(fx->dp.fc), 16 * PAGE);
	assert_int_equal(afs_fcache_changes(fx->dp.fc), changes + 1);
	/* A read across the new EOF is cut there; one inside is the data. */
	assert_int_equal(do_read(fx, NULL, 14 * PAGE, 4 * PAGE, true, &b), 0);
	assert_int_equal(b.bytes, 2 * PAGE);
	assert_false(b.bad);
	assert_int_equal(do_read(fx, NULL, 65 * PAGE, PAGE, true, &c), 0);
	assert_int_equal(c.bytes, 0);
	settle(fx);
	assert_int_equal(do_read(fx, NULL, 0, 16 * PAGE, true, &d), 0);
	assert_int_equal(d.bytes, 16 * PAGE);
	assert_false(d.bad);
}

/* Kernel mode: pages handed to the reader become history. */
static void test_handed_over_pages_become_history(void **state)
{
	struct fixture *fx = *state;
	struct cache_mapping_stats ms;
	struct reply r = {0}, again = {0};

	assert_int_equal(do_read(fx, NULL, 0, 4 * PAGE, false, &r), 0);
	assert_int_equal(do_read(fx, NULL, 0, 4 * PAGE, false, &again), 0);
	assert_false(again.bad);
	cache_mapping_stats(fx->dp.fc->map, &ms);
	assert_true(ms.to_history >= 4);
	assert_true(ms.misses >= 8); /* history is no data: missed again */
}

/* Kernel mode, a random miss with every page absent: read from the backing
 * straight into the reply, nothing inserted; the pages become history and
 * count as a miss read through the cache does (misses, hits, the backing's
 * read).  Not in direct mode (the cache keeps what it serves), not when a
 * page of the read is cached, and a read the backing cuts short (the file
 * shrank behind the mount) ends at the new EOF, whose size is taken. */
static void test_random_miss_around_cache(void **state)
{
	struct fixture *fx = *state;
	struct afs_fcache *fc = fx->dp.fc;
	struct reply kernel = {.fc = fc}, keep = {0}, part = {0}, cut = {0};
	struct cache_mapping_stats ms, ms2;
	struct ra_file_stats rs, rs2;
	struct ra_state st, st2, st3, st4;

	file_stats(fx, &rs, &ms);
	if (rs.backing_io != RA_BACKING_IO_DIRECT)
		skip(); /* a temporary directory without O_DIRECT */
	ra_state_init(&st);
	assert_int_equal(
		do_read(fx, &st, 300 * PAGE + 100, 2 * PAGE, false, &kernel),
		0);
	assert_int_equal(kernel.calls, 1);
	assert_int_equal(kernel.bytes, 2 * PAGE);
	assert_false(kernel.bad);
	assert_false(kernel.from_pages); /* a buffer, not cache pages */
	assert_int_equal(fc->random_around, 1);
	assert_int_equal(fx->dp.a->random_around, 1);
	file_stats(fx, &rs2, &ms2);
	assert_int_equal(rs2.c.decisions[RA_KIND_RANDOM] -
				 rs.c.decisions[RA_KIND_RANDOM],
			 1);
	assert_int_equal(ms2.inserted, ms.inserted);
	assert_int_equal(ms2.misses - ms.misses, 3); /* pages 300..302 */
	assert_int_equal(ms2.hits - ms.hits, 3);
	assert_int_equal(ms2.hit_bytes - ms.hit_bytes, 2 * PAGE);
	assert_int_equal(rs2.backing_reads - rs.backing_reads, 1);
	assert_int_equal(rs2.backing_bytes - rs.backing_bytes, 3 * PAGE);
	rcu_read_lock();
	for (uint64_t i = 300; i <= 302; i++)
		assert_true(cache_history_rcu(fc->map, i));
	rcu_read_unlock();

	/* Direct mode: through the cache, which keeps the pages. */
	ra_state_init(&st2);
	assert_int_equal(do_read(fx, &st2, 200 * PAGE, 2 * PAGE, true, &keep),
			 0);
	assert_false(keep.bad);
	settle(fx);
	cache_mapping_stats(fc->map, &ms);
	assert_true(ms.inserted >= ms2.inserted + 2);
	assert_int_equal(fc->random_around, 1);

	/* Page 201 cached, page 200 absent: the cache path, which serves
	 * page 201 from its page. */
	cache_mapping_invalidate(fc->map, 200, 200);
	ra_state_init(&st3);
	assert_int_equal(do_read(fx, &st3, 200 * PAGE, 2 * PAGE, false, &part),
			 0);
	assert_int_equal(part.bytes, 2 * PAGE);
	assert_false(part.bad);
	assert_int_equal(fc->random_around, 1);

	/* Cut behind the mount inside page 401, with no word to aheadfs. */
	assert_int_equal(ftruncate(fx->dp.fd, 401 * PAGE + 1000), 0);
	ra_state_init(&st4);
	assert_int_equal(do_read(fx, &st4, 400 * PAGE, 4 * PAGE, false, &cut),
			 0);
	assert_int_equal(cut.bytes, PAGE + 1000);
	assert_false(cut.bad);
	assert_int_equal(fc->random_around, 2);
	assert_int_equal(afs_fcache_size(fc), 401 * PAGE + 1000);
	ra_state_destroy(&st);
	ra_state_destroy(&st2);
	ra_state_destroy(&st3);
	ra_state_destroy(&st4);
}

/* A wait the reader's interrupt cancels ends the read with -EINTR. */
/* cachestat(2) says whether the whole range is resident: 1, 0, or -1
 * where the kernel has no cachestat (before 6.5). */
static int resident(int fd, uint64_t off, uint64_t len)
{
	struct {
		uint64_t off, len;
	} range = {off, len};
	uint64_t cs[5];

	if (syscall(451, fd, &range, cs, 0))
		return -1;
	return cs[0] >= (len + PAGE - 1) / PAGE;
}

/* The whole file read into the backing's page cache, as by another process,
 * into @buf (NPAGES pages), and checked resident there. */
static void read_in(struct fixture *fx, char *buf)
{
	assert_int_equal(pread(fx->dp.fd, buf, NPAGES * PAGE, 0),
			 (ssize_t)(NPAGES * PAGE));
	assert_int_equal(resident(fx->dp.fd, 0, NPAGES * PAGE), 1);
}

/* Kernel mode, a file the backing's page cache holds (just read by another
 * process): served from there, one copy and no cache page; the slots become
 * history.  The same file read out of sequence with its data kept (direct
 * mode), or once out of the page cache, goes through the cache; a stream
 * that ran over resident data and goes on into data the page cache lacks
 * gets a window at once. */
static void test_resident_read_around_cache(void **state)
{
	struct fixture *fx = *state;
	struct reply kernel = {.fc = fx->dp.fc}, keep = {0}, cold = {0};
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	struct ra_state st, other;
	static char buf[NPAGES * PAGE];

	if (resident(fx->dp.fd, 0, PAGE) < 0)
		skip();
	ra_state_init(&st);
	read_in(fx, buf);

	assert_int_equal(do_read(fx, &st, 0, 16 * PAGE, false, &kernel), 0);
	assert_int_equal(kernel.calls, 1);
	assert_int_equal(kernel.bytes, 16 * PAGE);
	assert_false(kernel.bad);
	assert_false(kernel.from_pages); /* the thread's buffer */
	assert_int_equal(fx->dp.fc->resident_reads, 1);
	assert_int_equal(fx->dp.a->resident_reads, 1);
	file_stats(fx, &rs, &ms);
	assert_int_equal(ms.inserted, 0);
	assert_int_equal(ms.history_pages, 16);
	assert_int_equal(rs.c.windows, 0);
	assert_int_equal(rs.backing_reads, 0);

	/* Out of the page cache: the stream goes on through the cache, its
	 * next read a sequential miss (a window), not a random one. */
	data_path_uncache(&fx->dp);
	assert_int_equal(resident(fx->dp.fd, 16 * PAGE, 16 * PAGE), 0);
	assert_int_equal(do_read(fx, &st, 16 * PAGE, 16 * PAGE, false, &cold),
			 0);
	assert_int_equal(cold.bytes, 16 * PAGE);
	assert_false(cold.bad);
	settle(fx);
	file_stats(fx, &rs, &ms);
	assert_int_equal(fx->dp.fc->resident_reads, 1);
	assert_int_equal(rs.c.decisions[RA_KIND_SEQ_MISS], 1);
	assert_int_equal(rs.c.decisions[RA_KIND_RANDOM], 0);
	assert_true(rs.backing_reads >= 1);

	/* Direct mode, a read out of sequence (the handle's first, not at
	 * page 0): through the cache, resident or not, so that reading it
	 * again is a hit. */
	read_in(fx, buf);
	ra_state_init(&other);
	assert_int_equal(do_read(fx, &other, 256 * PAGE, 4 * PAGE, true, &keep),
			 0);
	assert_int_equal(keep.bytes, 4 * PAGE);
	assert_false(keep.bad);
	settle(fx);
	ra_state_destroy(&other);
	file_stats(fx, &rs, &ms);
	assert_int_equal(fx->dp.fc->resident_reads, 1);
	rcu_read_lock();
	assert_non_null(cache_lookup_rcu(fx->dp.fc->map, 256));
	rcu_read_unlock();
	ra_state_destroy(&st);
}

/* Direct mode, a stream over resident data: each read that goes on from
 * the handle's last one (from page 0) is served from the backing's page
 * cache, no cache page (it would hold the data twice); a read out of
 * sequence on the same handle goes through the cache and stays there. */
static void test_resident_direct_stream(void **state)
{
	struct fixture *fx = *state;
	struct reply r[4] = {0};
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	struct ra_state st;
	static char buf[NPAGES * PAGE];

	if (resident(fx->dp.fd, 0, PAGE) < 0)
		skip();
	ra_state_init(&st);
	read_in(fx, buf);

	for (unsigned int i = 0; i < 3; i++) {
		assert_int_equal(
			do_read(fx, &st, i * 16 * PAGE, 16 * PAGE, true, &r[i]),
			0);
		assert_int_equal(r[i].bytes, 16 * PAGE);
		assert_false(r[i].bad);
		assert_int_equal(fx->dp.fc->resident_reads, i + 1);
	}
	file_stats(fx, &rs, &ms);
	assert_int_equal(ms.inserted, 0);
	assert_int_equal(ms.history_pages, 48);
	assert_int_equal(rs.c.windows, 0);
	assert_int_equal(rs.backing_reads, 0);

	/* Out of sequence: the cache reads it (from the backing's page
	 * cache), and keeps it. */
	assert_int_equal(do_read(fx, &st, 300 * PAGE, 2 * PAGE, true, &r[3]),
			 0);
	assert_int_equal(r[3].bytes, 2 * PAGE);
	assert_false(r[3].bad);
	settle(fx);
	file_stats(fx, &rs, &ms);
	assert_int_equal(fx->dp.fc->resident_reads, 3);
	assert_true(ms.inserted >= 2);
	assert_true(rs.cached_reads >= 1);
	rcu_read_lock();
	assert_non_null(cache_lookup_rcu(fx->dp.fc->map, 300));
	assert_null(cache_lookup_rcu(fx->dp.fc->map, 0));
	assert_true(cache_history_rcu(fx->dp.fc->map, 0));
	rcu_read_unlock();
	ra_state_destroy(&st);
}

/* A stream that opened its window on a cold file and runs on over data the
 * backing's page cache has since taken in (another process read it; or one
 * residency probe counted it short): its next window, held whole there, is
 * decided at the mark but not read (resident_skipped), and the reads after
 * the first window are served from the page cache.  Read ahead instead, it
 * would have copied the rest of the file into the cache (inserted ~NPAGES),
 * as a CI run of tests/integration/cache_resident.sh once saw.  @keep:
 * direct mode, whose stream (a handle's reads, each going on from the last)
 * takes the page cache's data the same way. */
static void resident_window_skipped(struct fixture *fx, bool keep)
{
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	struct ra_state st;
	uint64_t first_window = 0;
	static char buf[NPAGES * PAGE];

	if (resident(fx->dp.fd, 0, PAGE) < 0)
		skip();
	ra_state_init(&st);
	for (uint64_t p = 0; p < NPAGES; p += 16) {
		read_16(fx, &st, p, keep);
		if (p)
			continue;
		/* The first read opened a window from the disk; then the
		 * file enters the backing's page cache. */
		settle(fx);
		file_stats(fx, &rs, &ms);
		first_window = ms.inserted;
		assert_true(first_window > 16);
		assert_true(first_window < NPAGES / 4);
		assert_int_equal(fx->dp.fc->resident_reads, 0);
		read_in(fx, buf);
	}
	settle(fx);
	file_stats(fx, &rs, &ms);
	assert_true(rs.c.resident_skipped >= 1);
	assert_int_equal(ms.inserted, first_window);
	assert_int_equal(fx->dp.fc->resident_reads,
			 (NPAGES - first_window) / 16);
	ra_state_destroy(&st);
}

static void test_resident_window_skipped(void **state)
{
	resident_window_skipped(*state, false);
}

static void test_resident_window_skipped_direct(void **state)
{
	resident_window_skipped(*state, true);
}

/* A kernel-mode read with a spliced reply on offer for 2 to 64 pages. */
static int spliced_read(struct fixture *fx, struct ra_state *st, uint64_t off,
			size_t size, struct reply *out)
{
	struct afs_read rd = {.fc = fx->dp.fc,
			      .ra = st,
			      .fd = fx->dp.fd,
			      .reply = reply_check,
			      .reply_fd = reply_fd_check,
			      .fd_min = 2 * PAGE,
			      .fd_max = 64 * PAGE,
			      .ctx = out};

	out->off = off;
	return afs_data_read(fx->dp.a, &rd, off, size);
}

/* With a spliced reply on offer, a resident read of a length the adapter
 * takes goes to it (the descriptor and the range, nothing read here);
 * shorter and longer ones are read into the thread's buffer as before.
 * Both count as resident reads, only the first as spliced.  The file must
 * have been quiet for RA_SPLICE_QUIET_S: once it changes (a write of the
 * bytes it holds moves its ctime), a length the adapter takes is copied
 * instead, and checked (ra_backing_read_resident()). */
static void test_resident_read_spliced(void **state)
{
	struct fixture *fx = *state;
	static char buf[NPAGES * PAGE];
	struct ra_state st;
	struct {
		uint64_t off;
		size_t size;
		bool spliced;
	} cases[] = {
		{0, 16 * PAGE, true}, /* in [fd_min, fd_max] */
		{16 * PAGE, PAGE, false}, /* shorter than fd_min */
		{32 * PAGE, 128 * PAGE, false}, /* longer than fd_max */
		{200 * PAGE + 100, 2 * PAGE, true}, /* unaligned */
	};
	uint64_t spliced = 0;

	if (resident(fx->dp.fd, 0, PAGE) < 0)
		skip();
	ra_state_init(&st);
	/* Quiet: the fixture has just written the file.  Then read, so that
	 * the page cache holds all of it now. */
	sleep(RA_SPLICE_QUIET_S);
	read_in(fx, buf);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct reply r = {0};

		assert_int_equal(
			resident(fx->dp.fd, cases[i].off, cases[i].size), 1);
		assert_int_equal(
			spliced_read(fx, &st, cases[i].off, cases[i].size, &r),
			0);
		assert_int_equal(r.bytes, cases[i].size);
		assert_false(r.bad);
		assert_int_equal(r.fd_calls, cases[i].spliced ? 1 : 0);
		assert_int_equal(r.calls, cases[i].spliced ? 0 : 1);
		spliced += cases[i].spliced;
		assert_int_equal(fx->dp.fc->resident_reads, i + 1);
		assert_int_equal(fx->dp.fc->resident_spliced, spliced);
		assert_int_equal(fx->dp.a->resident_spliced, spliced);
	}
	/* Changed lately: copied, not spliced. */
	{
		struct reply r = {0};

		assert_int_equal(
			pwrite(fx->dp.fd, buf + 400 * PAGE, PAGE, 400 * PAGE),
			(ssize_t)PAGE);
		assert_int_equal(
			spliced_read(fx, &st, 256 * PAGE, 16 * PAGE, &r), 0);
		assert_int_equal(r.bytes, 16 * PAGE);
		assert_false(r.bad);
		assert_int_equal(r.fd_calls, 0);
		assert_int_equal(r.calls, 1);
		assert_int_equal(fx->dp.fc->resident_reads, 5);
		assert_int_equal(fx->dp.fc->resident_spliced, spliced);
	}
	/* Not resident: no splice offered to the adapter, the cache reads. */
	{
		struct reply r = {0};

		data_path_uncache(&fx->dp);
		assert_int_equal(
			spliced_read(fx, &st, 300 * PAGE, 8 * PAGE, &r), 0);
		assert_int_equal(r.bytes, 8 * PAGE);
		assert_false(r.bad);
		assert_int_equal(r.fd_calls, 0);
		assert_int_equal(fx->dp.fc->resident_spliced, spliced);
		settle(fx);
	}
	ra_state_destroy(&st);
}

static void test_cancelled_wait(void **state)
{
	struct fixture *fx = *state;
	struct cache_page *pages[4];
	struct reply r = {.cancel = true};
	unsigned int got;

	/* Someone's I/O in flight on pages 10..13. */
	assert_int_equal(cache_insert_range(fx->dp.fc->map, 10, 4,
					    CACHE_NO_MARK, 0, pages, &got),
			 0);
	assert_int_equal(got, 4);
	assert_int_equal(do_read(fx, NULL, 10 * PAGE, 4 * PAGE, true, &r),
			 -EINTR);
	assert_int_equal(r.waits, 1);
	assert_int_equal(r.calls, 0);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], -EAGAIN);
	/* Nothing is left half done: the next read gets the bytes. */
	r = (struct reply){0};
	assert_int_equal(do_read(fx, NULL, 10 * PAGE, 4 * PAGE, true, &r), 0);
	assert_int_equal(r.bytes, 4 * PAGE);
	assert_false(r.bad);
}

/* A read that comes to a window's first page while its I/O is in flight
 * acts on the page's READAHEAD mark before it waits (as the kernel does):
 * the next window is queued while this one is read.  Acted on only after
 * the wait, the mark came once the window had arrived, and a server's other
 * threads, already past it, missed (smbd: most of its sync decisions). */
static void test_mark_in_flight_acted_on_first(void **state)
{
	struct fixture *fx = *state;
	struct cache_page *pages[4];
	struct reply r = {.cancel = true};
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	uint64_t n = 0;
	unsigned int got;

	/* A window's I/O in flight on pages 10..13, its mark on page 10. */
	assert_int_equal(cache_insert_range(fx->dp.fc->map, 10, 4, 10,
					    CACHE_INSERT_PREFETCH, pages, &got),
			 0);
	assert_int_equal(got, 4);
	/* The wait is cancelled: the read ends there, after the mark. */
	assert_int_equal(do_read(fx, NULL, 10 * PAGE, 4 * PAGE, true, &r),
			 -EINTR);
	assert_int_equal(r.waits, 1);
	assert_false(cache_page_test_clear_readahead(pages[0]));
	file_stats(fx, &rs, &ms);
	for (int k = 0; k < RA_KIND_COUNT; k++)
		n += rs.c.decisions[k];
	assert_int_equal(n, 1); /* the mark's, and no other */
	assert_int_equal(rs.c.decisions[RA_KIND_ASYNC_RECOVER], 1);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], -EAGAIN);
	settle(fx);
}

/* A backing that fails reads (/proc/self/mem at an unmapped address, with
 * an identity that claims 1 MiB): the reader gets the backing's error
 * (-EIO or -EFAULT, as pread() there gives), the pages are not
 * cached, and the next read tries the backing again. */
static void test_backing_error(void **state)
{
	struct fixture *fx = *state;
	struct afs_file_key key = {.dev = 0, .ino = 1, .gen = 99};
	struct stat st = {.st_size = 1 << 20};
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	struct afs_fcache *bad;
	struct reply r = {0};
	struct afs_read rd = {.reply = reply_check, .ctx = &r};
	int mem = open("/proc/self/mem", O_RDONLY);
	int rc;

	assert_true(mem >= 0);
	fx->other_fd = mem;
	assert_int_equal(afs_fcache_lookup(fx->dp.a, &key, &st, &bad), 0);
	fx->other = bad;
	assert_int_equal(afs_fcache_ra(bad, mem), 0);
	rd.fc = bad;
	rd.fd = mem;
	rc = afs_data_read(fx->dp.a, &rd, 0, 2 * PAGE);
	assert_true(rc == -EIO || rc == -EFAULT);
	assert_int_equal(r.calls, 0);
	rcu_read_lock();
	assert_null(cache_lookup_rcu(bad->map, 0));
	assert_null(cache_lookup_rcu(bad->map, 1));
	rcu_read_unlock();
	assert_int_equal(afs_data_read(fx->dp.a, &rd, 0, 2 * PAGE), rc);
	ra_file_stats(bad->raf, &rs);
	cache_mapping_stats(bad->map, &ms);
	assert_true(rs.c.errors >= 2); /* tried again, failed again */
	assert_true(ms.errors >= 2);
}

/* Every page of a tiny cache held by I/O in flight: a read finds no room
 * and is served from the backing, counted as such. */
static void test_no_room_served_around(void **state)
{
	struct fixture *fx = *state;
	struct cache_page *pages[TINY_PAGES];
	struct reply r = {0};
	unsigned int got;
	int rc;

	assert_int_equal(cache_insert_range(fx->dp.fc->map, 400, TINY_PAGES,
					    CACHE_NO_MARK, 0, pages, &got),
			 0);
	assert_true(got > 0);
	rc = do_read(fx, NULL, 100 * PAGE, 8 * PAGE, true, &r);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], -EAGAIN);
	assert_int_equal(rc, 0);
	assert_int_equal(r.bytes, 8 * PAGE);
	assert_false(r.bad);
	assert_int_equal(fx->dp.fc->uncached_reads, 1);
	assert_int_equal(fx->dp.a->uncached_reads, 1);
}

/* The identity: a change behind the mount drops the pages and counts; the
 * daemon's own change takes the new identity and does not count. */
static void test_identity(void **state)
{
	struct fixture *fx = *state;
	struct reply r = {0};
	struct stat st;

	assert_int_equal(do_read(fx, NULL, 0, 4 * PAGE, true, &r), 0);
	settle(fx);
	assert_int_equal(fstat(fx->dp.fd, &st), 0);
	assert_false(afs_fcache_revalidate(fx->dp.fc, &st)); /* unchanged */
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 0);

	st.st_mtim.tv_nsec ^= 1; /* written behind the mount */
	assert_true(afs_fcache_revalidate(fx->dp.fc, &st));
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 1);
	rcu_read_lock();
	assert_null(cache_lookup_rcu(fx->dp.fc->map, 0));
	rcu_read_unlock();
	assert_false(afs_fcache_revalidate(fx->dp.fc, &st)); /* now known */

	/* Through the mount: a write, then the backing's new identity. */
	r = (struct reply){0};
	assert_int_equal(do_read(fx, NULL, 0, 4 * PAGE, true, &r), 0);
	settle(fx);
	assert_int_equal(pwrite(fx->dp.fd, "x", 1, 5), 1);
	afs_fcache_changed(fx->dp.fc, fx->dp.fd, 5, 1, false);
	rcu_read_lock();
	assert_null(cache_lookup_rcu(fx->dp.fc->map, 0)); /* the page written */
	assert_non_null(cache_lookup_rcu(fx->dp.fc->map, 1)); /* others stay */
	rcu_read_unlock();
	assert_int_equal(fstat(fx->dp.fd, &st), 0);
	assert_false(afs_fcache_revalidate(fx->dp.fc, &st));
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 1);

	/* A truncate through the mount: the new EOF at once. */
	assert_int_equal(ftruncate(fx->dp.fd, 3 * PAGE), 0);
	afs_fcache_changed(fx->dp.fc, fx->dp.fd, 3 * PAGE, 0, true);
	assert_int_equal(afs_fcache_size(fx->dp.fc), 3 * PAGE);
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 1);
}

/* One file, one state: a lookup by the same key finds it. */
static void test_lookup_by_key(void **state)
{
	struct fixture *fx = *state;
	struct afs_file_key key = {.dev = fx->dp.st.st_dev,
				   .ino = fx->dp.st.st_ino};
	struct afs_fcache *same, *other;

	assert_int_equal(afs_fcache_lookup(fx->dp.a, &key, &fx->dp.st, &same),
			 0);
	assert_ptr_equal(same, fx->dp.fc);
	key.gen = 1; /* the inode number reused: another file */
	assert_int_equal(afs_fcache_lookup(fx->dp.a, &key, &fx->dp.st, &other),
			 0);
	assert_ptr_not_equal(other, fx->dp.fc);
	afs_fcache_put(other);
	afs_fcache_put(same);
}

/* The file put by its last holder and found again by key: the same
 * file, its pages still there, a hit with no backing read. */
static void test_idle_revived_same_pages(void **state)
{
	struct fixture *fx = *state;
	struct afs_file_key key = {.dev = fx->dp.st.st_dev,
				   .ino = fx->dp.st.st_ino};
	struct reply r = {0}, hit = {0};
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	struct afs_fcache *old = fx->dp.fc;
	struct cache_page *p0;

	assert_int_equal(do_read(fx, NULL, 0, 8 * PAGE, true, &r), 0);
	settle(fx);
	rcu_read_lock();
	p0 = cache_lookup_rcu(fx->dp.fc->map, 0);
	rcu_read_unlock();
	assert_non_null(p0);
	afs_fcache_put(fx->dp.fc); /* the last reference: idle, not freed */
	fx->dp.fc = NULL;
	assert_int_equal(fx->dp.a->nidle, 1);
	assert_int_equal(fx->dp.a->nfiles, 1);

	assert_int_equal(
		afs_fcache_lookup(fx->dp.a, &key, &fx->dp.st, &fx->dp.fc), 0);
	assert_ptr_equal(fx->dp.fc, old);
	assert_int_equal(fx->dp.a->nidle, 0);
	assert_int_equal(fx->dp.a->revived, 1);
	assert_int_equal(fx->dp.a->revived_changed, 0);
	assert_null(fx->dp.fc->raf); /* closed while idle, reopened on use */
	assert_int_equal(afs_fcache_ra(fx->dp.fc, fx->dp.fd), 0);
	rcu_read_lock();
	assert_ptr_equal(cache_lookup_rcu(fx->dp.fc->map, 0), p0);
	rcu_read_unlock();
	hit.fc = fx->dp.fc;
	rcu_read_lock();
	assert_int_equal(do_read(fx, NULL, 0, 8 * PAGE, true, &hit), 0);
	rcu_read_unlock();
	assert_int_equal(hit.bytes, 8 * PAGE);
	assert_false(hit.bad);
	assert_true(hit.from_pages);
	file_stats(fx, &rs, &ms);
	assert_int_equal(rs.backing_reads, 0); /* the new raf read nothing */
	assert_int_equal(ms.misses, 8); /* only the first read's */
}

/* An idle file changed behind the mount (size, mtime or ctime): looked up
 * again, its pages are gone and the read gets the new bytes. */
static void test_idle_revived_changed(void **state)
{
	struct fixture *fx = *state;
	struct afs_file_key key = {.dev = fx->dp.st.st_dev,
				   .ino = fx->dp.st.st_ino};
	struct reply r = {0};
	struct stat st;
	uint8_t b;

	assert_int_equal(do_read(fx, NULL, 0, 4 * PAGE, true, &r), 0);
	settle(fx);
	afs_fcache_put(fx->dp.fc);
	fx->dp.fc = NULL;
	/* Behind the mount, same size: only the times tell. */
	b = (uint8_t)(pattern(5) ^ 0xff);
	assert_int_equal(pwrite(fx->dp.fd, &b, 1, 5), 1);
	assert_int_equal(fstat(fx->dp.fd, &st), 0);
	st.st_mtim.tv_nsec ^= 1; /* coarse clocks: make sure it differs */
	assert_int_equal(afs_fcache_lookup(fx->dp.a, &key, &st, &fx->dp.fc), 0);
	assert_int_equal(fx->dp.a->revived, 1);
	assert_int_equal(fx->dp.a->revived_changed, 1);
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 1);
	rcu_read_lock();
	assert_null(cache_lookup_rcu(fx->dp.fc->map, 0));
	rcu_read_unlock();
	assert_int_equal(pwrite(fx->dp.fd, (uint8_t[]){pattern(5)}, 1, 5), 1);
}

/* The idle limit: the oldest idle files go first; a file with nothing
 * cached is not kept at all; afs_data_drop_idle() frees the rest. */
static void test_idle_limit(void **state)
{
	struct fixture *fx = *state;
	struct afs_data_config cfg;
	struct afs_fcache *fc[4];
	struct afs_data *a;

	afs_data_config_init(&cfg);
	cfg.cache_size = 64u << 20;
	cfg.manual_reclaim = true;
	cfg.idle_files = 2;
	cfg.ra.max_bytes = 256 << 10;
	cfg.ra.workers = 1;
	a = data_path_ahead(&cfg);
	for (int i = 0; i < 4; i++) {
		struct afs_file_key key = {.dev = 1, .ino = 100 + i};
		struct cache_page *p;
		unsigned int n;

		assert_int_equal(afs_fcache_lookup(a, &key, &fx->dp.st, &fc[i]),
				 0);
		if (i == 3)
			continue; /* nothing cached */
		assert_int_equal(cache_insert_range(fc[i]->map, 0, 1,
						    CACHE_NO_MARK, 0, &p, &n),
				 0);
		assert_int_equal(n, 1);
		cache_page_complete(p, 0);
	}
	for (int i = 0; i < 4; i++)
		afs_fcache_put(fc[i]); /* idle in the order 0, 1, 2 */
	assert_int_equal(a->nidle, 2);
	assert_int_equal(a->idle_dropped, 1);
	assert_int_equal(a->nfiles, 2); /* 3 was freed at once */
	for (int i = 0; i < 4; i++) {
		struct afs_file_key key = {.dev = 1, .ino = 100 + i};
		struct afs_fcache *again;

		assert_int_equal(afs_fcache_lookup(a, &key, &fx->dp.st, &again),
				 0);
		/* 0 was the oldest: dropped; 1 and 2 come back */
		assert_int_equal(a->revived, i == 0 ? 0 : i > 2 ? 2 : i);
		afs_fcache_put(again);
	}
	assert_int_equal(a->nfiles, 2);
	assert_int_equal(afs_data_drop_idle(a), 2);
	assert_int_equal(a->nidle, 0);
	assert_int_equal(a->nfiles, 0);
	afs_data_destroy(a);
}

/* The table as the warm restart's checkpoint sees it: files in use first,
 * then the idle ones from the most recently used; taking it neither
 * revives nor reorders them. */
static void test_files_snapshot(void **state)
{
	struct fixture *fx = *state;
	struct afs_fcache *fc[3];
	struct afs_file_snap *s;
	size_t n;

	afs_fcache_put(fx->dp.fc); /* nothing cached: freed */
	fx->dp.fc = NULL;
	for (int i = 0; i < 3; i++) {
		struct afs_file_key key = {.dev = 1, .ino = 200 + i};
		struct cache_page *p;
		unsigned int got;

		assert_int_equal(
			afs_fcache_lookup(fx->dp.a, &key, &fx->dp.st, &fc[i]),
			0);
		assert_int_equal(cache_insert_range(fc[i]->map, 0, 1,
						    CACHE_NO_MARK, 0, &p, &got),
				 0);
		cache_page_complete(p, 0);
	}
	afs_fcache_put(fc[0]);
	afs_fcache_put(fc[1]); /* idle: 1 (newest), then 0 */
	for (int round = 0; round < 2; round++) {
		assert_int_equal(afs_data_files(fx->dp.a, &s, &n), 0);
		assert_int_equal(n, 3);
		assert_int_equal(s[0].key.ino, 202);
		assert_int_equal(s[1].key.ino, 201);
		assert_int_equal(s[2].key.ino, 200);
		assert_int_equal(s[0].size, fx->dp.st.st_size);
		for (size_t i = 0; i < n; i++)
			cache_mapping_put(s[i].map);
		free(s);
	}
	assert_int_equal(fx->dp.a->nidle, 2);
	assert_int_equal(fx->dp.a->revived, 0);
	afs_fcache_put(fc[2]);
}

/* The watcher's references on idle files: a find or an overflow takes the
 * file off the idle LRU while it holds it, and the put parks it there
 * again once (it crashed the daemon's exit: a file held by the watcher was
 * trimmed from the LRU, or freed while still linked on it). */
static void test_idle_found_by_watcher(void **state)
{
	struct fixture *fx = *state;
	struct afs_file_key key = {.dev = fx->dp.st.st_dev,
				   .ino = fx->dp.st.st_ino};
	struct afs_fcache *found, *old = fx->dp.fc;
	struct reply r = {0};
	size_t n = 0;

	assert_int_equal(do_read(fx, NULL, 0, 4 * PAGE, true, &r), 0);
	settle(fx);
	afs_fcache_put(fx->dp.fc); /* idle */
	fx->dp.fc = NULL;
	assert_int_equal(fx->dp.a->nidle, 1);
	assert_int_equal(afs_fcache_find(fx->dp.a, &key, &found), 0);
	assert_ptr_equal(found, old);
	assert_int_equal(fx->dp.a->nidle, 0); /* held: not on the LRU */
	assert_int_equal(afs_data_drop_idle(fx->dp.a), 0);
	afs_fcache_put(found);
	assert_int_equal(fx->dp.a->nidle, 1);
	assert_int_equal(afs_data_outside_all(fx->dp.a, &n), 0);
	assert_int_equal(n, 1);
	/* Its pages went with the overflow: the put freed it, and unlinked
	 * from the LRU first (a file left linked there was the crash). */
	assert_int_equal(fx->dp.a->nidle, 0);
	assert_int_equal(fx->dp.a->nfiles, 0);
	assert_int_equal(afs_data_drop_idle(fx->dp.a), 0);
	assert_int_equal(afs_data_outside_all(fx->dp.a, &n), 0);
	assert_int_equal(n, 0);
}

/* What a backing watcher calls: a find by key never creates; an outside
 * change drops the pages and counts even when the identity looks the same
 * (@force), or only when it differs; without an identity, the next
 * comparison takes the backing's; an overflow drops every file. */
static void test_outside_changes(void **state)
{
	struct fixture *fx = *state;
	struct afs_file_key key = {.dev = fx->dp.st.st_dev,
				   .ino = fx->dp.st.st_ino};
	struct afs_fcache *found;
	struct reply r = {0};
	struct stat st;
	size_t n = 0;

	assert_int_equal(afs_fcache_find(fx->dp.a, &key, &found), 0);
	assert_ptr_equal(found, fx->dp.fc);
	afs_fcache_put(found);
	key.gen = 7;
	assert_int_equal(afs_fcache_find(fx->dp.a, &key, &found), -ENOENT);
	assert_null(found);
	assert_int_equal(fx->dp.a->nfiles, 1); /* nothing created */

	assert_int_equal(do_read(fx, NULL, 0, 4 * PAGE, true, &r), 0);
	settle(fx);
	assert_int_equal(fstat(fx->dp.fd, &st), 0);
	assert_false(
		afs_fcache_outside(fx->dp.fc, fx->dp.fd, false)); /* the same */
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 0);
	rcu_read_lock();
	assert_non_null(cache_lookup_rcu(fx->dp.fc->map, 0));
	rcu_read_unlock();
	assert_true(
		afs_fcache_outside(fx->dp.fc, fx->dp.fd, true)); /* forced */
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 1);
	assert_int_equal(fx->dp.a->revalidations, 1);
	rcu_read_lock();
	assert_null(cache_lookup_rcu(fx->dp.fc->map, 0));
	rcu_read_unlock();

	/* No identity: the next comparison counts and takes the backing's. */
	assert_true(afs_fcache_outside(fx->dp.fc, -1, true));
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 2);
	assert_true(afs_fcache_revalidate(fx->dp.fc, &st));
	assert_false(afs_fcache_revalidate(fx->dp.fc, &st));
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 3);

	/* An overflow: every file, cached pages or not. */
	key.gen = 7;
	assert_int_equal(afs_fcache_lookup(fx->dp.a, &key, &st, &fx->other), 0);
	r = (struct reply){0};
	assert_int_equal(do_read(fx, NULL, 0, 4 * PAGE, true, &r), 0);
	settle(fx);
	assert_int_equal(afs_data_outside_all(fx->dp.a, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(afs_fcache_changes(fx->dp.fc), 4);
	assert_int_equal(afs_fcache_changes(fx->other), 1);
	rcu_read_lock();
	assert_null(cache_lookup_rcu(fx->dp.fc->map, 0));
	rcu_read_unlock();
	assert_int_equal(fx->dp.a->nfiles, 2); /* the references given back */
}

struct outside_call {
	struct afs_fcache *fc;
	int fd;
	bool dropped, done;
};

static void *outside_thread(void *arg)
{
	struct outside_call *o = arg;

	cache_thread_online();
	o->dropped = afs_fcache_outside(o->fc, o->fd, false);
	__atomic_store_n(&o->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* The daemon's own change, seen by the watcher between its system call
 * and the identity it records, is not taken for one behind the mount: the
 * comparison waits for afs_fcache_own_end().  A forced one (another
 * process's event) does not wait; without the mark the same sequence is a
 * change. */
static void test_own_change_not_outside(void **state)
{
	struct fixture *fx = *state;
	struct afs_fcache *fc = fx->dp.fc;
	struct outside_call o = {.fc = fc, .fd = fx->dp.fd};
	uint64_t changes = afs_fcache_changes(fc);
	pthread_t t;

	afs_fcache_own_begin(fc);
	assert_int_equal(ftruncate(fx->dp.fd, 100 * PAGE), 0);
	assert_int_equal(pthread_create(&t, NULL, outside_thread, &o), 0);
	usleep(30 * 1000);
	assert_false(__atomic_load_n(&o.done, __ATOMIC_ACQUIRE)); /* waits */
	afs_fcache_changed(fc, fx->dp.fd, 100 * PAGE, 0, true);
	afs_fcache_own_end(fc);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_false(o.dropped);
	assert_int_equal(afs_fcache_changes(fc), changes);
	assert_int_equal(afs_fcache_size(fc), 100 * PAGE);

	/* Forced: at once, mark or not. */
	afs_fcache_own_begin(fc);
	assert_true(afs_fcache_outside(fc, fx->dp.fd, true));
	afs_fcache_own_end(fc);
	assert_int_equal(afs_fcache_changes(fc), changes + 1);

	/* No mark: the truncate before its identity is recorded is seen as
	 * a change (what the mark is for). */
	assert_int_equal(ftruncate(fx->dp.fd, 50 * PAGE), 0);
	assert_true(afs_fcache_outside(fc, fx->dp.fd, false));
	assert_int_equal(afs_fcache_changes(fc), changes + 2);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_miss_then_hit_from_pages),
		T(test_sequential_marks_queue_windows),
		T(test_no_handle_still_streams),
		cmocka_unit_test_setup_teardown(test_eof, setup_small_file,
						teardown),
		cmocka_unit_test_setup_teardown(test_grown_behind,
						setup_small_file, teardown),
		T(test_shrunk_behind),
		T(test_handed_over_pages_become_history),
		T(test_random_miss_around_cache),
		T(test_resident_read_around_cache),
		T(test_resident_read_spliced),
		T(test_resident_direct_stream),
		T(test_resident_window_skipped),
		T(test_resident_window_skipped_direct),
		T(test_cancelled_wait),
		T(test_mark_in_flight_acted_on_first),
		T(test_backing_error),
		cmocka_unit_test_setup_teardown(test_no_room_served_around,
						setup_tiny_cache, teardown),
		T(test_identity),
		T(test_lookup_by_key),
		T(test_idle_revived_same_pages),
		T(test_idle_revived_changed),
		T(test_idle_limit),
		T(test_files_snapshot),
		T(test_outside_changes),
		T(test_own_change_not_outside),
		T(test_idle_found_by_watcher),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
