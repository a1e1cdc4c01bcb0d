/* xattr.c - the user.aheadfs.* names: which exist on which kind of file,
 * the entry points, the size answer, and the one function that reads a
 * file's data-path state (see xattr.h and docs/stats.md).
 *
 * The data path is read through its stats functions (afs_data_stats(),
 * afs_fcache_stats()) and the mount's neighbours through theirs
 * (afs_warm_stats(), afs_watch_stats(), the adapter's passthrough snapshot
 * in the target): afs_stats_aref() gathers the root's.
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

/* What the root's stats read of the mount. */
void afs_stats_aref(const struct afs_data *a, const struct afs_xattr_target *t,
		    struct afs_stats_aref *out)
{
	out->cache = afs_data_cache(a);
	out->ra = afs_data_engine(a);
	out->cfg = afs_data_options(a);
	afs_data_stats(a, &out->d);
	out->pressure = out->d.pressure;
	afs_warm_stats(t->warm, &out->warm);
	afs_watch_stats(t->watch, &out->watch);
	out->passthrough = t->passthrough;
	out->transport = t->transport;
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

ssize_t afs_xattr_ahead_get(struct afs_data *a,
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

int afs_xattr_ahead_set(struct afs_data *a, const struct afs_xattr_target *t,
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
