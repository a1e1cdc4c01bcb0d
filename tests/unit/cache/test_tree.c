/* test_tree.c - the radix tree alone: edges, growth and shrink, and the
 * hole scans against a reference model over thousands of seeded random
 * sets.  Entries are fake page pointers (never dereferenced by the tree)
 * and CACHE_HISTORY.
 */
#include <sys/prctl.h>

#include "cache_test.h"

static void *fake_page(uint64_t index)
{
	return (void *)(uintptr_t)((index + 1) << 3);
}

static int tree_setup(void **state)
{
	struct cache_tree *t = calloc(1, sizeof(*t));

	cache_thread_online();
	if (!t)
		return -1;
	cache_tree_init(t);
	*state = t;
	return 0;
}

static int tree_teardown(void **state)
{
	struct cache_tree *t = *state;

	cache_tree_clear(t);
	rcu_barrier(); /* nodes are freed after a grace period */
	free(t);
	return 0;
}

static unsigned int root_shift(const struct cache_tree *t)
{
	return t->root ? t->root->shift : 0;
}

static void test_index_zero(void **state)
{
	struct cache_tree *t = *state;

	assert_int_equal(cache_tree_store(t, 0, fake_page(0)), 0);
	assert_int_equal(cache_tree_check(t), 0);
	assert_ptr_equal(cache_tree_lookup_rcu(t, 0), fake_page(0));
	assert_null(cache_tree_lookup_rcu(t, 1));
	assert_int_equal(root_shift(t), 0);
	assert_int_equal(cache_tree_next_hole_rcu(t, 0, 10), 1);
	assert_int_equal(cache_tree_prev_hole_rcu(t, 0, 10), CACHE_NO_HOLE);
	assert_int_equal(cache_tree_store(t, 0, NULL), 0);
	assert_null(t->root);
	assert_int_equal(cache_tree_check(t), 0);
}

static void test_highest_index(void **state)
{
	struct cache_tree *t = *state;
	uint64_t top = CACHE_INDEX_LIMIT - 1;

	assert_int_equal(cache_tree_store(t, top, fake_page(top)), 0);
	assert_int_equal(root_shift(t), CACHE_TREE_MAX_SHIFT);
	assert_ptr_equal(cache_tree_lookup_rcu(t, top), fake_page(top));
	assert_null(cache_tree_lookup_rcu(t, top - 1));
	assert_int_equal(cache_tree_next_hole_rcu(t, top, 5),
			 CACHE_INDEX_LIMIT);
	assert_int_equal(cache_tree_prev_hole_rcu(t, top, 5), top - 1);
	assert_int_equal(cache_tree_check(t), 0);
	assert_int_equal(t->nodes, 9);
}

static void test_limit_and_sentinel_rejected(void **state)
{
	struct cache_tree *t = *state;

	assert_int_equal(cache_tree_store(t, CACHE_INDEX_LIMIT, fake_page(1)),
			 -EINVAL);
	assert_int_equal(cache_tree_store(t, UINT64_MAX, fake_page(1)),
			 -EINVAL);
	assert_null(t->root);
	assert_null(cache_tree_lookup_rcu(t, UINT64_MAX));
	/* Beyond the limit everything is a hole. */
	assert_int_equal(cache_tree_next_hole_rcu(t, UINT64_MAX, 4),
			 UINT64_MAX);
	assert_int_equal(cache_tree_prev_hole_rcu(t, UINT64_MAX, 4),
			 UINT64_MAX);
}

