/* test_ra_model.h - trace-replay harness for the readahead decisions.
 *
 * A model page cache (present / READAHEAD mark / prefetched-unused / ghost
 * bits per page, FIFO eviction above an optional capacity), a read path
 * shaped like the kernel's filemap_get_pages() and the FUSE read path of
 * aheadfs (walk the request's pages: a missing page is a sync miss for the
 * rest of the request, a marked page is an async trigger), and a
 * *reference model*: docs/design.md ("The window")'s rules written again, plainly,
 * with signed arithmetic and page-by-page scans instead of hole scans, so
 * the tests compare ra/decide.c against an independent reading of the
 * rules rather than against numbers typed from memory.
 *
 * The reference covers the per-handle rules (stream table off); with the
 * table on, the tests write their expectations down explicitly.
 */
#ifndef AHEADFS_TEST_RA_MODEL_H
#define AHEADFS_TEST_RA_MODEL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "decide.h"
#include "stream.h"

#define MP_PRESENT 0x1
#define MP_MARK 0x2
#define MP_UNUSED 0x4 /* read ahead, not used yet */
#define MP_GHOST 0x8 /* evicted while MP_UNUSED */

struct model_io {
	uint64_t start, nr;
};

struct model_dec {
	struct ra_decision d;
	bool async; /* which trigger */
	uint64_t at; /* the page that triggered it */
};

/* One handle: the implementation's state and the reference's. */
struct ref_state {
	int64_t start, size, async_size, prev;
};

struct handle {
	struct ra_state h;
	struct ref_state r;
};

struct sim {
	bool ref; /* decide with the reference model, not ra/decide.c */
	struct ra_params p;
	struct ra_stream_table table;
	bool use_table;
	uint64_t npages; /* file size in pages */
	uint8_t *pg;
	uint64_t capacity; /* 0: unlimited */
	uint64_t *fifo; /* insertion order, a ring of npages entries */
	uint64_t fifo_head, fifo_len;
	uint64_t cached;
	/* what happened */
	uint64_t backing_pages, waste, thrash, evicted;
	uint64_t kinds[RA_KIND_COUNT];
	struct model_io *io;
	size_t nio, capio;
	struct model_dec *dec;
	size_t ndec, capdec;
};

static inline void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	assert_non_null(p);
	return p;
}

static inline void sim_init(struct sim *s, bool ref, uint64_t npages,
			    uint64_t max, enum ra_context_rule rule,
			    bool use_table)
{
	memset(s, 0, sizeof(*s));
	s->ref = ref;
	s->npages = npages;
	s->p.max = max;
	s->p.rule = rule;
	s->p.eof = npages;
	s->use_table = use_table;
	ra_stream_table_init(&s->table, max);
	s->pg = calloc(npages ? npages : 1, 1);
	s->fifo = calloc(npages ? npages : 1, sizeof(uint64_t));
	assert_non_null(s->pg);
	assert_non_null(s->fifo);
}

static inline void sim_free(struct sim *s)
{
	free(s->pg);
	free(s->fifo);
	free(s->io);
	free(s->dec);
	ra_stream_table_destroy(&s->table);
}

static inline void handle_init(struct handle *h)
{
	ra_state_init(&h->h);
	h->r = (struct ref_state){0, 0, 0, -1};
}

static inline bool sim_present(const struct sim *s, uint64_t i)
{
	return i < s->npages && (s->pg[i] & MP_PRESENT);
}

/* --- the view ra/decide.c sees: hole scans over the model ---------------- */

static uint64_t model_prev_hole(void *ctx, uint64_t index, uint64_t max_scan)
{
	const struct sim *s = ctx;

	for (uint64_t i = 0; i < max_scan; i++) {
		if (!sim_present(s, index - i))
			return index - i;
		if (index - i == 0)
			return UINT64_MAX;
	}
	return index - max_scan;
}

