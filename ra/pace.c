/* pace.c - the pacing policy (pace.h): the reader's rate, the fair share
 * of the budget, due times and the tune word.
 *
 * Where a decision's cap comes from (ra.c decide()):
 *
 *   cap = min(f->max                       the file's (ra_cap_sync(),
 *                                           the tune word, the advice)
 *             ra_rate_max()                a second of the reader's
 *                                           consumption (async only)
 *             ra_share_max())              the reader's share of the budget
 *
 * and where its prefetch goes in the workers' queue: ra_due_at() of the
 * rate measured here.
 *
 * No locks are taken here: pace.h says which of its callers' locks guard
 * what (st->lock for the rate, the owner's lock for a share's "seen"
 * epoch, the file's lock for struct ra_cap; the share's slots and the
 * engine's tune word are __atomic).
 */
#include "pace.h"

#include <errno.h>
#include <time.h>

#include "cache/cache.h" /* CACHE_PAGE_SHIFT */
#include "cache/base/debug.h"
#include "geometry.h"

uint64_t ra_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ra_rate_max(struct ra_state *st, uint64_t index, uint64_t max,
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

/* ---------------------------------------------------------------------- */
/* The fair share                                                          */

uint64_t ra_share_epoch(uint64_t now)
{
	return (now / RA_SHARE_EPOCH_NS) & 0xffffffffu;
}

uint64_t ra_share_readers(const struct ra_share *s, uint64_t ep)
{
	uint64_t n = 0, prev = (ep - 1) & 0xffffffffu;

	for (int i = 0; i < 2; i++) {
		uint64_t v = __atomic_load_n(&s->slot[i], __ATOMIC_RELAXED);

		if (((v >> 32) == ep || (v >> 32) == prev) &&
		    (v & 0xffffffffu) > n)
			n = v & 0xffffffffu;
	}
	return n;
}

void ra_share_count(struct ra_share *s, uint64_t *seen, uint64_t ep)
{
	uint64_t *slot = &s->slot[ep & 1], v, nv;

	if (*seen == ep)
		return;
	*seen = ep;
	v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	do {
		nv = (v >> 32) == ep ? v + 1 : ep << 32 | 1;
	} while (!__atomic_compare_exchange_n(
		slot, &v, nv, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

uint64_t ra_share_max(const struct ra_share *s, uint64_t ep, uint64_t req,
		      uint64_t budget_pages, bool reads_dropped)
{
	uint64_t readers = ra_share_readers(s, ep), share;

	share = budget_pages /
		((reads_dropped ? 2 : 4) * (readers ? readers : 1));
	if (share < req)
		share = req;
	return share ? share : 1;
}

/* ---------------------------------------------------------------------- */
/* Due times                                                               */

uint64_t ra_due_at(const struct ra_due *t, uint64_t first)
{
	double wait;

	if (!t || !t->rate || first <= t->index)
		return 0;
	wait = (double)(first - t->index) * 1e9 / (double)t->rate;
	return t->now +
	       (wait < (double)RA_DUE_MAX_NS ? (uint64_t)wait : RA_DUE_MAX_NS);
}

/* ---------------------------------------------------------------------- */
/* The tune word                                                           */

uint64_t ra_tune_word(uint64_t max_bytes, enum ra_context_rule context,
		      enum ra_stream_table_mode stream_table)
{
	return (max_bytes >> CACHE_PAGE_SHIFT) |
	       ((uint64_t)context << RA_TUNE_WORD_CONTEXT_SHIFT) |
	       (stream_table == RA_STREAM_TABLE_OFF ? RA_TUNE_WORD_NO_TABLE
						    : 0);
}

uint64_t ra_tune_word_update(uint64_t w, const struct ra_tuning *t,
			     unsigned int what)
{
	if (what & RA_TUNE_MAX)
		w = (w & ~RA_TUNE_WORD_MAX_MASK) |
		    (t->max_bytes >> CACHE_PAGE_SHIFT);
	if (what & RA_TUNE_CONTEXT)
		w = (w & ~RA_TUNE_WORD_CONTEXT_MASK) |
		    ((uint64_t)t->context << RA_TUNE_WORD_CONTEXT_SHIFT);
	if (what & RA_TUNE_STREAM_TABLE)
		w = t->stream_table == RA_STREAM_TABLE_OFF
			    ? w | RA_TUNE_WORD_NO_TABLE
			    : w & ~RA_TUNE_WORD_NO_TABLE;
	return w;
}

int ra_tune_apply(uint64_t *word, const struct ra_tuning *t, unsigned int what)
{
	uint64_t old, w;

	if (!t ||
	    what & ~(RA_TUNE_MAX | RA_TUNE_CONTEXT | RA_TUNE_STREAM_TABLE))
		return -EINVAL;
	/* The rules of ra_engine_create(). */
	if (what & RA_TUNE_MAX && (t->max_bytes % CACHE_PAGE_SIZE ||
				   t->max_bytes > RA_MAX_BYTES_LIMIT))
		return -EINVAL;
	if (what & RA_TUNE_CONTEXT && (unsigned int)t->context > RA_CONTEXT_OFF)
		return -EINVAL;
	if (what & RA_TUNE_STREAM_TABLE &&
	    (unsigned int)t->stream_table > RA_STREAM_TABLE_OFF)
		return -EINVAL;
	/* Each call changes only its own fields, whatever runs at once. */
	old = __atomic_load_n(word, __ATOMIC_RELAXED);
	do {
		w = ra_tune_word_update(old, t, what);
	} while (!__atomic_compare_exchange_n(
		word, &old, w, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	return 0;
}

void ra_tune_word_read(uint64_t w, struct ra_tuning *out)
{
	out->max_bytes = (w & RA_TUNE_WORD_MAX_MASK) << CACHE_PAGE_SHIFT;
	out->context = ra_tune_context(w);
	out->stream_table =
		ra_tune_no_table(w) ? RA_STREAM_TABLE_OFF : RA_STREAM_TABLE_ON;
}

uint64_t ra_tune_base_max(uint64_t w, const struct ra_geometry *g,
			  uint64_t auto_floor_bytes)
{
	uint64_t max = w & RA_TUNE_WORD_MAX_MASK;

	if (!max)
		max = ra_auto_max_bytes(g->stripe, auto_floor_bytes,
					g->max_io) >>
		      CACHE_PAGE_SHIFT;
	return max;
}

static uint64_t advice_max(uint64_t base_max, enum ra_advice advice)
{
	return advice == RA_ADVICE_SEQUENTIAL ? 2 * base_max : base_max;
}

void ra_cap_init(struct ra_cap *c, uint64_t w, const struct ra_geometry *g,
		 uint64_t auto_floor_bytes)
{
	c->tune_seen = w;
	c->base_max = ra_tune_base_max(w, g, auto_floor_bytes);
	c->advice = RA_ADVICE_NORMAL;
	c->max = c->base_max;
}

bool ra_cap_sync(struct ra_cap *c, uint64_t w, const struct ra_geometry *g,
		 uint64_t auto_floor_bytes)
{
	if (w == c->tune_seen)
		return false;
	c->tune_seen = w;
	c->base_max = ra_tune_base_max(w, g, auto_floor_bytes);
	c->max = advice_max(c->base_max, c->advice);
	return true;
}

void ra_cap_advise(struct ra_cap *c, enum ra_advice advice)
{
	c->advice = advice;
	c->max = advice_max(c->base_max, advice);
}
