/* decide.c - on-demand and context readahead decisions (docs/design.md ("The window")).
 *
 * A window, and where its READAHEAD mark sits:
 *
 *                   |<------------------- size ------------------->|
 *                   |                         |<--- async_size --->|
 *   ===#============#=========================#====================#====
 *      ^index       ^start                    ^mark
 *      (sync miss)                            start + size - async_size
 *
 * A sync miss opens a window at the missing page (initial, sequential,
 * oversize or context rule) or reads just the request (random).  When a
 * reader reaches the marked page, the next window is pushed right behind
 * this one (start += size, size = next_size(size), async_size = size: the
 * mark then sits on the new window's first page), so I/O stays one window
 * ahead of the reader.  A mark left by another reader (another handle,
 * thread or interleaved stream) does not match this handle's window; the
 * window is then rebuilt from the cache: it starts at the next hole after
 * the mark -- or, for a mark a followed stream was pushed past (a late
 * request through a server's thread pool), at that stream's end.
 *
 * Nothing here sleeps, locks or allocates: the caller serialises access to
 * the state and the table, and the view is a hint (a hole scan under RCU
 * is not a snapshot; a wrong hint costs a window, never correctness).
 */
#include <string.h>

#include "decide.h"
#include "geometry.h"

#include "stream.h"

/* The cap of @slot's stream (t->max for none), and never above p->max:
 * the caller's cap for this decision (ra.c with pace.c: the reader's rate
 * may lower it below the file's). */
static uint64_t stream_max(const struct ra_stream_table *t, int slot,
			   const struct ra_params *p)
{
	uint64_t cap = ra_stream_cap(t, slot);

	return cap < p->max ? cap : p->max;
}

static uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t u64_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t roundup_pow2(uint64_t n)
{
	if (n <= 1)
		return 1;
	if (n > (UINT64_C(1) << 63))
		return UINT64_C(1) << 63;
	return UINT64_C(1) << (64 - __builtin_clzll(n - 1));
}

uint64_t ra_init_size(uint64_t req, uint64_t max)
{
	uint64_t n = roundup_pow2(req);

	if (n <= max / 32)
		return n * 4;
	if (n <= max / 4)
		return n * 2;
	return max;
}

uint64_t ra_next_size(uint64_t cur, uint64_t max)
{
	if (cur < max / 16)
		return cur * 4;
	if (cur <= max / 2)
		return cur * 2;
	return max;
}

/* Fill @d from the window (start, size, async_size) and clip its I/O to
 * EOF.  The mark is dropped when it falls past EOF: no reader can reach it,
 * and the kernel does not set it either. */
static void decision_set(const struct ra_params *p, struct ra_decision *d,
			 enum ra_kind kind, uint64_t start, uint64_t size,
			 uint64_t async_size)
{
	d->kind = kind;
	d->unfollowed = false;
	d->start = start;
	d->size = size;
	d->async_size = async_size;
	d->io_start = start;
	d->io_nr = start >= p->eof ? 0 : u64_min(size, p->eof - start);
	if (kind == RA_KIND_RANDOM || kind == RA_KIND_ASYNC_GIVEUP || !size)
		d->mark = RA_NO_PAGE;
	else
		d->mark = start + size - async_size;
	if (d->mark != RA_NO_PAGE && d->mark >= d->io_start + d->io_nr)
		d->mark = RA_NO_PAGE;
}

/* prev_index is written by ra_note_read() without st->lock. */
static uint64_t prev_index(const struct ra_state *st)
{
	return __atomic_load_n(&st->prev_index, __ATOMIC_RELAXED);
}

bool ra_state_sequential(const struct ra_state *st, uint64_t index)
{
	return index == 0 || index - prev_index(st) <= 1;
}

static void state_set(struct ra_state *st, const struct ra_decision *d)
{
	st->start = d->start;
	st->size = d->size;
	st->async_size = d->async_size;
}

/* The initial window of docs/design.md's sync rule 1 (also used for a candidate
 * stream continued by another handle). */
static void initial_window(const struct ra_params *p, struct ra_decision *d,
			   enum ra_kind kind, uint64_t index, uint64_t req,
			   uint64_t max)
{
	uint64_t size = ra_init_size(req, max);

	decision_set(p, d, kind, index, size,
		     size > req ? size - req : size / 2);
}

/*
 * docs/design.md's sync rules on the handle state alone, with window cap @max.
 * Leaves @st untouched for a random read.
 */
