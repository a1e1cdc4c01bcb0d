/* stats.c - user.aheadfs.stats, rendered from the schema (schema.h).
 *
 * Each value is a snapshot struct with one member per schema row
 * (stats_internal.h), filled from the modules' own stats
 * (cache_mapping_stats(), cache_stats(), ra_file_stats(),
 * ra_engine_stats(), ra_engine_tuning()) and the settings' name tables,
 * then written by one walk over the schema's rows: the keys, their order
 * and the objects they sit in come from the schema alone.
 *
 * Size bound (xattr.c renders twice: size query, then data): fixed keys,
 * numbers that gain a digit at a time, at most RA_STATS_STREAMS streams
 * (one stream is about 120 bytes: the slack covers four new streams
 * between the two calls).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "stats_internal.h"

_Static_assert(AFS_SCHEMA_KINDS == RA_KIND_COUNT - 1,
	       "the schema names every decision kind but RA_KIND_NONE");

/* A schema row and where its value sits in a snapshot. */
struct field_at {
	const char *obj, *key;
	enum afs_stat_kind kind;
	size_t off;
};

#define AT_FILE(obj, key, kind, help)                                          \
	{#obj, #key, AFS_STAT_##kind,                                          \
	 offsetof(struct afs_stats_file, obj##_##key)},
#define AT_ROOT(obj, key, kind, help)                                          \
	{#obj, #key, AFS_STAT_##kind,                                          \
	 offsetof(struct afs_stats_root, obj##_##key)},
#define AT_STREAM(obj, key, kind, help)                                        \
	{#obj, #key, AFS_STAT_##kind,                                          \
	 offsetof(struct afs_stats_stream, obj##_##key)},

static const struct field_at file_at[] = {AFS_SCHEMA_FILE(AT_FILE)};
static const struct field_at root_at[] = {AFS_SCHEMA_ROOT(AT_ROOT)};
static const struct field_at stream_at[] = {AFS_SCHEMA_STREAM(AT_STREAM)};

#define LEN(t) (sizeof(t) / sizeof((t)[0]))

/* -------------------------------------------------------------------- */
/* Rendering                                                              */

static void render(struct afs_jw *o, const struct field_at *t, size_t n,
		   const void *snap);

static void render_value(struct afs_jw *o, bool *first,
			 const struct field_at *f, const char *p)
{
	const struct afs_stats_streams *ss;
	const uint64_t *d;
	bool dfirst = true;

	switch (f->kind) {
	case AFS_STAT_COUNTER:
	case AFS_STAT_GAUGE:
		afs_jw_member_u64(o, first, f->key, *(const uint64_t *)p);
		break;
	case AFS_STAT_TEXT:
		afs_jw_member_str(o, first, f->key, *(const char *const *)p);
		break;
	case AFS_STAT_RATIO:
		afs_jw_member_ratio(o, first, f->key, *(const double *)p);
		break;
	case AFS_STAT_DECISIONS:
		d = (const uint64_t *)p;
		afs_jw_key(o, first, f->key);
		afs_jw_str(o, "{");
		for (int k = 0; k < AFS_SCHEMA_KINDS; k++)
			afs_jw_member_u64(o, &dfirst, afs_schema_kinds[k],
					  d[k]);
		afs_jw_str(o, "}");
		break;
	case AFS_STAT_STREAMS:
		ss = (const struct afs_stats_streams *)p;
		afs_jw_key(o, first, f->key);
		afs_jw_str(o, "[");
		for (unsigned int i = 0; i < ss->n; i++) {
			if (i)
				afs_jw_str(o, ", ");
			render(o, stream_at, LEN(stream_at), &ss->s[i]);
		}
		afs_jw_str(o, "]");
		break;
	}
}

/* One object of @n rows from @snap; consecutive rows of one obj are one
 * member object. */
static void render(struct afs_jw *o, const struct field_at *t, size_t n,
		   const void *snap)
{
	const char *open = "";
	bool top = true, first = true;

	afs_jw_str(o, "{");
	for (size_t i = 0; i < n; i++) {
		const struct field_at *f = &t[i];

		if (strcmp(f->obj, open)) {
			if (*open)
				afs_jw_str(o, "}");
			open = f->obj;
			if (*open) {
				afs_jw_key(o, &top, open);
				afs_jw_str(o, "{");
				first = true;
			}
		}
		render_value(o, *open ? &first : &top, f,
			     (const char *)snap + f->off);
	}
	if (*open)
		afs_jw_str(o, "}");
	afs_jw_str(o, "}");
}

/* -------------------------------------------------------------------- */
/* Collecting                                                             */

uint64_t afs_stats_pages_of(uint64_t size)
{
	uint64_t pages = (size + CACHE_PAGE_SIZE - 1) >> CACHE_PAGE_SHIFT;

	return pages < CACHE_INDEX_LIMIT ? pages : CACHE_INDEX_LIMIT;
}

/* The cache members of a value: the schema's keys are the cache's own
 * field names (cache_mapping_stats, cache_stats). */
#define COPY_CACHE(obj, key, kind, help) COPY_CACHE_##obj(key)
#define COPY_CACHE_cache(key) s->cache_##key = c->key;
#define COPY_CACHE_(key)
#define COPY_CACHE_file(key)
#define COPY_CACHE_options(key)
#define COPY_CACHE_backing(key)
#define COPY_CACHE_readahead(key)
#define COPY_CACHE_memory(key)
#define COPY_CACHE_files(key)
#define COPY_CACHE_warm(key)
#define COPY_CACHE_watch(key)
#define COPY_CACHE_writes(key)
#define COPY_CACHE_passthrough(key)
#define COPY_CACHE_transport(key)

/* The watcher's members: the schema's keys are struct afs_watch_counts's
 * field names (fs/watch/watch.h). */
#define COPY_WATCH(obj, key, kind, help) COPY_WATCH_##obj(key)
#define COPY_WATCH_watch(key) s->watch_##key = w->key;
#define COPY_WATCH_(key)
#define COPY_WATCH_options(key)
#define COPY_WATCH_cache(key)
#define COPY_WATCH_backing(key)
#define COPY_WATCH_readahead(key)
#define COPY_WATCH_memory(key)
#define COPY_WATCH_files(key)
#define COPY_WATCH_warm(key)
#define COPY_WATCH_writes(key)
#define COPY_WATCH_passthrough(key)
#define COPY_WATCH_transport(key)

static void root_watch(struct afs_stats_root *s,
		       const struct afs_watch_counts *w)
{
	AFS_SCHEMA_ROOT(COPY_WATCH)
}

/* The passthrough members (fs/stats/xattr.h, the adapter's snapshot); the
 * names are "off" on a mount whose adapter never set them (unit tests). */
static void root_passthrough(struct afs_stats_root *s,
			     const struct afs_xattr_passthrough *p)
{
	s->passthrough_mode = p->mode ? p->mode : "off";
	s->passthrough_state = p->state ? p->state : "off";
	s->passthrough_opens = p->c.opens;
	s->passthrough_opens_cached = p->c.opens_cached;
	s->passthrough_opens_direct = p->c.opens_direct;
	s->passthrough_opens_resident = p->c.opens_resident;
	s->passthrough_opens_random = p->c.opens_random;
	s->passthrough_fallback_mount = p->c.fallback_mount;
	s->passthrough_fallback_inode = p->c.fallback_inode;
	s->passthrough_fallback_file = p->c.fallback_file;
	s->passthrough_fallback_setid = p->c.fallback_setid;
	s->passthrough_backing_files = p->c.backing_files;
}

/* The transport members (fs/stats/xattr.h, the adapter's snapshot). */
static void root_transport(struct afs_stats_root *s,
			   const struct afs_xattr_transport *t)
{
	s->transport_mode = t->mode ? t->mode : "dev";
	s->transport_state = t->state ? t->state : "off";
	s->transport_requests = t->requests;
	s->transport_unanswered = t->unanswered;
}

static void file_cache(struct afs_stats_file *s,
		       const struct cache_mapping_stats *c)
{
	AFS_SCHEMA_FILE(COPY_CACHE)
}

static void root_cache(struct afs_stats_root *s, const struct cache_stats *c)
{
	AFS_SCHEMA_ROOT(COPY_CACHE)
}

/* The readahead counters a file and the mount share, and the summaries
 * docs/stats.md defines. */
#define COPY_RA_COUNTS(s, c)                                                   \
	do {                                                                   \
		const uint64_t *d_ = (c)->decisions;                           \
		uint64_t stream_ =                                             \
			d_[RA_KIND_STREAM_SEQ] + d_[RA_KIND_STREAM_AHEAD] +    \
			d_[RA_KIND_STREAM_REFILL] + d_[RA_KIND_STREAM_BEHIND]; \
                                                                               \
		(s)->readahead_sync =                                          \
			d_[RA_KIND_INITIAL] + d_[RA_KIND_OVERSIZE] +           \
			d_[RA_KIND_SEQ_MISS] + d_[RA_KIND_CONTEXT] +           \
			d_[RA_KIND_RANDOM] + stream_;                          \
		(s)->readahead_async = d_[RA_KIND_ASYNC] +                     \
				       d_[RA_KIND_ASYNC_RECOVER] +             \
				       d_[RA_KIND_STREAM_ASYNC];               \
		(s)->readahead_context = d_[RA_KIND_CONTEXT];                  \
		(s)->readahead_random = d_[RA_KIND_RANDOM];                    \
		(s)->readahead_stream = stream_ + d_[RA_KIND_STREAM_ASYNC];    \
		memcpy((s)->readahead_decisions, d_ + 1,                       \
		       sizeof((s)->readahead_decisions));                      \
		(s)->readahead_windows = (c)->windows;                         \
		(s)->readahead_sync_pages = (c)->sync_pages;                   \
		(s)->readahead_async_pages = (c)->async_pages;                 \
		(s)->readahead_queued = (c)->queued;                           \
		(s)->readahead_queue_refused = (c)->queue_refused;             \
		(s)->readahead_enospc = (c)->enospc;                           \
		(s)->readahead_thrash = (c)->thrash;                           \
		(s)->readahead_waste = (c)->waste;                             \
		(s)->readahead_errors = (c)->errors;                           \
		(s)->readahead_resident_skipped = (c)->resident_skipped;       \
	} while (0)

/* The streams, active ones first (stable order otherwise). */
static void file_streams(struct afs_stats_streams *out,
			 const struct ra_file_stats *r)
{
	unsigned int n = r->nr_streams < RA_STATS_STREAMS ? r->nr_streams
							  : RA_STATS_STREAMS;

	out->n = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < n; i++) {
			const struct ra_stream_stats *s = &r->streams[i];
			struct afs_stats_stream *o = &out->s[out->n];

			if ((s->state == RA_STREAM_STATS_ACTIVE) != !pass)
				continue;
			o->_state = ra_stream_state_name(s->state);
			o->_start = s->start;
			o->_size = s->size;
			o->_async_size = s->async_size;
			o->_cap = s->cap;
			o->_windows = s->windows;
			o->_thrash = s->thrash;
			o->_waste = s->waste;
			out->n++;
		}
	}
}

static void collect_file(const struct afs_xattr_target *t,
			 struct afs_stats_file *s)
{
	struct afs_fcache_stats fr;
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	const char *advice;

	afs_fcache_stats(t->fc, &fr);
	cache_mapping_stats(fr.map, &ms);
	ra_file_stats(fr.raf, &rs);
	memset(s, 0, sizeof(*s));
	s->file_ino = t->shown_ino;
	s->file_size =
		t->st && t->st->st_size > 0 ? (uint64_t)t->st->st_size : 0;
	s->file_pages = afs_stats_pages_of(s->file_size);
	s->file_passthrough_opens = t->passthrough_opens;
	file_cache(s, &ms);
	s->backing_io = ra_backing_io_name(rs.backing_io);
	s->backing_reads = rs.backing_reads;
	s->backing_bytes = rs.backing_bytes;
	s->backing_cached_reads = rs.cached_reads;
	s->backing_cached_bytes = rs.cached_bytes;
	/* backing.bytes / cache.hit_bytes; 0 when nothing was served */
	s->backing_amplification =
		ms.hit_bytes ? (double)rs.backing_bytes / (double)ms.hit_bytes
			     : 0;
	COPY_RA_COUNTS(s, &rs.c);
	s->readahead_max_window_pages = rs.max_window;
	s->readahead_stripe_pages = rs.stripe_pages;
	advice = ra_advice_name(rs.advice);
	s->readahead_advice = advice ? advice : "normal";
	file_streams(&s->_streams, &rs);
	s->_uncached_reads = fr.uncached_reads;
	s->_resident_reads = fr.resident_reads;
	s->_resident_spliced = fr.resident_spliced;
	s->_random_around = fr.random_around;
	s->_revalidations = fr.revalidations;
}

static void collect_root(struct afs_data *a, const struct afs_xattr_target *t,
			 struct afs_stats_root *s, char *started,
			 size_t started_len)
{
	const struct afs_data_config *cfg;
	struct afs_stats_aref ar;
	struct cache_stats cs;
	struct ra_engine_stats es;
	struct ra_tuning tune;
	struct timespec now;
	struct tm tm;
	time_t wall;

	afs_stats_aref(a, t, &ar);
	cfg = ar.cfg;
	wall = ar.d.started_wall;
	cache_stats(ar.cache, &cs);
	ra_engine_stats(ar.ra, &es);
	ra_engine_tuning(ar.ra, &tune);
	memset(s, 0, sizeof(*s));
	s->_version = AHEADFS_VERSION;
	clock_gettime(CLOCK_MONOTONIC, &now);
	s->_uptime_s = now.tv_sec > ar.d.started.tv_sec
			       ? (uint64_t)(now.tv_sec - ar.d.started.tv_sec) -
					 (now.tv_nsec < ar.d.started.tv_nsec)
			       : 0;
	if (!gmtime_r(&wall, &tm) ||
	    !strftime(started, started_len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(started, started_len, "1970-01-01T00:00:00Z");
	s->_started = started;

	s->options_read_mode = ra_name_of(afs_read_mode_names, cfg->read_mode);
	s->options_write_mode =
		ra_name_of(afs_write_mode_names, cfg->write_mode);
	s->options_write_behind = cfg->write_behind;
	s->options_write_direct = cfg->write_direct;
	s->options_cache_size = cfg->cache_size;
	s->options_ra_max = tune.max_bytes;
	s->options_ra_workers = es.workers;
	s->options_stripe = cfg->ra.stripe_bytes;
	s->options_chunk = cfg->ra.chunk_bytes;
	s->options_context_ra = ra_name_of(ra_context_names, tune.context);
	s->options_stream_table =
		ra_name_of(ra_stream_table_names, tune.stream_table);
	s->options_backing_io = ra_backing_io_name(cfg->ra.backing_io);

	root_cache(s, &cs);
	s->memory_cgroup_limit = ar.pressure.limit;
	s->memory_cgroup_unreclaimable = ar.pressure.unreclaimable;
	s->memory_pressure_shrinks = ar.pressure.shrinks;
	s->memory_pressure_grows = ar.pressure.grows;
	s->memory_trimmed_bytes = ar.pressure.trimmed;
	s->backing_reads = es.backing_reads;
	s->backing_bytes = es.backing_bytes;
	s->backing_cached_reads = es.cached_reads;
	s->backing_cached_bytes = es.cached_bytes;
	s->backing_errors = es.backing_errors;
	s->backing_opens_direct = es.opens_direct;
	s->backing_opens_buffered = es.opens_buffered;
	COPY_RA_COUNTS(s, &es.c);
	s->readahead_files = es.files;
	s->readahead_workers = es.workers;
	s->readahead_queue_depth = es.queue_depth_now;
	s->readahead_workers_busy = es.workers_busy;
	s->readahead_queue_dropped = es.queue_dropped;
	s->readahead_queue_late = es.queue_late;
	s->files_idle = ar.d.idle;
	s->files_idle_max = ar.d.idle_max;
	s->files_revived = ar.d.revived;
	s->files_revived_changed = ar.d.revived_changed;
	s->files_idle_dropped = ar.d.idle_dropped;
	s->warm_pending = ar.warm.pending;
	s->warm_files = ar.warm.files;
	s->warm_skipped = ar.warm.skipped;
	s->warm_bytes = ar.warm.bytes;
	s->warm_pauses = ar.warm.pauses;
	s->warm_checkpoints = ar.warm.checkpoints;
	s->warm_refused = ar.warm.refused;
	root_watch(s, &ar.watch);
	s->writes_behind_pieces = ar.d.behind.pieces;
	s->writes_behind_bytes = ar.d.behind.bytes;
	s->writes_behind_skipped = ar.d.behind.skipped;
	s->writes_behind_failed = ar.d.behind.failed;
	s->writes_direct_writes = ar.d.direct.writes;
	s->writes_direct_bytes = ar.d.direct.bytes;
	s->writes_direct_refused = ar.d.direct.refused;
	root_passthrough(s, &ar.passthrough);
	root_transport(s, &ar.transport);
	s->_uncached_reads = ar.d.uncached_reads;
	s->_resident_reads = ar.d.resident_reads;
	s->_resident_spliced = ar.d.resident_spliced;
	s->_random_around = ar.d.random_around;
	s->_revalidations = ar.d.revalidations;
}

ssize_t afs_stats_get(struct afs_data *a, const struct afs_xattr_target *t,
		      char *buf, size_t size)
{
	struct afs_jw o = {.buf = size ? buf : NULL,
			   .cap = afs_stats_value_cap(size)};

	if (t->is_root) {
		struct afs_stats_root s;
		char started[32];

		collect_root(a, t, &s, started, sizeof(started));
		render(&o, root_at, LEN(root_at), &s);
	} else {
		struct afs_stats_file s;

		collect_file(t, &s);
		render(&o, file_at, LEN(file_at), &s);
	}
	if (!size)
		return afs_stats_size_answer(o.len);
	return o.len <= o.cap ? (ssize_t)o.len : -ERANGE;
}
