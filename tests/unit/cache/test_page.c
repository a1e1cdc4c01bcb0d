/* test_page.c - mappings and pages through the public API: inserting,
 * state transitions, waits, errors, cancellation, invalidation racing I/O,
 * history, revalidation, counters.
 */
#include <unistd.h>

#include "cache_test.h"

static void test_insert_gives_locked_pages(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[4];
	unsigned int got;

	assert_int_equal(
		cache_insert_range(f->m, 10, 4, CACHE_NO_MARK, 0, pages, &got),
		0);
	assert_int_equal(got, 4);
	rcu_read_lock();
	for (unsigned int i = 0; i < 4; i++) {
		assert_int_equal(cache_page_index(pages[i]), 10 + i);
		assert_true(cache_page_locked(pages[i]));
		assert_false(cache_page_uptodate(pages[i]));
		assert_ptr_equal(cache_lookup_rcu(f->m, 10 + i), pages[i]);
		assert_int_equal((uintptr_t)cache_page_data(pages[i]) %
					 CACHE_PAGE_SIZE,
				 0);
	}
	assert_null(cache_lookup_rcu(f->m, 14));
	rcu_read_unlock();
	for (unsigned int i = 0; i < 4; i++)
		cache_page_complete(pages[i], 0);
	rcu_read_lock();
	assert_true(cache_page_uptodate(cache_lookup_rcu(f->m, 12)));
	assert_false(cache_page_locked(cache_lookup_rcu(f->m, 12)));
	rcu_read_unlock();
}

static void test_insert_skips_present_pages(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[8];
	unsigned int got;

	assert_int_equal(fill_range(f->m, 10, 4, 0), 4);
	assert_int_equal(
		cache_insert_range(f->m, 8, 8, CACHE_NO_MARK, 0, pages, &got),
		0);
	assert_int_equal(got, 4);
	assert_int_equal(cache_page_index(pages[0]), 8);
	assert_int_equal(cache_page_index(pages[1]), 9);
	assert_int_equal(cache_page_index(pages[2]), 14);
	assert_int_equal(cache_page_index(pages[3]), 15);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
	/* All present now: nothing to insert, not an error. */
	assert_int_equal(
		cache_insert_range(f->m, 8, 8, CACHE_NO_MARK, 0, pages, &got),
		0);
	assert_int_equal(got, 0);
}

static void test_insert_rejects_bad_ranges(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[2];
	unsigned int got = 99;

	assert_int_equal(
		cache_insert_range(f->m, 0, 0, CACHE_NO_MARK, 0, pages, &got),
		-EINVAL);
	assert_int_equal(got, 0);
	assert_int_equal(cache_insert_range(f->m, CACHE_INDEX_LIMIT - 1, 2,
					    CACHE_NO_MARK, 0, pages, &got),
			 -EINVAL);
	assert_int_equal(cache_insert_range(f->m, UINT64_MAX, 1, CACHE_NO_MARK,
					    0, pages, &got),
			 -EINVAL);
	assert_int_equal(cache_insert_range(f->m, 0, 1, CACHE_NO_MARK, 0x80,
					    pages, &got),
			 -EINVAL);
	/* The last valid index works. */
	assert_int_equal(cache_insert_range(f->m, CACHE_INDEX_LIMIT - 1, 1,
					    CACHE_NO_MARK, 0, pages, &got),
			 0);
	assert_int_equal(got, 1);
	cache_page_complete(pages[0], 0);
	assert_true(has_data(f->m, CACHE_INDEX_LIMIT - 1));
}

static void test_readahead_mark_cleared_once(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[8], *p;
	unsigned int got;

	assert_int_equal(cache_insert_range(f->m, 0, 8, 5,
					    CACHE_INSERT_PREFETCH, pages, &got),
			 0);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
	rcu_read_lock();
	assert_false(
		cache_page_test_clear_readahead(cache_lookup_rcu(f->m, 4)));
	p = cache_lookup_rcu(f->m, 5);
	assert_true(cache_page_test_clear_readahead(p));
	assert_false(cache_page_test_clear_readahead(p));
	rcu_read_unlock();
}

static void test_mark_not_set_on_present_page(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[4];
	unsigned int got;

	fill_range(f->m, 2, 1, 0);
	assert_int_equal(cache_insert_range(f->m, 0, 4, 2, 0, pages, &got), 0);
	assert_int_equal(got, 3);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
	rcu_read_lock();
	assert_false(
		cache_page_test_clear_readahead(cache_lookup_rcu(f->m, 2)));
	rcu_read_unlock();
}

