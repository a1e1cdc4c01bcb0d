/* test_evict.c - the budget, -ENOSPC, the eviction policy (scan
 * resistance, waste, ghost and thrash) and the reclaimer thread.
 */
#include <time.h>
#include <unistd.h>

#include "cache_test.h"

/*
 * A small cache with manual reclaim: eviction happens only in
 * cache_reclaim() and in inserters at the hard limit.  An inserter at the
 * limit waits for the grace period that returns what it evicted; the wait
 * ends as soon as the pages are back, so the long bound only matters on a
 * loaded machine (or under a sanitizer), where a short one would make the
 * tests flaky.
 */
#define LONG_WAIT_MS 10000

static int small_setup(void **state)
{
	struct cache_config cfg = {
		.budget_bytes = budget_for(256),
		.manual_reclaim = true,
		.alloc_wait_ms = LONG_WAIT_MS,
	};

	return fixture_setup_cfg(state, &cfg);
}

static int tiny_setup(void **state)
{
	struct cache_config cfg = {
		.budget_bytes = budget_for(64),
		.manual_reclaim = true,
		.alloc_wait_ms = LONG_WAIT_MS,
	};

	return fixture_setup_cfg(state, &cfg);
}

/* For the tests where nothing can come back: the wait runs to its end. */
static int tiny_short_wait_setup(void **state)
{
	struct cache_config cfg = {
		.budget_bytes = budget_for(64),
		.manual_reclaim = true,
		.alloc_wait_ms = 20,
	};

	return fixture_setup_cfg(state, &cfg);
}

static int reclaimer_setup(void **state)
{
	struct cache_config cfg = {
		.budget_bytes = budget_for(256),
		.alloc_wait_ms = LONG_WAIT_MS,
	};

	return fixture_setup_cfg(state, &cfg);
}

static int ghost_setup(void **state)
{
	struct cache_config cfg = {
		.budget_bytes = budget_for(1024),
		.manual_reclaim = true,
		.ghost_entries = 64,
	};

	return fixture_setup_cfg(state, &cfg);
}

static void test_create_rejects_bad_configs(void **state)
{
	struct cache_config cfg = {.budget_bytes = budget_for(63)};
	struct cache *c = NULL;

	(void)state;
	cache_thread_online();
	assert_int_equal(cache_create(&cfg, &c), -EINVAL);
	cfg.budget_bytes = budget_for(1000);
	cfg.min_bytes = budget_for(1001);
	assert_int_equal(cache_create(&cfg, &c), -EINVAL);
	cfg.min_bytes = 0;
	cfg.high_pct = 80;
	cfg.low_pct = 80;
	assert_int_equal(cache_create(&cfg, &c), -EINVAL);
	cfg.low_pct = 0;
	cfg.high_pct = 101;
	assert_int_equal(cache_create(&cfg, &c), -EINVAL);
	cfg.high_pct = 0;
	cfg.small_pct = 100;
	assert_int_equal(cache_create(&cfg, &c), -EINVAL);
	assert_null(c);
	cfg.small_pct = 0;
	cfg.min_bytes = budget_for(1000);
	assert_int_equal(cache_create(&cfg, &c), 0);
	assert_int_equal(cache_destroy(c), 0);
}

static void test_destroy_refused_while_mappings_live(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(cache_destroy(f->c), -EBUSY);
}

/* An RCU reader that holds its read-side section until told to leave. */
struct held_reader {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool inside, leave;
};

static void *hold_reader(void *arg)
{
	struct held_reader *r = arg;

	cache_thread_online();
	rcu_read_lock();
	pthread_mutex_lock(&r->lock);
	r->inside = true;
	pthread_cond_broadcast(&r->cond);
	while (!r->leave)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
	rcu_read_unlock();
	cache_thread_offline();
	return NULL;
}

/* Freed pages come back only after a grace period: not while a reader that
 * may still see them is inside its section, and at cache_barrier() once it
 * has left. */
