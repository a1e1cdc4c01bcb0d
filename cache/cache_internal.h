/* cache_internal.h - struct bodies and module-internal functions of cache/.
 *
 * Used only by the .c files of cache/ and by tests/unit/cache.  The public
 * contract is in cache.h; this file says who guards what.
 *
 * Lock order (outer first):
 *   cache.mappings_lock -> mapping.lock -> cache.lru_lock -> cache.pool_lock
 *   cache.ghost_lock and the wait-queue locks are leaves.
 * No lock is held across a wait for a grace period; the RCU callbacks take
 * only pool_lock (and mappings_lock when they free a mapping).
 */
#ifndef AHEADFS_CACHE_INTERNAL_H
#define AHEADFS_CACHE_INTERNAL_H

#include <pthread.h>
#include <urcu.h>
#include <urcu/list.h>

#include "cache/base/count.h"
#include "cache/cache.h"
#include "cache/base/debug.h"

#define CACHE_TREE_BITS 6
#define CACHE_TREE_SLOTS (1u << CACHE_TREE_BITS) /* 64 */
#define CACHE_TREE_MASK (CACHE_TREE_SLOTS - 1)
/* Height 9 covers 54 bits: enough for every index below 2^52. */
#define CACHE_TREE_MAX_SHIFT 48
#define CACHE_FULL_BITMAP UINT64_MAX

/* Counter slots per mapping, one cache line each: the first
 * CACHE_COUNTER_SLOTS - 1 are owned by one thread each (plain load and
 * store); the last is shared by every other thread (atomic add). */
#define CACHE_COUNTER_SLOTS 32
#define CACHE_SHARED_SLOT (CACHE_COUNTER_SLOTS - 1)
/* Hashed wait queues per cache. */
#define CACHE_WAIT_QUEUES 256
/* Pages per pool chunk (2 MiB of buffers). */
#define CACHE_CHUNK_PAGES 512
/* The bytes of a pool chunk, and of a chunk of tree nodes (nodes.c), and
 * their alignment: one transparent huge page. */
#define CACHE_CHUNK_BYTES ((size_t)CACHE_CHUNK_PAGES * CACHE_PAGE_SIZE)

/*
 * A tree slot holds NULL, a struct cache_page * (8-byte aligned), or
 * CACHE_HISTORY, an odd value no pointer can take.
 */
#define CACHE_HISTORY ((void *)(uintptr_t)1)

static inline bool cache_entry_is_page(const void *e)
{
	return e && !((uintptr_t)e & 1);
}

/*
 * struct cache_node - One 64-way node of a mapping's radix tree.
 *
 * Leaves (shift 0) hold entries; inner nodes hold child nodes.  The bitmaps
 * say, per slot:
 *   present    the slot is not NULL (an entry, or a child node);
 *   data_full  leaf: the entry is a data page;
 *              inner: the child's subtree holds a data page at every index;
 *   any_full   leaf: == present (a data page or history);
 *              inner: the child's subtree is present at every index.
 * next_hole() scans data_full, prev_hole() any_full: one bit scan skips a
 * full leaf or a full subtree.
 *
 * Writers hold the mapping's lock and publish slots and bitmaps with
 * __atomic release stores; readers load them with acquire under RCU, so a
 * reader may see a bitmap and a slot from different moments: hole scans are
 * hints.  shift never changes; parent, offset and count are writer-only.
 */
struct cache_node {
	uint8_t shift; /* 0 for a leaf; a multiple of 6 */
	uint8_t offset; /* slot in the parent */
	uint8_t count; /* non-NULL slots */
	struct cache_node *parent; /* NULL for the root */
	uint64_t present;
	uint64_t data_full;
	uint64_t any_full;
	void *slots[CACHE_TREE_SLOTS];
	struct rcu_head rcu;
};

/*
 * struct cache_tree - The root of a radix tree, and its writer-side totals.
 * root is published with release stores; the rest is guarded by the lock of
 * the mapping that embeds the tree.
 */
