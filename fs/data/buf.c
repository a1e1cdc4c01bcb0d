/* buf.c - each serving thread's buffer for replies the daemon builds itself
 * (uncached reads, directory listings, xattr values) and for the data of
 * direct writes (write.c); see data.h. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "fs/data/data.h"

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

static void thread_buf_free(void *p)
{
	struct thread_buf *b = p;

	free(b->data);
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
	size_t align = 4096;
	void *data;

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
		align = HUGE_PAGE;
	}
	if (posix_memalign(&data, align, size))
		return NULL;
	/* A hint (transparent huge pages are often "madvise" only); refused,
	 * the buffer still works, in more pieces. */
	if (contig)
		(void)madvise(data, size, MADV_HUGEPAGE);
	free(b->data);
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
