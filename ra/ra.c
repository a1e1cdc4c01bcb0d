/* ra.c - the readahead engine: decisions (decide.c, stream.c; their caps
 * and due times paced by pace.c) tied to the page cache
 * (cache_insert_range()), the backing reads and the worker pool
 * (backing.c, worker.c), per mount and per file.
 *
 * One decision, from a miss or a mark to I/O:
 *
 *   ra_sync_miss / ra_marker_hit
 *     | thrash/waste feedback into the stream table      (f->lock)
 *     | cap: the file's, the reader's rate, the share     (pace.c)
 *     | decide on a copy of the handle state             (st->lock, f->lock,
 *     |   + round the window end to the stripe            RCU for the hole
 *     |   + write the window back                         scans)
 *     v  -- every lock dropped --
 *   (a mark, RA_MARK_RESIDENT: a window the backing's page cache holds
 *    whole stops here, ra_backing_holds())
 *   cache_insert_range(), up to three calls:
 *        [io_start, index)        prefetch  (a gap fill before the reader)
 *        [index, index + nr)      demand    (the reader's own pages)
 *        [index + nr, io_end)     prefetch  (ahead; the mark page is here)
 *     v
 *   prefetch pages -> ra_backing_queue() to the workers (RA_PRIO_ASYNC),
 *                     due when the reader at its rate reaches them,
 *                     queued first so that they run while ...
 *   demand pages   -> ra_backing_read() on this thread (its other pieces
 *                     on workers at RA_PRIO_DEMAND)
 *
 * The decision and the insertion are not atomic: another reader may insert
 * some of the pages in between; cache_insert_range() skips present pages,
 * so the worst case is a window a little shorter than decided.  A window
 * refused by the pool (already queued, queue full) has its pages completed
 * with -EAGAIN by backing_pages.c: they leave the tree and a reader that
 * needs one misses again.
 */
#include "ra/ra.h"
#include "cache/base/count.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/base/debug.h"
#include "backing.h"
#include "decide.h"
#include "geometry.h"
#include "pace.h"
#include "stream.h"
#include "worker.h"

#define RA_PAGE_SHIFT CACHE_PAGE_SHIFT

/* Counters kept per file and summed per engine: struct ra_counts of
 * relaxed atomics. */

struct ra_engine {
	struct ra_config cfg;
	struct cache *cache;
	struct ra_pool *pool;
	struct ra_io_totals io; /* backing I/O over every file */
	struct ra_counts c;
	uint64_t tune; /* __atomic: the run-time tunables, ra_tune_word() */
	uint64_t files; /* __atomic */
	struct ra_share share; /* readers with a window, mount-wide */
	struct ra_geometry_cache geom; /* one probe per device */
};

struct ra_file {
	struct ra_engine *e;
	struct cache_mapping *m; /* a reference */
	const uint64_t *size; /* __atomic, the owner's: the file's size */
	struct ra_backing *b; /* a reference */
	int refs; /* __atomic */
	struct ra_geometry geom; /* copy: window-end rounding */
	pthread_mutex_t lock; /* taken after a handle's lock */
	/* Protected by lock: */
	struct ra_stream_table table;
	struct ra_cap cap; /* the window cap, the advice (pace.h) */
	uint64_t waste_seen; /* the mapping's waste counter last charged */
	/* Counters: relaxed atomics. */
	struct ra_counts c;
};

static const struct ra_page_ops page_ops = RA_CACHE_PAGE_OPS;

static uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void count(struct ra_file *f, size_t field_offset, uint64_t v)
{
	afs_count((uint64_t *)((char *)&f->c + field_offset), v);
	afs_count((uint64_t *)((char *)&f->e->c + field_offset), v);
}

#define COUNT(f, field, v) count((f), offsetof(struct ra_counts, field), (v))

static void counters_read(const struct ra_counts *c, struct ra_counts *out)
{
	const uint64_t *src = (const uint64_t *)c;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*c) / sizeof(uint64_t); i++)
		dst[i] = afs_count_read(&src[i]);
}

/* Bring @f's cap up to date with the engine's tunables (a change since
 * the last call recomputes it).  Called with f->lock held, at the start of
 * everything that reads f->cap.max.  Return: the tune word in force. */