static void test_freed_pages_wait_for_readers(void **state)
{
	struct fixture *f = *state;
	struct held_reader r = {PTHREAD_MUTEX_INITIALIZER,
				PTHREAD_COND_INITIALIZER, false, false};
	struct cache_page *pages[16];
	struct cache_stats st;
	unsigned int got;
	pthread_t t;

	assert_int_equal(
		cache_insert_range(f->m, 0, 16, CACHE_NO_MARK, 0, pages, &got),
		0);
	assert_int_equal(got, 16);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
	assert_int_equal(pthread_create(&t, NULL, hold_reader, &r), 0);
	pthread_mutex_lock(&r.lock);
	while (!r.inside)
		pthread_cond_wait(&r.cond, &r.lock);
	pthread_mutex_unlock(&r.lock);

	assert_int_equal(cache_mapping_invalidate(f->m, 0, UINT64_MAX), 16);
	usleep(50 * 1000); /* room for a grace period that would not wait */
	cache_stats(f->c, &st);
	assert_int_equal(st.pending_free_bytes, 16 * CACHE_PAGE_SIZE);
	assert_int_equal(st.used_bytes, 16 * CACHE_PAGE_SIZE);

	pthread_mutex_lock(&r.lock);
	r.leave = true;
	pthread_cond_broadcast(&r.cond);
	pthread_mutex_unlock(&r.lock);
	pthread_join(t, NULL);
	cache_barrier(f->c);
	cache_stats(f->c, &st);
	assert_int_equal(st.pending_free_bytes, 0);
	assert_int_equal(st.used_bytes, 0);
}

static void test_enospc_when_everything_is_under_io(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[64], *more[4];
	struct cache_mapping_stats ms;
	struct cache_stats st;
	unsigned int got, got2;

	assert_int_equal(
		cache_insert_range(f->m, 0, 64, CACHE_NO_MARK, 0, pages, &got),
		0);
	assert_int_equal(got, 64);
	/* Nothing evictable (all LOCKED): a bounded wait, then -ENOSPC. */
	assert_int_equal(
		cache_insert_range(f->m, 100, 4, CACHE_NO_MARK, 0, more, &got2),
		-ENOSPC);
	assert_int_equal(got2, 0);
	cache_stats(f->c, &st);
	assert_int_equal(st.used_bytes, st.budget_bytes);
	assert_int_equal(st.enospc, 1);
	assert_true(st.alloc_waits >= 1);
	cache_mapping_stats(f->m, &ms);
	assert_int_equal(ms.enospc, 1);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
}

static void test_short_insert_at_the_limit(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[64], *more[10];
	unsigned int got, got2;

	assert_int_equal(
		cache_insert_range(f->m, 0, 60, CACHE_NO_MARK, 0, pages, &got),
		0);
	/* Room for 4 of 10: the lowest indexes, and no error. */
	assert_int_equal(cache_insert_range(f->m, 100, 10, CACHE_NO_MARK, 0,
					    more, &got2),
			 0);
	assert_int_equal(got2, 4);
	assert_int_equal(cache_page_index(more[0]), 100);
	assert_int_equal(cache_page_index(more[3]), 103);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
	for (unsigned int i = 0; i < got2; i++)
		cache_page_complete(more[i], 0);
}

static void test_insert_at_limit_evicts_and_succeeds(void **state)
{
	struct fixture *f = *state;
	struct cache_stats st;

	assert_int_equal(fill_range(f->m, 0, 64, 0), 64);
	/* Full of evictable pages: the inserter makes room itself. */
	assert_int_equal(fill_range(f->m, 1000, 8, 0), 8);
	cache_stats(f->c, &st);
	assert_true(st.used_bytes <= st.budget_bytes);
	assert_true(st.evictions >= 8);
	assert_true(has_data(f->m, 1007));
}

static void test_locked_pages_not_evicted(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[10];
	unsigned int got;

	assert_int_equal(
		cache_insert_range(f->m, 0, 10, CACHE_NO_MARK, 0, pages, &got),
		0);
	assert_int_equal(cache_reclaim(f->c, 100), 0);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
	assert_int_equal(cache_reclaim(f->c, 100), 10);
	assert_false(has_data(f->m, 3));
}

static void access_range(struct cache_mapping *m, uint64_t first, uint64_t n,
			 int times);

/*
 * Probation full of readahead in flight (LOCKED) and above its share: the
 * cold pages in main must still be evictable.
 */
