/* jsonw.c - the JSON writer (see jsonw.h). */
#include "jsonw.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void afs_jw_put(struct afs_jw *o, const char *s, size_t n)
{
	if (o->buf && o->len < o->cap) {
		size_t room = o->cap - o->len;

		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

void afs_jw_str(struct afs_jw *o, const char *s)
{
	afs_jw_put(o, s, strlen(s));
}

void afs_jw_u64(struct afs_jw *o, uint64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);

	afs_jw_put(o, tmp, (size_t)n);
}

void afs_jw_key(struct afs_jw *o, bool *first, const char *key)
{
	afs_jw_str(o, *first ? "\"" : ", \"");
	*first = false;
	afs_jw_str(o, key);
	afs_jw_str(o, "\": ");
}

void afs_jw_member_u64(struct afs_jw *o, bool *first, const char *key,
		       uint64_t v)
{
	afs_jw_key(o, first, key);
	afs_jw_u64(o, v);
}

void afs_jw_member_str(struct afs_jw *o, bool *first, const char *key,
		       const char *v)
{
	afs_jw_key(o, first, key);
	afs_jw_str(o, "\"");
	afs_jw_str(o, v ? v : "unknown");
	afs_jw_str(o, "\"");
}

void afs_jw_member_ratio(struct afs_jw *o, bool *first, const char *key,
			 double v)
{
	char tmp[48];
	int n = snprintf(tmp, sizeof(tmp), "%.3f", v);

	afs_jw_key(o, first, key);
	afs_jw_put(o, tmp, (size_t)n);
}
