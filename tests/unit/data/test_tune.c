/* test_tune.c - ra_engine_tune(): the readahead engine's run-time tunables
 * (the mount root's user.aheadfs.ra_max, context_ra and stream_table).
 * Checked like ra_engine_create(), read back with ra_engine_tuning(), and
 * in force for the decisions of files already open and opened later.
 *
 * The threaded test is for ThreadSanitizer (-DAHEADFS_SANITIZE=thread): two
 * readers stream through a file on their own handles while a third thread
 * tunes the engine back and forth.  The interleaving it exercises:
 *   1. reader A enters decide(), takes its handle's and the file's locks,
 *      loads the packed tuning word (acquire) and finds it newer than the
 *      file's copy: it recomputes the file's window cap under f->lock;
 *   2. the tuner stores a new word (a compare-and-swap, release) at any
 *      point of 1, without any lock;
 *   3. reader B's decision, or ra_file_stats() on the main thread, loads
 *      the word again and recomputes again.
 * Failure looks like a TSan report (a plain load of a field the tuner
 * writes), a wrong byte, or a window larger than the cap in force once the
 * tuner has stopped.
 *
 * Here with the data path's tests, not in tests/unit/ra: the engine is
 * tuned as the mount root's tunables tune it, on the engine of a mount
 * (afs_data_create()), and the reads that must follow the tuning go
 * through the data path's read function (afs_data_read(), read_check.h),
 * which links fs/data above ra/.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "ra/ra.h"
#include "../fixture/data_path.h"
#include "../read_check.h"

#define PAGE 4096u
#define NPAGES 2048u /* 8 MiB */

struct fixture {
	struct data_path dp; /* the file, its mount, its afs_fcache */
	/* The file's cache and readahead, as the data path made them: */
	struct cache *c;
	struct ra_engine *e;
	struct cache_mapping *m;
	struct ra_file *f;
};

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)((off >> 12) * 13 + (off & 4095) * 5 + 3);
}

/* Another file of the engine (the same backing bytes under another key):
 * one opened after a tuning changed. */
static struct afs_fcache *new_file(struct fixture *fx, uint32_t gen)
{
	return data_path_lookup(fx->dp.a, fx->dp.fd, gen, true, &fx->dp.st);
}

static int setup(void **state)
{
	struct afs_data_config cfg;
	struct fixture *fx = calloc(1, sizeof(*fx));
	uint8_t buf[PAGE];

	cache_thread_online();
	assert_non_null(fx);
	data_path_tmpfile(&fx->dp, "afs-tune");
	for (uint64_t p = 0; p < NPAGES; p++) {
		for (unsigned int b = 0; b < PAGE; b++)
			buf[b] = pattern(p * PAGE + b);
		assert_int_equal(
			pwrite(fx->dp.fd, buf, PAGE, (off_t)(p * PAGE)), PAGE);
	}
	afs_data_config_init(&cfg);
	cfg.cache_size = 64u << 20;
	cfg.ra.max_bytes = 1u << 20;
	cfg.ra.workers = 2;
	data_path_mount(&fx->dp, &cfg, true);
	fx->c = afs_data_cache(fx->dp.a);
	fx->e = afs_data_engine(fx->dp.a);
	fx->m = afs_fcache_map(fx->dp.fc);
	fx->f = afs_fcache_ra_file(fx->dp.fc);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	data_path_close(&fx->dp);
	free(fx);
	return 0;
}

static void expect_tuning(struct ra_engine *e, uint64_t max,
			  enum ra_context_rule ctx, bool table)
{
	struct ra_tuning t;

	ra_engine_tuning(e, &t);
	assert_int_equal(t.max_bytes, max);
	assert_int_equal(t.context, ctx);
	assert_int_equal(t.stream_table == RA_STREAM_TABLE_ON, table);
}

static uint64_t max_window(struct ra_file *f)
{
	struct ra_file_stats fs;

	ra_file_stats(f, &fs);
	return fs.max_window;
}

/* The values ra_engine_create() was given, before any tuning. */
static void test_initial(void **state)
{
	struct fixture *fx = *state;
	struct ra_config rc = {.context = RA_CONTEXT_LOOSE,
			       .stream_table = RA_STREAM_TABLE_OFF};
	struct ra_engine *e;

	expect_tuning(fx->e, 1u << 20, RA_CONTEXT_CONSERVATIVE, true);
	assert_int_equal(ra_engine_create(&rc, fx->c, &e), 0);
	expect_tuning(e, 0, RA_CONTEXT_LOOSE, false);
	assert_int_equal(ra_engine_destroy(e), 0);
}

