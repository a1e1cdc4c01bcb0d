/* test_opts.c - the aheadfs command line: valid forms, each error, the
 * pre-mount checks and the arguments handed to libfuse. */
#include <errno.h>
#include <fuse_lowlevel.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs/warm/warm.h"
#include "opts.h"

struct fixture {
	struct afs_opts o;
	char err[AFS_ERRLEN];
	char dir[64]; /* a scratch directory */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	afs_opts_init(&f->o);
	strcpy(f->dir, "/tmp/afs-test-opts-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	afs_opts_free(&f->o);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* Parse a NULL-terminated argument list (program name added). */
static int parse(struct fixture *f, ...)
{
	char *argv[32] = {"aheadfs"};
	int argc = 1;
	va_list ap;

	va_start(ap, f);
	while ((argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	f->err[0] = '\0';
	return afs_opts_parse(&f->o, argc, argv, f->err, sizeof(f->err));
}

static bool has_mount_opt(const struct afs_opts *o, const char *opt)
{
	for (size_t i = 0; i < o->n_mount_opts; i++)
		if (!strcmp(o->mount_opts[i], opt))
			return true;
	return false;
}

static void assert_error(struct fixture *f, int rc, const char *needle)
{
	assert_int_equal(rc, -EINVAL);
	if (!strstr(f->err, needle))
		fail_msg("error '%s' lacks '%s'", f->err, needle);
	assert_null(strchr(f->err, '\n'));
}

static void test_defaults(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, "src", "mnt", NULL), 0);
	assert_string_equal(f->o.source, "src");
	assert_string_equal(f->o.mountpoint, "mnt");
	assert_false(f->o.foreground);
	assert_false(f->o.single_thread);
	assert_true(f->o.clone_fd);
	assert_int_equal(f->o.max_threads, 10);
	assert_int_equal(f->o.max_idle_threads, 10);
	assert_true(f->o.attr_timeout == 1.0);
	assert_true(afs_opts_entry_timeout(&f->o) == 1.0);
	assert_int_equal(f->o.n_mount_opts, 0);
}

static void test_fuse_flags_and_values(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, "-s", "-o",
			       "allow_other,max_threads=4,max_idle_threads=0,"
			       "no_clone_fd,ro,attr_timeout=0.5",
			       "src", "mnt", NULL),
			 0);
	assert_true(f->o.single_thread);
	assert_true(f->o.allow_other);
	assert_true(f->o.read_only);
	assert_false(f->o.clone_fd);
	assert_int_equal(f->o.max_threads, 4);
	assert_int_equal(f->o.max_idle_threads, 0);
	assert_true(f->o.attr_timeout == 0.5);
	assert_true(has_mount_opt(&f->o, "allow_other"));
	assert_true(has_mount_opt(&f->o, "ro"));
	assert_false(has_mount_opt(&f->o, "max_threads=4"));
}

static void test_debug_implies_foreground(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, "-d", "src", "mnt", NULL), 0);
	assert_true(f->o.debug);
	assert_true(f->o.foreground);
}

/* mount.fuse3 runs "aheadfs SOURCE MOUNTPOINT -o OPTS" with fstab's
 * options, generic ones included. */
static void test_mount_fuse3_style(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, "/data", "/srv/data", "-o",
			       "rw,defaults,_netdev,noauto,user,users,nofail,"
			       "nosuid,nodev,noexec,noatime,relatime,"
			       "x-systemd.automount,comment=hello,dev,suid",
			       NULL),
			 0);
	assert_string_equal(f->o.source, "/data");
	assert_true(has_mount_opt(&f->o, "nosuid"));
	assert_true(has_mount_opt(&f->o, "noatime"));
	assert_true(has_mount_opt(&f->o, "rw"));
	assert_false(has_mount_opt(&f->o, "defaults"));
	assert_false(has_mount_opt(&f->o, "_netdev"));
	assert_false(has_mount_opt(&f->o, "x-systemd.automount"));
	assert_false(f->o.read_only);
}