static uint64_t tune_sync_locked(struct ra_file *f)
{
	uint64_t w = __atomic_load_n(&f->e->tune, __ATOMIC_ACQUIRE);

	afs_assert_held(&f->lock);
	if (ra_cap_sync(&f->cap, w, &f->geom, f->e->cfg.auto_floor_bytes))
		f->table.max = f->cap.max;
	return w;
}

/* ---------------------------------------------------------------------- */
/* Engine                                                                  */

static void worker_online(void *arg)
{
	cache_thread_online();
}

static void worker_offline(void *arg)
{
	cache_thread_offline();
}

static int config_check(const struct ra_config *cfg)
{
	struct ra_geometry g;

	if (cfg->max_bytes % CACHE_PAGE_SIZE ||
	    cfg->max_bytes > RA_MAX_BYTES_LIMIT ||
	    cfg->auto_floor_bytes % CACHE_PAGE_SIZE ||
	    cfg->auto_floor_bytes > RA_MAX_BYTES_LIMIT)
		return -EINVAL;
	if ((unsigned int)cfg->context > RA_CONTEXT_OFF ||
	    (unsigned int)cfg->stream_table > RA_STREAM_TABLE_OFF ||
	    (unsigned int)cfg->backing_io > RA_BACKING_IO_BUFFERED)
		return -EINVAL;
	if (cfg->workers > RA_WORKERS_MAX ||
	    cfg->queue_depth > RA_QUEUE_DEPTH_MAX)
		return -EINVAL;
	if (cfg->stripe_bytes || cfg->chunk_bytes) {
		/* The overrides must make sense on their own. */
		memset(&g, 0, sizeof(g));
		return ra_geometry_override(&g, cfg->stripe_bytes,
					    cfg->chunk_bytes);
	}
	return 0;
}

int ra_engine_create(const struct ra_config *cfg, struct cache *cache,
		     struct ra_engine **out)
{
	struct ra_pool_config pc = {0};
	struct ra_engine *e;
	int rc;

	if (!cfg || !cache || !out)
		return -EINVAL;
	rc = config_check(cfg);
	if (rc)
		return rc;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->cfg.sysfs_root = NULL; /* not kept: probed per device below */
	e->tune = ra_tune_word(cfg->max_bytes, cfg->context, cfg->stream_table);
	e->cfg.workers = ra_workers_of(cfg);
	if (!e->cfg.queue_depth)
		e->cfg.queue_depth = RA_QUEUE_DEPTH_DEFAULT;
	e->cache = cache;
	rc = ra_geometry_cache_init(&e->geom);
	if (rc)
		goto out_free;
	pc.workers = e->cfg.workers;
	pc.queue_depth = e->cfg.queue_depth;
	pc.thread_init = worker_online;
	pc.thread_exit = worker_offline;
	rc = ra_pool_create(&pc, &e->pool);
	if (rc)
		goto out_destroy_lock;
	/* sysfs_root is only read at ra_file_open(); keep a private copy. */
	if (cfg->sysfs_root) {
		e->cfg.sysfs_root = strdup(cfg->sysfs_root);
		if (!e->cfg.sysfs_root) {
			rc = -ENOMEM;
			goto out_destroy_pool;
		}
	}
	*out = e;
	return 0;

out_destroy_pool:
	ra_pool_destroy(e->pool);
out_destroy_lock:
	ra_geometry_cache_destroy(&e->geom);
out_free:
	free(e);
	return rc;
}

int ra_engine_destroy(struct ra_engine *e)
{
	if (!e)
		return 0;
	if (__atomic_load_n(&e->files, __ATOMIC_ACQUIRE))
		return -EBUSY;
	ra_pool_destroy(e->pool);
	ra_geometry_cache_destroy(&e->geom);
	free((char *)e->cfg.sysfs_root);
	free(e);
	return 0;
}

void ra_engine_stats(struct ra_engine *e, struct ra_engine_stats *st)
{
	struct ra_io_totals io;
	struct ra_pool_stats ps;

	memset(st, 0, sizeof(*st));
	counters_read(&e->c, &st->c);
	st->files = __atomic_load_n(&e->files, __ATOMIC_RELAXED);
	ra_io_totals_read(&e->io, &io);
	st->backing_reads = io.reads;
	st->backing_bytes = io.bytes;
	st->backing_errors = io.errors;
	st->cached_reads = io.cached_reads;
	st->cached_bytes = io.cached_bytes;
	st->opens_direct = io.opens_direct;
	st->opens_buffered = io.opens_buffered;
	ra_pool_stats(e->pool, &ps);
	st->queue_depth_now = ps.queued[RA_PRIO_ASYNC];
	st->workers_busy = ps.running;
	st->queue_dropped = ps.dropped_full[RA_PRIO_ASYNC] +
			    ps.dropped_full[RA_PRIO_DEMAND];
	st->queue_late = ps.late;
	st->workers = ps.workers;
}

