/* evict.c - scan-resistant eviction (S3-FIFO style), the reclaimer thread
 * and the ghost record of wasted prefetches.
 *
 * Two FIFO queues under c->lru_lock, no global LRU touched on a hit:
 *
 *   insert ──▶ small (probation) ──head──▶ referenced? ──yes──▶ main tail
 *                                              │ no
 *                                              ▼
 *                                            evict (prefetched and never
 *                                            used: waste + ghost entry)
 *   main ──head──▶ referenced? ──yes──▶ clear the bit, back to main's tail
 *                      │ no
 *                      ▼
 *                    evict
 *
 * A hit costs the reader at most a one-byte store (cache_page_mark_accessed):
 * the first use after insertion clears the page's "fresh" byte, later uses
 * set "referenced".  A page read once -- a sequential scan, or a readahead
 * page consumed once -- leaves probation unreferenced and is evicted there,
 * so a scan larger than the cache does not flush the pages that are read
 * again and again (they live in main).  The small queue is evicted from
 * while it holds at least small_pct of the budget (or main is empty).
 * Pages whose I/O is in flight (LOCKED) are rotated, never evicted; a
 * queue found all LOCKED is left for the other one in that pass.
 *
 * Eviction isolates a victim under lru_lock (takes a reference, unqueues
 * it), then takes its mapping's lock -- lock order mapping -> lru, so never
 * while holding lru_lock -- and removes it from the tree unless something
 * else (invalidation, an error, drop to history) removed it meanwhile.
 *
 * Ghost record: a small set-associative table (4 ways) of (mapping id,
 * index) for pages evicted prefetched-and-unused; oldest way replaced by a
 * clock.  cache_ghost_test_clear() on a later miss turns it into a thrash
 * event for the readahead.  Mapping ids are never reused, so a stale entry
 * cannot match another file.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "cache_internal.h"

#define GHOST_WAYS 4
#define RECLAIM_BATCH 32

void cache_lru_add_locked(struct cache *c, struct cache_page *p)
{
	afs_assert_held(&c->lru_lock);
	assert(p->queue == CACHE_QUEUE_NONE);
	cds_list_add_tail(&p->lru, &c->small);
	p->queue = CACHE_QUEUE_SMALL;
	c->nr_small++;
}

void cache_lru_del_locked(struct cache *c, struct cache_page *p)
{
	afs_assert_held(&c->lru_lock);
	assert(p->queue != CACHE_QUEUE_NONE);
	cds_list_del(&p->lru);
	if (p->queue == CACHE_QUEUE_SMALL)
		c->nr_small--;
	else
		c->nr_main--;
	p->queue = CACHE_QUEUE_NONE;
}

static void move_tail_locked(struct cache *c, struct cache_page *p,
			     uint8_t queue)
{
	afs_assert_held(&c->lru_lock);
	cache_lru_del_locked(c, p);
	cds_list_add_tail(&p->lru,
			  queue == CACHE_QUEUE_SMALL ? &c->small : &c->main);
	p->queue = queue;
	if (queue == CACHE_QUEUE_SMALL)
		c->nr_small++;
	else
		c->nr_main++;
}

/*
 * Pick and isolate up to @max victims in policy order.  Each comes back
 * with a reference of ours, off every queue.  lru_lock held.
 */
