/* test_backing_cache.c - backing reads into real cache/ pages, through the
 * worker pool, as ra.c does it: cache_insert_range() gives LOCKED pages,
 * ra_backing_read()/ra_backing_queue() fill and complete them with
 * RA_CACHE_PAGE_OPS, readers look the pages up under RCU and wait on them
 * with cache_page_wait().  Checks: every byte, EOF zero pages, an I/O error
 * reaching exactly the readers of its page (and the page leaving the tree, 0),
 * cancelled and shut-down windows waking their readers with -EAGAIN, and
 * cache_destroy() succeeding afterwards (no page reference leaked; LSan
 * reports leaks in the ASan build).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/cache.h"
#include "backing.h"
#include "worker.h"

#define PG CACHE_PAGE_SIZE

_Static_assert(RA_IO_PAGE_SIZE == CACHE_PAGE_SIZE, "page sizes agree");

static const struct ra_page_ops cache_ops = RA_CACHE_PAGE_OPS;

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)(off * 11 + (off >> 12) * 5 + 3);
}

/* Fault injection: a preadv covering page fail_page fails with -EIO; an
 * optional stall holds every read until posted. */
struct hook {
	int64_t fail_page;
	int stall_left; /* __atomic: this many more reads wait on stall */
	sem_t stall; /* posted by the test to let one stalled read go */
	sem_t entered; /* posted when a stalled read has started */
};

static ssize_t hook_preadv(void *ctx, int fd, const struct iovec *iov,
			   int iovcnt, off_t off)
{
	struct hook *h = ctx;
	uint64_t len = 0;
	ssize_t r;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (__atomic_fetch_sub(&h->stall_left, 1, __ATOMIC_ACQ_REL) > 0) {
		sem_post(&h->entered);
		sem_wait(&h->stall);
	}
	if (h->fail_page >= 0 && (uint64_t)h->fail_page * PG >= (uint64_t)off &&
	    (uint64_t)h->fail_page * PG < (uint64_t)off + len)
		return -EIO;
	r = preadv(fd, iov, iovcnt, off);
	return r < 0 ? -errno : r;
}

struct fx {
	struct cache *c;
	struct cache_mapping *m;
	struct ra_pool *pool;
	struct ra_backing *b;
	struct hook hook;
	char path[PATH_MAX];
	int fd;
	uint64_t size;
};

static void worker_online(void *arg)
{
	cache_thread_online();
}

static void worker_offline(void *arg)
{
	cache_thread_offline();
}

static int setup_size(void **state, uint64_t size, uint64_t chunk)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct cache_config cc = {.budget_bytes = 16u << 20,
				  .manual_reclaim = true};
	struct ra_pool_config pc = {.workers = 2,
				    .queue_depth = 16,
				    .thread_init = worker_online,
				    .thread_exit = worker_offline};
	struct ra_backing_config bc = {.mode = RA_BACKING_IO_AUTO,
				       .chunk = chunk,
				       .ops = &cache_ops,
				       .preadv_hook = hook_preadv};
	const char *tmp = getenv("TMPDIR");
	struct stat st;
	uint8_t buf[PG];

	if (!f)
		return -1;
	cache_thread_online();
	f->size = size;
	f->hook.fail_page = -1;
	sem_init(&f->hook.stall, 0, 0);
	sem_init(&f->hook.entered, 0, 0);
	snprintf(f->path, sizeof(f->path), "%s/afs-bc-XXXXXX",
		 tmp && *tmp ? tmp : "/var/tmp");
	f->fd = mkstemp(f->path);
	if (f->fd < 0)
		return -1;
	for (uint64_t off = 0; off < size; off += PG) {
		size_t len = size - off < PG ? (size_t)(size - off) : PG;

		for (size_t i = 0; i < len; i++)
			buf[i] = pattern(off + i);
		if (pwrite(f->fd, buf, len, (off_t)off) != (ssize_t)len)
			return -1;
	}
	if (fsync(f->fd) || fstat(f->fd, &st))
		return -1;
	bc.hook_ctx = &f->hook;
	if (cache_create(&cc, &f->c) || cache_mapping_create(f->c, &f->m) ||
	    ra_pool_create(&pc, &f->pool) || ra_backing_open(f->fd, &bc, &f->b))
		return -1;
	*state = f;
	return 0;
}

/* 40 pages + 100 bytes, 8-page chunks. */
static int setup(void **state)
{
	return setup_size(state, 40 * PG + 100, 8 * PG);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->pool)
		ra_pool_destroy(f->pool);
	ra_backing_put(f->b);
	cache_mapping_put(f->m);
	/* -EBUSY here means a page or mapping reference was leaked. */
	if (cache_destroy(f->c))
		return -1;
	close(f->fd);
	unlink(f->path);
	sem_destroy(&f->hook.stall);
	sem_destroy(&f->hook.entered);
	free(f);
	return 0;
}

