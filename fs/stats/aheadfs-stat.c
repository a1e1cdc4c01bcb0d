/* aheadfs-stat - show what aheadfs's cache and readahead did for files.
 *
 * Reads the xattrs the daemon answers (docs/stats.md):
 *   user.aheadfs.stats  one JSON object (per file, or the whole mount on the
 *                       mount's root directory)
 *   user.aheadfs.map    the cached pages of a file, as runs or a scaled cell
 *                       string
 * and prints a table, a compact live view (--watch: one line of rates per
 * interval, as vmstat; --watch --full: the table again with rates), the
 * cache map as a bar (--map), the raw JSON (--json), or the mount's
 * counters in the Prometheus text format (--prometheus).  The fields are
 * read by the schema the daemon renders them from (fs/stats/schema.h).
 * It only reads: it works as any user who may read the file.
 */
#include "fs/stats/json.h"
#include "fs/stats/schema.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define XATTR_STATS "user.aheadfs.stats"
#define XATTR_MAP "user.aheadfs.map"
#define MAX_FIELDS 512

struct options {
	double watch; /* seconds between refreshes; 0 = once */
	long count; /* --count: lines (or refreshes) to print; 0 = no end */
	bool full; /* --watch repaints the whole table */
	bool map;
	bool json;
	bool prometheus;
	const char *textfile; /* --prometheus=FILE */
};

/* One flattened numeric field ("cache.hits") of a previous sample, for rates. */
struct sample {
	char *name[MAX_FIELDS];
	double value[MAX_FIELDS];
	int n;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: aheadfs-stat [--watch N [--full] [--count K]] [--map] "
		"[--json] PATH...\n"
		"       aheadfs-stat --prometheus[=FILE] MOUNT\n"
		"Show aheadfs cache and readahead statistics for files on an "
		"aheadfs mount\n"
		"(the mount's root directory gives the whole mount).\n\n"
		"  -w, --watch N        one line of rates every N seconds "
		"(fractions allowed)\n"
		"  -f, --full           with --watch: the whole table, with "
		"rates\n"
		"  -c, --count K        with --watch: stop after K lines\n"
		"  -m, --map            draw each file's cached pages as a "
		"bar\n"
		"  -j, --json           print the raw JSON values\n"
		"  -p, --prometheus[=FILE]  the mount's counters in the "
		"Prometheus text format,\n"
		"                       to FILE (written to FILE.tmp, then "
		"renamed) or stdout\n"
		"      --schema         print the field reference of "
		"docs/stats.md\n"
		"  -h, --help           this text\n");
}

/* Reads xattr @name of @path into a NUL-terminated malloc'd buffer.  The
 * daemon keeps a value's size stable between the size query and the read;
 * a value that still grew (another tool's race) is simply read again. */
static int read_xattr(const char *path, const char *name, char **out,
		      size_t *len)
{
	for (int tries = 0; tries < 8; tries++) {
		ssize_t size = getxattr(path, name, NULL, 0);
		char *buf;

		if (size < 0)
			return -errno;
		buf = malloc((size_t)size + 1);
		if (!buf)
			return -ENOMEM;
		ssize_t got = getxattr(path, name, buf, (size_t)size);

		if (got >= 0) {
			buf[got] = '\0';
			*out = buf;
			*len = (size_t)got;
			return 0;
		}
		free(buf);
		if (errno != ERANGE)
			return -errno;
	}
	return -ERANGE;
}

static void report_error(const char *path, const char *name, int rc)
{
	if (rc == -ENODATA || rc == -ENOTSUP)
		fprintf(stderr,
			"aheadfs-stat: %s: not on an aheadfs mount (no %s)\n",
			path, name);
	else
		fprintf(stderr, "aheadfs-stat: %s: %s\n", path, strerror(-rc));
}

static struct json_doc *read_json(const char *path, const char *name)
{
	const char *err;
	size_t off, len;
	char *text;
	int rc = read_xattr(path, name, &text, &len);
	struct json_doc *doc;

	if (rc) {
		report_error(path, name, rc);
		return NULL;
	}
	doc = json_parse(text, len, &err, &off);
	if (!doc)
		fprintf(stderr,
			"aheadfs-stat: %s: %s is not valid JSON (%s at byte "
			"%zu)\n",
			path, name, err, off);
	free(text);
	return doc;
}