static void test_locked_probation_does_not_block_main(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[40];
	struct cache_stats st;
	unsigned int got;

	/* Pages 0-3 referenced at the head of a probation queue above its
	 * share (30 of 256 > 10%): the next pass promotes them to main. */
	assert_int_equal(fill_range(f->m, 0, 30, 0), 30);
	access_range(f->m, 0, 4, 2);
	assert_int_equal(cache_reclaim(f->c, 1), 1);
	cache_mapping_invalidate(f->m, 5, 29);
	cache_stats(f->c, &st);
	assert_int_equal(st.main_pages, 4);
	assert_int_equal(st.small_pages, 0);
	/* 40 pages under I/O: probation above its share, nothing in it
	 * evictable. */
	assert_int_equal(cache_insert_range(f->m, 100, 40, CACHE_NO_MARK,
					    CACHE_INSERT_PREFETCH, pages, &got),
			 0);
	assert_int_equal(got, 40);
	assert_int_equal(cache_reclaim(f->c, 2), 2);
	cache_stats(f->c, &st);
	assert_int_equal(st.main_pages, 2);
	assert_int_equal(st.small_pages, 40);
	assert_false(has_data(f->m, 0));
	assert_true(has_data(f->m, 3));
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
}

static void access_range(struct cache_mapping *m, uint64_t first, uint64_t n,
			 int times)
{
	rcu_read_lock();
	for (uint64_t i = first; i < first + n; i++) {
		struct cache_page *p = cache_lookup_rcu(m, i);

		assert_non_null(p);
		for (int t = 0; t < times; t++)
			cache_page_mark_accessed(p);
	}
	rcu_read_unlock();
}

/*
 * A hot set read again and again, then a one-pass scan four times the
 * cache: the scan's pages leave probation unreferenced and are evicted
 * there, the hot pages (promoted to main) all survive.
 */
static void test_scan_does_not_flush_hot_pages(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping_stats ms;

	assert_int_equal(fill_range(f->m, 0, 32, 0), 32);
	access_range(f->m, 0, 32, 2); /* first use + one re-use */
	for (uint64_t start = 10000; start < 10000 + 1024; start += 16) {
		assert_int_equal(fill_range(f->m, start, 16, 0), 16);
		access_range(f->m, start, 16, 1);
	}
	for (uint64_t i = 0; i < 32; i++)
		assert_true(has_data(f->m, i));
	cache_mapping_stats(f->m, &ms);
	assert_true(ms.evicted >= 1024 + 32 - 256);
	assert_int_equal(ms.waste, 0);
	assert_int_equal(cache_mapping_waste(f->m), 0);
}

/* The same scan with nothing referenced evicts the old pages: the test
 * above depends on the referenced bit, not on luck. */
static void test_unreferenced_pages_are_flushed_by_scan(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(fill_range(f->m, 0, 32, 0), 32);
	access_range(f->m, 0, 32, 1);
	for (uint64_t start = 10000; start < 10000 + 1024; start += 16) {
		assert_int_equal(fill_range(f->m, start, 16, 0), 16);
		access_range(f->m, start, 16, 1);
	}
	for (uint64_t i = 0; i < 32; i++)
		assert_false(has_data(f->m, i));
}

static void test_waste_and_ghost_thrash(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping_stats ms;
	struct cache_stats st;

	assert_int_equal(fill_range(f->m, 0, 32, CACHE_INSERT_PREFETCH), 32);
	assert_int_equal(fill_range(f->m, 100, 10, CACHE_INSERT_PREFETCH), 10);
	access_range(f->m, 100, 10, 1); /* used: not waste */
	assert_int_equal(cache_reclaim(f->c, 42), 42);
	cache_mapping_stats(f->m, &ms);
	assert_int_equal(ms.prefetched, 42);
	assert_int_equal(ms.evicted, 42);
	assert_int_equal(ms.waste, 32);
	/* The one-load accessor the readahead feedback reads says the same. */
	assert_int_equal(cache_mapping_waste(f->m), ms.waste);
	assert_true(cache_ghost_test_clear(f->m, 5));
	assert_false(cache_ghost_test_clear(f->m, 5)); /* consumed */
	assert_false(cache_ghost_test_clear(f->m, 105));
	assert_false(cache_ghost_test_clear(f->m, 500));
	cache_mapping_stats(f->m, &ms);
	assert_int_equal(ms.thrash, 1);
	cache_stats(f->c, &st);
	assert_int_equal(st.waste, 32);
	assert_int_equal(st.thrash, 1);
}