static void sync_rules(struct ra_state *st, const struct ra_params *p,
		       const struct ra_view *v, uint64_t index, uint64_t req,
		       uint64_t max, struct ra_decision *d)
{
	uint64_t hole, contig, size;

	if (req > max || ra_state_sequential(st, index)) {
		initial_window(p, d,
			       index == 0  ? RA_KIND_INITIAL
			       : req > max ? RA_KIND_OVERSIZE
					   : RA_KIND_SEQ_MISS,
			       index, req, max);
		state_set(st, d);
		return;
	}
	if (p->rule == RA_CONTEXT_OFF)
		goto random;

	/* Pages cached right before @index: a stream that passed here leaves
	 * them.  prev_hole's UINT64_MAX sentinel (cached down to page 0) makes
	 * contig == index by the same wrap-around. */
	hole = v->prev_hole(v->ctx, index - 1, max);
	contig = index - 1 - hole;
	if (p->rule == RA_CONTEXT_CONSERVATIVE ? contig <= req : contig == 0)
		goto random;
	/* A run reaching page 0 is a whole-file read: trust it twice as much. */
	if (contig >= index)
		contig *= 2;
	if (p->rule == RA_CONTEXT_CONSERVATIVE) {
		size = u64_min(contig + req, max);
		decision_set(p, d, RA_KIND_CONTEXT, index, size, 1);
	} else {
		size = ra_init_size(contig + req, max);
		decision_set(p, d, RA_KIND_CONTEXT, index, size, size);
	}
	d->unfollowed = true;
	state_set(st, d);
	return;

random:
	/* Read exactly the request; the state stays as it was, so a random
	 * read in the middle of a stream does not destroy its window. */
	decision_set(p, d, RA_KIND_RANDOM, index, req, 0);
}

/* Whether @index is the mark of @st's own window. */
static bool own_mark(const struct ra_state *st, uint64_t index)
{
	return st->size && index == st->start + st->size - st->async_size;
}

/* docs/design.md's async rules on @st, with window cap @max. */
static void async_rules(struct ra_state *st, const struct ra_params *p,
			const struct ra_view *v, uint64_t index, uint64_t req,
			uint64_t max, struct ra_decision *d)
{
	uint64_t start, size;

	if (own_mark(st, index)) {
		size = ra_next_size(st->size, max);
		decision_set(p, d, RA_KIND_ASYNC, st->start + st->size, size,
			     size);
		state_set(st, d);
		return;
	}
	/* Another reader's mark: whatever it read ahead is cached from here
	 * to the next hole; continue from there. */
	start = v->next_hole(v->ctx, index + 1, max);
	if (start - index > max) {
		decision_set(p, d, RA_KIND_ASYNC_GIVEUP, index, 0, 0);
		return;
	}
	size = ra_next_size(start - index + req, max);
	decision_set(p, d, RA_KIND_ASYNC_RECOVER, start, size, size);
	d->unfollowed = true; /* unless a table slot takes it */
	state_set(st, d);
}

/* A request of stream @slot read exactly, the windows left as they are
 * (STREAM_BEHIND). */
static void stream_exact(struct ra_stream_table *t, int slot,
			 const struct ra_params *p, uint64_t index,
			 uint64_t req, struct ra_decision *d)
{
	decision_set(p, d, RA_KIND_STREAM_BEHIND, index, req, 0);
	t->s[slot].last_use = t->tick;
	d->stream = slot;
}

