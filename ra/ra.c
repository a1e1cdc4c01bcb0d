/* ra.c - the readahead engine: decisions (decide.c, stream.c) tied to the
 * page cache (cache_insert_range()), the backing reads and the worker pool
 * (backing.c, worker.c), per mount and per file.
 *
 * One decision, from a miss or a mark to I/O:
 *
 *   ra_sync_miss / ra_marker_hit
 *     | thrash/waste feedback into the stream table      (f->lock)
 *     | decide on a copy of the handle state             (st->lock, f->lock,
 *     |   + round the window end to the stripe            RCU for the hole
 *     |   + write the window back                         scans)
 *     v  -- every lock dropped --
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
 * with -EAGAIN by backing.c: they leave the tree and a reader that needs
 * one misses again.
 */
#include "ra/ra.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/base/debug.h"
#include "backing.h"
#include "decide.h"
#include "geometry.h"
#include "stream.h"
#include "worker.h"

#define RA_PAGE_SHIFT CACHE_PAGE_SHIFT
/* Devices whose geometry an engine remembers (one probe per device). */
#define RA_GEOM_CACHE 16

/* Counters kept per file and summed per engine: struct ra_counts of
 * relaxed atomics. */

struct ra_engine {
	struct ra_config cfg;
	struct cache *cache;
	struct ra_pool *pool;
	struct ra_io_totals io; /* backing I/O over every file */
	struct ra_counts c;
	uint64_t tune; /* __atomic: the run-time tunables, see tune_word() */
	uint64_t files; /* __atomic */
	/* Readers with a window, mount-wide (share_count()): one slot per
	 * parity of the epoch, each (epoch << 32 | readers).  __atomic. */
	uint64_t share[2];
	pthread_mutex_t geom_lock; /* guards geom[] */
	struct {
		dev_t dev;
		struct ra_geometry g;
	} geom[RA_GEOM_CACHE];
	unsigned int nr_geom;
};

struct ra_file {
	struct ra_engine *e;
	struct cache_mapping *m; /* a reference */
	const uint64_t *size; /* __atomic, the owner's: the file's size */
	struct ra_backing *b; /* a reference */
	int refs; /* __atomic */
	struct ra_geometry geom; /* copy: window-end rounding */
	uint64_t base_max; /* window cap in pages, before advice */
	pthread_mutex_t lock; /* taken after a handle's lock */
	/* Protected by lock: */
	struct ra_stream_table table;
	enum ra_advice advice;
	uint64_t max; /* base_max, doubled by RA_ADVICE_SEQUENTIAL */
	uint64_t tune_seen; /* the engine's tune word base_max follows */
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
	__atomic_fetch_add((uint64_t *)((char *)&f->c + field_offset), v,
			   __ATOMIC_RELAXED);
	__atomic_fetch_add((uint64_t *)((char *)&f->e->c + field_offset), v,
			   __ATOMIC_RELAXED);
}

#define COUNT(f, field, v) count((f), offsetof(struct ra_counts, field), (v))

static void counters_read(const struct ra_counts *c, struct ra_counts *out)
{
	const uint64_t *src = (const uint64_t *)c;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*c) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/*
 * The tunables ra_engine_tune() may change, packed in one word so that a
 * decision reads them together with one atomic load: bits 0-31 the window
 * cap in pages (0: automatic), bits 32-33 the context rule, bit 34 set
 * when the stream table is off (RA_STREAM_TABLE_OFF).
 */
#define TUNE_MAX_MASK UINT64_C(0xffffffff)
#define TUNE_CONTEXT_SHIFT 32
#define TUNE_CONTEXT_MASK (UINT64_C(3) << TUNE_CONTEXT_SHIFT)
#define TUNE_NO_TABLE (UINT64_C(1) << 34)

static uint64_t tune_word(uint64_t max_bytes, enum ra_context_rule context,
			  enum ra_stream_table_mode stream_table)
{
	return (max_bytes >> RA_PAGE_SHIFT) |
	       ((uint64_t)context << TUNE_CONTEXT_SHIFT) |
	       (stream_table == RA_STREAM_TABLE_OFF ? TUNE_NO_TABLE : 0);
}

