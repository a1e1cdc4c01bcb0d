/* opts.c - the aheadfs option table and parser (see opts.h). */
#include "opts.h"

#include "ra/ra.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

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

#define NO_FIELD SIZE_MAX
const char *const afs_opens_names[] = {"message", "none", NULL};
const char *const afs_wronly_io_names[] = {"direct", "cached", NULL};
const char *const afs_passthrough_names[] = {
	[AFS_PASSTHROUGH_WRITES] = "writes",
	[AFS_PASSTHROUGH_ALL] = "all",
	[AFS_PASSTHROUGH_OFF] = "off",
	NULL,
};

#define F(field) offsetof(struct afs_opts, field)

struct afs_opt_spec {
	const char *name;
	enum afs_opt_kind kind;
	bool value; /* takes "=value" */
	size_t field;
	double min, max;
	const char *help; /* NULL: not listed by --help */
	unsigned attr_set, attr_clr; /* OPT_MNTATTR: MOUNT_ATTR_* bits */
	const char *const *names; /* OPT_ENUM: values, NULL-terminated */
};

#define KIB 1024.0
#define GIB (1024.0 * 1024 * 1024)
#define STR_(x) #x
#define STR(x) STR_(x)

/* @bytes (whole KiB) in the largest unit that holds it exactly: "4K",
 * "1M", "1024G". */
static const char *size_text(char buf[24], double bytes)
{
	static const char units[] = "GMK";
	double scale = GIB;

	for (const char *u = units; *u; u++, scale /= KIB)
		if (bytes >= scale && fmod(bytes, scale) == 0) {
			snprintf(buf, 24, "%.0f%c", bytes / scale, *u);
			return buf;
		}
	snprintf(buf, 24, "%.0fK", bytes / KIB);
	return buf;
}

/* The table.  Keep --help, docs/aheadfs.1 and docs/passthrough.md in step
 * with it. */
