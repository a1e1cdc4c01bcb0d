/* tune.c - the settable names: a regular file's user.aheadfs.advice and
 * the root's tunables (user.aheadfs.ra_max, context_ra, stream_table).
 *
 * Values are short words, one trailing newline allowed.  Every tunable is
 * read with the owning module's parser: sizes with ra_parse_size() (the
 * grammar of -o ra_max=), words with the setting's name table
 * (ra_name_parse()); the range checks are ra_engine_tune()'s, the same as
 * ra_engine_create()'s for the options.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "stats_internal.h"

/* Longest settable value (tunables and advice are short words). */
#define VALUE_WORD_MAX 64

/* A short word value: copied, NUL-terminated, one trailing newline off.
 * Return: 0 or -EINVAL (too long, empty, or with a NUL or another newline
 * inside). */
static int word_of(const char *value, size_t size, char *w, size_t wlen)
{
	if (size && value[size - 1] == '\n')
		size--;
	if (!size || size >= wlen || memchr(value, '\0', size) ||
	    memchr(value, '\n', size))
		return -EINVAL;
	memcpy(w, value, size);
	w[size] = '\0';
	return 0;
}

/* The name table of a word tunable: the setting's own (ra.h). */
static const char *const *word_names(enum afs_stats_tunable id)
{
	return id == AFS_TUNE_CONTEXT_RA ? ra_context_names
					 : ra_stream_table_names;
}

int afs_stats_set_tunable(struct afs_data *a, const struct afs_xattr_target *t,
			  enum afs_stats_tunable id, const char *value,
			  size_t size)
{
	struct afs_fcache_stats fr;
	struct ra_tuning tune = {0};
	char w[VALUE_WORD_MAX];
	enum ra_advice advice;
	unsigned int what;
	int i, rc;

	rc = word_of(value, size, w, sizeof(w));
	if (rc)
		return rc;
	switch (id) {
	case AFS_TUNE_ADVICE:
		if (ra_advice_parse(w, &advice))
			return -EINVAL;
		afs_fcache_stats(t->fc, &fr);
		return ra_file_advise(fr.raf, advice, 0, 0);
	case AFS_TUNE_RA_MAX:
		if (ra_parse_size(w, &tune.max_bytes))
			return -EINVAL;
		what = RA_TUNE_MAX;
		break;
	case AFS_TUNE_CONTEXT_RA:
	case AFS_TUNE_STREAM_TABLE:
		i = ra_name_parse(word_names(id), w);
		if (i < 0)
			return i;
		/* only the field named by @what is read */
		tune.context = (enum ra_context_rule)i;
		tune.stream_table = (enum ra_stream_table_mode)i;
		what = id == AFS_TUNE_CONTEXT_RA ? RA_TUNE_CONTEXT
						 : RA_TUNE_STREAM_TABLE;
		break;
	default:
		return -ENOTSUP;
	}
	return ra_engine_tune(afs_data_engine(a), &tune, what);
}

ssize_t afs_stats_get_tunable(struct afs_data *a,
			      const struct afs_xattr_target *t,
			      enum afs_stats_tunable id, char *buf, size_t size)
{
	struct afs_fcache_stats fr;
	struct ra_file_stats rs;
	struct ra_tuning tune;
	const char *w;
	char tmp[24];

	ra_engine_tuning(afs_data_engine(a), &tune);
	switch (id) {
	case AFS_TUNE_ADVICE:
		afs_fcache_stats(t->fc, &fr);
		ra_file_stats(fr.raf, &rs);
		w = ra_advice_name(rs.advice);
		return afs_stats_get_word(w ? w : "normal", buf, size);
	case AFS_TUNE_RA_MAX:
		snprintf(tmp, sizeof(tmp), "%" PRIu64, tune.max_bytes);
		return afs_stats_get_word(tmp, buf, size);
	case AFS_TUNE_CONTEXT_RA:
		w = ra_name_of(word_names(id), tune.context);
		break;
	default:
		w = ra_name_of(word_names(id), tune.stream_table);
		break;
	}
	return afs_stats_get_word(w ? w : "unknown", buf, size);
}
