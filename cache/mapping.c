/* mapping.c - one backing inode's pages: life cycle, filling, lookups,
 * invalidation, per-file counters.
 *
 * Two counts keep a mapping alive.  users: the callers' references
 * (cache_mapping_get/put); the last put empties the tree.  refs: the
 * memory: one for all users together plus one per page descriptor not yet
 * freed, because a page whose I/O is still in flight, or whose grace period
 * has not ended, still points to its mapping (its lock, its counters, its
 * cache).  The memory goes when refs reaches zero, in the last page's RCU
 * callback or in the last put.
 *
 * Every tree change happens under m->lock; the RCU read side
 * (cache_lookup_rcu() and the scans) never takes it.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"
#include "cache/base/count.h"

/* Most pages one inserter evicts itself at the hard limit. */
#define RECLAIM_DIRECT_MAX 64

int cache_mapping_create(struct cache *c, struct cache_mapping **out)
{
	struct cache_mapping *m;
	int rc;

	m = aligned_alloc(64, sizeof(*m));
	if (!m)
		return -ENOMEM;
	memset(m, 0, sizeof(*m));
	rc = -pthread_mutex_init(&m->lock, NULL);
	if (rc) {
		free(m);
		return rc;
	}
	m->cache = c;
	cache_tree_init(&m->tree);
	m->users = 1;
	m->refs = 1;
	pthread_mutex_lock(&c->mappings_lock);
	m->mid = ++c->next_mid;
	cds_list_add_tail(&m->link, &c->mappings);
	c->nr_mappings++;
	pthread_mutex_unlock(&c->mappings_lock);
	*out = m;
	return 0;
}

void cache_mapping_get(struct cache_mapping *m)
{
	uint32_t v = __atomic_fetch_add(&m->users, 1, __ATOMIC_RELAXED);

	assert(v);
	(void)v;
}

void cache_mapping_ref_put(struct cache_mapping *m)
{
	if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL))
		return;
	/* No user, no page: nothing can reach m any more. */
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/*
 * Remove every entry in [first, last]; data pages get @page_flags too
 * (CACHE_PG_INVALID for invalidation).  m->lock held.
 * Return: the number of data pages removed.
 */
static uint64_t drop_range_locked(struct cache_mapping *m, uint64_t first,
				  uint64_t last, uint16_t page_flags)
{
	uint64_t pos = first, pages = 0;

	afs_assert_held(&m->lock);
	while ((pos = cache_tree_next_entry_rcu(&m->tree, pos, last, false)) !=
	       UINT64_MAX) {
		void *e = cache_tree_lookup_rcu(&m->tree, pos);

		if (cache_entry_is_page(e)) {
			cache_page_remove_locked(m, e, page_flags, NULL);
			pages++;
		} else {
			cache_tree_store(&m->tree, pos, NULL);
		}
		if (pos == last)
			break;
		pos++;
	}
	return pages;
}

void cache_mapping_put(struct cache_mapping *m)
{
	struct cache *c = m->cache;
	uint64_t n;

	if (__atomic_sub_fetch(&m->users, 1, __ATOMIC_ACQ_REL))
		return;
	pthread_mutex_lock(&m->lock);
#ifdef AHEADFS_DEBUG
	/* Whole-tree check, once per mapping life (CI builds). */
	if (cache_tree_check(&m->tree))
		abort();
#endif
	n = drop_range_locked(m, 0, UINT64_MAX, CACHE_PG_INVALID);
	cache_stat_add(&m->invalidated, n);
	assert(!m->tree.root);
	pthread_mutex_unlock(&m->lock);

	pthread_mutex_lock(&c->mappings_lock);
	cds_list_del(&m->link);
	c->nr_mappings--;
	pthread_mutex_unlock(&c->mappings_lock);
	cache_mapping_ref_put(m);
}

uint64_t cache_mapping_invalidate(struct cache_mapping *m, uint64_t first,
				  uint64_t last)
{
	uint64_t n;

	if (first > last)
		return 0;
	pthread_mutex_lock(&m->lock);
	n = drop_range_locked(m, first, last, CACHE_PG_INVALID);
	cache_stat_add(&m->invalidated, n);
	pthread_mutex_unlock(&m->lock);
	return n;
}

/*
 * Keep the mapping's history within history_max: delete history entries
 * from the lowest index up until a quarter of the limit is free.  The
 * context readahead only scans back a window's length from where streams
 * read now, so the oldest offsets of a sequential read matter least.
 * m->lock held.
 */
static void trim_history_locked(struct cache_mapping *m)
{
	uint64_t max = m->cache->history_max, target = max - max / 4, pos = 0;
	uint64_t trimmed = 0;

	afs_assert_held(&m->lock);
	if (m->tree.history <= max)
		return;
	while (m->tree.history > target &&
	       (pos = cache_tree_next_entry_rcu(&m->tree, pos, UINT64_MAX,
						false)) != UINT64_MAX) {
		if (cache_tree_lookup_rcu(&m->tree, pos) == CACHE_HISTORY) {
			cache_tree_store(&m->tree, pos, NULL);
			trimmed++;
		}
		pos++;
	}
	cache_stat_add(&m->history_trimmed, trimmed);
}