struct cache_tree {
	struct cache_node *root;
	uint64_t nodes; /* allocated nodes (for tree_bytes) */
	uint64_t data; /* data entries */
	uint64_t history; /* history entries */
};

/* Page state bits (struct cache_page.flags, accessed with __atomic). */
#define CACHE_PG_LOCKED                                                        \
	0x01u /* I/O in flight; the insert reference holder
				 completes it */
#define CACHE_PG_UPTODATE 0x02u /* the buffer holds the file's data */
#define CACHE_PG_ERROR 0x04u /* the I/O failed: err holds the -errno */
#define CACHE_PG_READAHEAD                                                     \
	0x08u /* reaching this page starts the next
				    async window */
#define CACHE_PG_REMOVED 0x10u /* no longer in the tree */
#define CACHE_PG_INVALID 0x20u /* dropped by invalidation: never data */

/* struct cache_page.fresh */
#define CACHE_FRESH_USED 0 /* used since insertion */
#define CACHE_FRESH_DEMAND 1 /* inserted for a read that will use it */
#define CACHE_FRESH_PREFETCH 2 /* read ahead, not used yet */

/* struct cache_page.queue */
#define CACHE_QUEUE_NONE 0
#define CACHE_QUEUE_SMALL 1
#define CACHE_QUEUE_MAIN 2

/*
 * struct cache_page - Descriptor of one cached page (56 bytes).
 *
 * index, mapping and data are set before the page is published and never
 * change while the page is alive.  flags is __atomic.  referenced and fresh
 * are single bytes written with plain (relaxed __atomic) stores by readers
 * on the hit path and by the evictor under lru_lock: a lost update costs at
 * most one eviction decision, never correctness.  refcount counts the
 * tree's reference (while in the tree), the inserter's (until
 * cache_page_complete()) and cache_page_tryget()s; at zero the page is
 * freed after a grace period.  lru links the page in its queue under
 * lru_lock while queued; once the page is off every queue and its last
 * reference is gone the same bytes serve as the rcu_head.
 */
struct cache_page {
	uint64_t index;
	struct cache_mapping *mapping;
	void *data;
	struct cache_chunk *chunk; /* the pool chunk holding data (not TSan) */
	uint32_t refcount;
	uint16_t flags;
	uint8_t referenced;
	uint8_t fresh;
	int16_t err; /* -errno of a failed I/O, set before ERROR */
	uint8_t queue; /* CACHE_QUEUE_*, under lru_lock */
	/* Bytes of file data: CACHE_PAGE_SIZE, less in a page that held the
	 * file's end when it was read (cache_page_set_len()). */
	uint16_t len;
	union {
		struct cds_list_head lru;
		struct rcu_head rcu;
	};
};

/* One thread's counters in a mapping: a cache line of its own. */
struct cache_counter_slot {
	uint64_t hits;
	uint64_t hit_bytes;
	uint64_t misses;
} __attribute__((aligned(64)));

/*
 * struct cache_mapping - One backing inode's pages.
 *
 * lock guards the tree's structure, id and the writer-side counters below
 * it (written under lock with relaxed __atomic stores so that stats can load
 * them without the lock).  users counts cache_mapping_get()/put(); refs
 * keeps the memory: one for all users together plus one per page
 * descriptor not yet freed (pages point to their mapping until their grace
 * period ends).
 */
struct cache_mapping {
	struct cache *cache;
	pthread_mutex_t lock;
	struct cache_tree tree;
	uint64_t mid; /* unique id, for the ghost record; never reused */
	uint32_t users; /* __atomic */
	uint32_t refs; /* __atomic */
	struct cds_list_head link; /* in cache.mappings, under mappings_lock */
	/* Writer-side counters (relaxed __atomic). */
	uint64_t inserted;
	uint64_t prefetched;
	uint64_t evicted;
	uint64_t waste;
	uint64_t thrash;
	uint64_t errors;
	uint64_t invalidated;
	uint64_t to_history;
	uint64_t history_trimmed;
	uint64_t enospc;
	struct cache_counter_slot slots[CACHE_COUNTER_SLOTS];
};