static double prev_value(const struct sample *prev, const char *name,
			 bool *found)
{
	for (int i = 0; prev && i < prev->n; i++)
		if (!strcmp(prev->name[i], name)) {
			*found = true;
			return prev->value[i];
		}
	*found = false;
	return 0;
}

static void record(struct sample *cur, const char *name, double v)
{
	if (cur && cur->n < MAX_FIELDS) {
		cur->name[cur->n] = strdup(name);
		if (cur->name[cur->n])
			cur->value[cur->n++] = v;
	}
}

static void sample_clear(struct sample *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->name[i]);
	s->n = 0;
}

/* The schema of the value being printed (the root's or a file's). */
static const struct afs_schema_field *schema;
static size_t schema_n;

/* Whether @doc is the mount's (the root's members are the root schema's). */
static bool is_root_value(const struct json *doc)
{
	return json_get(doc, "options") != NULL;
}

static void use_schema(const struct json *doc)
{
	bool root = is_root_value(doc);

	schema = root ? afs_schema_root : afs_schema_file;
	schema_n = root ? afs_schema_root_n : afs_schema_file_n;
}

/* The schema's row for the flattened @name ("cache.hits"), or NULL. */
static const struct afs_schema_field *row_of(const char *name)
{
	const char *dot = strchr(name, '.');
	char obj[64];

	if (!dot)
		return afs_schema_find(schema, schema_n, "", name);
	if ((size_t)(dot - name) >= sizeof(obj))
		return NULL;
	memcpy(obj, name, (size_t)(dot - name));
	obj[dot - name] = '\0';
	if (strchr(dot + 1, '.')) /* readahead.decisions.KIND */
		return afs_schema_find(schema, schema_n, obj, "decisions");
	return afs_schema_find(schema, schema_n, obj, dot + 1);
}

static void print_scalar(const char *name, const struct json *v,
			 const struct sample *prev, struct sample *cur,
			 double interval)
{
	switch (v->type) {
	case JSON_NUMBER: {
		bool found;
		double old = prev_value(prev, name, &found);

		if (v->is_int)
			printf("  %-34s %20" PRId64, name, v->i64);
		else
			printf("  %-34s %20.3f", name, v->num);
		const struct afs_schema_field *f = row_of(name);

		/* rates of what counts, not of the state now */
		if (found && interval > 0 && v->num != old &&
		    (!f || f->kind != AFS_STAT_GAUGE))
			printf("  %+12.1f/s", (v->num - old) / interval);
		putchar('\n');
		record(cur, name, v->num);
		break;
	}
	case JSON_STRING:
		printf("  %-34s %20s\n", name, v->str);
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		printf("  %-34s %20s\n", name,
		       v->type == JSON_TRUE ? "yes" : "no");
		break;
	case JSON_NULL:
		printf("  %-34s %20s\n", name, "-");
		break;
	default:
		break;
	}
}

/* An array of objects (the streams) is a small table: one row an element,
 * the first element's member names as the header. */
static void print_rows(const char *name, const struct json *arr)
{
	const struct json *first = arr->child;

	printf("  %s: %zu\n", name, arr->count);
	if (!first || first->type != JSON_OBJECT) {
		for (const struct json *e = first; e; e = e->next)
			if (e->type == JSON_NUMBER)
				printf("    %g\n", e->num);
			else if (e->type == JSON_STRING)
				printf("    %s\n", e->str);
		return;
	}
	printf("   ");
	for (const struct json *m = first->child; m; m = m->next)
		printf(" %12s", m->key);
	putchar('\n');
	for (const struct json *e = first; e; e = e->next) {
		printf("   ");
		for (const struct json *m = e->child; m; m = m->next) {
			if (m->type == JSON_NUMBER && m->is_int)
				printf(" %12" PRId64, m->i64);
			else if (m->type == JSON_NUMBER)
				printf(" %12.3f", m->num);
			else if (m->type == JSON_STRING)
				printf(" %12s", m->str);
			else
				printf(" %12s", "-");
		}
		putchar('\n');
	}
}

