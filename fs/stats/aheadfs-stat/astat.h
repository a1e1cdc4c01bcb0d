/* astat.h - what the sources of aheadfs-stat share, private to the tool.
 *
 * aheadfs-stat shows what aheadfs's cache and readahead did for files.  It
 * reads the xattrs the daemon answers (docs/stats.md):
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
 *
 * Its sources, by job:
 *   main.c        the command line: options, usage, which view runs
 *   fetch.c       getxattr(2) and the JSON parse; which schema a value
 *                 follows and its fields looked up through it
 *   table.c       the table of one value (with rates against a previous
 *                 sample in the full live view); --json
 *   map_bar.c     the cache map drawn as a bar (--map)
 *   watch.c       the live views (--watch): the compact line of rates and
 *                 the full table repainted
 *   prometheus.c  the mount's counters in the Prometheus text format
 *
 * Concurrency: one thread.  The one state shared between the sources is
 * the schema of the value being read (fetch.c, set by astat_use_schema())
 * and astat_stop, which the SIGINT and SIGTERM handler sets and the live
 * views poll (a volatile sig_atomic_t, the only thing the handler
 * touches).
 */
#ifndef AFS_ASTAT_H
#define AFS_ASTAT_H

#include "fs/stats/json.h"
#include "fs/stats/schema.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#define XATTR_STATS "user.aheadfs.stats"
#define XATTR_MAP "user.aheadfs.map"
#define MAX_FIELDS 512

struct astat_options {
	double watch; /* seconds between refreshes; 0 = once */
	long count; /* --count: lines (or refreshes) to print; 0 = no end */
	bool full; /* --watch repaints the whole table */
	bool map;
	bool json;
	bool prometheus;
	const char *textfile; /* --prometheus=FILE */
};

/* One flattened numeric field ("cache.hits") of a previous sample, for rates. */
struct astat_sample {
	char *name[MAX_FIELDS];
	double value[MAX_FIELDS];
	int n;
};

/* Set by SIGINT and SIGTERM (main.c): the live views stop. */
extern volatile sig_atomic_t astat_stop;

/* fetch.c */

/* Reads xattr @name of @path into a NUL-terminated malloc'd buffer.
 * Return: 0, or -errno (-ERANGE if the value kept growing). */
int astat_read_xattr(const char *path, const char *name, char **out,
		     size_t *len);
/* One line on stderr for a failed read of @name on @path. */
void astat_report_error(const char *path, const char *name, int rc);
/* xattr @name of @path parsed; NULL after a line on stderr. */
struct json_doc *astat_read_json(const char *path, const char *name);
/* Whether @doc is the mount's (the root's members are the root schema's). */
bool astat_is_root_value(const struct json *doc);
/* Read what follows by @doc's schema (the root's or a file's). */
void astat_use_schema(const struct json *doc);
/* The schema's row for the flattened @name ("cache.hits"), or NULL. */
const struct afs_schema_field *astat_row_of(const char *name);
/* Number @key of @obj, or @dflt when there is none. */
double astat_num_or(const struct json *obj, const char *key, double dflt);
/* Field @key of member @obj ("" for the top) of @doc through the schema;
 * exits with status 1 for a field the schema does not have. */
double astat_field(const struct json *doc, const char *obj, const char *key);

/* table.c */

/* Print @path's values: the table (and --map's bar), or --json's raw
 * values.  @prev, @cur, @interval: the full live view's rates (NULL, NULL,
 * 0 once).  Return: 0, or 1 after a line on stderr. */
int astat_show_path(const char *path, const struct astat_options *o,
		    const struct astat_sample *prev, struct astat_sample *cur,
		    double interval);
void astat_sample_clear(struct astat_sample *s);

/* map_bar.c */

/* @map (a user.aheadfs.map value of @path) as a bar the terminal's width. */
void astat_print_map(const char *path, const struct json *map);

/* watch.c: each returns the program's exit status. */
int astat_watch_compact(char **paths, int npaths,
			const struct astat_options *o);
int astat_watch_full(char **paths, int npaths, const struct astat_options *o);

/* prometheus.c */

/* The mount's metrics to stdout, or to @file through @file.tmp and
 * rename(2).  Return: the exit status. */
int astat_prometheus(const char *mount, const char *file);

#endif /* AFS_ASTAT_H */
