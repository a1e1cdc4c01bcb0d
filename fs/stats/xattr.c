/* xattr.c - the user.aheadfs.* names: which exist on which kind of file,
 * the entry points, the size answer, and the one function that reads a
 * file's data-path state (see xattr.h and docs/stats.md).
 *
 * The data path's objects (struct afs_ahead, struct afs_fcache) are read
 * in afs_stats_aref() and afs_stats_fref() only: the rest of fs/stats sees
 * their handles (cache, ra engine, mapping, ra_file) and counters.
 *
 * Every value is rendered on demand from the live counters, twice per
 * getfattr (size query, then data): the size query renders into nothing
 * (a JSON writer with no buffer counts the bytes), the data call renders
 * into the caller's buffer.  Nothing is kept between the two calls, so the
 * size answer carries slack (AFS_XATTR_SLACK) and each renderer bounds how
 * much its value can grow (stats.c, map.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "stats_internal.h"

#define PFX AFS_XATTR_PREFIX

enum name_id {
	N_STATS,
	N_MAP,
	N_ADVICE,
	N_RA_MAX,
	N_CONTEXT_RA,
	N_STREAM_TABLE,
	N_UNKNOWN,
};

/* The names after the prefix, on which kind of file each exists, and the
 * tunable a settable one is. */
static const struct {
	const char *name;
	bool on_reg, on_root;
	enum afs_stats_tunable tunable;
} names[] = {
	[N_STATS] = {"stats", true, true},
	[N_MAP] = {"map", true, false},
	[N_ADVICE] = {"advice", true, false, AFS_TUNE_ADVICE},
	[N_RA_MAX] = {"ra_max", false, true, AFS_TUNE_RA_MAX},
	[N_CONTEXT_RA] = {"context_ra", false, true, AFS_TUNE_CONTEXT_RA},
	[N_STREAM_TABLE] = {"stream_table", false, true, AFS_TUNE_STREAM_TABLE},
};

/* The one reader of struct afs_fcache in fs/stats. */
void afs_stats_fref(const struct afs_xattr_target *t,
		    struct afs_stats_fref *out)
{
	const struct afs_fcache *fc = t->fc;

	out->map = fc->map;
	out->raf = fc->raf;
	out->size = __atomic_load_n(&fc->size, __ATOMIC_RELAXED);
	out->uncached_reads =
		__atomic_load_n(&fc->uncached_reads, __ATOMIC_RELAXED);
	out->resident_reads =
		__atomic_load_n(&fc->resident_reads, __ATOMIC_RELAXED);
	out->resident_spliced =
		__atomic_load_n(&fc->resident_spliced, __ATOMIC_RELAXED);
	out->revalidations =
		__atomic_load_n(&fc->revalidations, __ATOMIC_RELAXED);
}

/* The one reader of struct afs_ahead in fs/stats. */
void afs_stats_aref(const struct afs_ahead *a, struct afs_stats_aref *out)
{
	out->cache = a->cache;
	out->ra = a->ra;
	out->cfg = &a->cfg;
	out->started = a->started;
	out->started_wall = a->started_wall;
	out->uncached_reads =
		__atomic_load_n(&a->uncached_reads, __ATOMIC_RELAXED);
	out->resident_reads =
		__atomic_load_n(&a->resident_reads, __ATOMIC_RELAXED);
	out->resident_spliced =
		__atomic_load_n(&a->resident_spliced, __ATOMIC_RELAXED);
	out->revalidations =
		__atomic_load_n(&a->revalidations, __ATOMIC_RELAXED);
	afs_pressure_stats(a->pressure, &out->pressure);
	out->idle = __atomic_load_n(&a->nidle, __ATOMIC_RELAXED);
	out->idle_max = afs_ahead_idle_max(a);
	out->revived = __atomic_load_n(&a->revived, __ATOMIC_RELAXED);
	out->revived_changed =
		__atomic_load_n(&a->revived_changed, __ATOMIC_RELAXED);
	out->idle_dropped = __atomic_load_n(&a->idle_dropped, __ATOMIC_RELAXED);
#define WARM_LOAD(f) out->warm.f = __atomic_load_n(&a->warm.f, __ATOMIC_RELAXED)
	WARM_LOAD(files);
	WARM_LOAD(skipped);
	WARM_LOAD(bytes);
	WARM_LOAD(pauses);
	WARM_LOAD(pending);
	WARM_LOAD(checkpoints);
	WARM_LOAD(refused);
#undef WARM_LOAD
	out->watch.mode = a->watch.mode ? a->watch.mode : "off";
#define WATCH_COPY(f)                                                          \
	out->watch.f = __atomic_load_n(&a->watch.f, __ATOMIC_RELAXED)
	WATCH_COPY(events);
	WATCH_COPY(ignored_own);
	WATCH_COPY(ignored_unknown);
	WATCH_COPY(invalidated);
	WATCH_COPY(overflows);
#undef WATCH_COPY
#define BEHIND_COPY(f)                                                         \
	out->behind.f = __atomic_load_n(&a->behind_counts.f, __ATOMIC_RELAXED)
	BEHIND_COPY(pieces);
	BEHIND_COPY(bytes);
	BEHIND_COPY(skipped);
	BEHIND_COPY(failed);
#undef BEHIND_COPY
#define DIRECT_COPY(f)                                                         \
	out->direct.f = __atomic_load_n(&a->direct_counts.f, __ATOMIC_RELAXED)
	DIRECT_COPY(writes);
	DIRECT_COPY(bytes);
	DIRECT_COPY(refused);
#undef DIRECT_COPY
#define PT_COPY(f)                                                             \
	out->passthrough.f =                                                   \
		__atomic_load_n(&a->passthrough.f, __ATOMIC_RELAXED)
	PT_COPY(mode);
	PT_COPY(state);
	PT_COPY(opens);
	PT_COPY(opens_cached);
	PT_COPY(opens_direct);
	PT_COPY(fallback_mount);
	PT_COPY(fallback_inode);
	PT_COPY(fallback_file);
	PT_COPY(fallback_setid);
	PT_COPY(backing_files);
#undef PT_COPY
}

