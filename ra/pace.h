/* pace.h - the pacing policy: what shapes a decision's inputs before
 * decide.c sees them.
 *
 * Internal to ra/ (ra.c and the tests).  Four pieces, each a function of
 * its inputs -- time is a parameter (ra_now_ns() reads the clock once per
 * decision, in ra.c), so the tests drive them with made-up clocks:
 *
 *   the reader's rate   ra_rate_max(): a window covers a second of the
 *                       reader's consumption (docs/design.md, "Windows
 *                       sized to the reader's rate")
 *   the fair share      ra_share_*(): no window above the reader's share of
 *                       the cache budget (docs/design.md, "The fair share
 *                       of the budget")
 *   due times           ra_due_at(): when the reader reaches a prefetched
 *                       page, so the workers read first what is wanted first
 *   the tune word       ra_tune_*(), struct ra_cap: the run-time tunables
 *                       packed in one word, and a file's window cap that
 *                       follows it
 *
 * Concurrency: nothing here takes a lock.
 *   - ra_rate_max() writes the handle state's rate fields: Context: caller
 *     holds st->lock (asserted in debug builds).
 *   - struct ra_share's slots are __atomic words, shared mount-wide and
 *     read and counted by any thread without a lock; a reader's own
 *     "last counted" epoch (@seen of ra_share_count()) is guarded by the
 *     lock of whoever owns it (ra.c: st->lock for a handle's, the file's
 *     f->lock for a stream's).
 *   - The tune word lives in the engine as one __atomic word: ra.c loads
 *     it with acquire, ra_tune_apply() changes it with a release CAS; the
 *     other ra_tune_*() functions only pack and unpack a value.
 *   - struct ra_cap is its file's, under the file's lock (ra.c f->lock).
 *   - ra_due_at(), ra_share_epoch() and the tune word helpers are pure.
 */
#ifndef AHEADFS_RA_PACE_H
#define AHEADFS_RA_PACE_H

#include <stdbool.h>
#include <stdint.h>

#include "ra/ra.h" /* struct ra_state, struct ra_tuning, the enums */

struct ra_geometry;

/* ---------------------------------------------------------------------- */
/* The reader's rate                                                       */

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

/** ra_now_ns() - CLOCK_MONOTONIC in nanoseconds: the @now of the others.
 * Context: Any thread. */
uint64_t ra_now_ns(void);

/**
 * ra_rate_max() - A mark was reached at @index at time @now: update @st's
 * rate and return the window cap it allows, at most @max.
 *
 * The rate is in pages a second, from the pages since the previous mark
 * and the time it took.  A lower sample is taken at once, a higher one
 * weighs a quarter: the first marks of a stream come while the kernel's
 * readahead on the mount ramps up ahead of the reader, and an average
 * that let those samples fade a quarter per window (one window a second
 * or two for a slow reader) kept windows 2-3x the reader's second for the
 * whole run (64 paced streams: rates of 250-390 pages a second measured
 * for 128 read).  Underestimating costs at most a window at the floor:
 * the next mark comes a window later, and a fast reader's comes within
 * milliseconds.  A mark behind the previous one or more than 4 x @max
 * ahead (another stream on a shared state) restarts the measurement.
 *
 * Context: Caller holds st->lock.
 * Return: @max while no rate is measured, else the rate times
 *	RA_RATE_HORIZON_MS, at least RA_RATE_MIN_PAGES, at most @max.
 */
uint64_t ra_rate_max(struct ra_state *st, uint64_t index, uint64_t max,
		     uint64_t now);

/* ---------------------------------------------------------------------- */
/* The fair share                                                          */

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
 * before, counted mount-wide once per epoch each (a handle's state or a
 * table slot; the streams that share one state count as one, an undercount
 * that leaves them the windows they had; a window of a stream that neither
 * follows counts each time, ra.c decide()).  Never below a request: a
 * window smaller than the read that opens it misses again at once.  No
 * other floor: with more readers than the budget holds 16-page windows
 * for, a floor of 16 pages put every reader's windows past the budget
 * (96 rows of a column scan in 1536 pages read 2.2x the file; without it,
 * 1.01x: docs/design.md, "The fair share").
 */
#define RA_SHARE_EPOCH_NS (UINT64_C(1000) * 1000000)

/* Readers with a window, mount-wide: one slot per parity of the epoch,
 * each (epoch << 32 | readers).  __atomic; all-zero is empty. */
struct ra_share {
	uint64_t slot[2];
};

/** ra_share_epoch() - The share's epoch at time @now (32 bits, wrapping).
 * Context: Pure. */
uint64_t ra_share_epoch(uint64_t now);

/**
 * ra_share_readers() - Readers counted in epoch @ep or the one before.
 * Context: Any thread, no lock (relaxed loads).
 * Return: The larger of the two counts; 0 for none.
 */
uint64_t ra_share_readers(const struct ra_share *s, uint64_t ep);

/**
 * ra_share_count() - Count a reader last counted in epoch *@seen, once per
 * epoch: nothing if *@seen is @ep already, else *@seen = @ep and its
 * epoch's slot counts one more (a slot of an older epoch starts over).
 * Context: Lock-free on the slots; *@seen under its owner's lock.
 */
void ra_share_count(struct ra_share *s, uint64_t *seen, uint64_t ep);

/**
 * ra_share_max() - The window cap the share allows in epoch @ep, for a
 * request of @req pages.
 * @budget_pages: the cache's budget (cache_budget_pages()).
 * @reads_dropped: struct ra_config reads_dropped: a reader's windows may
 *	take twice the share.
 * Context: Any thread, no lock.
 * Return: @budget_pages / ((@reads_dropped ? 2 : 4) x readers), at least
 *	@req (and at least 1).
 */