/* Insert LOCKED pages for [start, start + nr): all must be new. */
static void insert(struct fx *f, uint64_t start, unsigned int nr,
		   struct cache_page **pages)
{
	unsigned int n = 0;

	assert_int_equal(cache_insert_range(f->m, start, nr, CACHE_NO_MARK,
					    CACHE_INSERT_PREFETCH, pages, &n),
			 0);
	assert_int_equal(n, nr);
}

/* A reader: look @index up, wait for it; copy its data if uptodate. */
static int read_page(struct fx *f, uint64_t index, uint8_t *out)
{
	struct cache_page *p;
	int rc;

	rcu_read_lock();
	p = cache_lookup_rcu(f->m, index);
	if (p && !cache_page_tryget(p))
		p = NULL;
	rcu_read_unlock();
	if (!p)
		return -ENOENT;
	rc = cache_page_wait(p, NULL);
	if (!rc)
		memcpy(out, cache_page_data(p), PG);
	cache_page_put(p);
	return rc;
}

static void check_data(struct fx *f, uint64_t index, const uint8_t *d)
{
	for (size_t i = 0; i < PG; i++) {
		uint64_t off = index * PG + i;
		uint8_t want = off < f->size ? pattern(off) : 0;

		if (d[i] != want)
			fail_msg("page %llu byte %zu: %#x want %#x",
				 (unsigned long long)index, i, d[i], want);
	}
}

/* A reference on the LOCKED page at @index, as a waiting reader holds. */
static struct cache_page *grab(struct fx *f, uint64_t index)
{
	struct cache_page *p;

	rcu_read_lock();
	p = cache_lookup_rcu(f->m, index);
	assert_non_null(p);
	assert_true(cache_page_tryget(p));
	rcu_read_unlock();
	assert_true(cache_page_locked(p));
	return p;
}

/* A reader already waiting: it took its page reference before the I/O
 * was issued (so an error completion cannot remove the page before it
 * looks), and waits on another thread. */
struct reader {
	struct cache_page *p;
	uint64_t index;
	pthread_t th;
	int rc;
	uint8_t data[PG];
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	cache_thread_online();
	r->rc = cache_page_wait(r->p, NULL);
	if (!r->rc)
		memcpy(r->data, cache_page_data(r->p), PG);
	cache_page_put(r->p);
	cache_thread_offline();
	return NULL;
}

static void reader_start(struct fx *f, struct reader *r, uint64_t index)
{
	r->index = index;
	r->p = grab(f, index);
	assert_int_equal(pthread_create(&r->th, NULL, reader_main, r), 0);
}

/* Readers start waiting on pages [0, 44) before the read is issued; pages
 * 40..43 are the EOF tail and beyond. */
static void test_read_through_pool(void **state)
{
	struct fx *f = *state;
	struct cache_page *pages[44];
	struct reader r[44];
	struct ra_backing_stats st;

	insert(f, 0, 44, pages);
	for (int i = 0; i < 44; i++)
		reader_start(f, &r[i], (uint64_t)i);
	assert_int_equal(
		ra_backing_read(f->b, pages, 44, f->pool, RA_PRIO_DEMAND), 0);
	for (int i = 0; i < 44; i++) {
		assert_int_equal(pthread_join(r[i].th, NULL), 0);
		assert_int_equal(r[i].rc, 0);
		check_data(f, (uint64_t)i, r[i].data);
	}
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.pieces_queued, 5); /* 6 pieces of <= 8 pages */
	assert_int_equal(st.pages_ok, 44);
	assert_int_equal(st.pages_eof, 3); /* 41, 42, 43 */
}

/* An error on page 13: its readers get -EIO and the page leaves the tree;
 * every other page is data. */
static void test_error_reaches_exactly_its_readers(void **state)
{
	struct fx *f = *state;
	struct cache_page *pages[24];
	struct reader r[48];
	uint8_t d[PG];

	f->hook.fail_page = 13;
	insert(f, 0, 24, pages);
	for (int i = 0; i < 48; i++)
		reader_start(f, &r[i], (uint64_t)(i / 2)); /* two per page */
	ra_backing_read(f->b, pages, 24, f->pool, RA_PRIO_DEMAND);
	for (int i = 0; i < 48; i++) {
		assert_int_equal(pthread_join(r[i].th, NULL), 0);
		if (r[i].index == 13) {
			assert_int_equal(r[i].rc, -EIO);
			continue;
		}
		assert_int_equal(r[i].rc, 0);
		check_data(f, r[i].index, r[i].data);
	}
	/* Never cached as data: a new lookup misses it. */
	assert_int_equal(read_page(f, 13, d), -ENOENT);
	assert_int_equal(read_page(f, 12, d), 0);
	check_data(f, 12, d);
}

