/* cache.c - the global cache object, reader threads and counters.
 *
 * RCU flavour: liburcu's default (urcu-memb) with lazy registration.
 * cache_thread_online() registers a thread the first time it is called
 * there and installs a pthread key whose destructor unregisters it at
 * thread exit; later calls cost one thread-local load.  urcu-bp would
 * register by itself, but every rcu_read_lock() then checks registration
 * too, and its grace periods are slower; docs/benchmarks.md has the
 * read-side figures of both.
 *
 * Counters: cache_count_hit() is on the hit path, so it must not write a
 * line other threads write.  Each online thread owns one of the first
 * CACHE_SHARED_SLOT slots of every mapping (a 64-byte line per slot) and
 * updates it with a relaxed load and store, no read-modify-write; threads
 * beyond that, and threads that never came online, share the last slot
 * with relaxed atomic adds.  A slot is handed to a new thread only after
 * the old one released it under slot_lock, which orders the two owners'
 * accesses.  cache_mapping_stats() sums the slots with relaxed loads.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"

static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t slot_owned; /* bit i: slot i has an owner; under slot_lock */

static __thread bool tls_online;
static __thread int tls_slot = CACHE_SHARED_SLOT;

static void thread_exit(void *arg)
{
	(void)arg;
	cache_thread_offline();
}

static void thread_key_create(void)
{
	int rc = pthread_key_create(&thread_key, thread_exit);

	assert(!rc);
	(void)rc;
}

void cache_thread_online(void)
{
	if (tls_online)
		return;
	pthread_once(&thread_key_once, thread_key_create);
	rcu_register_thread();
	tls_online = true;
	/* Any non-NULL value makes the destructor run at thread exit. */
	pthread_setspecific(thread_key, &tls_online);

	pthread_mutex_lock(&slot_lock);
	for (int i = 0; i < CACHE_SHARED_SLOT; i++) {
		if (!(slot_owned & (UINT32_C(1) << i))) {
			slot_owned |= UINT32_C(1) << i;
			tls_slot = i;
			break;
		}
	}
	pthread_mutex_unlock(&slot_lock);
}

void cache_thread_offline(void)
{
	if (!tls_online)
		return;
	pthread_setspecific(thread_key, NULL);
	if (tls_slot != CACHE_SHARED_SLOT) {
		pthread_mutex_lock(&slot_lock);
		slot_owned &= ~(UINT32_C(1) << tls_slot);
		pthread_mutex_unlock(&slot_lock);
		tls_slot = CACHE_SHARED_SLOT;
	}
	rcu_unregister_thread();
	tls_online = false;
}