static void test_attached_o_and_escapes(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, "-oro,fsname=a\\,b", "src", "mnt", NULL), 0);
	assert_true(f->o.read_only);
	assert_true(f->o.has_fsname);
	assert_true(has_mount_opt(&f->o, "fsname=a,b"));
}

static void test_rw_after_ro(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, "-o", "ro", "-o", "rw", "src", "mnt", NULL),
			 0);
	assert_false(f->o.read_only);
}

/* atime modes libfuse cannot pass become mount_setattr() bits; the last
 * atime mode given wins. */
static void test_atime_mount_attrs(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(
		parse(f, "-o", "nodiratime,strictatime", "s", "m", NULL), 0);
	assert_int_equal(f->o.mount_attr_set,
			 MOUNT_ATTR_NODIRATIME | MOUNT_ATTR_STRICTATIME);
	assert_true(f->o.mount_attr_clr & MOUNT_ATTR__ATIME);
	assert_int_equal(f->o.n_mount_opts, 0);

	assert_int_equal(
		parse(f, "-o", "strictatime,relatime,diratime", "s", "m", NULL),
		0);
	assert_int_equal(f->o.mount_attr_set, MOUNT_ATTR_RELATIME);
	assert_true(f->o.mount_attr_clr & MOUNT_ATTR_NODIRATIME);
}

static void test_help_and_version(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, "--help", NULL), 0);
	assert_true(f->o.show_help);
	afs_opts_init(&f->o);
	assert_int_equal(parse(f, "-V", NULL), 0);
	assert_true(f->o.show_version);
}

/* What --help writes (free() it). */
static char *help_text(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	assert_non_null(m);
	afs_opts_help(m);
	fclose(m);
	return text;
}

static void test_help_lists_options(void **state)
{
	char *text = help_text();

	(void)state;
	assert_non_null(strstr(text, "usage: aheadfs"));
	assert_non_null(strstr(text, "max_threads=N"));
	assert_non_null(strstr(text, "no_default_permissions"));
	assert_non_null(strstr(text, "allow_other"));
	free(text);
}

/* One definition of each default: the parser starts from the data path's
 * own initialiser (write-behind on), and --help writes the defaults from
 * the macros, "0: off" for the options 0 turns off. */
static void test_default_definitions(void **state)
{
	struct fixture *f = *state;
	struct afs_data_config c;
	char *text = help_text();

	afs_data_config_init(&c);
	assert_memory_equal(&f->o.data, &c, sizeof(c));
	assert_int_equal(c.write_behind, AFS_WRITE_BEHIND_DEFAULT);
	assert_int_equal(f->o.max_threads, AFS_MAX_THREADS_DEFAULT);
	assert_int_equal(f->o.warm_rate, AFS_WARM_RATE_DEFAULT);
	assert_non_null(strstr(text, "(default 8M; 0: off)"));
	assert_non_null(strstr(text, "(default 0: off)"));
	assert_non_null(strstr(text, "(default 4096)"));
	free(text);
	/* write_behind=0 is off, not the default */
	assert_int_equal(parse(f, "-o", "write_behind=0", "s", "m", NULL), 0);
	assert_int_equal(f->o.data.write_behind, 0);
}

static void test_unknown_o_option(void **state)
{
	struct fixture *f = *state;

	assert_error(f, parse(f, "-o", "allow_other,bogus", "s", "m", NULL),
		     "unknown option '-o bogus'");
}

static void test_unknown_dash_option(void **state)
{
	struct fixture *f = *state;

	assert_error(f, parse(f, "-x", "s", "m", NULL), "unknown option '-x'");
	assert_error(f, parse(f, "--frobnicate", "s", "m", NULL),
		     "unknown option '--frobnicate'");
}

static void test_o_without_value(void **state)
{
	struct fixture *f = *state;

	assert_error(f, parse(f, "s", "m", "-o", NULL),
		     "option '-o' needs a value");
}

