/* test_worker.c - the readahead worker pool (ra/worker.c): priority order,
 * async items by due time,
 * dedupe of queued and running ranges, bounded queues, cancellation, clean
 * shutdown with work in flight, and a threaded stress of the ownership
 * contract (every item handed to exactly one of run() or cancel()).
 *
 * Ordering without sleeps: a "gate" item blocks its worker on a semaphore
 * the test posts, so the test knows exactly what is running and what is
 * queued.  A hang here means an item was lost or a worker never woke; the
 * ctest TIMEOUT turns it into a failure.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "worker.h"

/* cmocka's assert_*() longjmp()s: only for the test's own thread.  Checks
 * inside callbacks (worker threads) abort instead. */
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

#define MAX_ITEMS 64

struct ctx;

struct item {
	struct ra_work w;
	struct ctx *ctx;
	int id;
	bool gate; /* run() blocks until the test posts ctx->release */
	int state; /* 0 queued, 1 ran, 2 cancelled (set once) */
	int reason; /* cancel()'s reason */
	pthread_t cancel_thread;
	int submit_rc; /* gate items: rc of a submit made after release */
	struct item *resubmit; /* gate items: submitted from run() */
};

struct ctx {
	struct ra_pool *pool;
	pthread_mutex_t lock;
	int order[MAX_ITEMS]; /* ids in the order run() was called */
	int nrun;
	int ncancel;
	sem_t started; /* posted when a gate item starts */
	sem_t release; /* posted by the test to let a gate item finish */
	sem_t done; /* posted after every run() or cancel() */
	struct item items[MAX_ITEMS];
	int inits, exits;
};

static void item_run(struct ra_work *w)
{
	struct item *it = (struct item *)w;
	struct ctx *c = it->ctx;

	pthread_mutex_lock(&c->lock);
	CHECK(it->state == 0);
	it->state = 1;
	c->order[c->nrun++] = it->id;
	pthread_mutex_unlock(&c->lock);
	if (it->gate) {
		sem_post(&c->started);
		sem_wait(&c->release);
		if (it->resubmit)
			it->submit_rc =
				ra_pool_submit(c->pool, &it->resubmit->w);
	}
	sem_post(&c->done);
}

static void item_cancel(struct ra_work *w, int reason)
{
	struct item *it = (struct item *)w;
	struct ctx *c = it->ctx;

	pthread_mutex_lock(&c->lock);
	CHECK(it->state == 0);
	it->state = 2;
	it->reason = reason;
	it->cancel_thread = pthread_self();
	c->ncancel++;
	pthread_mutex_unlock(&c->lock);
	sem_post(&c->done);
}

static struct item *mk(struct ctx *c, int id, enum ra_prio prio,
		       const void *file, uint64_t start, uint64_t nr,
		       const void *owner)
{
	struct item *it = &c->items[id];

	memset(it, 0, sizeof(*it));
	it->ctx = c;
	it->id = id;
	it->w.run = item_run;
	it->w.cancel = item_cancel;
	it->w.prio = prio;
	it->w.file = file;
	it->w.start = start;
	it->w.nr = nr;
	it->w.owner = owner;
	return it;
}

static int submit(struct ctx *c, struct item *it)
{
	return ra_pool_submit(c->pool, &it->w);
}

/* Queue a gate item and wait until a worker is inside it. */
static void gate(struct ctx *c, int id, const void *file, uint64_t start,
		 uint64_t nr)
{
	struct item *it = mk(c, id, RA_PRIO_DEMAND, file, start, nr, NULL);

	it->gate = true;
	assert_int_equal(submit(c, it), 0);
	sem_wait(&c->started);
}

static void wait_done(struct ctx *c, int n)
{
	while (n-- > 0)
		sem_wait(&c->done);
}

static void hook_init(void *arg)
{
	struct ctx *c = arg;

	pthread_mutex_lock(&c->lock);
	c->inits++;
	pthread_mutex_unlock(&c->lock);
}

static void hook_exit(void *arg)
{
	struct ctx *c = arg;

	pthread_mutex_lock(&c->lock);
	c->exits++;
	pthread_mutex_unlock(&c->lock);
}

