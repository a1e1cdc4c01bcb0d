/* tree.c - the RCU radix tree of a mapping, with bitmap hole scans.
 *
 * A 64-way radix tree keyed by page index.  A node of shift s covers 64
 * slots of 2^s indexes each; leaves have shift 0.  The root covers
 * [0, 2^(root->shift + 6)); the tree grows a level when an index beyond
 * that is stored and shrinks while the root has only slot 0 in use.
 *
 *   root (shift 12) ─┬─ slot 0: node (shift 6) ─┬─ slot 0: leaf [0, 64)
 *                    │                          └─ slot 5: leaf [320, 384)
 *                    └─ slot 3: node (shift 6) ── slot 0: leaf [12288, ...)
 *
 * Every node carries three bitmaps (see struct cache_node): present slots,
 * and two "full" maps, one per kind of occupancy: data_full (data pages
 * only: next_hole treats history as a hole) and any_full (data or history:
 * prev_hole treats history as present).  In a leaf the full maps are the
 * entries themselves; above, a bit is set when the child's whole subtree is
 * full.  A hole scan descends to the position, finds the first non-full
 * slot at or past it with one bit scan (skipping a full leaf or a full
 * subtree in one step), and restarts from the root at the next node
 * boundary: O(height) per 64 pages in the worst case, O(height) for a
 * fully cached range of any length in the best -- not one lookup per page,
 * which is what the review of the original prev_hole patch asked for.
 *
 * Concurrency: writers hold the embedding mapping's lock.  Slots, bitmaps
 * and the root are published with __atomic release stores and read with
 * acquire loads (ThreadSanitizer sees these; it does not see through
 * rcu_dereference()).  Nodes are freed with call_rcu() after a grace
 * period, so a reader may keep walking a node that was just unlinked.  A
 * reader may see a bitmap and a slot from different moments: scans are
 * hints, lookups are exact for the moment of the slot load.  Readers never
 * follow parent pointers (writer-only).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache_internal.h"

#define load_acq(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define store_rel(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* Writer-side totals, read without the lock by cache_mapping_stats(). */
static inline void total_add(uint64_t *ctr, int64_t d)
{
	__atomic_store_n(ctr, *ctr + (uint64_t)d, __ATOMIC_RELAXED);
}

/* First index of the node containing @index at @n's level. */
static inline uint64_t node_base(const struct cache_node *n, uint64_t index)
{
	unsigned int span = n->shift + CACHE_TREE_BITS;

	return index >> span << span;
}

/* First index past the node containing @index (may exceed the index
 * limit; never overflows: span <= 54). */
static inline uint64_t node_end(const struct cache_node *n, uint64_t index)
{
	return node_base(n, index) +
	       (UINT64_C(1) << (n->shift + CACHE_TREE_BITS));
}

static inline unsigned int slot_of(const struct cache_node *n, uint64_t index)
{
	return (index >> n->shift) & CACHE_TREE_MASK;
}

/* Does the tree rooted at @root cover @index? */
static inline bool root_covers(const struct cache_node *root, uint64_t index)
{
	return (index >> root->shift) < CACHE_TREE_SLOTS;
}

void cache_tree_init(struct cache_tree *t)
{
	t->root = NULL;
	t->nodes = 0;
	t->data = 0;
	t->history = 0;
}

void *cache_tree_lookup_rcu(const struct cache_tree *t, uint64_t index)
{
	struct cache_node *n = load_acq(&t->root);

	if (!n || index >= CACHE_INDEX_LIMIT || !root_covers(n, index))
		return NULL;
	for (;;) {
		void *e = load_acq(&n->slots[slot_of(n, index)]);

		if (!n->shift || !e)
			return e;
		n = e;
	}
}

uint64_t cache_tree_next_hole_rcu(const struct cache_tree *t, uint64_t index,
				  uint64_t max_scan)
{
	uint64_t end, pos = index;

	if (index >= CACHE_INDEX_LIMIT)
		return index;
	/* CACHE_INDEX_LIMIT is always a hole: the answer never passes it. */
	end = max_scan > CACHE_INDEX_LIMIT - index ? CACHE_INDEX_LIMIT
						   : index + max_scan;
	while (pos < end) {
		struct cache_node *n = load_acq(&t->root);

		if (!n || !root_covers(n, pos))
			return pos;
		for (;;) {
			unsigned int off = slot_of(n, pos), z;
			uint64_t bits = load_acq(&n->data_full) >> off;

			if (bits == CACHE_FULL_BITMAP >> off) {
				/* Slots off..63 all full: skip the node. */
				pos = node_end(n, pos);
				break;
			}
			z = off + __builtin_ctzll(~bits);
			if (z != off)
				pos = node_base(n, pos) | (uint64_t)z
								  << n->shift;
			if (!n->shift)
				return pos < end ? pos : end;
			n = load_acq(&n->slots[z]);
			if (!n)
				return pos < end ? pos : end;
		}
	}
	return end;
}