/*
 * [@first, @last] to history entries: every UPTODATE page (not LOCKED)
 * dropped, and with @holes every empty slot filled (a failed node
 * allocation ends the filling: history is a hint).  m->lock held.
 * Return: the entries that became history.
 */
static uint64_t to_history_locked(struct cache_mapping *m, uint64_t first,
				  uint64_t last, bool holes)
{
	uint64_t pos = first, n = 0;

	afs_assert_held(&m->lock);
	for (;;) {
		struct cache_page *p;

		if (!holes)
			pos = cache_tree_next_entry_rcu(&m->tree, pos, last,
							true);
		if (pos == UINT64_MAX || pos > last)
			break;
		p = cache_tree_lookup_rcu(&m->tree, pos);
		if (!p) {
			if (cache_tree_store(&m->tree, pos, CACHE_HISTORY))
				holes = false; /* no memory: pages only */
			else
				n++;
		} else if (cache_entry_is_page(p) &&
			   (cache_page_flags(p) &
			    (CACHE_PG_LOCKED | CACHE_PG_UPTODATE)) ==
				   CACHE_PG_UPTODATE) {
			cache_page_remove_locked(m, p, 0, CACHE_HISTORY);
			n++;
		}
		if (pos == last)
			break;
		pos++;
	}
	cache_stat_add(&m->to_history, n);
	trim_history_locked(m);
	return n;
}

static uint64_t to_history(struct cache_mapping *m, uint64_t first,
			   uint64_t last, bool holes)
{
	uint64_t n;

	if (first > last || (holes && last >= CACHE_INDEX_LIMIT))
		return 0;
	pthread_mutex_lock(&m->lock);
	n = to_history_locked(m, first, last, holes);
	pthread_mutex_unlock(&m->lock);
	return n;
}

uint64_t cache_page_drop_to_history(struct cache_mapping *m, uint64_t first,
				    uint64_t last)
{
	return to_history(m, first, last, false);
}

uint64_t cache_note_given(struct cache_mapping *m, uint64_t first,
			  uint64_t last)
{
	return to_history(m, first, last, true);
}

/* ---------------------------------------------------------------------- */
/* RCU read side                                                           */

struct cache_page *cache_lookup_rcu(struct cache_mapping *m, uint64_t index)
{
	struct cache_page *p;

	afs_assert_rcu();
	p = cache_tree_lookup_rcu(&m->tree, index);
	if (!cache_entry_is_page(p))
		return NULL;
	if (cache_page_flags(p) & (CACHE_PG_ERROR | CACHE_PG_REMOVED))
		return NULL;
	return p;
}

bool cache_history_rcu(struct cache_mapping *m, uint64_t index)
{
	afs_assert_rcu();
	return index < CACHE_INDEX_LIMIT &&
	       cache_tree_lookup_rcu(&m->tree, index) == CACHE_HISTORY;
}

uint64_t cache_next_hole_rcu(struct cache_mapping *m, uint64_t index,
			     uint64_t max_scan)
{
	afs_assert_rcu();
	return cache_tree_next_hole_rcu(&m->tree, index, max_scan);
}

uint64_t cache_prev_hole_rcu(struct cache_mapping *m, uint64_t index,
			     uint64_t max_scan)
{
	afs_assert_rcu();
	return cache_tree_prev_hole_rcu(&m->tree, index, max_scan);
}

unsigned int cache_gang_lookup_rcu(struct cache_mapping *m, uint64_t first,
				   uint64_t last, struct cache_page **pages,
				   unsigned int max)
{
	unsigned int nr, kept = 0;

	afs_assert_rcu();
	if (first > last)
		return 0;
	nr = cache_tree_gang_rcu(&m->tree, first, last, (void **)pages, max);
	for (unsigned int i = 0; i < nr; i++) {
		if (cache_page_flags(pages[i]) &
		    (CACHE_PG_ERROR | CACHE_PG_REMOVED))
			continue;
		pages[kept++] = pages[i];
	}
	return kept;
}

/* ---------------------------------------------------------------------- */
/* Filling                                                                 */

/* Indexes of [@start, @start + @nr) without a data page (@keep_history:
 * without any entry). */
static uint64_t count_missing(struct cache_mapping *m, uint64_t start,
			      uint64_t nr, bool keep_history)
{
	uint64_t missing = 0, end = start + nr, pos = start;

	rcu_read_lock();
	while (keep_history && pos < end) {
		uint64_t next = cache_tree_next_entry_rcu(&m->tree, pos,
							  end - 1, false);

		if (next == UINT64_MAX)
			next = end;
		missing += next - pos;
		pos = next + 1;
	}
	while (!keep_history && pos < end) {
		uint64_t hole =
			cache_tree_next_hole_rcu(&m->tree, pos, end - pos);
		uint64_t next;

		if (hole >= end)
			break;
		/* Holes run until the next data entry. */
		next = cache_tree_next_entry_rcu(&m->tree, hole, end - 1, true);
		if (next == UINT64_MAX)
			next = end;
		missing += next - hole;
		pos = next;
	}
	rcu_read_unlock();
	return missing;
}