static void test_height_grows_and_shrinks(void **state)
{
	struct cache_tree *t = *state;
	uint64_t idx[] = {5, 64, 4096, 262144, UINT64_C(1) << 30};
	unsigned int shifts[] = {0, 6, 12, 18, 30};

	for (unsigned int i = 0; i < 5; i++) {
		assert_int_equal(cache_tree_store(t, idx[i], fake_page(idx[i])),
				 0);
		assert_int_equal(root_shift(t), shifts[i]);
		assert_int_equal(cache_tree_check(t), 0);
	}
	for (unsigned int i = 0; i < 5; i++)
		assert_ptr_equal(cache_tree_lookup_rcu(t, idx[i]),
				 fake_page(idx[i]));
	/* Removing from the top shrinks the height back step by step. */
	for (int i = 4; i > 0; i--) {
		assert_int_equal(cache_tree_store(t, idx[i], NULL), 0);
		assert_int_equal(root_shift(t), shifts[i - 1]);
		assert_int_equal(cache_tree_check(t), 0);
	}
	assert_ptr_equal(cache_tree_lookup_rcu(t, 5), fake_page(5));
	assert_int_equal(t->nodes, 1);
}

static void test_root_keeps_high_slot(void **state)
{
	struct cache_tree *t = *state;

	/* A first index far from 0 gets a root that covers it directly. */
	assert_int_equal(cache_tree_store(t, 100000, fake_page(100000)), 0);
	assert_int_equal(root_shift(t), 12);
	assert_int_equal(cache_tree_store(t, 3, CACHE_HISTORY), 0);
	assert_int_equal(cache_tree_store(t, 100000, NULL), 0);
	/* Only slot 0 is left: the root shrinks to the leaf. */
	assert_int_equal(root_shift(t), 0);
	assert_ptr_equal(cache_tree_lookup_rcu(t, 3), CACHE_HISTORY);
	assert_int_equal(cache_tree_check(t), 0);
}

static void test_history_two_kinds_of_occupancy(void **state)
{
	struct cache_tree *t = *state;

	for (uint64_t i = 0; i < 200; i++)
		assert_int_equal(
			cache_tree_store(t, i,
					 i % 3 ? fake_page(i) : CACHE_HISTORY),
			0);
	assert_int_equal(cache_tree_check(t), 0);
	assert_int_equal(t->history, 67);
	assert_int_equal(t->data, 133);
	/* prev_hole: history is present, all of [0, 199] is. */
	assert_int_equal(cache_tree_prev_hole_rcu(t, 199, 1000), CACHE_NO_HOLE);
	/* next_hole: history is a hole. */
	assert_int_equal(cache_tree_next_hole_rcu(t, 1, 100), 3);
	assert_int_equal(cache_tree_next_entry_rcu(t, 3, 100, true), 4);
	assert_int_equal(cache_tree_next_entry_rcu(t, 3, 100, false), 3);
}

static void test_full_subtree_skipped(void **state)
{
	struct cache_tree *t = *state;
	uint64_t n = 64 * 64 * 3 + 17;

	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(cache_tree_store(t, i, fake_page(i)), 0);
	assert_int_equal(cache_tree_check(t), 0);
	/* The root (shift 12) marks its first three children full. */
	assert_int_equal(t->root->shift, 12);
	assert_int_equal(t->root->data_full & 7, 7);
	assert_int_equal(cache_tree_next_hole_rcu(t, 0, UINT64_MAX), n);
	assert_int_equal(cache_tree_prev_hole_rcu(t, n - 1, n), CACHE_NO_HOLE);
	assert_int_equal(cache_tree_prev_hole_rcu(t, n - 1, n - 1), 0);
	/* Turning one page into history: a hole for next_hole only. */
	assert_int_equal(cache_tree_store(t, 5000, CACHE_HISTORY), 0);
	assert_int_equal(cache_tree_next_hole_rcu(t, 0, UINT64_MAX), 5000);
	assert_int_equal(cache_tree_prev_hole_rcu(t, n - 1, n), CACHE_NO_HOLE);
	assert_int_equal(cache_tree_store(t, 5000, NULL), 0);
	assert_int_equal(cache_tree_prev_hole_rcu(t, n - 1, n), 5000);
	assert_int_equal(cache_tree_check(t), 0);
}

/* ---------------------------------------------------------------------- */
/* Property test against a reference model.                                */

enum { M_HOLE, M_HISTORY, M_DATA };