uint64_t cache_tree_prev_hole_rcu(const struct cache_tree *t, uint64_t index,
				  uint64_t max_scan)
{
	uint64_t lo, pos = index;
	bool to_zero;

	if (!max_scan || index >= CACHE_INDEX_LIMIT)
		return index;
	to_zero = max_scan > index;
	lo = to_zero ? 0 : index - max_scan + 1;
	for (;;) {
		struct cache_node *n = load_acq(&t->root);

		if (!n || !root_covers(n, pos))
			return pos;
		for (;;) {
			unsigned int off = slot_of(n, pos), z;
			uint64_t bits = load_acq(&n->any_full) << (63 - off);
			uint64_t base = node_base(n, pos);

			if (bits == CACHE_FULL_BITMAP << (63 - off)) {
				/* Slots 0..off all full: skip the node. */
				if (base <= lo)
					goto all_present;
				pos = base - 1;
				break;
			}
			z = off - __builtin_clzll(~bits);
			if (z != off)
				pos = base |
				      ((((uint64_t)z + 1) << n->shift) - 1);
			if (pos < lo)
				goto all_present;
			if (!n->shift)
				return pos;
			n = load_acq(&n->slots[z]);
			if (!n)
				return pos;
		}
	}
all_present:
	/* index - return == pages scanned, mod 2^64 (the sentinel). */
	return to_zero ? CACHE_NO_HOLE : index - max_scan;
}

uint64_t cache_tree_next_entry_rcu(const struct cache_tree *t, uint64_t index,
				   uint64_t last, bool data_only)
{
	uint64_t pos = index;

	while (pos <= last && pos < CACHE_INDEX_LIMIT) {
		struct cache_node *n = load_acq(&t->root);

		if (!n || !root_covers(n, pos))
			return UINT64_MAX;
		for (;;) {
			unsigned int off = slot_of(n, pos), z;
			uint64_t bits;
			void *e;

			if (!n->shift && data_only)
				bits = load_acq(&n->data_full);
			else
				bits = load_acq(&n->present);
			bits >>= off;
			if (!bits) {
				pos = node_end(n, pos);
				break;
			}
			z = off + __builtin_ctzll(bits);
			if (z != off)
				pos = node_base(n, pos) | (uint64_t)z
								  << n->shift;
			if (pos > last)
				return UINT64_MAX;
			e = load_acq(&n->slots[z]);
			if (!n->shift && e)
				return pos;
			if (!e) {
				/* Raced with a removal: go past the slot. */
				pos = node_base(n, pos) +
				      (((uint64_t)z + 1) << n->shift);
				break;
			}
			n = e;
		}
	}
	return UINT64_MAX;
}

/* The leaf holding @index, or NULL. */
static struct cache_node *leaf_lookup_rcu(const struct cache_tree *t,
					  uint64_t index)
{
	struct cache_node *n = load_acq(&t->root);

	if (!n || !root_covers(n, index))
		return NULL;
	while (n && n->shift)
		n = load_acq(&n->slots[slot_of(n, index)]);
	return n;
}

unsigned int cache_tree_gang_rcu(const struct cache_tree *t, uint64_t first,
				 uint64_t last, void **out, unsigned int max)
{
	unsigned int nr = 0;
	uint64_t pos = first;

	while (nr < max) {
		struct cache_node *leaf;
		uint64_t bits, end;

		pos = cache_tree_next_entry_rcu(t, pos, last, true);
		if (pos == UINT64_MAX)
			break;
		leaf = leaf_lookup_rcu(t, pos);
		if (!leaf) { /* raced with a removal */
			pos++;
			continue;
		}
		end = node_end(leaf, pos) - 1;
		if (end > last)
			end = last;
		/* Walk the leaf's data bits from pos to end. */
		bits = load_acq(&leaf->data_full) >> (pos & CACHE_TREE_MASK);
		for (uint64_t i = pos; bits && i <= end && nr < max;
		     bits >>= 1, i++) {
			void *e;

			if (!(bits & 1))
				continue;
			e = load_acq(&leaf->slots[i & CACHE_TREE_MASK]);
			if (cache_entry_is_page(e))
				out[nr++] = e;
		}
		if (end == last)
			break;
		pos = end + 1;
	}
	return nr;
}

/* ----------------------------------------------------------------------
 * Writer side: the mapping's lock is held.
 */