/* Fresh descriptor for index @i of @m.  Fields readers use are set before
 * the tree's release store publishes it. */
static void page_init(struct cache_mapping *m, struct cache_page *p, uint64_t i,
		      bool mark, bool prefetch)
{
	p->index = i;
	p->mapping = m;
	p->refcount = 2; /* the tree's and the caller's */
	p->flags = CACHE_PG_LOCKED | (mark ? CACHE_PG_READAHEAD : 0);
	p->referenced = 0;
	p->fresh = prefetch ? CACHE_FRESH_PREFETCH : CACHE_FRESH_DEMAND;
	p->err = 0;
	p->queue = CACHE_QUEUE_NONE;
	p->len = CACHE_PAGE_SIZE;
}

/*
 * Get up to @want pages; at the hard limit, evict and wait (bounded) for
 * the grace period to return memory -- unless the caller is an RCU reader,
 * who would hold that grace period up itself.
 */
static unsigned int alloc_pages(struct cache *c, unsigned int want,
				struct cache_page **pages)
{
	unsigned int got = cache_pool_alloc(c, want, pages);
	uint64_t evicted;

	if (got || !want)
		return got;
	cache_pool_kick_reclaimer(c);
	if (rcu_read_ongoing())
		return 0;
	/* Direct reclaim: do not rely on the reclaimer thread alone.  Wait
	 * for what was evicted to come back (a grace period), or for at least
	 * one page if nothing could be evicted here. */
	evicted = cache_reclaim(
		c, want < RECLAIM_DIRECT_MAX ? want : RECLAIM_DIRECT_MAX);
	if (!cache_pool_wait(c, evicted ? (unsigned int)evicted : 1,
			     c->alloc_wait_ms))
		return 0;
	return cache_pool_alloc(c, want, pages);
}

int cache_insert_range(struct cache_mapping *m, uint64_t start, uint64_t nr,
		       uint64_t mark_index, unsigned int flags,
		       struct cache_page **pages, unsigned int *nr_out)
{
	struct cache *c = m->cache;
	bool prefetch = flags & CACHE_INSERT_PREFETCH;
	bool keep_history = flags & CACHE_INSERT_KEEP_HISTORY;
	unsigned int want, got, used = 0;
	uint64_t missing, end;
	int rc = 0;

	afs_assert_no_rcu();
	*nr_out = 0;
	if (!nr || start >= CACHE_INDEX_LIMIT ||
	    nr > CACHE_INDEX_LIMIT - start || nr > UINT32_MAX ||
	    (flags & ~(CACHE_INSERT_PREFETCH | CACHE_INSERT_KEEP_HISTORY)))
		return -EINVAL;
	end = start + nr;
	missing = count_missing(m, start, nr, keep_history);
	if (!missing)
		return 0;
	want = (unsigned int)missing;
	/* Borrow the tail of @pages for the allocation: the inserted pages
	 * are written from the front, never past the borrowed ones. */
	got = alloc_pages(c, want, pages + (nr - want));
	if (got < want) {
		cache_stat_add(&m->enospc, 1);
		cache_stat_add(&c->enospc, 1);
		if (!got)
			return -ENOSPC;
	}

	struct cache_page **spare = pages + (nr - want);
	unsigned int next_spare = 0;

	pthread_mutex_lock(&m->lock);
	for (uint64_t i = start; i < end && next_spare < got; i++) {
		void *e = cache_tree_lookup_rcu(&m->tree, i);
		struct cache_page *p;

		if (cache_entry_is_page(e)) {
			/* A failed page not yet removed by its completer is
			 * no data: replace it. */
			if (!(cache_page_flags(e) & CACHE_PG_ERROR))
				continue;
			cache_page_remove_locked(m, e, 0, NULL);
		} else if (e == CACHE_HISTORY && keep_history) {
			continue;
		}
		p = spare[next_spare];
		page_init(m, p, i, i == mark_index, prefetch);
		rc = cache_tree_store(&m->tree, i, p);
		if (rc)
			break;
		next_spare++;
		__atomic_fetch_add(&m->refs, 1, __ATOMIC_RELAXED);
		/* used == next_spare - 1 here and the unconsumed spares start
		 * at index nr - want + next_spare > used: no clobbering. */
		pages[used++] = p;
	}
	if (used) {
		pthread_mutex_lock(&c->lru_lock);
		for (unsigned int k = 0; k < used; k++)
			cache_lru_add_locked(c, pages[k]);
		pthread_mutex_unlock(&c->lru_lock);
	}
	pthread_mutex_unlock(&m->lock);

	cache_pool_free_now(c, spare + next_spare, got - next_spare);
	cache_stat_add(&m->inserted, used);
	if (prefetch)
		cache_stat_add(&m->prefetched, used);
	*nr_out = used;
	if (!used && rc)
		return rc;
	return 0;
}
