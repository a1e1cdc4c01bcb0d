/* stream.h - the per-inode stream table: a few streams per inode, shared by
 * every handle and thread reading it.
 *
 * Internal to ra/.  A stream is what a sequential reader leaves behind,
 * independent of the handle (fh) or thread that carried each request:
 *
 *   CANDIDATE  a random read's trace: where its next read would start
 *              (@next).  Random reads may only leave candidates.
 *   ACTIVE     a window [start, start + size) with its READAHEAD mark at
 *              start + size - async_size, and a cap on its window size
 *              (thrash feedback).
 *
 * How the table combines with DESIGN.md's per-handle rules (decide.c; the
 * table is optional, RA_KIND_* name the outcome):
 *
 * Sync miss at @index, @req pages:
 *   1. An ACTIVE stream S matches @index when @index lies in
 *      [S.start - behind, S.start + S.size + behind]: behind tolerates
 *      requests that arrive late or early (an NFS server's thread pool was
 *      measured delivering one sequential read up to several MiB out of
 *      order).  The closest stream wins.  With a match, S's window is the
 *      state and max is min(max, S.cap):
 *      - @index >= S's window end (a request that overtook the window):
 *        STREAM_AHEAD, push S forward as its mark would (start = end,
 *        size = next_size(size), async_size = size), growing the size by
 *        next_size() until the window covers the request; if even max
 *        cannot cover it, the window starts at @index instead (the pages
 *        skipped are filled by the late requests, rule STREAM_BEHIND).
 *      - @index inside S's window (its pages were read ahead and are gone:
 *        evicted, thrashed or invalidated): STREAM_REFILL, start = @index,
 *        size = max(min(S.size, max), req), async_size = size - req if that
 *        is positive, else size / 2 (the sequential-miss rule).
 *      - @index before S's window (a late request whose pages the stream
 *        skipped or lost): STREAM_BEHIND, read [@index, @index + n) with
 *        n = max(req, min(S.start - @index, max)), no mark; S's window and
 *        the handle's stay as they are.
 *      Otherwise the handle's state takes a copy of the new window.
 *   2. No match: DESIGN.md's rules on the handle state, exactly.  A window
 *      they open (initial, oversize, sequential, context) becomes a new
 *      ACTIVE stream (cap = max).  A random result is then checked
 *      against the candidates: @index in [C.next - 1, C.next] is the
 *      sequential-miss rule applied to the inode's history rather than the
 *      handle's (STREAM_SEQ: start = @index, size = init_size(req), async
 *      as for a sequential miss; C becomes ACTIVE).  Otherwise the read
 *      stays random and leaves (or refreshes) a candidate.
 * Async (mark hit at @index):
 *   1. An ACTIVE stream whose mark is @index: STREAM_ASYNC, DESIGN.md's push
 *      on S's window with max = min(max, S.cap); a clean window.
 *   2. Otherwise DESIGN.md's async rules on the handle state (own mark:
 *      push; else next_hole recovery), with max = min(max, S.cap) when a
 *      stream S matches @index; the window goes to S (or a new stream).
 *
 * Thrash feedback: a miss on a page the cache evicted prefetched-and-unused
 * (a ghost hit) and waste (such an eviction) halve the cap of the stream
 * they belong to, at most once per window (a lost window causes many
 * misses); each clean window (the stream's own mark reached, no shrink
 * since its previous window) grows the cap by a quarter, up to max.
 * Ageing: the table counts decisions (ticks); an ACTIVE stream unused for
 * @idle ticks is idle.  A new stream takes a free slot, else the least
 * recently used candidate or idle stream, else the least recently used
 * stream; a new candidate never replaces a non-idle ACTIVE stream.
 *
 * Locking: none inside; ra.c guards a table with its file's table lock.
 */
#ifndef AHEADFS_RA_STREAM_H
#define AHEADFS_RA_STREAM_H

#include <stdbool.h>
#include <stdint.h>

/* Slots per inode: small and fixed (matrix scans with more columns than
 * this fall back to the per-handle and context rules). */
#define RA_STREAMS 8