/* @f's window cap before advice under tune word @w. */
static uint64_t tune_base_max(const struct ra_file *f, uint64_t w)
{
	uint64_t max = w & TUNE_MAX_MASK;

	if (!max)
		max = ra_auto_max_bytes(f->geom.stripe,
					f->e->cfg.auto_floor_bytes,
					f->geom.max_io) >>
		      RA_PAGE_SHIFT;
	return max;
}

/* Bring @f's cap up to date with the engine's tunables (a change since
 * the last call recomputes it).  Called with f->lock held, at the start of
 * everything that reads f->max.  Return: the tune word in force. */
static uint64_t tune_sync_locked(struct ra_file *f)
{
	uint64_t w = __atomic_load_n(&f->e->tune, __ATOMIC_ACQUIRE);

	afs_assert_held(&f->lock);
	if (w != f->tune_seen) {
		f->tune_seen = w;
		f->base_max = tune_base_max(f, w);
		f->max = f->advice == RA_ADVICE_SEQUENTIAL ? 2 * f->base_max
							   : f->base_max;
		f->table.max = f->max;
	}
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
	e->tune = tune_word(cfg->max_bytes, cfg->context, cfg->stream_table);
	e->cfg.workers = ra_workers_of(cfg);
	if (!e->cfg.queue_depth)
		e->cfg.queue_depth = RA_QUEUE_DEPTH_DEFAULT;
	e->cache = cache;
	rc = -pthread_mutex_init(&e->geom_lock, NULL);
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
	pthread_mutex_destroy(&e->geom_lock);
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
	pthread_mutex_destroy(&e->geom_lock);
	free((char *)e->cfg.sysfs_root);
	free(e);
	return 0;
}

/* The geometry of @dev, probed once per engine and device. */
static void engine_geometry(struct ra_engine *e, dev_t dev,
			    struct ra_geometry *g)
{
	const char *root = e->cfg.sysfs_root ? e->cfg.sysfs_root : "/sys";

	pthread_mutex_lock(&e->geom_lock);
	for (unsigned int i = 0; i < e->nr_geom; i++) {
		if (e->geom[i].dev == dev) {
			*g = e->geom[i].g;
			pthread_mutex_unlock(&e->geom_lock);
			return;
		}
	}
	pthread_mutex_unlock(&e->geom_lock);

	/* Probe outside the lock (it reads files); a racing probe of the
	 * same device finds the same numbers. */
	ra_geometry_probe(root, dev, g);
	if (e->cfg.stripe_bytes || e->cfg.chunk_bytes) {
		/* Checked at create; on a device whose probed values clash
		 * with the override, the override applies to a clean slate. */
		if (ra_geometry_override(g, e->cfg.stripe_bytes,
					 e->cfg.chunk_bytes)) {
			memset(g, 0, sizeof(*g));
			ra_geometry_override(g, e->cfg.stripe_bytes,
					     e->cfg.chunk_bytes);
		}
	}
	pthread_mutex_lock(&e->geom_lock);
	if (e->nr_geom < RA_GEOM_CACHE) {
		e->geom[e->nr_geom].dev = dev;
		e->geom[e->nr_geom].g = *g;
		e->nr_geom++;
	}
	pthread_mutex_unlock(&e->geom_lock);
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
	struct cache_mapping_stats ms;
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
	engine_geometry(e, dev, &f->geom);
	f->tune_seen = __atomic_load_n(&e->tune, __ATOMIC_ACQUIRE);
	f->base_max = tune_base_max(f, f->tune_seen);
	f->max = f->base_max;
	ra_stream_table_init(&f->table, f->max);
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
	cache_mapping_stats(m, &ms);
	f->waste_seen = ms.waste;
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
	return ra_backing_read_whole(f->b, abuf, off, len, data);
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
	struct cache_mapping_stats ms;

	afs_assert_held(&f->lock);
	if (thrash)
		ra_stream_thrash(&f->table, index);
	cache_mapping_stats(f->m, &ms);
	if (ms.waste > f->waste_seen) {
		COUNT(f, waste, ms.waste - f->waste_seen);
		ra_stream_waste(&f->table, RA_NO_PAGE,
				ms.waste - f->waste_seen);
		f->waste_seen = ms.waste;
	}
}

