/* test_backing.c - backing reads into LOCKED pages (ra/backing_pages.c,
 * the object and the reads around the cache in ra/backing.c) on real
 * files: O_DIRECT on the disk, buffered on /dev/shm and by request; page
 * contents, one preadv per run, splits on chunks and IOV_MAX, EOF tails,
 * short reads, errors failing exactly their pages, queued windows with
 * cancellation, and shutdown with I/O in flight.
 *
 * The pages are fakes (this file defines struct cache_page): each records
 * how it was completed, and waiter threads block on them as readers block on
 * cache pages.  A preadv hook records every call's offset and length and can
 * inject errors, short reads and a stall; it calls the real preadv(2).
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "backing.h"
#include "backing_internal.h"
#include "worker.h"

#define PG RA_IO_PAGE_SIZE

/* Checks on threads other than the test's (cmocka's asserts longjmp). */
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

/* ---- fake pages ---------------------------------------------------- */

struct cache_page {
	uint64_t index;
	void *buf;
	int done; /* protected by pg_lock */
	int err; /* protected by pg_lock */
	int completions; /* protected by pg_lock */
};

static pthread_mutex_t pg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pg_cond = PTHREAD_COND_INITIALIZER;

static uint64_t fp_index(const struct cache_page *p)
{
	return p->index;
}

static void *fp_data(const struct cache_page *p)
{
	return p->buf;
}

static void fp_complete(struct cache_page *p, int err)
{
	pthread_mutex_lock(&pg_lock);
	p->completions++;
	p->done = 1;
	p->err = err;
	pthread_cond_broadcast(&pg_cond);
	pthread_mutex_unlock(&pg_lock);
}

static const struct ra_page_ops fake_ops = {
	.index = fp_index,
	.data = fp_data,
	.complete = fp_complete,
};

/* Wait as a reader does; return the page's result. */
static int fp_wait(struct cache_page *p)
{
	int err;

	pthread_mutex_lock(&pg_lock);
	while (!p->done)
		pthread_cond_wait(&pg_cond, &pg_lock);
	err = p->err;
	pthread_mutex_unlock(&pg_lock);
	return err;
}

struct pageset {
	size_t n;
	struct cache_page *pg;
	struct cache_page **ptr;
};

/* Pages for the given indexes, buffers filled with 0xAA (not data). */
static struct pageset *pages_new(const uint64_t *idx, size_t n)
{
	struct pageset *ps = calloc(1, sizeof(*ps));

	assert_non_null(ps);
	ps->n = n;
	ps->pg = calloc(n, sizeof(*ps->pg));
	ps->ptr = calloc(n, sizeof(*ps->ptr));
	assert_non_null(ps->pg);
	assert_non_null(ps->ptr);
	for (size_t i = 0; i < n; i++) {
		ps->pg[i].index = idx[i];
		assert_int_equal(posix_memalign(&ps->pg[i].buf, PG, PG), 0);
		memset(ps->pg[i].buf, 0xAA, PG);
		ps->ptr[i] = &ps->pg[i];
	}
	return ps;
}

static struct pageset *pages_range(uint64_t first, size_t n)
{
	uint64_t *idx = calloc(n, sizeof(*idx));
	struct pageset *ps;

	assert_non_null(idx);
	for (size_t i = 0; i < n; i++)
		idx[i] = first + i;
	ps = pages_new(idx, n);
	free(idx);
	return ps;
}

static void pages_free(struct pageset *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->pg[i].buf);
	free(ps->pg);
	free(ps->ptr);
	free(ps);
}

static void pages_wait_all(struct pageset *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		fp_wait(&ps->pg[i]);
}

/* ---- the backing file ---------------------------------------------- */

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)(off * 7 + (off >> 12) * 13 + 1);
}

/* Create @dir/afs-backing-XXXXXX holding @size pattern bytes; fsynced. */
static int make_file(const char *dir, uint64_t size, char *path)
{
	uint8_t buf[PG];
	int fd;

	snprintf(path, PATH_MAX, "%s/afs-backing-XXXXXX", dir);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	for (uint64_t off = 0; off < size; off += PG) {
		size_t len = size - off < PG ? (size_t)(size - off) : PG;

		for (size_t i = 0; i < len; i++)
			buf[i] = pattern(off + i);
		assert_int_equal(pwrite(fd, buf, len, (off_t)off),
				 (ssize_t)len);
	}
	assert_int_equal(fsync(fd), 0);
	return fd;
}

static const char *disk_dir(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/var/tmp";
}

/* Page @p holds the file's bytes, zeros past @size; it completed once, ok. */
static void check_page(struct cache_page *p, uint64_t size)
{
	const uint8_t *b = p->buf;
	uint64_t base = p->index * PG;

	assert_int_equal(p->completions, 1);
	assert_int_equal(p->err, 0);
	for (size_t i = 0; i < PG; i++) {
		uint8_t want = base + i < size ? pattern(base + i) : 0;

		if (b[i] != want)
			fail_msg("page %llu byte %zu: %#x, want %#x",
				 (unsigned long long)p->index, i, b[i], want);
	}
}

