/* worker.c - the readahead worker pool.
 *
 * Two lists -- demand in arrival order, async in order of due time -- and
 * one slot per worker describing what it runs, all under pool->lock.  A
 * worker takes the head of the demand list if any, else of the async list,
 * records the item's (file, start, nr) in its
 * slot (the item itself may be freed by run()), drops the lock and runs it.
 *
 * Dedupe scans both lists and the slots, and an async item's place is found
 * by a walk from the head: O(queue_depth + workers) under the lock per
 * submit.  With the default depths (tens of items) that is shorter
 * than a hash lookup's cache misses; a pool configured with a very deep queue
 * pays for it on submit only, never on the hit path.
 *
 * Shutdown order (ra_pool_destroy()):
 *   1. under the lock: stopping = true (submits now fail -ESHUTDOWN), unhook
 *      the async list, wake every worker;
 *   2. without the lock: cancel(-ESHUTDOWN) each unhooked async item, which
 *      completes its pages, so no reader waits on a window nobody will read;
 *   3. workers keep taking demand items (readers wait on those) until the
 *      demand list is empty, then exit; items running finish normally;
 *   4. join, free.
 * A callback running during shutdown may still submit: it gets -ESHUTDOWN and
 * does the work inline, so nothing is lost and nothing is queued behind the
 * workers' exit.
 */
#include "worker.h"

#include "cache/base/debug.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POOL_MAX_WORKERS 64u
#define POOL_MAX_DEPTH 65536u

/* What one worker is running: the item may be gone, its range is kept. */
struct pool_slot {
	const void *file;
	uint64_t start;
	uint64_t nr;
	bool busy;
};

struct pool_list {
	struct ra_work *head;
	struct ra_work *tail;
	unsigned int len;
};

struct pool_worker {
	struct ra_pool *pool;
	pthread_t thread;
	unsigned int id;
};

struct ra_pool {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* items queued or stopping; protected by lock */
	struct pool_list q[RA_PRIO_NR]; /* protected by lock */
	struct pool_slot *slots; /* one per worker; protected by lock */
	bool stopping; /* protected by lock */
	struct ra_pool_stats st; /* counters; protected by lock */
	struct ra_pool_config cfg;
	struct pool_worker *workers;
	unsigned int nstarted;
};

static void list_push(struct pool_list *l, struct ra_work *w)
{
	w->next = NULL;
	if (l->tail)
		l->tail->next = w;
	else
		l->head = w;
	l->tail = w;
	l->len++;
}

/* Into @l, kept in order of due time: after every item due no later. */
static void list_insert_due(struct pool_list *l, struct ra_work *w)
{
	struct ra_work **pp = &l->head;

	if (l->tail && l->tail->due <= w->due) {
		list_push(l, w); /* the common case: due last */
		return;
	}
	while (*pp && (*pp)->due <= w->due)
		pp = &(*pp)->next;
	w->next = *pp;
	*pp = w;
	if (!w->next)
		l->tail = w;
	l->len++;
}

static uint64_t pool_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct ra_work *list_pop(struct pool_list *l)
{
	struct ra_work *w = l->head;

	if (!w)
		return NULL;
	l->head = w->next;
	if (!l->head)
		l->tail = NULL;
	l->len--;
	w->next = NULL;
	return w;
}

/* [start, start + nr) wholly inside [s2, s2 + n2)?  No overflow: indexes
 * are below 2^52 and windows far shorter. */
static bool range_covers(uint64_t s2, uint64_t n2, uint64_t start, uint64_t nr)
{
	return start >= s2 && start - s2 <= n2 && nr <= n2 - (start - s2);
}

/* Context: pool->lock held. */
static bool busy_locked(struct ra_pool *pool, const void *file, uint64_t start,
			uint64_t nr)
{
	afs_assert_held(&pool->lock);
	for (int p = 0; p < RA_PRIO_NR; p++)
		for (struct ra_work *w = pool->q[p].head; w; w = w->next)
			if (w->file == file &&
			    range_covers(w->start, w->nr, start, nr))
				return true;
	for (unsigned int i = 0; i < pool->cfg.workers; i++) {
		struct pool_slot *s = &pool->slots[i];

		if (s->busy && s->file == file &&
		    range_covers(s->start, s->nr, start, nr))
			return true;
	}
	return false;
}

static void *worker_main(void *arg)
{
	struct pool_worker *me = arg;
	struct ra_pool *pool = me->pool;
	struct pool_slot *slot = &pool->slots[me->id];
	char name[16];

	snprintf(name, sizeof(name), "afs-ra/%u", me->id);
	pthread_setname_np(pthread_self(), name);
	if (pool->cfg.thread_init)
		pool->cfg.thread_init(pool->cfg.thread_arg);

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct ra_work *w = list_pop(&pool->q[RA_PRIO_DEMAND]);

		if (!w) {
			w = list_pop(&pool->q[RA_PRIO_ASYNC]);
			if (w && w->timed && pool_now() > w->due)
				pool->st.late++;
		}
		if (!w) {
			if (pool->stopping)
				break;
			pthread_cond_wait(&pool->wake, &pool->lock);
			continue;
		}
		slot->file = w->file;
		slot->start = w->start;
		slot->nr = w->nr;
		slot->busy = true;
		pool->st.running++;
		pool->st.run[w->prio]++;
		pthread_mutex_unlock(&pool->lock);

		w->run(w); /* owns and frees w */

		pthread_mutex_lock(&pool->lock);
		slot->busy = false;
		pool->st.running--;
	}
	pthread_mutex_unlock(&pool->lock);

	if (pool->cfg.thread_exit)
		pool->cfg.thread_exit(pool->cfg.thread_arg);
	return NULL;
}