static unsigned int isolate_locked(struct cache *c, struct cache_page **out,
				   unsigned int max)
{
	uint64_t small_target =
		cache_budget_read(&c->budget_pages) * c->small_pct / 100;
	/* Bound the rotations: every page may be visited twice (a
	 * referenced page loses its bit on the first visit). */
	uint64_t budget = 2 * (c->nr_small + c->nr_main) + 2;
	unsigned int nr = 0;

	/* LOCKED pages rotated per queue in this call: once a queue has been
	 * gone round with nothing but I/O in flight, take from the other
	 * one (a probation queue full of readahead in flight must not stop
	 * the eviction of cold pages in main, nor the reverse). */
	uint64_t small_skips = 0, main_skips = 0;

	afs_assert_held(&c->lru_lock);
	while (nr < max && budget--) {
		bool small_ok = c->nr_small && small_skips < c->nr_small;
		bool main_ok = c->nr_main && main_skips < c->nr_main;
		bool small =
			small_ok && (c->nr_small >= small_target || !main_ok);
		struct cds_list_head *q = small ? &c->small : &c->main;
		struct cache_page *p;

		if (!small && !main_ok)
			break;
		p = cds_list_first_entry(q, struct cache_page, lru);
		if (cache_page_flags(p) & CACHE_PG_LOCKED) {
			if (small)
				small_skips++;
			else
				main_skips++;
			move_tail_locked(c, p, p->queue);
			continue;
		}
		if (__atomic_load_n(&p->referenced, __ATOMIC_RELAXED)) {
			__atomic_store_n(&p->referenced, 0, __ATOMIC_RELAXED);
			if (small)
				cache_stat_add(&c->promotions, 1);
			move_tail_locked(c, p, CACHE_QUEUE_MAIN);
			continue;
		}
		/* In a queue means in the tree: the tree's reference is held,
		 * so this cannot fail. */
		if (!cache_page_tryget(p)) {
			move_tail_locked(c, p, p->queue);
			continue;
		}
		cache_lru_del_locked(c, p);
		out[nr++] = p;
	}
	return nr;
}

/* Remove an isolated victim from its tree (unless already removed). */
static bool evict_one(struct cache *c, struct cache_page *p)
{
	struct cache_mapping *m = p->mapping;
	bool evicted = false;

	pthread_mutex_lock(&m->lock);
	if (!(cache_page_flags(p) & CACHE_PG_REMOVED)) {
		bool wasted = __atomic_load_n(&p->fresh, __ATOMIC_RELAXED) ==
			      CACHE_FRESH_PREFETCH;

		cache_page_remove_locked(m, p, 0, NULL);
		cache_stat_add(&m->evicted, 1);
		cache_stat_add(&c->evictions, 1);
		if (wasted) {
			cache_stat_add(&m->waste, 1);
			cache_stat_add(&c->waste, 1);
			cache_ghost_add(c, m->mid, p->index);
		}
		evicted = true;
	}
	pthread_mutex_unlock(&m->lock);
	cache_page_put(p);
	return evicted;
}

uint64_t cache_reclaim(struct cache *c, uint64_t nr_pages)
{
	struct cache_page *victims[RECLAIM_BATCH];
	uint64_t done = 0;

	afs_assert_no_rcu();
	while (done < nr_pages) {
		unsigned int want = nr_pages - done < RECLAIM_BATCH
					    ? (unsigned int)(nr_pages - done)
					    : RECLAIM_BATCH;
		unsigned int nr;

		pthread_mutex_lock(&c->lru_lock);
		nr = isolate_locked(c, victims, want);
		pthread_mutex_unlock(&c->lru_lock);
		if (!nr)
			break;
		for (unsigned int i = 0; i < nr; i++)
			done += evict_one(c, victims[i]);
	}
	return done;
}

/* Pages that still count against the budget once their grace period ends. */
static uint64_t live_pages_locked(const struct cache *c)
{
	afs_assert_held(&c->pool_lock);
	return c->used - c->pending;
}

/* How long the reclaimer waits before retrying when every page it could
 * evict was under I/O or held. */
#define RECLAIM_RETRY_MS 10

static void *reclaimer_main(void *arg)
{
	struct cache *c = arg;
	bool retry = false;

	cache_thread_online();
	pthread_mutex_lock(&c->pool_lock);
	while (!c->stop) {
		if (!c->reclaim_wanted && retry) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += RECLAIM_RETRY_MS * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&c->reclaim_cond, &c->pool_lock,
					       &ts);
		} else if (!c->reclaim_wanted) {
			pthread_cond_wait(&c->reclaim_cond, &c->pool_lock);
		}
		if (c->stop)
			break;
		if (!c->reclaim_wanted && !retry)
			continue; /* spurious wake-up */
		c->reclaim_wanted = false;
		retry = false;
		cache_stat_add(&c->reclaim_runs, 1);
		while (!c->stop && live_pages_locked(c) > c->low_pages) {
			uint64_t excess = live_pages_locked(c) - c->low_pages,
				 n;

			pthread_mutex_unlock(&c->pool_lock);
			n = cache_reclaim(c, excess);
			pthread_mutex_lock(&c->pool_lock);
			if (!n) {
				/* Everything left is under I/O: try again
				 * shortly rather than wait for a new kick. */
				retry = true;
				break;
			}
		}
	}
	pthread_mutex_unlock(&c->pool_lock);
	cache_thread_offline();
	return NULL;
}

