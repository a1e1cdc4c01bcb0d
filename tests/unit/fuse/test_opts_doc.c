/* test_opts_doc.c - the options' documentation says what the option table
 * says: every option --help lists has a paragraph in docs/aheadfs.1 that
 * gives its default as --help does (afs_opts_doc()), and every data path
 * option a row in the option tables of README.md and docs/tuning.md with
 * that default (and any other option those tables show, its default);
 * those tables name no option the table lacks.  A default
 * changed in the code (a macro, afs_opts_init()) or in one document alone
 * fails here.
 *
 * The documents are compared after one normalisation: roff fonts, escapes
 * and macros (.B, .BR, ...) and markdown code marks removed, "×" and
 * "\(mu" written "x", "4 MiB" written "4M" -- as --help writes them.  A man
 * page paragraph (from .TP to the next .TP, .PP, .SS or .SH) is the
 * option's when its tag names it ("ra_max=SIZE", "stripe=SIZE, chunk=SIZE",
 * "clone_fd | no_clone_fd"); its default is written "default X", "default:
 * X" or "X (default".  A table row is the option's when its first cell names
 * it; its second cell starts with the default.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "opts.h"

#include "../slurp.h"

#define MAX_ITEMS 512

/* @path's text; the test fails if it cannot be read. */
static char *doc_text(const char *path)
{
	char *text = slurp(path);

	if (!text)
		fail_msg("cannot read %s", path);
	return text;
}

/* Replace every @from in @s (in place; @to is not longer). */
static void replace(char *s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	char *p = s;

	while ((p = strstr(p, from))) {
		memcpy(p, to, tl);
		memmove(p + tl, p + fl, strlen(p + fl) + 1);
		p += tl;
	}
}

/* The normalisation of the top comment, and runs of blanks made one space,
 * trimmed. */
static void normalise(char *s)
{
	static const char *const pairs[][2] = {
		{"\\fB", ""},	{"\\fI", ""},	{"\\fR", ""},
		{"\\fP", ""},	{"\\(mu", "x"}, {"\\(en", "-"},
		{"\\(em", "-"}, {"\\-", "-"},	{"\\e", "\\"},
		{"\\|", "|"},	{"`", ""},	{"\xc3\x97", "x"},
		{"**", ""},
	};
	static const char *const units[][2] = {
		{" KiB", "K"}, {" MiB", "M"}, {" GiB", "G"}};
	char *w = s;

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		replace(s, pairs[i][0], pairs[i][1]);
	for (size_t i = 0; i < 3; i++)
		for (char *p = s; (p = strstr(p, units[i][0]));)
			if (p > s && p[-1] >= '0' && p[-1] <= '9') {
				*p = units[i][1][0];
				memmove(p + 1, p + 4, strlen(p + 4) + 1);
			} else {
				p++;
			}
	for (char *r = s; *r; r++) {
		bool blank = *r == ' ' || *r == '\t' || *r == '\n';

		if (blank && (w == s || w[-1] == ' '))
			continue;
		*w++ = blank ? ' ' : *r;
	}
	while (w > s && w[-1] == ' ')
		w--;
	*w = '\0';
}

/* Does @list (a tag or a first cell) name option @name: at its start or
 * after a separator, followed by '=', a separator or the end? */
static bool names_option(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; (p = strstr(p, name)); p++) {
		bool start = p == list || strchr(" ,|", p[-1]);
		bool end = !p[n] || strchr("= ,|", p[n]);

		if (start && end)
			return true;
	}
	return false;
}

/* One roff line as text: a font macro's arguments joined (alternating
 * fonts with no space between them), quotes dropped; other macros kept. */