/*
 * Decide for handle @st of @f.  Locks: st->lock, then f->lock, then the RCU
 * read lock for the hole scans; all dropped on return.
 */
/* Windows sized to what the reader consumes: a window need cover only
 * RA_RATE_HORIZON_MS of its reading (the next one is started as the reader
 * enters it), so a slow reader -- one of many paced streams -- holds far
 * less memory and leaves far less unread at its end than a window at the
 * cap would.  Fast readers are not held back: their rate times the horizon
 * is far above the cap. */
#define RA_RATE_HORIZON_MS 1000
/* Never below the largest request (1 MiB, the mount's max_pages: what the
 * kernel sends for a large read(2)): a window smaller than the requests
 * that come misses every time
 * (measured: a 64-page floor let an underestimated first rate cost a
 * sequential reader 448-832 misses in 16384 pages instead of 64). */
#define RA_RATE_MIN_PAGES 256

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A mark was reached at @index: update @st's rate (pages a second, from
 * the pages since the previous mark and the time it took) and return the
 * cap it allows, at most @max.  A lower sample is taken at once, a higher
 * one weighs a quarter: the first marks of a stream come while the
 * kernel's readahead on the mount ramps up ahead of the reader, and an
 * average that let those samples fade a quarter per window (one window a
 * second or two for a slow reader) kept windows 2-3x the reader's second
 * for the whole run (64 paced streams: rates of 250-390 pages a second
 * measured for 128 read).  Underestimating costs at most a window at the
 * floor: the next mark comes a window later, and a fast reader's comes
 * within milliseconds.
 * A mark behind the previous one or too far ahead (another stream on a
 * shared state) restarts the measurement.  st->lock held.
 */
static uint64_t rate_max(struct ra_state *st, uint64_t index, uint64_t max,
			 uint64_t now)
{
	uint64_t cap;

	afs_assert_held(&st->lock);
	if (st->mark_ns && index > st->mark_index &&
	    index - st->mark_index <= 4 * max && now > st->mark_ns) {
		double rate = (double)(index - st->mark_index) * 1e9 /
			      (double)(now - st->mark_ns);

		if (rate > 1e12)
			rate = 1e12;
		if (!st->rate || (uint64_t)rate < st->rate)
			st->rate = (uint64_t)rate;
		else
			st->rate = (3 * st->rate + (uint64_t)rate) / 4;
	} else if (st->mark_ns) {
		st->rate = 0;
	}
	st->mark_index = index;
	st->mark_ns = now;
	if (!st->rate)
		return max;
	cap = st->rate * RA_RATE_HORIZON_MS / 1000;
	if (cap < RA_RATE_MIN_PAGES)
		cap = RA_RATE_MIN_PAGES;
	return cap < max ? cap : max;
}

/*
 * The fair share of the budget.  Every reader with a window holds that
 * window and the next one in the cache; when the windows of all readers do
 * not fit in the budget, prefetch evicts prefetch before it is read (waste)
 * and the device reads the same pages again and again (measured: 64 paced
 * streams in a 64 MiB cgroup read 11x what they delivered, with windows of
 * 1-5 MiB each in a 30 MiB budget).  So no window is larger than
 * budget / (2 x readers) where pages leave the cache once read
 * (cfg.reads_dropped), else budget / (4 x readers): the pages read stay, and
 * the probation FIFO evicts by insertion, so a window must outlive the
 * insertions of every other reader's two windows and of the pages read
 * meanwhile.  Readers are those that got a window in this epoch or the one
 * before, counted mount-wide once per epoch each (a handle's state; the
 * streams that share one state count as one, an undercount that leaves
 * them the windows they had).  Never below a request: a window smaller
 * than the read that opens it misses again at once.
 */
#define RA_SHARE_EPOCH_NS (UINT64_C(1000) * 1000000)
#define RA_SHARE_MIN_PAGES 16

