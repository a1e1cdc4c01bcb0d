/* schema.c - the schema's tables, metric names and the documentation table
 * (see schema.h). */
#include "fs/stats/schema.h"
#include "ra/ra.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define ROW(obj, key, kind, help) {#obj, #key, AFS_STAT_##kind, help},

const struct afs_schema_field afs_schema_file[] = {AFS_SCHEMA_FILE(ROW)};
const struct afs_schema_field afs_schema_stream[] = {AFS_SCHEMA_STREAM(ROW)};
const struct afs_schema_field afs_schema_root[] = {AFS_SCHEMA_ROOT(ROW)};

#define LEN(t) (sizeof(t) / sizeof((t)[0]))
const size_t afs_schema_file_n = LEN(afs_schema_file);
const size_t afs_schema_stream_n = LEN(afs_schema_stream);
const size_t afs_schema_root_n = LEN(afs_schema_root);

/* The decision kinds are ra's (ra_kind_names), "none" left out. */
const char *const *const afs_schema_kinds = &ra_kind_names[RA_KIND_INITIAL];

const char *afs_stat_kind_name(enum afs_stat_kind kind)
{
	static const char *const names[] = {
		[AFS_STAT_COUNTER] = "counter",
		[AFS_STAT_GAUGE] = "gauge",
		[AFS_STAT_TEXT] = "text",
		[AFS_STAT_RATIO] = "ratio",
		[AFS_STAT_DECISIONS] = "counters by kind",
		[AFS_STAT_STREAMS] = "array",
	};

	return (unsigned int)kind < LEN(names) ? names[kind] : "unknown";
}

int afs_schema_metric(const struct afs_schema_field *f, char *buf, size_t len)
{
	bool total =
		f->kind == AFS_STAT_COUNTER || f->kind == AFS_STAT_DECISIONS;
	int n;

	if (f->kind == AFS_STAT_TEXT || f->kind == AFS_STAT_STREAMS)
		return -ENOENT;
	n = snprintf(buf, len, "aheadfs_%s%s%s%s", f->obj, *f->obj ? "_" : "",
		     f->key, total ? "_total" : "");
	return n < 0 || (size_t)n >= len ? -ERANGE : 0;
}

const struct afs_schema_field *
afs_schema_find(const struct afs_schema_field *table, size_t n, const char *obj,
		const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(table[i].obj, obj) && !strcmp(table[i].key, key))
			return &table[i];
	return NULL;
}

/* One table of the reference: "| `path` | kind | metric |" rows. */
static void doc_table(FILE *out, const struct afs_schema_field *t, size_t n,
		      const char *prefix, bool metrics)
{
	char metric[128];

	fprintf(out,
		metrics ? "| field | kind | Prometheus metric | meaning |\n"
			  "|-------|------|-------------------|---------|\n"
			: "| field | kind | meaning |\n"
			  "|-------|------|---------|\n");
	for (size_t i = 0; i < n; i++) {
		const struct afs_schema_field *f = &t[i];

		fprintf(out, "| `%s%s%s%s` | %s |", prefix, f->obj,
			*f->obj ? "." : "", f->key,
			afs_stat_kind_name(f->kind));
		if (metrics) {
			if (afs_schema_metric(f, metric, sizeof(metric)))
				fprintf(out, " |");
			else if (f->kind == AFS_STAT_DECISIONS)
				fprintf(out, " `%s{kind=\"KIND\"}` |", metric);
			else
				fprintf(out, " `%s` |", metric);
		}
		fprintf(out, " %s |\n", f->help);
	}
}

int afs_schema_doc(FILE *out)
{
	fprintf(out,
		"The mount's root directory (the Prometheus metrics of "
		"`aheadfs-stat --prometheus`\ncarry a `mount` label):\n\n");
	doc_table(out, afs_schema_root, afs_schema_root_n, "", true);
	fprintf(out, "\nA regular file:\n\n");
	doc_table(out, afs_schema_file, afs_schema_file_n, "", false);
	fprintf(out, "\nEach element of a file's `streams`:\n\n");
	doc_table(out, afs_schema_stream, afs_schema_stream_n, "streams[].",
		  false);
	fprintf(out, "\nThe decision kinds (`readahead.decisions.KIND`, the "
		     "`kind` label):");
	for (int i = 0; afs_schema_kinds[i]; i++)
		fprintf(out, " `%s`", afs_schema_kinds[i]);
	fprintf(out, ".\n");
	return ferror(out) ? -EIO : 0;
}
