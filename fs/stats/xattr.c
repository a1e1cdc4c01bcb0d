/* xattr_ahead.c - the user.aheadfs.* names; see xattr_ahead.h and
 * docs/stats.md.
 *
 * Every value is rendered on demand from the live counters, twice per
 * getfattr (size query, then data): the size query renders into nothing
 * (struct out with no buffer counts the bytes), the data call renders into
 * the caller's buffer.  Nothing is kept between the two calls, so the size
 * answer carries slack (AFS_XATTR_SLACK) and each renderer bounds how much
 * its value can grow:
 *   stats  fixed keys, numbers that gain a digit at a time, and at most
 *          RA_STATS_STREAMS streams (one stream is about 120 bytes: the
 *          slack covers four new streams between the two calls).
 *   map    the form (runs or cells, pages_per_cell) follows from the file
 *          alone, the same in both calls; a map that outgrew the buffer is
 *          rendered again with more pages per cell until it fits.
 *
 * The map is the one value that needs memory: its body (runs or cells) is
 * rendered before the header that counts its pages, into one buffer of
 * AFS_XATTR_VALUE_MAX bytes, then copied behind the header.  Pages are
 * walked under rcu_read_lock() in batches of MAP_BATCH
 * (cache_gang_lookup_rcu()); only their indexes leave the read-side
 * section.  The walk is not a snapshot: a page inserted or evicted during
 * it may or may not be seen, but cached_pages always equals what the runs
 * or cells show.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>

#include "fs/stats/xattr.h"

#define PFX AFS_XATTR_PREFIX
#define PAGE_SHIFT CACHE_PAGE_SHIFT
#define PAGE_SIZE CACHE_PAGE_SIZE

/* Pages looked up per RCU read-side section by the map walk. */
#define MAP_BATCH 64
/* The runs form is used while the whole value stays within this, so that
 * its size answer (plus the slack) stays within AFS_XATTR_VALUE_MAX. */
#define MAP_RUNS_LIMIT (AFS_XATTR_VALUE_MAX - AFS_XATTR_SLACK)
/* Cells of the cells form at its finest resolution: one cell per page up
 * to this many pages, else pages_per_cell = ceil(file_pages / this). */
#define MAP_CELLS_MAX 64000
/* The longest map header and tail: four 20-digit numbers and the keys. */
#define MAP_HEADER_MAX 160
/* Longest settable value (tunables and advice are short words). */
#define VALUE_WORD_MAX 64

enum name_id {
	N_STATS,
	N_MAP,
	N_ADVICE,
	N_RA_MAX,
	N_CONTEXT_RA,
	N_STREAM_TABLE,
	N_UNKNOWN,
};

/* The names after the prefix, and on which kind of file each exists. */
static const struct {
	const char *name;
	bool on_reg, on_root;
} names[] = {
	[N_STATS] = {"stats", true, true},
	[N_MAP] = {"map", true, false},
	[N_ADVICE] = {"advice", true, false},
	[N_RA_MAX] = {"ra_max", false, true},
	[N_CONTEXT_RA] = {"context_ra", false, true},
	[N_STREAM_TABLE] = {"stream_table", false, true},
};

/*
 * The contract's names of the decision kinds (stats-schema.md).  Two of
 * them differ from ra_kind_name(): RA_KIND_SEQ_MISS ("sequential" there)
 * and RA_KIND_STREAM_SEQ ("stream_sequential").
 */
static const char *const kind_keys[RA_KIND_COUNT] = {
	[RA_KIND_INITIAL] = "initial",
	[RA_KIND_OVERSIZE] = "oversize",
	[RA_KIND_SEQ_MISS] = "seq_miss",
	[RA_KIND_CONTEXT] = "context",
	[RA_KIND_RANDOM] = "random",
	[RA_KIND_ASYNC] = "async",
	[RA_KIND_ASYNC_RECOVER] = "async_recover",
	[RA_KIND_ASYNC_GIVEUP] = "async_giveup",
	[RA_KIND_STREAM_SEQ] = "stream_seq",
	[RA_KIND_STREAM_AHEAD] = "stream_ahead",
	[RA_KIND_STREAM_REFILL] = "stream_refill",
	[RA_KIND_STREAM_BEHIND] = "stream_behind",
	[RA_KIND_STREAM_ASYNC] = "stream_async",
};

static uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t pages_of(off_t size)
{
	uint64_t pages;

	if (size <= 0)
		return 0;
	pages = ((uint64_t)size + PAGE_SIZE - 1) >> PAGE_SHIFT;
	return u64_min(pages, CACHE_INDEX_LIMIT);
}

/* -------------------------------------------------------------------- */
/* Output: a bounded buffer that counts what does not fit                 */

struct out {
	char *buf; /* NULL: count only */
	size_t cap;
	size_t len; /* bytes the value needs, stored or not */
};

static void out_put(struct out *o, const char *s, size_t n)
{
	if (o->buf && o->len < o->cap)
		memcpy(o->buf + o->len, s, u64_min(n, o->cap - o->len));
	o->len += n;
}

static void out_str(struct out *o, const char *s)
{
	out_put(o, s, strlen(s));
}

static void out_u64(struct out *o, uint64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);

	out_put(o, tmp, (size_t)n);
}

/* "key": with the comma every member but the first needs.  Keys and string
 * values here are fixed ASCII words: nothing to escape. */
static void j_key(struct out *o, bool *first, const char *key)
{
	out_str(o, *first ? "\"" : ", \"");
	*first = false;
	out_str(o, key);
	out_str(o, "\": ");
}

static void j_u64(struct out *o, bool *first, const char *key, uint64_t v)
{
	j_key(o, first, key);
	out_u64(o, v);
}

static void j_str(struct out *o, bool *first, const char *key, const char *v)
{
	j_key(o, first, key);
	out_str(o, "\"");
	out_str(o, v ? v : "unknown");
	out_str(o, "\"");
}

/* -------------------------------------------------------------------- */
/* Stats                                                                  */

struct file_figures {
	uint64_t ino, size;
	struct cache_mapping_stats ms;
	struct ra_file_stats rs; /* streams sorted: active first */
	uint64_t uncached_reads, revalidations;
};

struct root_figures {
	const struct afs_ahead *a;
	uint64_t uptime_s;
	char started[32];
	struct cache_stats cs;
	struct ra_engine_stats es;
	struct ra_tuning tune;
};

/* The readahead members the file and the root share (contract order). */
static void render_counts(struct out *o, bool *first, const struct ra_counts *c)
{
	const uint64_t *d = c->decisions;
	uint64_t stream = d[RA_KIND_STREAM_SEQ] + d[RA_KIND_STREAM_AHEAD] +
			  d[RA_KIND_STREAM_REFILL] + d[RA_KIND_STREAM_BEHIND];
	bool dfirst = true;

	j_u64(o, first, "sync",
	      d[RA_KIND_INITIAL] + d[RA_KIND_OVERSIZE] + d[RA_KIND_SEQ_MISS] +
		      d[RA_KIND_CONTEXT] + d[RA_KIND_RANDOM] + stream);
	j_u64(o, first, "async",
	      d[RA_KIND_ASYNC] + d[RA_KIND_ASYNC_RECOVER] +
		      d[RA_KIND_STREAM_ASYNC]);
	j_u64(o, first, "context", d[RA_KIND_CONTEXT]);
	j_u64(o, first, "random", d[RA_KIND_RANDOM]);
	j_u64(o, first, "stream", stream + d[RA_KIND_STREAM_ASYNC]);
	j_key(o, first, "decisions");
	out_str(o, "{");
	for (int k = RA_KIND_NONE + 1; k < RA_KIND_COUNT; k++)
		j_u64(o, &dfirst, kind_keys[k], d[k]);
	out_str(o, "}");
	j_u64(o, first, "windows", c->windows);
	j_u64(o, first, "sync_pages", c->sync_pages);
	j_u64(o, first, "async_pages", c->async_pages);
	j_u64(o, first, "queued", c->queued);
	j_u64(o, first, "queue_refused", c->queue_refused);
	j_u64(o, first, "enospc", c->enospc);
	j_u64(o, first, "thrash", c->thrash);
	j_u64(o, first, "waste", c->waste);
	j_u64(o, first, "errors", c->errors);
}