struct model {
	uint64_t base; /* first index of the window */
	uint64_t width;
	uint8_t *kind;
	uint64_t *next_data_hole; /* per offset: first hole for next_hole */
	uint64_t *prev_any_hole; /* per offset: last hole for prev_hole */
};

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static void model_build(struct model *md, struct cache_tree *t, uint64_t *seed)
{
	uint64_t w = 1 + rnd(seed) % (rnd(seed) % 4 ? 700 : 9000);
	unsigned int style = rnd(seed) % 4;

	md->width = w;
	switch (rnd(seed) % 4) {
	case 0:
		md->base = 0;
		break;
	case 1:
		md->base = (rnd(seed) % 64) * 4096;
		break;
	case 2:
		md->base = CACHE_INDEX_LIMIT - w;
		break;
	default:
		md->base = rnd(seed) % (CACHE_INDEX_LIMIT - w);
		break;
	}
	md->kind = calloc(w, 1);
	md->next_data_hole = calloc(w, sizeof(uint64_t));
	md->prev_any_hole = calloc(w, sizeof(uint64_t));
	assert_true(md->kind && md->next_data_hole && md->prev_any_hole);
	for (uint64_t i = 0; i < w;) {
		/* Runs of one kind: long runs make full leaves and subtrees. */
		uint64_t run = style == 0 ? 1 + rnd(seed) % 8
					  : 1 + rnd(seed) % (style * 3000);
		unsigned int k = rnd(seed) % 10;

		k = k < 2 ? M_HOLE : k < 3 ? M_HISTORY : M_DATA;
		if (style == 3 && k == M_HOLE && rnd(seed) % 4)
			k = M_DATA; /* mostly full */
		for (uint64_t j = 0; j < run && i < w; j++, i++) {
			/* Sprinkle the other kinds into runs. */
			unsigned int kk = rnd(seed) % 97 ? k : rnd(seed) % 3;

			md->kind[i] = kk;
			if (kk != M_HOLE)
				assert_int_equal(
					cache_tree_store(
						t, md->base + i,
						kk == M_DATA
							? fake_page(md->base +
								    i)
							: CACHE_HISTORY),
					0);
		}
	}
	/* Remove some again, so deletion paths and shrink are exercised. */
	for (unsigned int r = rnd(seed) % 50; r; r--) {
		uint64_t i = rnd(seed) % w;

		md->kind[i] = M_HOLE;
		assert_int_equal(cache_tree_store(t, md->base + i, NULL), 0);
	}
	/* Reference answers, outside the window everything is a hole. */
	for (uint64_t i = w; i-- > 0;)
		md->next_data_hole[i] = md->kind[i] != M_DATA ? md->base + i
					: i + 1 < w ? md->next_data_hole[i + 1]
						    : md->base + w;
	for (uint64_t i = 0; i < w; i++)
		md->prev_any_hole[i] = md->kind[i] == M_HOLE ? md->base + i
				       : i	  ? md->prev_any_hole[i - 1]
				       : md->base ? md->base - 1
						  : CACHE_NO_HOLE;
}

static void model_free(struct model *md)
{
	free(md->kind);
	free(md->next_data_hole);
	free(md->prev_any_hole);
}

static uint64_t ref_next_hole(const struct model *md, uint64_t index,
			      uint64_t max_scan)
{
	uint64_t hole, end;

	if (index < md->base || index >= md->base + md->width)
		hole = index;
	else
		hole = md->next_data_hole[index - md->base];
	if (hole >= CACHE_INDEX_LIMIT)
		hole = CACHE_INDEX_LIMIT;
	end = max_scan > UINT64_MAX - index ? UINT64_MAX : index + max_scan;
	return hole < end ? hole : end;
}

static uint64_t ref_prev_hole(const struct model *md, uint64_t index,
			      uint64_t max_scan)
{
	uint64_t hole;

	if (!max_scan)
		return index;
	if (index < md->base || index >= md->base + md->width)
		hole = index;
	else
		hole = md->prev_any_hole[index - md->base];
	if (hole == CACHE_NO_HOLE)
		return max_scan > index ? CACHE_NO_HOLE : index - max_scan;
	if (index - hole >= max_scan)
		return index - max_scan;
	return hole;
}

