/* pool.c - page descriptors and buffers, allocated against the budget.
 *
 * Pages come from chunks: one 2 MiB-aligned mmap() of CACHE_CHUNK_PAGES
 * 4 KiB buffers (O_DIRECT-ready, a transparent huge page where the kernel
 * gives one) and one array of as many descriptors, buffer i belonging to
 * descriptor i for the chunk's life.  Chunks are added as the cache fills,
 * never beyond the budget, and unmapped at cache_destroy().  Free pages
 * are bits in their chunk's free map; allocation takes the lowest free
 * page of the first chunk that has one, so a window's pages get adjacent
 * buffers in file order and its backing read reaches the device whole
 * (see cache_chunk_map()).  No malloc per page.
 *
 * The budget counts pages from allocation until the end of the grace
 * period that follows their last reference (c->used, pending included):
 * readers inside an RCU section may still be copying from a freed page, so
 * its memory is not available before then.  c->used never exceeds
 * c->budget_pages.
 *
 * ThreadSanitizer build (AHEADFS_TSAN): each page is a calloc()ed
 * descriptor and a posix_memalign()ed buffer, freed by the grace thread
 * after the grace period.  liburcu is not TSan-annotated, so TSan cannot
 * see that a grace period orders a reader's last access before the free;
 * with real free()s the only reports are the frees in
 * cache_pool_grace_free(), which tests/tsan.supp suppresses by name.  Recycling through the free list
 * would instead make the *next user's* writes race with the old reader,
 * which no narrow suppression could tell from a real bug.  The budget
 * accounting is identical in both builds.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "cache_internal.h"

int cache_pool_init(struct cache *c)
{
	pthread_condattr_t attr;
	int rc;

	CDS_INIT_LIST_HEAD(&c->partial);
	CDS_INIT_LIST_HEAD(&c->freeing);
	rc = -pthread_mutex_init(&c->pool_lock, NULL);
	if (rc)
		return rc;
	rc = -pthread_condattr_init(&attr);
	if (rc)
		goto out_destroy_lock;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = -pthread_cond_init(&c->pool_cond, &attr);
	if (rc)
		goto out_destroy_attr;
	rc = -pthread_cond_init(&c->reclaim_cond, &attr);
	if (rc)
		goto out_destroy_cond;
	rc = -pthread_cond_init(&c->grace_cond, &attr);
	if (rc)
		goto out_destroy_reclaim_cond;
	pthread_condattr_destroy(&attr);
	return 0;

out_destroy_reclaim_cond:
	pthread_cond_destroy(&c->reclaim_cond);
out_destroy_cond:
	pthread_cond_destroy(&c->pool_cond);
out_destroy_attr:
	pthread_condattr_destroy(&attr);
out_destroy_lock:
	pthread_mutex_destroy(&c->pool_lock);
	return rc;
}

void cache_pool_destroy(struct cache *c)
{
	struct cache_chunk *ch, *next;

	/* The lock orders this after the last RCU callback's accesses (for
	 * ThreadSanitizer too, which cannot see rcu_barrier()). */
	pthread_mutex_lock(&c->pool_lock);
	assert(!c->used && !c->pending && cds_list_empty(&c->freeing));
	pthread_mutex_unlock(&c->pool_lock);
	for (ch = c->chunks; ch; ch = next) {
		next = ch->next;
		munmap(ch->buffers, (size_t)ch->nr * CACHE_PAGE_SIZE);
		free(ch->pages);
		free(ch);
	}
	c->chunks = NULL;
	pthread_cond_destroy(&c->grace_cond);
	pthread_cond_destroy(&c->reclaim_cond);
	pthread_cond_destroy(&c->pool_cond);
	pthread_mutex_destroy(&c->pool_lock);
}

#ifndef AHEADFS_TSAN
/* Buffers: chunks at CACHE_CHUNK_BYTES-aligned addresses, so that the kernel
 * can back each with one transparent huge page (asked for with
 * MADV_HUGEPAGE: THP is often "madvise" only).  Physically contiguous
 * buffers let one O_DIRECT read of a window reach the device as one
 * request: the block layer merges adjacent pages into one segment, while
 * scattered 4 KiB pages cut a read at the queue's max_segments (128 on a
 * loop device: 512 KiB, against its 1280 KiB max_sectors_kb). */