/* backing.bytes / cache.hit_bytes, three decimals; 0 when nothing was
 * served from the cache. */
static void render_amplification(struct out *o, bool *first, uint64_t bytes,
				 uint64_t served)
{
	char tmp[48];
	int n;

	j_key(o, first, "amplification");
	if (!served) {
		out_str(o, "0.000");
		return;
	}
	n = snprintf(tmp, sizeof(tmp), "%.3f", (double)bytes / (double)served);
	out_put(o, tmp, (size_t)n);
}

static void render_stream(struct out *o, const struct ra_stream_stats *s)
{
	bool first = true;

	out_str(o, "{");
	j_str(o, &first, "state", ra_stream_state_name(s->state));
	j_u64(o, &first, "start", s->start);
	j_u64(o, &first, "size", s->size);
	j_u64(o, &first, "async_size", s->async_size);
	j_u64(o, &first, "cap", s->cap);
	j_u64(o, &first, "windows", s->windows);
	j_u64(o, &first, "thrash", s->thrash);
	j_u64(o, &first, "waste", s->waste);
	out_str(o, "}");
}

static void render_file(struct out *o, const struct file_figures *f)
{
	const struct cache_mapping_stats *m = &f->ms;
	const struct ra_file_stats *r = &f->rs;
	const char *advice = ra_advice_name(r->advice);
	bool top = true, first;

	out_str(o, "{");
	j_key(o, &top, "file");
	first = true;
	out_str(o, "{");
	j_u64(o, &first, "ino", f->ino);
	j_u64(o, &first, "size", f->size);
	j_u64(o, &first, "pages", pages_of((off_t)f->size));
	out_str(o, "}");

	j_key(o, &top, "cache");
	first = true;
	out_str(o, "{");
	j_u64(o, &first, "cached_pages", m->cached_pages);
	j_u64(o, &first, "history_pages", m->history_pages);
	j_u64(o, &first, "hits", m->hits);
	j_u64(o, &first, "hit_bytes", m->hit_bytes);
	j_u64(o, &first, "misses", m->misses);
	j_u64(o, &first, "inserted", m->inserted);
	j_u64(o, &first, "prefetched", m->prefetched);
	j_u64(o, &first, "evicted", m->evicted);
	j_u64(o, &first, "waste", m->waste);
	j_u64(o, &first, "thrash", m->thrash);
	j_u64(o, &first, "errors", m->errors);
	j_u64(o, &first, "invalidated", m->invalidated);
	j_u64(o, &first, "to_history", m->to_history);
	j_u64(o, &first, "enospc", m->enospc);
	out_str(o, "}");

	j_key(o, &top, "backing");
	first = true;
	out_str(o, "{");
	j_str(o, &first, "io", ra_backing_io_name(r->backing_io));
	j_u64(o, &first, "reads", r->backing_reads);
	j_u64(o, &first, "bytes", r->backing_bytes);
	render_amplification(o, &first, r->backing_bytes, m->hit_bytes);
	out_str(o, "}");

	j_key(o, &top, "readahead");
	first = true;
	out_str(o, "{");
	render_counts(o, &first, &r->c);
	j_u64(o, &first, "max_window_pages", r->max_window);
	j_u64(o, &first, "stripe_pages", r->stripe_pages);
	j_str(o, &first, "advice", advice ? advice : "normal");
	out_str(o, "}");

	j_key(o, &top, "streams");
	out_str(o, "[");
	for (unsigned int i = 0; i < r->nr_streams; i++) {
		if (i)
			out_str(o, ", ");
		render_stream(o, &r->streams[i]);
	}
	out_str(o, "]");
	j_u64(o, &top, "uncached_reads", f->uncached_reads);
	j_u64(o, &top, "revalidations", f->revalidations);
	out_str(o, "}");
}