enum ra_stream_state {
	RA_STREAM_FREE = 0,
	RA_STREAM_CANDIDATE,
	RA_STREAM_ACTIVE,
};

struct ra_stream {
	enum ra_stream_state state;
	uint64_t start; /* ACTIVE: the window */
	uint64_t size;
	uint64_t async_size;
	uint64_t next; /* CANDIDATE: page after its last read */
	uint64_t cap; /* window cap, min_cap..max */
	uint64_t last_use; /* table tick of the last decision */
	uint32_t windows_since_shrink;
	/* counters, for the stats */
	uint64_t windows;
	uint64_t thrash;
	uint64_t waste;
};

struct ra_stream_table {
	struct ra_stream s[RA_STREAMS];
	uint64_t tick;
	uint64_t max; /* cap ceiling: the engine's max window */
	uint64_t min_cap; /* cap floor */
	uint64_t behind; /* match tolerance behind a window, pages */
	uint64_t idle; /* ticks after which an ACTIVE stream is idle */
};

/* Defaults: behind = max(4 * max, 2048) pages (8 MiB and more: the NFS
 * measurement saw 35 threads with 128 KiB requests in flight, 4.4 MiB, and
 * requests more than 2 MiB behind the furthest), idle = 64 * RA_STREAMS
 * decisions, min_cap = min(max, 4). */
#define RA_STREAM_BEHIND_MIN 2048

/** ra_stream_table_init() - Empty table for windows up to @max pages. */
void ra_stream_table_init(struct ra_stream_table *t, uint64_t max);

/** ra_stream_table_reset() - Forget every stream (file invalidated). */
void ra_stream_table_reset(struct ra_stream_table *t);

/**
 * ra_stream_match() - The ACTIVE stream closest to @index within its match
 * range (see the top of this file).
 * Return: The slot, or -1.
 */
int ra_stream_match(const struct ra_stream_table *t, uint64_t index);

/**
 * ra_stream_match_mark() - The ACTIVE stream whose READAHEAD mark is @index.
 * Return: The slot, or -1.
 */
int ra_stream_match_mark(const struct ra_stream_table *t, uint64_t index);

/**
 * ra_stream_match_candidate() - A CANDIDATE with @index in [next - 1, next].
 * Return: The slot, or -1.
 */
int ra_stream_match_candidate(const struct ra_stream_table *t, uint64_t index);

/**
 * ra_stream_set_window() - Make slot @slot (or a new slot if -1) an ACTIVE
 * stream with this window, and count a decision on it.
 * Return: The slot used.
 */
int ra_stream_set_window(struct ra_stream_table *t, int slot, uint64_t start,
			 uint64_t size, uint64_t async_size);

/**
 * ra_stream_note_candidate() - A random read of @req pages at @index:
 * refresh the candidate it continues, or leave a new one.
 */
void ra_stream_note_candidate(struct ra_stream_table *t, uint64_t index,
			      uint64_t req);

/** ra_stream_cap() - Window cap of @slot; t->max when @slot is -1. */
uint64_t ra_stream_cap(const struct ra_stream_table *t, int slot);

/**
 * ra_stream_clean_window() - @slot's own mark was reached: the window it
 * marks was used before being evicted.  Grows the cap (see the top).
 */
void ra_stream_clean_window(struct ra_stream_table *t, int slot);

/**
 * ra_stream_thrash() - A miss at @index on a page evicted prefetched and
 * unused.  Shrinks the cap of the stream matching @index.
 * Return: The slot charged, or -1 when no stream matches.
 */
int ra_stream_thrash(struct ra_stream_table *t, uint64_t index);

/**
 * ra_stream_waste() - @pages read ahead were evicted unused.  Charged to the
 * stream matching @index, or, when the index is unknown (RA_NO_PAGE: the
 * cache counts waste per file), to the ACTIVE stream with the largest
 * window.
 * Return: The slot charged, or -1.
 */
int ra_stream_waste(struct ra_stream_table *t, uint64_t index, uint64_t pages);

/** ra_stream_active_count() - ACTIVE, non-idle streams. */
unsigned int ra_stream_active_count(const struct ra_stream_table *t);

#endif /* AHEADFS_RA_STREAM_H */
