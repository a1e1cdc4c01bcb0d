/* fetch.c - aheadfs-stat's reads: the user.aheadfs.* values through
 * getxattr(2), parsed as JSON (fs/stats/json.h), and the schema they
 * follow (fs/stats/schema.h), through which every field is looked up.
 */
#include "astat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

/* Reads xattr @name of @path into a NUL-terminated malloc'd buffer.  The
 * daemon keeps a value's size stable between the size query and the read;
 * a value that still grew (another tool's race) is simply read again. */
int astat_read_xattr(const char *path, const char *name, char **out,
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

void astat_report_error(const char *path, const char *name, int rc)
{
	if (rc == -ENODATA || rc == -ENOTSUP)
		fprintf(stderr,
			"aheadfs-stat: %s: not on an aheadfs mount (no %s)\n",
			path, name);
	else
		fprintf(stderr, "aheadfs-stat: %s: %s\n", path, strerror(-rc));
}

struct json_doc *astat_read_json(const char *path, const char *name)
{
	const char *err;
	size_t off, len;
	char *text;
	int rc = astat_read_xattr(path, name, &text, &len);
	struct json_doc *doc;

	if (rc) {
		astat_report_error(path, name, rc);
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

/* The schema of the value being printed (the root's or a file's). */
static const struct afs_schema_field *schema;
static size_t schema_n;

/* Whether @doc is the mount's (the root's members are the root schema's). */
bool astat_is_root_value(const struct json *doc)
{
	return json_get(doc, "options") != NULL;
}

void astat_use_schema(const struct json *doc)
{
	bool root = astat_is_root_value(doc);

	schema = root ? afs_schema_root : afs_schema_file;
	schema_n = root ? afs_schema_root_n : afs_schema_file_n;
}

/* The schema's row for the flattened @name ("cache.hits"), or NULL. */
const struct afs_schema_field *astat_row_of(const char *name)
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

double astat_num_or(const struct json *obj, const char *key, double dflt)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_NUMBER ? v->num : dflt;
}

/* Field @key of member @obj ("" for the top) of @doc, looked up through
 * the schema, so that a column cannot name a field the daemon does not
 * render. */
double astat_field(const struct json *doc, const char *obj, const char *key)
{
	const struct json *o = *obj ? json_get(doc, obj) : doc;

	if (!afs_schema_find(schema, schema_n, obj, key)) {
		fprintf(stderr, "aheadfs-stat: no field %s%s%s in the schema\n",
			obj, *obj ? "." : "", key);
		exit(1);
	}
	return astat_num_or(o, key, 0);
}
