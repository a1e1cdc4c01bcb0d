/* map.c - user.aheadfs.map: a file's cached pages, as runs when they fit,
 * else a string of scaled cells (docs/stats.md).
 *
 * The form (runs or cells, pages_per_cell) follows from the file alone, the
 * same in the size query and the data call; a map that outgrew the
 * caller's buffer is rendered again with more pages per cell until it
 * fits.  The map is the one value that needs memory: its body (runs or
 * cells) is rendered before the header that counts its pages, into one
 * buffer of AFS_XATTR_VALUE_MAX bytes, then copied behind the header.
 * Pages are walked under rcu_read_lock() in batches of MAP_BATCH
 * (cache_gang_lookup_rcu()); only their indexes leave the read-side
 * section.  The walk is not a snapshot: a page inserted or evicted during
 * it may or may not be seen, but cached_pages always equals what the runs
 * or cells show.
 */
#include <errno.h>
#include <stdlib.h>

#include "stats_internal.h"

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

static uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

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

static void put_run(struct afs_jw *o, uint64_t start, uint64_t count,
		    bool first)
{
	afs_jw_str(o, first ? "[" : ", [");
	afs_jw_u64(o, start);
	afs_jw_str(o, ", ");
	afs_jw_u64(o, count);
	afs_jw_str(o, "]");
}

/*
 * The runs "[s, n], [s, n]" of the data pages of [0, @npages) into @o;
 * stops early once @o holds more than @limit bytes.
 * Return: The pages the runs cover.
 */
static uint64_t map_runs(struct cache_mapping *m, uint64_t npages,
			 struct afs_jw *o, size_t limit)
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
			  struct afs_jw *o)
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
				afs_jw_put(o, &d, 1);
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
		afs_jw_put(o, &d, 1);
	}
	return cached;
}

/* The header before the body of the map; @cells: the cells form. */
static void map_header(struct afs_jw *o, uint64_t npages, uint64_t cached,
		       uint64_t k, bool cells)
{
	bool first = true;

	afs_jw_str(o, "{");
	afs_jw_member_u64(o, &first, "file_pages", npages);
	afs_jw_member_u64(o, &first, "cached_pages", cached);
	afs_jw_member_u64(o, &first, "pages_per_cell", k);
	afs_jw_key(o, &first, cells ? "cells" : "runs");
	afs_jw_str(o, cells ? "\"" : "[");
}

/* Header + @body + tail into @buf (NULL: count only).  Return: length. */
static size_t map_emit(char *buf, size_t cap, uint64_t npages, uint64_t cached,
		       uint64_t k, bool cells, const struct afs_jw *body)
{
	struct afs_jw o = {.buf = buf, .cap = cap};

	map_header(&o, npages, cached, k, cells);
	afs_jw_put(&o, body->buf ? body->buf : "", body->buf ? body->len : 0);
	if (!body->buf)
		o.len += body->len;
	afs_jw_str(&o, cells ? "\"}" : "]}");
	return o.len;
}

/* Pages per cell for at most @avail cells, coarser than @k. */
static uint64_t coarser(uint64_t k, uint64_t npages, uint64_t avail)
{
	uint64_t fit = (npages + avail - 1) / avail;

	return fit > k ? fit : k + 1;
}

ssize_t afs_stats_get_map(const struct afs_xattr_target *t, char *buf,
			  size_t size)
{
	struct afs_fcache_stats fr;
	struct cache_mapping *m;
	uint64_t npages = afs_stats_pages_of(
		t->st && t->st->st_size > 0 ? (uint64_t)t->st->st_size : 0);
	uint64_t k = 1, cached;
	size_t cap = afs_stats_value_cap(size), total;
	struct afs_jw body = {0};
	char *scratch = NULL;
	ssize_t rc;

	afs_fcache_stats(t->fc, &fr);
	m = fr.map;
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
	rc = size ? (ssize_t)total : afs_stats_size_answer(total);
out_free:
	free(scratch);
	return rc;
}
