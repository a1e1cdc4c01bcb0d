/* nodes.c - where the radix trees' nodes come from: chunks of 2 MiB.
 *
 * A node is about 600 bytes, one per 64 pages of a dense range but one per
 * page of a sparse one: a cold random read of a large file puts each read's
 * pages (data, then history) in a leaf of its own.  From malloc() such a
 * node is fresh heap nearly every time, and every 4 KiB of it a page fault
 * (measured: 335 faults over 3000 cold random 8 KiB reads, 10-20 % of the
 * daemon's CPU time on a virtual machine where a fault costs tens of
 * microseconds).  Here nodes are carved from CACHE_CHUNK_BYTES-aligned
 * mappings the kernel may back with one transparent huge page
 * (MADV_HUGEPAGE): one fault per chunk (measured: 21 faults, the daemon's
 * CPU per read 20 % less).
 *
 * The first chunk is mapped and faulted in when a cache is created
 * (cache_nodes_prefault()): that fault is the kernel zeroing 2 MiB, and on
 * the first reads of a fresh mount it cost each one several microseconds
 * (docs/design.md, "Memory faulted in at the start").
 *
 * Each chunk starts with its header; a node's chunk is its address rounded
 * down.  A chunk with free nodes is on the partial list; allocation takes
 * from the list's head (its free list, else the next node never handed
 * out, so a fresh chunk is touched only as far as it is used).  A chunk
 * whose last node comes back is unmapped unless it is the only one with
 * room: what stays mapped is the nodes in use, their chunks' holes and at
 * most one empty chunk.
 *
 * ThreadSanitizer build: calloc()/free(), as the page pool does.
 * AddressSanitizer: nodes not handed out are poisoned, so a use after the
 * grace period is still caught.
 *
 * Concurrency: one mutex over the partial list and every chunk's header;
 * a node belongs to its tree's writer between cache_node_get() and
 * cache_node_put(), which the tree calls after the grace period.
 */
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define poison(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define poison(p, n) ((void)(p), (void)(n))
#define unpoison(p, n) ((void)(p), (void)(n))
#endif

#ifdef AHEADFS_TSAN

struct cache_node *cache_node_get(void)
{
	return calloc(1, sizeof(struct cache_node));
}

void cache_node_put(struct cache_node *n)
{
	free(n);
}

unsigned int cache_node_chunks(void)
{
	return 0;
}

void *cache_nodes_prefault(void)
{
	return NULL;
}

#else

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#define NODE_SIZE ((sizeof(struct cache_node) + 63) & ~(size_t)63)

struct node_chunk {
	struct node_chunk *prev, *next; /* the partial list */
	struct cache_node *free; /* given back, linked through ->parent */
	unsigned int used; /* handed out now */
	unsigned int carved; /* handed out at least once */
	bool partial; /* on the partial list */
};

#define FIRST_NODE ((sizeof(struct node_chunk) + 63) & ~(size_t)63)
#define CHUNK_NODES ((CACHE_CHUNK_BYTES - FIRST_NODE) / NODE_SIZE)

static struct {
	pthread_mutex_t lock;
	struct node_chunk *partial; /* chunks with free nodes */
	unsigned int chunks; /* mapped */
} nodes = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

static struct node_chunk *chunk_of(const struct cache_node *n)
{
	return (struct node_chunk *)((uintptr_t)n &
				     ~(uintptr_t)(CACHE_CHUNK_BYTES - 1));
}

static void partial_add_locked(struct node_chunk *c)
{
	c->prev = NULL;
	c->next = nodes.partial;
	if (c->next)
		c->next->prev = c;
	nodes.partial = c;
	c->partial = true;
}

static void partial_del_locked(struct node_chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		nodes.partial = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->partial = false;
}

static struct node_chunk *chunk_new(void)
{
	struct node_chunk *c = cache_chunk_map(CACHE_CHUNK_BYTES);

	if (!c)
		return NULL;
	/* Fresh anonymous memory: the header's zeros are the kernel's. */
	poison((char *)c + FIRST_NODE, CACHE_CHUNK_BYTES - FIRST_NODE);
	return c;
}

struct cache_node *cache_node_get(void)
{
	struct node_chunk *c;
	struct cache_node *n;

	pthread_mutex_lock(&nodes.lock);
	c = nodes.partial;
	if (!c) {
		c = chunk_new();
		if (!c) {
			pthread_mutex_unlock(&nodes.lock);
			return NULL;
		}
		partial_add_locked(c);
		nodes.chunks++;
	}
	if (c->free) {
		n = c->free;
		unpoison(n, sizeof(*n));
		c->free = n->parent;
	} else {
		n = (struct cache_node *)((char *)c + FIRST_NODE +
					  c->carved++ * NODE_SIZE);
		unpoison(n, sizeof(*n));
	}
	if (++c->used == CHUNK_NODES)
		partial_del_locked(c);
	pthread_mutex_unlock(&nodes.lock);
	memset(n, 0, sizeof(*n));
	return n;
}

void cache_node_put(struct cache_node *n)
{
	struct node_chunk *c = chunk_of(n), *unmap = NULL;

	pthread_mutex_lock(&nodes.lock);
	n->parent = c->free;
	c->free = n;
	poison(n, sizeof(*n));
	c->used--;
	if (!c->partial)
		partial_add_locked(c);
	/* Empty, and not the only chunk with room: give it back. */
	if (!c->used && (c->prev || c->next)) {
		partial_del_locked(c);
		nodes.chunks--;
		unmap = c;
	}
	pthread_mutex_unlock(&nodes.lock);
	if (unmap) {
		unpoison(unmap, CACHE_CHUNK_BYTES);
		munmap(unmap, CACHE_CHUNK_BYTES);
	}
}

void *cache_nodes_prefault(void)
{
	struct node_chunk *c = NULL;

	pthread_mutex_lock(&nodes.lock);
	if (!nodes.partial) {
		c = chunk_new();
		if (c) {
			partial_add_locked(c);
			nodes.chunks++;
		}
	}
	pthread_mutex_unlock(&nodes.lock);
	/* The kernel writes the zeros, not us: a chunk's nodes stay
	 * poisoned for AddressSanitizer until handed out.  Another thread
	 * may carve nodes meanwhile; its first touch just comes first. */
	if (c)
		cache_chunk_populate(c, CACHE_CHUNK_BYTES);
	return c;
}

unsigned int cache_node_chunks(void)
{
	unsigned int n;

	pthread_mutex_lock(&nodes.lock);
	n = nodes.chunks;
	pthread_mutex_unlock(&nodes.lock);
	return n;
}

#endif /* AHEADFS_TSAN */