/* ---------------------------------------------------------------------- */
/* Files                                                                   */

int ra_file_open(struct ra_engine *e, struct cache_mapping *m, int backing_fd,
		 dev_t dev, const uint64_t *size, struct ra_file **out)
{
	struct ra_backing_config bc = {0};
	struct ra_file *f;
	int rc;

	if (!e || !m || !size || !out)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->e = e;
	f->size = size;
	f->refs = 1;
	ra_geometry_cache_get(
		&e->geom, e->cfg.sysfs_root ? e->cfg.sysfs_root : "/sys", dev,
		e->cfg.stripe_bytes, e->cfg.chunk_bytes, &f->geom);
	ra_cap_init(&f->cap, __atomic_load_n(&e->tune, __ATOMIC_ACQUIRE),
		    &f->geom, e->cfg.auto_floor_bytes);
	ra_stream_table_init(&f->table, f->cap.max);
	rc = -pthread_mutex_init(&f->lock, NULL);
	if (rc)
		goto out_free;

	bc.mode = e->cfg.backing_io;
	/* Split only on a chunk the backing can take (whole pages). */
	if (f->geom.chunk % CACHE_PAGE_SIZE == 0)
		bc.chunk = f->geom.chunk;
	bc.ops = &page_ops;
	bc.totals = &e->io;
	rc = ra_backing_open(backing_fd, &bc, &f->b);
	if (rc)
		goto out_destroy_lock;

	cache_mapping_get(m);
	f->m = m;
	f->waste_seen = cache_mapping_waste(m);
	__atomic_fetch_add(&e->files, 1, __ATOMIC_RELAXED);
	*out = f;
	return 0;

out_destroy_lock:
	pthread_mutex_destroy(&f->lock);
out_free:
	free(f);
	return rc;
}

void ra_file_get(struct ra_file *f)
{
	__atomic_fetch_add(&f->refs, 1, __ATOMIC_RELAXED);
}

void ra_file_put(struct ra_file *f)
{
	struct ra_engine *e;

	afs_assert_no_rcu();
	if (!f || __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL))
		return;
	e = f->e;
	/* No reader is left: its queued windows only cost I/O.  Those
	 * already running finish on their own backing reference. */
	ra_pool_cancel(e->pool, f);
	ra_backing_put(f->b);
	cache_mapping_put(f->m);
	ra_stream_table_destroy(&f->table);
	pthread_mutex_destroy(&f->lock);
	free(f);
	__atomic_fetch_sub(&e->files, 1, __ATOMIC_RELEASE);
}

void ra_file_invalidate(struct ra_file *f, bool cut)
{
	if (cut)
		ra_backing_cut(f->b);
	pthread_mutex_lock(&f->lock);
	ra_stream_table_reset(&f->table);
	pthread_mutex_unlock(&f->lock);
	ra_pool_cancel(f->e->pool, f);
}

void ra_state_init(struct ra_state *st)
{
	pthread_mutex_init(&st->lock, NULL);
	st->start = 0;
	st->size = 0;
	st->async_size = 0;
	st->mark_index = st->mark_ns = st->rate = 0;
	st->share_epoch = RA_SHARE_NONE;
	st->refault = false;
	__atomic_store_n(&st->prev_index, RA_PREV_NONE, __ATOMIC_RELAXED);
}

void ra_state_destroy(struct ra_state *st)
{
	pthread_mutex_destroy(&st->lock);
}

ssize_t ra_file_read_resident(struct ra_file *f, void *buf, uint64_t off,
			      size_t len)
{
	return ra_backing_read_resident(f->b, buf, off, len);
}

ssize_t ra_file_read_whole(struct ra_file *f, char *abuf, uint64_t off,
			   size_t len, char **data)
{
	return ra_backing_read_whole(f->b, abuf, off, len, data, false);
}

ssize_t ra_file_read_random(struct ra_file *f, char *abuf, uint64_t off,
			    size_t len, char **data)
{
	return ra_backing_read_whole(f->b, abuf, off, len, data, true);
}

