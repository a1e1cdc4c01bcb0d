/* table.c - aheadfs-stat's table of one value: every scalar as a
 * "prefix.name value" line, depth first, with its rate against a previous
 * sample in the full live view; arrays of objects (the streams) as rows;
 * --map's bar after it; or, with --json, the raw values.
 */
#include "astat.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double prev_value(const struct astat_sample *prev, const char *name,
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

static void record(struct astat_sample *cur, const char *name, double v)
{
	if (cur && cur->n < MAX_FIELDS) {
		cur->name[cur->n] = strdup(name);
		if (cur->name[cur->n])
			cur->value[cur->n++] = v;
	}
}

void astat_sample_clear(struct astat_sample *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->name[i]);
	s->n = 0;
}

static void print_scalar(const char *name, const struct json *v,
			 const struct astat_sample *prev,
			 struct astat_sample *cur, double interval)
{
	switch (v->type) {
	case JSON_NUMBER: {
		bool found;
		double old = prev_value(prev, name, &found);

		if (v->is_int)
			printf("  %-34s %20" PRId64, name, v->i64);
		else
			printf("  %-34s %20.3f", name, v->num);
		const struct afs_schema_field *f = astat_row_of(name);

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
			 const struct astat_sample *prev,
			 struct astat_sample *cur, double interval)
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

int astat_show_path(const char *path, const struct astat_options *o,
		    const struct astat_sample *prev, struct astat_sample *cur,
		    double interval)
{
	struct json_doc *doc;

	if (o->json) {
		const char *names[2] = {XATTR_STATS, XATTR_MAP};

		for (int i = 0; i < (o->map ? 2 : 1); i++) {
			char *text;
			size_t len;
			int rc = astat_read_xattr(path, names[i], &text, &len);

			if (rc) {
				astat_report_error(path, names[i], rc);
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
	doc = astat_read_json(path, XATTR_STATS);
	if (!doc)
		return 1;
	printf("%s\n", path);
	astat_use_schema(doc->root);
	if (doc->root->type == JSON_OBJECT)
		print_object("", doc->root, prev, cur, interval);
	json_doc_free(doc);
	if (o->map) {
		doc = astat_read_json(path, XATTR_MAP);
		if (!doc)
			return 1;
		astat_print_map(path, doc->root);
		json_doc_free(doc);
	}
	return 0;
}