static const struct afs_opt_spec afs_opt_table[] = {
	/* aheadfs and libfuse session options */
	{"max_threads", OPT_UINT, true, F(max_threads), 1, 4096,
	 "most worker threads serving requests (default 10)"},
	{"max_idle_threads", OPT_UINT, true, F(max_idle_threads), 0, 4096,
	 "idle worker threads kept alive (default 10)"},
	{"clone_fd", OPT_SET, false, F(clone_fd), 0, 0,
	 "one /dev/fuse descriptor per worker thread (default)"},
	{"no_clone_fd", OPT_CLEAR, false, F(clone_fd), 0, 0,
	 "all worker threads share one /dev/fuse descriptor"},
	{"attr_timeout", OPT_SECONDS, true, F(attr_timeout), 0, 86400,
	 "seconds the kernel may cache attributes (default 1)"},
	{"entry_timeout", OPT_SECONDS, true, F(entry_timeout), 0, 86400,
	 "seconds the kernel may cache names (default 1, or 0 with"
	 " no_default_permissions)"},
	{"default_permissions", OPT_SET, false, F(default_permissions), 0, 0,
	 "the kernel checks permissions (default with allow_other)"},
	{"no_default_permissions", OPT_SET, false, F(no_default_permissions), 0,
	 0, "refuse default_permissions (the backing checks, per user)"},
	{"debug", OPT_SET, false, F(debug), 0, 0,
	 "trace every request on stderr (implies -f)"},
	{"opens", OPT_ENUM, true, F(opens), 0, 0,
	 "message (default: open and close are FUSE requests) or none "
	 "(zero-message opens: read_mode=kernel, default_permissions; "
	 "docs/tuning.md)",
	 0, 0, afs_opens_names},
	{"wronly_io", OPT_ENUM, true, F(wronly_io), 0, 0,
	 "write-only opens in write-through mode: direct (default: around "
	 "the kernel's page cache, Linux 6.18 and later) or cached",
	 0, 0, afs_wronly_io_names},
	{"passthrough", OPT_ENUM, true, F(passthrough), 0, 0,
	 "opens whose reads and writes the kernel sends to the backing file "
	 "itself (FUSE passthrough, Linux 6.9 and later, a daemon with "
	 "CAP_SYS_ADMIN): writes (default: writable opens), all, or off",
	 0, 0, afs_passthrough_names},
	/* the cache and readahead (fs/data/data.h, docs/tuning.md) */
	{"read_mode", OPT_ENUM, true, F(ahead.read_mode), 0, 0,
	 "kernel (default: the kernel's page cache on top) or direct (every "
	 "read reaches aheadfs)",
	 0, 0, afs_read_mode_names},
	{"write_mode", OPT_ENUM, true, F(ahead.write_mode), 0, 0,
	 "writethrough (default: every write reaches the backing at once) or "
	 "writeback (the kernel's writeback cache; only for data written "
	 "through the mount alone)",
	 0, 0, afs_write_mode_names},
	{"cache_size", OPT_BYTES, true, F(ahead.cache_size), 4 * 1024 * KIB,
	 1024 * GIB,
	 "aheadfs's page cache budget (default an eighth of RAM, or a "
	 "quarter of a smaller memory cgroup limit)"},
	{"ra_max", OPT_BYTES, true, F(ahead.ra.max_bytes), 0,
	 RA_MAX_BYTES_LIMIT,
	 "largest readahead window (default max(4M, 2 x stripe width))"},
	{"ra_workers", OPT_UINT, true, F(ahead.ra.workers), 1, RA_WORKERS_MAX,
	 "readahead worker threads (default " STR(RA_WORKERS_DEFAULT) ")"},
	{"stripe", OPT_BYTES, true, F(ahead.ra.stripe_bytes), 0,
	 RA_MAX_BYTES_LIMIT,
	 "stripe width of the backing RAID (default from sysfs)"},
	{"chunk", OPT_BYTES, true, F(ahead.ra.chunk_bytes), 0,
	 RA_MAX_BYTES_LIMIT,
	 "chunk size of the backing RAID (default from sysfs)"},
	{"context_ra", OPT_ENUM, true, F(ahead.ra.context), 0, 0,
	 "context readahead: on (conservative, default), loose (2009 rule), "
	 "off",
	 0, 0, ra_context_names},
	{"stream_table", OPT_ENUM, true, F(ahead.ra.stream_table), 0, 0,
	 "per-file stream table for cooperative readers: on (default), off", 0,
	 0, ra_stream_table_names},
	{"backing_io", OPT_ENUM, true, F(ahead.ra.backing_io), 0, 0,
	 "backing reads: auto (O_DIRECT where allowed, default), direct, "
	 "buffered",
	 0, 0, ra_backing_io_names},
	{"write_behind", OPT_BYTES, true, F(ahead.write_behind), 0, 1 * GIB,
	 "hand each finished piece of this size of a sequential run of writes "
	 "to the backing's writeback at once; 0: off (default 8M)"},
	{"write_direct", OPT_BYTES, true, F(ahead.write_direct), 0,
	 AFS_DATA_MAX_REQUEST,
	 "write_mode=writeback: send the kernel's writes of at least this "
	 "size to the backing with O_DIRECT, e.g. 256K; 0: off (default)"},
	{"idle_files", OPT_UINT, true, F(ahead.idle_files), 1,
	 AFS_IDLE_FILES_MAX,
	 "files no one uses kept with their cache, oldest dropped first "
	 "(default " STR(AFS_IDLE_FILES_DEFAULT) ")"},
	{"warm_state", OPT_PATH, true, F(warm_state), 0, 0,
	 "warm restart: save the cache's map to this file (absolute path, "
	 "outside MOUNTPOINT) and read it back at the next mount (default "
	 "off)"},
	{"warm_interval", OPT_UINT, true, F(warm_interval), 1, 86400,
	 "seconds between checkpoints of warm_state (default 60)"},
	{"warm_rate", OPT_BYTES, true, F(warm_rate), 4 * KIB, 1024 * GIB,
	 "most bytes a second the warm-up reads back (default 64M)"},
	{"watch", OPT_ENUM, true, F(watch), 0, 0,
	 "changes behind the mount: auto (default: fanotify as root, else "
	 "inotify), fanotify, inotify or off (seen at the next open)",
	 0, 0, afs_watch_mode_names},
	/* kernel / libfuse mount options */
	{"allow_other", OPT_MOUNT, false, F(allow_other), 0, 0,
	 "let all users use the mount (root, or user_allow_other)"},
	{"allow_root", OPT_MOUNT, false, F(allow_root), 0, 0,
	 "let root use the mount too"},
	{"auto_unmount", OPT_MOUNT, false, NO_FIELD, 0, 0,
	 "unmount when the daemon dies (via fusermount3)"},
	{"fsname", OPT_MOUNT, true, F(has_fsname), 0, 0,
	 "source name shown in the mount table (default SOURCE)"},
	{"subtype", OPT_MOUNT, true, F(has_subtype), 0, 0,
	 "type shown as fuse.SUBTYPE (default aheadfs)"},
	{"ro", OPT_MOUNT, false, F(read_only), 0, 0, "read-only mount"},
	{"rw", OPT_MOUNT_CLEAR, false, F(read_only), 0, 0, NULL},
	{"suid", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"nosuid", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"dev", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"nodev", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"exec", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"noexec", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"async", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"sync", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"atime", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"noatime", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	/* libfuse 3.14 does not know these: set on the mount afterwards */
	{"diratime", OPT_MNTATTR, false, NO_FIELD, 0, 0, NULL, 0,
	 MOUNT_ATTR_NODIRATIME},
	{"nodiratime", OPT_MNTATTR, false, NO_FIELD, 0, 0, NULL,
	 MOUNT_ATTR_NODIRATIME, 0},
	{"relatime", OPT_MNTATTR, false, NO_FIELD, 0, 0, NULL,
	 MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME},
	{"norelatime", OPT_MNTATTR, false, NO_FIELD, 0, 0, NULL,
	 MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME},
	{"strictatime", OPT_MNTATTR, false, NO_FIELD, 0, 0, NULL,
	 MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME},
	{"nostrictatime", OPT_MNTATTR, false, NO_FIELD, 0, 0, NULL,
	 MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME},
	/* lazytime batches inode time writes of a disk filesystem; the
	 * backing has its own setting */
	{"lazytime", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"nolazytime", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"dirsync", OPT_MOUNT, false, NO_FIELD, 0, 0, NULL},
	{"context", OPT_MOUNT, true, NO_FIELD, 0, 0, NULL},
	{"fscontext", OPT_MOUNT, true, NO_FIELD, 0, 0, NULL},
	{"defcontext", OPT_MOUNT, true, NO_FIELD, 0, 0, NULL},
	{"rootcontext", OPT_MOUNT, true, NO_FIELD, 0, 0, NULL},
	/* fstab / mount(8) / mount.fuse3 options with no meaning here */
	{"defaults", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"auto", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"noauto", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"user", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"nouser", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"users", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"owner", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"group", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"_netdev", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"nofail", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"nonempty", OPT_IGNORE, false, NO_FIELD, 0, 0, NULL},
	{"comment", OPT_IGNORE, true, NO_FIELD, 0, 0, NULL},
	{"x-", OPT_IGNORE_PREFIX, false, NO_FIELD, 0, 0, NULL},
};

#define TABLE_LEN (sizeof(afs_opt_table) / sizeof(afs_opt_table[0]))

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

void afs_opts_init(struct afs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->fuse_dev = "/dev/fuse";
	o->fuse_rdev = makedev(10, 229); /* misc char device "fuse" */
	o->clone_fd = true;
	o->max_threads = 10;
	o->max_idle_threads = 10;
	o->ahead.write_behind = AFS_WRITE_BEHIND_DEFAULT;
	o->attr_timeout = 1.0;
	o->entry_timeout = -1; /* afs_opts_entry_timeout() */
}

void afs_opts_free(struct afs_opts *o)
{
	for (size_t i = 0; i < o->n_mount_opts; i++)
		free(o->mount_opts[i]);
	free(o->mount_opts);
	free(o->source_real);
	free(o->mountpoint_real);
	free(o->warm_state);
	o->warm_state = NULL;
	o->mount_opts = NULL;
	o->n_mount_opts = 0;
	o->source_real = o->mountpoint_real = NULL;
}

static const struct afs_opt_spec *find_spec(const char *name)
{
	for (size_t i = 0; i < TABLE_LEN; i++) {
		const struct afs_opt_spec *s = &afs_opt_table[i];

		if (s->kind == OPT_IGNORE_PREFIX) {
			if (!strncmp(name, s->name, strlen(s->name)))
				return s;
		} else if (!strcmp(name, s->name)) {
			return s;
		}
	}
	return NULL;
}

static int add_mount_opt(struct afs_opts *o, const char *opt)
{
	char **n = realloc(o->mount_opts, (o->n_mount_opts + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	o->mount_opts = n;
	n[o->n_mount_opts] = strdup(opt);
	if (!n[o->n_mount_opts])
		return -ENOMEM;
	o->n_mount_opts++;
	return 0;
}

/* One "name" or "name=value" item of a -o list. */
static int parse_one(struct afs_opts *o, char *item, char *err, size_t errlen)
{
	char *eq = strchr(item, '=');
	char *value = eq ? eq + 1 : NULL;
	const struct afs_opt_spec *s;
	char *name, *end;

	if (eq)
		*eq = '\0';
	name = item;
	s = find_spec(name);
	if (eq)
		*eq = '=';
	if (!s)
		return fail(err, errlen, -EINVAL, "unknown option '-o %s'",
			    item);
	if (s->kind == OPT_IGNORE_PREFIX)
		return 0;
	if (s->value && (!value || !*value))
		return fail(err, errlen, -EINVAL,
			    "option '%s' needs a value ('-o %s=...')", s->name,
			    s->name);
	if (!s->value && value)
		return fail(err, errlen, -EINVAL,
			    "option '%s' takes no value (got '-o %s')", s->name,
			    item);
	bool *flag =
		s->field == NO_FIELD ? NULL : (bool *)((char *)o + s->field);

	switch (s->kind) {
	case OPT_SET:
		*flag = true;
		return 0;
	case OPT_CLEAR:
		*flag = false;
		return 0;
	case OPT_UINT: {
		unsigned long long v;

		errno = 0;
		v = strtoull(value, &end, 10);
		if (*end || errno || value[0] == '-' || value[0] == '+' ||
		    v < s->min || v > s->max)
			return fail(err, errlen, -EINVAL,
				    "bad value '%s' for option '%s': expected "
				    "an integer from %.0f to %.0f",
				    value, s->name, s->min, s->max);
		*(unsigned *)((char *)o + s->field) = (unsigned)v;
		return 0;
	}
	case OPT_SECONDS: {
		double v;

		errno = 0;
		v = strtod(value, &end);
		if (*end || errno || !isfinite(v) || v < s->min || v > s->max)
			return fail(err, errlen, -EINVAL,
				    "bad value '%s' for option '%s': expected "
				    "seconds from %.0f to %.0f",
				    value, s->name, s->min, s->max);
		*(double *)((char *)o + s->field) = v;
		return 0;
	}
	case OPT_BYTES: {
		char lo[24], hi[24];
		uint64_t v;

		if (ra_parse_size(value, &v) || v < s->min || v > s->max ||
		    (v % 4096))
			return fail(err, errlen, -EINVAL,
				    "bad value '%s' for option '%s': expected "
				    "a size from %s to %s in whole 4K "
				    "pages (suffixes K, M, G)",
				    value, s->name, size_text(lo, s->min),
				    size_text(hi, s->max));
		*(uint64_t *)((char *)o + s->field) = v;
		return 0;
	}
	case OPT_ENUM: {
		char list[128] = "";
		int v = ra_name_parse(s->names, value);

		if (v >= 0) {
			*(int *)((char *)o + s->field) = v;
			return 0;
		}
		for (int i = 0; s->names[i]; i++)
			snprintf(list + strlen(list),
				 sizeof(list) - strlen(list), "%s%s",
				 i ? (s->names[i + 1] ? ", " : " or ") : "",
				 s->names[i]);
		return fail(err, errlen, -EINVAL,
			    "bad value '%s' for option '%s': expected %s",
			    value, s->name, list);
	}
	case OPT_PATH: {
		char **field = (char **)((char *)o + s->field), *copy;

		if (value[0] != '/')
			return fail(err, errlen, -EINVAL,
				    "bad value '%s' for option '%s': expected "
				    "an absolute path",
				    value, s->name);
		copy = strdup(value);
		if (!copy)
			return fail(err, errlen, -ENOMEM, "out of memory");
		free(*field);
		*field = copy;
		return 0;
	}
	case OPT_MOUNT:
	case OPT_MOUNT_CLEAR:
		if (flag)
			*flag = s->kind == OPT_MOUNT;
		if (add_mount_opt(o, item))
			return fail(err, errlen, -ENOMEM, "out of memory");
		return 0;
	case OPT_MNTATTR:
		o->mount_attr_clr |= s->attr_clr | s->attr_set;
		o->mount_attr_set =
			(o->mount_attr_set & ~s->attr_clr & ~s->attr_set) |
			s->attr_set;
		return 0;
	case OPT_IGNORE:
	case OPT_IGNORE_PREFIX:
		return 0;
	}
	return fail(err, errlen, -EINVAL, "unknown option '-o %s'", item);
}

/* A comma-separated -o list; "\," is a literal comma, "\\" a backslash. */
static int parse_list(struct afs_opts *o, const char *list, char *err,
		      size_t errlen)
{
	size_t len = strlen(list);
	char *item = malloc(len + 1);
	size_t n = 0;
	int rc = 0;

	if (!item)
		return fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i <= len && !rc; i++) {
		if (list[i] == '\\' && list[i + 1]) {
			item[n++] = list[++i];
			continue;
		}
		if (list[i] != ',' && list[i] != '\0') {
			item[n++] = list[i];
			continue;
		}
		item[n] = '\0';
		if (n)
			rc = parse_one(o, item, err, errlen);
		n = 0;
	}
	free(item);
	return rc;
}

int afs_opts_parse(struct afs_opts *o, int argc, char **argv, char *err,
		   size_t errlen)
{
	char *pos[2];
	int npos = 0;
	bool only_pos = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (only_pos || a[0] != '-' || a[1] == '\0') {
			if (npos == 2)
				return fail(err, errlen, -EINVAL,
					    "unexpected argument '%s' (only "
					    "SOURCE and MOUNTPOINT are taken)",
					    a);
			pos[npos++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--")) {
			only_pos = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			o->show_help = true;
			return 0;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			o->show_version = true;
			return 0;
		} else if (!strcmp(a, "-f")) {
			o->foreground = true;
		} else if (!strcmp(a, "-d")) {
			o->debug = true;
		} else if (!strcmp(a, "-s")) {
			o->single_thread = true;
		} else if (!strcmp(a, "-o")) {
			if (i + 1 == argc)
				return fail(err, errlen, -EINVAL,
					    "option '-o' needs a value");
			rc = parse_list(o, argv[++i], err, errlen);
			if (rc)
				return rc;
		} else if (!strncmp(a, "-o", 2)) {
			rc = parse_list(o, a + 2, err, errlen);
			if (rc)
				return rc;
		} else {
			return fail(err, errlen, -EINVAL,
				    "unknown option '%s' (see --help)", a);
		}
	}
	if (o->debug)
		o->foreground = true;
	if (o->default_permissions && o->no_default_permissions)
		return fail(err, errlen, -EINVAL,
			    "options 'default_permissions' and "
			    "'no_default_permissions' conflict");
	/* Without an OPEN no one checks an open's access but the kernel, and
	 * a direct_io open needs the OPEN's reply. */
	if (o->opens == AFS_OPENS_NONE && o->no_default_permissions)
		return fail(err, errlen, -EINVAL,
			    "options 'opens=none' and 'no_default_permissions' "
			    "conflict: without OPEN requests the kernel's "
			    "permission check is the only one");
	if (o->opens == AFS_OPENS_NONE && o->ahead.read_mode == AFS_READ_DIRECT)
		return fail(err, errlen, -EINVAL,
			    "options 'opens=none' and 'read_mode=direct' "
			    "conflict: direct reads need the OPEN's reply");
	if (o->ahead.ra.stripe_bytes && o->ahead.ra.chunk_bytes &&
	    (o->ahead.ra.chunk_bytes > o->ahead.ra.stripe_bytes ||
	     o->ahead.ra.stripe_bytes % o->ahead.ra.chunk_bytes))
		return fail(err, errlen, -EINVAL,
			    "options 'stripe' and 'chunk' conflict: the stripe "
			    "width must be a whole number of chunks");
	if (npos == 0)
		return fail(err, errlen, -EINVAL,
			    "missing SOURCE and MOUNTPOINT (see --help)");
	if (npos == 1)
		return fail(err, errlen, -EINVAL,
			    "missing MOUNTPOINT (see --help)");
	o->source = pos[0];
	o->mountpoint = pos[1];
	return 0;
}

/* A directory that is the root of a mount (someone is mounted there). */
static bool is_mount_root(const char *path)
{
	struct statx stx;

	if (statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &stx) == 0 &&
	    (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return stx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
	return false;
}

static int check_dir(const char *what, const char *path, char **real, char *err,
		     size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return fail(err, errlen, -errno, "%s '%s': %s", what, path,
			    strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(err, errlen, -ENOTDIR, "%s '%s' is not a directory",
			    what, path);
	*real = realpath(path, NULL);
	if (!*real)
		return fail(err, errlen, -errno, "%s '%s': %s", what, path,
			    strerror(errno));
	return 0;
}

int afs_opts_check(struct afs_opts *o, char *err, size_t errlen)
{
	struct stat st;
	size_t slen;
	int rc, fd;

	rc = check_dir("SOURCE", o->source, &o->source_real, err, errlen);
	if (rc)
		return rc;
	rc = check_dir("MOUNTPOINT", o->mountpoint, &o->mountpoint_real, err,
		       errlen);
	if (rc)
		return rc;
	if (is_mount_root(o->mountpoint_real))
		return fail(err, errlen, -EBUSY,
			    "MOUNTPOINT '%s' is already a mount point "
			    "(unmount it first)",
			    o->mountpoint);
	slen = strlen(o->source_real);
	if (!strcmp(o->source_real, "/") ||
	    (!strncmp(o->mountpoint_real, o->source_real, slen) &&
	     (o->mountpoint_real[slen] == '/' ||
	      o->mountpoint_real[slen] == '\0')))
		return fail(err, errlen, -ELOOP,
			    "MOUNTPOINT '%s' is inside SOURCE '%s' (the "
			    "mount would contain itself)",
			    o->mountpoint, o->source);
	if (o->warm_state) {
		size_t mlen = strlen(o->mountpoint_real);

		if (!strncmp(o->warm_state, o->mountpoint_real, mlen) &&
		    (o->warm_state[mlen] == '/' || !o->warm_state[mlen] ||
		     mlen == 1))
			return fail(err, errlen, -EINVAL,
				    "warm_state '%s' is inside MOUNTPOINT "
				    "'%s' (the daemon would write through "
				    "its own mount)",
				    o->warm_state, o->mountpoint);
	}
	fd = open(o->fuse_dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		/* libfuse opens it too, also for users (fusermount3 is only
		 * its fallback once the device is open): refuse here with
		 * one clear line. */
		if (errno == ENOENT || errno == ENODEV || errno == ENXIO)
			return fail(err, errlen, -ENODEV,
				    "no %s: the fuse kernel module is not "
				    "loaded (modprobe fuse)",
				    o->fuse_dev);
		return fail(err, errlen, -errno, "cannot open %s: %s",
			    o->fuse_dev, strerror(errno));
	}
	rc = fstat(fd, &st) ? -errno : 0;
	close(fd);
	if (rc)
		return fail(err, errlen, rc, "cannot stat %s: %s", o->fuse_dev,
			    strerror(-rc));
	if (!S_ISCHR(st.st_mode) || st.st_rdev != o->fuse_rdev)
		return fail(err, errlen, -ENODEV,
			    "%s is not the FUSE device (char 10,229)",
			    o->fuse_dev);
	return 0;
}

bool afs_opts_default_permissions(const struct afs_opts *o)
{
	if (o->no_default_permissions)
		return false;
	return o->default_permissions || o->opens == AFS_OPENS_NONE ||
	       o->allow_other;
}

const char *afs_opts_permission_warning(const struct afs_opts *o, unsigned euid)
{
	if (euid == 0 || !o->allow_other || !o->no_default_permissions)
		return NULL;
	return "no_default_permissions with allow_other on a daemon that is "
	       "not root: nothing checks permissions, and every user of the "
	       "mount acts with the rights of the daemon's owner";
}

int afs_opts_fuse_args(const struct afs_opts *o, struct fuse_args *args)
{
	char *list = NULL, *fsname = NULL;
	int rc = -ENOMEM;

	*args = (struct fuse_args)FUSE_ARGS_INIT(0, NULL);
	if (fuse_opt_add_arg(args, "aheadfs"))
		goto out_free;
	for (size_t i = 0; i < o->n_mount_opts; i++)
		if (fuse_opt_add_opt_escaped(&list, o->mount_opts[i]))
			goto out_free;
	if (afs_opts_default_permissions(o) &&
	    fuse_opt_add_opt(&list, "default_permissions"))
		goto out_free;
	if (!o->has_fsname) {
		const char *src = o->source_real ? o->source_real : o->source;

		if (asprintf(&fsname, "fsname=%s", src) < 0) {
			fsname = NULL;
			goto out_free;
		}
		if (fuse_opt_add_opt_escaped(&list, fsname))
			goto out_free;
	}
	if (!o->has_subtype && fuse_opt_add_opt(&list, "subtype=aheadfs"))
		goto out_free;
	if (fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, list))
		goto out_free;
	if (o->debug && fuse_opt_add_arg(args, "-d"))
		goto out_free;
	rc = 0;
out_free:
	free(list);
	free(fsname);
	if (rc)
		fuse_opt_free_args(args);
	return rc;
}

double afs_opts_entry_timeout(const struct afs_opts *o)
{
	if (o->entry_timeout >= 0)
		return o->entry_timeout;
	return o->no_default_permissions ? 0 : 1.0;
}

void afs_opts_help(FILE *out)
{
	fprintf(out,
		"usage: aheadfs [options] SOURCE MOUNTPOINT\n"
		"\n"
		"Mount the directory SOURCE at MOUNTPOINT through FUSE.\n"
		"\n"
		"  -h, --help            show this help and exit\n"
		"  -V, --version         show the version and exit\n"
		"  -f                    stay in the foreground (log to "
		"stderr)\n"
		"  -d                    debug: trace requests (implies -f)\n"
		"  -s                    serve requests on one thread\n"
		"  -o OPT[,OPT...]       options:\n");
	for (size_t i = 0; i < TABLE_LEN; i++) {
		const struct afs_opt_spec *s = &afs_opt_table[i];
		char head[64];

		if (!s->help)
			continue;
		snprintf(head, sizeof(head), "%s%s", s->name,
			 s->value ? "=N" : "");
		if (s->kind == OPT_MOUNT && s->value)
			snprintf(head, sizeof(head), "%s=NAME", s->name);
		if (s->kind == OPT_BYTES)
			snprintf(head, sizeof(head), "%s=SIZE", s->name);
		if (s->kind == OPT_ENUM)
			snprintf(head, sizeof(head), "%s=MODE", s->name);
		if (s->kind == OPT_PATH)
			snprintf(head, sizeof(head), "%s=PATH", s->name);
		/* wrap long help lines under the text column */
		const char *h = s->help;
		int w = 80 - 4 - 25;

		while ((int)strlen(h) > w) {
			int cut = w;

			while (cut > 0 && h[cut] != ' ')
				cut--;
			if (cut == 0)
				break;
			fprintf(out, "    %-24s %.*s\n", head, cut, h);
			head[0] = '\0';
			h += cut + 1;
		}
		fprintf(out, "    %-24s %s\n", head, h);
	}
	fprintf(out,
		"\n"
		"Generic mount options are applied to the mount: rw, ro, "
		"[no]suid, [no]dev,\n"
		"[no]exec, [no]atime, [no]diratime, [no]relatime, "
		"[no]strictatime, sync, async,\n"
		"dirsync.  fstab-only options (defaults, auto, noauto, user, "
		"users, nouser,\n"
		"owner, group, _netdev, nofail, comment=, x-*) and "
		"[no]lazytime are accepted\n"
		"and ignored.\n"
		"\n"
		"Unmount with 'fusermount3 -u MOUNTPOINT' or SIGTERM; see "
		"aheadfs(1).\n");
}