int ra_file_resident_fd(struct ra_file *f, uint64_t off, size_t len)
{
	return ra_backing_resident_fd(f->b, off, len);
}

uint64_t ra_file_eofs(const struct ra_file *f)
{
	return ra_backing_eofs(f->b);
}

void ra_note_read(struct ra_state *st, uint64_t index, uint64_t nr)
{
	__atomic_store_n(&st->prev_index, index + (nr ? nr : 1) - 1,
			 __ATOMIC_RELAXED);
}

void ra_file_served_around(struct ra_file *f, struct ra_state *st,
			   uint64_t index, uint64_t nr)
{
	if (!nr)
		return; /* nothing was given (a read at the EOF) */
	cache_note_given(f->m, index, index + nr - 1);
	ra_note_read(st, index, nr);
}

/* ---------------------------------------------------------------------- */
/* Decisions                                                               */

static uint64_t view_prev_hole(void *ctx, uint64_t index, uint64_t max_scan)
{
	return cache_prev_hole_rcu(ctx, index, max_scan);
}

static uint64_t view_next_hole(void *ctx, uint64_t index, uint64_t max_scan)
{
	return cache_next_hole_rcu(ctx, index, max_scan);
}

/* The file size in pages, as the file's owner has it. */
static uint64_t file_eof(struct ra_file *f)
{
	uint64_t size = __atomic_load_n(f->size, __ATOMIC_ACQUIRE);

	return (size + CACHE_PAGE_SIZE - 1) >> RA_PAGE_SHIFT;
}

/* Thrash and waste reported by the cache, charged to the streams.  Called
 * with f->lock held. */
static void feedback_locked(struct ra_file *f, uint64_t index, bool thrash)
{
	uint64_t waste;

	afs_assert_held(&f->lock);
	if (thrash)
		ra_stream_thrash(&f->table, index);
	waste = cache_mapping_waste(f->m);
	if (waste > f->waste_seen) {
		COUNT(f, waste, waste - f->waste_seen);
		ra_stream_waste(&f->table, RA_NO_PAGE, waste - f->waste_seen);
		f->waste_seen = waste;
	}
}

/*
 * Decide for handle @st of @f.  Locks: st->lock, then f->lock, then the RCU
 * read lock for the hole scans; all dropped on return.
 */
static void decide(struct ra_file *f, struct ra_state *st, bool async,
		   uint64_t index, uint64_t nr, struct ra_decision *d,
		   struct ra_due *due)
{
	struct ra_view v = {view_prev_hole, view_next_hole, f->m};
	struct ra_stream_table *table;
	struct ra_params p = {0};
	bool thrash = false, window;
	uint64_t tune, now = ra_now_ns(), ep = ra_share_epoch(now), share;

	p.eof = file_eof(f);
	p.geom = &f->geom;
	if (!async) {
		/* A miss on a page read ahead and evicted unused: thrash. */
		thrash = cache_ghost_test_clear(f->m, index);
		if (thrash)
			COUNT(f, thrash, 1);
	}

