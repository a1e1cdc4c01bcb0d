/* geometry.h - stripe geometry of a backing block device, for ra/.
 *
 * Owns: the plain struct ra_geometry it fills, and struct
 * ra_geometry_cache: the devices an engine has probed (ra.c keeps one per
 * engine, so each device is probed once per mount; a file keeps a copy).
 *
 * Where the numbers come from, for the backing device MAJ:MIN, under a sysfs
 * root that is a parameter ("/sys" in production, a fake tree in tests):
 *
 *   <root>/dev/block/MAJ:MIN            a partition has a "partition" file:
 *                                       its disk is the parent directory
 *   <disk>/queue/optimal_io_size        io_opt, bytes (0: not reported)
 *   <disk>/queue/minimum_io_size        io_min, bytes
 *   <disk>/queue/max_sectors_kb         max_io: the largest request, KiB
 *   <disk>/md/chunk_size                md chunk, bytes (md devices only)
 *   <disk>/md/raid_disks                md member count
 *   <disk>/md/level                     "raid0", "raid5", ... (data disks)
 *
 * Derived (bytes): chunk = md/chunk_size, else io_min when io_opt is a
 * multiple of it of at least two chunks and io_min >= 16 KiB, else io_opt;
 * stripe width = io_opt when reported, else chunk x data disks; chunk 0 and
 * stripe 0 mean "not striped".  A device without md and without io_opt, a
 * filesystem without a block device (tmpfs, overlay, FUSE: major 0) or a
 * sysfs tree that cannot be read gives "not striped".  The default readahead
 * cap is ra_auto_max_bytes() (ra/ra.h) of the stripe width and max_io;
 * max_window keeps the geometry's own part of it, max(1 MiB, 2 x stripe
 * width).  Overrides (-o stripe=, -o chunk=) replace the probed values.
 *
 * Concurrency: every function is pure or reads sysfs only; any thread.
 * The exception is struct ra_geometry_cache, whose table is guarded by its
 * own mutex (a leaf lock, never held across the sysfs reads).
 */
#ifndef AHEADFS_RA_GEOMETRY_H
#define AHEADFS_RA_GEOMETRY_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

/* Where the geometry came from (for the stats). */
enum ra_geometry_source {
	RA_GEOM_NONE = 0, /* no block device (major 0) or nothing reported */
	RA_GEOM_MD, /* md/chunk_size and md/raid_disks */
	RA_GEOM_QUEUE, /* queue/optimal_io_size (and minimum_io_size) */
	RA_GEOM_OVERRIDE, /* -o stripe= / -o chunk= */
	RA_GEOM_INVALID, /* sysfs held garbage: not striped, see why */
};

struct ra_geometry {
	uint64_t chunk; /* bytes per disk before the next disk; 0: none */
	uint64_t stripe; /* full stripe width in bytes; 0: not striped */
	uint64_t io_min; /* queue/minimum_io_size, 0 if unknown */
	uint64_t io_opt; /* queue/optimal_io_size, 0 if unknown */
	uint64_t max_io; /* queue/max_sectors_kb in bytes, 0 if unknown or
			    not a multiple of 4 KiB */
	unsigned int disks; /* md/raid_disks, 0 if not md */
	unsigned int data_disks; /* disks carrying distinct data in a stripe */
	/* ra_auto_max_bytes(stripe, 0, 0): the cap before the engine's floor
	 * and max_io rounding, bytes */
	uint64_t max_window;
	enum ra_geometry_source source;
	char why[128]; /* RA_GEOM_INVALID: which file held what; else "" */
};