/* ---- preadv hook ---------------------------------------------------- */

struct call {
	uint64_t off;
	uint64_t len;
};

struct hook {
	pthread_mutex_t lock;
	struct call calls[4096]; /* protected by lock */
	int ncalls; /* protected by lock */
	int64_t fail_page; /* -1: none; any call covering it fails -EIO */
	size_t max_pages; /* 0: none; else return at most this many pages */
	size_t max_bytes; /* 0: none; else return at most this many bytes */
	bool refuse_probe; /* the probe (first call, 1 page at 0): EINVAL */
	bool probed;
	sem_t *stall; /* if set: every call waits for a post first */
	sem_t *entered; /* if set: posted when a call starts */
};

static ssize_t hook_preadv(void *ctx, int fd, const struct iovec *iov,
			   int iovcnt, off_t off)
{
	struct hook *h = ctx;
	uint64_t len = 0;
	ssize_t r;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	pthread_mutex_lock(&h->lock);
	if (!h->probed) {
		/* ra_backing_open()'s probe: not recorded. */
		h->probed = true;
		pthread_mutex_unlock(&h->lock);
		if (h->refuse_probe)
			return -EINVAL;
		r = preadv(fd, iov, iovcnt, off);
		return r < 0 ? -errno : r;
	}
	CHECK(h->ncalls < 4096);
	h->calls[h->ncalls].off = (uint64_t)off;
	h->calls[h->ncalls].len = len;
	h->ncalls++;
	pthread_mutex_unlock(&h->lock);
	if (h->entered)
		sem_post(h->entered);
	if (h->stall)
		sem_wait(h->stall);
	if (h->fail_page >= 0 && (uint64_t)h->fail_page * PG >= (uint64_t)off &&
	    (uint64_t)h->fail_page * PG < (uint64_t)off + len)
		return -EIO;
	if (h->max_pages && (size_t)iovcnt > h->max_pages)
		iovcnt = (int)h->max_pages;
	r = preadv(fd, iov, iovcnt, off);
	if (r < 0)
		return -errno;
	/* A short count inside the file that is not a page multiple (a
	 * network or FUSE backing answers so): the first bytes only. */
	return h->max_bytes && (size_t)r > h->max_bytes ? (ssize_t)h->max_bytes
							: r;
}

static struct hook *hook_new(void)
{
	struct hook *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	pthread_mutex_init(&h->lock, NULL);
	h->fail_page = -1;
	return h;
}

static void hook_free(struct hook *h)
{
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static int cmp_call(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The recorded calls, sorted by offset, are exactly @want (in pages). */
static void check_calls(struct hook *h, const uint64_t (*want)[2], int n)
{
	pthread_mutex_lock(&h->lock);
	qsort(h->calls, (size_t)h->ncalls, sizeof(h->calls[0]), cmp_call);
	for (int i = 0; i < h->ncalls; i++)
		fprintf(stderr, "# preadv %llu+%llu pages\n",
			(unsigned long long)(h->calls[i].off / PG),
			(unsigned long long)(h->calls[i].len / PG));
	assert_int_equal(h->ncalls, n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(h->calls[i].off, want[i][0] * PG);
		assert_int_equal(h->calls[i].len, want[i][1] * PG);
	}
	pthread_mutex_unlock(&h->lock);
}

/* ---- fixture -------------------------------------------------------- */

struct fx {
	char path[PATH_MAX];
	int fd;
	uint64_t size;
	struct hook *hook;
	struct ra_backing *b;
	struct ra_pool *pool;
	struct ra_io_totals totals;
};

static struct fx *fx_new(const char *dir, uint64_t size,
			 enum ra_backing_io mode, uint64_t chunk,
			 unsigned int workers)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct ra_backing_config cfg = {.mode = mode, .chunk = chunk};

	assert_non_null(f);
	f->size = size;
	f->fd = make_file(dir, size, f->path);
	f->hook = hook_new();
	cfg.ops = &fake_ops;
	cfg.preadv_hook = hook_preadv;
	cfg.hook_ctx = f->hook;
	cfg.totals = &f->totals;
	f->hook->probed = mode == RA_BACKING_IO_BUFFERED; /* no probe read */
	assert_int_equal(ra_backing_open(f->fd, &cfg, &f->b), 0);
	if (workers) {
		struct ra_pool_config pc = {.workers = workers,
					    .queue_depth = 64};

		assert_int_equal(ra_pool_create(&pc, &f->pool), 0);
	}
	return f;
}

static void fx_free(struct fx *f)
{
	if (f->pool)
		ra_pool_destroy(f->pool);
	ra_backing_put(f->b);
	close(f->fd);
	unlink(f->path);
	hook_free(f->hook);
	free(f);
}

/* ---- tests ---------------------------------------------------------- */

static void test_bad_config(void **state)
{
	struct ra_backing_config cfg = {.mode = RA_BACKING_IO_AUTO};
	struct ra_page_ops half = {.index = fp_index, .data = fp_data};
	struct ra_backing *b = NULL;

	assert_int_equal(ra_backing_open(0, &cfg, &b), -EINVAL); /* no ops */
	cfg.ops = &half;
	assert_int_equal(ra_backing_open(0, &cfg, &b), -EINVAL);
	cfg.ops = &fake_ops;
	cfg.chunk = 6000;
	assert_int_equal(ra_backing_open(0, &cfg, &b), -EINVAL);
	cfg.chunk = 0;
	cfg.mode = (enum ra_backing_io)7;
	assert_int_equal(ra_backing_open(0, &cfg, &b), -EINVAL);
	cfg.mode = RA_BACKING_IO_AUTO;
	assert_int_equal(ra_backing_open(-1, &cfg, &b), -EINVAL);
	assert_int_equal(ra_backing_open(0, NULL, &b), -EINVAL);
	assert_null(b);
	assert_string_equal(ra_backing_io_name(RA_BACKING_IO_AUTO), "auto");
	assert_string_equal(ra_backing_io_name(RA_BACKING_IO_DIRECT), "direct");
	assert_string_equal(ra_backing_io_name(RA_BACKING_IO_BUFFERED),
			    "buffered");
}

/* One contiguous run, O_DIRECT on the disk: one preadv, every byte right. */
static void test_direct_one_run(void **state)
{
	struct fx *f = fx_new(disk_dir(), 64 * PG, RA_BACKING_IO_AUTO, 0, 0);
	struct pageset *ps = pages_range(0, 16);
	static const uint64_t want[][2] = {{0, 16}};
	struct ra_backing_stats st;

	assert_int_equal(ra_backing_mode(f->b), RA_BACKING_IO_DIRECT);
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	check_calls(f->hook, want, 1);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.mode, RA_BACKING_IO_DIRECT);
	assert_int_equal(st.reads, 1);
	assert_int_equal(st.bytes, 16 * PG);
	assert_int_equal(st.pages_ok, 16);
	assert_int_equal(st.pages_eof, 0);
	assert_int_equal(st.errors, 0);
	pages_free(ps);
	fx_free(f);
}