static void render_root(struct out *o, const struct root_figures *f)
{
	const struct afs_ahead_config *cfg = &f->a->cfg;
	const struct cache_stats *c = &f->cs;
	const struct ra_engine_stats *e = &f->es;
	bool top = true, first;

	out_str(o, "{");
	j_str(o, &top, "version", AHEADFS_VERSION);
	j_u64(o, &top, "uptime_s", f->uptime_s);
	j_str(o, &top, "started", f->started);

	j_key(o, &top, "options");
	first = true;
	out_str(o, "{");
	j_str(o, &first, "read_mode",
	      ra_name_of(afs_read_mode_names, cfg->read_mode));
	j_u64(o, &first, "cache_size", cfg->cache_size);
	j_u64(o, &first, "ra_max", f->tune.max_bytes);
	j_u64(o, &first, "ra_workers", e->workers);
	j_u64(o, &first, "stripe", cfg->ra.stripe_bytes);
	j_u64(o, &first, "chunk", cfg->ra.chunk_bytes);
	j_str(o, &first, "context_ra",
	      ra_name_of(ra_context_names, f->tune.context));
	j_str(o, &first, "stream_table",
	      ra_name_of(ra_stream_table_names, f->tune.stream_table));
	j_str(o, &first, "backing_io", ra_backing_io_name(cfg->ra.backing_io));
	out_str(o, "}");

	j_key(o, &top, "cache");
	first = true;
	out_str(o, "{");
	j_u64(o, &first, "budget_bytes", c->budget_bytes);
	j_u64(o, &first, "used_bytes", c->used_bytes);
	j_u64(o, &first, "pending_free_bytes", c->pending_free_bytes);
	j_u64(o, &first, "high_bytes", c->high_bytes);
	j_u64(o, &first, "low_bytes", c->low_bytes);
	j_u64(o, &first, "cached_pages", c->cached_pages);
	j_u64(o, &first, "history_pages", c->history_pages);
	j_u64(o, &first, "small_pages", c->small_pages);
	j_u64(o, &first, "main_pages", c->main_pages);
	j_u64(o, &first, "hits", c->hits);
	j_u64(o, &first, "misses", c->misses);
	j_u64(o, &first, "evictions", c->evictions);
	j_u64(o, &first, "waste", c->waste);
	j_u64(o, &first, "thrash", c->thrash);
	j_u64(o, &first, "promotions", c->promotions);
	j_u64(o, &first, "enospc", c->enospc);
	j_u64(o, &first, "alloc_waits", c->alloc_waits);
	j_u64(o, &first, "reclaim_runs", c->reclaim_runs);
	j_u64(o, &first, "mappings", c->mappings);
	j_u64(o, &first, "tree_bytes", c->tree_bytes);
	j_u64(o, &first, "page_overhead_bytes", c->page_overhead_bytes);
	out_str(o, "}");

	j_key(o, &top, "backing");
	first = true;
	out_str(o, "{");
	j_u64(o, &first, "reads", e->backing_reads);
	j_u64(o, &first, "bytes", e->backing_bytes);
	j_u64(o, &first, "errors", e->backing_errors);
	j_u64(o, &first, "opens_direct", e->opens_direct);
	j_u64(o, &first, "opens_buffered", e->opens_buffered);
	out_str(o, "}");

	j_key(o, &top, "readahead");
	first = true;
	out_str(o, "{");
	render_counts(o, &first, &e->c);
	j_u64(o, &first, "files", e->files);
	j_u64(o, &first, "workers", e->workers);
	j_u64(o, &first, "queue_depth", e->queue_depth_now);
	j_u64(o, &first, "workers_busy", e->workers_busy);
	j_u64(o, &first, "queue_dropped", e->queue_dropped);
	out_str(o, "}");
	j_u64(o, &top, "uncached_reads",
	      __atomic_load_n(&f->a->uncached_reads, __ATOMIC_RELAXED));
	j_u64(o, &top, "revalidations",
	      __atomic_load_n(&f->a->revalidations, __ATOMIC_RELAXED));
	out_str(o, "}");
}