static void test_ghost_is_per_mapping(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping *other;

	assert_int_equal(fill_range(f->m, 0, 4, CACHE_INSERT_PREFETCH), 4);
	assert_int_equal(cache_reclaim(f->c, 4), 4);
	assert_int_equal(cache_mapping_create(f->c, &other), 0);
	assert_false(cache_ghost_test_clear(other, 2));
	assert_true(cache_ghost_test_clear(f->m, 2));
	cache_mapping_put(other);
}

static void test_ghost_record_is_bounded(void **state)
{
	struct fixture *f = *state;
	struct cache_stats st;
	unsigned int hits = 0;

	for (uint64_t s = 0; s < 1000; s += 100) {
		assert_int_equal(
			fill_range(f->m, s, 100, CACHE_INSERT_PREFETCH), 100);
		assert_int_equal(cache_reclaim(f->c, 100), 100);
	}
	cache_stats(f->c, &st);
	assert_int_equal(st.ghost_entries, 64);
	assert_int_equal(st.waste, 1000);
	for (uint64_t i = 0; i < 1000; i++)
		hits += cache_ghost_test_clear(f->m, i);
	assert_true(hits > 0);
	assert_true(hits <= 64);
}

static void test_reclaimer_thread_restores_watermark(void **state)
{
	struct fixture *f = *state;
	struct timespec t0, now;
	struct cache_stats st;

	/* 250 of 256 pages: above the high watermark (95% = 243). */
	assert_int_equal(fill_range(f->m, 0, 250, 0), 250);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		cache_stats(f->c, &st);
		if (st.used_bytes - st.pending_free_bytes <= st.low_bytes)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		/* A liveness bound, not a performance figure. */
		if (now.tv_sec - t0.tv_sec > 30)
			fail_msg("reclaimer did not run: used %lu low %lu",
				 (unsigned long)st.used_bytes,
				 (unsigned long)st.low_bytes);
		usleep(1000);
	}
	assert_true(st.reclaim_runs >= 1);
	assert_true(st.evictions >= 250 - 230);
}

static int pressure_setup(void **state)
{
	struct cache_config cfg = {
		.budget_bytes = budget_for(4096),
		.min_bytes = budget_for(256),
		.alloc_wait_ms = 10,
	};

	return fixture_setup_cfg(state, &cfg);
}

/* Wait (bounded) until the reclaimer has evicted down to the low watermark
 * and every freed page's grace period has ended. */
static void settle(struct fixture *f, struct cache_stats *st)
{
	for (int i = 0; i < 30000; i++) {
		cache_stats(f->c, st);
		if (st->used_bytes <= st->low_bytes && !st->pending_free_bytes)
			return;
		cache_barrier(f->c);
		usleep(1000);
	}
	fail_msg("not settled: used %lu low %lu pending %lu",
		 (unsigned long)st->used_bytes, (unsigned long)st->low_bytes,
		 (unsigned long)st->pending_free_bytes);
}

/* Memory pressure: a smaller budget is evicted down to, holds for new
 * inserts, and its freed memory goes back to the kernel; the old budget
 * comes back; below the minimum is refused and changes nothing. */