static void test_malformed_numbers(void **state)
{
	struct fixture *f = *state;
	const char *bad[] = {"max_threads=abc",
			     "max_threads=",
			     "max_threads=0",
			     "max_threads=-1",
			     "max_threads=+3",
			     "max_threads=4097",
			     "max_threads=99999999999999999999",
			     "max_idle_threads=1x",
			     "attr_timeout=nan",
			     "attr_timeout=-1",
			     "entry_timeout=1e9",
			     "entry_timeout=inf"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char opt[64];

		snprintf(opt, sizeof(opt), "%s", bad[i]);
		afs_opts_free(&f->o);
		afs_opts_init(&f->o);
		int rc = parse(f, "-o", opt, "s", "m", NULL);

		if (strchr(bad[i], '=')[1] == '\0')
			assert_error(f, rc, "needs a value");
		else
			assert_error(f, rc, "bad value");
	}
}

/* -o watch=: the default, every name, and a bad one naming them all. */
/* -o NAME=VALUE for each VALUE of @names sets the option's field (at @off
 * in struct afs_opts) to VALUE's index; @bad is refused with @expected,
 * and a parse without the option leaves the default, index 0. */
static void check_enum_option(struct fixture *f, const char *name,
			      const char *const *names, size_t off,
			      const char *bad, const char *expected)
{
	char opt[64];

	assert_int_equal(parse(f, "s", "m", NULL), 0);
	assert_int_equal(*(int *)((char *)&f->o + off), 0);
	for (int i = 0; names[i]; i++) {
		snprintf(opt, sizeof(opt), "%s=%s", name, names[i]);
		afs_opts_free(&f->o);
		afs_opts_init(&f->o);
		assert_int_equal(parse(f, "-o", opt, "s", "m", NULL), 0);
		assert_int_equal(*(int *)((char *)&f->o + off), i);
	}
	afs_opts_free(&f->o);
	afs_opts_init(&f->o);
	snprintf(opt, sizeof(opt), "%s=%s", name, bad);
	assert_error(f, parse(f, "-o", opt, "s", "m", NULL), expected);
	assert_int_equal(*(int *)((char *)&f->o + off), 0);
}

static void test_watch_option(void **state)
{
	_Static_assert(AFS_WATCH_AUTO == 0 && AFS_WATCH_OFF == 3,
		       "afs_watch_mode_names is indexed by the enum");
	check_enum_option(*state, "watch", afs_watch_mode_names,
			  offsetof(struct afs_opts, watch), "dnotify",
			  "expected auto, fanotify, inotify or off");
}

static void test_passthrough_option(void **state)
{
	struct fixture *f = *state;

	check_enum_option(f, "passthrough", afs_passthrough_names,
			  offsetof(struct afs_opts, passthrough), "reads",
			  "expected resident, writes, all or off");
	assert_int_equal(f->o.passthrough, AFS_PASSTHROUGH_RESIDENT);
	assert_error(f, parse(f, "-o", "passthrough", "s", "m", NULL),
		     "needs a value");
}

static void test_value_where_none_taken(void **state)
{
	struct fixture *f = *state;

	assert_error(f, parse(f, "-o", "allow_other=1", "s", "m", NULL),
		     "takes no value");
	assert_error(f, parse(f, "-o", "clone_fd=yes", "s", "m", NULL),
		     "takes no value");
}

static void test_missing_value(void **state)
{
	struct fixture *f = *state;

	assert_error(f, parse(f, "-o", "fsname", "s", "m", NULL),
		     "needs a value");
	assert_error(f, parse(f, "-o", "fsname=", "s", "m", NULL),
		     "needs a value");
}

static void test_missing_and_extra_arguments(void **state)
{
	struct fixture *f = *state;

	assert_error(f, parse(f, NULL), "missing SOURCE and MOUNTPOINT");
	assert_error(f, parse(f, "-f", "src", NULL), "missing MOUNTPOINT");
	afs_opts_init(&f->o);
	assert_error(f, parse(f, "a", "b", "c", NULL),
		     "unexpected argument 'c'");
}

static void test_conflicting_permissions(void **state)
{
	struct fixture *f = *state;

	assert_error(f,
		     parse(f, "-o",
			   "default_permissions,no_default_permissions", "s",
			   "m", NULL),
		     "conflict");
}

