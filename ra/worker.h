/* worker.h - the readahead worker pool: a fixed set of threads serving a
 * bounded two-priority queue of work items.
 *
 * Owns: its threads, its queue and counters.  It does not own the work items:
 * a caller embeds struct ra_work in its own object and the pool hands it back
 * through exactly one of the two callbacks.
 *
 *   ra_pool_submit() ──▶ [demand queue] ──┐  workers take demand items first
 *                                         │  (in arrival order), then async
 *                    ──▶ [async  queue] ──┴─▶ ones, earliest due time first
 *
 * Contract for a work item @w:
 *   - ra_pool_submit() returns 0: the pool owns @w until it calls exactly one
 *     of @w->run(@w) (on a worker thread) or @w->cancel(@w, reason) (on the
 *     thread that cancels: ra_pool_cancel() or ra_pool_destroy()).  Either
 *     callback must finish the item: complete its pages (so no reader waits
 *     forever) and free it.  The pool never touches @w after the call.
 *   - any other return: @w was not queued and still belongs to the caller.
 *   - Dedupe: an item whose range [start, start + nr) of @file lies wholly
 *     inside the range of an item of the same @file that is queued or being
 *     run is refused with -EEXIST (@file NULL: never deduped).  Pages that are
 *     already LOCKED are skipped by the cache at insertion, so this catches the
 *     remaining case: the same window queued twice before its pages exist.
 *   - Order: the async queue is kept in order of @w->due, the time the
 *     item's first page will be read (its stream's reader there at its rate),
 *     ties and items with no due time (0: wanted at once, due when
 *     submitted) in arrival order.  So a window its reader reaches in
 *     milliseconds is not read after windows a slow stream needs in a second
 *     (docs/design.md, "The worker pool").  An item started after a due time
 *     its submitter gave counts as late.
 *   - Bounds: each queue holds at most queue_depth items.  A full async queue
 *     refuses (-EAGAIN, counted as dropped); a full demand queue also refuses
 *     with -EAGAIN and the caller does the work itself: a reader never blocks
 *     on the queue.
 *   - Cancellation: ra_pool_cancel(owner) removes every queued ASYNC item with
 *     that owner (a stream that stopped or was invalidated) and calls its
 *     cancel(-ECANCELED).  Items already running finish.  Demand items are
 *     never cancelled: a reader waits on their pages.
 *   - Shutdown: ra_pool_destroy() stops intake (-ESHUTDOWN), cancels every
 *     queued async item (cancel(-ESHUTDOWN)), lets the workers run the
 *     queued demand items and finish what is in flight, then joins them.
 *   - A callback may submit more items (a window split in pieces); after
 *     shutdown began those submits get -ESHUTDOWN and the caller runs them
 *     inline.  Callers other than callbacks must not submit or cancel once
 *     ra_pool_destroy() has started (the pool is freed when it returns).
 *
 * Locking: one mutex (pool->lock) guards the queues, the in-flight table and
 * the counters; it is never held while a callback runs.  Callbacks run
 * without any pool lock and may sleep (they do backing I/O).
 */
#ifndef AHEADFS_RA_WORKER_H
#define AHEADFS_RA_WORKER_H

#include <stdbool.h>
#include <stdint.h>

enum ra_prio {
	RA_PRIO_DEMAND = 0, /* a reader waits on it: pieces of a sync read */
	RA_PRIO_ASYNC = 1, /* readahead ahead of the readers */
	RA_PRIO_NR
};

struct ra_work {
	/* Set by the submitter before ra_pool_submit(). */
	void (*run)(struct ra_work *w);
	void (*cancel)(struct ra_work *w,
		       int reason); /* -ECANCELED/-ESHUTDOWN */
	const void *file; /* dedupe key (the mapping), NULL: no dedupe */
	const void *owner; /* cancellation key (the stream), NULL: none */
	uint64_t start; /* first page of the range */
	uint64_t nr; /* pages in the range */
	enum ra_prio prio;
	/* ASYNC: when the first page will be read, CLOCK_MONOTONIC ns; 0: at
	 * once (the pool sets the submit time). */
	uint64_t due;
	/* Private to the pool. */
	struct ra_work *next;
	bool timed; /* due was the submitter's */
};

struct ra_pool_config {
	unsigned int workers; /* threads, 1..64 */
	unsigned int queue_depth; /* items per priority queue, 1..65536 */
	/* Optional, run on each worker thread before its first item and after
	 * its last (RCU registration: cache_thread_online()). */
	void (*thread_init)(void *arg);
	void (*thread_exit)(void *arg);
	void *thread_arg;
};

struct ra_pool_stats {
	uint64_t queued[RA_PRIO_NR]; /* items waiting now */
	uint64_t running; /* items being run now */
	uint64_t submitted[RA_PRIO_NR]; /* accepted by ra_pool_submit() */
	uint64_t run[RA_PRIO_NR]; /* handed to run() */
	uint64_t dropped_full[RA_PRIO_NR]; /* refused: queue full */
	uint64_t dropped_dup; /* refused: range already queued/running */
	uint64_t cancelled; /* handed to cancel() */
	uint64_t late; /* async, started after the due time they were given */
	unsigned int workers;
	unsigned int queue_depth;
};

struct ra_pool; /* opaque */

/**
 * ra_pool_create() - Start @cfg->workers threads.
 *
 * Context: Creates threads; may sleep.
 * Return: 0, -EINVAL (counts out of range), -ENOMEM, or the -errno of
 * pthread_create() (the threads already started are stopped again).
 */
int ra_pool_create(const struct ra_pool_config *cfg, struct ra_pool **out);

/**
 * ra_pool_destroy() - Stop intake, cancel queued async items, run queued
 * demand items, wait for running items, join the threads, free @pool.
 *
 * Context: Sleeps until the workers are done.  Must not be called from a
 * callback.  Only callbacks may call ra_pool_submit() while it runs (they
 * get -ESHUTDOWN); nothing may use @pool once it returns.
 */
void ra_pool_destroy(struct ra_pool *pool);

/**
 * ra_pool_submit() - Queue @w at @w->prio.
 *
 * Context: Takes pool->lock briefly; never sleeps waiting for room.  Any
 * thread, callbacks included.
 * Return: 0 (the pool owns @w), -EEXIST (range already queued or running),
 * -EAGAIN (queue full), -ESHUTDOWN (ra_pool_destroy() began), -EINVAL (no run
 * or cancel callback, bad prio, nr 0).  On error @w is the caller's.
 */
int ra_pool_submit(struct ra_pool *pool, struct ra_work *w);

/**
 * ra_pool_cancel() - Cancel every queued async item of @owner.
 *
 * Calls each one's cancel(-ECANCELED) on this thread, after dropping the
 * lock.  Items already running are not interrupted.
 *
 * Context: Takes pool->lock briefly; runs the callbacks (may sleep).
 * Return: How many items were cancelled.
 */
unsigned int ra_pool_cancel(struct ra_pool *pool, const void *owner);

/**
 * ra_pool_busy() - Is a range of @file covering [start, start + nr) queued
 * or running?  A hint: it may change as soon as the lock is dropped.
 *
 * Context: Takes pool->lock briefly.
 */
bool ra_pool_busy(struct ra_pool *pool, const void *file, uint64_t start,
		  uint64_t nr);

/**
 * ra_pool_stats() - Snapshot of the counters.
 *
 * Context: Takes pool->lock briefly.
 */
void ra_pool_stats(struct ra_pool *pool, struct ra_pool_stats *st);

#endif /* AHEADFS_RA_WORKER_H */