static uint64_t model_next_hole(void *ctx, uint64_t index, uint64_t max_scan)
{
	const struct sim *s = ctx;

	for (uint64_t i = 0; i < max_scan; i++)
		if (!sim_present(s, index + i))
			return index + i;
	return index + max_scan;
}

/* --- the reference model: docs/design.md ("The window"), written plainly ---------- */

static int64_t ref_init_size(int64_t req, int64_t max)
{
	int64_t n = 1;

	while (n < req)
		n *= 2;
	if (n <= max / 32)
		return 4 * n;
	if (n <= max / 4)
		return 2 * n;
	return max;
}

static int64_t ref_next_size(int64_t cur, int64_t max)
{
	if (cur < max / 16)
		return 4 * cur;
	if (cur <= max / 2)
		return 2 * cur;
	return max;
}

static void ref_set(struct ref_state *r, struct ra_decision *d,
		    enum ra_kind kind, int64_t start, int64_t size,
		    int64_t async_size, bool keep)
{
	d->kind = kind;
	d->start = start;
	d->size = size;
	d->async_size = async_size;
	if (!keep) {
		r->start = start;
		r->size = size;
		r->async_size = async_size;
	}
}

static void ref_sync(struct sim *s, struct ref_state *r, int64_t index,
		     int64_t req, struct ra_decision *d)
{
	int64_t max = s->p.max, contig = 0, size;

	/* "index - prev_index <= 1" is unsigned in docs/design.md (as in the
	 * kernel): a read behind prev_index is not sequential. */
	if (index == 0 || req > max ||
	    (index - r->prev >= 0 && index - r->prev <= 1)) {
		size = ref_init_size(req, max);
		ref_set(r, d,
			index == 0  ? RA_KIND_INITIAL
			: req > max ? RA_KIND_OVERSIZE
				    : RA_KIND_SEQ_MISS,
			index, size, size > req ? size - req : size / 2, false);
		return;
	}
	/* Count the cached pages right before index, at most max of them. */
	while (contig < max && index - 1 - contig >= 0 &&
	       sim_present(s, index - 1 - contig))
		contig++;
	if (s->p.rule == RA_CONTEXT_CONSERVATIVE && contig > req) {
		if (contig == index) /* the run reaches page 0 */
			contig *= 2;
		size = contig + req < max ? contig + req : max;
		ref_set(r, d, RA_KIND_CONTEXT, index, size, 1, false);
		return;
	}
	if (s->p.rule == RA_CONTEXT_LOOSE && contig > 0) {
		if (contig == index)
			contig *= 2;
		size = ref_init_size(contig + req, max);
		ref_set(r, d, RA_KIND_CONTEXT, index, size, size, false);
		return;
	}
	ref_set(r, d, RA_KIND_RANDOM, index, req, 0, true);
}

static void ref_async(struct sim *s, struct ref_state *r, int64_t index,
		      int64_t req, struct ra_decision *d)
{
	int64_t max = s->p.max, start, size;

	if (r->size && index == r->start + r->size - r->async_size) {
		size = ref_next_size(r->size, max);
		ref_set(r, d, RA_KIND_ASYNC, r->start + r->size, size, size,
			false);
		return;
	}
	start = index + 1;
	while (start < index + 1 + max && sim_present(s, start))
		start++;
	if (start - index > max) {
		ref_set(r, d, RA_KIND_ASYNC_GIVEUP, index, 0, 0, true);
		return;
	}
	size = ref_next_size(start - index + req, max);
	ref_set(r, d, RA_KIND_ASYNC_RECOVER, start, size, size, false);
}

/* I/O and mark of a reference decision: the window clipped to EOF. */
static void ref_finish(const struct sim *s, struct ra_decision *d)
{
	uint64_t end = d->start + d->size;

	d->stream = -1;
	d->io_start = d->start;
	d->io_nr = d->start >= s->npages
			   ? 0
			   : (end > s->npages ? s->npages : end) - d->start;
	d->mark = RA_NO_PAGE;
	if (d->kind != RA_KIND_RANDOM && d->kind != RA_KIND_ASYNC_GIVEUP &&
	    d->size && end - d->async_size < d->io_start + d->io_nr)
		d->mark = end - d->async_size;
}