/* Runs with gaps: one preadv per contiguous run. */
static void test_runs_with_gaps(void **state)
{
	static const uint64_t idx[] = {2, 3, 4, 10, 11, 20};
	static const uint64_t want[][2] = {{2, 3}, {10, 2}, {20, 1}};
	struct fx *f = fx_new(disk_dir(), 32 * PG, RA_BACKING_IO_AUTO, 0, 0);
	struct pageset *ps = pages_new(idx, 6);

	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	check_calls(f->hook, want, 3);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	pages_free(ps);
	fx_free(f);
}

/*
 * Chunk 16 KiB (4 pages), pages 2..13 and 15..17 with a pool: pieces
 * [2,4) [4,8) [8,12) [12,14) [15,16) [16,18); the caller reads [2,4), the
 * pool the rest, in parallel.
 */
static void test_split_on_chunks(void **state)
{
	static const uint64_t idx[] = {2,  3,  4,  5,  6,  7,  8, 9,
				       10, 11, 12, 13, 15, 16, 17};
	static const uint64_t want[][2] = {{2, 2},  {4, 4},  {8, 4},
					   {12, 2}, {15, 1}, {16, 2}};
	struct fx *f =
		fx_new(disk_dir(), 32 * PG, RA_BACKING_IO_AUTO, 4 * PG, 2);
	struct pageset *ps = pages_new(idx, 15);
	struct ra_backing_stats st;

	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, f->pool, RA_PRIO_DEMAND),
		0);
	/* The caller's own piece is done when the call returns. */
	assert_int_equal(ps->pg[0].completions, 1);
	assert_int_equal(ps->pg[1].completions, 1);
	pages_wait_all(ps);
	ra_pool_destroy(f->pool); /* the workers have let go of every piece */
	f->pool = NULL;
	check_calls(f->hook, want, 6);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.pieces_queued, 5);
	assert_int_equal(st.reads, 6);
	pages_free(ps);
	fx_free(f);
}

/* Without a pool the pieces are the same, all read by the caller. */
static void test_split_without_pool(void **state)
{
	static const uint64_t want[][2] = {{6, 2}, {8, 8}, {16, 1}};
	struct fx *f =
		fx_new(disk_dir(), 32 * PG, RA_BACKING_IO_AUTO, 8 * PG, 0);
	struct pageset *ps = pages_range(6, 11);

	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_ASYNC), 0);
	check_calls(f->hook, want, 3);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	pages_free(ps);
	fx_free(f);
}

/* 1500 contiguous pages, no chunk: split at IOV_MAX (1024) pages. */
static void test_split_at_iov_max(void **state)
{
	static const uint64_t want[][2] = {{0, 1024}, {1024, 476}};
	struct fx *f = fx_new(disk_dir(), 1500 * PG, RA_BACKING_IO_AUTO, 0, 0);
	struct pageset *ps = pages_range(0, 1500);

	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	check_calls(f->hook, want, 2);
	for (size_t i = 0; i < ps->n; i += 97)
		check_page(&ps->pg[i], f->size);
	check_page(&ps->pg[1499], f->size);
	pages_free(ps);
	fx_free(f);
}