static void expect_scan(const char *name, unsigned int set, uint64_t index,
			uint64_t max_scan, uint64_t got, uint64_t want)
{
	if (got != want)
		fail_msg("set %u %s(%lu, %lu) = %lu, want %lu", set, name,
			 (unsigned long)index, (unsigned long)max_scan,
			 (unsigned long)got, (unsigned long)want);
}

static void test_hole_scans_match_model(void **state)
{
	struct cache_tree *t = *state;
	uint64_t seed = 0x5eed0001;
#ifdef AHEADFS_TSAN
	/* Single-threaded: ThreadSanitizer adds nothing but time here. */
	unsigned int sets = 300;
#else
	unsigned int sets = 3000;
#endif

	for (unsigned int s = 0; s < sets; s++) {
		struct model md;

		model_build(&md, t, &seed);
		assert_int_equal(cache_tree_check(t), 0);
		for (unsigned int q = 0; q < 64; q++) {
			/* Queries in and around the window. */
			uint64_t span = md.width + 200;
			uint64_t index = md.base + rnd(&seed) % span;
			uint64_t max_scan;

			if (index >= 100 && rnd(&seed) % 2)
				index -= 100;
			if (index >= CACHE_INDEX_LIMIT)
				index = CACHE_INDEX_LIMIT - 1;
			switch (rnd(&seed) % 4) {
			case 0:
				max_scan = rnd(&seed) % 70;
				break;
			case 1:
				max_scan = rnd(&seed) % (2 * span);
				break;
			case 2:
				max_scan = UINT64_MAX;
				break;
			default:
				max_scan = index + 1;
				break;
			}
			expect_scan(
				"next_hole", s, index, max_scan,
				cache_tree_next_hole_rcu(t, index, max_scan),
				ref_next_hole(&md, index, max_scan));
			expect_scan(
				"prev_hole", s, index, max_scan,
				cache_tree_prev_hole_rcu(t, index, max_scan),
				ref_prev_hole(&md, index, max_scan));
		}
		cache_tree_clear(t);
		model_free(&md);
		if (s % 256 == 255)
			rcu_barrier(); /* keep the pending frees bounded */
	}
}

static void test_gang_and_next_entry_match_model(void **state)
{
	struct cache_tree *t = *state;
	uint64_t seed = 0x5eed0002;
	void *out[300];
#ifdef AHEADFS_TSAN
	unsigned int sets = 100;
#else
	unsigned int sets = 1000;
#endif

	for (unsigned int s = 0; s < sets; s++) {
		struct model md;

		model_build(&md, t, &seed);
		for (unsigned int q = 0; q < 16; q++) {
			uint64_t first = md.base + rnd(&seed) % md.width;
			uint64_t last = first + rnd(&seed) % 400;
			unsigned int max = 1 + rnd(&seed) % 300, want = 0;
			unsigned int got =
				cache_tree_gang_rcu(t, first, last, out, max);
			uint64_t next_any = UINT64_MAX, next_data = UINT64_MAX;

			for (uint64_t i = first;
			     i <= last && i < md.base + md.width; i++) {
				unsigned int k = md.kind[i - md.base];

				if (k != M_HOLE && next_any == UINT64_MAX)
					next_any = i;
				if (k != M_DATA)
					continue;
				if (next_data == UINT64_MAX)
					next_data = i;
				if (want < max) {
					assert_true(want < got);
					assert_ptr_equal(out[want],
							 fake_page(i));
					want++;
				}
			}
			assert_int_equal(got, want);
			assert_int_equal(
				cache_tree_next_entry_rcu(t, first, last, true),
				next_data);
			assert_int_equal(cache_tree_next_entry_rcu(t, first,
								   last, false),
					 next_any);
		}
		cache_tree_clear(t);
		model_free(&md);
		if (s % 256 == 255)
			rcu_barrier();
	}
}

/* The first chunk of nodes is faulted in before any node is handed out
 * (cache_nodes_prefault(), which cache_create() calls): the kernel's
 * zeroing of it is not paid by a first read.  First in this program, so
 * no chunk exists yet. */