/* A sync miss a stream reaches (stream.h, sync rules 1 and 4). */
static void stream_sync(struct ra_state *st, struct ra_stream_table *t,
			int slot, const struct ra_params *p, uint64_t index,
			uint64_t req, struct ra_decision *d)
{
	struct ra_stream *s = &t->s[slot];
	uint64_t max = stream_max(t, slot, p);
	uint64_t end = s->start + s->size;
	uint64_t start, size, async;

	if (index >= end && s->overtaken) {
		/* A window an earlier request overtook, none of its marks
		 * reached since: no growth -- the next window of the same
		 * size (within the cap) when it covers the request, else the
		 * request alone.  A pool's late requests then reach a mark and
		 * the stream grows again; random reads that only land ahead
		 * of it do not, and each costs at most a window of its present
		 * size.  Nothing the stream predicted brought the request: a
		 * reader of the share of its own (the rows of a column scan
		 * shorter than the window, which a stream takes in file order
		 * one window at a time). */
		size = u64_min(s->size, max);
		if (index + req - end > size) {
			stream_exact(t, slot, p, index, req, d);
			return;
		}
		decision_set(p, d, RA_KIND_STREAM_AHEAD, end, size, size);
		d->unfollowed = true;
	} else if (index >= end) {
		/* A request that overtook the window: push the stream as its
		 * mark would, far enough to cover the request. */
		start = end;
		size = ra_next_size(u64_max(s->size, 1), max);
		while (start + size < index + req && size < max)
			size = ra_next_size(size, max);
		async = size;
		if (start + size < index + req) {
			/* the gap exceeds max: jump, the mark after the
			 * request (on its page, the request itself would
			 * push the window it just opened) */
			start = index;
			if (size > req)
				async = size - req;
		}
		decision_set(p, d, RA_KIND_STREAM_AHEAD, start, size, async);
	} else if (index >= s->start) {
		/* The stream read these pages ahead and they are gone. */
		size = u64_max(u64_min(s->size, max), req);
		decision_set(p, d, RA_KIND_STREAM_REFILL, index, size,
			     size > req ? size - req : size / 2);
	} else {
		/* A late request in front of the stream whose pages are gone
		 * (or were skipped): read what it asks, no more -- it is the
		 * stream's (not random), but the pages around it were read
		 * once already or are being asked for by the other late
		 * requests; leave the window where it is. */
		stream_exact(t, slot, p, index, req, d);
		return;
	}
	d->stream =
		ra_stream_set_window(t, slot, d->start, d->size, d->async_size);
	t->s[d->stream].overtaken = d->kind == RA_KIND_STREAM_AHEAD;
	state_set(st, d);
}

/* Whether a miss at @index, more than a window past @s's, has its previous
 * page present (cached or history).  Within a window of its end, a
 * reordered request of the stream may follow pages another thread of the
 * same pool has just read. */
static bool continues_another(const struct ra_stream *s,
			      const struct ra_view *v, uint64_t index)
{
	uint64_t end = s->start + s->size;

	return index > end && index - end >= s->size &&
	       v->prev_hole(v->ctx, index - 1, 1) != index - 1;
}

/* Record a window the per-handle rules opened: into @slot if it moves that
 * stream forward (never back: a stale handle window behind the stream only
 * refreshes it), else as a new stream.  A window more than a window past
 * the stream's that continues pages read before (continues_another()) is a
 * new stream too: the next row of a column scan, which the stream must not
 * leave its own row for. */
static void stream_record(struct ra_stream_table *t, int slot,
			  const struct ra_view *v, struct ra_decision *d)
{
	if (slot >= 0 && continues_another(&t->s[slot], v, d->start))
		slot = -1;
	if (slot >= 0) {
		struct ra_stream *s = &t->s[slot];

		if (d->start + d->size <= s->start + s->size) {
			s->last_use = t->tick;
			d->stream = slot;
			return;
		}
	}
	d->stream =
		ra_stream_set_window(t, slot, d->start, d->size, d->async_size);
}

static void decide_sync(struct ra_state *st, struct ra_stream_table *t,
			const struct ra_params *p, const struct ra_view *v,
			uint64_t index, uint64_t req, struct ra_decision *d)
{
	int slot, cand;
	bool followed;

	if (!req)
		req = 1;
	d->stream = -1;
	if (!t) {
		sync_rules(st, p, v, index, req, p->max, d);
		return;
	}

	t->tick++;
	slot = ra_stream_match(t, index, req);
	/* Only a stream readers have followed (its mark was reached: a
	 * second window) claims a request the per-handle rules call random
	 * (rules 1 and 4).  A lone window -- a program reading a file's
	 * header, a context hit among random reads -- must not turn the
	 * random reads near it into a stream: each one claimed would grow
	 * the window and its reach, and random reads would snowball into
	 * readahead (a header read then 600 random 8 KiB reads read 120 MB
	 * from the backing before this rule). */
	followed = slot >= 0 && t->s[slot].windows >= 2;
	/* 1: a page of a stream's window is gone: refill it at the stream's
	 * (thrash-capped) size. */
	if (followed && index >= t->s[slot].start &&
	    index < t->s[slot].start + t->s[slot].size) {
		stream_sync(st, t, slot, p, index, req, d);
		return;
	}
	/* 2: the per-handle rules, exactly; a window they open is a stream. */
	sync_rules(st, p, v, index, req, stream_max(t, slot, p), d);
	if (d->kind != RA_KIND_RANDOM) {
		stream_record(t, slot, v, d);
		return;
	}
	/* 3: the read continues a candidate exactly: the sequential-miss rule,
	 * with the inode's history standing in for the handle's. */
	cand = ra_stream_match_candidate(t, index);
	if (cand >= 0) {
		initial_window(p, d, RA_KIND_STREAM_SEQ, index, req, p->max);
		d->stream = ra_stream_set_window(t, cand, d->start, d->size,
						 d->async_size);
		state_set(st, d);
		return;
	}
	/* 4: within a stream's reach (a reordered request): continue it --
	 * unless the request lies past the window and continues pages read
	 * before: the reordered requests of a stream land on pages nobody
	 * read yet, while a present page right before the request is another
	 * reader's trail (the next row of a matrix column scan, whose first
	 * page that row's reader took at random; claimed, every row would
	 * join one stream that reads the rows in file order, and the scan
	 * would wait for the whole matrix before its second column). */
	if (followed && !continues_another(&t->s[slot], v, index)) {
		stream_sync(st, t, slot, p, index, req, d);
		return;
	}
	/* 5: random; it may only leave a candidate. */
	ra_stream_note_candidate(t, index, req);
}