static inline void slot_add(uint64_t *ctr, uint64_t n, bool owned)
{
	if (owned)
		__atomic_store_n(ctr,
				 __atomic_load_n(ctr, __ATOMIC_RELAXED) + n,
				 __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(ctr, n, __ATOMIC_RELAXED);
}

void cache_count_hit(struct cache_mapping *m, uint64_t pages, uint64_t bytes)
{
	int s = tls_slot;
	struct cache_counter_slot *slot = &m->slots[s];

	slot_add(&slot->hits, pages, s != CACHE_SHARED_SLOT);
	slot_add(&slot->hit_bytes, bytes, s != CACHE_SHARED_SLOT);
}

void cache_count_miss(struct cache_mapping *m, uint64_t pages)
{
	int s = tls_slot;

	slot_add(&m->slots[s].misses, pages, s != CACHE_SHARED_SLOT);
}

void cache_mapping_stats(struct cache_mapping *m,
			 struct cache_mapping_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (int i = 0; i < CACHE_COUNTER_SLOTS; i++) {
		st->hits += cache_stat_read(&m->slots[i].hits);
		st->hit_bytes += cache_stat_read(&m->slots[i].hit_bytes);
		st->misses += cache_stat_read(&m->slots[i].misses);
	}
	st->cached_pages = cache_stat_read(&m->tree.data);
	st->history_pages = cache_stat_read(&m->tree.history);
	st->tree_bytes =
		cache_stat_read(&m->tree.nodes) * sizeof(struct cache_node);
	st->inserted = cache_stat_read(&m->inserted);
	st->prefetched = cache_stat_read(&m->prefetched);
	st->evicted = cache_stat_read(&m->evicted);
	st->waste = cache_stat_read(&m->waste);
	st->thrash = cache_stat_read(&m->thrash);
	st->errors = cache_stat_read(&m->errors);
	st->invalidated = cache_stat_read(&m->invalidated);
	st->to_history = cache_stat_read(&m->to_history);
	st->history_trimmed = cache_stat_read(&m->history_trimmed);
	st->enospc = cache_stat_read(&m->enospc);
}

uint64_t cache_mapping_waste(const struct cache_mapping *m)
{
	return cache_stat_read(&m->waste);
}

/* ---------------------------------------------------------------------- */

static int check_config(const struct cache_config *cfg, uint64_t *pages,
			unsigned int *high, unsigned int *low)
{
	uint64_t per_page = CACHE_PAGE_SIZE + sizeof(struct cache_page);

	*pages = cfg->budget_bytes / per_page;
	*high = cfg->high_pct ? cfg->high_pct : 95;
	*low = cfg->low_pct ? cfg->low_pct : 90;
	if (cfg->budget_bytes < cfg->min_bytes ||
	    *pages < CACHE_MIN_BUDGET_PAGES)
		return -EINVAL;
	if (*high > 100 || *low >= *high || cfg->small_pct >= 100)
		return -EINVAL;
	return 0;
}

int cache_create(const struct cache_config *cfg, struct cache **out)
{
	unsigned int high, low, ghost;
	struct cache *c;
	uint64_t pages;
	int rc;

	rc = check_config(cfg, &pages, &high, &low);
	if (rc)
		return rc;
	c = aligned_alloc(64, sizeof(*c));
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->budget_pages = pages;
	c->high_pages = pages * high / 100;
	c->low_pages = pages * low / 100;
	c->high_pct = high;
	c->low_pct = low;
	c->min_pages =
		cfg->min_bytes / (CACHE_PAGE_SIZE + sizeof(struct cache_page));
	if (c->min_pages < CACHE_MIN_BUDGET_PAGES)
		c->min_pages = CACHE_MIN_BUDGET_PAGES;
	c->small_pct = cfg->small_pct ? cfg->small_pct : 10;
	c->alloc_wait_ms = cfg->alloc_wait_ms ? cfg->alloc_wait_ms : 100;
	c->manual_reclaim = cfg->manual_reclaim;
	c->history_max = cfg->history_max ? cfg->history_max : 262144;
	CDS_INIT_LIST_HEAD(&c->small);
	CDS_INIT_LIST_HEAD(&c->main);
	CDS_INIT_LIST_HEAD(&c->mappings);

	rc = cache_pool_init(c);
	if (rc)
		goto out_free_cache;
	rc = -pthread_mutex_init(&c->lru_lock, NULL);
	if (rc)
		goto out_destroy_pool;
	rc = -pthread_mutex_init(&c->mappings_lock, NULL);
	if (rc)
		goto out_destroy_lru;
	ghost = cfg->ghost_entries ? cfg->ghost_entries : pages / 4;
	if (ghost < 64)
		ghost = 64;
	rc = cache_ghost_init(c, ghost);
	if (rc)
		goto out_destroy_mappings;
	for (int i = 0; i < CACHE_WAIT_QUEUES; i++) {
		pthread_mutex_init(&c->waitq[i].lock, NULL);
		pthread_cond_init(&c->waitq[i].cond, NULL);
	}
	/* The first chunk of pages and of tree nodes faulted in now, at the
	 * start, not by the first reads (docs/design.md, "Memory faulted in
	 * at the start"). */
	cache_pool_prefault(c);
	(void)cache_nodes_prefault();
	rc = cache_pool_grace_start(c);
	if (rc)
		goto out_destroy_queues;
	rc = cache_reclaimer_start(c);
	if (rc)
		goto out_stop_grace;
	*out = c;
	return 0;

out_stop_grace:
	cache_pool_grace_stop(c);
out_destroy_queues:
	for (int i = 0; i < CACHE_WAIT_QUEUES; i++) {
		pthread_cond_destroy(&c->waitq[i].cond);
		pthread_mutex_destroy(&c->waitq[i].lock);
	}
	cache_ghost_destroy(c);
out_destroy_mappings:
	pthread_mutex_destroy(&c->mappings_lock);
out_destroy_lru:
	pthread_mutex_destroy(&c->lru_lock);
out_destroy_pool:
	cache_pool_destroy(c);
out_free_cache:
	free(c);
	return rc;
}

int cache_destroy(struct cache *c)
{
	pthread_mutex_lock(&c->mappings_lock);
	if (c->nr_mappings) {
		pthread_mutex_unlock(&c->mappings_lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&c->mappings_lock);

	cache_reclaimer_stop(c);
	/* Every page and node freed so far is waiting for a grace period:
	 * let the grace thread and the tree's callbacks finish before the
	 * chunks go. */
	cache_pool_grace_stop(c);
	rcu_barrier();
	assert(!c->nr_small && !c->nr_main);
	for (int i = 0; i < CACHE_WAIT_QUEUES; i++) {
		pthread_cond_destroy(&c->waitq[i].cond);
		pthread_mutex_destroy(&c->waitq[i].lock);
	}
	cache_ghost_destroy(c);
	pthread_mutex_destroy(&c->mappings_lock);
	pthread_mutex_destroy(&c->lru_lock);
	cache_pool_destroy(c);
	free(c);
	return 0;
}

uint64_t cache_budget_pages(const struct cache *c)
{
	return cache_budget_read(&c->budget_pages);
}

void cache_stats(struct cache *c, struct cache_stats *st)
{
	struct cds_list_head *pos;

	memset(st, 0, sizeof(*st));
	st->budget_bytes =
		cache_budget_read(&c->budget_pages) * CACHE_PAGE_SIZE;
	st->high_bytes = cache_budget_read(&c->high_pages) * CACHE_PAGE_SIZE;
	st->low_bytes = cache_budget_read(&c->low_pages) * CACHE_PAGE_SIZE;
	st->page_overhead_bytes = sizeof(struct cache_page);
	st->used_bytes = cache_stat_read(&c->used) * CACHE_PAGE_SIZE;
	st->pending_free_bytes = cache_stat_read(&c->pending) * CACHE_PAGE_SIZE;
	st->evictions = cache_stat_read(&c->evictions);
	st->waste = cache_stat_read(&c->waste);
	st->thrash = cache_stat_read(&c->thrash);
	st->promotions = cache_stat_read(&c->promotions);
	st->enospc = cache_stat_read(&c->enospc);
	st->reclaim_runs = cache_stat_read(&c->reclaim_runs);
	st->ghost_entries = (uint64_t)c->ghost_sets * 4;

	pthread_mutex_lock(&c->pool_lock);
	st->alloc_waits = c->alloc_waits;
	pthread_mutex_unlock(&c->pool_lock);
	pthread_mutex_lock(&c->lru_lock);
	st->small_pages = c->nr_small;
	st->main_pages = c->nr_main;
	pthread_mutex_unlock(&c->lru_lock);

	pthread_mutex_lock(&c->mappings_lock);
	st->mappings = c->nr_mappings;
	/* Not cds_list_for_each_entry(): its end test forms a (misaligned)
	 * mapping pointer from the list head, which UBSan rejects. */
	cds_list_for_each(pos, &c->mappings)
	{
		struct cache_mapping *m =
			caa_container_of(pos, struct cache_mapping, link);
		struct cache_mapping_stats ms;

		cache_mapping_stats(m, &ms);
		st->tree_bytes += ms.tree_bytes;
		st->cached_pages += ms.cached_pages;
		st->history_pages += ms.history_pages;
		st->hits += ms.hits;
		st->misses += ms.misses;
	}
	pthread_mutex_unlock(&c->mappings_lock);
}