static uint64_t share_epoch(uint64_t now)
{
	return (now / RA_SHARE_EPOCH_NS) & 0xffffffffu;
}

/* Readers counted in epoch @ep or the one before, the larger count. */
static uint64_t share_readers(struct ra_engine *e, uint64_t ep)
{
	uint64_t n = 0, prev = (ep - 1) & 0xffffffffu;

	for (int i = 0; i < 2; i++) {
		uint64_t v = __atomic_load_n(&e->share[i], __ATOMIC_RELAXED);

		if (((v >> 32) == ep || (v >> 32) == prev) &&
		    (v & 0xffffffffu) > n)
			n = v & 0xffffffffu;
	}
	return n;
}

/* Count a reader last counted in epoch *@seen (its owner's lock held). */
static void share_count(struct ra_engine *e, uint64_t *seen, uint64_t ep)
{
	uint64_t *slot = &e->share[ep & 1], v, nv;

	if (*seen == ep)
		return;
	*seen = ep;
	v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	do {
		nv = (v >> 32) == ep ? v + 1 : ep << 32 | 1;
	} while (!__atomic_compare_exchange_n(
		slot, &v, nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* The window cap the share allows in epoch @ep, for a request of @req. */
static uint64_t share_max(struct ra_engine *e, uint64_t ep, uint64_t req)
{
	uint64_t readers = share_readers(e, ep), share;

	share = cache_budget_pages(e->cache) /
		((e->cfg.reads_dropped ? 2 : 4) * (readers ? readers : 1));
	if (share < RA_SHARE_MIN_PAGES)
		share = RA_SHARE_MIN_PAGES;
	return share > req ? share : req;
}

/* When the reader of a decision reaches a page: it was at @index at @now,
 * reading @rate pages a second (0: not measured, or streams sharing one
 * state).  Prefetch is queued due then (ra_work.due), so the workers read
 * first what is wanted first. */
struct ra_due {
	uint64_t now, index, rate;
};

/* Longest wait a due time says: windows are read within seconds. */
#define RA_DUE_MAX_NS (UINT64_C(60) * 1000000000)

/* When page @first of @t's reader is read; 0: at once (no rate, behind). */
static uint64_t due_at(const struct ra_due *t, uint64_t first)
{
	double wait;

	if (!t || !t->rate || first <= t->index)
		return 0;
	wait = (double)(first - t->index) * 1e9 / (double)t->rate;
	return t->now +
	       (wait < (double)RA_DUE_MAX_NS ? (uint64_t)wait : RA_DUE_MAX_NS);
}

static void decide(struct ra_file *f, struct ra_state *st, bool async,
		   uint64_t index, uint64_t nr, struct ra_decision *d,
		   struct ra_due *due)
{
	struct ra_view v = {view_prev_hole, view_next_hole, f->m};
	struct ra_stream_table *table;
	struct ra_params p = {0};
	bool thrash = false, window;
	uint64_t tune, now = now_ns(), ep = share_epoch(now), share;

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
	p.rule = (enum ra_context_rule)((tune & TUNE_CONTEXT_MASK) >>
					TUNE_CONTEXT_SHIFT);
	table = tune & TUNE_NO_TABLE ? NULL : &f->table;
	feedback_locked(f, index, thrash);
	if (async) {
		p.max = rate_max(st, index, f->max, now);
	} else {
		/* A window opens here: its first mark's rate counts from
		 * now, so the second window is already sized to it. */
		p.max = f->max;
		st->mark_index = index;
		st->mark_ns = now;
	}
	share = share_max(f->e, ep, nr);
	if (p.max > share)
		p.max = share;
	p.no_readahead = f->advice == RA_ADVICE_RANDOM;
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
	 * the handle: a column scan's streams on one handle count one each. */
	if (window && d->io_nr)
		share_count(f->e,
			    table && d->stream >= 0
				    ? &table->s[d->stream].share_epoch
				    : &st->share_epoch,
			    ep);
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
		rc = ra_backing_queue(f->b, pages + i, j - i, f->e->pool, f->m,
				      f,
				      due_at(due, cache_page_index(pages[i])));
		if (rc) /* completed with -EAGAIN by backing.c: they leave */
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
		 uint64_t nr)
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
	return issue(f, &d, index, index + nr, !refault, &due);
}

int ra_marker_hit(struct ra_file *f, struct ra_state *st, uint64_t index,
		  uint64_t nr)
{
	struct ra_decision d;
	struct ra_due due;
	int rc;

	afs_assert_no_rcu();
	if (!nr || index >= CACHE_INDEX_LIMIT)
		return -EINVAL;
	decide(f, st, true, index, nr, &d, &due);
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
	max = f->max;
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
		f->advice = advice;
		f->max = advice == RA_ADVICE_SEQUENTIAL ? 2 * f->base_max
							: f->base_max;
		f->table.max = f->max;
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
	st->advice = f->advice;
	st->max_window = f->max;
	for (unsigned int i = 0;
	     i < f->table.nr && st->nr_streams < RA_STATS_STREAMS; i++) {
		const struct ra_stream *s = &f->table.s[i];
		struct ra_stream_stats *o = &st->streams[st->nr_streams];

		if (s->state == RA_STREAM_FREE)
			continue;
		o->state = s->state == RA_STREAM_ACTIVE
				   ? RA_STREAM_STATS_ACTIVE
				   : RA_STREAM_STATS_CANDIDATE;
		o->start = s->state == RA_STREAM_ACTIVE ? s->start : s->next;
		o->size = s->size;
		o->async_size = s->async_size;
		o->cap = s->state == RA_STREAM_ACTIVE ? s->cap : 0;
		o->windows = s->windows;
		o->thrash = s->thrash;
		o->waste = s->waste;
		st->nr_streams++;
	}
	pthread_mutex_unlock(&f->lock);
}

/* ---------------------------------------------------------------------- */
/* Run-time tuning                                                         */

int ra_engine_tune(struct ra_engine *e, const struct ra_tuning *t,
		   unsigned int what)
{
	uint64_t old, w;

	if (!e || !t ||
	    what & ~(RA_TUNE_MAX | RA_TUNE_CONTEXT | RA_TUNE_STREAM_TABLE))
		return -EINVAL;
	/* The rules of config_check(). */
	if (what & RA_TUNE_MAX && (t->max_bytes % CACHE_PAGE_SIZE ||
				   t->max_bytes > RA_MAX_BYTES_LIMIT))
		return -EINVAL;
	if (what & RA_TUNE_CONTEXT && (unsigned int)t->context > RA_CONTEXT_OFF)
		return -EINVAL;
	if (what & RA_TUNE_STREAM_TABLE &&
	    (unsigned int)t->stream_table > RA_STREAM_TABLE_OFF)
		return -EINVAL;
	/* Each call changes only its own fields, whatever runs at once. */
	old = __atomic_load_n(&e->tune, __ATOMIC_RELAXED);
	do {
		w = old;
		if (what & RA_TUNE_MAX)
			w = (w & ~TUNE_MAX_MASK) |
			    (t->max_bytes >> RA_PAGE_SHIFT);
		if (what & RA_TUNE_CONTEXT)
			w = (w & ~TUNE_CONTEXT_MASK) |
			    ((uint64_t)t->context << TUNE_CONTEXT_SHIFT);
		if (what & RA_TUNE_STREAM_TABLE)
			w = t->stream_table == RA_STREAM_TABLE_OFF
				    ? w | TUNE_NO_TABLE
				    : w & ~TUNE_NO_TABLE;
	} while (!__atomic_compare_exchange_n(
		&e->tune, &old, w, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	return 0;
}

void ra_engine_tuning(struct ra_engine *e, struct ra_tuning *out)
{
	uint64_t w = __atomic_load_n(&e->tune, __ATOMIC_ACQUIRE);

	out->max_bytes = (w & TUNE_MAX_MASK) << RA_PAGE_SHIFT;
	out->context = (enum ra_context_rule)((w & TUNE_CONTEXT_MASK) >>
					      TUNE_CONTEXT_SHIFT);
	out->stream_table =
		w & TUNE_NO_TABLE ? RA_STREAM_TABLE_OFF : RA_STREAM_TABLE_ON;
}