/*
 * A 10000-byte file (2 pages + 1808 bytes), O_DIRECT, pages 0..5 in one
 * preadv: it returns 10000; page 2 holds 1808 bytes then zeros, pages 3-5
 * are uptodate zero pages (the documented choice), nothing is an error.
 */
static void test_eof_tail_direct(void **state)
{
	static const uint64_t want[][2] = {{0, 6}};
	struct fx *f = fx_new(disk_dir(), 10000, RA_BACKING_IO_AUTO, 0, 0);
	struct pageset *ps = pages_range(0, 6);
	struct ra_backing_stats st;

	assert_int_equal(ra_backing_mode(f->b), RA_BACKING_IO_DIRECT);
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	check_calls(f->hook, want, 1);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.bytes, 10000);
	assert_int_equal(st.pages_ok, 6);
	assert_int_equal(st.pages_eof, 3);
	assert_int_equal(st.errors, 0);
	pages_free(ps);
	fx_free(f);
}

/* Pages wholly past EOF (and an empty tail read): zeros, uptodate. */
static void test_pages_past_eof(void **state)
{
	static const uint64_t want[][2] = {{8, 2}};
	struct fx *f = fx_new(disk_dir(), 2 * PG, RA_BACKING_IO_AUTO, 0, 0);
	struct pageset *ps = pages_range(8, 2);
	struct ra_backing_stats st;

	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	check_calls(f->hook, want, 1);
	check_page(&ps->pg[0], f->size);
	check_page(&ps->pg[1], f->size);
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.pages_eof, 2);
	assert_int_equal(st.bytes, 0);
	pages_free(ps);
	fx_free(f);
}

/* A short read that is not EOF (whole pages): the rest is read on. */
static void test_short_read_continues(void **state)
{
	static const uint64_t want[][2] = {{0, 7}, {3, 4}, {6, 1}};
	struct fx *f = fx_new(disk_dir(), 16 * PG, RA_BACKING_IO_AUTO, 0, 0);
	struct pageset *ps = pages_range(0, 7);
	struct ra_backing_stats st;

	f->hook->max_pages = 3;
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	check_calls(f->hook, want, 3);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.pages_eof, 0);
	assert_int_equal(st.reads, 3);
	pages_free(ps);
	fx_free(f);
}

/*
 * A short count that is not a page multiple inside the file is not EOF:
 * buffered mode reads the rest of the page in place and every page holds
 * the file's bytes, none is taken for EOF.
 */
static void test_unaligned_short_read_buffered(void **state)
{
	struct fx *f = fx_new("/dev/shm", 8 * PG, RA_BACKING_IO_BUFFERED, 0, 0);
	struct pageset *ps = pages_range(0, 4);
	struct ra_backing_stats st;

	f->hook->max_bytes = 1000;
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.pages_eof, 0);
	pages_free(ps);
	fx_free(f);
}

/* On the O_DIRECT fd the rest of a page cannot be asked for: a backing
 * that keeps answering short fails the pages with EIO, never zeros. */
static void test_unaligned_short_read_direct(void **state)
{
	struct fx *f = fx_new(disk_dir(), 8 * PG, RA_BACKING_IO_AUTO, 0, 0);
	struct pageset *ps = pages_range(0, 4);

	if (ra_backing_mode(f->b) != RA_BACKING_IO_DIRECT) {
		pages_free(ps);
		fx_free(f);
		skip();
	}
	f->hook->max_bytes = 1000;
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND),
		-EIO);
	for (size_t i = 0; i < ps->n; i++) {
		assert_int_equal(ps->pg[i].completions, 1);
		assert_int_equal(ps->pg[i].err, -EIO);
	}
	pages_free(ps);
	fx_free(f);
}

/*
 * An I/O error on page 5 of a 10-page run: the run's preadv fails, the run
 * is read again page by page, and exactly page 5 fails with -EIO.
 */
static void test_error_fails_exactly_its_pages(void **state)
{
	struct fx *f = fx_new(disk_dir(), 16 * PG, RA_BACKING_IO_AUTO, 0, 0);
	struct pageset *ps = pages_range(0, 10);
	struct ra_backing_stats st;
	struct ra_io_totals t;

	f->hook->fail_page = 5;
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND),
		-EIO);
	for (size_t i = 0; i < ps->n; i++) {
		if (i == 5) {
			assert_int_equal(ps->pg[i].completions, 1);
			assert_int_equal(ps->pg[i].err, -EIO);
			continue;
		}
		check_page(&ps->pg[i], f->size);
	}
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.errors, 2); /* the run, then page 5 alone */
	assert_int_equal(st.pages_failed, 1);
	assert_int_equal(st.pages_ok, 9);
	assert_int_equal(st.reads, 9);
	/* The engine-wide totals saw the same. */
	ra_io_totals_read(&f->totals, &t);
	assert_int_equal(t.errors, 2);
	assert_int_equal(t.pages_failed, 1);
	assert_int_equal(t.pages_ok, 9);
	assert_int_equal(t.reads, 9);
	assert_int_equal(t.bytes, 9 * PG);
	assert_int_equal(t.opens_direct, 1);
	assert_int_equal(t.opens_buffered, 0);
	pages_free(ps);
	fx_free(f);
}

