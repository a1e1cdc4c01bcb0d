/* pressure.h - the cache budget follows the memory cgroup's pressure.
 *
 * Owns: one thread per mount (when the daemon's memory cgroup has a limit)
 * that every PRESSURE_TICK_MS reads the cgroup's usage and the part of it
 * the kernel can reclaim by itself (its file pages), and moves the cache
 * budget (cache_set_budget()) between the mount's cache_size (the ceiling)
 * and the least the mount needs (afs_data_min_cache()):
 *
 *   unreclaimable = usage - (active_file + inactive_file)
 *
 *   above AFS_PRESSURE_HIGH_PCT of the limit   shrink: the budget (or what
 *                                              the cache holds, if less)
 *                                              loses the excess over the
 *                                              target (AFS_PRESSURE_TARGET_PCT),
 *                                              at least an eighth of itself;
 *                                              the freed memory goes back to
 *                                              the kernel (cache_trim())
 *   below AFS_PRESSURE_GROW_PCT for
 *   AFS_PRESSURE_CALM_MS since the last shrink grow: half the room below
 *                                              the target, up to the ceiling
 *
 * The kernel's own page cache in the cgroup is not pressure: it is
 * reclaimed without anyone being killed.  What the OOM killer acts on is
 * memory nobody can reclaim -- the daemon's buffers, the readers' own
 * memory -- so that is what the budget makes room for.  On cgroup v1 the
 * thread is also woken by memory.pressure_level "medium" events
 * (cgroup.event_control), so it reacts within a reclaim pass, not a tick.
 *
 * Files: v1 memory.usage_in_bytes, memory.stat (total_active_file,
 * total_inactive_file, hierarchical_memory_limit), memory.limit_in_bytes;
 * v2 memory.current, memory.stat (active_file, inactive_file), memory.max
 * (the smallest up the tree, as afs_cgroup_mem_limit()).
 *
 * Concurrency: the thread is the only writer of the budget after the
 * mount starts; the figures it publishes (struct afs_pressure_stats) are
 * relaxed atomics any thread may read.
 */
#ifndef AFS_DATA_PRESSURE_H
#define AFS_DATA_PRESSURE_H

#include <stdbool.h>
#include <stdint.h>

#include "fs/data/data.h" /* struct afs_pressure_stats */

#define AFS_PRESSURE_TICK_MS 100
#define AFS_PRESSURE_HIGH_PCT 90
#define AFS_PRESSURE_TARGET_PCT 85
#define AFS_PRESSURE_GROW_PCT 75
#define AFS_PRESSURE_CALM_MS 5000

struct afs_data;
struct afs_pressure;

/* What one tick decides: the new budget for @budget (unchanged: none);
 * @used: what the cache holds now (a cut starts from the smaller). */
uint64_t afs_pressure_decide(uint64_t limit, uint64_t unreclaimable,
			     uint64_t budget, uint64_t used, uint64_t min,
			     uint64_t ceiling, bool calm);

/**
 * afs_pressure_start() - Watch the memory cgroup under @root ("" in
 * production; tests pass a fake tree) for @a.
 *
 * Context: Before serving; starts a thread.
 * Return: 0 and *@out (NULL when there is no limited memory cgroup to
 * watch: nothing started), or -errno.
 */
int afs_pressure_start(struct afs_data *a, const char *root,
		       struct afs_pressure **out);

/** afs_pressure_stop() - Stop and free @p (NULL: nothing). */
void afs_pressure_stop(struct afs_pressure *p);

/** afs_pressure_stats() - What @p (NULL: not watching) has done. */
void afs_pressure_stats(const struct afs_pressure *p,
			struct afs_pressure_stats *st);

#endif /* AFS_DATA_PRESSURE_H */
