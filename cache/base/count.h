/* count.h - statistics counters: the one way one is bumped and read.
 *
 * A counter is a plain uint64_t that only grows (a gauge may go down),
 * bumped by any thread with afs_count() and read by the stats with
 * afs_count_read(), both relaxed atomics: a counter orders nothing, and a
 * reader may see two counters bumped together a moment apart.  What a lock
 * or a release store publishes is never a counter.
 *
 * Concurrency: lock-free; any thread, inside or outside RCU read-side
 * sections, under any lock.
 */
#ifndef AFS_BASE_COUNT_H
#define AFS_BASE_COUNT_H

#include <stdint.h>

/** afs_count() - Add @n to the counter @c. */
static inline void afs_count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/** afs_count_sub() - Take @n from the gauge @c. */
static inline void afs_count_sub(uint64_t *c, uint64_t n)
{
	__atomic_fetch_sub(c, n, __ATOMIC_RELAXED);
}

/** afs_count_set() - Set the gauge @c to @v. */
static inline void afs_count_set(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, v, __ATOMIC_RELAXED);
}

/** afs_count_read() - The counter @c now. */
static inline uint64_t afs_count_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

#endif /* AFS_BASE_COUNT_H */