struct waiter {
	struct cache_page *p;
	pthread_t th;
	int result;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->result = fp_wait(w->p);
	return NULL;
}

/*
 * Error propagation through the workers to exactly the waiting readers:
 * 16 readers wait on pages 0..15 (one each), the pages are read in 4-page
 * chunks by the caller and 2 workers, page 9 fails.  Reader 9 gets -EIO,
 * every other reader 0 and the right bytes.
 */
static void test_error_reaches_exactly_its_waiters(void **state)
{
	struct fx *f =
		fx_new(disk_dir(), 16 * PG, RA_BACKING_IO_AUTO, 4 * PG, 2);
	struct pageset *ps = pages_range(0, 16);
	struct waiter w[16];

	for (int i = 0; i < 16; i++) {
		w[i].p = &ps->pg[i];
		assert_int_equal(
			pthread_create(&w[i].th, NULL, waiter_main, &w[i]), 0);
	}
	f->hook->fail_page = 9;
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, f->pool, RA_PRIO_DEMAND),
		0); /* the caller's own piece [0, 4) was fine */
	for (int i = 0; i < 16; i++) {
		assert_int_equal(pthread_join(w[i].th, NULL), 0);
		if (i == 9) {
			assert_int_equal(w[i].result, -EIO);
			assert_int_equal(ps->pg[i].completions, 1);
		} else {
			assert_int_equal(w[i].result, 0);
			check_page(&ps->pg[i], f->size);
		}
	}
	pages_free(ps);
	fx_free(f);
}

/* Buffered by request, on /dev/shm. */
static void test_buffered_on_shm(void **state)
{
	static const uint64_t want[][2] = {{1, 3}};
	struct fx *f =
		fx_new("/dev/shm", 3 * PG + 100, RA_BACKING_IO_BUFFERED, 0, 0);
	struct pageset *ps = pages_range(1, 3);
	struct ra_backing_stats st;

	assert_int_equal(ra_backing_mode(f->b), RA_BACKING_IO_BUFFERED);
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	check_calls(f->hook, want, 1);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.mode, RA_BACKING_IO_BUFFERED);
	assert_int_equal(st.bytes, 2 * PG + 100);
	assert_int_equal(f->totals.opens_buffered, 1);
	assert_int_equal(f->totals.bytes, 2 * PG + 100);
	pages_free(ps);
	fx_free(f);
}

/*
 * AUTO on /dev/shm: tmpfs takes O_DIRECT since Linux 6.6, refused it
 * before; either way the data must be right and the mode reported.  A
 * refused probe (EINVAL, as older tmpfs or a FUSE backing answers) falls
 * back to buffered; DIRECT by request then fails.
 */
static void test_auto_and_refused_direct(void **state)
{
	struct fx *f = fx_new("/dev/shm", 8 * PG, RA_BACKING_IO_AUTO, 0, 0);
	struct pageset *ps = pages_range(0, 8);
	struct ra_backing_config cfg = {.mode = RA_BACKING_IO_AUTO,
					.ops = &fake_ops,
					.preadv_hook = hook_preadv};
	struct ra_backing *b2;
	struct hook *h2 = hook_new();

	assert_true(ra_backing_mode(f->b) == RA_BACKING_IO_DIRECT ||
		    ra_backing_mode(f->b) == RA_BACKING_IO_BUFFERED);
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);

	h2->refuse_probe = true;
	cfg.hook_ctx = h2;
	assert_int_equal(ra_backing_open(f->fd, &cfg, &b2), 0);
	assert_int_equal(ra_backing_mode(b2), RA_BACKING_IO_BUFFERED);
	ra_backing_put(b2);

	h2->probed = false;
	cfg.mode = RA_BACKING_IO_DIRECT;
	assert_int_equal(ra_backing_open(f->fd, &cfg, &b2), -EINVAL);
	hook_free(h2);
	pages_free(ps);
	fx_free(f);
}

/* Pages of @path resident in the kernel's page cache. */
static size_t resident_pages(const char *path, size_t npages)
{
	int fd = open(path, O_RDONLY);
	unsigned char *vec = calloc(npages, 1);
	size_t n = 0;
	void *map;

	assert_true(fd >= 0 && vec);
	map = mmap(NULL, npages * PG, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mincore(map, npages * PG, vec), 0);
	for (size_t i = 0; i < npages; i++)
		n += vec[i] & 1;
	munmap(map, npages * PG);
	close(fd);
	free(vec);
	return n;
}

/* A probe that found nothing resident serves the read of the same pages
 * that follows on this thread (read_piece()), once: a kernel-mode miss
 * made two cachestat(2) calls for one request before.  Only that thread,
 * that backing, pages inside the probed range, and only a "none". */