/* A hashed wait queue: waiters on any page hashing here sleep on cond. */
struct cache_waitq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
} __attribute__((aligned(64)));

/* A chunk of the pool: CACHE_CHUNK_PAGES descriptors and buffers, the
 * buffers one 2 MiB-aligned mapping (a transparent huge page where the
 * kernel gives one).  freemap, nr_free and the partial link are under
 * pool_lock. */
struct cache_chunk {
	struct cache_chunk *next;
	void *buffers; /* mmap'd, CACHE_CHUNK_PAGES * CACHE_PAGE_SIZE */
	struct cache_page *pages; /* the descriptors, same order */
	unsigned int nr; /* pages in this chunk */
	unsigned int nr_free; /* set bits in freemap */
	bool on_partial; /* linked on c->partial (nr_free > 0) */
	struct cds_list_head partial;
	uint64_t freemap[CACHE_CHUNK_PAGES / 64]; /* bit i: page i is free */
	/* bit i: page i's memory held while it is free, since the last
	 * cache_trim(): freed after use, or faulted in ahead of it */
	uint64_t untrimmed[CACHE_CHUNK_PAGES / 64];
};

struct cache_ghost_entry {
	uint64_t mid; /* 0: empty */
	uint64_t index;
};

struct cache {
	/* The budget and its watermarks: written under pool_lock by
	 * cache_create() and cache_set_budget(), read with relaxed atomics
	 * (cache_budget_read()) where the lock is not held. */
	uint64_t budget_pages;
	uint64_t high_pages;
	uint64_t low_pages;
	/* Immutable after cache_create(). */
	uint64_t min_pages; /* the least cache_set_budget() accepts */
	unsigned int high_pct, low_pct;
	unsigned int small_pct;
	unsigned int alloc_wait_ms;
	uint64_t history_max;
	bool manual_reclaim;

	/* Pool and budget, under pool_lock. */
	pthread_mutex_t pool_lock;
	pthread_cond_t pool_cond; /* a page came back: inserters waiting */
	pthread_cond_t reclaim_cond; /* the reclaimer's wake-up */
	pthread_cond_t grace_cond; /* the grace thread's wake-up */
	struct cds_list_head freeing; /* freed pages, waiting for the grace
				       * thread (linked by their lru) */
	uint64_t queued_seq, freed_seq; /* pages queued / put back, ever */
	uint64_t freeing_n; /* pages on freeing */
	bool grace_stop; /* the grace thread must exit once freeing is empty */
	bool grace_idle; /* the grace thread waits for a first page */
	unsigned int grace_waiters; /* threads waiting for freed pages: the
				     * grace thread gathers none */
	struct cache_chunk *chunks;
	uint64_t chunk_pages; /* pages in all chunks */
	struct cds_list_head partial; /* chunks with free pages */
	uint64_t used; /* allocated pages, pending included (relaxed reads) */
	uint64_t pending; /* freed, waiting for a grace period */
	uint64_t alloc_waits;
	bool stop; /* the reclaimer must exit */
	bool reclaim_wanted; /* wake-up pending for the reclaimer */

	/* Eviction queues, under lru_lock. */
	pthread_mutex_t lru_lock;
	struct cds_list_head small;
	struct cds_list_head main;
	uint64_t nr_small;
	uint64_t nr_main;

	/* Cache-wide counters (relaxed __atomic). */
	uint64_t evictions;
	uint64_t waste;
	uint64_t thrash;
	uint64_t promotions;
	uint64_t enospc;
	uint64_t reclaim_runs;