/* Zero-message opens: parsed, they imply default_permissions (also for a
 * daemon that is not root), and refuse what needs an OPEN. */
static void test_opens_none(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, "-o", "opens=none", "s", "m", NULL), 0);
	assert_int_equal(f->o.opens, AFS_OPENS_NONE);
	assert_true(afs_opts_default_permissions(&f->o));
	afs_opts_free(&f->o);
	afs_opts_init(&f->o);
	assert_int_equal(parse(f, "-o", "opens=message", "s", "m", NULL), 0);
	assert_int_equal(f->o.opens, AFS_OPENS_MESSAGE);
	afs_opts_free(&f->o);
	afs_opts_init(&f->o);
	assert_error(f, parse(f, "-o", "opens=few", "s", "m", NULL),
		     "expected message or none");
	afs_opts_free(&f->o);
	afs_opts_init(&f->o);
	assert_error(f,
		     parse(f, "-o", "opens=none,no_default_permissions", "s",
			   "m", NULL),
		     "conflict");
	afs_opts_free(&f->o);
	afs_opts_init(&f->o);
	assert_error(
		f,
		parse(f, "-o", "read_mode=direct,opens=none", "s", "m", NULL),
		"direct reads need the OPEN's reply");
}

static void test_double_dash(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(parse(f, "--", "-src", "-mnt", NULL), 0);
	assert_string_equal(f->o.source, "-src");
	assert_string_equal(f->o.mountpoint, "-mnt");
}

/* afs_opts_check() against real paths in the scratch directory. */
static int check(struct fixture *f, const char *src, const char *mnt)
{
	char s[128], m[128];

	snprintf(s, sizeof(s), "%s/%s", f->dir, src);
	if (mnt[0] == '/')
		snprintf(m, sizeof(m), "%s", mnt);
	else
		snprintf(m, sizeof(m), "%s/%s", f->dir, mnt);
	afs_opts_free(&f->o);
	f->o.source = s;
	f->o.mountpoint = m;
	f->err[0] = '\0';
	int rc = afs_opts_check(&f->o, f->err, sizeof(f->err));

	f->o.source = f->o.mountpoint = NULL; /* stack strings */
	return rc;
}

static void make(struct fixture *f, const char *name, bool dir)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", f->dir, name);
	if (dir) {
		assert_int_equal(mkdir(p, 0755), 0);
	} else {
		FILE *fp = fopen(p, "w");

		assert_non_null(fp);
		fclose(fp);
	}
}

/* Checks that must get past the device check: /dev/null stands in for
 * /dev/fuse (which a test machine may lack). */
static void use_null_as_fuse(struct fixture *f)
{
	f->o.fuse_dev = "/dev/null";
	f->o.fuse_rdev = makedev(1, 3);
}

static void test_check_ok(void **state)
{
	struct fixture *f = *state;

	make(f, "src", true);
	make(f, "mnt", true);
	use_null_as_fuse(f);
	assert_int_equal(check(f, "src", "mnt"), 0);
}

static void test_check_source_errors(void **state)
{
	struct fixture *f = *state;

	make(f, "file", false);
	make(f, "mnt", true);
	assert_int_equal(check(f, "nosuch", "mnt"), -ENOENT);
	assert_non_null(strstr(f->err, "SOURCE"));
	assert_non_null(strstr(f->err, "No such file or directory"));
	assert_int_equal(check(f, "file", "mnt"), -ENOTDIR);
	assert_non_null(strstr(f->err, "is not a directory"));
}

static void test_check_mountpoint_errors(void **state)
{
	struct fixture *f = *state;

	make(f, "src", true);
	make(f, "file", false);
	assert_int_equal(check(f, "src", "nosuch"), -ENOENT);
	assert_non_null(strstr(f->err, "MOUNTPOINT"));
	assert_int_equal(check(f, "src", "file"), -ENOTDIR);
	/* /proc is a mount point on every Linux system */
	assert_int_equal(check(f, "src", "/proc"), -EBUSY);
	assert_non_null(strstr(f->err, "already a mount point"));
}