static void *other_thread_asks(void *b)
{
	return (void *)(uintptr_t)ra_backing_none_resident(b, PG, PG);
}

static void test_none_resident_serves_one_read(void **state)
{
	char path[PATH_MAX];
	int fd = make_file(disk_dir(), 8 * PG, path);
	struct ra_backing_config cfg = {.mode = RA_BACKING_IO_AUTO,
					.ops = &fake_ops};
	struct ra_backing *b, *b2;
	pthread_t t;
	void *ret;
	char buf[8 * PG];
	bool done = false;

	(void)state;
	assert_int_equal(ra_backing_open(fd, &cfg, &b), 0);
	assert_int_equal(ra_backing_open(fd, &cfg, &b2), 0);
	/* resident: the probe finds it all, and that is no "none" */
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	/* A file changed in the last RA_SPLICE_QUIET_S is not probed
	 * (-EBUSY): this one was just written. */
	for (int k = 0;
	     k < 40 && ra_backing_resident_fd(b, 0, 8 * PG) == -EBUSY; k++)
		usleep(100 * 1000);
	if (ra_backing_resident_fd(b, 0, 8 * PG) < 0)
		goto out; /* no cachestat(2): no probe at all */
	assert_false(ra_backing_none_resident(b, 0, PG));
	/* none resident: the request [PG + 100, PG + 5100) touches pages 1-2 */
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	if (resident_pages(path, 8))
		goto out; /* a TMPDIR whose pages cannot be dropped */
	assert_true(ra_backing_resident_fd(b, PG + 100, 5000) < 0);
	assert_true(ra_backing_none_resident(b, PG, 2 * PG));
	assert_false(ra_backing_none_resident(b, PG, 2 * PG)); /* once */
	assert_true(ra_backing_resident_fd(b, PG + 100, 5000) < 0);
	assert_false(ra_backing_none_resident(b, PG, 3 * PG)); /* page 3 */
	assert_true(ra_backing_resident_fd(b, PG + 100, 5000) < 0);
	assert_false(ra_backing_none_resident(b2, PG, PG)); /* another file */
	assert_true(ra_backing_resident_fd(b, PG + 100, 5000) < 0);
	assert_int_equal(pthread_create(&t, NULL, other_thread_asks, b), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret); /* another thread */
	assert_true(ra_backing_none_resident(b, PG, PG)); /* still this one's */
	done = true;
out:
	ra_backing_put(b2);
	ra_backing_put(b);
	close(fd);
	unlink(path);
	if (!done)
		skip();
}

/* A file the page cache holds (passthrough=resident): every page of a
 * file under 64 pages, or nothing is said; a memory filesystem's by
 * nature, an empty file always.  The disk file's pages are dropped and read
 * back one by one.  A file of 2048 pages is held with up to 32 pages missing
 * (one in 64), not with 33. */
static void test_held_resident(void **state)
{
	char path[PATH_MAX], mpath[PATH_MAX], bpath[PATH_MAX], buf[PG];
	int fd = make_file(disk_dir(), 8 * PG + 100, path);
	int mem = make_file("/dev/shm", 3 * PG, mpath);
	int big = -1;
	char *map = MAP_FAILED;
	bool probed = false, seen_short = false, seen_over = false;

	(void)state;
	assert_true(ra_held_resident(fd, 0));
	assert_true(ra_held_resident(mem, 3 * PG));
	close(mem);
	unlink(mpath);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	if (resident_pages(path, 9))
		goto out; /* a TMPDIR whose pages cannot be dropped */
	assert_false(ra_held_resident(fd, 8 * PG + 100));
	for (int k = 0; k < 9; k++)
		assert_true(pread(fd, buf, PG, (off_t)k * PG) > 0);
	if (!ra_held_resident(fd, 8 * PG + 100))
		goto out; /* no cachestat(2) (Linux 6.5 and later) */
	/* the last page short of the size counts, and a page missing
	 * anywhere says no */
	assert_int_equal(posix_fadvise(fd, 8 * PG, PG, POSIX_FADV_DONTNEED), 0);
	assert_true(ra_held_resident(fd, 8 * PG));
	assert_false(ra_held_resident(fd, 8 * PG + 100));
	assert_true(pread(fd, buf, PG, 8 * PG) > 0);
	assert_int_equal(posix_fadvise(fd, 3 * PG, PG, POSIX_FADV_DONTNEED), 0);
	assert_false(ra_held_resident(fd, 8 * PG + 100));
	/* the slack: 2048 pages held with up to 32 missing (one in 64), not
	 * with more.  The file is locked in memory but for the pages dropped,
	 * so that no reclaim beside the test takes more; the pages missing
	 * are counted apart (mincore(2)), since a drop may not take (a page
	 * another CPU's batch still holds) and is then tried on the next. */
	big = make_file(disk_dir(), 2048 * PG, bpath); /* written: held */
	map = mmap(NULL, 2048 * PG, PROT_READ, MAP_SHARED, big, 0);
	assert_true(map != MAP_FAILED);
	if (mlock(map, 2048 * PG))
		goto out; /* no CAP_IPC_LOCK and a small RLIMIT_MEMLOCK */
	assert_true(ra_held_resident(big, 2048 * PG));
	for (int k = 0; k < 2048 && !seen_over; k++) {
		/* 61 is prime to 2048: every k a page not dropped before */
		off_t at = (off_t)((k * 61 + 5) % 2048) * PG;
		size_t before, after;
		bool held;

		/* unmapped, unlocked: a mapped page is not dropped */
		assert_int_equal(munmap(map + at, PG), 0);
		assert_int_equal(
			posix_fadvise(big, at, PG, POSIX_FADV_DONTNEED), 0);
		do {
			before = 2048 - resident_pages(bpath, 2048);
			held = ra_held_resident(big, 2048 * PG);
			after = 2048 - resident_pages(bpath, 2048);
		} while (before != after);
		assert_true(held == (after <= 32));
		seen_short |= held && after > 0;
		seen_over |= !held;
	}
	assert_true(seen_short && seen_over);
	probed = true;
out:
	if (map != MAP_FAILED)
		munmap(map, 2048 * PG);
	if (big >= 0) {
		close(big);
		unlink(bpath);
	}
	close(fd);
	unlink(path);
	if (!probed)
		skip();
}

