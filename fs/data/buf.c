/* buf.c - each serving thread's buffer for replies the daemon builds itself
 * (uncached reads, directory listings, xattr values) and for the data of
 * direct writes (write.c); see data.h. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "fs/data/tbuf.h"
#include "data_internal.h"

/* A huge page: what a contiguous buffer is allocated as (x86-64, arm64
 * with 4 KiB pages; elsewhere the hint may simply not be taken). */
#define HUGE_PAGE (2u << 20)

struct thread_buf {
	size_t size;
	void *data;
	bool contig; /* allocated as a huge page (afs_thread_buf_contig()) */
};

static pthread_key_t thread_buf_key;
static pthread_once_t thread_buf_once = PTHREAD_ONCE_INIT;
static int thread_buf_key_rc;

/* @size bytes (a multiple of HUGE_PAGE) mapped on their own, HUGE_PAGE
 * aligned, with the huge-page hint: a mapping of its own, not malloc()'s,
 * whose heap may hand back memory already touched as 4 KiB pages (and
 * would keep the hint for whatever it holds there next). */
static void *huge_alloc(size_t size)
{
	size_t span = size + HUGE_PAGE;
	char *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + HUGE_PAGE - 1) &
		     ~(uintptr_t)(HUGE_PAGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + size < p + span)
		munmap(a + size, (size_t)(p + span - (a + size)));
	/* A hint (transparent huge pages are often "madvise" only); refused,
	 * the buffer still works, in more pieces. */
	(void)madvise(a, size, MADV_HUGEPAGE);
	return a;
}

static void buf_data_free(struct thread_buf *b)
{
	if (b->contig)
		munmap(b->data, b->size);
	else
		free(b->data);
}

static void thread_buf_free(void *p)
{
	struct thread_buf *b = p;

	buf_data_free(b);
	free(b);
}

static void thread_buf_key_create(void)
{
	thread_buf_key_rc =
		-pthread_key_create(&thread_buf_key, thread_buf_free);
}

int afs_thread_buf_key_init(void)
{
	pthread_once(&thread_buf_once, thread_buf_key_create);
	return thread_buf_key_rc;
}

static void *thread_buf(size_t size, bool contig)
{
	struct thread_buf *b = pthread_getspecific(thread_buf_key);
	void *data = NULL;

	if (b && b->size >= size && (b->contig || !contig))
		return b->data;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return NULL;
		if (pthread_setspecific(thread_buf_key, b)) {
			free(b);
			return NULL;
		}
	}
	/* Grow straight to a whole request size, so a thread reallocates at
	 * most once or twice in its life. */
	if (size < AFS_DATA_MAX_REQUEST)
		size = AFS_DATA_MAX_REQUEST;
	if (contig) {
		size = (size + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
		data = huge_alloc(size);
	} else if (posix_memalign(&data, 4096, size)) {
		data = NULL;
	}
	if (!data)
		return NULL;
	if (b->data)
		buf_data_free(b);
	b->data = data;
	b->size = size;
	b->contig = contig;
	return data;
}

void *afs_thread_buf(size_t size)
{
	return thread_buf(size, false);
}

void *afs_thread_buf_contig(size_t size)
{
	return thread_buf(size, true);
}

void afs_thread_buf_release(void)
{
	struct thread_buf *b = pthread_getspecific(thread_buf_key);

	if (b) {
		pthread_setspecific(thread_buf_key, NULL);
		thread_buf_free(b);
	}
}
