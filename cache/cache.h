/* cache.h - aheadfs's own page cache: per-inode radix trees of 4 KiB pages,
 * one global memory budget, scan-resistant eviction.
 *
 * Objects:
 *   struct cache          global: budget, buffer pool, reclaimer thread, wait
 *                         queues, ghost record of wasted prefetches.
 *   struct cache_mapping  one per backing inode, shared by every open and
 *                         process: the tree of pages and per-file counters.
 *                         Which backing file it caches, and whether that
 *                         file changed, is its owner's business (the data
 *                         path, fs/data/data.h): the cache knows indexes.
 *   struct cache_page     one cached page: index, state, a 4 KiB buffer
 *                         aligned for O_DIRECT.
 *
 * Page life cycle:
 *
 *   cache_insert_range()            LOCKED, in the tree, caller holds a ref
 *        | cache_page_complete(p, 0)      | cache_page_complete(p, -errno)
 *        v                                v
 *     UPTODATE (data)               ERROR: removed from the tree, never data,
 *        |                          every waiter gets the errno
 *        | eviction, invalidation, cache_page_drop_to_history()
 *        v
 *     removed from the tree (a history entry may stay in its slot); the
 *     descriptor and buffer are recycled after an RCU grace period once the
 *     last reference is gone (by the cache's grace thread: pool.c).
 *
 * RCU: the cache uses liburcu's default flavour (<urcu.h>, urcu-memb).  Every
 * thread that calls into the cache must be an RCU reader thread: call
 * cache_thread_online() once per thread (cheap and idempotent; it registers
 * the thread lazily and unregisters it at thread exit), and do not also call
 * rcu_register_thread() on that thread.  Threads the cache creates (the
 * reclaimer) register themselves; the grace thread is not a reader.
 *
 * Locking (each function repeats its rule in a Context: line; debug builds
 * assert it where the function runs, cache/base/debug.h):
 *   caller holds the RCU read lock:   cache_lookup_rcu(),
 *                                     cache_next_hole_rcu(),
 *                                     cache_prev_hole_rcu(),
 *                                     cache_gang_lookup_rcu()
 *   no lock, callable anywhere:       the cache_page_*() accessors,
 *                                     cache_count_hit(), cache_count_miss(),
 *                                     cache_mapping_waste()
 *   takes the mapping's lock:         cache_insert_range(),
 *                                     cache_mapping_invalidate(),
 *                                     cache_page_drop_to_history(),
 *                                     cache_page_complete() (on error)
 *   may sleep (never inside an RCU read-side section): cache_page_wait(),
 *                                     cache_insert_range() (bounded wait at
 *                                     the hard budget limit), cache_create(),
 *                                     cache_destroy(), cache_reclaim()
 *
 * The hit path takes no lock and writes no shared line with an atomic
 * read-modify-write: a page found under RCU stays valid (its descriptor and
 * buffer are not recycled) until rcu_read_unlock(), so a reader copies or
 * replies from the page inside its read-side section.  cache_page_tryget()
 * keeps a page longer (waiting for I/O, I/O in flight), off the hit path.
 *
 * Indexes are page numbers below CACHE_INDEX_LIMIT (2^52 pages = 2^64 bytes);
 * UINT64_MAX is the "no hole down to page 0" sentinel of
 * cache_prev_hole_rcu().
 *
 * History: a page whose data was handed over (the kernel took a copy) may be
 * dropped to a *history* entry: no descriptor, no buffer, only the tree slot.
 * History is present for cache_prev_hole_rcu() (a stream passed here) and a
 * hole for cache_next_hole_rcu(), cache_lookup_rcu() and
 * cache_gang_lookup_rcu() (there is no data).
 */
#ifndef AHEADFS_CACHE_H
#define AHEADFS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include <urcu.h>

#define CACHE_PAGE_SHIFT 12
#define CACHE_PAGE_SIZE (1u << CACHE_PAGE_SHIFT) /* 4096 */
/* First index that can never be cached; also the largest nr of pages. */
#define CACHE_INDEX_LIMIT (UINT64_C(1) << 52)
/* cache_prev_hole_rcu(): all present from the index down to page 0. */
#define CACHE_NO_HOLE UINT64_MAX
/* cache_insert_range(): no page gets the READAHEAD mark. */
#define CACHE_NO_MARK UINT64_MAX
/* The smallest budget cache_create() accepts, whatever the caller needs. */
#define CACHE_MIN_BUDGET_PAGES 64