	pthread_mutex_lock(&st->lock);
	pthread_mutex_lock(&f->lock);
	tune = tune_sync_locked(f);
	p.rule = ra_tune_context(tune);
	table = ra_tune_no_table(tune) ? NULL : &f->table;
	feedback_locked(f, index, thrash);
	if (async) {
		p.max = ra_rate_max(st, index, f->cap.max, now);
	} else {
		/* A window opens here: its first mark's rate counts from
		 * now, so the second window is already sized to it. */
		p.max = f->cap.max;
		st->mark_index = index;
		st->mark_ns = now;
	}
	share = ra_share_max(&f->e->share, ep, nr,
			     cache_budget_pages(f->e->cache),
			     f->e->cfg.reads_dropped);
	if (p.max > share)
		p.max = share;
	p.no_readahead = f->cap.advice == RA_ADVICE_RANDOM;
	rcu_read_lock();
	if (async)
		ra_decide_async(st, table, &p, &v, index, nr, d);
	else
		ra_decide_sync(st, table, &p, &v, index, nr, d);
	rcu_read_unlock();
	*due = (struct ra_due){now, index, st->rate};
	window = d->kind != RA_KIND_RANDOM && d->kind != RA_KIND_ASYNC_GIVEUP &&
		 d->kind != RA_KIND_STREAM_BEHIND;
	/* A reader of the share is the stream the window belongs to, else
	 * the handle; a window for a stream neither follows is a reader of
	 * its own (d->unfollowed): hundreds of column-scan rows on one
	 * handle, which the table's slots follow in turn or not at all,
	 * counted as the handle's or a slot's one reader, took windows of
	 * the whole share between them (measured: 512 rows of 1 GiB in a
	 * 512 MiB cgroup read 4.4x the file, the backing 2.3x; 24 rows read
	 * over 5 s, whose windows go on from their marks, 1.37x; 2048 rows
	 * of 512 KiB in 1 GiB, taken in file order by one overtaken stream,
	 * 2.1-3.0x; docs/design.md, "The fair share"). */
	if (window && d->io_nr) {
		uint64_t once = RA_SHARE_NONE; /* not counted yet */
		uint64_t *seen;

		if (d->unfollowed)
			seen = &once;
		else if (table && d->stream >= 0)
			seen = &table->s[d->stream].share_epoch;
		else
			seen = &st->share_epoch;
		ra_share_count(&f->e->share, seen, ep);
	}
	pthread_mutex_unlock(&f->lock);
	pthread_mutex_unlock(&st->lock);

	COUNT(f, decisions[d->kind], 1);
	if (window)
		COUNT(f, windows, 1);
}

/* Insert [start, start + nr) with @flags; the inserted pages go to
 * @pages (room for nr).  Return: cache_insert_range()'s. */
static int insert(struct ra_file *f, uint64_t start, uint64_t nr, uint64_t mark,
		  unsigned int flags, struct cache_page **pages,
		  unsigned int *got)
{
	int rc;

	*got = 0;
	if (!nr)
		return 0;
	if (mark < start || mark >= start + nr)
		mark = CACHE_NO_MARK;
	rc = cache_insert_range(f->m, start, nr, mark, flags, pages, got);
	if (rc == -ENOSPC)
		COUNT(f, enospc, 1);
	return rc;
}

/*
 * Queue prefetched pages to the workers, one work item per run of
 * consecutive indexes.  The pool refuses an item whose range lies inside
 * the range of one queued or running for the same file, and an item's range
 * is [first page, last page]: an item with a gap (pages another reader had
 * inserted) would cover pages inserted later into that gap and have them
 * refused (seen under TSan with four readers on one stream).  Runs have no
 * gaps, and freshly inserted LOCKED pages belong to no other item, so a
 * refusal here means a full queue.
 */
static void queue_async(struct ra_file *f, struct cache_page **pages,
			unsigned int n, const struct ra_due *due)
{
	unsigned int i = 0, j;
	int rc;

	while (i < n) {
		for (j = i + 1;
		     j < n && cache_page_index(pages[j]) ==
				      cache_page_index(pages[j - 1]) + 1;
		     j++)
			;
		COUNT(f, async_pages, j - i);
		rc = ra_backing_queue(
			f->b, pages + i, j - i, f->e->pool, f->m, f,
			ra_due_at(due, cache_page_index(pages[i])));
		if (rc) /* completed -EAGAIN by backing_pages.c: they leave */
			COUNT(f, queue_refused, 1);
		else
			COUNT(f, queued, 1);
		i = j;
	}
}

/* Pages per cache_insert_range() call at most: a window of any size is
 * inserted and issued in batches (8 KiB of pointers on the stack); one
 * batch of prefetch is one work item and one preadv() (IOV_MAX pages). */
#define RA_BATCH 1024

/* The batch for @f: a multiple of the device's largest request where one
 * fits, so that every request of a batch is whole (a 1280 KiB queue: 960
 * pages, three requests; plain 1024 pages would end in a 256 KiB one). */
static uint64_t batch_pages(const struct ra_file *f)
{
	uint64_t io = f->geom.max_io >> RA_PAGE_SHIFT;

	if (io < 1 || io > RA_BATCH)
		return RA_BATCH;
	return RA_BATCH / io * io;
}

/*
 * Insert [lo, hi) in batches; prefetch batches are queued to the workers,
 * demand batches read on this thread.  @keep_history: prefetch leaves
 * history entries alone (issue()).  @due: when the reader gets to which
 * page (NULL: all at once).  Return: 0, or the first insertion's -errno
 * (-ENOSPC: the budget is exhausted, the rest is not tried).
 */
