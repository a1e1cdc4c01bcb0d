/* opts_table.h - the option table's rows (opts_table.c), private to the
 * option parser (opts.c) and --help: one row per -o option, parsed and
 * documented from the same row.  Defaults are not in the rows: they are the
 * fields of a struct afs_opts fresh from afs_opts_init(), or, where the
 * field holds 0 (ZERO_AUTO) or nothing, the row's doc says it.
 *
 * Concurrency: the table is a constant array; afs_opt_find() and
 * afs_opt_size_text() (into the caller's buffer) keep no state, so any
 * thread may call them, though only option parsing and --help do.
 */
#ifndef AFS_OPTS_TABLE_H
#define AFS_OPTS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum afs_opt_kind {
	OPT_SET, /* bool field = true */
	OPT_CLEAR, /* bool field = false */
	OPT_UINT, /* unsigned field, in [min, max] */
	OPT_SECONDS, /* double field, in [min, max] */
	OPT_MOUNT, /* passed to the mount; optional bool field = true */
	OPT_MOUNT_CLEAR, /* passed to the mount; optional bool field = false */
	OPT_MNTATTR, /* applied after mounting with mount_setattr() */
	OPT_IGNORE, /* accepted for fstab / mount(8), no effect */
	OPT_IGNORE_PREFIX, /* every option starting with name */
	OPT_BYTES, /* uint64_t field: bytes, K/M/G suffixes, in [min, max],
		    * a multiple of 4 KiB (0 allowed when min is 0) */
	OPT_ENUM, /* enum field: the index of the value in names[], the owning
		   * module's name table (ra_name_parse()) */
	OPT_PATH, /* char * field: an absolute path (strdup(); the last
		   * one given wins) */
};

/* What 0 means in a numeric option, where the option takes 0.  The rule:
 * 0 is the default, worked out where it is used (ZERO_AUTO: cache_size,
 * ra_max, stripe, chunk); the exceptions, options that can be turned off,
 * say ZERO_OFF in their row (write_behind, write_direct).  A field whose
 * default is not 0 gets it from afs_opts_init() (afs_data_config_init()
 * for the data path), which is where --help reads it. */
enum afs_opt_zero {
	ZERO_PLAIN = 0, /* a number as any other, or 0 is not taken */
	ZERO_AUTO, /* the default: doc.text or doc.describe() says what */
	ZERO_OFF, /* off */
};

#define NO_FIELD SIZE_MAX

/* What --help and the docs say of an option beyond its help line. */
struct afs_opt_doc_spec {
	enum afs_opt_zero zero; /* OPT_UINT, OPT_BYTES: what 0 means */
	/* The default in words where the field does not hold it (0 with
	 * ZERO_AUTO, a NULL path, a flag whose default is worked out) */
	const char *text;
	/* or written from the code that works it out */
	void (*describe)(char *buf, size_t len);
	/* a row of the option tables of README.md and docs/tuning.md too
	 * (tests/unit/fuse/test_opts_doc.c) */
	bool data_path;
};

struct afs_opt_spec {
	const char *name;
	enum afs_opt_kind kind;
	bool value; /* takes "=value" */
	size_t field;
	double min, max;
	const char *help; /* NULL: not listed by --help; without the default,
			   * which --help adds (default_text()) */
	unsigned attr_set, attr_clr; /* OPT_MNTATTR: MOUNT_ATTR_* bits */
	const char *const *names; /* OPT_ENUM: values, NULL-terminated */
	struct afs_opt_doc_spec doc;
};

/**
 * afs_opt_find() - The row of -o option @name (an OPT_IGNORE_PREFIX row for
 * any name it prefixes).
 * Context: Pure.
 * Return: The row, or NULL for an unknown option.
 */
const struct afs_opt_spec *afs_opt_find(const char *name);

/**
 * afs_opt_size_text() - @bytes (whole KiB) in the largest unit that holds it
 * exactly: "4K", "1M", "1024G", into @buf.
 * Context: Pure.
 * Return: @buf.
 */
const char *afs_opt_size_text(char buf[24], double bytes);

#endif /* AFS_OPTS_TABLE_H */