static void roff_line(const char *line, FILE *out)
{
	static const char *const fonts[] = {".B ",  ".I ",  ".BR ", ".BI ",
					    ".IR ", ".RB ", ".RI ", ".IB "};
	const char *args = NULL;
	bool alternate = false;

	for (size_t i = 0; i < sizeof(fonts) / sizeof(fonts[0]); i++)
		if (!strncmp(line, fonts[i], strlen(fonts[i]))) {
			args = line + strlen(fonts[i]);
			alternate = strlen(fonts[i]) == 4;
		}
	if (!args) {
		fprintf(out, "%s\n", line);
		return;
	}
	for (const char *p = args; *p;) {
		while (*p == ' ')
			p++;
		if (*p == '"') {
			const char *q = strchr(p + 1, '"');

			q = q ? q : p + strlen(p);
			fwrite(p + 1, 1, (size_t)(q - p - 1), out);
			p = *q ? q + 1 : q;
		} else {
			size_t n = strcspn(p, " ");

			fwrite(p, 1, n, out);
			p += n;
		}
		if (!alternate && *p)
			fputc(' ', out);
	}
	fputc('\n', out);
}

struct para {
	char *tag, *body;
};

/* docs/aheadfs.1 as paragraphs: each .TP's tag line and what follows it
 * up to the next paragraph macro, normalised. */
static size_t man_paragraphs(const char *path, struct para *out, size_t max)
{
	char *text = doc_text(path), *save = NULL, *line;
	char *body = NULL;
	size_t len = 0, n = 0;
	FILE *m = NULL;
	bool want_tag = false;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		bool breaks =
			!strncmp(line, ".TP", 3) || !strncmp(line, ".PP", 3) ||
			!strncmp(line, ".SS", 3) || !strncmp(line, ".SH", 3);

		if (breaks) {
			if (m) {
				fclose(m);
				normalise(body);
				out[n - 1].body = body;
				m = NULL;
			}
			want_tag = !strncmp(line, ".TP", 3);
			continue;
		}
		if (want_tag) {
			char *tag = NULL;
			size_t tl = 0;
			FILE *t = open_memstream(&tag, &tl);

			roff_line(line, t);
			fclose(t);
			normalise(tag);
			assert_true(n < max);
			out[n++] = (struct para){.tag = tag};
			m = open_memstream(&body, &len);
			want_tag = false;
			continue;
		}
		if (m)
			roff_line(line, m);
	}
	if (m) {
		fclose(m);
		normalise(body);
		out[n - 1].body = body;
	}
	free(text);
	return n;
}

/* The rows of the markdown table headed "| option | default |" in @path:
 * first cell as tag, second as body, normalised.  Cells are split on '|'
 * but for "\|" (a '|' inside a cell). */
static size_t md_rows(const char *path, struct para *out, size_t max)
{
	char *text = doc_text(path), *save = NULL, *line;
	bool in_table = false;
	size_t n = 0;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *cell[3] = {NULL};
		int c = -1;

		if (!strncmp(line, "| option | default |", 20)) {
			in_table = true;
			continue;
		}
		if (!in_table)
			continue;
		if (line[0] != '|') {
			in_table = false;
			continue;
		}
		if (!strncmp(line, "|---", 4))
			continue;
		for (char *p = line; *p && c < 3; p++)
			if (*p == '|' && (p == line || p[-1] != '\\')) {
				*p = '\0';
				if (++c < 3)
					cell[c] = p + 1;
			}
		assert_non_null(cell[1]);
		assert_true(n < max);
		out[n].tag = strdup(cell[0]);
		out[n].body = strdup(cell[1]);
		normalise(out[n].tag);
		normalise(out[n].body);
		n++;
	}
	free(text);
	return n;
}

static void free_paras(struct para *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(p[i].tag);
		free(p[i].body);
	}
}

/* --help's options, their defaults normalised as the documents are. */
static size_t options(struct afs_opt_doc *d, size_t max)
{
	size_t n = 0;

	while (afs_opts_doc(n, &d[n]) == 0) {
		normalise(d[n].def);
		n++;
		assert_true(n < max);
	}
	assert_int_equal(afs_opts_doc(n, &d[n]), -ENOENT);
	return n;
}

static bool says_default(const char *body, const char *def)
{
	char a[300], b[300], c[300];

	snprintf(a, sizeof(a), "default %s", def);
	snprintf(b, sizeof(b), "default: %s", def);
	snprintf(c, sizeof(c), "%s (default", def);
	return strstr(body, a) || strstr(body, b) || strstr(body, c);
}