/* Buffered mode on the disk leaves no second copy in the page cache. */
static void test_buffered_drops_page_cache(void **state)
{
	struct fx *f =
		fx_new(disk_dir(), 32 * PG, RA_BACKING_IO_BUFFERED, 0, 0);
	struct pageset *ps = pages_range(0, 32);

	/* make_file() fsynced: the pages are clean and can be dropped. */
	assert_int_equal(posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	assert_int_equal(resident_pages(f->path, 32), 0);
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, NULL, RA_PRIO_DEMAND), 0);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	assert_int_equal(resident_pages(f->path, 32), 0);
	pages_free(ps);
	fx_free(f);
}

/* A worker kept busy by a test-controlled item. */
struct gate {
	struct ra_work w;
	sem_t in, out;
};

static void gate_run(struct ra_work *w)
{
	struct gate *g = (struct gate *)w;

	sem_post(&g->in);
	sem_wait(&g->out);
}

static void gate_cancel(struct ra_work *w, int reason)
{
	CHECK(!"a demand gate is never cancelled");
}

static void gate_close(struct ra_pool *pool, struct gate *g)
{
	memset(g, 0, sizeof(*g));
	sem_init(&g->in, 0, 0);
	sem_init(&g->out, 0, 0);
	g->w.run = gate_run;
	g->w.cancel = gate_cancel;
	g->w.nr = 1;
	g->w.prio = RA_PRIO_DEMAND;
	assert_int_equal(ra_pool_submit(pool, &g->w), 0);
	sem_wait(&g->in);
}

/*
 * Queued windows: one is cancelled with its stream (pages -> -EAGAIN), a
 * duplicate is refused (-EEXIST, pages -> -EAGAIN), one is read by a worker.
 */
static void test_queue_cancel_and_dedupe(void **state)
{
	struct fx *f = fx_new(disk_dir(), 64 * PG, RA_BACKING_IO_AUTO, 0, 1);
	struct pageset *a = pages_range(0, 8), *dup = pages_range(2, 4),
		       *b = pages_range(16, 8);
	static const uint64_t want[][2] = {{16, 8}};
	int file, s1, s2;
	struct gate g;

	gate_close(f->pool, &g);
	assert_int_equal(
		ra_backing_queue(f->b, a->ptr, a->n, f->pool, &file, &s1, 0),
		0);
	assert_int_equal(ra_backing_queue(f->b, dup->ptr, dup->n, f->pool,
					  &file, &s2, 0),
			 -EEXIST);
	for (size_t i = 0; i < dup->n; i++) {
		assert_int_equal(dup->pg[i].completions, 1);
		assert_int_equal(dup->pg[i].err, -EAGAIN);
	}
	assert_int_equal(
		ra_backing_queue(f->b, b->ptr, b->n, f->pool, &file, &s2, 0),
		0);
	assert_int_equal(ra_pool_cancel(f->pool, &s1), 1);
	for (size_t i = 0; i < a->n; i++) {
		assert_int_equal(a->pg[i].completions, 1);
		assert_int_equal(a->pg[i].err, -EAGAIN);
	}
	sem_post(&g.out);
	pages_wait_all(b);
	for (size_t i = 0; i < b->n; i++)
		check_page(&b->pg[i], f->size);
	ra_pool_destroy(f->pool);
	f->pool = NULL;
	check_calls(f->hook, want, 1); /* only window b was read */
	sem_destroy(&g.in);
	sem_destroy(&g.out);
	pages_free(a);
	pages_free(dup);
	pages_free(b);
	fx_free(f);
}

struct destroyer {
	struct ra_pool *pool;
};

static void *destroy_main(void *arg)
{
	ra_pool_destroy(((struct destroyer *)arg)->pool);
	return NULL;
}

