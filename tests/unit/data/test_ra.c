/* test_ra.c - the readahead facade against the real page cache and real
 * backing reads: a temporary file with a known pattern, read through the
 * data path's read function (afs_data_read(), the one the daemon serves
 * READs with), every byte checked, and the counters that say why.
 *
 * The threaded test is for ThreadSanitizer (-DAHEADFS_SANITIZE=thread):
 * four readers share one stream, each on its own handle, while the workers
 * fill the windows.  Interleaving it exercises: reader A's miss inserts a
 * window and queues its prefetch part; reader B finds those pages LOCKED
 * and waits; a worker completes them; B wakes.  Failure looks like a hang
 * (ctest timeout), a wrong byte, or a TSan report.
 *
 * Here with the data path's tests, not in tests/unit/ra: what is tested is
 * the facade (ra.h) as the daemon drives it, through afs_data_read() -- its
 * hits, marker hits, misses and waits on LOCKED pages -- on a mount's engine
 * and file (afs_data_create(), afs_fcache_ra()).  Without fs/data each
 * test would need a read path of its own, and would no longer check the one
 * the daemon serves READs with.  ra/'s tests on cache/ alone are in
 * tests/unit/ra.
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
#include <unistd.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "fs/data/data.h"
#include "pace.h" /* ra/: ra_now_ns() */
#include "ra/ra.h"

#include "../fixture/data_path.h"
#include "../read_check.h"

struct fixture {
	struct data_path dp; /* the file, its mount, its afs_fcache */
	uint64_t size;
	/* The file's cache and readahead, as the data path made them: */
	struct cache *c;
	struct cache_mapping *m;
	struct ra_engine *e;
	struct ra_file *f;
};

/* Byte @off of the test file. */
static uint8_t pattern(uint64_t off)
{
	return (uint8_t)((off >> 12) * 31 + (off & 4095) * 7 + 1);
}

static int make_file(struct fixture *fx, uint64_t size)
{
	uint8_t buf[65536];

	data_path_tmpfile(&fx->dp, "afs-ra");
	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		uint64_t n =
			size - off < sizeof(buf) ? size - off : sizeof(buf);

		for (uint64_t i = 0; i < n; i++)
			buf[i] = pattern(off + i);
		if (pwrite(fx->dp.fd, buf, n, off) != (ssize_t)n)
			return -EIO;
	}
	fx->size = size;
	return 0;
}

static int setup_with(void **state, uint64_t size, const struct ra_config *rc,
		      uint64_t budget)
{
	/* The reads below keep their pages (read_check.h), as direct mode
	 * does. */
	struct afs_data_config cfg;
	struct fixture *fx = calloc(1, sizeof(*fx));

	cache_thread_online();
	assert_non_null(fx);
	assert_int_equal(make_file(fx, size), 0);
	afs_data_config_init(&cfg);
	cfg.cache_size = budget;
	cfg.read_mode = AFS_READ_DIRECT;
	cfg.ra = *rc;
	data_path_mount(&fx->dp, &cfg, true);
	fx->c = afs_data_cache(fx->dp.a);
	fx->e = afs_data_engine(fx->dp.a);
	fx->m = afs_fcache_map(fx->dp.fc);
	fx->f = afs_fcache_ra_file(fx->dp.fc);
	*state = fx;
	return 0;
}

static int setup(void **state)
{
	struct ra_config rc = {.max_bytes = 1 << 20, .workers = 2};

	return setup_with(state, 8 << 20, &rc, 64 << 20);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	data_path_close(&fx->dp);
	free(fx);
	return 0;
}

/*
 * Read pages [index, index + nr) through the data path and check every
 * byte (read_check.h).  Return: pages served.
 */
static uint64_t read_pages(struct fixture *fx, struct ra_state *st,
			   uint64_t index, uint64_t nr)
{
	uint64_t bytes = 0;

	if (test_read_bytes(fx->dp.a, fx->dp.fc, fx->dp.fd, st, index, nr,
			    pattern, &bytes))
		fail_msg("a read at page %llu failed or returned wrong bytes",
			 (unsigned long long)index);
	return (bytes + 4095) / 4096;
}

/* Wait until no page of the file has I/O in flight (queued windows done). */
static void settle(struct fixture *fx)
{
	uint64_t eof = (fx->size + 4095) / 4096;

	for (uint64_t i = 0; i < eof; i++) {
		struct cache_page *p;

		rcu_read_lock();
		p = cache_lookup_rcu(fx->m, i);
		if (p && !cache_page_tryget(p))
			p = NULL;
		rcu_read_unlock();
		if (p) {
			cache_page_wait(p, NULL);
			cache_page_put(p);
		}
	}
}

/* A sequential reader, 128 KiB reads: one initial window, then pushes by
 * its own marks; every page read from the backing exactly once. */