/* Prints @obj's scalars as "prefix.name value [rate]" lines, depth first. */
static void print_object(const char *prefix, const struct json *obj,
			 const struct sample *prev, struct sample *cur,
			 double interval)
{
	char name[256];

	for (const struct json *m = obj->child; m; m = m->next) {
		snprintf(name, sizeof(name), "%s%s%s", prefix,
			 *prefix ? "." : "", m->key);
		if (m->type == JSON_OBJECT)
			print_object(name, m, prev, cur, interval);
		else if (m->type == JSON_ARRAY)
			print_rows(name, m);
		else
			print_scalar(name, m, prev, cur, interval);
	}
}

static double num_or(const struct json *obj, const char *key, double dflt)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_NUMBER ? v->num : dflt;
}

static int terminal_width(void)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

/* Fills frac[0..width) with the cached fraction of each column's pages. */
static int map_fractions(const struct json *map, double *frac, int width)
{
	double pages = num_or(map, "file_pages", -1);
	const struct json *runs = json_get(map, "runs");
	const struct json *cells = json_get(map, "cells");
	double per_col;

	if (pages < 0)
		return -EINVAL;
	for (int i = 0; i < width; i++)
		frac[i] = 0;
	if (pages == 0)
		return 0;
	per_col = pages / width;
	if (runs && runs->type == JSON_ARRAY) {
		for (const struct json *r = runs->child; r; r = r->next) {
			if (r->type != JSON_ARRAY || r->count != 2)
				return -EINVAL;
			double s = r->child->num, e = s + r->child->next->num;

			/* Spread the run over the columns it covers. */
			for (int c = (int)(s / per_col); c < width; c++) {
				double lo = c * per_col, hi = lo + per_col;
				double a = s > lo ? s : lo, b = e < hi ? e : hi;

				if (a >= e)
					break;
				if (b > a)
					frac[c] += (b - a) / per_col;
			}
		}
		return 0;
	}
	if (cells && cells->type == JSON_STRING) {
		size_t n = strlen(cells->str);

		if (!n)
			return 0;
		for (int c = 0; c < width; c++) {
			/* Average the cells that fall into this column. */
			size_t a = (size_t)((double)c * n / width);
			size_t b = (size_t)((double)(c + 1) * n / width);
			double sum = 0;

			if (b <= a)
				b = a + 1;
			for (size_t i = a; i < b && i < n; i++) {
				int d = cells->str[i] - '0';

				if (d < 0 || d > 8)
					return -EINVAL;
				sum += d / 8.0;
			}
			frac[c] = sum / (double)(b - a);
		}
		return 0;
	}
	return -EINVAL;
}

static void print_map(const char *path, const struct json *map)
{
	int width = terminal_width() - 4;
	double *frac;
	static const char levels[] = " .:+#";

	if (width > 200)
		width = 200;
	frac = calloc((size_t)width, sizeof(*frac));
	if (!frac)
		return;
	if (map_fractions(map, frac, width)) {
		fprintf(stderr, "aheadfs-stat: %s: malformed %s value\n", path,
			XATTR_MAP);
		free(frac);
		return;
	}
	printf("  cached %.0f of %.0f pages\n  [",
	       num_or(map, "cached_pages", 0), num_or(map, "file_pages", 0));
	for (int c = 0; c < width; c++) {
		double f = frac[c] > 1 ? 1 : frac[c];
		int l = f <= 0 ? 0 : f >= 0.999 ? 4 : 1 + (int)(f * 3);

		putchar(levels[l > 4 ? 4 : l]);
	}
	printf("]\n");
	free(frac);
}

static int show_path(const char *path, const struct options *o,
		     const struct sample *prev, struct sample *cur,
		     double interval)
{
	struct json_doc *doc;

	if (o->json) {
		const char *names[2] = {XATTR_STATS, XATTR_MAP};

		for (int i = 0; i < (o->map ? 2 : 1); i++) {
			char *text;
			size_t len;
			int rc = read_xattr(path, names[i], &text, &len);

			if (rc) {
				report_error(path, names[i], rc);
				return 1;
			}
			while (len &&
			       (text[len - 1] == ' ' || text[len - 1] == '\n'))
				text[--len] = '\0';
			printf("%s\n", text);
			free(text);
		}
		return 0;
	}
	doc = read_json(path, XATTR_STATS);
	if (!doc)
		return 1;
	printf("%s\n", path);
	use_schema(doc->root);
	if (doc->root->type == JSON_OBJECT)
		print_object("", doc->root, prev, cur, interval);
	json_doc_free(doc);
	if (o->map) {
		doc = read_json(path, XATTR_MAP);
		if (!doc)
			return 1;
		print_map(path, doc->root);
		json_doc_free(doc);
	}
	return 0;
}

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

