/* data_internal.h - the data path's structs and the functions only fs/data
 * calls (private: not in the API include tree; fs/data's own unit tests
 * reach it through afs_unit_test(INTERNAL afs_data)).  The rules on each
 * field are data.h's lock table; "__atomic" marks a field read without the
 * lock that guards its writes, counters are cache/base/count.h's.
 */
#ifndef AFS_DATA_INTERNAL_H
#define AFS_DATA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cache/base/count.h"
#include "fs/data/data.h"
#include "fs/data/file.h"
#include "fs/data/tbuf.h"

/* Pieces queued for the write-behind thread at most (behind.c). */
#define AFS_BEHIND_QUEUE 64
/* How far a write may land from a run's end and still belong to it
 * (behind.c): the kernel's writeback has up to 64 requests of up to 1 MiB
 * in flight (AFS_MAX_BACKGROUND), and the serving threads take them in any
 * order. */
#define AFS_BEHIND_GAP (16u << 20)

/* fs/data's shorthands for the cache's page geometry. */
#define PAGE_SHIFT CACHE_PAGE_SHIFT
#define PAGE_SIZE CACHE_PAGE_SIZE
/* The table of files' buckets at the start (it doubles as it fills). */
#define FILES_MIN_BUCKETS 256

struct afs_pressure;

struct afs_data {
	struct cache *cache;
	struct ra_engine *ra;
	struct afs_data_config cfg; /* as in force (cache_size resolved) */
	struct timespec started; /* CLOCK_MONOTONIC */
	time_t started_wall;
	uint64_t uncached_reads; /* __atomic: reads served around the cache */
	/* __atomic: reads served from the backing's page cache (read.c) */
	uint64_t resident_reads;
	uint64_t resident_spliced; /* __atomic: of those, spliced (read.c) */
	/* __atomic: random misses read around the cache (read.c) */
	uint64_t random_around;
	uint64_t revalidations; /* __atomic: changes behind the mount seen */
	struct afs_pressure *pressure; /* pressure.h; NULL: no cgroup limit */
	uint64_t demand_misses; /* __atomic: reads that missed (not hits) */
	/* write-behind (behind.c): its thread and queue, NULL when off */
	struct afs_behind *behind;
	struct afs_behind_stats behind_counts; /* counters */
	/* direct writes (write.c), __atomic */
	struct afs_direct_stats direct_counts;
	pthread_mutex_t files_lock; /* the table below, every fc->refs */
	struct afs_fcache **files; /* hash buckets by key */
	size_t nbuckets, nfiles;
	/* Idle files, most recently idle first (files_lock): */
	struct afs_fcache *idle_head, *idle_tail;
	size_t nidle; /* written under files_lock, read __atomic */
	uint64_t revived; /* __atomic: idle files looked up again */
	uint64_t revived_changed; /* __atomic: ... found changed */
	uint64_t idle_dropped; /* __atomic: idle files freed past the limit */
};

struct afs_fcache {
	struct afs_data *a;
	struct afs_file_key key; /* immutable */
	struct cache_mapping *map; /* immutable */
	/* __atomic: published under lock, NULL while the file is idle
	 * (data.h, "Locking") */
	struct ra_file *raf;
	pthread_mutex_t lock; /* leaf: identity, raf's creation */
	/* The identity the cached pages were read under: */
	uint64_t size; /* __atomic (written under lock): EOF */
	struct timespec mtime, ctime; /* under lock */
	/* __atomic: the daemon's own changes between their first system call
	 * and the identity they leave (afs_fcache_own_begin()), and how many
	 * ever began (afs_fcache_outside()) */
	uint32_t own_active, own_began;
	struct ra_state ra; /* readahead state of reads without a handle */
	/* The file's O_DIRECT write descriptor (write.c), __atomic: -1 not
	 * open; taken out under a->files_lock when the last reference goes
	 * and closed outside it.  direct_refused: the backing refused one. */
	int direct_fd;
	bool direct_refused; /* __atomic */
	/* under lock: the run of writes being handed over (behind.c) */
	uint64_t behind_from, behind_next, behind_bytes;
	uint64_t changes; /* __atomic: changes behind the mount seen */
	/* __atomic: ra_file_eofs() when the size was last taken again for it
	 * (read.c eof_check()) */
	uint64_t eofs_seen;
	uint64_t uncached_reads; /* __atomic */
	uint64_t resident_reads; /* __atomic */
	uint64_t resident_spliced; /* __atomic */
	uint64_t random_around; /* __atomic */
	uint64_t revalidations; /* __atomic */
	uint64_t refs; /* under a->files_lock */
	struct afs_fcache *next; /* hash chain, a->files_lock */
	/* a->files_lock: on the idle LRU (refs 0), its links */
	bool idle;
	struct afs_fcache *idle_prev, *idle_next;
};