static void test_sequential_read(void **state)
{
	struct fixture *fx = *state;
	struct ra_file_stats fs;
	struct ra_engine_stats es;
	struct ra_state st;

	ra_state_init(&st);
	for (uint64_t i = 0; i < 2048; i += 32)
		assert_int_equal(read_pages(fx, &st, i, 32), 32);
	ra_state_destroy(&st);

	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.c.decisions[RA_KIND_INITIAL], 1);
	assert_int_equal(fs.c.decisions[RA_KIND_RANDOM], 0);
	assert_true(fs.c.decisions[RA_KIND_STREAM_ASYNC] > 0);
	assert_int_equal(fs.c.sync_pages + fs.c.async_pages, 2048);
	assert_int_equal(fs.backing_bytes, 8 << 20);
	assert_int_equal(fs.max_window, 256);
	assert_int_equal(fs.c.queue_refused, 0);
	assert_int_equal(fs.c.errors, 0);
	/* far fewer sync pages than pages: the reader ran on readahead */
	assert_true(fs.c.sync_pages <= 64);
	assert_int_equal(fs.nr_streams, 1);
	assert_int_equal(fs.streams[0].state, RA_STREAM_STATS_ACTIVE);
	assert_int_equal(fs.streams[0].size, 256);
	ra_engine_stats(fx->e, &es);
	assert_int_equal(es.files, 1);
	assert_int_equal(ra_engine_destroy(fx->e), -EBUSY); /* a file is open */
	assert_int_equal(es.c.decisions[RA_KIND_INITIAL], 1);
	assert_int_equal(es.backing_bytes, 8 << 20);
	assert_int_equal(es.workers, 2);
}

/* Random 1-page reads far apart: each reads exactly its page, no window. */
static void test_random_reads(void **state)
{
	struct fixture *fx = *state;
	struct ra_file_stats fs;
	struct ra_state st;
	uint64_t seed = 7, n = 0;
	bool used[2048] = {false};

	ra_state_init(&st);
	for (int k = 0; k < 100; k++) {
		uint64_t i;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		i = 8 + (seed >> 33) % 2000;
		/* far from pages already read (a read right after cached
		 * pages looks like a stream, by design) */
		bool near = false;
		for (uint64_t j = i - 8; j <= i + 8; j++)
			near |= used[j];
		if (near)
			continue;
		used[i] = true;
		assert_int_equal(read_pages(fx, &st, i, 1), 1);
		n++;
	}
	ra_state_destroy(&st);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.c.decisions[RA_KIND_RANDOM], n);
	assert_int_equal(fs.c.windows, 0);
	assert_int_equal(fs.c.async_pages, 0);
	assert_int_equal(fs.c.sync_pages, n);
	assert_int_equal(fs.backing_bytes, n * 4096);
}

/* An oversize read (300 pages, max 256) at page 1000: the window is max
 * pages (init_size(300) = 256, async 128), but the reader's pages are all
 * demand: inserted and read now, whole.  The mark (1128) is one of them:
 * the reader hits it and the window is pushed, 1256 + 256, of which
 * 1300..1511 were missing. */
static int setup_small_max(void **state)
{
	struct ra_config rc = {.max_bytes = 512 << 10, .workers = 2};

	return setup_with(state, 8 << 20, &rc, 64 << 20);
}

/* A read larger than the window cap (200 pages, cap 128) reads all of it
 * as demand, then a window of twice the cap in all from its start. */
static void test_oversize_read(void **state)
{
	struct fixture *fx = *state;
	struct ra_file_stats fs;
	struct ra_state st;

	ra_state_init(&st);
	assert_int_equal(read_pages(fx, &st, 1000, 200), 200);
	ra_state_destroy(&st);
	settle(fx);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.c.decisions[RA_KIND_OVERSIZE], 1);
	assert_int_equal(fs.c.decisions[RA_KIND_STREAM_ASYNC], 1);
	assert_int_equal(fs.c.sync_pages, 200);
	assert_int_equal(fs.c.async_pages, 1256 - 1200);
	assert_int_equal(fs.backing_bytes, 256 * 4096);
}

/* A file whose last page is partial: the tail reads as zeros, nothing is
 * read past EOF, windows are clipped. */
static int setup_small(void **state)
{
	struct ra_config rc = {.max_bytes = 1 << 20, .workers = 1};

	return setup_with(state, 10000, &rc, 64 << 20);
}

static void test_eof_partial_page(void **state)
{
	struct fixture *fx = *state;
	struct ra_file_stats fs;
	struct ra_state st;

	ra_state_init(&st);
	assert_int_equal(read_pages(fx, &st, 0, 1), 1);
	assert_int_equal(read_pages(fx, &st, 1, 8), 2); /* short at EOF */
	ra_state_destroy(&st);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.c.decisions[RA_KIND_INITIAL], 1);
	assert_int_equal(fs.c.sync_pages + fs.c.async_pages, 3);
	assert_int_equal(fs.backing_bytes, 10000);
}