int cache_reclaimer_start(struct cache *c)
{
	int rc;

	if (c->manual_reclaim)
		return 0;
	rc = -pthread_create(&c->reclaimer, NULL, reclaimer_main, c);
	if (!rc)
		c->reclaimer_started = true;
	return rc;
}

void cache_reclaimer_stop(struct cache *c)
{
	if (!c->reclaimer_started)
		return;
	pthread_mutex_lock(&c->pool_lock);
	c->stop = true;
	pthread_cond_signal(&c->reclaim_cond);
	pthread_mutex_unlock(&c->pool_lock);
	pthread_join(c->reclaimer, NULL);
	c->reclaimer_started = false;
}

/* ---------------------------------------------------------------------- */

int cache_ghost_init(struct cache *c, unsigned int entries)
{
	unsigned int sets = 1;

	while (sets * GHOST_WAYS < entries)
		sets <<= 1;
	c->ghost = calloc((size_t)sets * GHOST_WAYS, sizeof(*c->ghost));
	if (!c->ghost)
		return -ENOMEM;
	c->ghost_sets = sets;
	c->ghost_clock = 0;
	c->ghost_any = false;
	return -pthread_mutex_init(&c->ghost_lock, NULL);
}

void cache_ghost_destroy(struct cache *c)
{
	pthread_mutex_destroy(&c->ghost_lock);
	free(c->ghost);
	c->ghost = NULL;
}

static struct cache_ghost_entry *ghost_set(struct cache *c, uint64_t mid,
					   uint64_t index)
{
	uint64_t h = (mid * UINT64_C(0x9e3779b97f4a7c15)) ^
		     (index * UINT64_C(0xc2b2ae3d27d4eb4f));

	h ^= h >> 29;
	return &c->ghost[(h & (c->ghost_sets - 1)) * GHOST_WAYS];
}

void cache_ghost_add(struct cache *c, uint64_t mid, uint64_t index)
{
	struct cache_ghost_entry *set = ghost_set(c, mid, index), *slot = NULL;

	pthread_mutex_lock(&c->ghost_lock);
	for (unsigned int w = 0; w < GHOST_WAYS; w++) {
		if (set[w].mid == mid && set[w].index == index) {
			pthread_mutex_unlock(&c->ghost_lock);
			return;
		}
		if (!slot && !set[w].mid)
			slot = &set[w];
	}
	if (!slot)
		slot = &set[c->ghost_clock++ % GHOST_WAYS];
	slot->mid = mid;
	slot->index = index;
	__atomic_store_n(&c->ghost_any, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->ghost_lock);
}

bool cache_ghost_test_clear(struct cache_mapping *m, uint64_t index)
{
	struct cache *c = m->cache;
	struct cache_ghost_entry *set = ghost_set(c, m->mid, index);
	bool hit = false;

	/* Nothing evicted yet (a cache that has not filled): no entry to
	 * find.  A fresh daemon's random misses would otherwise each fault
	 * in a page of the table (calloc()ed, untouched) and take the lock:
	 * 11 % of its CPU time over its first 1000 random 8 KiB reads. */
	if (!__atomic_load_n(&c->ghost_any, __ATOMIC_RELAXED))
		return false;
	pthread_mutex_lock(&c->ghost_lock);
	for (unsigned int w = 0; w < GHOST_WAYS; w++) {
		if (set[w].mid == m->mid && set[w].index == index) {
			set[w].mid = 0;
			hit = true;
			break;
		}
	}
	pthread_mutex_unlock(&c->ghost_lock);
	if (hit) {
		cache_stat_add(&m->thrash, 1);
		cache_stat_add(&c->thrash, 1);
	}
	return hit;
}
