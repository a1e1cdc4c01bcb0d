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
 * How the table combines with docs/design.md's per-handle rules (decide.c; the
 * table is optional, RA_KIND_* name the outcome):
 *
 * A stream S *reaches* @index when @index lies within RA_STREAM_REACH x
 * max(S.size, req) pages after its window [S.start, S.end), or anywhere
 * from that many pages before its origin (the lowest start it has had) up
 * to its window: where the stream has passed, a late request is part of
 * it, however late.  A stream at a 1 MiB window tolerates requests 4 MiB
 * ahead, and any lateness (an NFS
 * server's thread pool was measured delivering one client's sequential
 * read as 128 KiB requests from 35 threads, two thirds behind the furthest
 * offset, some by more than 2 MiB), a young stream only a few requests (so
 * it does not swallow a neighbouring stream, as in a matrix column scan).
 * When several reach @index, the closest wins (0 inside the window), ties
 * to the most recently used.
 *
 * Only a *followed* stream (readers reached its mark: S.windows >= 2) claims
 * requests in rules 1 and 4 (decide.c): a lone window, such as a header read
 * among random reads, must not capture the random reads near it.
 *
 * Sync miss at @index, @req pages, in this order:
 *   1. @index inside S's window (its pages were read ahead and are gone:
 *      evicted, thrashed, invalidated): STREAM_REFILL, start = @index,
 *      size = max(min(S.size, cap), req), async_size = size - req if that is
 *      positive, else size / 2 (the sequential-miss rule).
 *   2. docs/design.md's per-handle rules, exactly, with max = S.cap when a
 *      stream S reaches @index.  A window they open (initial, oversize,
 *      sequential, context) moves S forward, or starts a new stream (cap =
 *      max); a window that would move S back only refreshes S.  A window
 *      more than S.size past S's end whose previous page is present
 *      (cached or history) starts a new stream: another reader's trail
 *      (the next row of a column scan), not a reordered request of S.
 *   3. Random by those rules, but @index in [C.next - 1, C.next] of a
 *      candidate C: the sequential-miss rule applied to the inode's history
 *      instead of the handle's (STREAM_SEQ: start = @index, size =
 *      init_size(req), async_size as for a sequential miss; C becomes
 *      ACTIVE).  This is what finds a stream whose reads each come on a new
 *      handle, and interleaved streams one read earlier than context
 *      readahead does.
 *   4. Random by those rules, but a stream S reaches @index (a reordered
 *      request; not another reader's trail, as in rule 2):
 *      - @index >= S.end (it overtook the window): STREAM_AHEAD, push S as
 *        its mark would (start = S.end, size = ra_next_size(S.size),
 *        async_size = size), growing the size by ra_next_size() until the
 *        window covers the request; if the cap cannot cover it, the window
 *        starts at @index instead (the gap is filled by the late requests)
 *        with its mark after the request (async_size = size - req), not
 *        on the page the request reads.  S is then *overtaken* until one
 *        of its marks is reached (an async decision on S, or any window
 *        recorded into S but another STREAM_AHEAD).  Past an overtaken
 *        window S does not grow: a request within S.size of S.end pushes
 *        the next window of the same size, within the cap (STREAM_AHEAD;
 *        a reader of the share of its own), one further out reads only
 *        itself (STREAM_BEHIND's exact read).  A pool's
 *        late requests reach the pushed window's mark and S grows again;
 *        random reads that only happen to land ahead of a followed stream
 *        do not, and each costs at most a window of S's present size
 *        (10000 random 8 KiB reads of a 1 GiB file read 5 x what they
 *        asked when every such read grew S).
 *      - @index < S.start (a late request whose pages the stream skipped
 *        or lost): STREAM_BEHIND, read exactly [@index, @index + req), no
 *        mark; S's window and the handle's stay as they are.
 *   5. Otherwise random: read exactly the request; it leaves (or refreshes)
 *      a candidate with next = @index + req.  Random reads never touch an
 *      ACTIVE stream.
 *   The handle's state takes a copy of every window from 1, 3 and 4.
 * Async (mark hit at @index):
 *   1. An ACTIVE stream whose mark is @index: STREAM_ASYNC, docs/design.md's push
 *      on S's window with max = S.cap; a clean window for the feedback.
 *   2. @index behind a followed stream S's window, within its reach
 *      (ra_stream_passed(): a mark S was pushed past, reached late through
 *      a server's thread pool), and not the handle's own mark unless the
 *      handle's window ends at or past S.start: ASYNC_RECOVER at S's end,
 *      the push of rule 1 (start = S.end, size = next_size(S.size), with
 *      max = S.cap; a clean window).  S's pages up to its end are decided,
 *      so that is its next hole, whatever next_hole() says (consumed pages
 *      dropped to history are holes to it).  Each late mark so adds a
 *      window to S's lead until the lead covers the reordering.
 *   3. Otherwise docs/design.md's async rules on the handle state (own mark:
 *      push; else next_hole recovery), with max = S.cap when a stream S
 *      reaches @index; the window is recorded as in sync rule 2.
 *
 * Every window ends where another live, followed stream began (its
 * origin; never short of the request), without a mark: the pages past it
 * are that stream's (ra_stream_next_origin(), decide.c meet_next_stream()).
 *
 * Thrash feedback: a miss on a page the cache evicted prefetched-and-unused
 * (a ghost hit) and waste (such an eviction) halve the cap of the stream
 * they belong to, at most once per window (a lost window causes many
 * misses); each clean window (the stream's own mark reached, no shrink
 * since its previous window) grows the cap by a quarter, up to max.
 * Ageing: the table counts decisions (ticks); an ACTIVE stream unused for
 * RA_STREAM_IDLE ticks per slot is idle.  A new stream takes a free slot,
 * else the least recently used candidate or idle stream; when every slot
 * holds a live ACTIVE stream the table doubles (RA_STREAMS slots inline, up
 * to RA_STREAMS_MAX), and only a full table of RA_STREAMS_MAX gives up its
 * least recently used stream.  A new candidate never replaces a non-idle
 * ACTIVE stream and never grows the table: random reads stay in the
 * RA_STREAMS inline slots, while a matrix column scan (one stream a row,
 * each opened by the context rule) gets a stream a row.
 *
 * Memory: the inline slots, plus RA_STREAMS_MAX x sizeof(struct ra_stream)
 * (about 100 KiB) at most for a file read by that many streams, allocated
 * when the table grows and freed by ra_stream_table_destroy().
 *
 * Locking: none inside; ra.c guards a table with its file's table lock.
 * Growing allocates (malloc) under that lock; when it fails the table
 * keeps its size and replaces its least recently used stream as before.
 */
#ifndef AHEADFS_RA_STREAM_H
#define AHEADFS_RA_STREAM_H

#include <stdbool.h>
#include <stdint.h>

/* Slots per inode: RA_STREAMS inline (every file), doubled on demand up to
 * RA_STREAMS_MAX (files read by many streams at once: matrix column scans,
 * a server's clients on one file). */
#define RA_STREAMS 8
#define RA_STREAMS_MAX 1024

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
	uint64_t origin; /* ACTIVE: lowest window start so far */
	uint64_t next; /* CANDIDATE: page after its last read */
	uint64_t cap; /* window cap, min_cap..max */
	uint64_t last_use; /* table tick of the last decision */
	uint32_t windows_since_shrink;
	uint64_t share_epoch; /* the engine's fair share: last epoch counted */
	bool overtaken; /* the window was set for a request that overtook it
			 * (STREAM_AHEAD) and no mark of it was reached since:
			 * sync rule 4 does not grow it (above) */
	/* counters, for the stats */
	uint64_t windows;
	uint64_t thrash;
	uint64_t waste;
};

struct ra_stream_table {
	struct ra_stream *s; /* nr slots: inline, or allocated when grown */
	unsigned int nr;
	struct ra_stream inline_s[RA_STREAMS];
	uint64_t tick;
	uint64_t max; /* cap ceiling: the engine's max window */
	uint64_t min_cap; /* cap floor */
};

/* Reach of a stream, in windows (see the top).  A stream is idle after
 * RA_STREAM_IDLE decisions per slot of its table without one of its own
 * (64 x 8 = 512 at first).  min_cap = min(max, 4). */
#define RA_STREAM_REACH 4
#define RA_STREAM_IDLE 64

/** ra_stream_table_init() - Empty table for windows up to @max pages. */
void ra_stream_table_init(struct ra_stream_table *t, uint64_t max);

/** ra_stream_table_reset() - Forget every stream (file invalidated); the
 * table keeps its size. */
void ra_stream_table_reset(struct ra_stream_table *t);

/** ra_stream_table_destroy() - Free what the table allocated growing. */
void ra_stream_table_destroy(struct ra_stream_table *t);

/**
 * ra_stream_match() - The ACTIVE stream closest to @index among those that
 * reach it for a request of @req pages (see the top of this file).
 * Return: The slot, or -1.
 */
int ra_stream_match(const struct ra_stream_table *t, uint64_t index,
		    uint64_t req);

/**
 * ra_stream_passed() - Whether @slot's stream has passed @index: ACTIVE,
 * its window starting after @index by at most its reach for a request of
 * @req pages (see the top of this file).
 */
bool ra_stream_passed(const struct ra_stream_table *t, int slot, uint64_t index,
		      uint64_t req);

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
 * ra_stream_resize() - The window slot @slot took, (@start, @size), was
 * rounded to @new_size pages with the mark at @new_async from its end: the
 * stream keeps the window as read.  Nothing changes if the slot holds
 * another window by now.
 */
void ra_stream_resize(struct ra_stream_table *t, int slot, uint64_t start,
		      uint64_t size, uint64_t new_size, uint64_t new_async);

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

/**
 * ra_stream_next_origin() - The lowest origin in [@from, @to) of a live,
 * followed stream (ACTIVE, non-idle, a second window: a lone window may be
 * a passing duplicate of the stream asking) other than slot @self (-1: none
 * excluded).
 * Return: That origin, or @to.
 */
uint64_t ra_stream_next_origin(const struct ra_stream_table *t, int self,
			       uint64_t from, uint64_t to);

/** ra_stream_active_count() - ACTIVE, non-idle streams. */
unsigned int ra_stream_active_count(const struct ra_stream_table *t);

struct ra_stream_stats;

/**
 * ra_stream_table_stats() - The table's live streams (CANDIDATE and
 * ACTIVE, free slots skipped) as the stats show them (ra_file_stats()).
 * @out: room for @max entries.
 * Return: The entries filled, at most @max.
 */
unsigned int ra_stream_table_stats(const struct ra_stream_table *t,
				   struct ra_stream_stats *out,
				   unsigned int max);

#endif /* AHEADFS_RA_STREAM_H */