static void file_figures(const struct afs_xattr_target *t,
			 struct file_figures *f)
{
	struct afs_fcache *fc = t->fc;
	struct ra_stream_stats *s = f->rs.streams;
	unsigned int n, active = 0;

	f->ino = t->shown_ino;
	f->size = t->st && t->st->st_size > 0 ? (uint64_t)t->st->st_size : 0;
	cache_mapping_stats(fc->map, &f->ms);
	ra_file_stats(fc->raf, &f->rs);
	f->uncached_reads =
		__atomic_load_n(&fc->uncached_reads, __ATOMIC_RELAXED);
	f->revalidations =
		__atomic_load_n(&fc->revalidations, __ATOMIC_RELAXED);

	/* Active streams first (stable order otherwise). */
	n = f->rs.nr_streams < RA_STATS_STREAMS ? f->rs.nr_streams
						: RA_STATS_STREAMS;
	for (unsigned int i = 0; i < n; i++) {
		if (s[i].state != RA_STREAM_STATS_ACTIVE)
			continue;
		struct ra_stream_stats tmp = s[i];

		memmove(&s[active + 1], &s[active], (i - active) * sizeof(*s));
		s[active++] = tmp;
	}
	f->rs.nr_streams = n;
}

static void root_figures(struct afs_ahead *a, struct root_figures *f)
{
	struct timespec now;
	struct tm tm;
	time_t wall = a->started_wall;

	f->a = a;
	clock_gettime(CLOCK_MONOTONIC, &now);
	f->uptime_s = now.tv_sec > a->started.tv_sec
			      ? (uint64_t)(now.tv_sec - a->started.tv_sec) -
					(now.tv_nsec < a->started.tv_nsec)
			      : 0;
	if (!gmtime_r(&wall, &tm) || !strftime(f->started, sizeof(f->started),
					       "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(f->started, sizeof(f->started),
			 "1970-01-01T00:00:00Z");
	cache_stats(a->cache, &f->cs);
	ra_engine_stats(a->ra, &f->es);
	ra_engine_tuning(a->ra, &f->tune);
}

/* The size answer for a value of @len bytes. */
static ssize_t size_answer(size_t len)
{
	size_t n = len + AFS_XATTR_SLACK;

	n = (n + AFS_XATTR_ROUND - 1) / AFS_XATTR_ROUND * AFS_XATTR_ROUND;
	return (ssize_t)(n < AFS_XATTR_VALUE_MAX ? n : AFS_XATTR_VALUE_MAX);
}

static size_t value_cap(size_t size)
{
	return size < AFS_XATTR_VALUE_MAX ? size : AFS_XATTR_VALUE_MAX;
}

static ssize_t get_stats(struct afs_ahead *a, const struct afs_xattr_target *t,
			 char *buf, size_t size)
{
	struct out o = {.buf = size ? buf : NULL, .cap = value_cap(size)};

	if (t->is_root) {
		struct root_figures f;

		root_figures(a, &f);
		render_root(&o, &f);
	} else {
		struct file_figures f;

		file_figures(t, &f);
		render_file(&o, &f);
	}
	if (!size)
		return size_answer(o.len);
	return o.len <= o.cap ? (ssize_t)o.len : -ERANGE;
}

/* -------------------------------------------------------------------- */
/* Map                                                                    */

/* Indexes of the data pages in [@from, @npages), up to MAP_BATCH. */
static unsigned int map_batch(struct cache_mapping *m, uint64_t from,
			      uint64_t npages, uint64_t *idx)
{
	struct cache_page *pages[MAP_BATCH];
	unsigned int n;

	rcu_read_lock();
	n = cache_gang_lookup_rcu(m, from, npages - 1, pages, MAP_BATCH);
	for (unsigned int i = 0; i < n; i++)
		idx[i] = cache_page_index(pages[i]);
	rcu_read_unlock();
	return n;
}

static void put_run(struct out *o, uint64_t start, uint64_t count, bool first)
{
	out_str(o, first ? "[" : ", [");
	out_u64(o, start);
	out_str(o, ", ");
	out_u64(o, count);
	out_str(o, "]");
}

/*
 * The runs "[s, n], [s, n]" of the data pages of [0, @npages) into @o;
 * stops early once @o holds more than @limit bytes.
 * Return: The pages the runs cover.
 */
static uint64_t map_runs(struct cache_mapping *m, uint64_t npages,
			 struct out *o, size_t limit)
{
	uint64_t idx[MAP_BATCH], next = 0, start = 0, count = 0, cached = 0;
	unsigned int n;
	bool first = true;

	while (next < npages && o->len <= limit) {
		n = map_batch(m, next, npages, idx);
		if (!n)
			break;
		for (unsigned int i = 0; i < n; i++) {
			if (count && idx[i] == start + count) {
				count++;
				continue;
			}
			if (count)
				put_run(o, start, count, first), first = false;
			start = idx[i];
			count = 1;
		}
		cached += n;
		next = idx[n - 1] + 1;
	}
	if (count)
		put_run(o, start, count, first);
	return cached;
}

/* The digit of a cell of @pages pages of which @cached are cached. */
static char cell_digit(uint64_t cached, uint64_t pages)
{
	uint64_t d;

	if (!cached)
		return '0';
	if (cached >= pages)
		return '8';
	d = (8 * cached + pages - 1) / pages;
	if (d < 1)
		d = 1;
	if (d > 7)
		d = 7;
	return (char)('0' + d);
}

/*
 * The cells of [0, @npages), @k pages each (the last one may be shorter),
 * into @o.  Return: the pages counted as cached.
 */
static uint64_t map_cells(struct cache_mapping *m, uint64_t npages, uint64_t k,
			  struct out *o)
{
	uint64_t idx[MAP_BATCH], next = 0, cell = 0, in_cell = 0, cached = 0;
	uint64_t ncells = (npages + k - 1) / k;
	unsigned int n;
	char d;

	while (next < npages) {
		n = map_batch(m, next, npages, idx);
		if (!n)
			break;
		for (unsigned int i = 0; i < n; i++) {
			uint64_t c = idx[i] / k;

			while (cell < c) {
				d = cell_digit(in_cell,
					       u64_min(k, npages - cell * k));
				out_put(o, &d, 1);
				cell++;
				in_cell = 0;
			}
			in_cell++;
		}
		cached += n;
		next = idx[n - 1] + 1;
	}
	for (; cell < ncells; cell++, in_cell = 0) {
		d = cell_digit(in_cell, u64_min(k, npages - cell * k));
		out_put(o, &d, 1);
	}
	return cached;
}

/* The header before the body of the map; @cells: the cells form. */
static void map_header(struct out *o, uint64_t npages, uint64_t cached,
		       uint64_t k, bool cells)
{
	bool first = true;

	out_str(o, "{");
	j_u64(o, &first, "file_pages", npages);
	j_u64(o, &first, "cached_pages", cached);
	j_u64(o, &first, "pages_per_cell", k);
	j_key(o, &first, cells ? "cells" : "runs");
	out_str(o, cells ? "\"" : "[");
}

/* Header + @body + tail into @buf (NULL: count only).  Return: length. */
static size_t map_emit(char *buf, size_t cap, uint64_t npages, uint64_t cached,
		       uint64_t k, bool cells, const struct out *body)
{
	struct out o = {.buf = buf, .cap = cap};

	map_header(&o, npages, cached, k, cells);
	out_put(&o, body->buf ? body->buf : "", body->buf ? body->len : 0);
	if (!body->buf)
		o.len += body->len;
	out_str(&o, cells ? "\"}" : "]}");
	return o.len;
}

/* Pages per cell for at most @avail cells, coarser than @k. */
static uint64_t coarser(uint64_t k, uint64_t npages, uint64_t avail)
{
	uint64_t fit = (npages + avail - 1) / avail;

	return fit > k ? fit : k + 1;
}

static ssize_t get_map(const struct afs_xattr_target *t, char *buf, size_t size)
{
	struct cache_mapping *m = t->fc->map;
	uint64_t npages = pages_of(t->st ? t->st->st_size : 0);
	uint64_t k = 1, cached;
	size_t cap = value_cap(size), total;
	struct out body = {0};
	char *scratch = NULL;
	ssize_t rc;

	if (size) {
		scratch = malloc(AFS_XATTR_VALUE_MAX);
		if (!scratch)
			return -ENOMEM;
		body.buf = scratch;
		body.cap = AFS_XATTR_VALUE_MAX;
	}
	/* Runs, while the value stays within MAP_RUNS_LIMIT. */
	cached = map_runs(m, npages, &body, MAP_RUNS_LIMIT);
	total = map_emit(NULL, 0, npages, cached, 1, false, &body);
	if (total <= MAP_RUNS_LIMIT && (!size || total <= cap)) {
		if (size)
			map_emit(buf, cap, npages, cached, 1, false, &body);
		goto out_answer;
	}
	/* Cells, at the resolution the file's size gives... */
	k = npages > MAP_CELLS_MAX
		    ? (npages + MAP_CELLS_MAX - 1) / MAP_CELLS_MAX
		    : 1;
	for (;;) {
		body.len = 0;
		cached = map_cells(m, npages, k, &body);
		total = map_emit(NULL, 0, npages, cached, k, true, &body);
		if (!size || total <= cap)
			break;
		/* ... or coarser, when the value outgrew the caller's buffer
		 * since its size query. */
		if (cap < AFS_XATTR_MAP_MIN_BUF) {
			rc = -ERANGE;
			goto out_free;
		}
		k = coarser(k, npages, cap - MAP_HEADER_MAX);
	}
	if (size)
		map_emit(buf, cap, npages, cached, k, true, &body);
out_answer:
	rc = size ? (ssize_t)total : size_answer(total);
out_free:
	free(scratch);
	return rc;
}

/* -------------------------------------------------------------------- */
/* Advice and tunables                                                    */

/* A short word value: copied, NUL-terminated, one trailing newline off.
 * Return: 0 or -EINVAL (too long, empty, or with a NUL or another newline
 * inside). */
static int word_of(const char *value, size_t size, char *w, size_t wlen)
{
	if (size && value[size - 1] == '\n')
		size--;
	if (!size || size >= wlen || memchr(value, '\0', size) ||
	    memchr(value, '\n', size))
		return -EINVAL;
	memcpy(w, value, size);
	w[size] = '\0';
	return 0;
}

static int set_tunable(struct afs_ahead *a, enum name_id id, const char *w)
{
	struct ra_tuning tune = {0};
	unsigned int what;
	int i;

	switch (id) {
	case N_RA_MAX:
		/* The range and the page multiple: ra_engine_tune(). */
		if (ra_parse_size(w, &tune.max_bytes))
			return -EINVAL;
		what = RA_TUNE_MAX;
		break;
	case N_CONTEXT_RA:
		i = ra_name_parse(ra_context_names, w);
		if (i < 0)
			return i;
		tune.context = (enum ra_context_rule)i;
		what = RA_TUNE_CONTEXT;
		break;
	case N_STREAM_TABLE:
		i = ra_name_parse(ra_stream_table_names, w);
		if (i < 0)
			return i;
		tune.stream_table = (enum ra_stream_table_mode)i;
		what = RA_TUNE_STREAM_TABLE;
		break;
	default:
		return -ENOTSUP;
	}
	return ra_engine_tune(a->ra, &tune, what);
}

static ssize_t get_word(const char *w, char *buf, size_t size)
{
	size_t len = strlen(w);

	if (!size)
		return size_answer(len);
	if (len > size)
		return -ERANGE;
	memcpy(buf, w, len);
	return (ssize_t)len;
}

static ssize_t get_tunable(struct afs_ahead *a, enum name_id id, char *buf,
			   size_t size)
{
	struct ra_tuning tune;
	char tmp[24];

	ra_engine_tuning(a->ra, &tune);
	switch (id) {
	case N_RA_MAX:
		snprintf(tmp, sizeof(tmp), "%" PRIu64, tune.max_bytes);
		return get_word(tmp, buf, size);
	case N_CONTEXT_RA:
		return get_word(ra_name_of(ra_context_names, tune.context), buf,
				size);
	default:
		return get_word(ra_name_of(ra_stream_table_names,
					   tune.stream_table),
				buf, size);
	}
}

/* -------------------------------------------------------------------- */
/* Entry points                                                           */

bool afs_xattr_ours(const char *name)
{
	return name && !strncmp(name, PFX, sizeof(PFX) - 1);
}

/* The name's id, N_UNKNOWN if it is ours but not known. */
static enum name_id name_id(const char *name)
{
	const char *rest = name + sizeof(PFX) - 1;

	for (int i = 0; i < N_UNKNOWN; i++)
		if (!strcmp(rest, names[i].name))
			return (enum name_id)i;
	return N_UNKNOWN;
}

/* Whether @id exists on @t's kind of file (a regular file with its cache,
 * or the root). */
static bool name_exists(enum name_id id, const struct afs_xattr_target *t)
{
	if (id == N_UNKNOWN)
		return false;
	if (t->is_root)
		return names[id].on_root;
	return t->is_reg && t->fc && names[id].on_reg;
}

ssize_t afs_xattr_ahead_get(struct afs_ahead *a,
			    const struct afs_xattr_target *t, const char *name,
			    char *buf, size_t size)
{
	enum name_id id;
	struct ra_file_stats rs;
	const char *w;

	if (!afs_xattr_ours(name))
		return -ENODATA;
	id = name_id(name);
	if (!name_exists(id, t))
		return -ENODATA;
	cache_thread_online();
	switch (id) {
	case N_STATS:
		return get_stats(a, t, buf, size);
	case N_MAP:
		return get_map(t, buf, size);
	case N_ADVICE:
		ra_file_stats(t->fc->raf, &rs);
		w = ra_advice_name(rs.advice);
		return get_word(w ? w : "normal", buf, size);
	default:
		return get_tunable(a, id, buf, size);
	}
}

int afs_xattr_ahead_set(struct afs_ahead *a, const struct afs_xattr_target *t,
			const char *name, const char *value, size_t size,
			int flags, uid_t caller_uid, uid_t owner_uid)
{
	char w[VALUE_WORD_MAX];
	enum ra_advice advice;
	enum name_id id;
	int rc;

	if (!afs_xattr_ours(name))
		return -ENOTSUP;
	id = name_id(name);
	if (!name_exists(id, t))
		return -ENOTSUP;
	if (id == N_STATS || id == N_MAP)
		return -EPERM;
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	if (flags & XATTR_CREATE)
		return -EEXIST;
	if (id != N_ADVICE && caller_uid != 0 && caller_uid != owner_uid)
		return -EPERM;
	rc = word_of(value, size, w, sizeof(w));
	if (rc)
		return rc;
	cache_thread_online();
	if (id != N_ADVICE)
		return set_tunable(a, id, w);
	if (ra_advice_parse(w, &advice))
		return -EINVAL;
	return ra_file_advise(t->fc->raf, advice, 0, 0);
}

int afs_xattr_ahead_remove(const struct afs_xattr_target *t, const char *name)
{
	if (!afs_xattr_ours(name) || !name_exists(name_id(name), t))
		return -ENODATA;
	return -EPERM;
}

size_t afs_xattr_ahead_filter_list(char *list, size_t len)
{
	size_t in = 0, out = 0;

	while (in < len) {
		char *end = memchr(list + in, '\0', len - in);
		size_t n = end ? (size_t)(end - (list + in)) + 1 : len - in;

		/* A name shorter than the prefix (or cut short) is not
		 * ours: compare within the entry only. */
		if (!(n >= sizeof(PFX) - 1 &&
		      !memcmp(list + in, PFX, sizeof(PFX) - 1))) {
			memmove(list + out, list + in, n);
			out += n;
		}
		in += n;
	}
	return out;
}
