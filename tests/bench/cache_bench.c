/* cache_bench.c - figures for docs/benchmarks.md ("## Page cache").
 *
 *   cache_bench [--pages N] [--seconds S] [--runs R] [--threads T]
 *
 * 1. prev_hole / next_hole over a fully cached run of N pages (default
 *    1,000,000) against the naive loop of one lookup per page (what the
 *    original prev_hole patch did).
 * 2. Lookup hits per second with 1..T threads (default 2), RCU against the
 *    same tree behind a pthread_rwlock, R runs each (best and spread).
 * 3. Memory per cached page (descriptor + tree nodes), dense and sparse.
 * 4. Read-side cost of the RCU flavours: urcu-memb with lazy registration
 *    (what the cache uses) against urcu-bp (cache_bench_bp.c).
 *
 * Small sizes make it a smoke test (ctest label "bench"); it asserts no
 * timing.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache.h"

/* cache_bench_bp.c: ns per urcu-bp read lock/unlock pair. */
double bench_bp_read_pair_ns(uint64_t iters);
/* cache_bench_lgpl.c: the same for urcu-memb inlined (_LGPL_SOURCE). */
double bench_lgpl_read_pair_ns(uint64_t iters);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Single-threaded micro-benchmarks count this thread's CPU time: the
 * machine is shared, and wall time would count other processes' slices. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "cache_bench: %s: %s\n", what, strerror(-rc));
	exit(1);
}

/* Insert and complete [first, first + n) (stride 1) or n pages at random
 * indexes below @spread (stride 0). */
static void populate(struct cache_mapping *m, uint64_t first, uint64_t n,
		     uint64_t spread)
{
	static struct cache_page *pages[1024];
	uint64_t seed = 99;

	for (uint64_t done = 0; done < n;) {
		uint64_t nr = n - done < 1024 ? n - done : 1024;
		unsigned int got;
		int rc;

		if (spread) {
			nr = 1;
			rc = cache_insert_range(m, rnd(&seed) % spread, 1,
						CACHE_NO_MARK, 0, pages, &got);
		} else {
			rc = cache_insert_range(m, first + done, nr,
						CACHE_NO_MARK, 0, pages, &got);
		}
		if (rc)
			die("cache_insert_range", rc);
		for (unsigned int i = 0; i < got; i++)
			cache_page_complete(pages[i], 0);
		done += spread ? got : nr;
	}
}

static struct cache *make_cache(uint64_t pages)
{
	struct cache_config cfg = {
		.budget_bytes = (pages + 1024) * (CACHE_PAGE_SIZE + 64),
		.manual_reclaim = true,
	};
	struct cache *c;
	int rc = cache_create(&cfg, &c);

	if (rc)
		die("cache_create", rc);
	return c;
}

static struct cache_mapping *make_mapping(struct cache *c)
{
	struct cache_mapping *m;
	int rc = cache_mapping_create(c, &m);

	if (rc)
		die("cache_mapping_create", rc);
	return m;
}

/* ---------------------------------------------------------------------- */

static uint64_t naive_prev_hole(struct cache_mapping *m, uint64_t index,
				uint64_t max_scan)
{
	for (uint64_t i = 0; i < max_scan; i++) {
		if (!cache_lookup_rcu(m, index))
			return index;
		if (!index--)
			return CACHE_NO_HOLE;
	}
	return index;
}

static void bench_scans(struct cache_mapping *m, uint64_t pages)
{
	uint64_t last = pages - 1, sink = 0;
	unsigned int reps_fast = 20000, reps_naive = 5;
	double t0, fast, naive, next, ctx;

	rcu_read_lock();
	t0 = cpu_s();
	for (unsigned int r = 0; r < reps_fast; r++)
		sink += cache_prev_hole_rcu(m, last - (r & 7), pages);
	fast = (cpu_s() - t0) / reps_fast;
	t0 = cpu_s();
	for (unsigned int r = 0; r < reps_naive; r++)
		sink += naive_prev_hole(m, last - (r & 7), pages);
	naive = (cpu_s() - t0) / reps_naive;
	t0 = cpu_s();
	for (unsigned int r = 0; r < reps_fast; r++)
		sink += cache_next_hole_rcu(m, r & 7, pages);
	next = (cpu_s() - t0) / reps_fast;
	/* The context readahead's typical call: a 256-page scan back. */
	t0 = cpu_s();
	for (unsigned int r = 0; r < reps_fast * 10; r++)
		sink += cache_prev_hole_rcu(
			m, 1000 + (r * 7919) % (pages - 1000), 256);
	ctx = (cpu_s() - t0) / (reps_fast * 10);
	if (cache_prev_hole_rcu(m, last, pages) != CACHE_NO_HOLE ||
	    naive_prev_hole(m, last, pages) != CACHE_NO_HOLE)
		die("prev_hole over a full run", -EPROTO);
	rcu_read_unlock();

	printf("scan  prev_hole over %lu cached pages: %.2f us; naive loop: "
	       "%.2f ms; speed-up %.0fx\n",
	       (unsigned long)pages, fast * 1e6, naive * 1e3, naive / fast);
	printf("scan  next_hole over %lu cached pages: %.2f us\n",
	       (unsigned long)pages, next * 1e6);
	printf("scan  prev_hole(index, 256) inside the run: %.0f ns (sink "
	       "%lu)\n",
	       ctx * 1e9, (unsigned long)(sink & 1));
}

