/* cache_bench_lgpl.c - urcu-memb read side inlined (_LGPL_SOURCE), for
 * cache_bench's flavour comparison: what a caller gets by defining
 * _LGPL_SOURCE before including <urcu.h> (liburcu is LGPL-2.1; aheadfs is
 * GPL-2.0, so inlining is allowed).
 */
#define _LGPL_SOURCE
#include <stdint.h>
#include <time.h>
#include <urcu.h>

double bench_lgpl_read_pair_ns(uint64_t iters);

double bench_lgpl_read_pair_ns(uint64_t iters)
{
	struct timespec t0, t1;

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
