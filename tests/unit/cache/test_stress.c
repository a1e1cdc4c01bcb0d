/* test_stress.c - time-bounded concurrency stress of the whole cache.
 *
 * Threads, all at once, on two mappings of 2048 pages in a 384-page cache
 * whose reclaimer evicts all the time:
 *   readers      look pages up under RCU and check their bytes; pin LOCKED
 *                pages (tryget) and wait for them, with a cancel token;
 *                run next_hole / prev_hole / gang lookups and check that
 *                the answers are well-formed
 *   writers      insert ranges (demand and prefetch, with READAHEAD marks),
 *                fill the buffers, complete them (1 in 40 with -EIO)
 *   invalidator  invalidates ranges, drops ranges to history, drops the
 *                whole file (a change behind the mount), consumes ghost
 *                entries
 *   canceller    cancels the readers' waits at random
 * and the reclaimer thread evicting above the high watermark.
 *
 * Interleavings this is after, and what failure looks like:
 *   1. reader finds page P under RCU; eviction or invalidation removes P;
 *      the last reference goes; the grace period must wait for the reader:
 *      a recycled buffer shows another page's fill -> assertion failure,
 *      or ASan use-after-free (the TSan build frees pages outright).
 *   2. writer completes P while the invalidator drops it: P must never be
 *      UPTODATE once INVALID -> a waiter getting 0 on an invalidated page
 *      would read a buffer whose fill is checked below; a lost wake-up ->
 *      hang (ctest timeout).
 *   3. canceller vs a waiter about to sleep: a lost cancellation -> hang.
 *   4. inserters at the hard limit vs the reclaimer vs frees after grace
 *      periods: used > budget -> assertion failure; a deadlock -> hang.
 *   5. tree growth/shrink under readers: a torn walk -> crash or a scan
 *      answer out of its range -> assertion failure.
 * At the end every tree is checked bitmap by bitmap (cache_tree_check()).
 *
 * Duration: AHEADFS_STRESS_SECONDS (default 3).
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cache_test.h"

#define NR_MAPPINGS 2
#define SPAN 2048
#define NR_READERS 2
#define NR_WRITERS 2

struct stress {
	struct cache *c;
	struct cache_mapping *m[NR_MAPPINGS];
	struct cache_wait_cancel wc[NR_READERS];
	int stop;
	uint64_t reads, waits, cancels, errors, invalid;
};

struct worker {
	struct stress *s;
	int id;
	uint64_t seed;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static uint64_t fill_word(int mapping, uint64_t index)
{
	return UINT64_C(0x5a5a000000000000) ^ (uint64_t)mapping << 40 ^ index;
}

static int mapping_no(struct stress *s, struct cache_mapping *m)
{
	return m == s->m[0] ? 0 : 1;
}

static bool stopped(struct stress *s)
{
	return __atomic_load_n(&s->stop, __ATOMIC_RELAXED);
}

/* The first and last words of an UPTODATE page carry its fill. */
static void check_fill(struct stress *s, struct cache_mapping *m,
		       struct cache_page *p)
{
	const uint64_t *d = cache_page_data(p);
	uint64_t want = fill_word(mapping_no(s, m), cache_page_index(p));

	if (d[0] != want || d[CACHE_PAGE_SIZE / 8 - 1] != want)
		fail_msg("page %lu: fill %lx/%lx, want %lx",
			 (unsigned long)cache_page_index(p),
			 (unsigned long)d[0],
			 (unsigned long)d[CACHE_PAGE_SIZE / 8 - 1],
			 (unsigned long)want);
}

static void *reader_main(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	struct cache_wait_cancel *wc = &s->wc[w->id];
	uint64_t reads = 0, waits = 0, cancels = 0, errors = 0, invalid = 0;

	cache_thread_online();
	while (!stopped(s)) {
		struct cache_mapping *m = s->m[rnd(&w->seed) % NR_MAPPINGS];
		uint64_t index = rnd(&w->seed) % SPAN;
		struct cache_page *p, *gang[16];
		unsigned int n;
		uint64_t h;
		bool pinned = false;

		rcu_read_lock();
		p = cache_lookup_rcu(m, index);
		if (p && cache_page_uptodate(p)) {
			check_fill(s, m, p);
			cache_page_mark_accessed(p);
			cache_page_test_clear_readahead(p);
			cache_count_hit(m, 1, CACHE_PAGE_SIZE);
			reads++;
		} else if (p) {
			pinned = cache_page_tryget(p);
		} else {
			cache_count_miss(m, 1);
		}
		h = cache_next_hole_rcu(m, index, 64);
		assert_true(h >= index && h <= index + 64);
		h = cache_prev_hole_rcu(m, index, 64);
		assert_true(h == CACHE_NO_HOLE || h <= index);
		assert_true(h == CACHE_NO_HOLE || index - h <= 64);
		n = cache_gang_lookup_rcu(m, index, index + 100, gang, 16);
		for (unsigned int i = 0; i < n; i++) {
			assert_true(cache_page_index(gang[i]) >= index);
			assert_true(cache_page_index(gang[i]) <= index + 100);
			assert_true(!i ||
				    cache_page_index(gang[i]) >
					    cache_page_index(gang[i - 1]));
		}
		rcu_read_unlock();

		if (pinned) {
			int rc;

			cache_wait_cancel_init(wc);
			rc = cache_page_wait(p, wc);
			waits++;
			if (rc == 0)
				check_fill(s, m, p);
			else if (rc == -EINTR)
				cancels++;
			else if (rc == -EIO)
				errors++;
			else if (rc == -EAGAIN)
				invalid++;
			else
				fail_msg("cache_page_wait: %d", rc);
			cache_page_put(p);
		}
	}
	__atomic_fetch_add(&s->reads, reads, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->waits, waits, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->cancels, cancels, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->errors, errors, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->invalid, invalid, __ATOMIC_RELAXED);
	return NULL;
}