static void test_wait_on_uptodate_page_returns_at_once(void **state)
{
	struct fixture *f = *state;
	struct cache_page *p;

	fill_range(f->m, 7, 1, 0);
	rcu_read_lock();
	p = cache_lookup_rcu(f->m, 7);
	assert_true(cache_page_tryget(p));
	rcu_read_unlock();
	assert_int_equal(cache_page_wait(p, NULL), 0);
	assert_int_equal(*(uint64_t *)cache_page_data(p), 7);
	cache_page_put(p);
}

struct waiter {
	struct cache_page *p;
	struct cache_wait_cancel wc;
	int rc;
	int started;
	pthread_t thread;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	cache_thread_online();
	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&w->rc, cache_page_wait(w->p, &w->wc),
			 __ATOMIC_RELAXED);
	cache_page_put(w->p);
	return NULL;
}

/* Start a waiter holding its own reference to @p. */
static void waiter_start(struct waiter *w, struct cache_page *p)
{
	w->p = p;
	w->rc = 1;
	w->started = 0;
	cache_wait_cancel_init(&w->wc);
	assert_true(cache_page_tryget(p));
	assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
	while (!__atomic_load_n(&w->started, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void test_waiters_woken_by_completion(void **state)
{
	struct fixture *f = *state;
	struct cache_page *p;
	struct waiter w[3];
	unsigned int got;

	assert_int_equal(
		cache_insert_range(f->m, 3, 1, CACHE_NO_MARK, 0, &p, &got), 0);
	for (int i = 0; i < 3; i++)
		waiter_start(&w[i], p);
	usleep(1000); /* let them sleep; the result does not depend on it */
	*(uint64_t *)cache_page_data(p) = 0xabcd;
	cache_page_complete(p, 0);
	for (int i = 0; i < 3; i++) {
		pthread_join(w[i].thread, NULL);
		assert_int_equal(w[i].rc, 0);
	}
}

static void test_error_completion_reaches_waiters_and_drops_page(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping_stats st;
	struct cache_page *p;
	struct waiter w[2];
	unsigned int got;

	assert_int_equal(
		cache_insert_range(f->m, 3, 1, CACHE_NO_MARK, 0, &p, &got), 0);
	for (int i = 0; i < 2; i++)
		waiter_start(&w[i], p);
	cache_page_complete(p, -EIO);
	for (int i = 0; i < 2; i++) {
		pthread_join(w[i].thread, NULL);
		assert_int_equal(w[i].rc, -EIO);
	}
	assert_false(has_data(f->m, 3));
	cache_mapping_stats(f->m, &st);
	assert_int_equal(st.errors, 1);
	assert_int_equal(st.cached_pages, 0);
	/* The index can be filled again. */
	assert_int_equal(fill_range(f->m, 3, 1, 0), 1);
}

static void test_error_keeps_its_errno(void **state)
{
	struct fixture *f = *state;
	struct cache_page *p;
	unsigned int got;

	assert_int_equal(
		cache_insert_range(f->m, 0, 1, CACHE_NO_MARK, 0, &p, &got), 0);
	assert_true(cache_page_tryget(p));
	cache_page_complete(p, -ENXIO);
	assert_false(cache_page_uptodate(p));
	assert_int_equal(cache_page_wait(p, NULL), -ENXIO);
	cache_page_put(p);
}

static void test_cancel_wakes_only_that_waiter(void **state)
{
	struct fixture *f = *state;
	struct cache_page *p;
	struct waiter w[2];
	unsigned int got;

	assert_int_equal(
		cache_insert_range(f->m, 9, 1, CACHE_NO_MARK, 0, &p, &got), 0);
	waiter_start(&w[0], p);
	waiter_start(&w[1], p);
	cache_wait_cancel(&w[0].wc);
	pthread_join(w[0].thread, NULL);
	assert_int_equal(w[0].rc, -EINTR);
	/* The other one still waits for the I/O. */
	assert_int_equal(__atomic_load_n(&w[1].rc, __ATOMIC_RELAXED), 1);
	cache_page_complete(p, 0);
	pthread_join(w[1].thread, NULL);
	assert_int_equal(w[1].rc, 0);
}

static void test_cancel_before_wait(void **state)
{
	struct fixture *f = *state;
	struct cache_wait_cancel wc;
	struct cache_page *p;
	unsigned int got;

	assert_int_equal(
		cache_insert_range(f->m, 9, 1, CACHE_NO_MARK, 0, &p, &got), 0);
	cache_wait_cancel_init(&wc);
	cache_wait_cancel(&wc);
	assert_int_equal(cache_page_wait(p, &wc), -EINTR);
	cache_page_complete(p, 0);
}

static void test_invalidate_before_completion_never_data(void **state)
{
	struct fixture *f = *state;
	struct cache_page *p;
	struct waiter w;
	unsigned int got;

	assert_int_equal(
		cache_insert_range(f->m, 20, 1, CACHE_NO_MARK, 0, &p, &got), 0);
	waiter_start(&w, p);
	/* A write lands while the read I/O is in flight. */
	assert_int_equal(cache_mapping_invalidate(f->m, 0, UINT64_MAX), 1);
	assert_false(has_data(f->m, 20));
	/* The stale read completes afterwards: it must not become data. */
	assert_true(cache_page_tryget(p));
	cache_page_complete(p, 0);
	assert_false(cache_page_uptodate(p));
	assert_int_equal(cache_page_wait(p, NULL), -EAGAIN);
	cache_page_put(p);
	pthread_join(w.thread, NULL);
	assert_int_equal(w.rc, -EAGAIN);
	assert_false(has_data(f->m, 20));
	/* A fresh read of the index works. */
	assert_int_equal(fill_range(f->m, 20, 1, 0), 1);
	assert_true(has_data(f->m, 20));
}

struct race {
	struct cache_mapping *m;
	struct cache_page *p;
	int go;
};

static void *race_complete(void *arg)
{
	struct race *r = arg;

	cache_thread_online();
	while (!__atomic_load_n(&r->go, __ATOMIC_ACQUIRE))
		;
	cache_page_complete(r->p, 0);
	return NULL;
}

/*
 * Invalidation and completion released at the same moment, many times.
 * Whatever the order, afterwards: the index holds no data, and a holder's
 * wait reports -EAGAIN (invalidated) -- never 0, which would be stale data
 * served as valid.
 */
static void test_invalidate_races_completion(void **state)
{
	struct fixture *f = *state;

	for (int i = 0; i < 300; i++) {
		struct race r = {.m = f->m};
		struct cache_page *p;
		unsigned int got;
		pthread_t t;

		assert_int_equal(cache_insert_range(f->m, 5, 1, CACHE_NO_MARK,
						    0, &p, &got),
				 0);
		r.p = p;
		assert_true(cache_page_tryget(p));
		assert_int_equal(pthread_create(&t, NULL, race_complete, &r),
				 0);
		__atomic_store_n(&r.go, 1, __ATOMIC_RELEASE);
		cache_mapping_invalidate(f->m, 5, 5);
		pthread_join(t, NULL);
		assert_false(has_data(f->m, 5));
		assert_int_equal(cache_page_wait(p, NULL), -EAGAIN);
		cache_page_put(p);
	}
}

static void test_invalidate_range_and_history(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping_stats st;

	fill_range(f->m, 0, 100, 0);
	assert_int_equal(cache_page_drop_to_history(f->m, 40, 49), 10);
	assert_int_equal(cache_mapping_invalidate(f->m, 30, 59), 20);
	cache_mapping_stats(f->m, &st);
	assert_int_equal(st.cached_pages, 70);
	assert_int_equal(st.history_pages, 0);
	assert_int_equal(st.invalidated, 20);
	rcu_read_lock();
	assert_int_equal(cache_prev_hole_rcu(f->m, 99, 100), 59);
	assert_int_equal(cache_next_hole_rcu(f->m, 0, 100), 30);
	rcu_read_unlock();
	assert_int_equal(cache_mapping_invalidate(f->m, 5, 4), 0);
}

static void test_history_present_for_prev_hole_only(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping_stats st;
	struct cache_page *pages[4];
	unsigned int got;

	fill_range(f->m, 0, 64, 0);
	assert_int_equal(cache_page_drop_to_history(f->m, 0, 31), 32);
	cache_mapping_stats(f->m, &st);
	assert_int_equal(st.cached_pages, 32);
	assert_int_equal(st.history_pages, 32);
	assert_int_equal(st.to_history, 32);
	rcu_read_lock();
	assert_null(cache_lookup_rcu(f->m, 10));
	assert_int_equal(cache_next_hole_rcu(f->m, 0, 64), 0);
	assert_int_equal(cache_next_hole_rcu(f->m, 32, 100), 64);
	assert_int_equal(cache_prev_hole_rcu(f->m, 63, 1000), CACHE_NO_HOLE);
	assert_int_equal(cache_prev_hole_rcu(f->m, 63, 10), 53);
	assert_int_equal(cache_gang_lookup_rcu(f->m, 0, 63, pages, 4), 4);
	assert_int_equal(cache_page_index(pages[0]), 32);
	rcu_read_unlock();
	/* A history entry is replaced by a new read. */
	assert_int_equal(
		cache_insert_range(f->m, 9, 2, CACHE_NO_MARK, 0, pages, &got),
		0);
	assert_int_equal(got, 2);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(pages[i], 0);
	cache_mapping_stats(f->m, &st);
	assert_int_equal(st.history_pages, 30);
	assert_true(has_data(f->m, 9));
}

static int history_setup(void **state)
{
	struct cache_config cfg = {
		.budget_bytes = budget_for(1024),
		.manual_reclaim = true,
		.history_max = 100,
	};

	return fixture_setup_cfg(state, &cfg);
}

/* CACHE_INSERT_KEEP_HISTORY fills holes only: history entries stay (and
 * cost no allocation), data pages are skipped as always. */
static void test_insert_keeps_history(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping_stats st;
	struct cache_page *pages[16];
	unsigned int got;

	fill_range(f->m, 0, 8, 0);
	assert_int_equal(cache_page_drop_to_history(f->m, 0, 3), 4);
	/* [0, 4) history, [4, 8) data, [8, 12) holes */
	assert_int_equal(cache_insert_range(f->m, 0, 12, CACHE_NO_MARK,
					    CACHE_INSERT_PREFETCH |
						    CACHE_INSERT_KEEP_HISTORY,
					    pages, &got),
			 0);
	assert_int_equal(got, 4);
	for (unsigned int i = 0; i < got; i++) {
		assert_int_equal(cache_page_index(pages[i]), 8 + i);
		cache_page_complete(pages[i], 0);
	}
	cache_mapping_stats(f->m, &st);
	assert_int_equal(st.history_pages, 4);
	assert_int_equal(st.cached_pages, 8);
	/* All present (history or data): nothing to insert. */
	assert_int_equal(cache_insert_range(f->m, 0, 12, CACHE_NO_MARK,
					    CACHE_INSERT_KEEP_HISTORY, pages,
					    &got),
			 0);
	assert_int_equal(got, 0);
	/* Without the flag the history is replaced. */
	assert_int_equal(
		cache_insert_range(f->m, 0, 12, CACHE_NO_MARK, 0, pages, &got),
		0);
	assert_int_equal(got, 4);
	for (unsigned int i = 0; i < got; i++) {
		assert_int_equal(cache_page_index(pages[i]), i);
		cache_page_complete(pages[i], 0);
	}
	cache_mapping_stats(f->m, &st);
	assert_int_equal(st.history_pages, 0);
	assert_int_equal(st.cached_pages, 12);
}

static void test_history_bounded_lowest_first(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping_stats st;

	fill_range(f->m, 0, 200, 0);
	assert_int_equal(cache_page_drop_to_history(f->m, 0, 199), 200);
	cache_mapping_stats(f->m, &st);
	/* Trimmed to three quarters of the limit, oldest offsets first. */
	assert_int_equal(st.history_pages, 75);
	assert_int_equal(st.history_trimmed, 125);
	rcu_read_lock();
	assert_int_equal(cache_prev_hole_rcu(f->m, 199, 1000), 124);
	rcu_read_unlock();
}

static void test_drop_to_history_skips_locked(void **state)
{
	struct fixture *f = *state;
	struct cache_page *p;
	unsigned int got;

	assert_int_equal(
		cache_insert_range(f->m, 1, 1, CACHE_NO_MARK, 0, &p, &got), 0);
	assert_int_equal(cache_page_drop_to_history(f->m, 0, 10), 0);
	cache_page_complete(p, 0);
	assert_int_equal(cache_page_drop_to_history(f->m, 0, 10), 1);
}

/* A read served around the cache: holes and UPTODATE pages become history,
 * a LOCKED page (someone's I/O) is left alone; the context scan then sees
 * the whole run, and a window over it inserts nothing. */
static void test_note_given(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping_stats st;
	struct cache_page *p, *pages[8];
	unsigned int got;

	fill_range(f->m, 2, 1, 0);
	assert_int_equal(
		cache_insert_range(f->m, 3, 1, CACHE_NO_MARK, 0, &p, &got), 0);
	assert_int_equal(cache_note_given(f->m, 0, 5), 5);
	assert_true(cache_page_locked(p));
	cache_mapping_stats(f->m, &st);
	assert_int_equal(st.history_pages, 5);
	assert_int_equal(st.cached_pages, 1);
	assert_int_equal(st.to_history, 5);
	rcu_read_lock();
	assert_null(cache_lookup_rcu(f->m, 2)); /* dropped: no data */
	assert_true(cache_history_rcu(f->m, 2));
	assert_true(cache_history_rcu(f->m, 0)); /* a hole filled */
	assert_false(cache_history_rcu(f->m, 3)); /* LOCKED, data */
	assert_false(cache_history_rcu(f->m, 6)); /* a hole */
	assert_false(cache_history_rcu(f->m, CACHE_INDEX_LIMIT));
	assert_int_equal(cache_prev_hole_rcu(f->m, 5, 100), UINT64_MAX);
	rcu_read_unlock();
	cache_page_complete(p, 0);
	assert_int_equal(cache_insert_range(f->m, 0, 6, CACHE_NO_MARK,
					    CACHE_INSERT_PREFETCH |
						    CACHE_INSERT_KEEP_HISTORY,
					    pages, &got),
			 0);
	assert_int_equal(got, 0);
	/* Again: only the page completed since is dropped; empty and
	 * out-of-range requests change nothing. */
	assert_int_equal(cache_note_given(f->m, 0, 5), 1);
	assert_int_equal(cache_note_given(f->m, 5, 4), 0);
	assert_int_equal(
		cache_note_given(f->m, CACHE_INDEX_LIMIT, CACHE_INDEX_LIMIT),
		0);
	cache_mapping_stats(f->m, &st);
	assert_int_equal(st.history_pages, 6);
	assert_int_equal(st.cached_pages, 0);
}

static void test_last_put_with_io_in_flight(void **state)
{
	struct fixture *f = *state;
	struct cache_page *p;
	unsigned int got;

	fill_range(f->m, 0, 10, 0);
	assert_int_equal(
		cache_insert_range(f->m, 10, 1, CACHE_NO_MARK, 0, &p, &got), 0);
	cache_mapping_get(f->m);
	cache_mapping_put(f->m);
	assert_true(has_data(f->m, 3)); /* still one user */
	cache_mapping_put(f->m);
	f->m = NULL;
	/* The I/O finishes after the mapping's last user left: no data, no
	 * leak (ASan), and the cache can be destroyed by the teardown. */
	cache_page_complete(p, 0);
}

static void test_gang_lookup_range(void **state)
{
	struct fixture *f = *state;
	struct cache_page *pages[16];

	fill_range(f->m, 100, 5, 0);
	fill_range(f->m, 200, 5, 0);
	rcu_read_lock();
	assert_int_equal(cache_gang_lookup_rcu(f->m, 0, 1000, pages, 16), 10);
	assert_int_equal(cache_page_index(pages[5]), 200);
	assert_int_equal(cache_gang_lookup_rcu(f->m, 102, 201, pages, 16), 5);
	assert_int_equal(cache_page_index(pages[0]), 102);
	assert_int_equal(cache_page_index(pages[4]), 201);
	assert_int_equal(cache_gang_lookup_rcu(f->m, 0, 1000, pages, 3), 3);
	assert_int_equal(cache_gang_lookup_rcu(f->m, 5, 4, pages, 3), 0);
	rcu_read_unlock();
}

static void test_prev_hole_sentinel(void **state)
{
	struct fixture *f = *state;

	fill_range(f->m, 0, 10, 0);
	rcu_read_lock();
	assert_int_equal(cache_prev_hole_rcu(f->m, 9, 100), CACHE_NO_HOLE);
	assert_int_equal(cache_prev_hole_rcu(f->m, 9, 10), CACHE_NO_HOLE);
	assert_int_equal(cache_prev_hole_rcu(f->m, 9, 5), 4);
	assert_int_equal(cache_prev_hole_rcu(f->m, 12, 100), 12);
	assert_int_equal(cache_prev_hole_rcu(f->m, 9, 0), 9);
	rcu_read_unlock();
}

struct counter_thread {
	struct cache_mapping *m;
	int n;
};

static void *count_main(void *arg)
{
	struct counter_thread *ct = arg;

	cache_thread_online();
	for (int i = 0; i < ct->n; i++) {
		cache_count_hit(ct->m, 2, 8192);
		cache_count_miss(ct->m, 1);
	}
	return NULL;
}

static void test_counters_summed_over_threads(void **state)
{
	struct fixture *f = *state;
	/* More threads than owned slots: some share the atomic slot. */
	enum { NR = CACHE_COUNTER_SLOTS + 8 };
	struct counter_thread ct = {.m = f->m, .n = 1000};
	struct cache_mapping_stats st;
	struct cache_stats cs;
	pthread_t t[NR];

	for (int i = 0; i < NR; i++)
		assert_int_equal(pthread_create(&t[i], NULL, count_main, &ct),
				 0);
	for (int i = 0; i < NR; i++)
		pthread_join(t[i], NULL);
	cache_count_hit(f->m, 1, 100);
	cache_mapping_stats(f->m, &st);
	assert_int_equal(st.hits, NR * 2000 + 1);
	assert_int_equal(st.hit_bytes, (uint64_t)NR * 8192000 + 100);
	assert_int_equal(st.misses, NR * 1000);
	cache_stats(f->c, &cs);
	assert_int_equal(cs.hits, st.hits);
	assert_int_equal(cs.mappings, 1);
}

static void test_descriptor_overhead(void **state)
{
	struct fixture *f = *state;
	struct cache_mapping_stats st;
	uint64_t n = 64 * 64;

	(void)f;
	/* The descriptor is designed for <= 64 bytes and the dense tree
	 * costs about 9 bytes per page: together under 2% of 4 KiB. */
	assert_true(sizeof(struct cache_page) <= 64);
	fill_range(f->m, 0, n, 0);
	cache_mapping_stats(f->m, &st);
	assert_true((st.tree_bytes + n * sizeof(struct cache_page)) * 50 <=
		    n * CACHE_PAGE_SIZE);
}

/* A new cache starts with its first chunk of pages faulted in
 * (cache_pool_prefault()), as far as the budget allows: the first window
 * read into it does not pay the kernel's zeroing.  A trim gives the
 * memory back while the pages are free. */
static void test_first_chunk_faulted_in(void **state)
{
	struct fixture *f = *state;
	struct cache_chunk *ch = f->c->chunks;
	int res;

#ifdef AHEADFS_TSAN
	skip(); /* pages from malloc() there */
#endif
	assert_non_null(ch);
	assert_null(ch->next);
	assert_int_equal(ch->nr, CACHE_CHUNK_PAGES); /* 4096 pages of budget */
	res = all_resident(ch->buffers, (size_t)ch->nr * CACHE_PAGE_SIZE);
	if (res < 0)
		skip();
	assert_int_equal(res, 1);
	/* Free memory held: a trim (memory pressure) gives all of it back. */
	assert_int_equal(cache_trim(f->c), (uint64_t)ch->nr * CACHE_PAGE_SIZE);
	assert_int_equal(cache_trim(f->c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn)                                                                  \
	cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)
		T(test_insert_gives_locked_pages),
		T(test_insert_skips_present_pages),
		T(test_insert_rejects_bad_ranges),
		T(test_readahead_mark_cleared_once),
		T(test_mark_not_set_on_present_page),
		T(test_wait_on_uptodate_page_returns_at_once),
		T(test_waiters_woken_by_completion),
		T(test_error_completion_reaches_waiters_and_drops_page),
		T(test_error_keeps_its_errno),
		T(test_cancel_wakes_only_that_waiter),
		T(test_cancel_before_wait),
		T(test_invalidate_before_completion_never_data),
		T(test_invalidate_races_completion),
		T(test_invalidate_range_and_history),
		T(test_insert_keeps_history),
		T(test_history_present_for_prev_hole_only),
		T(test_drop_to_history_skips_locked),
		T(test_note_given),
		cmocka_unit_test_setup_teardown(
			test_history_bounded_lowest_first, history_setup,
			fixture_teardown),
		T(test_last_put_with_io_in_flight),
		T(test_gang_lookup_range),
		T(test_prev_hole_sentinel),
		T(test_counters_summed_over_threads),
		T(test_descriptor_overhead),
		T(test_first_chunk_faulted_in),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
