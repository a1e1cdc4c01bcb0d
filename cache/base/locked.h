/* locked.h - a snapshot of a table taken under its lock, without
 * allocating under it.
 *
 * Concurrency: the caller's lock guards the count; the allocation runs
 * outside it.
 */
#ifndef AFS_BASE_LOCKED_H
#define AFS_BASE_LOCKED_H

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

/**
 * afs_alloc_locked() - An array of at least *@count elements of @size
 * bytes, allocated outside @lock and returned with @lock held and *@count
 * (read under it) within it; a count that grew meanwhile is tried again.
 * Context: Takes @lock: held on success, not on failure.
 * Return: The array (free() it), or NULL on ENOMEM.
 */
static inline void *afs_alloc_locked(pthread_mutex_t *lock, const size_t *count,
				     size_t size)
{
	void *v = NULL;
	size_t cap = 0;

	for (;;) {
		pthread_mutex_lock(lock);
		if (v && *count <= cap)
			return v;
		cap = *count + 64;
		pthread_mutex_unlock(lock);
		free(v);
		v = calloc(cap, size);
		if (!v)
			return NULL;
	}
}

#endif /* AFS_BASE_LOCKED_H */