static void *writer_main(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	struct cache_page *pages[32];

	cache_thread_online();
	while (!stopped(s)) {
		int mn = rnd(&w->seed) % NR_MAPPINGS;
		struct cache_mapping *m = s->m[mn];
		uint64_t nr = 1 + rnd(&w->seed) % 32;
		uint64_t start = rnd(&w->seed) % (SPAN - nr);
		unsigned int flags =
			rnd(&w->seed) % 2 ? CACHE_INSERT_PREFETCH : 0;
		uint64_t mark = start + rnd(&w->seed) % nr;
		unsigned int got;
		int rc;

		rc = cache_insert_range(m, start, nr, mark, flags, pages, &got);
		if (rc == -ENOSPC)
			continue;
		assert_int_equal(rc, 0);
		for (unsigned int i = 0; i < got; i++) {
			uint64_t *d = cache_page_data(pages[i]);
			uint64_t fw = fill_word(mn, cache_page_index(pages[i]));

			for (unsigned int k = 0; k < CACHE_PAGE_SIZE / 8; k++)
				d[k] = fw;
		}
		/* Complete out of order, as split parallel I/O would: the
		 * odd pages first, then the even ones. */
		for (unsigned int pass = 1; pass <= 2; pass++)
			for (unsigned int i = pass % 2; i < got; i += 2)
				cache_page_complete(pages[i], rnd(&w->seed) % 40
								      ? 0
								      : -EIO);
	}
	return NULL;
}

static void *invalidator_main(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;

	cache_thread_online();
	while (!stopped(s)) {
		struct cache_mapping *m = s->m[rnd(&w->seed) % NR_MAPPINGS];
		uint64_t first = rnd(&w->seed) % SPAN;
		uint64_t last = first + rnd(&w->seed) % 64;

		switch (rnd(&w->seed) % 8) {
		case 0:
		case 1:
		case 2:
			cache_mapping_invalidate(m, first, last);
			break;
		case 3:
		case 4:
			cache_page_drop_to_history(m, first, last);
			break;
		case 5:
			cache_ghost_test_clear(m, first);
			break;
		case 6:
			if (rnd(&w->seed) % 16 == 0) /* the file changed */
				cache_mapping_invalidate(m, 0, UINT64_MAX);
			break;
		default:
			cache_reclaim(s->c, 8);
			break;
		}
		usleep(50);
	}
	return NULL;
}

static void *canceller_main(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;

	cache_thread_online();
	while (!stopped(s)) {
		cache_wait_cancel(&s->wc[rnd(&w->seed) % NR_READERS]);
		usleep(200);
	}
	return NULL;
}

static void test_stress(void **state)
{
	struct stress s = {0};
	struct cache_config cfg = {
		.budget_bytes = budget_for(384),
		.alloc_wait_ms = 5,
	};
	const char *env = getenv("AHEADFS_STRESS_SECONDS");
	unsigned int seconds = env ? (unsigned int)atoi(env) : 3;
	pthread_t t[NR_READERS + NR_WRITERS + 2];
	struct worker w[NR_READERS + NR_WRITERS + 2];
	struct timespec t0, now;
	unsigned int nt = 0;
	struct cache_stats st;

	(void)state;
	cache_thread_online();
	assert_int_equal(cache_create(&cfg, &s.c), 0);
	for (int i = 0; i < NR_MAPPINGS; i++) {

		assert_int_equal(cache_mapping_create(s.c, &s.m[i]), 0);
	}
	for (int i = 0; i < NR_READERS; i++)
		cache_wait_cancel_init(&s.wc[i]);
	for (unsigned int i = 0; i < NR_READERS + NR_WRITERS + 2; i++) {
		void *(*fn)(void *) =
			i < NR_READERS		       ? reader_main
			: i < NR_READERS + NR_WRITERS  ? writer_main
			: i == NR_READERS + NR_WRITERS ? invalidator_main
						       : canceller_main;

		w[i] = (struct worker){
			.s = &s, .id = (int)i, .seed = 0x1234567 + i};
		assert_int_equal(pthread_create(&t[nt++], NULL, fn, &w[i]), 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		usleep(10000);
		cache_stats(s.c, &st);
		assert_true(st.used_bytes <= st.budget_bytes);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < (time_t)seconds);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);

	for (int i = 0; i < NR_MAPPINGS; i++) {
		pthread_mutex_lock(&s.m[i]->lock);
		assert_int_equal(cache_tree_check(&s.m[i]->tree), 0);
		pthread_mutex_unlock(&s.m[i]->lock);
	}
	cache_stats(s.c, &st);
	printf("stress: %lus, %lu hits, %lu waits (%lu cancelled, %lu -EIO, "
	       "%lu invalidated), %lu evictions, %lu waste, %lu enospc\n",
	       (unsigned long)seconds, (unsigned long)s.reads,
	       (unsigned long)s.waits, (unsigned long)s.cancels,
	       (unsigned long)s.errors, (unsigned long)s.invalid,
	       (unsigned long)st.evictions, (unsigned long)st.waste,
	       (unsigned long)st.enospc);
	/* The run exercised what it is for. */
	assert_true(s.reads > 0);
	assert_true(st.evictions > 0);
	for (int i = 0; i < NR_MAPPINGS; i++)
		cache_mapping_put(s.m[i]);
	assert_int_equal(cache_destroy(s.c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