struct cache;
struct cache_mapping;
struct cache_page;

/**
 * struct cache_config - Parameters of cache_create().
 * @budget_bytes: Memory for page buffers and descriptors, including pages
 *	waiting for their grace period.  Rounded down to whole pages.
 * @min_bytes: The least the caller needs to make progress (every thread's
 *	in-flight pages plus readahead windows).  A budget below it, or below
 *	CACHE_MIN_BUDGET_PAGES pages, is refused with -EINVAL.
 * @high_pct: The reclaimer starts when used pages reach this percentage of
 *	the budget (0: 95).
 * @low_pct: ...and evicts down to this percentage (0: 90).  Must be below
 *	@high_pct.
 * @small_pct: Share of the budget, in percent, the probationary queue may
 *	hold before eviction takes from it rather than from the main queue
 *	(0: 10; below 100).
 * @ghost_entries: Size of the ghost record of wasted prefetches (0: a
 *	quarter of the budget's pages, at least 64).
 * @alloc_wait_ms: How long cache_insert_range() waits at the hard limit for
 *	memory before it gives up with -ENOSPC (0: 100 ms).
 * @history_max: Most history entries one mapping keeps (0: 262144, a
 *	GiB of file; the tree costs about 9 bytes per entry).  Past it,
 *	cache_page_drop_to_history() deletes the lowest-indexed history
 *	entries of the mapping until a quarter of the limit is free.
 * @manual_reclaim: Start no reclaimer thread: pages are evicted only by
 *	cache_reclaim() and by inserters at the hard limit.  For tests that
 *	need a deterministic eviction order.
 */
struct cache_config {
	uint64_t budget_bytes;
	uint64_t min_bytes;
	unsigned int high_pct;
	unsigned int low_pct;
	unsigned int small_pct;
	unsigned int ghost_entries;
	unsigned int alloc_wait_ms;
	uint64_t history_max;
	bool manual_reclaim;
};

/**
 * struct cache_wait_cancel - Lets another thread cancel a cache_page_wait().
 *
 * One per waiting request (a FUSE request that may be interrupted).  The
 * fields are private: use cache_wait_cancel_init() and cache_wait_cancel().
 * It must stay allocated until the wait it was passed to has returned and
 * any concurrent cache_wait_cancel() on it has returned.
 */
struct cache_wait_cancel {
	/* private: */
	int cancelled; /* __atomic; set once by cache_wait_cancel() */
	void *queue; /* __atomic; the wait queue the waiter sleeps on, or NULL */
};

/**
 * struct cache_mapping_stats - One mapping's state and counters.
 *
 * Counters only grow; @cached_pages and @history_pages are the current
 * content.  Read without stopping the cache: not a snapshot.
 */
struct cache_mapping_stats {
	uint64_t cached_pages; /* data pages in the tree (LOCKED or UPTODATE) */
	uint64_t history_pages; /* history entries in the tree */
	uint64_t hits; /* pages counted by cache_count_hit() */
	uint64_t hit_bytes;
	uint64_t misses; /* pages counted by cache_count_miss() */
	uint64_t inserted; /* pages inserted by cache_insert_range() */
	uint64_t prefetched; /* ... of which with CACHE_INSERT_PREFETCH */
	uint64_t evicted; /* pages evicted by the budget */
	uint64_t waste; /* ... of which prefetched and never used */
	uint64_t thrash; /* cache_ghost_test_clear() hits */
	uint64_t errors; /* pages completed with an I/O error (not -EAGAIN:
			  * a cancelled window) */
	uint64_t
		invalidated; /* data pages dropped by invalidation/revalidation */
	uint64_t to_history; /* pages dropped to history entries */
	uint64_t history_trimmed; /* history entries deleted past history_max */
	uint64_t enospc; /* inserts refused or cut short by the budget */
	uint64_t tree_bytes; /* memory of the tree's nodes */
};

/**
 * struct cache_stats - The whole cache.  Not a snapshot.
 */