/* Push stream @slot's window on from its end, the window before it used in
 * time (a clean window): decision @kind. */
static void stream_push(struct ra_state *st, const struct ra_params *p,
			struct ra_stream_table *t, int slot, enum ra_kind kind,
			struct ra_decision *d)
{
	const struct ra_stream *s = &t->s[slot];
	uint64_t size;

	ra_stream_clean_window(t, slot);
	size = ra_next_size(s->size, stream_max(t, slot, p));
	decision_set(p, d, kind, s->start + s->size, size, size);
	d->stream =
		ra_stream_set_window(t, slot, d->start, d->size, d->async_size);
	state_set(st, d);
}

static void decide_async(struct ra_state *st, struct ra_stream_table *t,
			 const struct ra_params *p, const struct ra_view *v,
			 uint64_t index, uint64_t req, struct ra_decision *d)
{
	int slot;

	if (!req)
		req = 1;
	d->stream = -1;
	if (!t) {
		async_rules(st, p, v, index, req, p->max, d);
		return;
	}

	t->tick++;
	slot = ra_stream_match_mark(t, index);
	if (slot >= 0) {
		/* The stream's own mark: its window was used in time. */
		stream_push(st, p, t, slot, RA_KIND_STREAM_ASYNC, d);
		return;
	}
	slot = ra_stream_match(t, index, req);
	/*
	 * A mark behind a followed stream's window, within its reach: a mark
	 * the stream left and was pushed past, reached late -- a server's
	 * thread pool delivered the request that carries it after requests
	 * further on, which missed (smbd: 1280 to 4608 pages late at a
	 * 1280-page cap).  The stream's pages up to its window's end are
	 * decided (read, in flight or already consumed), so its next hole is
	 * that end, whatever the view says (consumed pages dropped to history
	 * are holes to next_hole(), and recovering from there read them
	 * again): continue the stream from its end, as its own mark would
	 * (the mark page was still there: a clean window).  Each such mark
	 * adds a window to the stream's lead, up to its reach, until the lead
	 * covers the reordering.  The handle's own mark is the handle's to
	 * push, unless its window ends where the stream's starts (then that
	 * push is the stream's window again): a reader lagging behind the
	 * stream with a gap in between (its pages evicted, under thrash)
	 * fills the gap instead of pushing the stream further ahead.
	 */
	if (slot >= 0 && t->s[slot].windows >= 2 &&
	    ra_stream_passed(t, slot, index, req) &&
	    (!own_mark(st, index) ||
	     st->start + st->size >= t->s[slot].start)) {
		stream_push(st, p, t, slot, RA_KIND_ASYNC_RECOVER, d);
		return;
	}
	async_rules(st, p, v, index, req, stream_max(t, slot, p), d);
	if (d->kind != RA_KIND_ASYNC_GIVEUP)
		stream_record(t, slot, v, d);
	if (d->stream >= 0)
		d->unfollowed = false;
}

/* Advice RANDOM: read what was asked, nothing ahead; no state changes. */
static void no_readahead(const struct ra_params *p, bool async, uint64_t index,
			 uint64_t req, struct ra_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->kind = async ? RA_KIND_ASYNC_GIVEUP : RA_KIND_RANDOM;
	d->start = d->io_start = index;
	d->size = async ? 0 : req;
	d->io_nr = async || index >= p->eof ? 0 : u64_min(req, p->eof - index);
	d->mark = RA_NO_PAGE;
	d->stream = -1;
}