/* Run @fn on @n threads, thread i getting (char *)@args + i * @stride, and
 * wait for them all. */
static void run_threads(int n, void *(*fn)(void *), void *args, size_t stride)
{
	pthread_t t[16];

	assert_true(n <= 16);
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fn,
						(char *)args + i * stride),
				 0);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

struct reader {
	struct fixture *fx;
	pthread_barrier_t *round; /* the four readers' rounds */
	int id;
};

static void *reader_thread(void *arg)
{
	struct reader *r = arg;
	struct ra_state st;

	cache_thread_online();
	ra_state_init(&st);
	/* chunks of 16 pages, reader r takes every 4th: one stream, four
	 * handles, slightly out of order.  The readers meet after each round
	 * of four chunks, as a server's threads keep pace with one client:
	 * without it a reader the scheduler stalls (a loaded 2-core machine)
	 * holds the chunk with the window's marker while the others run past
	 * the window's end, and their misses are demand reads -- the test
	 * would measure the scheduler, not the stream. */
	for (uint64_t k = r->id; k < 128; k += 4) {
		read_pages(r->fx, &st, k * 16, 16);
		pthread_barrier_wait(r->round);
	}
	ra_state_destroy(&st);
	cache_thread_offline();
	return NULL;
}

static void test_threads_share_one_stream(void **state)
{
	struct fixture *fx = *state;
	struct reader r[4];
	struct ra_file_stats fs;
	pthread_barrier_t round;

	assert_int_equal(pthread_barrier_init(&round, NULL, 4), 0);
	for (int i = 0; i < 4; i++)
		r[i] = (struct reader){fx, &round, i};
	run_threads(4, reader_thread, r, sizeof(r[0]));
	pthread_barrier_destroy(&round);
	ra_file_stats(fx->f, &fs);
	/* every page read from the backing exactly once */
	if (fs.c.sync_pages + fs.c.async_pages != 2048)
		fail_msg("inserted %llu + %llu pages; refused %llu, enospc "
			 "%llu, errors %llu, waste %llu, thrash %llu",
			 (unsigned long long)fs.c.sync_pages,
			 (unsigned long long)fs.c.async_pages,
			 (unsigned long long)fs.c.queue_refused,
			 (unsigned long long)fs.c.enospc,
			 (unsigned long long)fs.c.errors,
			 (unsigned long long)fs.c.waste,
			 (unsigned long long)fs.c.thrash);
	assert_int_equal(fs.backing_bytes, 8 << 20);
	assert_int_equal(fs.c.errors, 0);
	assert_int_equal(fs.c.queue_refused, 0);
	/* and mostly by readahead, not by the readers' own misses */
	if (fs.c.async_pages <= fs.c.sync_pages)
		fail_msg("read ahead %llu pages, on demand %llu",
			 (unsigned long long)fs.c.async_pages,
			 (unsigned long long)fs.c.sync_pages);
}

/*
 * An NFS-style server: 8 threads take 128 KiB requests of one sequential
 * read from a shared counter, so they arrive slightly out of order, each on
 * a handle opened for the request (a fresh ra_state).  The stream table is
 * shared by all of them under the file's lock.  Interleavings: two threads
 * miss in the same window at once (both decide; the second insertion skips
 * the pages the first inserted); a thread hits a mark while another's
 * window is still being inserted.  Expected: every byte right, every page
 * read from the backing exactly once, and most pages read ahead.
 */
struct server {
	struct fixture *fx;
	uint64_t next; /* __atomic: next request */
};

static void *server_thread(void *arg)
{
	struct server *sv = arg;
	uint64_t k;

	cache_thread_online();
	while ((k = __atomic_fetch_add(&sv->next, 1, __ATOMIC_RELAXED)) < 64) {
		struct ra_state st;

		ra_state_init(&st);
		read_pages(sv->fx, &st, k * 32, 32);
		ra_state_destroy(&st);
	}
	cache_thread_offline();
	return NULL;
}

static void test_server_threads_per_request_handles(void **state)
{
	struct fixture *fx = *state;
	struct server sv = {fx, 0};
	struct ra_file_stats fs;

	run_threads(8, server_thread, &sv, 0);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.backing_bytes, 8 << 20);
	assert_int_equal(fs.c.sync_pages + fs.c.async_pages, 2048);
	assert_true(fs.c.async_pages > fs.c.sync_pages);
	assert_int_equal(fs.c.errors, 0);
	assert_int_equal(fs.c.queue_refused, 0);
}

/*
 * Two threads share one handle and read 11 KiB at a time from a shared file
 * position, which seeks forward by three chunks, inside the window, at chunk
 * 300 (seed: raid0-multithread-read-regression-2004).  Both threads decide
 * on the same ra_state under its lock.  Expected: every byte right, every
 * page read once, one initial window and no restart after the seek.
 */
struct shared_fd {
	struct fixture *fx;
	struct ra_state st;
	uint64_t pos; /* __atomic: the next chunk, as a file offset would be */
};

