/* data.c - the data path's mount: its options and defaults, its start and
 * stop, its counters; see data.h.  The table of files is file.c's.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data_internal.h"
#include "pressure.h"
#include "cache/base/debug.h"

/* The names of the data path's modes, as the options, the stats and the
 * docs spell them (data.h). */
const char *const afs_read_mode_names[] = {
	[AFS_READ_KERNEL] = "kernel",
	[AFS_READ_DIRECT] = "direct",
	NULL,
};

const char *const afs_write_mode_names[] = {
	[AFS_WRITE_THROUGH] = "writethrough",
	[AFS_WRITE_BACK] = "writeback",
	NULL,
};

void afs_data_config_init(struct afs_data_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->write_behind = AFS_WRITE_BEHIND_DEFAULT;
	cfg->idle_files = AFS_IDLE_FILES_DEFAULT;
	cfg->ra.workers = RA_WORKERS_DEFAULT;
}

uint64_t afs_data_min_cache(const struct afs_data_config *cfg,
			    unsigned int threads)
{
	uint64_t window = cfg->ra.max_bytes;
	uint64_t workers = ra_workers_of(&cfg->ra);

	/* The stripe given as an option, not yet probed: no rounding to the
	 * device's requests either. */
	if (!window)
		window = ra_auto_max_bytes(cfg->ra.stripe_bytes,
					   cfg->ra.auto_floor_bytes, 0);
	/* Each FUSE thread holds at most one request's pages while it waits;
	 * each worker fills at most one window at a time. */
	return (threads + workers) * (uint64_t)AFS_DATA_MAX_REQUEST_PAGES *
		       PAGE_SIZE +
	       workers * window;
}

uint64_t afs_data_default_size(uint64_t ram, uint64_t cg_limit, uint64_t min)
{
	uint64_t size = ram ? ram / 8 : 256u << 20;

	if (cg_limit && (!ram || cg_limit < ram) && cg_limit / 4 < size) {
		size = cg_limit / 4;
		if (size < min)
			size = min;
	}
	return size;
}

uint64_t afs_data_cache_size(const struct afs_data_config *cfg)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long psize = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * psize : 0;

	if (cfg->cache_size)
		return cfg->cache_size;
	return afs_data_default_size(ram, afs_cgroup_mem_limit(""),
				     afs_data_min_cache(cfg, cfg->threads));
}

int afs_data_check(const struct afs_data_config *cfg, unsigned int threads,
		   char *err, size_t errlen)
{
	uint64_t size = afs_data_cache_size(cfg);
	uint64_t min = afs_data_min_cache(cfg, threads);

	if (size >= min)
		return 0;
	snprintf(err, errlen,
		 "cache_size=%llu is too small: %u threads and %u readahead "
		 "workers need at least %llu MiB",
		 (unsigned long long)size, threads, ra_workers_of(&cfg->ra),
		 (unsigned long long)((min + (1u << 20) - 1) >> 20));
	return -EINVAL;
}