ssize_t afs_stats_size_answer(size_t len)
{
	size_t n = len + AFS_XATTR_SLACK;

	n = (n + AFS_XATTR_ROUND - 1) / AFS_XATTR_ROUND * AFS_XATTR_ROUND;
	return (ssize_t)(n < AFS_XATTR_VALUE_MAX ? n : AFS_XATTR_VALUE_MAX);
}

size_t afs_stats_value_cap(size_t size)
{
	return size < AFS_XATTR_VALUE_MAX ? size : AFS_XATTR_VALUE_MAX;
}

ssize_t afs_stats_get_word(const char *w, char *buf, size_t size)
{
	size_t len = strlen(w);

	if (!size)
		return afs_stats_size_answer(len);
	if (len > size)
		return -ERANGE;
	memcpy(buf, w, len);
	return (ssize_t)len;
}

/* -------------------------------------------------------------------- */
/* Entry points                                                           */

bool afs_xattr_ours(const char *name)
{
	return name && !strncmp(name, PFX, sizeof(PFX) - 1);
}

/* The name's id, N_UNKNOWN if it is ours but not known. */
static enum name_id name_id(const char *name)
{
	const char *rest = name + sizeof(PFX) - 1;

	for (int i = 0; i < N_UNKNOWN; i++)
		if (!strcmp(rest, names[i].name))
			return (enum name_id)i;
	return N_UNKNOWN;
}

/* Whether @id exists on @t's kind of file (a regular file with its cache,
 * or the root). */
static bool name_exists(enum name_id id, const struct afs_xattr_target *t)
{
	if (id == N_UNKNOWN)
		return false;
	if (t->is_root)
		return names[id].on_root;
	return t->is_reg && t->fc && names[id].on_reg;
}

ssize_t afs_xattr_ahead_get(struct afs_ahead *a,
			    const struct afs_xattr_target *t, const char *name,
			    char *buf, size_t size)
{
	enum name_id id;

	if (!afs_xattr_ours(name))
		return -ENODATA;
	id = name_id(name);
	if (!name_exists(id, t))
		return -ENODATA;
	cache_thread_online();
	switch (id) {
	case N_STATS:
		return afs_stats_get(a, t, buf, size);
	case N_MAP:
		return afs_stats_get_map(t, buf, size);
	default:
		return afs_stats_get_tunable(a, t, names[id].tunable, buf,
					     size);
	}
}

int afs_xattr_ahead_set(struct afs_ahead *a, const struct afs_xattr_target *t,
			const char *name, const char *value, size_t size,
			int flags, uid_t caller_uid, uid_t owner_uid)
{
	enum name_id id;

	if (!afs_xattr_ours(name))
		return -ENOTSUP;
	id = name_id(name);
	if (!name_exists(id, t))
		return -ENOTSUP;
	if (id == N_STATS || id == N_MAP)
		return -EPERM;
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	if (flags & XATTR_CREATE)
		return -EEXIST;
	if (id != N_ADVICE && caller_uid != 0 && caller_uid != owner_uid)
		return -EPERM;
	cache_thread_online();
	return afs_stats_set_tunable(a, t, names[id].tunable, value, size);
}

int afs_xattr_ahead_remove(const struct afs_xattr_target *t, const char *name)
{
	if (!afs_xattr_ours(name) || !name_exists(name_id(name), t))
		return -ENODATA;
	return -EPERM;
}

size_t afs_xattr_ahead_filter_list(char *list, size_t len)
{
	size_t in = 0, out = 0;

	while (in < len) {
		char *end = memchr(list + in, '\0', len - in);
		size_t n = end ? (size_t)(end - (list + in)) + 1 : len - in;

		/* A name shorter than the prefix (or cut short) is not
		 * ours: compare within the entry only. */
		if (!(n >= sizeof(PFX) - 1 &&
		      !memcmp(list + in, PFX, sizeof(PFX) - 1))) {
			memmove(list + out, list + in, n);
			out += n;
		}
		in += n;
	}
	return out;
}