/* --- the model cache ----------------------------------------------------- */

static void sim_evict(struct sim *s)
{
	while (s->capacity && s->cached > s->capacity && s->fifo_len) {
		uint64_t i = s->fifo[s->fifo_head];

		s->fifo_head = (s->fifo_head + 1) % s->npages;
		s->fifo_len--;
		if (!(s->pg[i] & MP_PRESENT))
			continue;
		s->cached--;
		s->evicted++;
		if (s->pg[i] & MP_UNUSED) {
			s->waste++;
			s->pg[i] = MP_GHOST;
			if (s->use_table && !s->ref)
				ra_stream_waste(&s->table, i, 1);
		} else {
			s->pg[i] = 0;
		}
	}
}

/* Insert the decision's pages that are missing (LOCKED in the real cache,
 * complete at once here), one I/O per contiguous run; the mark goes on the
 * mark page if this decision inserted it.  Pages of the request itself
 * ([demand_lo, demand_hi)) are not "prefetched". */
static void sim_apply(struct sim *s, const struct ra_decision *d,
		      uint64_t demand_lo, uint64_t demand_hi)
{
	uint64_t run = 0, run_start = 0;

	for (uint64_t i = d->io_start; i < d->io_start + d->io_nr + 1; i++) {
		bool insert = i < d->io_start + d->io_nr && !sim_present(s, i);

		if (insert) {
			if (!run)
				run_start = i;
			run++;
			s->pg[i] = MP_PRESENT;
			if (i < demand_lo || i >= demand_hi)
				s->pg[i] |= MP_UNUSED;
			if (i == d->mark)
				s->pg[i] |= MP_MARK;
			s->fifo[(s->fifo_head + s->fifo_len) % s->npages] = i;
			s->fifo_len++;
			s->cached++;
			s->backing_pages++;
			continue;
		}
		if (run) {
			if (s->nio == s->capio) {
				s->capio = s->capio ? 2 * s->capio : 64;
				s->io = xrealloc(s->io,
						 s->capio * sizeof(*s->io));
			}
			s->io[s->nio++] = (struct model_io){run_start, run};
			run = 0;
		}
	}
	sim_evict(s);
}

static void sim_log(struct sim *s, const struct ra_decision *d, bool async,
		    uint64_t at)
{
	if (s->ndec == s->capdec) {
		s->capdec = s->capdec ? 2 * s->capdec : 64;
		s->dec = xrealloc(s->dec, s->capdec * sizeof(*s->dec));
	}
	s->dec[s->ndec++] = (struct model_dec){*d, async, at};
	s->kinds[d->kind]++;
}

static void sim_decide(struct sim *s, struct handle *h, bool async,
		       uint64_t index, uint64_t req, struct ra_decision *d)
{
	struct ra_view v = {model_prev_hole, model_next_hole, s};
	struct ra_stream_table *t = s->use_table ? &s->table : NULL;

	memset(d, 0, sizeof(*d));
	if (s->ref) {
		if (async)
			ref_async(s, &h->r, (int64_t)index, (int64_t)req, d);
		else
			ref_sync(s, &h->r, (int64_t)index, (int64_t)req, d);
		ref_finish(s, d);
	} else if (async) {
		ra_decide_async(&h->h, t, &s->p, &v, index, req, d);
	} else {
		ra_decide_sync(&h->h, t, &s->p, &v, index, req, d);
	}
	sim_log(s, d, async, index);
}