	/* Ghost record: set-associative, 4 ways, under ghost_lock. */
	pthread_mutex_t ghost_lock;
	struct cache_ghost_entry *ghost;
	unsigned int ghost_sets; /* power of two */
	unsigned int ghost_clock; /* way to replace next */
	bool ghost_any; /* an entry was ever added (set under ghost_lock,
			 * read without it: until then a miss skips the
			 * table, whose pages are not touched yet) */

	/* Live mappings, under mappings_lock. */
	pthread_mutex_t mappings_lock;
	struct cds_list_head mappings;
	uint64_t nr_mappings;
	uint64_t next_mid;

	pthread_t reclaimer;
	bool reclaimer_started;
	pthread_t grace; /* pool.c: frees pages after their grace period */
	bool grace_started;

	struct cache_waitq waitq[CACHE_WAIT_QUEUES];
};

/* tree.c: the radix tree.  Writers hold the embedding mapping's lock. */
void cache_tree_init(struct cache_tree *t);
void *cache_tree_lookup_rcu(const struct cache_tree *t, uint64_t index);
uint64_t cache_tree_next_hole_rcu(const struct cache_tree *t, uint64_t index,
				  uint64_t max_scan);
uint64_t cache_tree_prev_hole_rcu(const struct cache_tree *t, uint64_t index,
				  uint64_t max_scan);
/* Next index >= @index (and <= @last) holding a data entry (data_only) or
 * any entry; UINT64_MAX if none.  Valid under RCU and under the lock. */
uint64_t cache_tree_next_entry_rcu(const struct cache_tree *t, uint64_t index,
				   uint64_t last, bool data_only);
/* Up to @max data entries in [@first, @last], ascending. */
unsigned int cache_tree_gang_rcu(const struct cache_tree *t, uint64_t first,
				 uint64_t last, void **out, unsigned int max);
/* Store @entry (a page, CACHE_HISTORY, or NULL to delete) at @index.
 * Return: 0, -EINVAL for an index >= CACHE_INDEX_LIMIT, -ENOMEM. */
int cache_tree_store(struct cache_tree *t, uint64_t index, void *entry);
/* Delete every entry (the tree's pages must already be dealt with). */
void cache_tree_clear(struct cache_tree *t);
/* AHEADFS_DEBUG / tests: check every bitmap, count and parent link.
 * Return: 0, or -EUCLEAN with a message on stderr. */
int cache_tree_check(const struct cache_tree *t);

/* pool.c: page allocation against the budget. */
int cache_pool_init(struct cache *c);
void cache_pool_destroy(struct cache *c);
/* Take up to @want pages without waiting; returns how many. */
unsigned int cache_pool_alloc(struct cache *c, unsigned int want,
			      struct cache_page **pages);
/* Return never-published pages at once (no grace period needed). */
void cache_pool_free_now(struct cache *c, struct cache_page **pages,
			 unsigned int nr);
/* The last reference is gone: free after a grace period (the grace
 * thread's).  Any thread, inside an RCU section too; takes pool_lock. */
void cache_pool_free_rcu(struct cache_page *p);
int cache_pool_grace_start(struct cache *c);
/* Frees what is queued, then stops the thread. */
void cache_pool_grace_stop(struct cache *c);
/* Wait up to @ms for @want pages to be available; false if there is not
 * even one at the timeout. */
bool cache_pool_wait(struct cache *c, unsigned int want, unsigned int ms);
/* The reclaimer is needed (used above the high watermark). */
void cache_pool_kick_reclaimer(struct cache *c);

/* evict.c: queues, reclaim, ghost record. */
void cache_lru_add_locked(struct cache *c, struct cache_page *p);
void cache_lru_del_locked(struct cache *c, struct cache_page *p);
int cache_reclaimer_start(struct cache *c);
void cache_reclaimer_stop(struct cache *c);
int cache_ghost_init(struct cache *c, unsigned int entries);
void cache_ghost_destroy(struct cache *c);
void cache_ghost_add(struct cache *c, uint64_t mid, uint64_t index);

