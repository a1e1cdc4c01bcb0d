/* settings.c - the engine's settings vocabulary: the name tables of its
 * enums (the per-file advice's too), the one name parser and the one size
 * parser (see ra.h, "Settings"), and the names of the decision kinds.
 * Pure functions over constant tables: any thread.
 */
#include "ra/ra.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

const char *const ra_context_names[] = {
	[RA_CONTEXT_CONSERVATIVE] = "on",
	[RA_CONTEXT_LOOSE] = "loose",
	[RA_CONTEXT_OFF] = "off",
	NULL,
};

const char *const ra_stream_table_names[] = {
	[RA_STREAM_TABLE_ON] = "on",
	[RA_STREAM_TABLE_OFF] = "off",
	NULL,
};

const char *const ra_backing_io_names[] = {
	[RA_BACKING_IO_AUTO] = "auto",
	[RA_BACKING_IO_DIRECT] = "direct",
	[RA_BACKING_IO_BUFFERED] = "buffered",
	NULL,
};

static const char *const advice_names[] = {
	[RA_ADVICE_NORMAL] = "normal",
	[RA_ADVICE_SEQUENTIAL] = "sequential",
	[RA_ADVICE_RANDOM] = "random",
	[RA_ADVICE_WILLNEED] = "willneed",
	[RA_ADVICE_DONTNEED] = "dontneed",
	NULL,
};

static const char *const stream_state_names[] = {
	"", /* free slots are not listed */
	[RA_STREAM_STATS_CANDIDATE] = "candidate",
	[RA_STREAM_STATS_ACTIVE] = "active",
	NULL,
};

int ra_name_parse(const char *const *names, const char *s)
{
	if (!names || !s)
		return -EINVAL;
	for (int i = 0; names[i]; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -EINVAL;
}

const char *ra_name_of(const char *const *names, unsigned int v)
{
	for (unsigned int i = 0; names && names[i]; i++)
		if (i == v)
			return names[i];
	return NULL;
}

const char *ra_advice_name(enum ra_advice advice)
{
	return ra_name_of(advice_names, (unsigned int)advice);
}

int ra_advice_parse(const char *s, enum ra_advice *out)
{
	char w[16];
	size_t n;
	int i;

	if (!s)
		return -EINVAL;
	n = strlen(s);
	if (n && s[n - 1] == '\n')
		n--;
	if (n >= sizeof(w))
		return -EINVAL;
	memcpy(w, s, n);
	w[n] = '\0';
	i = ra_name_parse(advice_names, w);
	if (i < 0)
		return i;
	*out = (enum ra_advice)i;
	return 0;
}

const char *ra_stream_state_name(enum ra_stream_stats_state state)
{
	if (state != RA_STREAM_STATS_CANDIDATE &&
	    state != RA_STREAM_STATS_ACTIVE)
		return NULL;
	return stream_state_names[state];
}

const char *ra_backing_io_name(enum ra_backing_io m)
{
	const char *n = ra_name_of(ra_backing_io_names, (unsigned int)m);

	return n ? n : "unknown";
}

unsigned int ra_workers_of(const struct ra_config *cfg)
{
	return cfg->workers ? cfg->workers : RA_WORKERS_DEFAULT;
}

int ra_parse_size(const char *s, uint64_t *out)
{
	static const char suffixes[] = "kmgt";
	uint64_t v = 0, mult = 1;
	const char *p = s;

	if (!s || !out)
		return -EINVAL;
	if (!isdigit((unsigned char)*p))
		return -EINVAL; /* empty, sign, space */
	for (; isdigit((unsigned char)*p); p++) {
		unsigned int d = (unsigned int)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	/* K, M, G, T: powers of 1024, either case */
	if (*p && strchr(suffixes, tolower((unsigned char)*p))) {
		mult = 1ull
		       << (10 *
			   (1 + (strchr(suffixes, tolower((unsigned char)*p)) -
				 suffixes)));
		p++;
	} else if (*p && *p != 'b' && *p != 'B') {
		return -EINVAL;
	}
	/* Optional unit: "B" after a plain number, "B" or "iB" after K/M/G/T. */
	if (mult > 1 && *p == 'i') {
		p++;
		if (*p != 'B' && *p != 'b')
			return -EINVAL;
	}
	if (*p == 'B' || *p == 'b')
		p++;
	if (*p)
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

const char *const ra_kind_names[RA_KIND_COUNT + 1] = {
	[RA_KIND_NONE] = "none",
	[RA_KIND_INITIAL] = "initial",
	[RA_KIND_OVERSIZE] = "oversize",
	[RA_KIND_SEQ_MISS] = "seq_miss",
	[RA_KIND_CONTEXT] = "context",
	[RA_KIND_RANDOM] = "random",
	[RA_KIND_ASYNC] = "async",
	[RA_KIND_ASYNC_RECOVER] = "async_recover",
	[RA_KIND_ASYNC_GIVEUP] = "async_giveup",
	[RA_KIND_STREAM_SEQ] = "stream_seq",
	[RA_KIND_STREAM_AHEAD] = "stream_ahead",
	[RA_KIND_STREAM_REFILL] = "stream_refill",
	[RA_KIND_STREAM_BEHIND] = "stream_behind",
	[RA_KIND_STREAM_ASYNC] = "stream_async",
	[RA_KIND_COUNT] = NULL,
};

const char *ra_kind_name(enum ra_kind kind)
{
	if ((unsigned int)kind >= RA_KIND_COUNT)
		return "unknown";
	return ra_kind_names[kind];
}