static void node_free_rcu(struct rcu_head *head)
{
	struct cache_node *n = caa_container_of(head, struct cache_node, rcu);

	cache_tsan_acquire(n);
	cache_node_put(n);
}

static struct cache_node *node_alloc(struct cache_tree *t, unsigned int shift)
{
	struct cache_node *n = cache_node_get();

	if (!n)
		return NULL;
	n->shift = shift;
	total_add(&t->nodes, 1);
	return n;
}

static void node_free(struct cache_tree *t, struct cache_node *n)
{
	total_add(&t->nodes, -1);
	cache_tsan_release(n);
	call_rcu(&n->rcu, node_free_rcu);
}

/*
 * Bring @n's bits in its ancestors up to date after @n's full maps
 * changed; stops at the first ancestor whose bits do not change.
 */
static void propagate_full(struct cache_node *n)
{
	while (n->parent) {
		struct cache_node *p = n->parent;
		uint64_t bit = UINT64_C(1) << n->offset;
		uint64_t d = n->data_full == CACHE_FULL_BITMAP
				     ? p->data_full | bit
				     : p->data_full & ~bit;
		uint64_t a = n->any_full == CACHE_FULL_BITMAP
				     ? p->any_full | bit
				     : p->any_full & ~bit;

		if (d == p->data_full && a == p->any_full)
			return;
		store_rel(&p->data_full, d);
		store_rel(&p->any_full, a);
		n = p;
	}
}

/*
 * Unlink empty nodes from @n upwards, then shrink the root while it only
 * uses slot 0.  Unlinked nodes are freed after a grace period.
 */
static void prune(struct cache_tree *t, struct cache_node *n)
{
	struct cache_node *root;

	while (n && !n->count) {
		struct cache_node *p = n->parent;

		if (p) {
			uint64_t bit = UINT64_C(1) << n->offset;

			store_rel(&p->slots[n->offset], NULL);
			store_rel(&p->present, p->present & ~bit);
			store_rel(&p->data_full, p->data_full & ~bit);
			store_rel(&p->any_full, p->any_full & ~bit);
			p->count--;
		} else {
			store_rel(&t->root, NULL);
		}
		node_free(t, n);
		n = p;
	}
	if (n)
		propagate_full(n);

	root = t->root;
	while (root && root->shift && root->present == 1) {
		struct cache_node *child = root->slots[0];

		child->parent = NULL;
		child->offset = 0;
		store_rel(&t->root, child);
		node_free(t, root);
		root = child;
	}
}

/* Find the leaf for @index, creating the path (and growing the tree). */
static struct cache_node *leaf_create(struct cache_tree *t, uint64_t index)
{
	struct cache_node *n = t->root;

	if (!n) {
		unsigned int shift = 0;

		while (index >> (shift + CACHE_TREE_BITS))
			shift += CACHE_TREE_BITS;
		n = node_alloc(t, shift);
		if (!n)
			return NULL;
		store_rel(&t->root, n);
	}
	while (!root_covers(n, index)) {
		struct cache_node *up =
			node_alloc(t, n->shift + CACHE_TREE_BITS);

		if (!up)
			return NULL;
		up->count = 1;
		up->present = 1;
		up->data_full = n->data_full == CACHE_FULL_BITMAP;
		up->any_full = n->any_full == CACHE_FULL_BITMAP;
		up->slots[0] = n;
		n->parent = up;
		n->offset = 0;
		/* Readers that loaded the old root still walk a valid tree. */
		store_rel(&t->root, up);
		n = up;
	}
	while (n->shift) {
		unsigned int off = slot_of(n, index);
		struct cache_node *child = n->slots[off];

		if (!child) {
			child = node_alloc(t, n->shift - CACHE_TREE_BITS);
			if (!child) {
				prune(t, n);
				return NULL;
			}
			child->parent = n;
			child->offset = off;
			store_rel(&n->slots[off], child);
			store_rel(&n->present, n->present | UINT64_C(1) << off);
			n->count++;
		}
		n = child;
	}
	return n;
}

static struct cache_node *leaf_find(const struct cache_tree *t, uint64_t index)
{
	struct cache_node *n = t->root;

	if (!n || !root_covers(n, index))
		return NULL;
	while (n && n->shift)
		n = n->slots[slot_of(n, index)];
	return n;
}