/* Bad values are refused as ra_engine_create() refuses them, and change
 * nothing, not even the good fields of the same call. */
static void test_bad_values(void **state)
{
	struct fixture *fx = *state;
	const uint64_t bad_max[] = {1, 4095, 4097, (1ull << 30) + 4096,
				    UINT64_MAX & ~4095ull};
	struct ra_tuning t = {.context = RA_CONTEXT_OFF};

	for (size_t i = 0; i < sizeof(bad_max) / sizeof(*bad_max); i++) {
		t.max_bytes = bad_max[i];
		assert_int_equal(ra_engine_tune(fx->e, &t,
						RA_TUNE_MAX | RA_TUNE_CONTEXT),
				 -EINVAL);
	}
	t.max_bytes = 8192;
	t.context = (enum ra_context_rule)3;
	assert_int_equal(
		ra_engine_tune(fx->e, &t, RA_TUNE_MAX | RA_TUNE_CONTEXT),
		-EINVAL);
	t.context = RA_CONTEXT_OFF;
	t.stream_table = (enum ra_stream_table_mode)2;
	assert_int_equal(ra_engine_tune(fx->e, &t,
					RA_TUNE_CONTEXT | RA_TUNE_STREAM_TABLE),
			 -EINVAL);
	t.stream_table = RA_STREAM_TABLE_ON;
	assert_int_equal(ra_engine_tune(fx->e, &t, 0x8), -EINVAL);
	assert_int_equal(ra_engine_tune(fx->e, NULL, RA_TUNE_MAX), -EINVAL);
	expect_tuning(fx->e, 1u << 20, RA_CONTEXT_CONSERVATIVE, true);
	assert_int_equal(max_window(fx->f), 256);
	/* nothing asked, nothing changed */
	assert_int_equal(ra_engine_tune(fx->e, &t, 0), 0);
	expect_tuning(fx->e, 1u << 20, RA_CONTEXT_CONSERVATIVE, true);
}

/* Only the fields named in @what change; an open file's cap follows, with
 * its advice applied on top; a file opened later starts with it. */
static void test_fields_and_files(void **state)
{
	struct fixture *fx = *state;
	struct ra_tuning t = {.max_bytes = 64 << 10,
			      .context = RA_CONTEXT_OFF,
			      .stream_table = RA_STREAM_TABLE_OFF};
	struct afs_fcache *fc2;

	assert_int_equal(ra_engine_tune(fx->e, &t, RA_TUNE_MAX), 0);
	expect_tuning(fx->e, 64 << 10, RA_CONTEXT_CONSERVATIVE, true);
	assert_int_equal(max_window(fx->f), 16);
	assert_int_equal(ra_file_advise(fx->f, RA_ADVICE_SEQUENTIAL, 0, 0), 0);
	assert_int_equal(max_window(fx->f), 32);
	assert_int_equal(ra_engine_tune(fx->e, &t, RA_TUNE_CONTEXT), 0);
	expect_tuning(fx->e, 64 << 10, RA_CONTEXT_OFF, true);
	assert_int_equal(ra_engine_tune(fx->e, &t, RA_TUNE_STREAM_TABLE), 0);
	expect_tuning(fx->e, 64 << 10, RA_CONTEXT_OFF, false);
	t.max_bytes = 1 << 30;
	assert_int_equal(ra_engine_tune(fx->e, &t, RA_TUNE_MAX), 0);
	assert_int_equal(max_window(fx->f), 2 * 262144);
	assert_int_equal(ra_file_advise(fx->f, RA_ADVICE_NORMAL, 0, 0), 0);
	assert_int_equal(max_window(fx->f), 262144);

	/* 0: automatic, the device's (1 MiB without a stripe) */
	t.max_bytes = 0;
	assert_int_equal(ra_engine_tune(fx->e, &t, RA_TUNE_MAX), 0);
	fc2 = new_file(fx, 1);
	assert_int_equal(max_window(afs_fcache_ra_file(fc2)),
			 max_window(fx->f));
	assert_true(max_window(afs_fcache_ra_file(fc2)) >= 256);
	afs_fcache_put(fc2);
}

/* Read @nr pages from @first in 4-page reads on a new handle, wait for the
 * readahead, and report the file's stats in @fs. */
static void read_stream(struct fixture *fx, uint64_t first, uint64_t nr,
			struct ra_file_stats *fs)
{
	struct ra_state st;

