/* watch.c - aheadfs-stat's live views (--watch N).
 *
 * The compact view: one line of rates per path and interval, as vmstat,
 * with a header every screenful.  The full view (--full, or with --json or
 * --map): the table repainted every interval, with each counter's rate
 * against the previous sample.  Both stop after --count lines or refreshes,
 * or at SIGINT or SIGTERM (astat_stop).
 */
#include "astat.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* -------------------------------------------------------------------- */
/* The compact live view (--watch): one line of rates per interval        */

/* What one line is computed from: a value's figures at one time. */
struct wsample {
	double t;
	bool root;
	double hits, served, misses, backing, windows, evictions, thrash;
	double active, queue; /* now; < 0: not shown for this value */
};

static int wsample_read(const char *path, struct wsample *s)
{
	struct json_doc *doc = astat_read_json(path, XATTR_STATS);
	const struct json *r, *streams;

	if (!doc)
		return -1;
	r = doc->root;
	astat_use_schema(r);
	s->t = now_s();
	s->root = astat_is_root_value(r);
	s->hits = astat_field(r, "cache", "hits");
	s->misses = astat_field(r, "cache", "misses");
	s->backing = astat_field(r, "backing", "bytes");
	s->windows = astat_field(r, "readahead", "windows");
	s->thrash = astat_field(r, "cache", "thrash");
	if (s->root) {
		/* the mount counts pages served, not bytes */
		s->served = s->hits * 4096;
		s->evictions = astat_field(r, "cache", "evictions");
		s->active = astat_field(r, "readahead", "workers_busy");
		s->queue = astat_field(r, "readahead", "queue_depth");
	} else {
		s->served = astat_field(r, "cache", "hit_bytes");
		s->evictions = astat_field(r, "cache", "evicted");
		astat_field(r, "", "streams");
		streams = json_get(r, "streams");
		s->active = 0;
		for (const struct json *e = streams ? streams->child : NULL; e;
		     e = e->next) {
			const struct json *st = json_get(e, "state");

			if (st && st->type == JSON_STRING &&
			    !strcmp(st->str, "active"))
				s->active++;
		}
		s->queue = -1;
	}
	json_doc_free(doc);
	return 0;
}

/* @v in at most @w characters: @prec decimals while it fits, then fewer,
 * then with a k, M or G suffix; "-" for a negative (not shown) value. */
static void put_num(char *line, size_t len, double v, int w, int prec)
{
	static const char suffix[] = " kMGTP";
	size_t at = strlen(line);
	char tmp[64];
	int s = 0;

	if (v < 0) {
		snprintf(line + at, len - at, " %*s", w - 1, "-");
		return;
	}
	for (int p = prec; p >= 0; p--) {
		snprintf(tmp, sizeof(tmp), "%.*f", p, v);
		if ((int)strlen(tmp) < w) {
			snprintf(line + at, len - at, " %*s", w - 1, tmp);
			return;
		}
	}
	while (s < 5 && v >= 1000) {
		v /= 1000;
		s++;
	}
	snprintf(tmp, sizeof(tmp), "%.0f%c", v, suffix[s]);
	snprintf(line + at, len - at, " %*s", w - 1, tmp);
}

/* The columns: name (with several paths), then the rates.  Each fits its
 * width with the space before it; the whole line fits 80 columns. */
static const struct {
	const char *head;
	int width, prec;
} wcols[] = {
	{"hit/s", 9, 0},   {"rdMB/s", 8, 1}, {"bkMB/s", 8, 1}, {"hit%", 6, 1},
	{"amp", 6, 2},	   {"win/s", 7, 0},  {"act", 5, 0},    {"qdep", 5, 0},
	{"evict/s", 8, 0}, {"thr/s", 7, 0},
};

/* A rate of a counter over @dt seconds; a counter that went back (a
 * file's figures start again when it is reopened) counts as 0. */
static double rate(double from, double to, double dt)
{
	return to > from ? (to - from) / dt : 0;
}
#define NAME_WIDTH 10

static void watch_header(bool names)
{
	char line[128] = "";

	if (names)
		snprintf(line, sizeof(line), "%-*s", NAME_WIDTH, "path");
	for (size_t i = 0; i < sizeof(wcols) / sizeof(wcols[0]); i++) {
		size_t at = strlen(line);

		snprintf(line + at, sizeof(line) - at, " %*s",
			 wcols[i].width - 1, wcols[i].head);
	}
	puts(line);
}

