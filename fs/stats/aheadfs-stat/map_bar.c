/* map_bar.c - aheadfs-stat --map: a file's cached pages (its
 * user.aheadfs.map value, runs or a scaled cell string) drawn as a bar as
 * wide as the terminal, each column's character by the cached fraction of
 * its pages.
 */
#include "astat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

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
	double pages = astat_num_or(map, "file_pages", -1);
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

void astat_print_map(const char *path, const struct json *map)
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
	       astat_num_or(map, "cached_pages", 0),
	       astat_num_or(map, "file_pages", 0));
	for (int c = 0; c < width; c++) {
		double f = frac[c] > 1 ? 1 : frac[c];
		int l = f <= 0 ? 0 : f >= 0.999 ? 4 : 1 + (int)(f * 3);

		putchar(levels[l > 4 ? 4 : l]);
	}
	printf("]\n");
	free(frac);
}