/* ---------------------------------------------------------------------- */

struct lookup_arg {
	struct cache_mapping *m;
	pthread_rwlock_t *rwlock; /* NULL: RCU */
	uint64_t pages;
	double seconds;
	uint64_t seed;
	uint64_t done;
	double cpu; /* this thread's CPU seconds in the run */
	pthread_barrier_t *start;
};

/* One hit: find the page, check it, mark it; return its buffer (the
 * reply would copy from it; that copy is the same for both locks and is
 * left out so that the lookup path is what is measured). */
static inline uint64_t hit(struct cache_mapping *m, uint64_t index)
{
	struct cache_page *p = cache_lookup_rcu(m, index);

	if (!p || !cache_page_uptodate(p))
		return 0;
	cache_page_mark_accessed(p);
	return (uintptr_t)cache_page_data(p);
}

static void *lookup_main(void *arg)
{
	struct lookup_arg *a = arg;
	uint64_t n = 0, sink = 0, seed = a->seed;
	double end;

	double cpu0;

	cache_thread_online();
	pthread_barrier_wait(a->start);
	cpu0 = cpu_s();
	end = now_s() + a->seconds;
	while (now_s() < end) {
		for (int k = 0; k < 4096; k++) {
			uint64_t index = rnd(&seed) % a->pages;

			if (a->rwlock) {
				pthread_rwlock_rdlock(a->rwlock);
				rcu_read_lock(); /* the tree's API needs it */
				sink += hit(a->m, index);
				rcu_read_unlock();
				pthread_rwlock_unlock(a->rwlock);
			} else {
				rcu_read_lock();
				sink += hit(a->m, index);
				rcu_read_unlock();
			}
		}
		n += 4096;
	}
	a->done = n + (sink == 0xdeadbeef);
	a->cpu = cpu_s() - cpu0;
	return NULL;
}

/*
 * Return: hits per second of wall time; *@per_cpu: hits per CPU second
 * summed over the threads -- what the threads would do with a core each,
 * which a loaded shared machine does not give them.  Cache-line contention
 * (the rwlock's counter) shows in both; time spent descheduled only in the
 * first.
 */
static double run_lookups(struct cache_mapping *m, pthread_rwlock_t *rw,
			  unsigned int threads, uint64_t pages, double seconds,
			  double *per_cpu)
{
	struct lookup_arg a[64];
	pthread_t t[64];
	pthread_barrier_t start;
	uint64_t total = 0;

	pthread_barrier_init(&start, NULL, threads);
	for (unsigned int i = 0; i < threads; i++) {
		a[i] = (struct lookup_arg){.m = m,
					   .rwlock = rw,
					   .pages = pages,
					   .seconds = seconds,
					   .seed = 12345 + i * 7919,
					   .start = &start};
		pthread_create(&t[i], NULL, lookup_main, &a[i]);
	}
	*per_cpu = 0;
	for (unsigned int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		total += a[i].done;
		*per_cpu += a[i].cpu > 0 ? a[i].done / a[i].cpu : 0;
	}
	pthread_barrier_destroy(&start);
	return total / seconds;
}

static void bench_lookups(struct cache_mapping *m, uint64_t pages,
			  unsigned int max_threads, unsigned int runs,
			  double seconds)
{
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

	printf("hits  random lookups over the first %lu pages\n",
	       (unsigned long)pages);

	for (unsigned int th = 1; th <= max_threads; th *= 2) {
		for (int kind = 0; kind < 2; kind++) {
			double best = 0, worst = 1e30, cbest = 0, cworst = 1e30;

			for (unsigned int r = 0; r < runs; r++) {
				double c,
					v = run_lookups(m, kind ? &rw : NULL,
							th, pages, seconds, &c);

				best = v > best ? v : best;
				worst = v < worst ? v : worst;
				cbest = c > cbest ? c : cbest;
				cworst = c < cworst ? c : cworst;
			}
			printf("hits  %-6s %2u thread(s): wall best %6.2f "
			       "worst "
			       "%6.2f M/s; per CPU-second best %6.2f worst "
			       "%6.2f "
			       "M/s (%u runs of %.1fs)\n",
			       kind ? "rwlock" : "rcu", th, best / 1e6,
			       worst / 1e6, cbest / 1e6, cworst / 1e6, runs,
			       seconds);
		}
		if (th == max_threads)
			break;
		if (th * 2 > max_threads)
			th = max_threads / 2;
	}
}