int cache_tree_store(struct cache_tree *t, uint64_t index, void *entry)
{
	struct cache_node *leaf;
	unsigned int off;
	uint64_t bit;
	void *old;

	if (index >= CACHE_INDEX_LIMIT)
		return -EINVAL;
	leaf = entry ? leaf_create(t, index) : leaf_find(t, index);
	if (!leaf)
		return entry ? -ENOMEM : 0;
	off = slot_of(leaf, index);
	bit = UINT64_C(1) << off;
	old = leaf->slots[off];
	if (old == entry)
		return 0;

	if (cache_entry_is_page(old))
		total_add(&t->data, -1);
	else if (old)
		total_add(&t->history, -1);
	if (cache_entry_is_page(entry))
		total_add(&t->data, 1);
	else if (entry)
		total_add(&t->history, 1);

	/* The slot first: a bit set implies the slot is (about to be) seen. */
	store_rel(&leaf->slots[off], entry);
	if (!old)
		leaf->count++;
	else if (!entry)
		leaf->count--;
	store_rel(&leaf->present,
		  entry ? leaf->present | bit : leaf->present & ~bit);
	store_rel(&leaf->any_full, leaf->present);
	store_rel(&leaf->data_full, cache_entry_is_page(entry)
					    ? leaf->data_full | bit
					    : leaf->data_full & ~bit);
	if (leaf->count)
		propagate_full(leaf);
	else
		prune(t, leaf);
	return 0;
}

static void clear_subtree(struct cache_tree *t, struct cache_node *n)
{
	if (n->shift) {
		for (unsigned int i = 0; i < CACHE_TREE_SLOTS; i++)
			if (n->slots[i])
				clear_subtree(t, n->slots[i]);
	}
	node_free(t, n);
}

void cache_tree_clear(struct cache_tree *t)
{
	struct cache_node *root = t->root;

	if (!root)
		return;
	/* Unpublish first: readers either see the old tree, whole, until
	 * their grace period ends, or an empty one. */
	store_rel(&t->root, NULL);
	clear_subtree(t, root);
	__atomic_store_n(&t->data, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->history, 0, __ATOMIC_RELAXED);
}

/* ----------------------------------------------------------------------
 * Consistency check (tests, AHEADFS_DEBUG).
 */

struct check_totals {
	uint64_t nodes, data, history;
};

static int check_fail(const char *what, const struct cache_node *n)
{
	fprintf(stderr, "cache_tree_check: %s (node %p shift %u offset %u)\n",
		what, (const void *)n, n->shift, n->offset);
	return -EUCLEAN;
}

static int check_node(const struct cache_node *n,
		      const struct cache_node *parent, unsigned int offset,
		      struct check_totals *tot)
{
	uint64_t present = 0, data = 0, any = 0;
	unsigned int count = 0;

	tot->nodes++;
	if (n->parent != parent || (parent && n->offset != offset))
		return check_fail("bad parent link", n);
	if (parent && n->shift + CACHE_TREE_BITS != parent->shift)
		return check_fail("bad shift", n);
	for (unsigned int i = 0; i < CACHE_TREE_SLOTS; i++) {
		void *e = n->slots[i];
		uint64_t bit = UINT64_C(1) << i;

		if (!e)
			continue;
		present |= bit;
		count++;
		if (!n->shift) {
			any |= bit;
			if (cache_entry_is_page(e)) {
				data |= bit;
				tot->data++;
			} else if (e == CACHE_HISTORY) {
				tot->history++;
			} else {
				return check_fail("bad leaf entry", n);
			}
			continue;
		}
		const struct cache_node *c = e;
		int rc = check_node(c, n, i, tot);

		if (rc)
			return rc;
		if (c->data_full == CACHE_FULL_BITMAP)
			data |= bit;
		if (c->any_full == CACHE_FULL_BITMAP)
			any |= bit;
	}
	if (!count)
		return check_fail("empty node", n);
	if (count != n->count)
		return check_fail("bad count", n);
	if (present != n->present)
		return check_fail("bad present bitmap", n);
	if (data != n->data_full)
		return check_fail("bad data_full bitmap", n);
	if (any != n->any_full)
		return check_fail("bad any_full bitmap", n);
	return 0;
}

int cache_tree_check(const struct cache_tree *t)
{
	struct check_totals tot = {0};
	const struct cache_node *root = t->root;
	int rc;

	if (root) {
		rc = check_node(root, NULL, 0, &tot);
		if (rc)
			return rc;
		if (root->shift && root->present == 1)
			return check_fail("root not shrunk", root);
	}
	if (tot.nodes != t->nodes || tot.data != t->data ||
	    tot.history != t->history) {
		fprintf(stderr,
			"cache_tree_check: totals nodes %lu/%lu data %lu/%lu "
			"history %lu/%lu\n",
			(unsigned long)tot.nodes, (unsigned long)t->nodes,
			(unsigned long)tot.data, (unsigned long)t->data,
			(unsigned long)tot.history, (unsigned long)t->history);
		return -EUCLEAN;
	}
	return 0;
}