struct cache_stats {
	uint64_t budget_bytes;
	uint64_t used_bytes; /* pages allocated, including pending_free */
	uint64_t pending_free_bytes; /* pages waiting for a grace period */
	uint64_t high_bytes; /* reclaimer watermarks */
	uint64_t low_bytes;
	uint64_t page_overhead_bytes; /* descriptor bytes per cached page */
	uint64_t tree_bytes; /* nodes of every live mapping */
	uint64_t mappings; /* live mappings */
	uint64_t cached_pages; /* data pages in every tree */
	uint64_t history_pages;
	uint64_t small_pages; /* pages in the probationary queue */
	uint64_t main_pages; /* pages in the main queue */
	uint64_t hits; /* summed over live mappings */
	uint64_t misses;
	uint64_t evictions; /* since creation, every mapping */
	uint64_t waste;
	uint64_t thrash;
	uint64_t promotions; /* probation -> main */
	uint64_t enospc; /* cache_insert_range() calls cut short at the limit */
	uint64_t alloc_waits; /* inserters that had to wait for memory */
	uint64_t reclaim_runs; /* reclaimer wake-ups */
	uint64_t ghost_entries; /* ghost record capacity */
};

/* cache_insert_range() flags */
#define CACHE_INSERT_PREFETCH                                                  \
	0x1u /* read ahead, not requested: probation,
				      flagged prefetched-unused */
/* History entries are left as they are (the kernel took those pages: a
 * readahead window need not read them again), only holes are filled. */
#define CACHE_INSERT_KEEP_HISTORY 0x2u

/* -------------------------------------------------------------------- */
/* The cache                                                              */

/**
 * cache_create() - Create a cache: buffer pool, budget, reclaimer thread.
 *
 * Context: Process context; may sleep.  The calling thread need not be
 * online.
 * Return: 0 and *@out, -EINVAL for a budget below @cfg->min_bytes or below
 * CACHE_MIN_BUDGET_PAGES pages or bad watermarks, -ENOMEM, or the errno of a
 * failed thread creation.
 */
int cache_create(const struct cache_config *cfg, struct cache **out);

/**
 * cache_destroy() - Stop the reclaimer and free everything.
 *
 * Every mapping must have been put and every page reference dropped.
 * Context: Online thread, outside any RCU read-side section; sleeps for the
 * outstanding grace periods (rcu_barrier()).
 * Return: 0, or -EBUSY (nothing freed) while mappings still exist.
 */
int cache_destroy(struct cache *c);

/**
 * cache_barrier() - Wait until every page freed before the call is back in
 * the pool (its grace period over, c->used and pending_free_bytes down).
 * Context: Online thread, outside any RCU read-side section.
 */
void cache_barrier(struct cache *c);

/**
 * cache_stats() - Fill @st with the cache's figures.
 * Context: Any online thread; takes the cache's list and queue locks briefly.
 */
void cache_stats(struct cache *c, struct cache_stats *st);

/**
 * cache_reclaim() - Evict up to @nr_pages pages now, in policy order.
 *
 * What the reclaimer thread does above the high watermark; for an explicit
 * drop and for tests (with cfg.manual_reclaim).  Pages under I/O are
 * skipped.  The memory comes back after a grace period.
 * Context: Online thread, outside any RCU read-side section; takes mapping
 * and queue locks.
 * Return: The number of pages evicted.
 */
uint64_t cache_reclaim(struct cache *c, uint64_t nr_pages);

/**
 * cache_set_budget() - Change the budget while the cache runs (memory
 * pressure: shrink; its end: grow back).
 * @budget_bytes: as in struct cache_config; the watermarks keep their
 *	percentages.
 *
 * A smaller budget wakes the reclaimer, which evicts down to the new low
 * watermark; inserters meanwhile get no page above the new budget.  The
 * memory of evicted pages comes back after their grace period: call
 * cache_trim() afterwards to hand it to the kernel.
 * Context: Any thread; takes the pool lock.
 * Return: 0, or -EINVAL for a budget below what cache_create() accepted as
 * the minimum (cfg.min_bytes, CACHE_MIN_BUDGET_PAGES pages).
 */
int cache_set_budget(struct cache *c, uint64_t budget_bytes);