/* Stop and join the first pool->nstarted workers. */
static void pool_stop_workers(struct ra_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned int i = 0; i < pool->nstarted; i++)
		pthread_join(pool->workers[i].thread, NULL);
}

static void pool_free(struct ra_pool *pool)
{
	pthread_cond_destroy(&pool->wake);
	pthread_mutex_destroy(&pool->lock);
	free(pool->workers);
	free(pool->slots);
	free(pool);
}

int ra_pool_create(const struct ra_pool_config *cfg, struct ra_pool **out)
{
	struct ra_pool *pool;
	int rc;

	if (!cfg || !out || cfg->workers < 1 ||
	    cfg->workers > POOL_MAX_WORKERS || cfg->queue_depth < 1 ||
	    cfg->queue_depth > POOL_MAX_DEPTH)
		return -EINVAL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->cfg = *cfg;
	pool->st.workers = cfg->workers;
	pool->st.queue_depth = cfg->queue_depth;
	pool->slots = calloc(cfg->workers, sizeof(*pool->slots));
	pool->workers = calloc(cfg->workers, sizeof(*pool->workers));
	if (!pool->slots || !pool->workers) {
		rc = -ENOMEM;
		goto out_free_arrays;
	}
	rc = -pthread_mutex_init(&pool->lock, NULL);
	if (rc)
		goto out_free_arrays;
	rc = -pthread_cond_init(&pool->wake, NULL);
	if (rc)
		goto out_destroy_lock;

	for (unsigned int i = 0; i < cfg->workers; i++) {
		pool->workers[i].pool = pool;
		pool->workers[i].id = i;
		rc = -pthread_create(&pool->workers[i].thread, NULL,
				     worker_main, &pool->workers[i]);
		if (rc)
			goto out_stop_workers;
		pool->nstarted++;
	}
	*out = pool;
	return 0;

out_stop_workers:
	pool_stop_workers(pool);
	pool_free(pool);
	return rc;
out_destroy_lock:
	pthread_mutex_destroy(&pool->lock);
out_free_arrays:
	free(pool->workers);
	free(pool->slots);
	free(pool);
	return rc;
}

void ra_pool_destroy(struct ra_pool *pool)
{
	struct ra_work *async, *next;

	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	async = pool->q[RA_PRIO_ASYNC].head;
	pool->st.cancelled += pool->q[RA_PRIO_ASYNC].len;
	memset(&pool->q[RA_PRIO_ASYNC], 0, sizeof(pool->q[RA_PRIO_ASYNC]));
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);

	/* Complete the pages of every window nobody will read now. */
	for (struct ra_work *w = async; w; w = next) {
		next = w->next;
		w->next = NULL;
		w->cancel(w, -ESHUTDOWN);
	}
	/* Workers drain the demand list and what runs, then exit. */
	pool_stop_workers(pool);
	pool_free(pool);
}

int ra_pool_submit(struct ra_pool *pool, struct ra_work *w)
{
	struct pool_list *q;
	int rc = 0;

	if (!pool || !w || !w->run || !w->cancel || w->nr == 0 ||
	    (w->prio != RA_PRIO_DEMAND && w->prio != RA_PRIO_ASYNC))
		return -EINVAL;
	q = &pool->q[w->prio];
	pthread_mutex_lock(&pool->lock);
	if (pool->stopping) {
		rc = -ESHUTDOWN;
	} else if (w->file && busy_locked(pool, w->file, w->start, w->nr)) {
		pool->st.dropped_dup++;
		rc = -EEXIST;
	} else if (q->len >= pool->cfg.queue_depth) {
		pool->st.dropped_full[w->prio]++;
		rc = -EAGAIN;
	} else {
		if (w->prio == RA_PRIO_ASYNC) {
			w->timed = w->due != 0;
			if (!w->timed)
				w->due = pool_now();
			list_insert_due(q, w);
		} else {
			list_push(q, w);
		}
		pool->st.submitted[w->prio]++;
		pthread_cond_signal(&pool->wake);
	}
	pthread_mutex_unlock(&pool->lock);
	return rc;
}

unsigned int ra_pool_cancel(struct ra_pool *pool, const void *owner)
{
	struct ra_work *w, *prev = NULL, *next, *victims = NULL, **vtail;
	struct pool_list *q;
	unsigned int n = 0;

	if (!pool || !owner)
		return 0;
	q = &pool->q[RA_PRIO_ASYNC];
	vtail = &victims;
	pthread_mutex_lock(&pool->lock);
	for (w = q->head; w; w = next) {
		next = w->next;
		if (w->owner != owner) {
			prev = w;
			continue;
		}
		if (prev)
			prev->next = next;
		else
			q->head = next;
		if (q->tail == w)
			q->tail = prev;
		q->len--;
		w->next = NULL;
		*vtail = w;
		vtail = &w->next;
		n++;
	}
	pool->st.cancelled += n;
	pthread_mutex_unlock(&pool->lock);

	for (w = victims; w; w = next) {
		next = w->next;
		w->next = NULL;
		w->cancel(w, -ECANCELED);
	}
	return n;
}

bool ra_pool_busy(struct ra_pool *pool, const void *file, uint64_t start,
		  uint64_t nr)
{
	bool busy;

	if (!pool || !file || nr == 0)
		return false;
	pthread_mutex_lock(&pool->lock);
	busy = busy_locked(pool, file, start, nr);
	pthread_mutex_unlock(&pool->lock);
	return busy;
}

void ra_pool_stats(struct ra_pool *pool, struct ra_pool_stats *st)
{
	pthread_mutex_lock(&pool->lock);
	*st = pool->st;
	for (int p = 0; p < RA_PRIO_NR; p++)
		st->queued[p] = pool->q[p].len;
	pthread_mutex_unlock(&pool->lock);
}