static void *shared_fd_thread(void *arg)
{
	const uint64_t chunk = 11 * 1024;
	struct shared_fd *sf = arg;
	uint64_t k;

	cache_thread_online();
	while ((k = __atomic_fetch_add(&sf->pos, 1, __ATOMIC_RELAXED)) < 700) {
		if (k >= 300 && k < 303)
			continue; /* the lseek skipped these */
		uint64_t first = k * chunk / 4096;
		uint64_t last = ((k + 1) * chunk - 1) / 4096;

		read_pages(sf->fx, &sf->st, first, last - first + 1);
	}
	cache_thread_offline();
	return NULL;
}

static void test_two_threads_one_handle_seek(void **state)
{
	struct shared_fd sf = {.fx = *state};
	struct ra_file_stats fs;

	ra_state_init(&sf.st);
	run_threads(2, shared_fd_thread, &sf, 0);
	ra_state_destroy(&sf.st);
	settle(sf.fx);
	ra_file_stats(sf.fx->f, &fs);
	assert_int_equal(fs.c.decisions[RA_KIND_INITIAL], 1);
	assert_int_equal(fs.backing_bytes,
			 (fs.c.sync_pages + fs.c.async_pages) * 4096);
	/* 700 chunks of 11 KiB = 1925 pages read; the windows reached max */
	assert_true(fs.c.sync_pages + fs.c.async_pages >= 1925);
	/* (a read racing the first one may have left a candidate too) */
	uint64_t window = 0;
	for (unsigned int i = 0; i < fs.nr_streams; i++)
		if (fs.streams[i].state == RA_STREAM_STATS_ACTIVE &&
		    fs.streams[i].size > window)
			window = fs.streams[i].size;
	assert_int_equal(window, 256);
	assert_true(fs.c.async_pages > 10 * fs.c.sync_pages);
}

/* Advice: RANDOM turns readahead off, WILLNEED reads a range ahead,
 * DONTNEED drops it, SEQUENTIAL doubles the cap. */
static void test_advice(void **state)
{
	struct fixture *fx = *state;
	struct ra_file_stats fs;
	struct ra_state st;
	enum ra_advice a;

	assert_int_equal(ra_advice_parse("random\n", &a), 0);
	assert_int_equal(a, RA_ADVICE_RANDOM);
	assert_int_equal(ra_advice_parse("sequentia", &a), -EINVAL);
	assert_string_equal(ra_advice_name(RA_ADVICE_WILLNEED), "willneed");
	assert_null(ra_advice_name((enum ra_advice)9));
	assert_int_equal(ra_file_advise(fx->f, (enum ra_advice)9, 0, 0),
			 -EINVAL);

	assert_int_equal(ra_file_advise(fx->f, RA_ADVICE_RANDOM, 0, 0), 0);
	ra_state_init(&st);
	for (uint64_t i = 0; i < 64; i += 4)
		assert_int_equal(read_pages(fx, &st, i, 4), 4);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.advice, RA_ADVICE_RANDOM);
	assert_int_equal(fs.c.sync_pages, 64);
	assert_int_equal(fs.c.async_pages, 0);
	assert_int_equal(fs.c.decisions[RA_KIND_RANDOM], 16);

	assert_int_equal(ra_file_advise(fx->f, RA_ADVICE_SEQUENTIAL, 0, 0), 0);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.max_window, 512);
	assert_int_equal(ra_file_advise(fx->f, RA_ADVICE_NORMAL, 0, 0), 0);

	/* WILLNEED [1 MiB, 1.5 MiB): 128 pages queued ahead; a reader then
	 * finds them all present (waiting on LOCKED ones) and misses none. */
	assert_int_equal(
		ra_file_advise(fx->f, RA_ADVICE_WILLNEED, 1 << 20, 512 << 10),
		0);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.c.async_pages, 128);
	uint64_t misses = fs.c.decisions[RA_KIND_RANDOM] +
			  fs.c.decisions[RA_KIND_SEQ_MISS] +
			  fs.c.decisions[RA_KIND_STREAM_SEQ];
	ra_state_destroy(&st);
	ra_state_init(&st);
	for (uint64_t i = 256; i < 384; i += 8)
		assert_int_equal(read_pages(fx, &st, i, 8), 8);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.c.decisions[RA_KIND_RANDOM] +
				 fs.c.decisions[RA_KIND_SEQ_MISS] +
				 fs.c.decisions[RA_KIND_STREAM_SEQ],
			 misses);

	/* DONTNEED drops the range */
	assert_int_equal(
		ra_file_advise(fx->f, RA_ADVICE_DONTNEED, 1 << 20, 512 << 10),
		0);
	rcu_read_lock();
	for (uint64_t i = 256; i < 384; i++)
		assert_null(cache_lookup_rcu(fx->m, i));
	rcu_read_unlock();
	ra_state_destroy(&st);
}

