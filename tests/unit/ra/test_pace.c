/* test_pace.c - the pacing policy (ra/pace.c) on made-up clocks: the
 * reader's rate and the cap it allows, the fair share of the budget and its
 * epochs, due times, the tune word and a file's cap that follows it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "geometry.h"
#include "pace.h"
#include "ra/ra.h"

#define SEC UINT64_C(1000000000)
#define PAGE 4096u

/* ra_rate_max() on @st with its lock held, as ra.c calls it. */
static uint64_t rate_max(struct ra_state *st, uint64_t index, uint64_t max,
			 uint64_t now)
{
	uint64_t cap;

	pthread_mutex_lock(&st->lock);
	cap = ra_rate_max(st, index, max, now);
	pthread_mutex_unlock(&st->lock);
	return cap;
}

static void test_rate_first_mark_is_uncapped(void **state)
{
	struct ra_state st;

	ra_state_init(&st);
	assert_int_equal(rate_max(&st, 100, 1024, 5 * SEC), 1024);
	assert_int_equal(st.rate, 0);
	assert_int_equal(st.mark_index, 100);
	assert_int_equal(st.mark_ns, 5 * SEC);
	ra_state_destroy(&st);
}

static void test_rate_caps_a_second_of_reading(void **state)
{
	struct ra_state st;

	ra_state_init(&st);
	rate_max(&st, 0, 1024, SEC);
	/* 512 pages in a second: a window of a second's reading. */
	assert_int_equal(rate_max(&st, 512, 1024, 2 * SEC), 512);
	assert_int_equal(st.rate, 512);
	/* Faster than the cap: the cap. */
	assert_int_equal(rate_max(&st, 4096, 1024, 2 * SEC + SEC / 1000), 1024);
	ra_state_destroy(&st);
}

static void test_rate_lower_at_once_higher_a_quarter(void **state)
{
	struct ra_state st;

	ra_state_init(&st);
	rate_max(&st, 0, 4096, SEC);
	rate_max(&st, 800, 4096, 2 * SEC);
	assert_int_equal(st.rate, 800);
	/* A higher sample (1600 a second) weighs a quarter. */
	assert_int_equal(rate_max(&st, 1600, 4096, 2 * SEC + SEC / 2), 1000);
	assert_int_equal(st.rate, (3 * 800 + 1600) / 4);
	/* A lower one (400 a second) is taken at once. */
	rate_max(&st, 2000, 4096, 3 * SEC + SEC / 2);
	assert_int_equal(st.rate, 400);
	ra_state_destroy(&st);
}

static void test_rate_floor(void **state)
{
	struct ra_state st;

	ra_state_init(&st);
	rate_max(&st, 0, 2048, SEC);
	/* 10 pages a second: never below a large request. */
	assert_int_equal(rate_max(&st, 10, 2048, 2 * SEC), RA_RATE_MIN_PAGES);
	assert_int_equal(st.rate, 10);
	/* A cap below the floor stays the cap. */
	assert_int_equal(rate_max(&st, 20, 64, 3 * SEC), 64);
	ra_state_destroy(&st);
}

static void test_rate_restarts(void **state)
{
	struct ra_state st;

	ra_state_init(&st);
	rate_max(&st, 1000, 1024, SEC);
	rate_max(&st, 1500, 1024, 2 * SEC);
	assert_int_equal(st.rate, 500);
	/* A mark behind the previous one: another stream, measure again. */
	assert_int_equal(rate_max(&st, 100, 1024, 3 * SEC), 1024);
	assert_int_equal(st.rate, 0);
	rate_max(&st, 600, 1024, 4 * SEC);
	assert_int_equal(st.rate, 500);
	/* More than 4 x max ahead. */
	assert_int_equal(rate_max(&st, 600 + 4 * 1024 + 1, 1024, 5 * SEC),
			 1024);
	assert_int_equal(st.rate, 0);
	rate_max(&st, 6000, 1024, 6 * SEC);
	assert_int_equal(st.rate, 6000 - (600 + 4 * 1024 + 1));
	/* No time passed. */
	assert_int_equal(rate_max(&st, 6100, 1024, 6 * SEC), 1024);
	assert_int_equal(st.rate, 0);
	ra_state_destroy(&st);
}

