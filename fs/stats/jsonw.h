/* jsonw.h - the daemon's one JSON writer, private to fs/stats: a bounded
 * buffer that counts what does not fit, so that one render both sizes a
 * value (no buffer) and writes it.
 *
 * Keys and string values are fixed ASCII words (the schema's keys, the
 * settings' name tables, the version): nothing is escaped.
 *
 * Concurrency: a writer belongs to one call on one thread.
 */
#ifndef AFS_STATS_JSONW_H
#define AFS_STATS_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct afs_jw {
	char *buf; /* NULL: count only */
	size_t cap;
	size_t len; /* bytes the value needs, stored or not */
};

/* Raw bytes, a string, a number. */
void afs_jw_put(struct afs_jw *o, const char *s, size_t n);
void afs_jw_str(struct afs_jw *o, const char *s);
void afs_jw_u64(struct afs_jw *o, uint64_t v);

/*
 * "key": inside an object, with the comma every member but the first
 * needs (*@first tracks it); then the member's value.  A NULL string value
 * is written as "unknown".
 */
void afs_jw_key(struct afs_jw *o, bool *first, const char *key);
void afs_jw_member_u64(struct afs_jw *o, bool *first, const char *key,
		       uint64_t v);
void afs_jw_member_str(struct afs_jw *o, bool *first, const char *key,
		       const char *v);
/* Three decimals. */
void afs_jw_member_ratio(struct afs_jw *o, bool *first, const char *key,
			 double v);

#endif /* AFS_STATS_JSONW_H */