/* A stream in a cache too small for its windows (96 pages for 256-page
 * windows).  The fair share holds its windows to a quarter of the budget
 * (one reader whose pages stay, pace.c ra_share_max()); the thrash feedback on
 * a stream's cap, which acts when windows are evicted before use anyway, is
 * tested on a model cache in test_stream.c.  The backing reads the file
 * at most 1.5 times (before the share: 12096 KiB for the 8192; 9400-10500 KiB
 * with it). */
static int setup_tight(void **state)
{
	struct ra_config rc = {.max_bytes = 1 << 20, .workers = 1};

	/* 96 pages of budget for 256-page windows */
	return setup_with(state, 8 << 20, &rc, 96 * 4096);
}

static void test_thrash_in_a_small_cache(void **state)
{
	struct fixture *fx = *state;
	struct ra_file_stats fs;
	struct ra_state st;
	uint64_t largest = 0;

	ra_state_init(&st);
	for (uint64_t i = 0; i < 2048; i++) {
		assert_int_equal(read_pages(fx, &st, i, 1), 1);
		if (st.size > largest)
			largest = st.size;
	}
	ra_state_destroy(&st);
	ra_file_stats(fx->f, &fs);
	fprintf(stderr,
		"small cache: largest window %llu pages, thrash %llu waste "
		"%llu "
		"backing %llu KiB (file 8192 KiB), stream cap %llu pages\n",
		(unsigned long long)largest, (unsigned long long)fs.c.thrash,
		(unsigned long long)fs.c.waste,
		(unsigned long long)fs.backing_bytes >> 10,
		(unsigned long long)(fs.nr_streams ? fs.streams[0].cap : 0));
	assert_true(largest <= 96 / 4);
	assert_true(fs.backing_bytes <= (8u << 20) * 3 / 2);
}

static int setup_rate(void **state)
{
	struct ra_config rc = {.max_bytes = 4 << 20, .workers = 2};

	return setup_with(state, 40 << 20, &rc, 128 << 20);
}

/* 6 MiB of budget (1536 pages) for 1 MiB windows, a 48 MiB file. */
static int setup_share(void **state)
{
	struct ra_config rc = {.max_bytes = 1 << 20, .workers = 2};

	return setup_with(state, 48 << 20, &rc, 6 << 20);
}

/*
 * The fair share: 24 sequential readers, interleaved 4 pages at a time,
 * each alone would grow its windows to the 256-page cap, and 24 x 2 such
 * windows are 8x the budget: prefetch would evict prefetch unread and the
 * backing be read again and again.  Once every reader is counted, no window
 * is larger than budget / (4 x 24) pages (16: the pages read stay in the
 * cache here, as in direct mode), and the backing reads little more than
 * what the readers get.  A read counts as one use of each page it replies
 * with, however many attempts it took: pages counted twice went to the
 * main queue and left prefetch a quarter of the budget (waste 11984 pages
 * of 24714 read, before read.c counted uses on the replying attempt only).
 */
static void test_share_of_the_budget(void **state)
{
	enum { READERS = 24, PAGES = 512 };
	struct fixture *fx = *state;
	struct ra_state st[READERS];
	struct ra_file_stats fs;
	uint64_t largest = 0, delivered = 0;

	for (int r = 0; r < READERS; r++)
		ra_state_init(&st[r]);
	for (uint64_t i = 0; i < PAGES; i += 4) {
		for (int r = 0; r < READERS; r++) {
			uint64_t base = (uint64_t)r * 512;

			delivered += read_pages(fx, &st[r], base + i, 4);
			if (i >= 64 && st[r].size > largest)
				largest = st[r].size;
		}
	}
	settle(fx);
	for (int r = 0; r < READERS; r++)
		ra_state_destroy(&st[r]);
	ra_file_stats(fx->f, &fs);
	fprintf(stderr,
		"share: largest window %llu pages, backing %llu pages for %llu "
		"delivered, waste %llu\n",
		(unsigned long long)largest,
		(unsigned long long)fs.backing_bytes >> 12,
		(unsigned long long)delivered, (unsigned long long)fs.c.waste);
	assert_int_equal(delivered, READERS * PAGES);
	if (largest > 1536 / (4 * READERS))
		fail_msg("a window of %llu pages beside %d readers in 1536",
			 (unsigned long long)largest, READERS);
	assert_true((fs.backing_bytes >> 12) <= delivered * 5 / 4);
}

/* The same, the stream table off: every row's window is the context
 * rule's, on the one handle the rows share. */
static int setup_share_no_table(void **state)
{
	struct ra_config rc = {.max_bytes = 1 << 20,
			       .workers = 2,
			       .stream_table = RA_STREAM_TABLE_OFF};

	return setup_with(state, 48 << 20, &rc, 6 << 20);
}

/* A matrix of @rows rows of @pages pages read by columns through one
 * handle, 4 pages from each row in turn, @pause_us between columns; the
 * backing reads at most 1.25x the matrix.  @kind: a decision the scan is
 * about, which must have been taken. */
