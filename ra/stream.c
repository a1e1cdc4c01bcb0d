/* stream.c - the per-inode stream table (see stream.h for the rules).
 *
 * The slots are scanned linearly, only on a readahead decision (a miss or a
 * mark), never on the hit path: eight at first; a table grown to hundreds
 * belongs to a file read by hundreds of streams, each of which decides
 * once per window (512 column streams at 4 KiB a row: about 1000 decisions
 * a second, a few microseconds each).
 */
#include "stream.h"

#include <stdlib.h>
#include <string.h>

#include "decide.h"

static uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t u64_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

void ra_stream_table_init(struct ra_stream_table *t, uint64_t max)
{
	memset(t, 0, sizeof(*t));
	if (!max)
		max = 1;
	t->s = t->inline_s;
	t->nr = RA_STREAMS;
	t->max = max;
	t->min_cap = u64_min(max, 4);
}

void ra_stream_table_reset(struct ra_stream_table *t)
{
	memset(t->s, 0, t->nr * sizeof(*t->s));
}

void ra_stream_table_destroy(struct ra_stream_table *t)
{
	if (t->s != t->inline_s)
		free(t->s);
	t->s = t->inline_s;
	t->nr = RA_STREAMS;
	memset(t->s, 0, sizeof(t->inline_s));
}

static bool stream_idle(const struct ra_stream_table *t,
			const struct ra_stream *s)
{
	return t->tick - s->last_use > (uint64_t)RA_STREAM_IDLE * t->nr;
}

/* Double the table.  Return: the first new (free) slot, or -1 (at
 * RA_STREAMS_MAX, or out of memory: the caller replaces a stream). */
static int stream_grow(struct ra_stream_table *t)
{
	unsigned int old = t->nr;
	struct ra_stream *s;

	if (2 * old > RA_STREAMS_MAX)
		return -1;
	s = calloc(2 * old, sizeof(*s));
	if (!s)
		return -1;
	memcpy(s, t->s, old * sizeof(*s));
	if (t->s != t->inline_s)
		free(t->s);
	t->s = s;
	t->nr = 2 * old;
	return (int)old;
}

/* How far ahead of its window (and before its origin) a stream still claims
 * a request: four windows, or four requests early on.  A stream at a 1 MiB
 * window takes requests 4 MiB ahead, as an NFS server's thread pool needs
 * (35 threads x 128 KiB in flight), while a young stream does not swallow a
 * neighbour 1000 pages away (a matrix column scan).  Behind its window a
 * stream claims everything back to its origin: late requests can be very
 * late (more than 2 MiB measured). */
static uint64_t stream_reach(const struct ra_stream *s, uint64_t req)
{
	return RA_STREAM_REACH * u64_max(s->size, req);
}

/* Distance from @index to @s's window, or UINT64_MAX beyond its reach; 0
 * inside the window. */
static uint64_t stream_distance(const struct ra_stream *s, uint64_t index,
				uint64_t req)
{
	uint64_t end = s->start + s->size;
	uint64_t reach = stream_reach(s, req);

	/* Behind the window: anywhere the stream has been (a late request
	 * can be very late), plus the reach before where it started. */
	if (index < s->start)
		return index + reach >= s->origin ? s->start - index
						  : UINT64_MAX;
	if (index >= end)
		return index - end < reach ? index - end + 1 : UINT64_MAX;
	return 0;
}

bool ra_stream_passed(const struct ra_stream_table *t, int slot, uint64_t index,
		      uint64_t req)
{
	const struct ra_stream *s = &t->s[slot];

	return s->state == RA_STREAM_ACTIVE && index < s->start &&
	       s->start - index <= stream_reach(s, req);
}

int ra_stream_match(const struct ra_stream_table *t, uint64_t index,
		    uint64_t req)
{
	uint64_t best = UINT64_MAX;
	int slot = -1;

	for (unsigned int i = 0; i < t->nr; i++) {
		const struct ra_stream *s = &t->s[i];
		uint64_t d;

		if (s->state != RA_STREAM_ACTIVE)
			continue;
		d = stream_distance(s, index, req);
		if (d == UINT64_MAX)
			continue;
		/* Ties go to the most recently used stream. */
		if (d < best ||
		    (d == best && s->last_use > t->s[slot].last_use)) {
			best = d;
			slot = i;
		}
	}
	return slot;
}

int ra_stream_match_mark(const struct ra_stream_table *t, uint64_t index)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		const struct ra_stream *s = &t->s[i];

		if (s->state == RA_STREAM_ACTIVE && s->size &&
		    s->start + s->size - s->async_size == index)
			return i;
	}
	return -1;
}

int ra_stream_match_candidate(const struct ra_stream_table *t, uint64_t index)
{
	for (unsigned int i = 0; i < t->nr; i++) {
		const struct ra_stream *s = &t->s[i];

		/* index - (next - 1) <= 1, the sequential-miss test, with the
		 * candidate's last page as prev_index. */
		if (s->state == RA_STREAM_CANDIDATE &&
		    index - (s->next - 1) <= 1)
			return i;
	}
	return -1;
}

/* The slot a new entry takes: free, else the LRU among candidates and idle
 * streams, else (only for an ACTIVE entry) a new slot of the grown table or,
 * at its largest, the LRU stream. */
