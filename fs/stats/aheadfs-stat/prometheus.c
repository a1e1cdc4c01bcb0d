/* prometheus.c - aheadfs-stat --prometheus: the mount's counters and gauges
 * in the Prometheus text exposition format, one metric for each row of the
 * root schema that names one (afs_schema_metric()), to stdout or to a file
 * a collector's textfile reader picks up.
 */
#include "astat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
int astat_prometheus(const char *mount, const char *file)
{
	struct json_doc *doc = astat_read_json(mount, XATTR_STATS);
	char *tmp = NULL;
	FILE *f = stdout;
	int rc;

	if (!doc)
		return 1;
	if (!astat_is_root_value(doc->root)) {
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