static void column_scan(struct fixture *fx, uint64_t rows, uint64_t pages,
			useconds_t pause_us, enum ra_kind kind)
{
	struct ra_state st;
	struct ra_file_stats fs;
	uint64_t delivered = 0, t0 = ra_now_ns();

	ra_state_init(&st);
	for (uint64_t i = 0; i < pages; i += 4) {
		for (uint64_t r = 0; r < rows; r++)
			delivered += read_pages(fx, &st, r * pages + i, 4);
		if (pause_us)
			usleep(pause_us);
	}
	settle(fx);
	ra_state_destroy(&st);
	ra_file_stats(fx->f, &fs);
	fprintf(stderr,
		"column scan: backing %llu pages for %llu delivered, waste "
		"%llu, context windows %llu, recovered %llu, ahead %llu, "
		"%.2f s\n",
		(unsigned long long)fs.backing_bytes >> 12,
		(unsigned long long)delivered, (unsigned long long)fs.c.waste,
		(unsigned long long)fs.c.decisions[RA_KIND_CONTEXT],
		(unsigned long long)fs.c.decisions[RA_KIND_ASYNC_RECOVER],
		(unsigned long long)fs.c.decisions[RA_KIND_STREAM_AHEAD],
		(double)(ra_now_ns() - t0) / 1e9);
	assert_int_equal(delivered, rows * pages);
	assert_true(fs.c.decisions[kind] > 0);
	assert_true((fs.backing_bytes >> 12) <= delivered * 5 / 4);
}

/*
 * The same 24 rows read by columns through one handle (a matrix scanned
 * through one descriptor): no handle follows a row.  With the stream table
 * on, the table follows each row as a stream of its own, counted once an
 * epoch.  With it off -- and wherever the table's slots follow more rows
 * than they can hold, in turn -- the context rule finds each row's stream
 * in the cache, and each of its windows counts as a reader of the share,
 * so the windows of all rows fit as those of 24 handles do.  Counted as
 * the one handle's reader, the rows' windows grew to the cap and the
 * backing read 4.0x the file (49242 pages for 12288, waste 35910, table
 * off).
 */
static void test_share_one_handle_column(void **state)
{
	column_scan(*state, 24, 512, 0, RA_KIND_CONTEXT);
}

/*
 * The same scan over 5 s: the rows' windows go on from their own marks
 * (another reader's mark to the one handle: ASYNC_RECOVER) and seldom miss,
 * so few of them are context windows.  Counted as the handle's one reader,
 * the recovered windows grew past the share and the backing read 1.37x the
 * file (16850 pages for 12288, waste 4017; the ThreadSanitizer build's
 * 3 s scan of test_share_one_handle_column 1.2-1.4x); each counted as a
 * reader of its own, 1.04x.  Table off: with it on, each row has a slot.
 */
static void test_share_slow_column(void **state)
{
	column_scan(*state, 24, 512, 40 * 1000, RA_KIND_ASYNC_RECOVER);
}

/*
 * Rows shorter than a window, each row its stream in the table.  192 rows
 * of 64 pages: a followed stream takes the next rows' misses past its
 * window as its own overtaken requests (STREAM_AHEAD), a window of its
 * size each time, counted as its one slot, and reads the matrix in file
 * order, 4 rows a window, long before the columns reach them: 1.89x the
 * file.  Each such window counted as a reader of its own: 1.07x.  96 rows
 * of 128 pages, each row followed by a slot and counted: a share of 4
 * pages, raised to the 16-page floor there was, put 96 rows' windows at
 * twice the budget: 2.18x; with no floor but the request, 1.01x.
 */
static void test_share_rows_of_64(void **state)
{
	column_scan(*state, 192, 64, 0, RA_KIND_STREAM_AHEAD);
}

static void test_share_rows_of_128(void **state)
{
	column_scan(*state, 96, 128, 0, RA_KIND_STREAM_ASYNC);
}

/* A reader that reads fast, then slowly (a paced stream behind the
 * kernel's ramping readahead, or a reader that slows down): its windows
 * follow the slow rate from its second mark on, not after the fast samples
 * have faded a quarter per window (then windows stay at the cap for many
 * seconds). */
static void test_rate_falls_at_once(void **state)
{
	struct fixture *fx = *state;
	struct ra_state st;
	uint64_t largest = 0;

	ra_state_init(&st);
	for (uint64_t i = 0; i < 2048; i += 64)
		assert_int_equal(read_pages(fx, &st, i, 64), 64);
	for (uint64_t i = 2048, marks = 0, prev = st.start; i < 4096; i += 64) {
		assert_int_equal(read_pages(fx, &st, i, 64), 64);
		if (st.start != prev) {
			prev = st.start;
			if (++marks >= 2 && st.size > largest)
				largest = st.size;
		}
		usleep(100 * 1000);
	}
	ra_state_destroy(&st);
	assert_true(largest > 0);
	if (largest > 768)
		fail_msg(
			"a reader slowed to 640 pages/s kept %llu-page windows",
			(unsigned long long)largest);
}