static int issue_range(struct ra_file *f, uint64_t lo, uint64_t hi,
		       uint64_t mark, bool demand, bool keep_history,
		       const struct ra_due *due)
{
	struct cache_page *pages[RA_BATCH];
	uint64_t batch = batch_pages(f);
	unsigned int got;
	int rc;

	for (uint64_t i = lo; i < hi; i += batch) {
		uint64_t n = u64_min(batch, hi - i);

		rc = insert(f, i, n, mark,
			    demand	   ? 0
			    : keep_history ? CACHE_INSERT_PREFETCH |
						     CACHE_INSERT_KEEP_HISTORY
					   : CACHE_INSERT_PREFETCH,
			    pages, &got);
		if (rc)
			return rc;
		if (!demand) {
			queue_async(f, pages, got, due);
			continue;
		}
		if (!got)
			continue;
		COUNT(f, sync_pages, got);
		if (ra_backing_read(f->b, pages, got, f->e->pool,
				    RA_PRIO_DEMAND))
			COUNT(f, errors, 1);
	}
	return 0;
}

/*
 * Insert and issue @d's window around the reader's pages [dlo, dhi): the
 * window's part after them and before them as prefetch (queued first, so
 * the workers run while this thread reads), then [dlo, dhi) as demand,
 * whole: the reader needs every one of them, whatever the window (an
 * oversize read, a window clipped at a stale EOF).
 *
 * @keep_history: the window's prefetch skips history entries.  Those are
 * pages the kernel took a copy of (kernel read mode): a window that reads
 * them again reads what nobody asked for -- the column scan's rows, whose
 * windows run into rows the neighbours' readers have consumed, read 1.2
 * times what they delivered that way.  Not where the kernel has shown it
 * dropped them: after a reader's demand read of a history page
 * (ra_sync_miss(): st->refault), its windows, sync and async, replace
 * history as any page until its next miss lands on a hole -- a second
 * pass over a file the kernel has evicted keeps its windows.
 * @due: when the reader reaches the pages ahead (NULL: at once).
 * Return: 0, or the demand insertion's -errno.
 */
static int issue(struct ra_file *f, const struct ra_decision *d, uint64_t dlo,
		 uint64_t dhi, bool keep_history, const struct ra_due *due)
{
	uint64_t lo = d->io_start, hi = d->io_start + d->io_nr;

	if (hi > lo) {
		if (hi > dhi)
			issue_range(f, dhi > lo ? dhi : lo, hi, d->mark, false,
				    keep_history, due);
		if (dlo > lo)
			issue_range(f, lo, dlo < hi ? dlo : hi, d->mark, false,
				    keep_history, NULL);
	}
	return issue_range(f, dlo, dhi, d->mark, true, false, NULL);
}

/* Whether page @i is a history entry: handed to the kernel once, and
 * asked for again now, so no longer in the kernel's cache. */
static bool is_history(struct ra_file *f, uint64_t i)
{
	bool history;

	rcu_read_lock();
	history = cache_history_rcu(f->m, i);
	rcu_read_unlock();
	return history;
}

int ra_sync_miss(struct ra_file *f, struct ra_state *st, uint64_t index,
		 uint64_t nr, unsigned int flags)
{
	struct ra_decision d;
	struct ra_due due;
	bool refault;

	afs_assert_no_rcu();
	if (!nr || index >= CACHE_INDEX_LIMIT || nr > CACHE_INDEX_LIMIT - index)
		return -EINVAL;
	refault = is_history(f, index);
	__atomic_store_n(&st->refault, refault, __ATOMIC_RELAXED);
	decide(f, st, false, index, nr, &d, &due);
	if ((flags & RA_MISS_AROUND) && d.kind == RA_KIND_RANDOM &&
	    ra_backing_mode(f->b) == RA_BACKING_IO_DIRECT)
		return RA_MISS_READ_AROUND;
	return issue(f, &d, index, index + nr, !refault, &due);
}

