/* page.c - page descriptor state, references, hashed wait queues.
 *
 * State lives in one __atomic 16-bit word (struct cache_page.flags):
 *
 *   insert:    LOCKED [| READAHEAD]
 *   complete:  LOCKED -> UPTODATE               (0, not invalidated)
 *              LOCKED -> (nothing)              (0, INVALID already set)
 *              LOCKED -> ERROR, then REMOVED    (error)
 *   removal:   | REMOVED [| INVALID]            (mapping lock held)
 *
 * complete() changes the word with one compare-and-swap, invalidation with
 * one fetch-or, so they are ordered: either the page was UPTODATE before
 * it was invalidated (a reader already inside its RCU section may use it;
 * waiters get -EAGAIN), or the completion sees INVALID and never sets
 * UPTODATE.  That is the "I/O completing after invalidation never becomes
 * data" rule.
 *
 * Waiting: a waiter sleeps on the condition variable of the hashed queue
 * its page maps to (CACHE_WAIT_QUEUES per cache), re-checking the page
 * state under the queue's mutex; complete() changes the state first and
 * then broadcasts under the same mutex, so no wake-up is lost.  Other
 * pages hashing to the same queue cause spurious wake-ups only.
 *
 * Cancellation is a Dekker handshake between the waiter (stores wc->queue,
 * then loads wc->cancelled) and the canceller (stores cancelled, then loads
 * queue), both seq_cst: at least one sees the other, so either the waiter
 * notices before sleeping or the canceller broadcasts on its queue.
 */
#include <assert.h>
#include <errno.h>

#include "cache_internal.h"

struct cache_waitq *cache_page_waitq(const struct cache_page *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * UINT64_C(0x9e3779b97f4a7c15);

	return &p->mapping->cache->waitq[h >> 56 & (CACHE_WAIT_QUEUES - 1)];
}