static int setup_floor(void **state)
{
	struct ra_config rc = {.auto_floor_bytes = 4 << 20};

	return setup_with(state, 8 << 20, &rc, 64 << 20);
}

/* The automatic cap (no ra_max) is raised to the floor the daemon asks for
 * (above the kernel's 1 MiB FUSE requests); an explicit one is not. */
static void test_auto_floor(void **state)
{
	struct fixture *fx = *state;
	struct ra_file_stats fs;

	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.max_window, 1024);
	assert_int_equal(
		ra_engine_tune(fx->e, &(struct ra_tuning){.max_bytes = 1 << 20},
			       RA_TUNE_MAX),
		0);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.max_window, 256);
}

/* A paced reader's windows follow its rate: 64 pages every 100 ms (640
 * pages a second) needs windows of about a second of it, not the 1024-page
 * cap an unpaced reader of the same file gets (windows may be larger than
 * the rate says only by the request and rounding; a slower machine only
 * lowers the rate). */
static void test_windows_follow_the_rate(void **state)
{
	struct fixture *fx = *state;
	struct ra_state slow, fast;
	uint64_t largest = 0;

	ra_state_init(&slow);
	for (uint64_t i = 0; i < 1600; i += 64) {
		assert_int_equal(read_pages(fx, &slow, i, 64), 64);
		if (i >= 640 && slow.size > largest)
			largest = slow.size;
		usleep(100 * 1000);
	}
	ra_state_destroy(&slow);
	assert_true(largest > 0);
	if (largest > 768)
		fail_msg("a reader at 640 pages/s got a %llu-page window",
			 (unsigned long long)largest);
	settle(fx);
	ra_state_init(&fast);
	largest = 0;
	for (uint64_t i = 2048; i < 8192; i += 64) {
		assert_int_equal(read_pages(fx, &fast, i, 64), 64);
		if (fast.size > largest)
			largest = fast.size;
	}
	ra_state_destroy(&fast);
	assert_int_equal(largest, 1024);
}

static void test_config_checked(void **state)
{
	struct cache_config cc = {.budget_bytes = 16 << 20};
	struct ra_config bad[] = {
		{.max_bytes = 4097},
		{.auto_floor_bytes = 4097},
		{.auto_floor_bytes = (2ull << 30)},
		{.max_bytes = (2ull << 30)},
		{.workers = 65},
		{.queue_depth = 70000},
		{.context = (enum ra_context_rule)7},
		{.backing_io = (enum ra_backing_io)5},
		{.stripe_bytes = 1000},
		{.stripe_bytes = 1 << 20, .chunk_bytes = 3 << 18},
	};
	struct ra_config good = {.context = RA_CONTEXT_LOOSE,
				 .stripe_bytes = 2 << 20,
				 .chunk_bytes = 512 << 10};
	struct ra_engine *e;
	struct cache *c;

	cache_thread_online();
	assert_int_equal(cache_create(&cc, &c), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ra_engine_create(&bad[i], c, &e), -EINVAL);
	assert_int_equal(ra_engine_create(NULL, c, &e), -EINVAL);
	assert_int_equal(ra_engine_create(&good, c, &e), 0);
	assert_int_equal(ra_engine_destroy(e), 0);
	assert_int_equal(cache_destroy(c), 0);
	assert_string_equal(ra_kind_name(RA_KIND_CONTEXT), "context");
	/* the all-zero config is the documented default: conservative
	 * context rule, stream table on */
	struct ra_config dflt = {0};
	assert_int_equal(dflt.context, RA_CONTEXT_CONSERVATIVE);
	assert_int_equal(dflt.stream_table, RA_STREAM_TABLE_ON);
	assert_string_equal(ra_kind_name(RA_KIND_COUNT), "unknown");
}

/* Whether page @i is a history entry (no data, but present for the
 * context readahead's scan). */
static bool history_at(struct fixture *fx, uint64_t i)
{
	bool h;

	rcu_read_lock();
	h = cache_history_rcu(fx->m, i);
	rcu_read_unlock();
	return h;
}

/*
 * Pages the kernel took (history entries, as kernel read mode leaves them)
 * are not read again by a window that runs over them -- another reader
 * consumed them, the kernel holds them -- until a reader asks for one of
 * them (the kernel dropped it): that reader's windows read them again.
 */