int ra_marker_hit(struct ra_file *f, struct ra_state *st, uint64_t index,
		  uint64_t nr, unsigned int flags)
{
	struct ra_decision d;
	struct ra_due due;
	int rc;

	afs_assert_no_rcu();
	if (!nr || index >= CACHE_INDEX_LIMIT)
		return -EINVAL;
	decide(f, st, true, index, nr, &d, &due);
	if ((flags & RA_MARK_RESIDENT) && d.io_nr &&
	    ra_backing_holds(f->b, d.io_start << RA_PAGE_SHIFT,
			     d.io_nr << RA_PAGE_SHIFT)) {
		COUNT(f, resident_skipped, 1);
		return 0;
	}
	/* Nothing here is the reader's: it holds its pages already. */
	rc = issue(f, &d, d.io_start, d.io_start,
		   !__atomic_load_n(&st->refault, __ATOMIC_RELAXED), &due);
	return rc == -ENOSPC ? 0 : rc;
}

/* ---------------------------------------------------------------------- */
/* Advice and stats                                                        */

/* WILLNEED: read [first, last] ahead, in windows of the cap. */
static void willneed(struct ra_file *f, uint64_t first, uint64_t last)
{
	struct ra_decision d = {0};
	uint64_t max;

	pthread_mutex_lock(&f->lock);
	tune_sync_locked(f);
	max = f->cap.max;
	pthread_mutex_unlock(&f->lock);
	for (uint64_t i = first; i <= last; i += max) {
		d.kind = RA_KIND_NONE;
		d.io_start = d.start = i;
		d.io_nr = d.size = u64_min(max, last - i + 1);
		d.mark = RA_NO_PAGE;
		if (issue(f, &d, i, i, false, NULL)) /* no demand; all of it */
			break;
		if (last - i < max)
			break;
	}
}

int ra_file_advise(struct ra_file *f, enum ra_advice advice, uint64_t off,
		   uint64_t len)
{
	uint64_t eof, first, last;

	afs_assert_no_rcu();
	if ((unsigned int)advice > RA_ADVICE_DONTNEED)
		return -EINVAL;
	first = off >> RA_PAGE_SHIFT;
	if (len && off + len - 1 >= off)
		last = (off + len - 1) >> RA_PAGE_SHIFT;
	else
		last = UINT64_MAX;
	switch (advice) {
	case RA_ADVICE_NORMAL:
	case RA_ADVICE_SEQUENTIAL:
	case RA_ADVICE_RANDOM:
		pthread_mutex_lock(&f->lock);
		tune_sync_locked(f);
		ra_cap_advise(&f->cap, advice);
		f->table.max = f->cap.max;
		pthread_mutex_unlock(&f->lock);
		return 0;
	case RA_ADVICE_WILLNEED:
		eof = file_eof(f);
		if (first >= eof)
			return 0;
		willneed(f, first, u64_min(last, eof - 1));
		return 0;
	case RA_ADVICE_DONTNEED:
		cache_mapping_invalidate(f->m, first, last);
		return 0;
	}
	return -EINVAL;
}

enum ra_advice ra_file_advice(struct ra_file *f)
{
	enum ra_advice advice;

	pthread_mutex_lock(&f->lock);
	advice = f->cap.advice;
	pthread_mutex_unlock(&f->lock);
	return advice;
}

void ra_file_stats(struct ra_file *f, struct ra_file_stats *st)
{
	struct ra_backing_stats bs;

	memset(st, 0, sizeof(*st));
	counters_read(&f->c, &st->c);
	st->stripe_pages = f->geom.stripe >> RA_PAGE_SHIFT;
	ra_backing_stats(f->b, &bs);
	st->backing_io = bs.mode;
	st->backing_reads = bs.reads;
	st->backing_bytes = bs.bytes;
	st->cached_reads = bs.cached_reads;
	st->cached_bytes = bs.cached_bytes;

	pthread_mutex_lock(&f->lock);
	tune_sync_locked(f);
	st->advice = f->cap.advice;
	st->max_window = f->cap.max;
	st->nr_streams =
		ra_stream_table_stats(&f->table, st->streams, RA_STATS_STREAMS);
	pthread_mutex_unlock(&f->lock);
}

/* ---------------------------------------------------------------------- */
/* Run-time tuning                                                         */

int ra_engine_tune(struct ra_engine *e, const struct ra_tuning *t,
		   unsigned int what)
{
	if (!e)
		return -EINVAL;
	return ra_tune_apply(&e->tune, t, what);
}

void ra_engine_tuning(struct ra_engine *e, struct ra_tuning *out)
{
	ra_tune_word_read(__atomic_load_n(&e->tune, __ATOMIC_ACQUIRE), out);
}
