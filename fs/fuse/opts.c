/* opts.c - the aheadfs option parser and the checks before mounting (see
 * opts.h); the option table is opts_table.c. */
#include "opts.h"
#include "opts_table.h"

#include "fs/warm/warm.h"
#include "ra/ra.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
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
	o->max_threads = AFS_MAX_THREADS_DEFAULT;
	o->max_idle_threads = AFS_MAX_IDLE_THREADS_DEFAULT;
	o->uring_depth = AFS_URING_DEPTH_DEFAULT;
	afs_data_config_init(&o->data);
	o->attr_timeout = AFS_ATTR_TIMEOUT_DEFAULT;
	o->entry_timeout = -1; /* afs_opts_entry_timeout() */
	o->warm_interval = AFS_WARM_INTERVAL_DEFAULT;
	o->warm_rate = AFS_WARM_RATE_DEFAULT;
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
	s = afs_opt_find(name);
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
				    value, s->name,
				    afs_opt_size_text(lo, s->min),
				    afs_opt_size_text(hi, s->max));
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
	if (o->opens == AFS_OPENS_NONE && o->data.read_mode == AFS_READ_DIRECT)
		return fail(err, errlen, -EINVAL,
			    "options 'opens=none' and 'read_mode=direct' "
			    "conflict: direct reads need the OPEN's reply");
	if (o->data.ra.stripe_bytes && o->data.ra.chunk_bytes &&
	    (o->data.ra.chunk_bytes > o->data.ra.stripe_bytes ||
	     o->data.ra.stripe_bytes % o->data.ra.chunk_bytes))
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
	if (o->single_thread && o->transport == AFS_TRANSPORT_URING)
		return fail(err, errlen, -EINVAL,
			    "transport=uring serves requests on threads of "
			    "its own: not with -s");
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
	if (!o->has_subtype && fuse_opt_add_opt(&list, "subtype=" AFS_SUBTYPE))
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
	return o->no_default_permissions ? 0 : AFS_ENTRY_TIMEOUT_DEFAULT;
}
