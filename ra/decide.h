/* decide.h - readahead decisions, pure: no I/O, no locks, no allocation.
 *
 * Internal to ra/ (ra.c and the tests).  Implements docs/design.md ("The window"):
 * the sync trigger (a read of @req pages at @index finds @index missing)
 * and the async trigger (a read hits a page carrying the READAHEAD mark),
 * on one per-handle state, optionally combined with the per-inode stream
 * table (stream.h).  The page cache is seen through struct ra_view (two
 * hole scans), so trace tests replay decisions against a model cache.
 *
 * All sizes and indexes are in pages.  Index arithmetic is unsigned and
 * wraps on purpose where docs/design.md's rules use -1: prev_index starts at
 * RA_PREV_NONE (UINT64_MAX, i.e. -1), so "index - prev_index <= 1" is true
 * for a first read at page 0 and false for one at page 1, as in the kernel.
 *
 * Locking: none here.  The caller serialises calls on one struct
 * ra_state (ra.c: its lock, st->lock) and on one stream table (ra.c: the
 * file's table lock); the view is a hint read under RCU, never a snapshot.
 */
#ifndef AHEADFS_RA_DECIDE_H
#define AHEADFS_RA_DECIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "ra/ra.h" /* struct ra_state, enum ra_context_rule, enum ra_kind */

struct ra_geometry;

struct ra_stream_table;

/* prev_index before any read: -1 in docs/design.md's arithmetic. */
#define RA_PREV_NONE UINT64_MAX
/* "No mark" / "no page": never a valid index (indexes stay below 2^52). */
#define RA_NO_PAGE UINT64_MAX

/**
 * struct ra_params - what a decision depends on besides state and view.
 * @max:	window cap in pages (>= 1).
 * @rule:	the context rule.
 * @eof:	file size in pages (rounded up); windows are clipped to it for
 *		I/O, the state keeps the unclipped window (as the kernel does).
 *		UINT64_MAX: unknown/unbounded.
 * @geom:	the backing's stripe geometry, or NULL: a window's end is
 *		rounded onto the stripe where that costs nothing
 *		(ra_geometry_round_end()), in the handle state and the stream
 *		table alike, so the decision is final as it comes out.
 * @no_readahead: advice RANDOM: every miss reads exactly its request and
 *		no mark pushes a window.
 */
struct ra_params {
	uint64_t max;
	enum ra_context_rule rule;
	uint64_t eof;
	const struct ra_geometry *geom;
	bool no_readahead;
};

/**
 * struct ra_view - the page cache as the decisions see it (a hint).
 * @prev_hole:	first index in [index - max_scan + 1, index], scanning down,
 *		that holds no page (history counts as present); index -
 *		max_scan if all are present; UINT64_MAX if every page down to
 *		0 is present (within max_scan).  cache_prev_hole_rcu().
 * @next_hole:	first index in [index, index + max_scan) with no data page
 *		(history is a hole); index + max_scan if none.
 *		cache_next_hole_rcu().
 */
struct ra_view {
	uint64_t (*prev_hole)(void *ctx, uint64_t index, uint64_t max_scan);
	uint64_t (*next_hole)(void *ctx, uint64_t index, uint64_t max_scan);
	void *ctx;
};

/**
 * struct ra_decision - what to read.
 * @kind:	the rule that fired.
 * @start, @size, @async_size: the window the rule chose (unclipped); for
 *		RA_KIND_RANDOM, the request itself (async_size 0); size 0 for
 *		RA_KIND_ASYNC_GIVEUP.
 * @io_start, @io_nr: the pages to insert and read: the window clipped to
 *		EOF (io_nr 0: nothing to read).
 * @mark:	the page that gets the READAHEAD mark, or RA_NO_PAGE (random
 *		reads, or a mark that falls past EOF).
 * @stream:	slot of the stream-table entry involved, or -1.
 * @unfollowed:	the window is for a stream that neither the handle nor a
 *		table slot follows to here, and the fair share counts it as a
 *		reader of its own (ra.c): a context window; a window that goes
 *		on from another reader's mark with no slot to take it; the
 *		next window of an overtaken stream (STREAM_AHEAD again before
 *		any of its marks was reached).
 */
struct ra_decision {
	enum ra_kind kind;
	uint64_t start;
	uint64_t size;
	uint64_t async_size;
	uint64_t io_start;
	uint64_t io_nr;
	uint64_t mark;
	int stream;
	bool unfollowed;
};

/**
 * ra_init_size() - First window for a request of @req pages.
 *
 * Round @req up to a power of two; x4 if that is at most max/32, x2 if at
 * most max/4, else @max.
 * Context: Pure.
 * Return: The size in pages, in [1, max] for req <= max.
 */
uint64_t ra_init_size(uint64_t req, uint64_t max);

/**
 * ra_next_size() - Window after one of @cur pages.
 *
 * x4 below max/16, x2 up to max/2, else @max.
 * Context: Pure.
 * Return: The size in pages, at most max(@max, 4 * @cur).
 */
uint64_t ra_next_size(uint64_t cur, uint64_t max);

/**
 * ra_decide_sync() - Sync trigger: a read of @req pages at @index missed.
 * @table: the inode's stream table, or NULL to apply docs/design.md's per-handle
 *	   rules alone.  How the two combine is described in stream.h.
 *
 * Updates @st's window and @table as the rules say (not prev_index) and
 * fills @d.  @req 0 is taken as 1.
 * Context: Caller serialises on @st and @table; the view's scans must be
 * safe to call (ra.c holds the RCU read lock around this call).
 */
void ra_decide_sync(struct ra_state *st, struct ra_stream_table *table,
		    const struct ra_params *p, const struct ra_view *v,
		    uint64_t index, uint64_t req, struct ra_decision *d);

/**
 * ra_decide_async() - Async trigger: a read of @req pages at @index hit
 * the READAHEAD mark on page @index (the caller cleared it).
 *
 * Same contract as ra_decide_sync(); a RA_KIND_ASYNC_GIVEUP decision
 * reads nothing and leaves the window as it was.
 */
void ra_decide_async(struct ra_state *st, struct ra_stream_table *table,
		     const struct ra_params *p, const struct ra_view *v,
		     uint64_t index, uint64_t req, struct ra_decision *d);

#endif /* AHEADFS_RA_DECIDE_H */