/* page.c */
struct cache_waitq *cache_page_waitq(const struct cache_page *p);
void cache_page_wake(struct cache_page *p);
/* Take @p out of the tree (mapping lock held): sets REMOVED (and @flags),
 * unqueues it, drops the tree's reference. */
void cache_page_remove_locked(struct cache_mapping *m, struct cache_page *p,
			      uint16_t flags, void *replacement);

/* mapping.c */
void cache_mapping_ref_put(struct cache_mapping *m);

/**
 * cache_chunk_map() - @bytes (a multiple of CACHE_CHUNK_BYTES) of fresh
 * anonymous memory at a CACHE_CHUNK_BYTES-aligned address, asked to be
 * backed by transparent huge pages (pool.c; not in the ThreadSanitizer
 * build, whose pages and nodes come from calloc()).
 * Return: The mapping, or NULL.
 */
void *cache_chunk_map(size_t bytes);

/**
 * cache_chunk_populate() - Fault in @bytes at @start (MADV_POPULATE_WRITE)
 * now, so that the kernel's zeroing of fresh memory is paid here and not by
 * the first thread that touches it.  A kernel that refuses (before 5.14)
 * leaves it to that first touch.  Context: no lock held (it may take
 * milliseconds).
 */
void cache_chunk_populate(void *start, size_t bytes);

/**
 * cache_pool_prefault() - When @c has no chunk yet: add its first (within
 * the budget) and fault its buffers in (pool.c); cache_trim() gives them
 * back while they are free.  Context: cache_create(), before @c is handed
 * out.
 */
void cache_pool_prefault(struct cache *c);

/**
 * cache_node_get() - A zeroed tree node (nodes.c: from 2 MiB chunks, not
 * one malloc() each).  Context: any thread; takes the nodes' lock.
 * Return: The node, or NULL when no memory is left.
 */
struct cache_node *cache_node_get(void);

/**
 * cache_node_put() - Give @n back: after the grace period that follows its
 * unlinking (no reader can reach it).  Context: any thread.
 */
void cache_node_put(struct cache_node *n);

/* cache_node_chunks() - Chunks of nodes mapped now (0 in the
 * ThreadSanitizer build).  Context: any thread. */
unsigned int cache_node_chunks(void);

/* cache_nodes_prefault() - When no chunk of nodes has room: map one and
 * fault it in (no-op in the ThreadSanitizer build).  Context: any thread,
 * no lock held; cache_create() calls it.
 * Return: the chunk mapped, or NULL (one had room, or no memory). */
void *cache_nodes_prefault(void);

/*
 * call_rcu() hands an object to the call_rcu thread inside liburcu, which
 * ThreadSanitizer does not see.  Under TSan, make that hand-off visible
 * (release before call_rcu(), acquire in the callback), so that only the
 * real RCU case is left -- a reader's access racing with the free after
 * the grace period -- which tests/tsan.supp suppresses by callback name.
 */
#ifdef AHEADFS_TSAN
#include <sanitizer/tsan_interface.h>
#define cache_tsan_release(addr) __tsan_release(addr)
#define cache_tsan_acquire(addr) __tsan_acquire(addr)
#else
#define cache_tsan_release(addr) ((void)(addr))
#define cache_tsan_acquire(addr) ((void)(addr))
#endif

static inline uint16_t cache_page_flags(const struct cache_page *p)
{
	return __atomic_load_n(&p->flags, __ATOMIC_ACQUIRE);
}

static inline void cache_stat_add(uint64_t *ctr, uint64_t n)
{
	afs_count(ctr, n);
}

static inline uint64_t cache_stat_read(const uint64_t *ctr)
{
	return __atomic_load_n(ctr, __ATOMIC_RELAXED);
}

/* A budget figure (budget_pages, high_pages, low_pages) without the pool
 * lock. */
static inline uint64_t cache_budget_read(const uint64_t *pages)
{
	return __atomic_load_n(pages, __ATOMIC_RELAXED);
}

#endif /* AHEADFS_CACHE_INTERNAL_H */