static void watch_line(const char *path, bool names, const struct wsample *a,
		       const struct wsample *b)
{
	double dt = b->t - a->t > 0 ? b->t - a->t : 1;
	double hits = rate(a->hits, b->hits, 1);
	double misses = rate(a->misses, b->misses, 1);
	double served = rate(a->served, b->served, 1);
	double bk = rate(a->backing, b->backing, 1);
	double v[] = {
		hits / dt,
		served / dt / 1e6,
		bk / dt / 1e6,
		hits + misses > 0 ? 100 * hits / (hits + misses) : -1,
		served > 0 ? bk / served : -1,
		rate(a->windows, b->windows, dt),
		b->active,
		b->queue,
		rate(a->evictions, b->evictions, dt),
		rate(a->thrash, b->thrash, dt),
	};
	char line[160] = "";

	_Static_assert(sizeof(v) / sizeof(v[0]) ==
			       sizeof(wcols) / sizeof(wcols[0]),
		       "one value per column");
	if (names) {
		const char *base = strrchr(path, '/');

		base = base && base[1] ? base + 1 : path;
		snprintf(line, sizeof(line), "%-*.*s", NAME_WIDTH, NAME_WIDTH,
			 base);
	}
	for (size_t i = 0; i < sizeof(wcols) / sizeof(wcols[0]); i++)
		put_num(line, sizeof(line), v[i], wcols[i].width,
			wcols[i].prec);
	puts(line);
}

/* Rows of the terminal (24 when stdout is not one). */
static int terminal_rows(void)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row >= 3)
		return ws.ws_row;
	return 24;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};

	while (!astat_stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int astat_watch_compact(char **paths, int npaths, const struct astat_options *o)
{
	struct wsample *prev = calloc((size_t)npaths, sizeof(*prev));
	struct wsample *cur = calloc((size_t)npaths, sizeof(*cur));
	bool names = npaths > 1;
	long lines = 0, intervals = 0;
	int rc = 0;

	if (!prev || !cur) {
		fprintf(stderr, "aheadfs-stat: out of memory\n");
		free(prev);
		free(cur);
		return 1;
	}
	for (int i = 0; i < npaths && !rc; i++)
		rc = wsample_read(paths[i], &prev[i]) ? 1 : 0;
	while (!rc && !astat_stop && (!o->count || intervals < o->count)) {
		sleep_s(o->watch);
		if (astat_stop)
			break;
		for (int i = 0; i < npaths && !rc; i++) {
			if (wsample_read(paths[i], &cur[i])) {
				rc = 1;
				break;
			}
			/* a header every screenful, as vmstat */
			if (lines % (terminal_rows() - 1) == 0)
				watch_header(names);
			watch_line(paths[i], names, &prev[i], &cur[i]);
			lines++;
			prev[i] = cur[i];
		}
		fflush(stdout);
		intervals++;
	}
	free(prev);
	free(cur);
	return rc;
}

/* The full view: one sample set per path, rates against the last one. */
int astat_watch_full(char **paths, int npaths, const struct astat_options *o)
{
	struct astat_sample *prev = calloc((size_t)npaths, sizeof(*prev));
	struct astat_sample *cur = calloc((size_t)npaths, sizeof(*cur));
	double last = 0;
	int rc = 0;

	if (!prev || !cur) {
		fprintf(stderr, "aheadfs-stat: out of memory\n");
		return 1;
	}
	for (long n = 0; !astat_stop && (!o->count || n < o->count); n++) {
		double t = now_s(), interval = last ? t - last : 0;

		if (!o->json)
			printf("\033[H\033[2J");
		rc = 0;
		for (int i = 0; i < npaths; i++) {
			rc |= astat_show_path(paths[i], o, &prev[i], &cur[i],
					      interval);
			astat_sample_clear(&prev[i]);
			struct astat_sample tmp = prev[i];

			prev[i] = cur[i];
			cur[i] = tmp;
		}
		fflush(stdout);
		last = t;
		if (!o->count || n + 1 < o->count)
			sleep_s(o->watch);
	}
	for (int i = 0; i < npaths; i++) {
		astat_sample_clear(&prev[i]);
		astat_sample_clear(&cur[i]);
	}
	free(prev);
	free(cur);
	return rc;
}