void *cache_chunk_map(size_t bytes)
{
	size_t span = bytes + CACHE_CHUNK_BYTES;
	char *raw, *start;
	size_t head;

	raw = mmap(NULL, span, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	start = (char *)(((uintptr_t)raw + CACHE_CHUNK_BYTES - 1) &
			 ~(uintptr_t)(CACHE_CHUNK_BYTES - 1));
	head = (size_t)(start - raw);
	if (head)
		munmap(raw, head);
	munmap(start + bytes, span - head - bytes);
	(void)madvise(start, bytes, MADV_HUGEPAGE); /* a hint: may be refused */
	return start;
}

void cache_chunk_populate(void *start, size_t bytes)
{
	/* Linux 5.14; where refused, the first touch pays as before. */
	(void)madvise(start, bytes, MADV_POPULATE_WRITE);
}

static void chunk_set_free_locked(struct cache *c, struct cache_chunk *ch,
				  unsigned int slot)
{
	afs_assert_held(&c->pool_lock);
	assert(!(ch->freemap[slot / 64] & (1ULL << (slot % 64))));
	ch->freemap[slot / 64] |= 1ULL << (slot % 64);
	ch->untrimmed[slot / 64] |= 1ULL << (slot % 64);
	ch->nr_free++;
	if (!ch->on_partial) {
		/* At the tail: the chunk at the head is drained first, so
		 * consecutive allocations stay in one chunk. */
		cds_list_add_tail(&ch->partial, &c->partial);
		ch->on_partial = true;
	}
}

/* Add a chunk, all of it free.  pool_lock held. */
static int chunk_add_locked(struct cache *c)
{
	uint64_t nr = c->budget_pages > c->chunk_pages
			      ? c->budget_pages - c->chunk_pages
			      : 0; /* a shrunk budget */
	struct cache_chunk *ch;

	afs_assert_held(&c->pool_lock);
	if (nr > CACHE_CHUNK_PAGES)
		nr = CACHE_CHUNK_PAGES;
	if (!nr)
		return -ENOSPC;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->pages = calloc(nr, sizeof(*ch->pages));
	if (!ch->pages)
		goto out_free_chunk;
	ch->buffers = cache_chunk_map(nr * CACHE_PAGE_SIZE);
	if (!ch->buffers)
		goto out_free_pages;
	ch->nr = nr;
	for (uint64_t i = 0; i < nr; i++) {
		ch->pages[i].data = (char *)ch->buffers + i * CACHE_PAGE_SIZE;
		ch->pages[i].chunk = ch;
		ch->freemap[i / 64] |= 1ULL << (i % 64);
	}
	ch->nr_free = nr;
	/* At the head: a fresh chunk's pages are all adjacent. */
	cds_list_add(&ch->partial, &c->partial);
	ch->on_partial = true;
	ch->next = c->chunks;
	c->chunks = ch;
	c->chunk_pages += nr;
	return 0;

out_free_pages:
	free(ch->pages);
out_free_chunk:
	free(ch);
	return -ENOMEM;
}

/* The lowest free page of the first chunk with any: successive calls hand
 * out ascending, mostly adjacent buffers, which cache_insert_range() gives
 * to ascending file pages -- the order a backing read's iovec takes them.
 * Pages freed together (an evicted window) come back as a run. */
static struct cache_page *page_get_locked(struct cache *c)
{
	struct cache_chunk *ch;
	unsigned int w, slot;

	afs_assert_held(&c->pool_lock);
	if (cds_list_empty(&c->partial) && chunk_add_locked(c))
		return NULL;
	ch = cds_list_first_entry(&c->partial, struct cache_chunk, partial);
	for (w = 0; !ch->freemap[w]; w++)
		;
	slot = w * 64 + (unsigned int)__builtin_ctzll(ch->freemap[w]);
	ch->freemap[w] &= ch->freemap[w] - 1;
	if (!--ch->nr_free) {
		cds_list_del(&ch->partial);
		ch->on_partial = false;
	}
	return &ch->pages[slot];
}

static void page_release_locked(struct cache *c, struct cache_page *p)
{
	afs_assert_held(&c->pool_lock);
	chunk_set_free_locked(c, p->chunk, (unsigned int)(p - p->chunk->pages));
}

void cache_pool_prefault(struct cache *c)
{
	struct cache_chunk *ch = NULL;

	pthread_mutex_lock(&c->pool_lock);
	if (!c->chunks && !chunk_add_locked(c))
		ch = c->chunks;
	pthread_mutex_unlock(&c->pool_lock);
	if (!ch)
		return;
	/* Outside the lock: nothing hands out its pages before the cache
	 * is returned to its creator. */
	cache_chunk_populate(ch->buffers, (size_t)ch->nr * CACHE_PAGE_SIZE);
	/* Free and in memory: a trim under memory pressure gives them back
	 * as it does pages freed after use. */
	pthread_mutex_lock(&c->pool_lock);
	for (unsigned int w = 0; w < CACHE_CHUNK_PAGES / 64; w++)
		ch->untrimmed[w] |= ch->freemap[w];
	pthread_mutex_unlock(&c->pool_lock);
}
#else
static struct cache_page *page_get_locked(struct cache *c)
{
	struct cache_page *p = calloc(1, sizeof(*p));

	afs_assert_held(&c->pool_lock);
	if (!p)
		return NULL;
	if (posix_memalign(&p->data, CACHE_PAGE_SIZE, CACHE_PAGE_SIZE)) {
		free(p);
		return NULL;
	}
	return p;
}

static void page_release_locked(struct cache *c, struct cache_page *p)
{
	afs_assert_held(&c->pool_lock);
	free(p->data);
	free(p);
}

void cache_pool_prefault(struct cache *c)
{
	(void)c; /* TSan build: pages come from malloc, one at a time */
}
#endif

unsigned int cache_pool_alloc(struct cache *c, unsigned int want,
			      struct cache_page **pages)
{
	unsigned int got = 0;
	uint64_t avail;

	pthread_mutex_lock(&c->pool_lock);
	avail = c->budget_pages > c->used ? c->budget_pages - c->used : 0;
	if (want > avail)
		want = avail;
	while (got < want) {
		struct cache_page *p = page_get_locked(c);

		if (!p)
			break;
		pages[got++] = p;
	}
	__atomic_store_n(&c->used, c->used + got, __ATOMIC_RELAXED);
	if (c->used >= c->high_pages && !c->manual_reclaim &&
	    !c->reclaim_wanted) {
		c->reclaim_wanted = true;
		pthread_cond_signal(&c->reclaim_cond);
	}
	pthread_mutex_unlock(&c->pool_lock);
	return got;
}

void cache_pool_free_now(struct cache *c, struct cache_page **pages,
			 unsigned int nr)
{
	if (!nr)
		return;
	pthread_mutex_lock(&c->pool_lock);
	for (unsigned int i = 0; i < nr; i++)
		page_release_locked(c, pages[i]);
	__atomic_store_n(&c->used, c->used - nr, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&c->pool_cond);
	pthread_mutex_unlock(&c->pool_lock);
}

/*
 * The grace thread.  A page whose last reference is gone joins c->freeing
 * (under pool_lock, which the free already took to count it pending); the
 * thread takes the whole list, waits for one grace period and puts the
 * pages back in the pool.  Not call_rcu(): liburcu's call_rcu thread sleeps
 * 10 ms after every batch, so at 1 GB/s some 10-20 MiB of freed pages are
 * pending at any time -- in a 64 MiB budget that is the headroom readahead
 * windows are cut from (measured: a direct-mode stream in 64 MiB got
 * partial windows 150 times a GiB and ran at half the speed it had with
 * 256 MiB).  Here a full batch (GRACE_GATHER pages) goes at once, and a
 * smaller one waits at most GRACE_LINGER_MS for more: pages freed a few
 * at a time (a random reader in kernel mode frees its two pages a READ)
 * would otherwise cost a wake-up and a grace period -- two membarrier()
 * IPIs to every core running the daemon -- each, on the reader's path.
 * So at most GRACE_GATHER pages wait unbatched, whatever the budget.  A
 * thread that waits for memory (cache_pool_wait(), cache_barrier()) ends
 * the gathering at once.  The thread is not an RCU reader, holds no lock
 * across synchronize_rcu(), and nothing waits for it inside an RCU section.
 */
#define GRACE_BATCH 256
#define GRACE_GATHER 256
#define GRACE_LINGER_MS 5

/* Put back the pages of @list (their grace period has ended). */
static void cache_pool_grace_free(struct cache *c, struct cds_list_head *list)
{
	struct cache_mapping *held[GRACE_BATCH];

	while (!cds_list_empty(list)) {
		unsigned int n = 0;

		pthread_mutex_lock(&c->pool_lock);
		while (n < GRACE_BATCH && !cds_list_empty(list)) {
			struct cache_page *p = cds_list_first_entry(
				list, struct cache_page, lru);

			cds_list_del(&p->lru);
			held[n++] = p->mapping;
			page_release_locked(c, p);
		}
		__atomic_store_n(&c->used, c->used - n, __ATOMIC_RELAXED);
		__atomic_store_n(&c->pending, c->pending - n, __ATOMIC_RELAXED);
		c->freed_seq += n;
		pthread_cond_broadcast(&c->pool_cond);
		pthread_mutex_unlock(&c->pool_lock);
		for (unsigned int i = 0; i < n; i++)
			cache_mapping_ref_put(held[i]); /* the page's hold */
	}
}

/* Whether the grace thread should take c->freeing now. */
static bool grace_go_locked(const struct cache *c)
{
	return c->freeing_n >= GRACE_GATHER || c->grace_waiters ||
	       c->grace_stop;
}

/* Let a small batch gather for at most GRACE_LINGER_MS. */
static void grace_gather_locked(struct cache *c)
{
	struct timespec deadline;

	if (grace_go_locked(c))
		return;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_nsec += GRACE_LINGER_MS * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	while (!grace_go_locked(c))
		if (pthread_cond_timedwait(&c->grace_cond, &c->pool_lock,
					   &deadline) == ETIMEDOUT)
			break;
}

static void *grace_main(void *arg)
{
	struct cache *c = arg;
	CDS_LIST_HEAD(batch);

	pthread_mutex_lock(&c->pool_lock);
	for (;;) {
		while (cds_list_empty(&c->freeing) && !c->grace_stop) {
			c->grace_idle = true;
			pthread_cond_wait(&c->grace_cond, &c->pool_lock);
		}
		c->grace_idle = false;
		if (cds_list_empty(&c->freeing))
			break; /* stopped, nothing left */
		grace_gather_locked(c);
		cds_list_splice(&c->freeing, &batch);
		CDS_INIT_LIST_HEAD(&c->freeing);
		c->freeing_n = 0;
		pthread_mutex_unlock(&c->pool_lock);
		synchronize_rcu();
		cache_pool_grace_free(c, &batch);
		pthread_mutex_lock(&c->pool_lock);
	}
	pthread_mutex_unlock(&c->pool_lock);
	return NULL;
}

/* A thread starts or stops waiting for freed pages: while one waits, the
 * grace thread gathers none. */
static void grace_wait_begin_locked(struct cache *c)
{
	afs_assert_held(&c->pool_lock);
	if (!c->grace_waiters++ && c->freeing_n)
		pthread_cond_signal(&c->grace_cond);
}

static void grace_wait_end_locked(struct cache *c)
{
	afs_assert_held(&c->pool_lock);
	c->grace_waiters--;
}

int cache_pool_grace_start(struct cache *c)
{
	int rc = -pthread_create(&c->grace, NULL, grace_main, c);

	if (!rc)
		c->grace_started = true;
	return rc;
}

void cache_pool_grace_stop(struct cache *c)
{
	if (!c->grace_started)
		return;
	pthread_mutex_lock(&c->pool_lock);
	c->grace_stop = true;
	pthread_cond_signal(&c->grace_cond);
	pthread_mutex_unlock(&c->pool_lock);
	pthread_join(c->grace, NULL); /* it empties c->freeing first */
	c->grace_started = false;
}

void cache_pool_free_rcu(struct cache_page *p)
{
	struct cache *c = p->mapping->cache;

	assert(p->queue == CACHE_QUEUE_NONE);
	pthread_mutex_lock(&c->pool_lock);
	__atomic_store_n(&c->pending, c->pending + 1, __ATOMIC_RELAXED);
	c->queued_seq++;
	cds_list_add_tail(&p->lru, &c->freeing);
	/* Wake the thread for a first page (it gathers more), a full batch
	 * or a waiter; otherwise it is in its timed wait already. */
	if (++c->freeing_n == GRACE_GATHER || c->grace_idle ||
	    c->grace_waiters) {
		c->grace_idle = false;
		pthread_cond_signal(&c->grace_cond);
	}
	pthread_mutex_unlock(&c->pool_lock);
}

void cache_barrier(struct cache *c)
{
	uint64_t seq;

	pthread_mutex_lock(&c->pool_lock);
	seq = c->queued_seq;
	grace_wait_begin_locked(c);
	while (c->freed_seq < seq)
		pthread_cond_wait(&c->pool_cond, &c->pool_lock);
	grace_wait_end_locked(c);
	pthread_mutex_unlock(&c->pool_lock);
}

bool cache_pool_wait(struct cache *c, unsigned int want, unsigned int ms)
{
	struct timespec deadline;
	bool ok;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += ms / 1000;
	deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&c->pool_lock);
	c->alloc_waits++;
	grace_wait_begin_locked(c);
	while (c->used + want > c->budget_pages) {
		if (pthread_cond_timedwait(&c->pool_cond, &c->pool_lock,
					   &deadline) == ETIMEDOUT)
			break;
	}
	grace_wait_end_locked(c);
	ok = c->used < c->budget_pages; /* some, if not all */
	pthread_mutex_unlock(&c->pool_lock);
	return ok;
}