static void test_nodes_prefault(void **state)
{
	void *chunk;
	int res;

	(void)state;
#ifdef AHEADFS_TSAN
	skip(); /* nodes from calloc() there */
#endif
	assert_int_equal(cache_node_chunks(), 0);
	/* In 4 KiB pages: with a huge page, the chunk header's first write
	 * alone would bring in the whole chunk. */
	assert_int_equal(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0), 0);
	chunk = cache_nodes_prefault();
	assert_int_equal(prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0), 0);
	assert_non_null(chunk);
	assert_int_equal(cache_node_chunks(), 1);
	/* Before any node of it is touched. */
	res = all_resident(chunk, CACHE_CHUNK_BYTES);
	/* One with room already: no second. */
	assert_null(cache_nodes_prefault());
	assert_int_equal(cache_node_chunks(), 1);
	if (res < 0)
		skip();
	assert_int_equal(res, 1);
}

/* Nodes come from 2 MiB chunks (nodes.c): each handed out zeroed and
 * apart from the others, chunks added as they fill, and given back when
 * their nodes are, but for one kept with room.  Sparse indexes, a leaf
 * each, as a cold random reader's pages make them. */
static void test_nodes_from_chunks(void **state)
{
	struct cache_tree *t = *state;
	unsigned int before = cache_node_chunks(), n = 0;
	struct cache_node **got;
	size_t max = 3 * (CACHE_CHUNK_BYTES / sizeof(struct cache_node));

#ifdef AHEADFS_TSAN
	skip(); /* nodes from calloc() there */
#endif
	got = calloc(max, sizeof(*got));
	assert_non_null(got);
	/* Hand out nodes until three more chunks are mapped. */
	while (cache_node_chunks() < before + 3) {
		assert_true(n < max);
		got[n] = cache_node_get();
		assert_non_null(got[n]);
		for (size_t b = 0; b < sizeof(struct cache_node); b++)
			assert_int_equal(((unsigned char *)got[n])[b], 0);
		memset(got[n], 0xa5, sizeof(struct cache_node));
		n++;
	}
	/* No two overlap: each still holds only its own bytes. */
	for (unsigned int i = 0; i < n; i++) {
		assert_int_equal(((unsigned char *)got[i])[0], 0xa5);
		assert_int_equal(((unsigned char *)(got[i] + 1))[-1], 0xa5);
		got[i]->shift = (uint8_t)i;
		got[i]->present = i;
	}
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(got[i]->present, i);
	for (unsigned int i = 0; i < n; i++)
		cache_node_put(got[i]);
	/* Every chunk mapped here is empty again: all of them given back
	 * but one where none was mapped before. */
	assert_int_equal(cache_node_chunks(), before ? before : 1);
	/* A node given back comes out zeroed again. */
	got[0] = cache_node_get();
	assert_non_null(got[0]);
	assert_int_equal(got[0]->present, 0);
	assert_int_equal(got[0]->shift, 0);
	cache_node_put(got[0]);
	free(got);

	/* Through the tree: 2000 leaves apart, then gone after a grace
	 * period, their chunks with them. */
	before = cache_node_chunks();
	for (uint64_t i = 0; i < 2000; i++)
		assert_int_equal(cache_tree_store(t, i << 12, fake_page(i)), 0);
	assert_true(t->nodes > 2000);
	cache_tree_clear(t);
	rcu_barrier();
	assert_true(cache_node_chunks() <= (before ? before : 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tree_setup, tree_teardown)
		T(test_nodes_prefault), /* first: no chunk yet */
		T(test_index_zero),
		T(test_highest_index),
		T(test_limit_and_sentinel_rejected),
		T(test_height_grows_and_shrinks),
		T(test_root_keeps_high_slot),
		T(test_history_two_kinds_of_occupancy),
		T(test_full_subtree_skipped),
		T(test_hole_scans_match_model),
		T(test_gang_and_next_entry_match_model),
		T(test_nodes_from_chunks),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