/**
 * cache_budget_pages() - The budget in force, in pages (cache_set_budget()
 * changes it).
 * Context: Any thread; one relaxed load.
 */
uint64_t cache_budget_pages(const struct cache *c);

/**
 * cache_trim() - Give the memory of free pool pages back to the kernel
 * (madvise MADV_DONTNEED), those freed since the last call.  A trimmed
 * page costs a fresh zero page when it is used again.
 * Context: Any thread; takes the pool lock (one madvise per free run).
 * Return: The bytes handed back.
 */
uint64_t cache_trim(struct cache *c);

/**
 * cache_thread_online() - Make the calling thread an RCU reader of the cache.
 *
 * Registers the thread with liburcu on its first call (later calls cost one
 * thread-local load) and arranges its unregistration at thread exit; also
 * gives the thread its counter slot.  For threads the cache does not create
 * (libfuse's workers, the readahead workers, tests): call it at the top of
 * every request handler or thread function.  The choice of lazy
 * registration over urcu-bp is measured in docs/benchmarks.md.
 * Context: Any thread, outside any RCU read-side section on first call.
 */
void cache_thread_online(void);

/**
 * cache_thread_offline() - Unregister the calling thread now.
 *
 * Optional: thread exit does it.  For threads that stay alive but stop
 * using the cache (so they no longer delay grace periods).
 * Context: Online thread, outside any RCU read-side section.
 */
void cache_thread_offline(void);

/* -------------------------------------------------------------------- */
/* Mappings                                                               */

/**
 * cache_mapping_create() - A new, empty mapping for one backing inode.
 *
 * The caller owns one reference.  Looking mappings up by inode is the
 * caller's business (one mapping per inode).
 * Context: Any online thread.
 * Return: 0 and *@out, or -ENOMEM.
 */
int cache_mapping_create(struct cache *c, struct cache_mapping **out);

/**
 * cache_mapping_get() - Take another reference to @m.
 * Context: Any thread that already holds a reference.
 */
void cache_mapping_get(struct cache_mapping *m);

/**
 * cache_mapping_put() - Drop a reference; the last one drops every page.
 *
 * On the last put every page and history entry leaves the tree: data pages
 * are invalidated (waiters get -EAGAIN, I/O completing later is discarded),
 * and the mapping's memory is freed once the last page descriptor is.
 * Context: Online thread; takes the mapping's lock on the last put; never
 * waits for a grace period.
 */
void cache_mapping_put(struct cache_mapping *m);

/**
 * cache_mapping_invalidate() - Drop pages and history in [@first, @last].
 *
 * For writes, truncate, hole punching and changes behind the mount.  Safe
 * against concurrent readers and in-flight I/O: every page in the range
 * leaves the tree now (new lookups miss it), a reader already inside its
 * RCU section may finish with the old data, a waiter on such a page gets
 * -EAGAIN (look up again), and a page whose I/O completes after this call
 * is never made UPTODATE.  @last may be UINT64_MAX (to the end).
 * Context: Any online thread; takes the mapping's lock; never sleeps
 * otherwise (in particular it never waits for a grace period).
 * Return: The number of data pages dropped.
 */
uint64_t cache_mapping_invalidate(struct cache_mapping *m, uint64_t first,
				  uint64_t last);

/**
 * cache_mapping_stats() - Fill @st with @m's state and counters.
 * Context: Any online thread holding a reference; takes no lock (sums the
 * per-thread counter slots).
 */
void cache_mapping_stats(struct cache_mapping *m,
			 struct cache_mapping_stats *st);

/**
 * cache_mapping_waste() - @m's waste count: its pages evicted prefetched
 * and never used, the @waste of cache_mapping_stats(), read with one
 * relaxed atomic load (the readahead engine's feedback reads it on every
 * decision; cache_mapping_stats() sums every counter slot).
 * Context: Any thread holding a reference; takes no lock.
 */
uint64_t cache_mapping_waste(const struct cache_mapping *m);

/* -------------------------------------------------------------------- */
/* RCU read side                                                          */