static int stream_victim(struct ra_stream_table *t, bool active)
{
	int victim = -1, lru = -1, grown;

	for (unsigned int i = 0; i < t->nr; i++) {
		const struct ra_stream *s = &t->s[i];

		if (s->state == RA_STREAM_FREE)
			return i;
		if (lru < 0 || s->last_use < t->s[lru].last_use)
			lru = i;
		if (s->state == RA_STREAM_CANDIDATE || stream_idle(t, s)) {
			if (victim < 0 || s->last_use < t->s[victim].last_use)
				victim = i;
		}
	}
	if (victim >= 0)
		return victim;
	if (!active)
		return -1;
	grown = stream_grow(t);
	return grown >= 0 ? grown : lru;
}

int ra_stream_set_window(struct ra_stream_table *t, int slot, uint64_t start,
			 uint64_t size, uint64_t async_size)
{
	struct ra_stream *s;

	if (slot < 0) {
		slot = stream_victim(t, true);
		s = &t->s[slot];
		memset(s, 0, sizeof(*s));
		s->cap = t->max;
	}
	s = &t->s[slot];
	if (s->state != RA_STREAM_ACTIVE) {
		/* A new or promoted stream starts with a full cap; its first
		 * window counts, so its first thrash shrinks it. */
		s->cap = t->max;
		s->windows_since_shrink = 1;
		s->origin = start;
		s->share_epoch = UINT64_MAX; /* not counted yet */
	}
	if (start < s->origin)
		s->origin = start;
	s->state = RA_STREAM_ACTIVE;
	s->start = start;
	s->size = size;
	s->async_size = async_size;
	s->overtaken = false; /* STREAM_AHEAD sets it again */
	s->last_use = t->tick;
	s->windows++;
	return slot;
}

void ra_stream_note_candidate(struct ra_stream_table *t, uint64_t index,
			      uint64_t req)
{
	int slot = ra_stream_match_candidate(t, index);
	struct ra_stream *s;

	if (slot < 0) {
		slot = stream_victim(t, false);
		if (slot < 0)
			return; /* every slot holds a live stream: keep them */
		s = &t->s[slot];
		memset(s, 0, sizeof(*s));
		s->state = RA_STREAM_CANDIDATE;
	}
	s = &t->s[slot];
	s->next = index + (req ? req : 1);
	s->last_use = t->tick;
}

uint64_t ra_stream_cap(const struct ra_stream_table *t, int slot)
{
	if (slot < 0 || t->s[slot].state != RA_STREAM_ACTIVE)
		return t->max;
	return u64_min(t->s[slot].cap, t->max);
}

void ra_stream_clean_window(struct ra_stream_table *t, int slot)
{
	struct ra_stream *s = &t->s[slot];

	s->windows_since_shrink++;
	/* Additive growth after a multiplicative shrink: a cap halved by
	 * thrash takes three or four clean windows to come back, so a stream
	 * just above what the cache holds settles near it instead of
	 * oscillating between max and max / 2 on every window. */
	if (s->cap < t->max)
		s->cap = u64_min(t->max, s->cap + u64_max(s->cap / 4, 1));
}

static void stream_shrink(struct ra_stream_table *t, struct ra_stream *s)
{
	/* One lost window shows up as many misses (or many evictions): shrink
	 * once per window. */
	if (!s->windows_since_shrink)
		return;
	s->windows_since_shrink = 0;
	s->cap = u64_max(s->cap / 2, t->min_cap);
}

int ra_stream_thrash(struct ra_stream_table *t, uint64_t index)
{
	int slot = ra_stream_match(t, index, 1);

	if (slot < 0)
		return -1;
	t->s[slot].thrash++;
	stream_shrink(t, &t->s[slot]);
	return slot;
}

int ra_stream_waste(struct ra_stream_table *t, uint64_t index, uint64_t pages)
{
	int slot = -1;

	if (index != RA_NO_PAGE) {
		slot = ra_stream_match(t, index, 1);
	} else {
		for (unsigned int i = 0; i < t->nr; i++) {
			const struct ra_stream *s = &t->s[i];

			if (s->state == RA_STREAM_ACTIVE &&
			    (slot < 0 || s->size > t->s[slot].size))
				slot = i;
		}
	}
	if (slot < 0)
		return -1;
	t->s[slot].waste += pages;
	stream_shrink(t, &t->s[slot]);
	return slot;
}

unsigned int ra_stream_active_count(const struct ra_stream_table *t)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < t->nr; i++)
		if (t->s[i].state == RA_STREAM_ACTIVE &&
		    !stream_idle(t, &t->s[i]))
			n++;
	return n;
}

void ra_stream_resize(struct ra_stream_table *t, int slot, uint64_t start,
		      uint64_t size, uint64_t new_size, uint64_t new_async)
{
	struct ra_stream *s;

	if (slot < 0 || (unsigned int)slot >= t->nr)
		return;
	s = &t->s[slot];
	if (s->start != start || s->size != size)
		return;
	s->size = new_size;
	s->async_size = new_async;
}

uint64_t ra_stream_next_origin(const struct ra_stream_table *t, int self,
			       uint64_t from, uint64_t to)
{
	uint64_t at = to;

	for (unsigned int i = 0; i < t->nr; i++) {
		const struct ra_stream *s = &t->s[i];

		if ((int)i == self || s->state != RA_STREAM_ACTIVE ||
		    s->windows < 2 || stream_idle(t, s))
			continue;
		if (s->origin >= from && s->origin < at)
			at = s->origin;
	}
	return at;
}

unsigned int ra_stream_table_stats(const struct ra_stream_table *t,
				   struct ra_stream_stats *out,
				   unsigned int max)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < t->nr && n < max; i++) {
		const struct ra_stream *s = &t->s[i];
		struct ra_stream_stats *o = &out[n];

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
		n++;
	}
	return n;
}