/* ---------------------------------------------------------------------- */

static void bench_memory(uint64_t pages)
{
	const char *names[2] = {"dense", "sparse"};

	for (int sparse = 0; sparse < 2; sparse++) {
		struct cache *c = make_cache(pages);
		struct cache_mapping *m = make_mapping(c);
		struct cache_mapping_stats ms;
		struct cache_stats cs;
		double per;

		/* Sparse: random 4 KiB pages over a 64 GiB file. */
		populate(m, 0, pages, sparse ? UINT64_C(1) << 24 : 0);
		cache_mapping_stats(m, &ms);
		cache_stats(c, &cs);
		per = (double)(ms.tree_bytes +
			       ms.cached_pages * cs.page_overhead_bytes) /
		      ms.cached_pages;
		printf("mem   %-6s %lu pages: descriptor %lu B + tree %.1f B = "
		       "%.1f B per page (%.2f%% of 4 KiB)\n",
		       names[sparse], (unsigned long)ms.cached_pages,
		       (unsigned long)cs.page_overhead_bytes,
		       (double)ms.tree_bytes / ms.cached_pages, per,
		       100 * per / CACHE_PAGE_SIZE);
		cache_mapping_put(m);
		cache_destroy(c);
	}
}

static void bench_flavours(uint64_t iters)
{
	double t0, memb, online, bp, lgpl;

	t0 = cpu_s();
	for (uint64_t i = 0; i < iters; i++) {
		rcu_read_lock();
		__asm__ volatile("" ::: "memory");
		rcu_read_unlock();
	}
	memb = (cpu_s() - t0) / iters;
	t0 = cpu_s();
	for (uint64_t i = 0; i < iters; i++) {
		cache_thread_online(); /* a request handler's first line */
		rcu_read_lock();
		__asm__ volatile("" ::: "memory");
		rcu_read_unlock();
	}
	online = (cpu_s() - t0) / iters;
	bp = bench_bp_read_pair_ns(iters) / 1e9;
	lgpl = bench_lgpl_read_pair_ns(iters) / 1e9;
	printf("rcu   read lock+unlock pair: urcu-memb calls %.2f ns, with "
	       "cache_thread_online() %.2f ns; inlined (_LGPL_SOURCE): "
	       "urcu-memb %.2f ns, urcu-bp %.2f ns\n",
	       memb * 1e9, online * 1e9, lgpl * 1e9, bp * 1e9);
}

int main(int argc, char **argv)
{
	uint64_t pages = 1000000;
	unsigned int runs = 5, threads = 2;
	double seconds = 1.0;
	struct cache_mapping *m;
	struct cache *c;
	int opt;

	static const struct option longopts[] = {
		{"pages", required_argument, NULL, 'p'},
		{"seconds", required_argument, NULL, 's'},
		{"runs", required_argument, NULL, 'r'},
		{"threads", required_argument, NULL, 't'},
		{NULL, 0, NULL, 0},
	};
	while ((opt = getopt_long(argc, argv, "p:s:r:t:", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'p':
			pages = strtoull(optarg, NULL, 0);
			break;
		case 's':
			seconds = strtod(optarg, NULL);
			break;
		case 'r':
			runs = strtoul(optarg, NULL, 0);
			break;
		case 't':
			threads = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: cache_bench [--pages N] [--seconds S] "
				"[--runs R] [--threads T]\n");
			return 2;
		}
	}
	if (pages < 2048 || !runs || !threads || threads > 64 || seconds <= 0) {
		fprintf(stderr, "cache_bench: need pages >= 2048, runs >= 1, "
				"1 <= threads <= 64, seconds > 0\n");
		return 2;
	}

	cache_thread_online();
	c = make_cache(pages);
	m = make_mapping(c);
	populate(m, 0, pages, 0);
	bench_scans(m, pages);
	/* A hot set that stays in the CPU caches (the lookup path itself),
	 * then the whole run (memory-bound: descriptors and nodes miss). */
	bench_lookups(m, 4096, threads, runs, seconds);
	bench_lookups(m, pages, threads, runs, seconds);
	cache_mapping_put(m);
	cache_destroy(c);
	bench_memory(pages);
	bench_flavours(seconds > 0.5 ? 50000000 : 1000000);
	return 0;
}