/* Field @key of member @obj ("" for the top) of @doc, looked up through
 * the schema, so that a column cannot name a field the daemon does not
 * render. */
static double field(const struct json *doc, const char *obj, const char *key)
{
	const struct json *o = *obj ? json_get(doc, obj) : doc;

	if (!afs_schema_find(schema, schema_n, obj, key)) {
		fprintf(stderr, "aheadfs-stat: no field %s%s%s in the schema\n",
			obj, *obj ? "." : "", key);
		exit(1);
	}
	return num_or(o, key, 0);
}

static int wsample_read(const char *path, struct wsample *s)
{
	struct json_doc *doc = read_json(path, XATTR_STATS);
	const struct json *r, *streams;

	if (!doc)
		return -1;
	r = doc->root;
	use_schema(r);
	s->t = now_s();
	s->root = is_root_value(r);
	s->hits = field(r, "cache", "hits");
	s->misses = field(r, "cache", "misses");
	s->backing = field(r, "backing", "bytes");
	s->windows = field(r, "readahead", "windows");
	s->thrash = field(r, "cache", "thrash");
	if (s->root) {
		/* the mount counts pages served, not bytes */
		s->served = s->hits * 4096;
		s->evictions = field(r, "cache", "evictions");
		s->active = field(r, "readahead", "workers_busy");
		s->queue = field(r, "readahead", "queue_depth");
	} else {
		s->served = field(r, "cache", "hit_bytes");
		s->evictions = field(r, "cache", "evicted");
		field(r, "", "streams");
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

	while (!stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int watch_compact(char **paths, int npaths, const struct options *o)
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
	while (!rc && !stop && (!o->count || intervals < o->count)) {
		sleep_s(o->watch);
		if (stop)
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

/* -------------------------------------------------------------------- */
/* Prometheus text exposition (--prometheus)                              */

/* @s as a label value: backslash, double quote and newline escaped. */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
}

static void put_sample(FILE *f, const char *name, const char *mount,
		       const char *kind, const struct json *v)
{
	fprintf(f, "%s{mount=\"", name);
	put_label(f, mount);
	fputc('"', f);
	if (kind)
		fprintf(f, ",kind=\"%s\"", kind);
	if (v->is_int)
		fprintf(f, "} %" PRId64 "\n", v->i64);
	else
		fprintf(f, "} %.17g\n", v->num);
}

static int prometheus_write(FILE *f, const char *mount, const struct json *r)
{
	char name[128];

	for (size_t i = 0; i < afs_schema_root_n; i++) {
		const struct afs_schema_field *fd = &afs_schema_root[i];
		const struct json *o = *fd->obj ? json_get(r, fd->obj) : r;
		const struct json *v = json_get(o, fd->key);
		bool counter = fd->kind == AFS_STAT_COUNTER ||
			       fd->kind == AFS_STAT_DECISIONS;

		if (afs_schema_metric(fd, name, sizeof(name)))
			continue; /* not a metric */
		if (!v ||
		    (fd->kind == AFS_STAT_DECISIONS ? v->type != JSON_OBJECT
						    : v->type != JSON_NUMBER)) {
			fprintf(stderr,
				"aheadfs-stat: %s: no number %s%s%s in the "
				"stats\n",
				mount, fd->obj, *fd->obj ? "." : "", fd->key);
			return -EINVAL;
		}
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, fd->help, name,
			counter ? "counter" : "gauge");
		if (fd->kind != AFS_STAT_DECISIONS) {
			put_sample(f, name, mount, NULL, v);
			continue;
		}
		for (int k = 0; afs_schema_kinds[k]; k++) {
			const struct json *d = json_get(v, afs_schema_kinds[k]);

			if (d && d->type == JSON_NUMBER)
				put_sample(f, name, mount, afs_schema_kinds[k],
					   d);
		}
	}
	return ferror(f) ? -EIO : 0;
}

/* The mount's metrics to stdout, or to @file through @file.tmp and
 * rename(2), so that a collector never reads half a file. */
static int prometheus(const char *mount, const char *file)
{
	struct json_doc *doc = read_json(mount, XATTR_STATS);
	char *tmp = NULL;
	FILE *f = stdout;
	int rc;

	if (!doc)
		return 1;
	if (!is_root_value(doc->root)) {
		fprintf(stderr,
			"aheadfs-stat: %s: --prometheus shows the mount's "
			"counters only: give the mount's root directory\n",
			mount);
		json_doc_free(doc);
		return 1;
	}
	if (file) {
		if (asprintf(&tmp, "%s.tmp", file) < 0 ||
		    !(f = fopen(tmp, "w"))) {
			fprintf(stderr, "aheadfs-stat: %s.tmp: %s\n", file,
				strerror(errno));
			free(tmp);
			json_doc_free(doc);
			return 1;
		}
	}
	rc = prometheus_write(f, mount, doc->root);
	json_doc_free(doc);
	if (!file)
		return rc ? 1 : fflush(stdout) ? 1 : 0;
	if (fflush(f) || fsync(fileno(f)))
		rc = rc ? rc : -errno;
	if (fclose(f))
		rc = rc ? rc : -errno;
	if (!rc && rename(tmp, file))
		rc = -errno;
	if (rc) {
		fprintf(stderr, "aheadfs-stat: %s: %s\n", file, strerror(-rc));
		unlink(tmp);
	}
	free(tmp);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"watch", required_argument, NULL, 'w'},
		{"full", no_argument, NULL, 'f'},
		{"count", required_argument, NULL, 'c'},
		{"prometheus", optional_argument, NULL, 'p'},
		{"schema", no_argument, NULL, 'S'},
		{"map", no_argument, NULL, 'm'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct options o = {0};
	int c, npaths, rc = 0;

	while ((c = getopt_long(argc, argv, "w:fc:p::mjh", longopts, NULL)) !=
	       -1) {
		char *end;

		switch (c) {
		case 'w':
			errno = 0;
			o.watch = strtod(optarg, &end);
			if (errno || *end || !(o.watch > 0) ||
			    o.watch > 86400) {
				fprintf(stderr,
					"aheadfs-stat: --watch takes seconds "
					"between 0 and 86400, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'f':
			o.full = true;
			break;
		case 'c':
			errno = 0;
			o.count = strtol(optarg, &end, 10);
			if (errno || *end || o.count < 1) {
				fprintf(stderr,
					"aheadfs-stat: --count takes a "
					"positive number, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'p':
			o.prometheus = true;
			o.textfile = optarg;
			break;
		case 'S':
			return afs_schema_doc(stdout) ? 1 : 0;
		case 'm':
			o.map = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	npaths = argc - optind;
	if (npaths < 1 || (o.prometheus && (npaths != 1 || o.watch)) ||
	    ((o.full || o.count) && !o.watch)) {
		usage(stderr);
		return 2;
	}
	if (o.prometheus)
		return prometheus(argv[optind], o.textfile);

	if (!o.watch) {
		for (int i = optind; i < argc; i++)
			rc |= show_path(argv[i], &o, NULL, NULL, 0);
		return rc;
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!o.full && !o.json && !o.map)
		return watch_compact(argv + optind, npaths, &o);

	/* The full view: one sample set per path, rates against the last
	 * one. */
	struct sample *prev = calloc((size_t)npaths, sizeof(*prev));
	struct sample *cur = calloc((size_t)npaths, sizeof(*cur));
	double last = 0;

	if (!prev || !cur) {
		fprintf(stderr, "aheadfs-stat: out of memory\n");
		return 1;
	}
	for (long n = 0; !stop && (!o.count || n < o.count); n++) {
		double t = now_s(), interval = last ? t - last : 0;

		if (!o.json)
			printf("\033[H\033[2J");
		rc = 0;
		for (int i = 0; i < npaths; i++) {
			rc |= show_path(argv[optind + i], &o, &prev[i], &cur[i],
					interval);
			sample_clear(&prev[i]);
			struct sample tmp = prev[i];

			prev[i] = cur[i];
			cur[i] = tmp;
		}
		fflush(stdout);
		last = t;
		if (!o.count || n + 1 < o.count)
			sleep_s(o.watch);
	}
	for (int i = 0; i < npaths; i++) {
		sample_clear(&prev[i]);
		sample_clear(&cur[i]);
	}
	free(prev);
	free(cur);
	return rc;
}