/**
 * cache_lookup_rcu() - The data page at @index.
 *
 * Data pages are LOCKED (I/O in flight: wait for it with a reference) or
 * UPTODATE.  A history entry, a hole, an index >= CACHE_INDEX_LIMIT, and a
 * page already errored or invalidated all give NULL.
 * Context: Caller holds the RCU read lock; the page stays valid until
 * rcu_read_unlock() (cache_page_tryget() to keep it longer).
 * Return: The page or NULL.
 */
struct cache_page *cache_lookup_rcu(struct cache_mapping *m, uint64_t index);

/**
 * cache_history_rcu() - Whether @index holds a history entry: a page the
 * kernel was given and aheadfs dropped (cache_page_drop_to_history(),
 * cache_note_given()); no data page, no hole.
 * Context: Caller holds the RCU read lock.
 */
bool cache_history_rcu(struct cache_mapping *m, uint64_t index);

/**
 * cache_next_hole_rcu() - First index in [@index, @index + @max_scan) with no
 * data page (history counts as a hole).
 *
 * Skips a full leaf (64 pages) with one bit scan and full subtrees in one
 * step.  Not a snapshot: a page removed behind the scan position is not
 * seen; treat the answer as a hint.
 * Context: Caller holds the RCU read lock.
 * Return: The hole, or @index + @max_scan if the whole range holds data
 * (never more than CACHE_INDEX_LIMIT, which is always a hole).
 */
uint64_t cache_next_hole_rcu(struct cache_mapping *m, uint64_t index,
			     uint64_t max_scan);

/**
 * cache_prev_hole_rcu() - Last index in [@index - @max_scan + 1, @index]
 * (clamped at 0) with neither a data page nor a history entry.
 *
 * The scan of the context readahead: history counts as present.  Skips
 * full leaves and subtrees like cache_next_hole_rcu(), and is a hint too.
 * Context: Caller holds the RCU read lock.
 * Return: The hole; if the whole range is present, @index - @max_scan, or
 * CACHE_NO_HOLE (UINT64_MAX) when the range reaches page 0 -- in both cases
 * @index - return (mod 2^64) is the number of present pages scanned.  An
 * @index >= CACHE_INDEX_LIMIT is itself a hole.  @max_scan 0 returns @index.
 */
uint64_t cache_prev_hole_rcu(struct cache_mapping *m, uint64_t index,
			     uint64_t max_scan);

/**
 * cache_gang_lookup_rcu() - Data pages with index in [@first, @last].
 * @pages: Filled in ascending index order, at most @max of them.
 *
 * History entries are skipped.  Like cache_lookup_rcu(), no reference is
 * taken.
 * Context: Caller holds the RCU read lock.
 * Return: The number of pages stored.
 */
unsigned int cache_gang_lookup_rcu(struct cache_mapping *m, uint64_t first,
				   uint64_t last, struct cache_page **pages,
				   unsigned int max);

/* -------------------------------------------------------------------- */
/* Page accessors (hit path: plain loads, no atomic read-modify-write)    */

/**
 * cache_page_uptodate() - The page holds valid data.
 * Context: Caller holds the RCU read lock or a reference.  An acquire
 * load: the I/O's data is visible once this returns true.
 */
bool cache_page_uptodate(const struct cache_page *p);

/**
 * cache_page_locked() - I/O on the page is still in flight.
 * Context: Caller holds the RCU read lock or a reference.
 */
bool cache_page_locked(const struct cache_page *p);

/**
 * cache_page_data() - The page's 4 KiB buffer (CACHE_PAGE_SIZE-aligned).
 *
 * Written only by the holder of a LOCKED page (its I/O); read by anyone
 * once the page is UPTODATE.
 * Context: Caller holds the RCU read lock or a reference.
 */
void *cache_page_data(const struct cache_page *p);

/**
 * cache_page_index() - The page's index in its mapping.
 * Context: Caller holds the RCU read lock or a reference.
 */
uint64_t cache_page_index(const struct cache_page *p);

/**
 * cache_page_set_len() - The page's read met the file's end: only its first
 * @len bytes (0: none) are the file's data, the rest of the buffer is
 * zeros that were never the file's.
 *
 * A page holds CACHE_PAGE_SIZE bytes of data unless this is called.  A
 * reader never serves a page's bytes past its length as data: where the
 * file is now longer than that, the page is stale (the file grew after the
 * read) or the reader's size is (it shrank): see cache_page_len().
 * Context: The holder of the insert reference of a LOCKED page, before
 * cache_page_complete() (which publishes it).
 */