int afs_data_create(const struct afs_data_config *cfg, struct afs_data **out,
		    char *err, size_t errlen)
{
	struct afs_data *a = calloc(1, sizeof(*a));
	struct cache_config cc = {0};
	int rc;

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	a->cfg = *cfg;
	a->cfg.cache_size = afs_data_cache_size(cfg);
	rc = afs_thread_buf_key_init();
	if (rc) {
		snprintf(err, errlen, "cannot create a thread key: %s",
			 strerror(-rc));
		goto out_free;
	}
	cache_thread_online();
	cc.budget_bytes = a->cfg.cache_size;
	cc.manual_reclaim = cfg->manual_reclaim;
	rc = cache_create(&cc, &a->cache);
	if (rc) {
		snprintf(err, errlen, "cannot create the page cache: %s",
			 strerror(-rc));
		goto out_free;
	}
	/* Kernel mode hands every page read to the kernel and keeps only
	 * its history (read.c): the readers' windows may have the budget. */
	a->cfg.ra.reads_dropped = a->cfg.read_mode == AFS_READ_KERNEL;
	rc = ra_engine_create(&a->cfg.ra, a->cache, &a->ra);
	if (rc) {
		snprintf(err, errlen, "cannot start the readahead engine: %s",
			 rc == -EINVAL ? "invalid readahead options"
				       : strerror(-rc));
		goto out_cache;
	}
	a->nbuckets = FILES_MIN_BUCKETS;
	a->files = calloc(a->nbuckets, sizeof(*a->files));
	if (!a->files) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out_engine;
	}
	rc = -pthread_mutex_init(&a->files_lock, NULL);
	if (rc) {
		snprintf(err, errlen, "cannot create a lock: %s",
			 strerror(-rc));
		goto out_files;
	}
	/* The budget shrinks under the memory cgroup's pressure. */
	rc = afs_pressure_start(a, "", &a->pressure);
	if (rc) {
		snprintf(err, errlen, "cannot watch memory pressure: %s",
			 strerror(-rc));
		goto out_lock;
	}
	if (a->cfg.write_behind) {
		rc = afs_behind_create(&a->behind_counts, &a->behind);
		if (rc) {
			snprintf(err, errlen, "cannot start write-behind: %s",
				 strerror(-rc));
			goto out_pressure;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &a->started);
	a->started_wall = time(NULL);
	*out = a;
	return 0;

out_pressure:
	afs_pressure_stop(a->pressure);
out_lock:
	pthread_mutex_destroy(&a->files_lock);
out_files:
	free(a->files);
out_engine:
	ra_engine_destroy(a->ra);
out_cache:
	cache_destroy(a->cache);
out_free:
	free(a);
	return rc;
}

void afs_data_destroy(struct afs_data *a)
{
	if (!a)
		return;
	afs_behind_destroy(a->behind);
	afs_data_drop_idle(a);
	assert(!a->nfiles);
	afs_pressure_stop(a->pressure);
	cache_thread_online();
	ra_engine_destroy(a->ra);
	cache_destroy(a->cache);
	pthread_mutex_destroy(&a->files_lock);
	free(a->files);
	free(a);
}

void afs_data_stats(const struct afs_data *a, struct afs_data_stats *out)
{
	out->started = a->started;
	out->started_wall = a->started_wall;
	out->uncached_reads = afs_count_read(&a->uncached_reads);
	out->resident_reads = afs_count_read(&a->resident_reads);
	out->resident_spliced = afs_count_read(&a->resident_spliced);
	out->random_around = afs_count_read(&a->random_around);
	out->revalidations = afs_count_read(&a->revalidations);
	out->demand_misses = afs_count_read(&a->demand_misses);
	out->idle = __atomic_load_n(&a->nidle, __ATOMIC_RELAXED);
	out->idle_max = afs_data_idle_max(a);
	out->revived = afs_count_read(&a->revived);
	out->revived_changed = afs_count_read(&a->revived_changed);
	out->idle_dropped = afs_count_read(&a->idle_dropped);
	out->behind.pieces = afs_count_read(&a->behind_counts.pieces);
	out->behind.bytes = afs_count_read(&a->behind_counts.bytes);
	out->behind.failed = afs_count_read(&a->behind_counts.failed);
	out->behind.skipped = afs_count_read(&a->behind_counts.skipped);
	out->direct.writes = afs_count_read(&a->direct_counts.writes);
	out->direct.bytes = afs_count_read(&a->direct_counts.bytes);
	out->direct.refused = afs_count_read(&a->direct_counts.refused);
	afs_pressure_stats(a->pressure, &out->pressure);
}

const struct afs_data_config *afs_data_options(const struct afs_data *a)
{
	return &a->cfg;
}

struct cache *afs_data_cache(const struct afs_data *a)
{
	return a->cache;
}

struct ra_engine *afs_data_engine(const struct afs_data *a)
{
	return a->ra;
}

uint64_t afs_data_demand_misses(const struct afs_data *a)
{
	return afs_count_read(&a->demand_misses);
}
