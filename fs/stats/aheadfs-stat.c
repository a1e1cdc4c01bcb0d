/* aheadfs-stat - show what aheadfs's cache and readahead did for files.
 *
 * Reads the xattrs the daemon answers (docs/stats.md):
 *   user.aheadfs.stats  one JSON object (per file, or the whole mount on the
 *                       mount's root directory)
 *   user.aheadfs.map    the cached pages of a file, as runs or a scaled cell
 *                       string
 * and prints a table, a live view (--watch, with rates), the cache map as a
 * bar (--map), or the raw JSON (--json).  It only reads: it works as any
 * user who may read the file.
 */
#include "fs/stats/json.h"

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
	bool map;
	bool json;
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
	fprintf(f, "Usage: aheadfs-stat [--watch N] [--map] [--json] PATH...\n"
		   "Show aheadfs cache and readahead statistics for files on "
		   "an aheadfs mount\n"
		   "(the mount's root directory gives the whole mount).\n\n"
		   "  -w, --watch N  refresh every N seconds (fractions "
		   "allowed) with rates\n"
		   "  -m, --map      draw each file's cached pages as a bar\n"
		   "  -j, --json     print the raw JSON values\n"
		   "  -h, --help     this text\n");
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
		if (found && interval > 0 && v->num != old)
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

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"watch", required_argument, NULL, 'w'},
		{"map", no_argument, NULL, 'm'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct options o = {0};
	int c, npaths, rc = 0;

	while ((c = getopt_long(argc, argv, "w:mjh", longopts, NULL)) != -1) {
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
	if (npaths < 1) {
		usage(stderr);
		return 2;
	}

	if (!o.watch) {
		for (int i = optind; i < argc; i++)
			rc |= show_path(argv[i], &o, NULL, NULL, 0);
		return rc;
	}

	/* Live view: one sample set per path, rates against the last one. */
	struct sample *prev = calloc((size_t)npaths, sizeof(*prev));
	struct sample *cur = calloc((size_t)npaths, sizeof(*cur));
	double last = 0;

	if (!prev || !cur) {
		fprintf(stderr, "aheadfs-stat: out of memory\n");
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop) {
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
		struct timespec ts = {(time_t)o.watch,
				      (long)((o.watch - floor(o.watch)) * 1e9)};

		while (!stop && nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	for (int i = 0; i < npaths; i++) {
		sample_clear(&prev[i]);
		sample_clear(&cur[i]);
	}
	free(prev);
	free(cur);
	return rc;
}
