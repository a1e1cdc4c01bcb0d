/* tbuf.h - the serving threads' buffers: one per thread, page aligned,
 * grown once to the largest request (AFS_DATA_MAX_REQUEST) and kept for
 * the thread's life, for whatever a request handler needs to read into
 * (buf.c).
 *
 * Concurrency: a buffer belongs to its thread (a pthread key); nothing is
 * shared.
 */
#ifndef AFS_DATA_TBUF_H
#define AFS_DATA_TBUF_H

#include <stddef.h>

/**
 * afs_thread_buf() - This thread's buffer, at least @size bytes, page
 * aligned; grows once to the largest request and is kept for the thread's
 * life (freed at thread exit).
 *
 * Context: Serving thread.
 * Return: The buffer, or NULL on ENOMEM.
 */
void *afs_thread_buf(size_t size);

/**
 * afs_thread_buf_release() - Free the calling thread's buffer now (the main
 * thread in -s mode, whose exit runs no destructor before LeakSanitizer).
 *
 * Context: The thread itself, when it serves no more requests.
 */
void afs_thread_buf_release(void);

/**
 * afs_thread_buf_key_init() - Create the thread buffer key (once; every
 * later call returns the first one's result).  afs_data_create() calls it.
 *
 * Context: Before serving.
 * Return: 0 or -errno.
 */
int afs_thread_buf_key_init(void);

#endif /* AFS_DATA_TBUF_H */
