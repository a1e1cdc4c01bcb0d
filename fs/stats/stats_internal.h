/* stats_internal.h - what the parts of fs/stats share, private to it:
 *   xattr.c   the names, which file each exists on, the entry points, the
 *             size answer, and the two functions that read the data
 *             path's state: afs_fcache_stats() a file's, afs_stats_aref()
 *             the mount's
 *   stats.c   user.aheadfs.stats: snapshots generated from the schema
 *             (schema.h), collected from each module's stats, rendered
 *   map.c     user.aheadfs.map
 *   tune.c    user.aheadfs.advice and the root's tunables
 *   jsonw.c   the JSON writer (jsonw.h)
 *
 * Concurrency: as xattr.h; nothing here keeps state between calls.
 */
#ifndef AFS_STATS_INTERNAL_H
#define AFS_STATS_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fs/stats/schema.h"
#include "fs/stats/xattr.h"
#include "jsonw.h"

/*
 * What the root's stats read of the mount: the data path's (afs_data_stats()
 * and its cache, engine and options) and its neighbours' (@t's warm,
 * watch and passthrough).  Filled by afs_stats_aref().
 */
struct afs_stats_aref {
	struct cache *cache;
	struct ra_engine *ra;
	const struct afs_data_config *cfg; /* in force */
	struct afs_data_stats d;
	struct afs_pressure_stats pressure;
	struct afs_warm_counters warm;
	struct afs_watch_counts watch;
	struct afs_xattr_passthrough passthrough;
	struct afs_xattr_transport transport;
};

/** afs_stats_aref() - The mount's state as @t sees it.  Context: any. */
void afs_stats_aref(const struct afs_data *a, const struct afs_xattr_target *t,
		    struct afs_stats_aref *out);

/* The snapshots of the values, one member per schema row (OBJ_KEY). */
#define AFS_STATS_MEMBER(obj, key, kind, help)                                 \
	AFS_STATS_MEMBER_##kind(obj##_##key);
#define AFS_STATS_MEMBER_COUNTER(n) uint64_t n
#define AFS_STATS_MEMBER_GAUGE(n) uint64_t n
#define AFS_STATS_MEMBER_TEXT(n) const char *n
#define AFS_STATS_MEMBER_RATIO(n) double n
#define AFS_STATS_MEMBER_DECISIONS(n) uint64_t n[AFS_SCHEMA_KINDS]
#define AFS_STATS_MEMBER_STREAMS(n) struct afs_stats_streams n

struct afs_stats_stream {
	AFS_SCHEMA_STREAM(AFS_STATS_MEMBER)
};

struct afs_stats_streams {
	unsigned int n;
	struct afs_stats_stream s[RA_STATS_STREAMS];
};

struct afs_stats_file {
	AFS_SCHEMA_FILE(AFS_STATS_MEMBER)
};

struct afs_stats_root {
	AFS_SCHEMA_ROOT(AFS_STATS_MEMBER)
};

/* A file of @size bytes in cache pages (at most CACHE_INDEX_LIMIT). */
uint64_t afs_stats_pages_of(uint64_t size);

/* The size answer for a value of @len bytes (xattr.h, "Sizes"). */
ssize_t afs_stats_size_answer(size_t len);
/* The part of a caller's @size that is used. */
size_t afs_stats_value_cap(size_t size);
/* A word value (advice, tunables) answered as getxattr answers. */
ssize_t afs_stats_get_word(const char *w, char *buf, size_t size);

/** afs_stats_get() - user.aheadfs.stats of @t (root or regular file). */
ssize_t afs_stats_get(struct afs_data *a, const struct afs_xattr_target *t,
		      char *buf, size_t size);

/** afs_stats_get_map() - user.aheadfs.map of regular file @t. */
ssize_t afs_stats_get_map(const struct afs_xattr_target *t, char *buf,
			  size_t size);

/* The settable names (tune.c). */
enum afs_stats_tunable {
	AFS_TUNE_ADVICE, /* a regular file's advice */
	AFS_TUNE_RA_MAX, /* the root's tunables */
	AFS_TUNE_CONTEXT_RA,
	AFS_TUNE_STREAM_TABLE,
};

/** afs_stats_get_tunable() - The value of @id in force, as a word. */
ssize_t afs_stats_get_tunable(struct afs_data *a,
			      const struct afs_xattr_target *t,
			      enum afs_stats_tunable id, char *buf,
			      size_t size);

/**
 * afs_stats_set_tunable() - Set @id to @value (@size bytes, one trailing
 * newline allowed).  Return: 0, -EINVAL (nothing changed).
 */
int afs_stats_set_tunable(struct afs_data *a, const struct afs_xattr_target *t,
			  enum afs_stats_tunable id, const char *value,
			  size_t size);

#endif /* AFS_STATS_INTERNAL_H */
