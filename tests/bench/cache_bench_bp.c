/* cache_bench_bp.c - the urcu-bp side of cache_bench's flavour comparison.
 *
 * A translation unit of its own: <urcu-bp.h> and the <urcu.h> that
 * cache/cache.h includes map rcu_read_lock() to different flavours.  urcu-bp
 * needs no registration: every read lock checks for it.  Inlined
 * (_LGPL_SOURCE), like cache_bench_lgpl.c.
 */
#define _LGPL_SOURCE /* inlined, like cache_bench_lgpl.c */
#include <stdint.h>
#include <time.h>
#include <urcu-bp.h>

double bench_bp_read_pair_ns(uint64_t iters);

double bench_bp_read_pair_ns(uint64_t iters)
{
	struct timespec t0, t1;

	rcu_read_lock(); /* registers the thread on first use */
	rcu_read_unlock();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (uint64_t i = 0; i < iters; i++) {
		rcu_read_lock();
		__asm__ volatile("" ::: "memory");
		rcu_read_unlock();
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
	       iters;
}