static void test_share_epochs(void **state)
{
	struct ra_share s = {{0, 0}};
	uint64_t seen_a = RA_SHARE_NONE, seen_b = RA_SHARE_NONE;
	uint64_t ep = ra_share_epoch(10 * RA_SHARE_EPOCH_NS + 5);

	assert_int_equal(ep, 10);
	assert_int_equal(ra_share_epoch(RA_SHARE_EPOCH_NS - 1), 0);
	assert_int_equal(ra_share_readers(&s, ep), 0);
	ra_share_count(&s, &seen_a, ep);
	ra_share_count(&s, &seen_a, ep); /* once per epoch */
	ra_share_count(&s, &seen_b, ep);
	assert_int_equal(seen_a, ep);
	assert_int_equal(ra_share_readers(&s, ep), 2);
	/* The next epoch still sees the last one's readers... */
	assert_int_equal(ra_share_readers(&s, ep + 1), 2);
	ra_share_count(&s, &seen_a, ep + 1);
	assert_int_equal(ra_share_readers(&s, ep + 1), 2);
	/* ... and the one after only its own. */
	assert_int_equal(ra_share_readers(&s, ep + 2), 1);
	/* A slot of an older epoch starts over. */
	ra_share_count(&s, &seen_a, ep + 2);
	assert_int_equal(s.slot[(ep + 2) & 1], (ep + 2) << 32 | 1);
	assert_int_equal(ra_share_readers(&s, ep + 2), 1);
	assert_int_equal(ra_share_readers(&s, ep + 5), 0);
}

static void test_share_max(void **state)
{
	struct ra_share s = {{0, 0}};
	uint64_t seen[8];

	/* No reader counts as one. */
	assert_int_equal(ra_share_max(&s, 3, 1, 4096, false), 1024);
	assert_int_equal(ra_share_max(&s, 3, 1, 4096, true), 2048);
	for (int i = 0; i < 8; i++) {
		seen[i] = RA_SHARE_NONE;
		ra_share_count(&s, &seen[i], 3);
	}
	assert_int_equal(ra_share_max(&s, 3, 1, 4096, false), 128);
	assert_int_equal(ra_share_max(&s, 3, 1, 4096, true), 256);
	/* Below 16 pages when the readers need it, never below the
	 * request, never 0. */
	assert_int_equal(ra_share_max(&s, 3, 1, 256, false), 8);
	assert_int_equal(ra_share_max(&s, 3, 2, 32, false), 2);
	assert_int_equal(ra_share_max(&s, 3, 0, 16, false), 1);
	assert_int_equal(ra_share_max(&s, 3, 300, 4096, false), 300);
}

static void test_due_at(void **state)
{
	struct ra_due t = {.now = 7 * SEC, .index = 100, .rate = 50};
	struct ra_due none = {.now = 7 * SEC, .index = 100, .rate = 0};

	assert_int_equal(ra_due_at(NULL, 200), 0);
	assert_int_equal(ra_due_at(&none, 200), 0);
	assert_int_equal(ra_due_at(&t, 100), 0); /* at the reader */
	assert_int_equal(ra_due_at(&t, 50), 0); /* behind it */
	assert_int_equal(ra_due_at(&t, 150), 8 * SEC);
	assert_int_equal(ra_due_at(&t, 125), 7 * SEC + SEC / 2);
	/* Far ahead: at most a minute. */
	assert_int_equal(ra_due_at(&t, 100 + 50 * 3600),
			 7 * SEC + RA_DUE_MAX_NS);
}

static void test_tune_word(void **state)
{
	struct ra_tuning t,
		in = {256 * PAGE, RA_CONTEXT_OFF, RA_STREAM_TABLE_OFF};
	uint64_t w =
		ra_tune_word(64 * PAGE, RA_CONTEXT_LOOSE, RA_STREAM_TABLE_ON);

	assert_int_equal(w & RA_TUNE_WORD_MAX_MASK, 64);
	assert_int_equal(ra_tune_context(w), RA_CONTEXT_LOOSE);
	assert_false(ra_tune_no_table(w));
	ra_tune_word_read(w, &t);
	assert_int_equal(t.max_bytes, 64 * PAGE);
	assert_int_equal(t.context, RA_CONTEXT_LOOSE);
	assert_int_equal(t.stream_table, RA_STREAM_TABLE_ON);

	/* An update changes only the fields it names. */
	w = ra_tune_word_update(w, &in, RA_TUNE_STREAM_TABLE);
	ra_tune_word_read(w, &t);
	assert_int_equal(t.max_bytes, 64 * PAGE);
	assert_int_equal(t.context, RA_CONTEXT_LOOSE);
	assert_int_equal(t.stream_table, RA_STREAM_TABLE_OFF);
	w = ra_tune_word_update(w, &in, RA_TUNE_MAX | RA_TUNE_CONTEXT);
	ra_tune_word_read(w, &t);
	assert_int_equal(t.max_bytes, 256 * PAGE);
	assert_int_equal(t.context, RA_CONTEXT_OFF);
	assert_true(ra_tune_no_table(w));
	in.stream_table = RA_STREAM_TABLE_ON;
	w = ra_tune_word_update(w, &in, RA_TUNE_STREAM_TABLE);
	assert_false(ra_tune_no_table(w));
	assert_int_equal(w, ra_tune_word(256 * PAGE, RA_CONTEXT_OFF,
					 RA_STREAM_TABLE_ON));
}