/* fc->raf: the file's readahead side, NULL while closed (data.h). */
static inline struct ra_file *fc_raf(const struct afs_fcache *fc)
{
	return __atomic_load_n(&fc->raf, __ATOMIC_ACQUIRE);
}

/** afs_fcache_get() - Another reference.  Context: a holder of one. */
void afs_fcache_get(struct afs_fcache *fc);

/**
 * afs_fcache_direct_take() - Take @fc's O_DIRECT write descriptor out (-1
 * if none) for the caller to close.  Context: under a->files_lock with no
 * reference left (so no writer uses it), or when freeing.
 */
int afs_fcache_direct_take(struct afs_fcache *fc);

struct afs_behind;
struct afs_behind_stats;
/**
 * afs_behind_create() - The write-behind queue of a mount (behind.c),
 * counting into @counts; its thread starts with the first piece.
 * Return: 0, or -ENOMEM or another negative errno.
 */
int afs_behind_create(struct afs_behind_stats *counts, struct afs_behind **out);
/**
 * afs_behind_destroy() - Hand over what is queued, stop the thread, free.
 * @b may be NULL.
 */
void afs_behind_destroy(struct afs_behind *b);

/**
 * afs_data_min_cache() - The smallest cache budget that lets @threads
 * serving threads and the readahead workers make progress: every thread's
 * largest request plus every worker's largest window.
 * Context: Pure.
 */
uint64_t afs_data_min_cache(const struct afs_data_config *cfg,
			    unsigned int threads);

/**
 * afs_data_default_size() - The default budget: an eighth of @ram (256 MiB
 * when @ram is 0); where a memory cgroup limit @cg_limit below @ram is set,
 * a quarter of it when that is smaller, but never below @min.
 * Context: Pure.
 */
uint64_t afs_data_default_size(uint64_t ram, uint64_t cg_limit, uint64_t min);

/**
 * afs_data_cache_size() - The budget @cfg asks for: cache_size, or when it
 * is 0 the default for this machine and this process's memory cgroup
 * (afs_data_default_size() of RAM, afs_cgroup_mem_limit() and
 * afs_data_min_cache() of @cfg->threads).  The one place the default is
 * resolved.
 * Context: sysconf() and the cgroup files; before mounting.
 */
uint64_t afs_data_cache_size(const struct afs_data_config *cfg);

/**
 * afs_thread_buf_contig() - As afs_thread_buf(), but in one huge page
 * where the kernel gives one (madvise MADV_HUGEPAGE; 2 MiB aligned): a
 * buffer physically contiguous, so that an O_DIRECT transfer of up to
 * AFS_DATA_MAX_REQUEST reaches the device as one request, not in pieces
 * of as many 4 KiB pages as the queue takes segments.  The thread's one
 * buffer: it replaces a plain one (and afs_thread_buf() returns it after).
 *
 * Context: Serving thread.
 * Return: The buffer, or NULL on ENOMEM.
 */
void *afs_thread_buf_contig(size_t size);

#endif /* AFS_DATA_INTERNAL_H */
