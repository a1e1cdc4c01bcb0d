/* opts.h - aheadfs command line: aheadfs [options] SOURCE MOUNTPOINT.
 *
 * One parser for everything: aheadfs's own options, the standard FUSE ones
 * (-f -d -s, -o allow_other, max_threads=, max_idle_threads=, clone_fd) and
 * the generic mount options mount.fuse3 passes from fstab (rw, ro, nosuid,
 * nodev, noatime, _netdev, defaults, user, noauto, ...).  Each -o option is
 * one row of a table (name, kind, field, range, help line): adding a checked
 * option is adding a row.  Kernel mount options are collected into a list
 * that afs_opts_fuse_args() turns into fuse_session_new() arguments.
 *
 * Defaults: each is one macro (below, fs/data/data.h, ra/ra.h,
 * fs/warm/warm.h) that afs_opts_init() puts in its field, or, where 0
 * means "worked out at mount" (cache_size, ra_max, stripe, chunk), the
 * code that works it out; --help writes them from there, and a unit test
 * (tests/unit/fuse/test_opts_doc.c) holds the man page, README.md and
 * docs/tuning.md to the same (afs_opts_doc()).
 *
 * Errors are one line (no "aheadfs:" prefix, no newline) written to the
 * caller's buffer; nothing is printed here except by afs_opts_help().
 *
 * Concurrency: none; used by main() before any thread starts.  The parsed
 * struct is read-only afterwards.
 */
#ifndef AFS_OPTS_H
#define AFS_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "fs/data/data.h"
#include "fs/watch/watch.h"

struct fuse_args;

#define AFS_ERRLEN 512

/* Defaults of the daemon's own options (afs_opts_init()). */
#define AFS_MAX_THREADS_DEFAULT 10
#define AFS_MAX_IDLE_THREADS_DEFAULT 10
#define AFS_ATTR_TIMEOUT_DEFAULT 1.0 /* seconds */
/* seconds; 0 with no_default_permissions (afs_opts_entry_timeout()) */
#define AFS_ENTRY_TIMEOUT_DEFAULT 1.0
#define AFS_SUBTYPE "aheadfs" /* the mount's type: fuse.aheadfs */

/* -o opens=: whether an open(2) costs a FUSE round trip (names
 * afs_opens_names, docs/tuning.md "opens"). */
enum afs_opens {
	AFS_OPENS_MESSAGE, /* OPEN, FLUSH (writable opens), RELEASE */
	AFS_OPENS_NONE, /* zero-message opens: no OPEN, FLUSH, RELEASE */
};
extern const char *const afs_opens_names[];

/* -o wronly_io=: how a write-only open's writes reach aheadfs in
 * write-through mode (names afs_wronly_io_names, docs/tuning.md
 * "wronly_io"). */
enum afs_wronly_io {
	AFS_WRONLY_DIRECT, /* FOPEN_DIRECT_IO: around the kernel's page cache */
	AFS_WRONLY_CACHED, /* through the kernel's page cache, as any open */
};
extern const char *const afs_wronly_io_names[];

/* -o passthrough=: which opens the kernel's FUSE passthrough serves
 * (names afs_passthrough_names, fs/fuse/passthrough.h, docs/tuning.md
 * "passthrough"). */
enum afs_passthrough {
	/* writable opens, and read-only ones of a file the backing's page
	 * cache holds, all but one page in 64 at most
	 * (ra_held_resident()) (default) */
	AFS_PASSTHROUGH_RESIDENT,
	AFS_PASSTHROUGH_WRITES, /* writable opens */
	AFS_PASSTHROUGH_ALL, /* every open */
	AFS_PASSTHROUGH_OFF, /* none */
};
extern const char *const afs_passthrough_names[];

/* -o transport=: how requests reach the daemon (names
 * afs_transport_names, fs/fuse/uring.h, docs/tuning.md "transport"). */
enum afs_transport {
	AFS_TRANSPORT_DEV, /* every request through read(2) of /dev/fuse */
	AFS_TRANSPORT_URING, /* FUSE over io_uring where the kernel offers it */
};
extern const char *const afs_transport_names[];
#define AFS_URING_DEPTH_DEFAULT 4 /* -o uring_depth=: threads per queue */

struct afs_opts {
	char *source; /* as given */
	char *mountpoint; /* as given */
	char *source_real; /* realpath(), set by afs_opts_check() */
	char *mountpoint_real; /* realpath(), set by afs_opts_check() */
	const char *fuse_dev; /* "/dev/fuse"; tests point it elsewhere */
	dev_t fuse_rdev; /* the device it must be (10,229) */

	bool show_help, show_version;
	bool foreground; /* -f (also -d) */
	bool debug; /* -d, -o debug: libfuse request trace */
	bool single_thread; /* -s */
	bool clone_fd; /* -o clone_fd (default) / no_clone_fd */
	unsigned max_threads; /* -o max_threads= */
	unsigned max_idle_threads; /* -o max_idle_threads= */
	bool allow_other, allow_root;
	bool default_permissions; /* -o default_permissions given */
	bool no_default_permissions; /* -o no_default_permissions given */
	bool read_only; /* -o ro */
	bool has_fsname, has_subtype;
	double attr_timeout; /* -o attr_timeout=, seconds */
	double entry_timeout; /* -o entry_timeout=, seconds; < 0: default */
	int opens; /* -o opens=, enum afs_opens */
	int wronly_io; /* -o wronly_io=, enum afs_wronly_io */
	int passthrough; /* -o passthrough=, enum afs_passthrough */
	int transport; /* -o transport=, enum afs_transport */
	unsigned uring_depth; /* -o uring_depth= */