/* Round a window's end onto the stripe, only where it costs nothing, and
 * keep the mark on the page the rule chose while it is inside.  @min_end:
 * the reader's own pages stay inside.  Return: whether @d changed. */
static bool round_window(const struct ra_params *p, struct ra_decision *d,
			 uint64_t min_end)
{
	uint64_t end = d->start + d->size, new_end, limit;

	if (!p->geom || !p->geom->stripe || !d->size ||
	    d->kind == RA_KIND_RANDOM || d->kind == RA_KIND_STREAM_BEHIND ||
	    d->kind == RA_KIND_ASYNC_GIVEUP)
		return false;
	limit = u64_min(d->start + p->max, p->eof);
	if (limit <= d->start)
		return false;
	if (min_end < d->start + 1)
		min_end = d->start + 1;
	new_end = ra_geometry_round_end(p->geom, d->start, end, min_end, limit);
	if (new_end == end || new_end <= d->start)
		return false;
	if (new_end > end)
		d->async_size += new_end - end;
	else if (d->async_size > end - new_end)
		d->async_size -= end - new_end;
	else
		d->async_size = 1;
	d->size = new_end - d->start;
	d->io_nr = d->start >= p->eof ? 0 : u64_min(d->size, p->eof - d->start);
	d->mark = d->start + d->size - d->async_size;
	if (d->mark >= d->io_start + d->io_nr)
		d->mark = RA_NO_PAGE;
	return true;
}

/* A window that runs into where another live stream began ends there
 * (never short of the request, @min_end), with no mark: that stream read
 * those pages or is reading them, and the pages it consumed are history
 * entries that an insertion would read again.  In a matrix column scan
 * each row's stream would otherwise run on into the next rows (measured:
 * 1.5-1.6x the pages delivered read, against 1.0 for the kernel's
 * readahead).  Return: whether @d changed. */
static bool meet_next_stream(const struct ra_stream_table *t,
			     struct ra_decision *d, uint64_t min_end)
{
	uint64_t end = d->start + d->size, at;

	if (!t || !d->size || d->kind == RA_KIND_RANDOM ||
	    d->kind == RA_KIND_STREAM_BEHIND)
		return false;
	at = ra_stream_next_origin(t, d->stream, d->start, end);
	if (at < min_end)
		at = min_end;
	if (at >= end)
		return false;
	d->size = at - d->start;
	d->async_size = 0;
	d->io_nr = u64_min(d->io_nr, d->size);
	d->mark = RA_NO_PAGE;
	return true;
}

/* The rounded window, or the one cut where the next stream began,
 * replaces the one the rules recorded, in the handle state and in the
 * stream that took it. */
static void finish(struct ra_state *st, struct ra_stream_table *t,
		   const struct ra_params *p, struct ra_decision *d,
		   uint64_t min_end)
{
	uint64_t old_start = d->start, old_size = d->size;
	bool rounded = round_window(p, d, min_end);

	if (!meet_next_stream(t, d, min_end) && !rounded)
		return;
	if (st->start == old_start && st->size == old_size) {
		st->size = d->size;
		st->async_size = d->async_size;
	}
	if (t && d->stream >= 0)
		ra_stream_resize(t, d->stream, old_start, old_size, d->size,
				 d->async_size);
}

/* Either trigger, then the rounding that makes the decision final. */
static void decide(bool async, struct ra_state *st, struct ra_stream_table *t,
		   const struct ra_params *p, const struct ra_view *v,
		   uint64_t index, uint64_t req, struct ra_decision *d)
{
	if (!req)
		req = 1;
	if (p->no_readahead) {
		no_readahead(p, async, index, req, d);
		return;
	}
	if (async)
		decide_async(st, t, p, v, index, req, d);
	else
		decide_sync(st, t, p, v, index, req, d);
	finish(st, t, p, d, index + req);
}

void ra_decide_sync(struct ra_state *st, struct ra_stream_table *t,
		    const struct ra_params *p, const struct ra_view *v,
		    uint64_t index, uint64_t req, struct ra_decision *d)
{
	decide(false, st, t, p, v, index, req, d);
}

void ra_decide_async(struct ra_state *st, struct ra_stream_table *t,
		     const struct ra_params *p, const struct ra_view *v,
		     uint64_t index, uint64_t req, struct ra_decision *d)
{
	decide(true, st, t, p, v, index, req, d);
}
