/* buf.c - each serving thread's buffer for replies the daemon builds itself
 * (uncached reads, directory listings, xattr values); see data.h. */
#include <pthread.h>
#include <stdlib.h>

#include "fs/data/data.h"

struct thread_buf {
	size_t size;
	void *data;
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

void *afs_thread_buf(size_t size)
{
	struct thread_buf *b = pthread_getspecific(thread_buf_key);
	void *data;

	if (b && b->size >= size)
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
	if (posix_memalign(&data, 4096, size))
		return NULL;
	free(b->data);
	b->data = data;
	b->size = size;
	return data;
}

void afs_thread_buf_release(void)
{
	struct thread_buf *b = pthread_getspecific(thread_buf_key);

	if (b) {
		pthread_setspecific(thread_buf_key, NULL);
		thread_buf_free(b);
	}
}