static void test_set_budget_shrinks_trims_and_grows(void **state)
{
	struct fixture *f = *state;
	struct cache_stats st;
	uint64_t trimmed;

	assert_int_equal(fill_range(f->m, 0, 3000, 0), 3000);
	assert_int_equal(cache_set_budget(f->c, budget_for(255)), -EINVAL);
	cache_stats(f->c, &st);
	assert_int_equal(st.budget_bytes, 4096 * CACHE_PAGE_SIZE);

	assert_int_equal(cache_set_budget(f->c, budget_for(1024)), 0);
	settle(f, &st);
	assert_int_equal(st.budget_bytes, 1024 * CACHE_PAGE_SIZE);
	assert_true(st.evictions >= 3000 - 1024);
	trimmed = cache_trim(f->c);
#ifndef AHEADFS_TSAN
	assert_true(trimmed >= (uint64_t)(3000 - 1024) * CACHE_PAGE_SIZE);
	assert_int_equal(cache_trim(f->c), 0); /* nothing freed since */
#else
	(void)trimmed;
#endif
	/* New pages stay within the smaller budget (an insert may find no
	 * room at all while the reclaimer catches up: -ENOSPC). */
	for (uint64_t i = 0; i < 4; i++) {
		struct cache_page *pages[512];
		unsigned int got = 0;
		int rc = cache_insert_range(f->m, 10000 + i * 512, 512,
					    CACHE_NO_MARK, 0, pages, &got);

		assert_true(rc == 0 || rc == -ENOSPC);
		for (unsigned int k = 0; k < got; k++)
			cache_page_complete(pages[k], 0);
	}
	cache_stats(f->c, &st);
	assert_true(st.used_bytes <= 1024 * CACHE_PAGE_SIZE);

	/* Grown back: room for 3000 pages again. */
	assert_int_equal(cache_set_budget(f->c, budget_for(4096)), 0);
	settle(f, &st);
	assert_int_equal(fill_range(f->m, 20000, 3000, 0), 3000);
	cache_stats(f->c, &st);
	assert_true(st.used_bytes > 3000 * CACHE_PAGE_SIZE);
}

#ifndef AHEADFS_TSAN
/* One insert's pages get adjacent buffers in index order, also after
 * eviction freed them (what lets a window's O_DIRECT read reach the device
 * as one request), inside 2 MiB-aligned chunks. */
static void test_insert_gets_adjacent_buffers(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[64];
	unsigned int got;

	for (int round = 0; round < 2; round++) {
		assert_int_equal(cache_insert_range(f->m, 0, 64, CACHE_NO_MARK,
						    0, pages, &got),
				 0);
		assert_int_equal(got, 64);
		assert_int_equal((uintptr_t)cache_page_data(pages[0]) %
					 ((uintptr_t)CACHE_CHUNK_PAGES *
					  CACHE_PAGE_SIZE) %
					 CACHE_PAGE_SIZE,
				 0);
		for (unsigned int i = 1; i < got; i++)
			assert_ptr_equal(cache_page_data(pages[i]),
					 (char *)cache_page_data(pages[i - 1]) +
						 CACHE_PAGE_SIZE);
		for (unsigned int i = 0; i < got; i++)
			cache_page_complete(pages[i], 0);
		/* Evict them all; their buffers come back as one run. */
		assert_int_equal(cache_mapping_invalidate(f->m, 0, UINT64_MAX),
				 64);
		cache_barrier(f->c);
	}
	assert_int_equal(
		(uintptr_t)f->c->chunks->buffers %
			((uintptr_t)CACHE_CHUNK_PAGES * CACHE_PAGE_SIZE),
		0);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_rejects_bad_configs),
		cmocka_unit_test_setup_teardown(
			test_set_budget_shrinks_trims_and_grows, pressure_setup,
			fixture_teardown),
#ifndef AHEADFS_TSAN
		cmocka_unit_test_setup_teardown(
			test_insert_gets_adjacent_buffers, tiny_setup,
			fixture_teardown),
#endif
		cmocka_unit_test_setup_teardown(
			test_destroy_refused_while_mappings_live, tiny_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_freed_pages_wait_for_readers, tiny_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_enospc_when_everything_is_under_io,
			tiny_short_wait_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_short_insert_at_the_limit,
						tiny_short_wait_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_insert_at_limit_evicts_and_succeeds, tiny_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_locked_pages_not_evicted,
						tiny_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_scan_does_not_flush_hot_pages, small_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_locked_probation_does_not_block_main, small_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_unreferenced_pages_are_flushed_by_scan,
			small_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_waste_and_ghost_thrash,
						small_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_ghost_is_per_mapping,
						small_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_ghost_record_is_bounded,
						ghost_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_reclaimer_thread_restores_watermark,
			reclaimer_setup, fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