/**
 * ra_geometry_probe() - Fill @g for the block device @dev from sysfs.
 * @sysfs_root: "/sys", or the root of a fake tree.
 * @dev: st_dev of the backing filesystem.
 *
 * Files that are missing count as "not reported".  A file that is present
 * but does not hold a plain number (or holds an absurd one: a chunk that is
 * not a multiple of 4 KiB, more than 4096 disks) makes the whole device
 * "not striped" with g->source = RA_GEOM_INVALID and the reason in g->why:
 * readahead then works unstriped rather than on a guess.
 *
 * Context: Reads a few sysfs files; may sleep.  Any thread.
 * Return: 0 (@g always filled), or -EINVAL if @sysfs_root or @g is NULL.
 */
int ra_geometry_probe(const char *sysfs_root, dev_t dev, struct ra_geometry *g);

/**
 * ra_geometry_override() - Apply -o stripe= / -o chunk= to @g.
 * @stripe: bytes, 0 = keep the probed value (or derive it: chunk x data disks,
 *	    or the chunk alone when the disk count is unknown).
 * @chunk: bytes, 0 = keep the probed chunk if it divides the stripe, else
 *	   the stripe itself.
 *
 * Both must be multiples of 4 KiB, chunk <= stripe and stripe a multiple of
 * chunk; the readahead cap is recomputed.  Nothing changes on error.
 *
 * Context: Pure.
 * Return: 0, or -EINVAL for values that break those rules.
 */
int ra_geometry_override(struct ra_geometry *g, uint64_t stripe,
			 uint64_t chunk);

/**
 * ra_geometry_round_end() - Move a window's end onto a stripe boundary
 * where that costs nothing.
 * @start, @end: the window [@start, @end) in pages.
 * @min_end: the end may not go below this (the reader's own pages).
 * @limit: the end may not go above this (start + max window, EOF page).
 *
 * Rounds @end up to the next stripe boundary if that stays <= @limit (the
 * window stays within its cap; the next window then starts on a stripe
 * boundary and every later I/O covers whole stripes), else down to the
 * previous one if that stays > @start and >= @min_end; else leaves it.  No
 * stripe (g->stripe < 4 KiB) or @end already aligned: returns @end.
 *
 * Context: Pure.
 * Return: The new end, in pages.
 */
uint64_t ra_geometry_round_end(const struct ra_geometry *g, uint64_t start,
			       uint64_t end, uint64_t min_end, uint64_t limit);

/* Devices a geometry cache remembers; a device beyond them is probed at
 * every ra_geometry_cache_get(). */
#define RA_GEOM_CACHE 16

/* The geometry of the devices probed so far (ra_geometry_cache_get()). */
struct ra_geometry_cache {
	pthread_mutex_t lock; /* guards the rest */
	struct {
		dev_t dev;
		struct ra_geometry g;
	} dev[RA_GEOM_CACHE];
	unsigned int nr;
};

/** ra_geometry_cache_init() - An empty cache.
 * Context: Any thread.  Return: 0, or a pthread_mutex_init() -errno. */
int ra_geometry_cache_init(struct ra_geometry_cache *gc);

/** ra_geometry_cache_destroy() - Free @gc's lock.  Context: no user left. */
void ra_geometry_cache_destroy(struct ra_geometry_cache *gc);

/**
 * ra_geometry_cache_get() - The geometry of @dev: the remembered one, or
 * ra_geometry_probe() under @sysfs_root with ra_geometry_override() of
 * @stripe and @chunk (0 and 0: none) applied, then remembered.  Overrides
 * the caller checked already; where they clash with a device's probed
 * values they apply to a clean slate.
 *
 * Context: Takes gc->lock, dropped around the probe (it reads sysfs and
 * may sleep): two threads may probe the same device at once, and find
 * the same numbers.
 */
void ra_geometry_cache_get(struct ra_geometry_cache *gc, const char *sysfs_root,
			   dev_t dev, uint64_t stripe, uint64_t chunk,
			   struct ra_geometry *g);

/** ra_geometry_source_name() - "none", "md", "queue", "override", "invalid". */
const char *ra_geometry_source_name(enum ra_geometry_source s);

#endif /* AHEADFS_RA_GEOMETRY_H */