	/* the cache and readahead (cache_size=, read_mode=, ra_max=,
	 * ra_workers=, stripe=, chunk=, context_ra=, stream_table=,
	 * backing_io=, write_behind=, ...), parsed straight into the data
	 * path's configuration: its fields, enums and name tables are the
	 * options' (fs/data/data.h, ra/ra.h); its defaults are
	 * afs_data_config_init()'s */
	struct afs_data_config data;
	enum afs_watch_mode watch; /* -o watch= (fs/watch/watch.h) */

	/* warm restart (fs/warm/warm.h): warm_state= (absolute, outside
	 * MOUNTPOINT; NULL: off), warm_interval= seconds, warm_rate= bytes a
	 * second (AFS_WARM_INTERVAL_DEFAULT, AFS_WARM_RATE_DEFAULT) */
	char *warm_state;
	unsigned warm_interval;
	uint64_t warm_rate;

	/* MOUNT_ATTR_* bits for mount_setattr() after mounting (atime
	 * modes libfuse 3.14 cannot pass); both 0 when none was given */
	unsigned mount_attr_set, mount_attr_clr;
	char **mount_opts; /* kernel/libfuse mount options, in order */
	size_t n_mount_opts;
};

/**
 * afs_opts_init() - Defaults: every option's, as --help shows them.
 *
 * Context: Any.
 */
void afs_opts_init(struct afs_opts *o);

/**
 * afs_opts_free() - Free what parsing and checking allocated.
 *
 * Context: Any; @o may be partly filled.
 */
void afs_opts_free(struct afs_opts *o);

/**
 * afs_opts_parse() - Parse @argv (argv[0] is the program name).
 * @err: Receives one line describing the first error.
 *
 * --help / -h and --version / -V set show_help / show_version and stop
 * parsing successfully.
 *
 * Context: Allocates.
 * Return: 0, -EINVAL for bad input (unknown option, malformed or out of
 * range value, missing or extra argument), or -ENOMEM.
 */
int afs_opts_parse(struct afs_opts *o, int argc, char **argv, char *err,
		   size_t errlen);

/**
 * afs_opts_check() - Check SOURCE, MOUNTPOINT and /dev/fuse before mounting,
 * and resolve both paths.
 * @err: Receives one line describing the first problem.
 *
 * Context: Looks at the filesystem; allocates.
 * Return: 0; -ENOENT / -ENOTDIR for a missing or non-directory SOURCE or
 * MOUNTPOINT, -EBUSY for a MOUNTPOINT that is already a mount, -ELOOP for a
 * MOUNTPOINT inside SOURCE, -ENODEV (or the open error) for no usable
 * /dev/fuse (missing, or not the FUSE character device), -ENOMEM.
 */
int afs_opts_check(struct afs_opts *o, char *err, size_t errlen);

/**
 * afs_opts_fuse_args() - Build the fuse_session_new() arguments: the mount
 * options, default_permissions where it is due (afs_opts_default_permissions()),
 * fsname=SOURCE and subtype=aheadfs unless given, and debug.
 *
 * Context: Allocates; after afs_opts_check().
 * Return: 0 or -ENOMEM (@args is then freed).
 */
int afs_opts_fuse_args(const struct afs_opts *o, struct fuse_args *args);

/**
 * afs_opts_default_permissions() - Whether default_permissions is passed to
 * the mount: the kernel then checks every user's access itself.
 *
 * Whatever user the daemon runs as: a daemon that is not root cannot act
 * as its callers, so with allow_other and nothing checking, every user of
 * the mount would act with the daemon owner's rights.
 * Context: Pure.
 * Return: true when default_permissions is given, or allow_other is and
 * no_default_permissions is not.
 */
bool afs_opts_default_permissions(const struct afs_opts *o);

/**
 * afs_opts_permission_warning() - The warning a daemon run as @euid with
 * these options must print, or NULL: allow_other and
 * no_default_permissions on a daemon that is not root (other users then
 * act with its owner's rights).
 * @euid: The daemon's effective uid (a parameter so tests can vary it).
 *
 * Context: Pure.
 */
const char *afs_opts_permission_warning(const struct afs_opts *o,
					unsigned euid);

/**
 * afs_opts_entry_timeout() - Seconds the kernel may cache names: as given,
 * else 1, or 0 with no_default_permissions (the kernel then looks every
 * path component up again, as the caller, so the backing checks search
 * permission on each directory every time).
 *
 * Context: Pure.
 */
double afs_opts_entry_timeout(const struct afs_opts *o);

/**
 * afs_opts_help() - Usage and the option table, for --help.
 *
 * Context: Writes to @out.
 */
void afs_opts_help(FILE *out);

/**
 * struct afs_opt_doc - One option as --help lists it, for the test that
 * the documentation agrees.
 * @name: The option's name ("ra_max").
 * @def: Its default as --help writes it ("4", "8M", "kernel", "0: off",
 *	"from sysfs"); "" when --help names none (a flag, a mount option).
 * @data_path: The option is a row of README.md's and docs/tuning.md's
 *	option tables too (the data path's options).
 */
struct afs_opt_doc {
	const char *name;
	char def[128];
	bool data_path;
};

/**
 * afs_opts_doc() - The @i-th option --help lists (from 0).
 *
 * Context: Pure.
 * Return: 0 (@d filled), or -ENOENT past the last.
 */
int afs_opts_doc(size_t i, struct afs_opt_doc *d);

#endif /* AFS_OPTS_H */