	ra_state_init(&st);
	for (uint64_t i = first; i < first + nr; i += 4)
		assert_int_equal(test_read_check(fx->dp.a, fx->dp.fc, fx->dp.fd,
						 &st, i, 4, pattern),
				 0);
	ra_state_destroy(&st);
	test_settle(fx->m, NPAGES);
	ra_file_stats(fx->f, fs);
}

/* A tuning is in force for the next decision: a sequential read after
 * ra_max = 64 KiB opens windows of at most 16 pages; with the stream
 * table off no stream_* decision is taken. */
static void test_decisions_follow(void **state)
{
	struct fixture *fx = *state;
	struct ra_tuning t = {.max_bytes = 64 << 10,
			      .stream_table = RA_STREAM_TABLE_OFF};
	struct ra_file_stats fs;

	assert_int_equal(
		ra_engine_tune(fx->e, &t, RA_TUNE_MAX | RA_TUNE_STREAM_TABLE),
		0);
	read_stream(fx, 0, 512, &fs);
	assert_int_equal(fs.c.decisions[RA_KIND_INITIAL], 1);
	assert_true(fs.c.decisions[RA_KIND_ASYNC] > 0);
	for (int k = RA_KIND_STREAM_SEQ; k <= RA_KIND_STREAM_ASYNC; k++)
		assert_int_equal(fs.c.decisions[k], 0);
	assert_int_equal(fs.nr_streams, 0);
	/* 512 pages in windows of at most 16 pages */
	assert_true(fs.backing_reads >= 512 / 16);
	assert_true(fs.c.sync_pages + fs.c.async_pages >= 512);

	/* the table back on: the next stream is the table's */
	t.stream_table = RA_STREAM_TABLE_ON;
	assert_int_equal(ra_engine_tune(fx->e, &t, RA_TUNE_STREAM_TABLE), 0);
	read_stream(fx, 1024, 512, &fs);
	assert_true(fs.c.decisions[RA_KIND_STREAM_ASYNC] > 0);
	assert_true(fs.nr_streams >= 1);
	for (unsigned int i = 0; i < fs.nr_streams; i++)
		assert_true(fs.streams[i].size <= 16);
}

struct reader {
	struct fixture *fx;
	uint64_t first;
	int rc;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	struct ra_state st;

	cache_thread_online();
	ra_state_init(&st);
	for (uint64_t i = r->first; i < r->first + 1024 && !r->rc; i += 8)
		r->rc = test_read_check(r->fx->dp.a, r->fx->dp.fc, r->fx->dp.fd,
					&st, i, 8, pattern);
	ra_state_destroy(&st);
	return NULL;
}

static void *tuner_main(void *arg)
{
	struct fixture *fx = arg;
	struct ra_tuning t;

	for (int i = 0; i < 400; i++) {
		t.max_bytes = (uint64_t)(i % 4 + 1) << 16; /* 64..256 KiB */
		t.context = (enum ra_context_rule)(i % 3);
		t.stream_table = (enum ra_stream_table_mode)(i % 2);
		if (ra_engine_tune(fx->e, &t,
				   i % 5 ? RA_TUNE_MAX | RA_TUNE_CONTEXT |
						   RA_TUNE_STREAM_TABLE
					 : RA_TUNE_MAX))
			return (void *)1;
		sched_yield();
	}
	return NULL;
}

/* See the top of the file. */
static void test_tune_while_reading(void **state)
{
	struct fixture *fx = *state;
	struct reader r[2] = {{fx, 0, 0}, {fx, 1024, 0}};
	struct ra_tuning t = {.max_bytes = 32 << 10};
	pthread_t th[3];
	void *tuner_rc;

	for (int i = 0; i < 2; i++)
		assert_int_equal(
			pthread_create(&th[i], NULL, reader_main, &r[i]), 0);
	assert_int_equal(pthread_create(&th[2], NULL, tuner_main, fx), 0);
	for (int i = 0; i < 200; i++)
		max_window(fx->f); /* a reader of the file's cap */
	assert_int_equal(pthread_join(th[2], &tuner_rc), 0);
	assert_null(tuner_rc);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(r[i].rc, 0);
	}
	test_settle(fx->m, NPAGES);
	/* once the tuner stopped, its last word is in force */
	assert_int_equal(ra_engine_tune(fx->e, &t, RA_TUNE_MAX), 0);
	assert_int_equal(max_window(fx->f), 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_initial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_values, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fields_and_files, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_decisions_follow, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tune_while_reading, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