void cache_page_wake(struct cache_page *p)
{
	struct cache_waitq *q = cache_page_waitq(p);

	pthread_mutex_lock(&q->lock);
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

bool cache_page_uptodate(const struct cache_page *p)
{
	return cache_page_flags(p) & CACHE_PG_UPTODATE;
}

bool cache_page_locked(const struct cache_page *p)
{
	return cache_page_flags(p) & CACHE_PG_LOCKED;
}

void *cache_page_data(const struct cache_page *p)
{
	return p->data;
}

uint64_t cache_page_index(const struct cache_page *p)
{
	return p->index;
}

void cache_page_set_len(struct cache_page *p, unsigned int len)
{
	assert(cache_page_flags(p) & CACHE_PG_LOCKED);
	p->len = (uint16_t)(len < CACHE_PAGE_SIZE ? len : CACHE_PAGE_SIZE);
}

unsigned int cache_page_len(const struct cache_page *p)
{
	return p->len;
}

void cache_page_mark_accessed(struct cache_page *p)
{
	/* Single-byte stores, each only when needed: after the first use a
	 * hot page costs two loads and no store. */
	if (__atomic_load_n(&p->fresh, __ATOMIC_RELAXED) != CACHE_FRESH_USED) {
		__atomic_store_n(&p->fresh, CACHE_FRESH_USED, __ATOMIC_RELAXED);
		return;
	}
	if (!__atomic_load_n(&p->referenced, __ATOMIC_RELAXED))
		__atomic_store_n(&p->referenced, 1, __ATOMIC_RELAXED);
}

bool cache_page_test_clear_readahead(struct cache_page *p)
{
	uint16_t old;

	if (!(__atomic_load_n(&p->flags, __ATOMIC_RELAXED) &
	      CACHE_PG_READAHEAD))
		return false;
	old = __atomic_fetch_and(&p->flags, (uint16_t)~CACHE_PG_READAHEAD,
				 __ATOMIC_RELAXED);
	return old & CACHE_PG_READAHEAD;
}

bool cache_page_tryget(struct cache_page *p)
{
	uint32_t v = __atomic_load_n(&p->refcount, __ATOMIC_RELAXED);

	do {
		if (!v)
			return false;
	} while (!__atomic_compare_exchange_n(&p->refcount, &v, v + 1, true,
					      __ATOMIC_ACQUIRE,
					      __ATOMIC_RELAXED));
	return true;
}

void cache_page_put(struct cache_page *p)
{
	uint32_t v = __atomic_sub_fetch(&p->refcount, 1, __ATOMIC_ACQ_REL);

	assert(v != UINT32_MAX);
	if (!v)
		cache_pool_free_rcu(p);
}

void cache_page_remove_locked(struct cache_mapping *m, struct cache_page *p,
			      uint16_t flags, void *replacement)
{
	struct cache *c = m->cache;
	int rc;

	afs_assert_held(&m->lock);
	assert(!(cache_page_flags(p) & CACHE_PG_REMOVED));
	assert(cache_tree_lookup_rcu(&m->tree, p->index) == p);
	__atomic_fetch_or(&p->flags, (uint16_t)(CACHE_PG_REMOVED | flags),
			  __ATOMIC_ACQ_REL);
	/* Replacing an existing slot allocates nothing: cannot fail. */
	rc = cache_tree_store(&m->tree, p->index, replacement);
	assert(!rc);
	(void)rc;
	/* Off its queue, unless the evictor has already isolated it. */
	pthread_mutex_lock(&c->lru_lock);
	if (p->queue != CACHE_QUEUE_NONE)
		cache_lru_del_locked(c, p);
	pthread_mutex_unlock(&c->lru_lock);
	cache_page_put(p); /* the tree's reference */
}

void cache_page_complete(struct cache_page *p, int err)
{
	uint16_t old = __atomic_load_n(&p->flags, __ATOMIC_RELAXED), new;
	struct cache_mapping *m = p->mapping;

	assert(old & CACHE_PG_LOCKED);
	if (err > 0)
		err = -err; /* tolerate a positive errno */
	if (err < INT16_MIN)
		err = -EIO;
	if (err)
		p->err = (int16_t)err; /* published by the release below */
	do {
		new = old & ~CACHE_PG_LOCKED;
		if (err)
			new |= CACHE_PG_ERROR;
		else if (!(old & CACHE_PG_INVALID))
			new |= CACHE_PG_UPTODATE;
	} while (!__atomic_compare_exchange_n(&p->flags, &old, new, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	if (err) {
		/* Never data: out of the tree before anyone can use it (lookups
		 * already skip ERROR pages). */
		pthread_mutex_lock(&m->lock);
		if (!(cache_page_flags(p) & CACHE_PG_REMOVED))
			cache_page_remove_locked(m, p, 0, NULL);
		/* -EAGAIN is a read never done (a cancelled or refused
		 * window: look again), not an I/O error. */
		if (err != -EAGAIN)
			cache_stat_add(&m->errors, 1);
		pthread_mutex_unlock(&m->lock);
	}
	cache_page_wake(p);
	cache_page_put(p); /* the inserter's reference */
}

static int wait_result(const struct cache_page *p, uint16_t f)
{
	if (f & CACHE_PG_ERROR)
		return p->err;
	if (f & CACHE_PG_INVALID)
		return -EAGAIN;
	if (f & CACHE_PG_UPTODATE)
		return 0;
	return -EAGAIN;
}

void cache_wait_cancel_init(struct cache_wait_cancel *wc)
{
	__atomic_store_n(&wc->cancelled, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&wc->queue, NULL, __ATOMIC_RELAXED);
}

void cache_wait_cancel(struct cache_wait_cancel *wc)
{
	struct cache_waitq *q;

	__atomic_store_n(&wc->cancelled, 1, __ATOMIC_SEQ_CST);
	q = __atomic_load_n(&wc->queue, __ATOMIC_SEQ_CST);
	if (q) {
		/* The waiter holds q->lock until it sleeps: it cannot miss
		 * this broadcast. */
		pthread_mutex_lock(&q->lock);
		pthread_cond_broadcast(&q->cond);
		pthread_mutex_unlock(&q->lock);
	}
}

int cache_page_wait(struct cache_page *p, struct cache_wait_cancel *wc)
{
	uint16_t f = cache_page_flags(p);
	struct cache_waitq *q;
	int rc = 1;

	afs_assert_no_rcu();
	if (!(f & CACHE_PG_LOCKED))
		return wait_result(p, f);
	if (wc && __atomic_load_n(&wc->cancelled, __ATOMIC_SEQ_CST))
		return -EINTR;
	q = cache_page_waitq(p);
	pthread_mutex_lock(&q->lock);
	if (wc)
		__atomic_store_n(&wc->queue, q, __ATOMIC_SEQ_CST);
	for (;;) {
		f = cache_page_flags(p);
		if (!(f & CACHE_PG_LOCKED))
			break;
		if (wc && __atomic_load_n(&wc->cancelled, __ATOMIC_SEQ_CST)) {
			rc = -EINTR;
			break;
		}
		pthread_cond_wait(&q->cond, &q->lock);
	}
	if (wc)
		__atomic_store_n(&wc->queue, NULL, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&q->lock);
	return rc == 1 ? wait_result(p, f) : rc;
}