static void test_check_loop(void **state)
{
	struct fixture *f = *state;

	make(f, "src", true);
	make(f, "src/inner", true);
	make(f, "srcx", true);
	assert_int_equal(check(f, "src", "src/inner"), -ELOOP);
	assert_non_null(strstr(f->err, "inside SOURCE"));
	assert_int_equal(check(f, "src", "src"), -ELOOP);
	use_null_as_fuse(f);
	/* a sibling sharing the prefix is not inside */
	assert_int_equal(check(f, "src", "srcx"), 0);
}

/* warm_state=: an absolute path (the last one wins), never inside
 * MOUNTPOINT; warm_interval= and warm_rate= as their kinds. */
static void test_warm_state(void **state)
{
	struct fixture *f = *state;
	char s[128], m[128], in[160];

	assert_error(f, parse(f, "-o", "warm_state=rel/x", "s", "m", NULL),
		     "expected an absolute path");
	assert_int_equal(parse(f, "-o",
			       "warm_state=/a,warm_state=/var/x,warm_interval="
			       "5,warm_rate=1M",
			       "s", "m", NULL),
			 0);
	assert_string_equal(f->o.warm_state, "/var/x");
	assert_int_equal(f->o.warm_interval, 5);
	assert_int_equal(f->o.warm_rate, 1 << 20);
	assert_error(f, parse(f, "-o", "warm_interval=0", "s", "m", NULL),
		     "warm_interval");
	make(f, "src", true);
	make(f, "mnt", true);
	use_null_as_fuse(f);
	snprintf(s, sizeof(s), "%s/src", f->dir);
	snprintf(m, sizeof(m), "%s/mnt", f->dir);
	snprintf(in, sizeof(in), "%s/mnt/state", f->dir);
	free(f->o.warm_state);
	f->o.warm_state = strdup(in);
	f->o.source = s;
	f->o.mountpoint = m;
	assert_int_equal(afs_opts_check(&f->o, f->err, sizeof(f->err)),
			 -EINVAL);
	assert_non_null(strstr(f->err, "inside MOUNTPOINT"));
	free(f->o.source_real);
	free(f->o.mountpoint_real);
	f->o.source_real = f->o.mountpoint_real = NULL;
	snprintf(in, sizeof(in), "%s/mntx", f->dir); /* a sibling: fine */
	free(f->o.warm_state);
	f->o.warm_state = strdup(in);
	assert_int_equal(afs_opts_check(&f->o, f->err, sizeof(f->err)), 0);
	f->o.source = f->o.mountpoint = NULL;
}

static void test_check_no_fuse_device(void **state)
{
	struct fixture *f = *state;

	make(f, "src", true);
	make(f, "mnt", true);
	f->o.fuse_dev = "/nonexistent/fuse";
	assert_int_equal(check(f, "src", "mnt"), -ENODEV);
	assert_non_null(strstr(f->err, "no /nonexistent/fuse"));
}

/* A device that opens but is not FUSE (a bind mount of /dev/null over
 * /dev/fuse) is refused before mounting. */
static void test_check_wrong_fuse_device(void **state)
{
	struct fixture *f = *state;

	make(f, "src", true);
	make(f, "mnt", true);
	f->o.fuse_dev = "/dev/null";
	assert_int_equal(check(f, "src", "mnt"), -ENODEV);
	assert_non_null(strstr(f->err, "/dev/null is not the FUSE device"));
}

static bool args_have(const struct fuse_args *a, const char *opt)
{
	for (int i = 0; i < a->argc; i++)
		if (strstr(a->argv[i], opt))
			return true;
	return false;
}