static void test_man_page(void **state)
{
	static struct afs_opt_doc d[MAX_ITEMS];
	static struct para p[MAX_ITEMS];
	size_t nd = options(d, MAX_ITEMS);
	size_t np =
		man_paragraphs(AFS_SOURCE_DIR "/docs/aheadfs.1", p, MAX_ITEMS);
	int bad = 0;

	(void)state;
	assert_true(nd > 30);
	for (size_t i = 0; i < nd; i++) {
		size_t k = 0;

		while (k < np && !names_option(p[k].tag, d[i].name))
			k++;
		if (k == np) {
			print_error("docs/aheadfs.1: no paragraph for -o %s\n",
				    d[i].name);
			bad++;
		} else if (d[i].def[0] && !says_default(p[k].body, d[i].def)) {
			print_error("docs/aheadfs.1: -o %s: the default is "
				    "not \"%s\" (as --help says) in: %s\n",
				    d[i].name, d[i].def, p[k].body);
			bad++;
		}
	}
	free_paras(p, np);
	assert_int_equal(bad, 0);
}

/* @path's option table against the data path's options, both ways, and
 * the default of every other option the table has a row for. */
static void check_table(const char *path, const char *shown)
{
	static struct afs_opt_doc d[MAX_ITEMS];
	static struct para p[MAX_ITEMS];
	size_t nd = options(d, MAX_ITEMS);
	size_t np = md_rows(path, p, MAX_ITEMS);
	int bad = 0;

	assert_true(np > 10);
	for (size_t i = 0; i < nd; i++) {
		size_t k = 0;

		while (k < np && !names_option(p[k].tag, d[i].name))
			k++;
		if (k == np) {
			/* A daemon option may have a row; a data path one must. */
			if (d[i].data_path) {
				print_error("%s: no row for -o %s\n", shown,
					    d[i].name);
				bad++;
			}
		} else if (strncmp(p[k].body, d[i].def, strlen(d[i].def))) {
			print_error("%s: -o %s: the default is \"%s\", not "
				    "\"%s\" as --help says\n",
				    shown, d[i].name, p[k].body, d[i].def);
			bad++;
		}
	}
	/* Every NAME= of the table is an option --help lists. */
	for (size_t k = 0; k < np; k++)
		for (char *e = strchr(p[k].tag, '='); e;
		     e = strchr(e + 1, '=')) {
			char *b = e;
			size_t i = 0;

			while (b > p[k].tag && !strchr(" ,|", b[-1]))
				b--;
			while (i < nd &&
			       (strlen(d[i].name) != (size_t)(e - b) ||
				strncmp(d[i].name, b, e - b)))
				i++;
			if (i == nd) {
				print_error("%s: \"%s\" is not an option\n",
					    shown, p[k].tag);
				bad++;
			}
		}
	free_paras(p, np);
	assert_int_equal(bad, 0);
}

static void test_readme(void **state)
{
	(void)state;
	check_table(AFS_SOURCE_DIR "/README.md", "README.md");
}

static void test_tuning(void **state)
{
	(void)state;
	check_table(AFS_SOURCE_DIR "/docs/tuning.md", "docs/tuning.md");
}

/* The checks themselves: a default that drifted is caught in each form. */
static void test_checks_catch_drift(void **state)
{
	char man[] = "max(4M, 2 x stripe width), rounded (default 8M; 0: off)";

	(void)state;
	assert_true(says_default(man, "8M"));
	assert_false(says_default(man, "16M"));
	assert_true(says_default("kernel (default): the", "kernel"));
	assert_false(says_default("direct (default): the", "kernel"));
	assert_true(names_option("stripe=SIZE, chunk=SIZE", "chunk"));
	assert_true(names_option("clone_fd | no_clone_fd", "clone_fd"));
	assert_false(names_option("no_clone_fd", "clone_fd"));
	assert_false(names_option("write_behind=SIZE", "write"));
	{
		char s[] =
			"`ra_max=SIZE` | max(4 MiB, 2 \\(mu \\fBstripe\\fR) ";

		normalise(s);
		assert_string_equal(s, "ra_max=SIZE | max(4M, 2 x stripe)");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checks_catch_drift),
		cmocka_unit_test(test_man_page),
		cmocka_unit_test(test_readme),
		cmocka_unit_test(test_tuning),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