void cache_pool_kick_reclaimer(struct cache *c)
{
	pthread_mutex_lock(&c->pool_lock);
	if (!c->manual_reclaim && !c->reclaim_wanted) {
		c->reclaim_wanted = true;
		pthread_cond_signal(&c->reclaim_cond);
	}
	pthread_mutex_unlock(&c->pool_lock);
}

int cache_set_budget(struct cache *c, uint64_t budget_bytes)
{
	uint64_t pages =
		budget_bytes / (CACHE_PAGE_SIZE + sizeof(struct cache_page));

	if (pages < c->min_pages)
		return -EINVAL;
	pthread_mutex_lock(&c->pool_lock);
	__atomic_store_n(&c->budget_pages, pages, __ATOMIC_RELAXED);
	__atomic_store_n(&c->high_pages, pages * c->high_pct / 100,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&c->low_pages, pages * c->low_pct / 100,
			 __ATOMIC_RELAXED);
	if (c->used >= c->high_pages && !c->manual_reclaim &&
	    !c->reclaim_wanted) {
		c->reclaim_wanted = true;
		pthread_cond_signal(&c->reclaim_cond);
	}
	/* More room: inserters waiting at the old limit may go on. */
	pthread_cond_broadcast(&c->pool_cond);
	pthread_mutex_unlock(&c->pool_lock);
	return 0;
}