void cache_page_set_len(struct cache_page *p, unsigned int len);

/**
 * cache_page_len() - Bytes of file data in the page: CACHE_PAGE_SIZE, or
 * what cache_page_set_len() said.
 * Context: Caller holds the RCU read lock or a reference, after
 * cache_page_uptodate() returned true (its acquire orders this load).
 */
unsigned int cache_page_len(const struct cache_page *p);

/**
 * cache_page_mark_accessed() - A read used the page.
 *
 * Call it for every page a read serves (a hit, or a page waited for).  The
 * first use after insertion clears the page's "new" state (for a prefetched
 * page: prefetched-unused, so its eviction is no longer waste); later uses
 * set REFERENCED, which keeps the page from eviction for one more pass.
 * Each is a one-byte store made only when the byte is not already so: no
 * atomic read-modify-write, and a load only once the page is hot.
 * Context: Caller holds the RCU read lock or a reference.
 */
void cache_page_mark_accessed(struct cache_page *p);

/**
 * cache_page_test_clear_readahead() - Clear the READAHEAD mark.
 *
 * A load when there is no mark; an atomic clear when there is one.
 * Context: Caller holds the RCU read lock or a reference.
 * Return: true for exactly one caller per mark: the one that cleared it.
 */
bool cache_page_test_clear_readahead(struct cache_page *p);

/**
 * cache_page_tryget() - Take a reference to a page found under RCU.
 *
 * Off the hit path (an atomic on the page's line): for waiters and I/O
 * holders that keep the page past rcu_read_unlock().
 * Context: Caller holds the RCU read lock (or already a reference).
 * Return: false if the page is already on its way to being freed.
 */
bool cache_page_tryget(struct cache_page *p);

/**
 * cache_page_put() - Drop a reference.
 *
 * The last reference frees the descriptor and buffer after a grace period.
 * Context: Online thread; never sleeps.
 */
void cache_page_put(struct cache_page *p);

/* -------------------------------------------------------------------- */
/* Filling: readahead and the miss path                                   */

/**
 * cache_insert_range() - Insert LOCKED pages for the missing indexes of
 * [@start, @start + @nr).
 * @mark_index: The inserted page at this index gets the READAHEAD mark
 *	(CACHE_NO_MARK: none; no mark is set on a page already present).
 * @flags: CACHE_INSERT_PREFETCH: the pages were read ahead (probation,
 *	prefetched-unused until cache_page_mark_accessed()).
 * @pages: Array of at least @nr: receives the inserted pages in ascending
 *	index order, each LOCKED, not UPTODATE, with one reference for the
 *	caller, who must do the I/O and call cache_page_complete() on each.
 * @nr_out: Receives the number of pages stored in @pages.
 *
 * Indexes holding a data page (LOCKED or UPTODATE) are skipped; history
 * entries are replaced, or with CACHE_INSERT_KEEP_HISTORY skipped too.  At
 * the hard budget limit the call evicts, wakes the reclaimer and waits at
 * most cfg.alloc_wait_ms for memory (not at all when called inside an RCU
 * read-side section), then inserts what fits, lowest indexes first: a
 * short result is not an error.
 * Context: Online thread; takes the mapping's lock; may sleep (bounded).
 * Return: 0 (*@nr_out may be 0 if every page was present, or short at the
 * limit), -EINVAL for @nr 0 or a range beyond CACHE_INDEX_LIMIT, -ENOSPC
 * if pages were missing but none could be had within the budget (serve
 * the read uncached), -ENOMEM if a tree node could not be allocated and
 * nothing was inserted.
 */
int cache_insert_range(struct cache_mapping *m, uint64_t start, uint64_t nr,
		       uint64_t mark_index, unsigned int flags,
		       struct cache_page **pages, unsigned int *nr_out);

/**
 * cache_page_complete() - The I/O on a LOCKED page is done.
 * @err: 0, or the I/O's -errno.
 *
 * 0: the page becomes UPTODATE, unless it was invalidated meanwhile (then
 * it only stops being LOCKED and its waiters get -EAGAIN).  An error: the
 * page becomes ERROR and leaves the tree, never data; its waiters get @err.
 * Either way every waiter is woken and the caller's reference is dropped.
 * The buffer must hold the data (a short read at EOF zero-filled) before a
 * successful completion.
 * Context: The holder of the insert reference, once per page; online
 * thread; takes the mapping's lock on error; never sleeps otherwise.
 */