static void test_tune_apply(void **state)
{
	struct ra_tuning t = {128 * PAGE, RA_CONTEXT_OFF, RA_STREAM_TABLE_ON};
	uint64_t w0 = ra_tune_word(0, RA_CONTEXT_LOOSE, RA_STREAM_TABLE_OFF);
	uint64_t w = w0;

	assert_int_equal(ra_tune_apply(&w, NULL, RA_TUNE_MAX), -EINVAL);
	assert_int_equal(ra_tune_apply(&w, &t, 0x8u), -EINVAL);
	t.max_bytes = 128 * PAGE + 1;
	assert_int_equal(ra_tune_apply(&w, &t, RA_TUNE_MAX | RA_TUNE_CONTEXT),
			 -EINVAL);
	t.max_bytes = RA_MAX_BYTES_LIMIT + PAGE;
	assert_int_equal(ra_tune_apply(&w, &t, RA_TUNE_MAX), -EINVAL);
	t.max_bytes = 128 * PAGE;
	t.context = (enum ra_context_rule)(RA_CONTEXT_OFF + 1);
	assert_int_equal(ra_tune_apply(&w, &t, RA_TUNE_CONTEXT), -EINVAL);
	t.context = RA_CONTEXT_OFF;
	t.stream_table = (enum ra_stream_table_mode)(RA_STREAM_TABLE_OFF + 1);
	assert_int_equal(ra_tune_apply(&w, &t, RA_TUNE_STREAM_TABLE), -EINVAL);
	assert_int_equal(w, w0); /* nothing changed */
	t.stream_table = RA_STREAM_TABLE_ON;
	assert_int_equal(ra_tune_apply(&w, &t, RA_TUNE_MAX), 0);
	assert_int_equal(w, ra_tune_word(128 * PAGE, RA_CONTEXT_LOOSE,
					 RA_STREAM_TABLE_OFF));
}

static void test_cap_follows_tune_and_advice(void **state)
{
	struct ra_geometry g;
	struct ra_cap c;
	uint64_t auto_pages = ra_auto_max_bytes(0, 0, 0) / PAGE;
	uint64_t w = ra_tune_word(0, RA_CONTEXT_LOOSE, RA_STREAM_TABLE_ON);

	memset(&g, 0, sizeof(g));
	assert_int_equal(ra_tune_base_max(w, &g, 0), auto_pages);
	/* The automatic cap takes the floor. */
	assert_int_equal(ra_tune_base_max(w, &g, 8 * auto_pages * PAGE),
			 8 * auto_pages);

	ra_cap_init(&c, w, &g, 0);
	assert_int_equal(c.advice, RA_ADVICE_NORMAL);
	assert_int_equal(c.max, auto_pages);
	assert_false(ra_cap_sync(&c, w, &g, 0)); /* nothing new */
	ra_cap_advise(&c, RA_ADVICE_SEQUENTIAL);
	assert_int_equal(c.max, 2 * auto_pages);
	/* A new cap keeps the advice: twice the new cap. */
	w = ra_tune_word(100 * PAGE, RA_CONTEXT_LOOSE, RA_STREAM_TABLE_ON);
	assert_true(ra_cap_sync(&c, w, &g, 0));
	assert_int_equal(c.base_max, 100);
	assert_int_equal(c.max, 200);
	assert_int_equal(c.tune_seen, w);
	ra_cap_advise(&c, RA_ADVICE_RANDOM);
	assert_int_equal(c.max, 100);
	ra_cap_advise(&c, RA_ADVICE_NORMAL);
	assert_int_equal(c.max, 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate_first_mark_is_uncapped),
		cmocka_unit_test(test_rate_caps_a_second_of_reading),
		cmocka_unit_test(test_rate_lower_at_once_higher_a_quarter),
		cmocka_unit_test(test_rate_floor),
		cmocka_unit_test(test_rate_restarts),
		cmocka_unit_test(test_share_epochs),
		cmocka_unit_test(test_share_max),
		cmocka_unit_test(test_due_at),
		cmocka_unit_test(test_tune_word),
		cmocka_unit_test(test_tune_apply),
		cmocka_unit_test(test_cap_follows_tune_and_advice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