#ifndef AHEADFS_TSAN
/* madvise(MADV_DONTNEED) the runs of set bits in @bits, a word of @ch's
 * free map.  Return: bytes. */
static uint64_t trim_word(struct cache_chunk *ch, unsigned int w, uint64_t bits)
{
	uint64_t bytes = 0;

	while (bits) {
		unsigned int lo = (unsigned int)__builtin_ctzll(bits), hi = lo;

		while (hi < 64 && (bits >> hi & 1))
			hi++;
		char *at = (char *)ch->buffers +
			   ((size_t)w * 64 + lo) * CACHE_PAGE_SIZE;
		size_t len = (size_t)(hi - lo) * CACHE_PAGE_SIZE;

		if (!madvise(at, len, MADV_DONTNEED))
			bytes += len;
		bits &= hi < 64 ? ~((1ULL << hi) - 1) : 0;
	}
	return bytes;
}

uint64_t cache_trim(struct cache *c)
{
	uint64_t bytes = 0;

	pthread_mutex_lock(&c->pool_lock);
	for (struct cache_chunk *ch = c->chunks; ch; ch = ch->next) {
		for (unsigned int w = 0; w < CACHE_CHUNK_PAGES / 64; w++) {
			uint64_t bits = ch->untrimmed[w] & ch->freemap[w];

			ch->untrimmed[w] = 0;
			if (bits)
				bytes += trim_word(ch, w, bits);
		}
	}
	pthread_mutex_unlock(&c->pool_lock);
	return bytes;
}
#else
uint64_t cache_trim(struct cache *c)
{
	(void)c; /* TSan build: freed pages went back to malloc */
	return 0;
}
#endif