/* A read of @nr pages at @index through handle @h. */
static inline void sim_read(struct sim *s, struct handle *h, uint64_t index,
			    uint64_t nr)
{
	struct ra_decision d;
	uint64_t end = index + nr;

	if (end > s->npages)
		end = s->npages; /* a read past EOF is short */
	for (uint64_t i = index; i < end; i++) {
		if (!sim_present(s, i)) {
			if (s->pg[i] & MP_GHOST) {
				s->pg[i] &= ~MP_GHOST;
				s->thrash++;
				if (s->use_table && !s->ref)
					ra_stream_thrash(&s->table, i);
			}
			sim_decide(s, h, false, i, end - i, &d);
			sim_apply(s, &d, i, end);
			assert_true(sim_present(s, i)); /* never left missing */
		}
		if (s->pg[i] & MP_MARK) {
			s->pg[i] &= ~MP_MARK;
			sim_decide(s, h, true, i, end - i, &d);
			sim_apply(s, &d, i, end);
		}
		s->pg[i] &= ~MP_UNUSED;
	}
	if (s->ref)
		h->r.prev = (int64_t)(index + nr - 1);
	else
		ra_note_read(&h->h, index, nr);
}

/* A read of @len bytes at byte offset @off. */
static inline void sim_pread(struct sim *s, struct handle *h, uint64_t off,
			     uint64_t len)
{
	uint64_t first = off / 4096, last = (off + len - 1) / 4096;

	sim_read(s, h, first, last - first + 1);
}

/* The two runs made the same decisions and the same I/O. */
static inline void sim_assert_same(const struct sim *a, const struct sim *b)
{
	assert_int_equal(a->ndec, b->ndec);
	for (size_t i = 0; i < a->ndec; i++) {
		const struct model_dec *x = &a->dec[i], *y = &b->dec[i];

		if (x->d.kind != y->d.kind || x->d.start != y->d.start ||
		    x->d.size != y->d.size ||
		    x->d.async_size != y->d.async_size ||
		    x->d.io_nr != y->d.io_nr || x->d.mark != y->d.mark ||
		    x->async != y->async || x->at != y->at)
			fail_msg("decision %zu at page %llu: %s %llu+%llu "
				 "async %llu mark %lld, reference %s "
				 "%llu+%llu async %llu mark %lld",
				 i, (unsigned long long)x->at,
				 ra_kind_name(x->d.kind),
				 (unsigned long long)x->d.start,
				 (unsigned long long)x->d.size,
				 (unsigned long long)x->d.async_size,
				 (long long)x->d.mark, ra_kind_name(y->d.kind),
				 (unsigned long long)y->d.start,
				 (unsigned long long)y->d.size,
				 (unsigned long long)y->d.async_size,
				 (long long)y->d.mark);
	}
	assert_int_equal(a->nio, b->nio);
	for (size_t i = 0; i < a->nio; i++) {
		assert_int_equal(a->io[i].start, b->io[i].start);
		assert_int_equal(a->io[i].nr, b->io[i].nr);
	}
	assert_int_equal(a->backing_pages, b->backing_pages);
}

/* First decision of @kind at or after page @lo and below @hi, or NULL. */
static inline const struct model_dec *
sim_find(const struct sim *s, enum ra_kind kind, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < s->ndec; i++)
		if (s->dec[i].d.kind == kind && s->dec[i].at >= lo &&
		    s->dec[i].at < hi)
			return &s->dec[i];
	return NULL;
}

/* Decision @m is @kind with this window. */
static inline void assert_window(const struct model_dec *m, enum ra_kind kind,
				 uint64_t start, uint64_t size,
				 uint64_t async_size)
{
	assert_non_null(m);
	if (m->d.kind != kind || m->d.start != start || m->d.size != size ||
	    m->d.async_size != async_size)
		fail_msg("at page %llu: got %s %llu+%llu async %llu, "
			 "expected %s %llu+%llu async %llu",
			 (unsigned long long)m->at, ra_kind_name(m->d.kind),
			 (unsigned long long)m->d.start,
			 (unsigned long long)m->d.size,
			 (unsigned long long)m->d.async_size,
			 ra_kind_name(kind), (unsigned long long)start,
			 (unsigned long long)size,
			 (unsigned long long)async_size);
}

/* Deterministic PRNG (xorshift64*), so every run replays the same trace. */
static inline uint64_t test_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(2685821657736338717);
}

#endif /* AHEADFS_TEST_RA_MODEL_H */