static struct ctx *ctx_new(unsigned int workers, unsigned int depth)
{
	struct ctx *c = calloc(1, sizeof(*c));
	struct ra_pool_config cfg = {
		.workers = workers,
		.queue_depth = depth,
		.thread_init = hook_init,
		.thread_exit = hook_exit,
	};

	assert_non_null(c);
	cfg.thread_arg = c;
	pthread_mutex_init(&c->lock, NULL);
	sem_init(&c->started, 0, 0);
	sem_init(&c->release, 0, 0);
	sem_init(&c->done, 0, 0);
	assert_int_equal(ra_pool_create(&cfg, &c->pool), 0);
	return c;
}

static void ctx_free(struct ctx *c)
{
	if (c->pool)
		ra_pool_destroy(c->pool);
	assert_int_equal(c->inits, c->exits);
	sem_destroy(&c->started);
	sem_destroy(&c->release);
	sem_destroy(&c->done);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void test_bad_config(void **state)
{
	struct ra_pool_config cfg = {.workers = 0, .queue_depth = 4};
	struct ra_pool *pool = NULL;
	struct ctx *c;

	assert_int_equal(ra_pool_create(&cfg, &pool), -EINVAL);
	cfg.workers = 65;
	assert_int_equal(ra_pool_create(&cfg, &pool), -EINVAL);
	cfg.workers = 1;
	cfg.queue_depth = 0;
	assert_int_equal(ra_pool_create(&cfg, &pool), -EINVAL);
	cfg.queue_depth = 65537;
	assert_int_equal(ra_pool_create(&cfg, &pool), -EINVAL);
	assert_int_equal(ra_pool_create(NULL, &pool), -EINVAL);
	assert_null(pool);

	c = ctx_new(1, 4);
	assert_int_equal(submit(c, mk(c, 0, RA_PRIO_DEMAND, NULL, 0, 0, NULL)),
			 -EINVAL); /* nr 0 */
	assert_int_equal(submit(c, mk(c, 0, RA_PRIO_NR, NULL, 0, 1, NULL)),
			 -EINVAL);
	mk(c, 0, RA_PRIO_ASYNC, NULL, 0, 1, NULL)->w.cancel = NULL;
	assert_int_equal(submit(c, &c->items[0]), -EINVAL);
	assert_int_equal(ra_pool_submit(c->pool, NULL), -EINVAL);
	ctx_free(c);
}

static void test_thread_hooks(void **state)
{
	struct ctx *c = ctx_new(3, 4);
	struct ra_pool_stats st;

	ra_pool_stats(c->pool, &st);
	assert_int_equal(st.workers, 3);
	assert_int_equal(st.queue_depth, 4);
	ra_pool_destroy(c->pool);
	c->pool = NULL;
	assert_int_equal(c->inits, 3);
	assert_int_equal(c->exits, 3);
	ctx_free(c);
}

static void test_demand_before_async(void **state)
{
	struct ctx *c = ctx_new(1, 8);
	static const int want[] = {0, 3, 4, 1, 2, 5};

	gate(c, 0, NULL, 0, 1); /* the only worker is busy */
	assert_int_equal(submit(c, mk(c, 1, RA_PRIO_ASYNC, NULL, 0, 1, NULL)),
			 0);
	assert_int_equal(submit(c, mk(c, 2, RA_PRIO_ASYNC, NULL, 0, 1, NULL)),
			 0);
	assert_int_equal(submit(c, mk(c, 3, RA_PRIO_DEMAND, NULL, 0, 1, NULL)),
			 0);
	assert_int_equal(submit(c, mk(c, 4, RA_PRIO_DEMAND, NULL, 0, 1, NULL)),
			 0);
	assert_int_equal(submit(c, mk(c, 5, RA_PRIO_ASYNC, NULL, 0, 1, NULL)),
			 0);
	sem_post(&c->release);
	wait_done(c, 6);
	assert_int_equal(c->nrun, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(c->order[i], want[i]);
	ctx_free(c);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The async queue runs earliest due first, ties and "at once" (due 0: the
 * submit time) in arrival order; cancelling one keeps the others' order;
 * only a given due time that passed counts as late. */
static void test_async_due_order(void **state)
{
	struct ctx *c = ctx_new(1, 16);
	static const int want[] = {0, 7, 3, 6, 2, 4, 1};
	uint64_t now = mono_ns(), s = 1000000000;
	struct ra_pool_stats st;
	int owner;
	struct {
		int id;
		uint64_t due;
		const void *owner;
	} sub[] = {
		{1, now + 9 * s, NULL}, /* last */
		{2, now + 5 * s, NULL},
		{3, 0, NULL}, /* at once: due now, after 7 */
		{4, now + 5 * s, NULL}, /* ties with 2: after it */
		{5, now + 4 * s, &owner}, /* cancelled below */
		{6, now + 4 * s, NULL},
		{7, now - 1 * s, NULL}, /* overdue: first, and late */
	};

	gate(c, 0, NULL, 0, 1);
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		struct item *it = mk(c, sub[i].id, RA_PRIO_ASYNC, NULL, 0, 1,
				     sub[i].owner);

		it->w.due = sub[i].due;
		assert_int_equal(submit(c, it), 0);
	}
	assert_int_equal(ra_pool_cancel(c->pool, &owner), 1);
	wait_done(c, 1); /* the cancel */
	sem_post(&c->release);
	wait_done(c, 7); /* the gate and the six left */
	assert_int_equal(c->nrun, 7);
	for (int i = 0; i < 7; i++)
		assert_int_equal(c->order[i], want[i]);
	ra_pool_stats(c->pool, &st);
	assert_int_equal(st.late, 1);
	assert_int_equal(st.queued[RA_PRIO_ASYNC], 0);
	ctx_free(c);
}

static void test_dedupe_queued_and_running(void **state)
{
	struct ctx *c = ctx_new(1, 8);
	int f1, f2; /* two files: their addresses are the keys */
	struct ra_pool_stats st;

	gate(c, 0, &f1, 0, 16); /* running: f1 [0, 16) */
	assert_true(ra_pool_busy(c->pool, &f1, 0, 16));
	assert_true(ra_pool_busy(c->pool, &f1, 4, 4));
	assert_false(ra_pool_busy(c->pool, &f1, 8, 16));
	assert_false(ra_pool_busy(c->pool, &f2, 0, 16));

	/* Inside the running range: refused. */
	assert_int_equal(submit(c, mk(c, 1, RA_PRIO_ASYNC, &f1, 0, 16, NULL)),
			 -EEXIST);
	assert_int_equal(submit(c, mk(c, 2, RA_PRIO_ASYNC, &f1, 4, 4, NULL)),
			 -EEXIST);
	assert_int_equal(submit(c, mk(c, 3, RA_PRIO_DEMAND, &f1, 15, 1, NULL)),
			 -EEXIST);
	/* Overlapping only partly: accepted (the cache skips LOCKED pages). */
	assert_int_equal(submit(c, mk(c, 4, RA_PRIO_ASYNC, &f1, 8, 16, NULL)),
			 0);
	/* Inside a queued range: refused. */
	assert_int_equal(submit(c, mk(c, 5, RA_PRIO_ASYNC, &f1, 8, 16, NULL)),
			 -EEXIST);
	assert_int_equal(submit(c, mk(c, 6, RA_PRIO_ASYNC, &f1, 20, 4, NULL)),
			 -EEXIST);
	/* Another file, or no file: never a duplicate. */
	assert_int_equal(submit(c, mk(c, 7, RA_PRIO_ASYNC, &f2, 0, 16, NULL)),
			 0);
	assert_int_equal(submit(c, mk(c, 8, RA_PRIO_ASYNC, NULL, 0, 16, NULL)),
			 0);
	assert_int_equal(submit(c, mk(c, 9, RA_PRIO_ASYNC, NULL, 0, 16, NULL)),
			 0);
	ra_pool_stats(c->pool, &st);
	assert_int_equal(st.dropped_dup, 5);
	assert_int_equal(st.queued[RA_PRIO_ASYNC], 4);
	assert_int_equal(st.running, 1);

	sem_post(&c->release);
	wait_done(c, 5);
	/* Refused items were never run nor cancelled. */
	for (int id = 1; id <= 6; id++)
		if (id != 4)
			assert_int_equal(c->items[id].state, 0);
	ctx_free(c);
}

static void test_range_accepted_after_run(void **state)
{
	struct ctx *c = ctx_new(1, 8);
	int f;

	assert_int_equal(submit(c, mk(c, 0, RA_PRIO_ASYNC, &f, 0, 8, NULL)), 0);
	wait_done(c, 1);
	/* run() returned, but the worker may not have cleared its slot yet:
	 * a second submit succeeds once it has; destroy waits for both. */
	while (ra_pool_busy(c->pool, &f, 0, 8))
		sched_yield();
	assert_int_equal(submit(c, mk(c, 1, RA_PRIO_ASYNC, &f, 0, 8, NULL)), 0);
	wait_done(c, 1);
	assert_int_equal(c->items[1].state, 1);
	ctx_free(c);
}

static void test_full_queue_refuses(void **state)
{
	struct ctx *c = ctx_new(1, 2);
	struct ra_pool_stats st;

	gate(c, 0, NULL, 0, 1);
	assert_int_equal(submit(c, mk(c, 1, RA_PRIO_ASYNC, NULL, 0, 1, NULL)),
			 0);
	assert_int_equal(submit(c, mk(c, 2, RA_PRIO_ASYNC, NULL, 0, 1, NULL)),
			 0);
	assert_int_equal(submit(c, mk(c, 3, RA_PRIO_ASYNC, NULL, 0, 1, NULL)),
			 -EAGAIN);
	/* The demand queue has its own room... */
	assert_int_equal(submit(c, mk(c, 4, RA_PRIO_DEMAND, NULL, 0, 1, NULL)),
			 0);
	assert_int_equal(submit(c, mk(c, 5, RA_PRIO_DEMAND, NULL, 0, 1, NULL)),
			 0);
	/* ...and refuses too rather than block: the caller reads inline. */
	assert_int_equal(submit(c, mk(c, 6, RA_PRIO_DEMAND, NULL, 0, 1, NULL)),
			 -EAGAIN);
	ra_pool_stats(c->pool, &st);
	assert_int_equal(st.dropped_full[RA_PRIO_ASYNC], 1);
	assert_int_equal(st.dropped_full[RA_PRIO_DEMAND], 1);
	assert_int_equal(st.submitted[RA_PRIO_ASYNC], 2);
	assert_int_equal(st.submitted[RA_PRIO_DEMAND], 3);
	assert_int_equal(st.queued[RA_PRIO_ASYNC], 2);
	assert_int_equal(st.queued[RA_PRIO_DEMAND], 2);
	sem_post(&c->release);
	wait_done(c, 5);
	ra_pool_stats(c->pool, &st);
	assert_int_equal(st.run[RA_PRIO_DEMAND], 3);
	assert_int_equal(st.run[RA_PRIO_ASYNC], 2);
	assert_int_equal(c->items[3].state, 0);
	assert_int_equal(c->items[6].state, 0);
	ctx_free(c);
}

static void test_cancel_owner(void **state)
{
	struct ctx *c = ctx_new(1, 8);
	int sa, sb; /* two streams */
	struct ra_pool_stats st;

	gate(c, 0, NULL, 0, 1);
	assert_int_equal(submit(c, mk(c, 1, RA_PRIO_ASYNC, NULL, 0, 1, &sa)),
			 0);
	assert_int_equal(submit(c, mk(c, 2, RA_PRIO_ASYNC, NULL, 0, 1, &sb)),
			 0);
	assert_int_equal(submit(c, mk(c, 3, RA_PRIO_ASYNC, NULL, 0, 1, &sa)),
			 0);
	assert_int_equal(submit(c, mk(c, 4, RA_PRIO_DEMAND, NULL, 0, 1, &sa)),
			 0);
	assert_int_equal(submit(c, mk(c, 5, RA_PRIO_ASYNC, NULL, 0, 1, &sa)),
			 0);

	assert_int_equal(ra_pool_cancel(c->pool, &sa), 3);
	for (int k = 0; k < 3; k++) {
		/* 1, 3, 5: cancelled here, on this thread, with -ECANCELED */
		int id = 1 + 2 * k;

		assert_int_equal(c->items[id].state, 2);
		assert_int_equal(c->items[id].reason, -ECANCELED);
		assert_true(pthread_equal(c->items[id].cancel_thread,
					  pthread_self()));
	}
	assert_int_equal(ra_pool_cancel(c->pool, &sa), 0);
	assert_int_equal(ra_pool_cancel(c->pool, NULL), 0);
	ra_pool_stats(c->pool, &st);
	assert_int_equal(st.cancelled, 3);
	assert_int_equal(st.queued[RA_PRIO_ASYNC], 1);

	/* The other stream's window and the demand item still run, in
	 * priority order; the list stays well formed after the unlinks. */
	assert_int_equal(submit(c, mk(c, 6, RA_PRIO_ASYNC, NULL, 0, 1, &sb)),
			 0);
	sem_post(&c->release);
	wait_done(c, 3 + 4); /* 3 cancels, 4 runs */
	assert_int_equal(c->nrun, 4);
	assert_int_equal(c->order[1], 4);
	assert_int_equal(c->order[2], 2);
	assert_int_equal(c->order[3], 6);
	ctx_free(c);
}

struct destroyer {
	struct ra_pool *pool;
	pthread_t thread;
};

static void *destroy_main(void *arg)
{
	struct destroyer *d = arg;

	ra_pool_destroy(d->pool);
	return NULL;
}

/*
 * Shutdown with I/O in flight:
 *   1. two workers block inside gate items 0 and 1 (I/O in flight);
 *   2. demand items 2-4 and async items 5-7 are queued;
 *   3. another thread calls ra_pool_destroy(); it must cancel 5-7 (their
 *      pages would otherwise wait forever) while 0 and 1 are still running,
 *      and the test sees those cancels before releasing the gates;
 *   4. the gates are released; each tries to queue one more item, which
 *      is refused with -ESHUTDOWN (to be done inline by its caller);
 *   5. destroy returns only after the demand items 2-4 ran.
 * Failure: a hang (an item lost, a worker not woken), a cancel of a demand
 * item, or a run of an async one.
 */
static void test_shutdown_with_io_in_flight(void **state)
{
	struct ctx *c = ctx_new(2, 8);
	struct destroyer d = {.pool = c->pool};

	gate(c, 0, NULL, 0, 1);
	gate(c, 1, NULL, 0, 1);
	c->items[0].resubmit = mk(c, 8, RA_PRIO_DEMAND, NULL, 0, 1, NULL);
	c->items[1].resubmit = mk(c, 9, RA_PRIO_ASYNC, NULL, 0, 1, NULL);
	for (int id = 2; id <= 4; id++)
		assert_int_equal(
			submit(c, mk(c, id, RA_PRIO_DEMAND, NULL, 0, 1, NULL)),
			0);
	for (int id = 5; id <= 7; id++)
		assert_int_equal(
			submit(c, mk(c, id, RA_PRIO_ASYNC, NULL, 0, 1, NULL)),
			0);
	assert_int_equal(pthread_create(&d.thread, NULL, destroy_main, &d), 0);
	wait_done(c, 3); /* the three cancels: gates still closed */
	for (int id = 5; id <= 7; id++) {
		assert_int_equal(c->items[id].state, 2);
		assert_int_equal(c->items[id].reason, -ESHUTDOWN);
	}
	assert_int_equal(c->nrun, 2); /* only the gates ran so far */
	sem_post(&c->release);
	sem_post(&c->release);
	assert_int_equal(pthread_join(d.thread, NULL), 0);
	c->pool = NULL;
	assert_int_equal(c->items[0].submit_rc, -ESHUTDOWN);
	assert_int_equal(c->items[1].submit_rc, -ESHUTDOWN);
	for (int id = 0; id <= 4; id++)
		assert_int_equal(c->items[id].state, 1);
	assert_int_equal(c->items[8].state, 0);
	assert_int_equal(c->items[9].state, 0);
	assert_int_equal(c->nrun, 5);
	assert_int_equal(c->ncancel, 3);
	ctx_free(c);
}

/*
 * Stress of the ownership contract: 4 submitter threads x 2000 items with
 * mixed priorities, owners and ranges over a depth-8 queue while a canceller
 * thread cancels owners, then destroy.  Every accepted item must be handed
 * to exactly one of run() or cancel(); refused ones to neither.  Failure: a
 * double hand-off (state assertion), a lost item (the final count), a data
 * race (TSan).
 */
#define STRESS_THREADS 4
#define STRESS_ITEMS 2000

struct sitem {
	struct ra_work w;
	int state; /* atomic: 0 none, 1 run, 2 cancel */
	int accepted;
};

static struct sitem sitems[STRESS_THREADS][STRESS_ITEMS];
static int owners[4];
static int files[2];

static void s_run(struct ra_work *w)
{
	struct sitem *s = (struct sitem *)w;
	int zero = 0;

	CHECK(__atomic_compare_exchange_n(&s->state, &zero, 1, false,
					  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
}

static void s_cancel(struct ra_work *w, int reason)
{
	struct sitem *s = (struct sitem *)w;
	int zero = 0;

	CHECK(reason == -ECANCELED || reason == -ESHUTDOWN);
	CHECK(__atomic_compare_exchange_n(&s->state, &zero, 2, false,
					  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
}

struct sarg {
	struct ra_pool *pool;
	int t;
	bool *stop;
};

static void *s_submit_main(void *arg)
{
	struct sarg *a = arg;
	unsigned int seed = 1234u + (unsigned int)a->t;

	for (int i = 0; i < STRESS_ITEMS; i++) {
		struct sitem *s = &sitems[a->t][i];
		int rc;

		s->w.run = s_run;
		s->w.cancel = s_cancel;
		s->w.prio = rand_r(&seed) % 3 ? RA_PRIO_ASYNC : RA_PRIO_DEMAND;
		s->w.owner = &owners[rand_r(&seed) % 4];
		s->w.file =
			rand_r(&seed) % 2 ? &files[rand_r(&seed) % 2] : NULL;
		s->w.start = (uint64_t)(rand_r(&seed) % 64);
		s->w.nr = 1 + (uint64_t)(rand_r(&seed) % 8);
		rc = ra_pool_submit(a->pool, &s->w);
		CHECK(rc == 0 || rc == -EEXIST || rc == -EAGAIN);
		s->accepted = rc == 0;
	}
	return NULL;
}

static void *s_cancel_main(void *arg)
{
	struct sarg *a = arg;
	unsigned int i = 0;

	while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE))
		ra_pool_cancel(a->pool, &owners[i++ % 4]);
	return NULL;
}

static void test_stress_each_item_once(void **state)
{
	struct ra_pool_config cfg = {.workers = 3, .queue_depth = 8};
	struct sarg args[STRESS_THREADS + 1];
	pthread_t th[STRESS_THREADS + 1];
	struct ra_pool_stats st;
	struct ra_pool *pool;
	bool stop = false;
	uint64_t accepted = 0, ran = 0, cancelled = 0;

	memset(sitems, 0, sizeof(sitems));
	assert_int_equal(ra_pool_create(&cfg, &pool), 0);
	for (int t = 0; t <= STRESS_THREADS; t++) {
		args[t] = (struct sarg){.pool = pool, .t = t, .stop = &stop};
		assert_int_equal(pthread_create(&th[t], NULL,
						t < STRESS_THREADS
							? s_submit_main
							: s_cancel_main,
						&args[t]),
				 0);
	}
	for (int t = 0; t < STRESS_THREADS; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(th[STRESS_THREADS], NULL), 0);
	ra_pool_stats(pool, &st);
	ra_pool_destroy(pool);

	for (int t = 0; t < STRESS_THREADS; t++)
		for (int i = 0; i < STRESS_ITEMS; i++) {
			struct sitem *s = &sitems[t][i];

			if (!s->accepted) {
				assert_int_equal(s->state, 0);
				continue;
			}
			accepted++;
			assert_int_not_equal(s->state, 0);
			ran += s->state == 1;
			cancelled += s->state == 2;
		}
	assert_int_equal(accepted, st.submitted[RA_PRIO_DEMAND] +
					   st.submitted[RA_PRIO_ASYNC]);
	assert_int_equal(ran + cancelled, accepted);
	assert_int_equal(accepted + st.dropped_dup +
				 st.dropped_full[RA_PRIO_DEMAND] +
				 st.dropped_full[RA_PRIO_ASYNC],
			 STRESS_THREADS * STRESS_ITEMS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_thread_hooks),
		cmocka_unit_test(test_demand_before_async),
		cmocka_unit_test(test_async_due_order),
		cmocka_unit_test(test_dedupe_queued_and_running),
		cmocka_unit_test(test_range_accepted_after_run),
		cmocka_unit_test(test_full_queue_refuses),
		cmocka_unit_test(test_cancel_owner),
		cmocka_unit_test(test_shutdown_with_io_in_flight),
		cmocka_unit_test(test_stress_each_item_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