/* Queue window [@start, @start + 8) owned by @owner. */
static void queue8(struct fx *f, uint64_t start, const void *owner)
{
	struct cache_page *pages[8];

	insert(f, start, 8, pages);
	assert_int_equal(
		ra_backing_queue(f->b, pages, 8, f->pool, f->m, owner, 0), 0);
}

/*
 * A queued window cancelled with its stream:
 *   1. windows A [0,8) and B [16,24) occupy both workers, their reads
 *      stalled;
 *   2. window W [32,40) of stream S is queued behind them; the test holds
 *      references on W's pages, as waiting readers do;
 *   3. ra_pool_cancel(S): W's waiters get -EAGAIN (look up again) and W's
 *      pages are gone from the tree, while A and B are still in flight;
 *   4. A and B are released and hold the data.
 * Failure: a waiter on W hangs (the cancel did not complete the pages) or
 * gets data/0, or A/B lose their data.
 */
static void test_cancelled_window_wakes_readers(void **state)
{
	struct fx *f = *state;
	struct cache_page *held[8];
	int stream;
	uint8_t d[PG];

	__atomic_store_n(&f->hook.stall_left, 2, __ATOMIC_RELEASE);
	queue8(f, 0, NULL);
	queue8(f, 16, NULL);
	sem_wait(&f->hook.entered);
	sem_wait(&f->hook.entered);
	queue8(f, 32, &stream);
	for (int i = 0; i < 8; i++)
		held[i] = grab(f, 32 + (uint64_t)i);
	assert_int_equal(ra_pool_cancel(f->pool, &stream), 1);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(cache_page_wait(held[i], NULL), -EAGAIN);
		cache_page_put(held[i]);
		assert_int_equal(read_page(f, 32 + (uint64_t)i, d), -ENOENT);
	}
	sem_post(&f->hook.stall);
	sem_post(&f->hook.stall);
	for (uint64_t i = 0; i < 8; i++) {
		assert_int_equal(read_page(f, i, d), 0);
		check_data(f, i, d);
		assert_int_equal(read_page(f, 16 + i, d), 0);
		check_data(f, 16 + i, d);
	}
}

struct destroyer {
	struct ra_pool *pool;
	pthread_t th;
};

static void *destroy_main(void *arg)
{
	struct destroyer *d = arg;

	ra_pool_destroy(d->pool);
	return NULL;
}

/*
 * Shutdown with reads in flight and windows queued:
 *   1. windows [0,8) and [8,16) occupy both workers, reads stalled;
 *   2. windows [16,24) and [24,32) are queued; the test holds references
 *      on their pages;
 *   3. ra_pool_destroy() starts on another thread: the queued windows'
 *      waiters get -EAGAIN while the two reads are still stalled;
 *   4. the reads are released; destroy returns; their pages hold data, and
 *      teardown's cache_destroy() finds no leaked reference.
 */
static void test_shutdown_completes_queued_windows(void **state)
{
	struct fx *f = *state;
	struct cache_page *held[16];
	struct destroyer d = {.pool = f->pool};
	uint8_t data[PG];

	__atomic_store_n(&f->hook.stall_left, 2, __ATOMIC_RELEASE);
	queue8(f, 0, NULL);
	queue8(f, 8, NULL);
	sem_wait(&f->hook.entered);
	sem_wait(&f->hook.entered);
	queue8(f, 16, NULL);
	queue8(f, 24, NULL);
	for (int i = 0; i < 16; i++)
		held[i] = grab(f, 16 + (uint64_t)i);
	assert_int_equal(pthread_create(&d.th, NULL, destroy_main, &d), 0);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(cache_page_wait(held[i], NULL), -EAGAIN);
		cache_page_put(held[i]);
	}
	sem_post(&f->hook.stall);
	sem_post(&f->hook.stall);
	assert_int_equal(pthread_join(d.th, NULL), 0);
	f->pool = NULL;
	for (uint64_t i = 0; i < 16; i++) {
		assert_int_equal(read_page(f, i, data), 0);
		check_data(f, i, data);
	}
	for (uint64_t i = 16; i < 32; i++)
		assert_int_equal(read_page(f, i, data), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_read_through_pool),
		T(test_error_reaches_exactly_its_readers),
		T(test_cancelled_window_wakes_readers),
		T(test_shutdown_completes_queued_windows),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