void cache_page_complete(struct cache_page *p, int err);

/**
 * cache_wait_cancel_init() - Prepare @wc for one request.
 * Context: Any thread, before @wc is shared.
 */
void cache_wait_cancel_init(struct cache_wait_cancel *wc);

/**
 * cache_wait_cancel() - Make the wait using @wc (now or later) return -EINTR.
 *
 * For FUSE INTERRUPT: called from another thread than the waiter.
 * Context: Any thread; takes the waiter's wait-queue lock briefly.
 */
void cache_wait_cancel(struct cache_wait_cancel *wc);

/**
 * cache_page_wait() - Wait until @p's I/O is done.
 * @wc: NULL, or a cancellation token for this request.
 *
 * Sleeps on a hashed wait queue (no per-page condition variable).
 * Context: Caller holds a reference to @p (cache_page_tryget()), no RCU
 * read lock (it sleeps).
 * Return: 0 if the page is UPTODATE, the I/O's -errno (-EIO...) if it
 * failed, -EAGAIN if it was invalidated (look it up again), -EINTR if @wc
 * was cancelled.
 */
int cache_page_wait(struct cache_page *p, struct cache_wait_cancel *wc);

/**
 * cache_page_drop_to_history() - Free the buffers of the UPTODATE pages in
 * [@first, @last], leaving history entries.
 *
 * For the kernel read mode: the kernel holds a copy, so aheadfs keeps only
 * the fact that the pages were read (for cache_prev_hole_rcu()).  LOCKED
 * pages are left alone.  History is bounded per mapping by
 * cfg.history_max: past it the lowest-indexed history entries go.
 * Buffers are recycled after a grace period (readers inside their RCU
 * section keep using them until then).
 * Context: Online thread; takes the mapping's lock.
 * Return: The number of pages dropped to history.
 */
uint64_t cache_page_drop_to_history(struct cache_mapping *m, uint64_t first,
				    uint64_t last);

/**
 * cache_note_given() - Record that the kernel was given [@first, @last] by
 * a read served around the cache (from the backing's page cache).
 *
 * Every slot of the range becomes a history entry, as if its page had been
 * read here and dropped with cache_page_drop_to_history(): holes are filled
 * (the context readahead then sees the stream that passed, and windows
 * leave the range alone), UPTODATE pages are dropped, LOCKED pages are left
 * alone.  A failed node allocation ends the filling (history is a hint).
 * Bounded by cfg.history_max like all history.
 * Context: Online thread; takes the mapping's lock.
 * Return: The number of slots that became history entries.
 */
uint64_t cache_note_given(struct cache_mapping *m, uint64_t first,
			  uint64_t last);

/**
 * cache_ghost_test_clear() - Was @index of @m evicted prefetched-and-unused?
 *
 * The ghost record is small and bounded (cfg.ghost_entries, oldest entries
 * replaced); a true answer is a thrash event, counted in the mapping's
 * stats, and the entry is consumed.
 * Context: Any online thread; takes the ghost lock.
 * Return: true if it was (and now is no longer) in the ghost record.
 */
bool cache_ghost_test_clear(struct cache_mapping *m, uint64_t index);

/* -------------------------------------------------------------------- */
/* Counters                                                               */

/**
 * cache_count_hit() - Count @pages pages (@bytes bytes) served from cache.
 *
 * A store into the calling thread's own slot (no shared line written, no
 * atomic read-modify-write); cache_mapping_stats() sums the slots.  More
 * threads than slots share slots with a relaxed atomic add.
 * Context: Any online thread (or RCU read-side section).
 */
void cache_count_hit(struct cache_mapping *m, uint64_t pages, uint64_t bytes);

/**
 * cache_count_miss() - Count @pages pages a read found missing.
 * Context: As cache_count_hit().
 */
void cache_count_miss(struct cache_mapping *m, uint64_t pages);

#endif /* AHEADFS_CACHE_H */