/*
 * Shutdown with I/O in flight:
 *   1. the only worker takes window A and stalls inside its preadv;
 *   2. windows B and C are queued behind it;
 *   3. ra_pool_destroy() runs on another thread: B and C are cancelled at
 *      once (pages -EAGAIN) while A's read is still stalled;
 *   4. A's read is released: A's pages complete with data, destroy returns.
 * Failure: a hang (a waiter on B, C never woken, or destroy not waiting for
 * A), a page completed twice, or A's pages not holding the data.
 */
static void test_shutdown_with_read_in_flight(void **state)
{
	struct fx *f = fx_new(disk_dir(), 64 * PG, RA_BACKING_IO_AUTO, 0, 1);
	struct pageset *a = pages_range(0, 8), *b = pages_range(8, 8),
		       *c = pages_range(32, 8);
	sem_t stall, entered;
	struct destroyer d = {.pool = f->pool};
	pthread_t th;

	sem_init(&stall, 0, 0);
	sem_init(&entered, 0, 0);
	f->hook->stall = &stall;
	f->hook->entered = &entered;
	assert_int_equal(ra_backing_queue(f->b, a->ptr, a->n, f->pool, f, a, 0),
			 0);
	sem_wait(&entered); /* A's preadv has started and is stalled */
	assert_int_equal(ra_backing_queue(f->b, b->ptr, b->n, f->pool, f, b, 0),
			 0);
	assert_int_equal(ra_backing_queue(f->b, c->ptr, c->n, f->pool, f, c, 0),
			 0);
	assert_int_equal(pthread_create(&th, NULL, destroy_main, &d), 0);
	pages_wait_all(b);
	pages_wait_all(c);
	for (size_t i = 0; i < 8; i++) {
		assert_int_equal(b->pg[i].err, -EAGAIN);
		assert_int_equal(c->pg[i].err, -EAGAIN);
		assert_int_equal(b->pg[i].completions, 1);
		assert_int_equal(c->pg[i].completions, 1);
	}
	pthread_mutex_lock(&pg_lock);
	assert_int_equal(a->pg[0].done, 0); /* still in flight */
	pthread_mutex_unlock(&pg_lock);
	sem_post(&stall);
	assert_int_equal(pthread_join(th, NULL), 0);
	f->pool = NULL;
	for (size_t i = 0; i < a->n; i++)
		check_page(&a->pg[i], f->size);
	sem_destroy(&stall);
	sem_destroy(&entered);
	pages_free(a);
	pages_free(b);
	pages_free(c);
	fx_free(f);
}

/* A full queue: pieces the pool refuses are read inline, none is lost. */
static void test_refused_pieces_read_inline(void **state)
{
	struct fx *f =
		fx_new(disk_dir(), 64 * PG, RA_BACKING_IO_AUTO, 2 * PG, 0);
	struct ra_pool_config pc = {.workers = 1, .queue_depth = 1};
	struct pageset *ps = pages_range(0, 12);
	struct ra_backing_stats st;
	struct gate g;

	assert_int_equal(ra_pool_create(&pc, &f->pool), 0);
	gate_close(f->pool, &g);
	assert_int_equal(
		ra_backing_read(f->b, ps->ptr, ps->n, f->pool, RA_PRIO_DEMAND),
		0);
	/* One piece queued (depth 1), the other four read here. */
	ra_backing_stats(f->b, &st);
	assert_int_equal(st.pieces_queued, 1);
	for (size_t i = 0; i < ps->n; i++)
		if (i < 2 || i >= 4)
			check_page(&ps->pg[i], f->size);
	sem_post(&g.out);
	pages_wait_all(ps);
	for (size_t i = 0; i < ps->n; i++)
		check_page(&ps->pg[i], f->size);
	sem_destroy(&g.in);
	sem_destroy(&g.out);
	pages_free(ps);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_direct_one_run),
		cmocka_unit_test(test_runs_with_gaps),
		cmocka_unit_test(test_split_on_chunks),
		cmocka_unit_test(test_split_without_pool),
		cmocka_unit_test(test_split_at_iov_max),
		cmocka_unit_test(test_eof_tail_direct),
		cmocka_unit_test(test_pages_past_eof),
		cmocka_unit_test(test_short_read_continues),
		cmocka_unit_test(test_error_fails_exactly_its_pages),
		cmocka_unit_test(test_error_reaches_exactly_its_waiters),
		cmocka_unit_test(test_buffered_on_shm),
		cmocka_unit_test(test_auto_and_refused_direct),
		cmocka_unit_test(test_buffered_drops_page_cache),
		cmocka_unit_test(test_none_resident_serves_one_read),
		cmocka_unit_test(test_queue_cancel_and_dedupe),
		cmocka_unit_test(test_shutdown_with_read_in_flight),
		cmocka_unit_test(test_refused_pieces_read_inline),
		cmocka_unit_test(test_unaligned_short_read_buffered),
		cmocka_unit_test(test_unaligned_short_read_direct),
		cmocka_unit_test(test_held_resident),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