static void test_fuse_args(void **state)
{
	struct fixture *f = *state;
	struct fuse_args a;

	assert_int_equal(parse(f, "-o", "allow_other,noatime", "s", "m", NULL),
			 0);
	assert_int_equal(afs_opts_fuse_args(&f->o, &a), 0);
	assert_string_equal(a.argv[0], "aheadfs");
	assert_true(args_have(&a, "default_permissions"));
	assert_true(args_have(&a, "allow_other"));
	assert_true(args_have(&a, "noatime"));
	assert_true(args_have(&a, "fsname=s"));
	assert_true(args_have(&a, "subtype=aheadfs"));
	fuse_opt_free_args(&a);
	/* allow_other turns it on whoever runs the daemon; no warning */
	assert_true(afs_opts_default_permissions(&f->o));
	assert_null(afs_opts_permission_warning(&f->o, 0));
	assert_null(afs_opts_permission_warning(&f->o, 1000));
}

/* Without allow_other only the mount's owner (and root) reach the mount:
 * default_permissions only when asked for. */
static void test_default_permissions_without_allow_other(void **state)
{
	struct fixture *f = *state;
	struct fuse_args a;

	assert_int_equal(parse(f, "s", "m", NULL), 0);
	assert_false(afs_opts_default_permissions(&f->o));
	assert_int_equal(afs_opts_fuse_args(&f->o, &a), 0);
	assert_false(args_have(&a, "default_permissions"));
	fuse_opt_free_args(&a);

	afs_opts_free(&f->o);
	afs_opts_init(&f->o);
	assert_int_equal(parse(f, "-o", "default_permissions", "s", "m", NULL),
			 0);
	assert_true(afs_opts_default_permissions(&f->o));
	assert_int_equal(afs_opts_fuse_args(&f->o, &a), 0);
	assert_true(args_have(&a, "default_permissions"));
	fuse_opt_free_args(&a);
}

static void test_default_permissions_refused(void **state)
{
	struct fixture *f = *state;
	struct fuse_args a;

	assert_int_equal(parse(f, "-o", "allow_other,no_default_permissions",
			       "s", "m", NULL),
			 0);
	assert_false(afs_opts_default_permissions(&f->o));
	/* names are looked up again, as the caller, every time */
	assert_true(afs_opts_entry_timeout(&f->o) == 0);
	assert_int_equal(afs_opts_fuse_args(&f->o, &a), 0);
	assert_false(args_have(&a, "default_permissions"));
	fuse_opt_free_args(&a);
	/* root acts as each caller: no warning; a user's daemon cannot */
	assert_null(afs_opts_permission_warning(&f->o, 0));
	assert_non_null(afs_opts_permission_warning(&f->o, 1000));
	assert_non_null(strstr(afs_opts_permission_warning(&f->o, 1000),
			       "rights of the daemon's owner"));
}

static void test_fsname_escaped(void **state)
{
	struct fixture *f = *state;
	struct fuse_args a;

	assert_int_equal(parse(f, "s", "m", NULL), 0);
	f->o.source_real = strdup("/data/a,b");
	assert_int_equal(afs_opts_fuse_args(&f->o, &a), 0);
	assert_true(args_have(&a, "fsname=/data/a\\,b"));
	fuse_opt_free_args(&a);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_defaults),
		T(test_fuse_flags_and_values),
		T(test_debug_implies_foreground),
		T(test_mount_fuse3_style),
		T(test_attached_o_and_escapes),
		T(test_rw_after_ro),
		T(test_atime_mount_attrs),
		T(test_help_and_version),
		T(test_help_lists_options),
		T(test_default_definitions),
		T(test_unknown_o_option),
		T(test_unknown_dash_option),
		T(test_o_without_value),
		T(test_malformed_numbers),
		T(test_value_where_none_taken),
		T(test_missing_value),
		T(test_missing_and_extra_arguments),
		T(test_conflicting_permissions),
		T(test_opens_none),
		T(test_double_dash),
		T(test_check_ok),
		T(test_check_source_errors),
		T(test_check_mountpoint_errors),
		T(test_check_loop),
		T(test_check_no_fuse_device),
		T(test_check_wrong_fuse_device),
		T(test_fuse_args),
		T(test_default_permissions_refused),
		T(test_default_permissions_without_allow_other),
		T(test_fsname_escaped),
		T(test_warm_state),
		T(test_watch_option),
		T(test_passthrough_option),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