uint64_t ra_share_max(const struct ra_share *s, uint64_t ep, uint64_t req,
		      uint64_t budget_pages, bool reads_dropped);

/* ---------------------------------------------------------------------- */
/* Due times                                                               */

/* When the reader of a decision reaches a page: it was at @index at @now,
 * reading @rate pages a second (0: not measured, or streams sharing one
 * state).  Prefetch is queued due then (ra_work.due), so the workers read
 * first what is wanted first. */
struct ra_due {
	uint64_t now, index, rate;
};

/* Longest wait a due time says: windows are read within seconds. */
#define RA_DUE_MAX_NS (UINT64_C(60) * 1000000000)

/**
 * ra_due_at() - When page @first of @t's reader is read.
 * Context: Pure.
 * Return: A time on @t's clock, at most RA_DUE_MAX_NS after t->now; 0
 *	(at once) for a NULL @t, no rate, or a page not ahead of the reader.
 */
uint64_t ra_due_at(const struct ra_due *t, uint64_t first);

/* ---------------------------------------------------------------------- */
/* The tune word                                                           */

/*
 * The tunables ra_engine_tune() may change, packed in one word so that a
 * decision reads them together with one atomic load: bits 0-31 the window
 * cap in pages (0: automatic), bits 32-33 the context rule, bit 34 set
 * when the stream table is off (RA_STREAM_TABLE_OFF).
 */
#define RA_TUNE_WORD_MAX_MASK UINT64_C(0xffffffff)
#define RA_TUNE_WORD_CONTEXT_SHIFT 32
#define RA_TUNE_WORD_CONTEXT_MASK (UINT64_C(3) << RA_TUNE_WORD_CONTEXT_SHIFT)
#define RA_TUNE_WORD_NO_TABLE (UINT64_C(1) << 34)

/** ra_tune_word() - The word of a configuration (ra_engine_create()).
 * Context: Pure. */
uint64_t ra_tune_word(uint64_t max_bytes, enum ra_context_rule context,
		      enum ra_stream_table_mode stream_table);

/** ra_tune_word_update() - @w with the fields of @t named by @what
 * (RA_TUNE_MAX, ...) replaced, the others kept; @t already checked.
 * Context: Pure. */
uint64_t ra_tune_word_update(uint64_t w, const struct ra_tuning *t,
			     unsigned int what);

/**
 * ra_tune_apply() - Change the fields of @t named by @what in the tune
 * word at @word (ra_engine_tune()): checked as ra_engine_create() checks
 * them, then one compare-and-swap with release, retried until it lands,
 * so concurrent calls each change only their own fields.
 * Context: Any thread, no lock; @word is __atomic.
 * Return: 0, or -EINVAL (a value out of range, an unknown bit in @what,
 *	@t NULL): @word unchanged.
 */
int ra_tune_apply(uint64_t *word, const struct ra_tuning *t, unsigned int what);

/** ra_tune_word_read() - The tunables word @w holds.  Context: Pure. */
void ra_tune_word_read(uint64_t w, struct ra_tuning *out);

/** ra_tune_context() - The context rule of @w.  Context: Pure. */
static inline enum ra_context_rule ra_tune_context(uint64_t w)
{
	return (enum ra_context_rule)((w & RA_TUNE_WORD_CONTEXT_MASK) >>
				      RA_TUNE_WORD_CONTEXT_SHIFT);
}

/** ra_tune_no_table() - Whether @w turns the stream table off.
 * Context: Pure. */
static inline bool ra_tune_no_table(uint64_t w)
{
	return w & RA_TUNE_WORD_NO_TABLE;
}

/**
 * ra_tune_base_max() - A file's window cap before advice under word @w:
 * its cap in pages, or when that is 0 (automatic) ra_auto_max_bytes() of
 * the file's geometry @g and @auto_floor_bytes (struct ra_config).
 * Context: Pure.
 */
uint64_t ra_tune_base_max(uint64_t w, const struct ra_geometry *g,
			  uint64_t auto_floor_bytes);

/**
 * struct ra_cap - A file's window cap, following the engine's tune word.
 * @tune_seen:	the tune word @base_max follows.
 * @base_max:	the window cap in pages, before advice.
 * @max:	@base_max, doubled by RA_ADVICE_SEQUENTIAL.
 * @advice:	the file's advice (NORMAL, SEQUENTIAL or RANDOM).
 * Guarded by its file's lock (ra.c f->lock).
 */
struct ra_cap {
	uint64_t tune_seen;
	uint64_t base_max;
	uint64_t max;
	enum ra_advice advice;
};

/** ra_cap_init() - @c under word @w, advice NORMAL.  Context: Pure. */
void ra_cap_init(struct ra_cap *c, uint64_t w, const struct ra_geometry *g,
		 uint64_t auto_floor_bytes);

/**
 * ra_cap_sync() - Bring @c up to date with tune word @w: a word other
 * than c->tune_seen recomputes c->base_max and c->max (advice kept).
 * Context: Pure on @c (its owner's lock held).
 * Return: Whether c->max was recomputed.
 */
bool ra_cap_sync(struct ra_cap *c, uint64_t w, const struct ra_geometry *g,
		 uint64_t auto_floor_bytes);

/** ra_cap_advise() - Set @c's advice and the cap it gives.
 * Context: Pure on @c (its owner's lock held). */
void ra_cap_advise(struct ra_cap *c, enum ra_advice advice);

#endif /* AHEADFS_RA_PACE_H */