static void test_windows_skip_what_the_kernel_took(void **state)
{
	struct fixture *fx = *state;
	struct cache_page *pages[100];
	struct ra_state st;
	unsigned int got, data = 0;

	assert_int_equal(cache_insert_range(fx->m, 100, 100, CACHE_NO_MARK, 0,
					    pages, &got),
			 0);
	assert_int_equal(got, 100);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
	assert_int_equal(cache_page_drop_to_history(fx->m, 100, 199), 100);

	ra_state_init(&st);
	for (uint64_t i = 0; i < 100; i += 4)
		assert_int_equal(read_pages(fx, &st, i, 4), 4);
	settle(fx);
	for (uint64_t i = 100; i < 200; i++)
		if (!history_at(fx, i))
			fail_msg("page %llu was read again by a window",
				 (unsigned long long)i);

	/* The kernel dropped them: a read of one.  Its window and the next
	 * ones read the rest again, with the right bytes. */
	for (uint64_t i = 100; i < 200; i += 4)
		assert_int_equal(read_pages(fx, &st, i, 4), 4);
	settle(fx);
	for (uint64_t i = 200; i < 256; i++) {
		rcu_read_lock();
		data += cache_lookup_rcu(fx->m, i) != NULL;
		rcu_read_unlock();
	}
	assert_int_equal(data, 56); /* the windows went on past the history */
	ra_state_destroy(&st);
	{
		struct ra_file_stats fs;

		ra_file_stats(fx->f, &fs);
		/* 12 measured: windows ran ahead of the second pass too (one
		 * sync read per request would be 100 pages) */
		assert_true(fs.c.sync_pages <= 24);
	}
}

/* Stripe overrides: windows end on stripe boundaries where it costs
 * nothing (stripe 512 KiB = 128 pages, max 1 MiB). */
static int setup_striped(void **state)
{
	struct ra_config rc = {.max_bytes = 1 << 20,
			       .workers = 2,
			       .stripe_bytes = 512 << 10,
			       .chunk_bytes = 128 << 10};

	return setup_with(state, 8 << 20, &rc, 64 << 20);
}

static void test_striped_windows(void **state)
{
	struct fixture *fx = *state;
	struct ra_file_stats fs;
	struct ra_state st;

	ra_state_init(&st);
	/* 3 pages at 5: sequential? no (prev -1, index 5): random.  Then a
	 * read at 8 right after: sequential miss, init_size(4) = 16 pages,
	 * [8, 24): its end rounds up to the stripe boundary 128 (within the
	 * cap 8 + 256), so the next window starts on a stripe. */
	assert_int_equal(read_pages(fx, &st, 5, 3), 3);
	assert_int_equal(read_pages(fx, &st, 8, 4), 4);
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.stripe_pages, 128);
	assert_int_equal(fs.c.decisions[RA_KIND_RANDOM], 1);
	assert_int_equal(fs.nr_streams >= 1, 1);
	for (unsigned int i = 0; i < fs.nr_streams; i++)
		if (fs.streams[i].state == 2)
			assert_int_equal(
				(fs.streams[i].start + fs.streams[i].size) %
					128,
				0);
	for (uint64_t i = 12; i < 1024; i += 4)
		assert_int_equal(read_pages(fx, &st, i, 4), 4);
	ra_state_destroy(&st);
	settle(fx);
	/* every page inserted was read once, none twice */
	ra_file_stats(fx->f, &fs);
	assert_int_equal(fs.backing_bytes,
			 (fs.c.sync_pages + fs.c.async_pages) * 4096);
	for (unsigned int i = 0; i < fs.nr_streams; i++)
		if (fs.streams[i].state == 2)
			assert_int_equal(
				(fs.streams[i].start + fs.streams[i].size) %
					128,
				0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sequential_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_random_reads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_oversize_read,
						setup_small_max, teardown),
		cmocka_unit_test_setup_teardown(test_eof_partial_page,
						setup_small, teardown),
		cmocka_unit_test_setup_teardown(test_threads_share_one_stream,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_server_threads_per_request_handles, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_two_threads_one_handle_seek, setup, teardown),
		cmocka_unit_test_setup_teardown(test_advice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thrash_in_a_small_cache,
						setup_tight, teardown),
		cmocka_unit_test_setup_teardown(
			test_windows_skip_what_the_kernel_took, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_striped_windows,
						setup_striped, teardown),
		cmocka_unit_test(test_config_checked),
		cmocka_unit_test_setup_teardown(test_windows_follow_the_rate,
						setup_rate, teardown),
		cmocka_unit_test_setup_teardown(test_share_of_the_budget,
						setup_share, teardown),
		cmocka_unit_test_setup_teardown(test_share_one_handle_column,
						setup_share, teardown),
		cmocka_unit_test_setup_teardown(test_share_one_handle_column,
						setup_share_no_table, teardown),
		cmocka_unit_test_setup_teardown(test_share_slow_column,
						setup_share_no_table, teardown),
		cmocka_unit_test_setup_teardown(test_share_rows_of_64,
						setup_share, teardown),
		cmocka_unit_test_setup_teardown(test_share_rows_of_128,
						setup_share, teardown),
		cmocka_unit_test_setup_teardown(test_rate_falls_at_once,
						setup_rate, teardown),
		cmocka_unit_test_setup_teardown(test_auto_floor, setup_floor,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
