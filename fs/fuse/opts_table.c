/* opts_table.c - the aheadfs option table (opts_table.h) and what is written
 * from it: --help with every default, and afs_opts_doc() for the test that
 * the documentation shows the same. */
#include "opts.h"
#include "opts_table.h"

#include "ra/ra.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

const char *const afs_opens_names[] = {"message", "none", NULL};
const char *const afs_wronly_io_names[] = {"direct", "cached", NULL};
const char *const afs_transport_names[] = {
	[AFS_TRANSPORT_DEV] = "dev",
	[AFS_TRANSPORT_URING] = "uring",
	NULL,
};
const char *const afs_passthrough_names[] = {
	[AFS_PASSTHROUGH_RESIDENT] = "resident",
	[AFS_PASSTHROUGH_WRITES] = "writes",
	[AFS_PASSTHROUGH_ALL] = "all",
	[AFS_PASSTHROUGH_OFF] = "off",
	NULL,
};

#define F(field) offsetof(struct afs_opts, field)

/* A row's doc: one of the data path's options, or of the daemon's own. */
/* clang-format off */
#define DATA(zero, text, describe) {zero, text, describe, true}
#define DAEMON(zero, text, describe) {zero, text, describe, false}
/* clang-format on */

#define KIB 1024.0
#define GIB (1024.0 * 1024 * 1024)

const char *afs_opt_size_text(char buf[24], double bytes)
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

/* -o ra_max='s default: the engine's automatic cap with the daemon's
 * floor, as ra_auto_max_bytes() works it out. */
static void describe_ra_max(char *buf, size_t len)
{
	char least[24];

	snprintf(buf, len,
		 "max(%s, 2 x stripe width), rounded up to whole device "
		 "requests",
		 afs_opt_size_text(least, (double)ra_auto_max_bytes(
						  0, AFS_RA_AUTO_FLOOR, 0)));
}

/* -o entry_timeout='s default, from afs_opts_entry_timeout(). */
static void describe_entry_timeout(char *buf, size_t len)
{
	struct afs_opts o;
	double plain, no_perm;

	afs_opts_init(&o);
	plain = afs_opts_entry_timeout(&o);
	o.no_default_permissions = true;
	no_perm = afs_opts_entry_timeout(&o);
	snprintf(buf, len, "%g, or %g with no_default_permissions", plain,
		 no_perm);
}

/* The table.  --help lists it; docs/aheadfs.1, README.md and
 * docs/tuning.md show the same defaults (tests/unit/fuse/test_opts_doc.c). */
static const struct afs_opt_spec afs_opt_table[] = {
	/* aheadfs and libfuse session options */
	{"max_threads", OPT_UINT, true, F(max_threads), 1, 4096,
	 "most worker threads serving requests"},
	{"max_idle_threads", OPT_UINT, true, F(max_idle_threads), 0, 4096,
	 "idle worker threads kept alive"},
	{"clone_fd", OPT_SET, false, F(clone_fd), 0, 0,
	 "one /dev/fuse descriptor per worker thread"},
	{"no_clone_fd", OPT_CLEAR, false, F(clone_fd), 0, 0,
	 "all worker threads share one /dev/fuse descriptor"},
	{"attr_timeout", OPT_SECONDS, true, F(attr_timeout), 0, 86400,
	 "seconds the kernel may cache attributes"},
	{"entry_timeout", OPT_SECONDS, true, F(entry_timeout), 0, 86400,
	 "seconds the kernel may cache names", 0, 0, NULL,
	 DAEMON(ZERO_PLAIN, NULL, describe_entry_timeout)},
	{"default_permissions", OPT_SET, false, F(default_permissions), 0, 0,
	 "the kernel checks permissions", 0, 0, NULL,
	 DAEMON(ZERO_PLAIN, "with allow_other", NULL)},
	{"no_default_permissions", OPT_SET, false, F(no_default_permissions), 0,
	 0, "refuse default_permissions (the backing checks, per user)"},
	{"debug", OPT_SET, false, F(debug), 0, 0,
	 "trace every request on stderr (implies -f)"},
	/* the data path: the cache and readahead (fs/data/data.h, ra/ra.h),
	 * opens and writes, warm restart, the watcher */
	{"opens", OPT_ENUM, true, F(opens), 0, 0,
	 "message: open and close are FUSE requests; none: zero-message opens, "
	 "which imply default_permissions and need read_mode=kernel",
	 0, 0, afs_opens_names, DATA(ZERO_PLAIN, NULL, NULL)},
	{"wronly_io", OPT_ENUM, true, F(wronly_io), 0, 0,
	 "write-only opens in write-through mode: direct (around the kernel's "
	 "page cache, Linux 6.18 and later) or cached",
	 0, 0, afs_wronly_io_names, DATA(ZERO_PLAIN, NULL, NULL)},
	{"passthrough", OPT_ENUM, true, F(passthrough), 0, 0,
	 "opens whose reads and writes the kernel sends to the backing file "
	 "itself (FUSE passthrough, Linux 6.9 and later, a daemon with "
	 "CAP_SYS_ADMIN): resident (writable opens, and read-only opens of a "
	 "file the backing's page cache holds), writes (writable "
	 "opens), all, or off",
	 0, 0, afs_passthrough_names, DAEMON(ZERO_PLAIN, NULL, NULL)},
	{"transport", OPT_ENUM, true, F(transport), 0, 0,
	 "how requests reach aheadfs: dev (read(2) of /dev/fuse) or uring "
	 "(FUSE over io_uring, one queue per CPU: Linux 6.14 and later, fuse "
	 "module parameter enable_uring=Y; else dev)",
	 0, 0, afs_transport_names, DAEMON(ZERO_PLAIN, NULL, NULL)},
	{"uring_depth", OPT_UINT, true, F(uring_depth), 1, 256,
	 "transport=uring: worker threads per CPU queue"},
	{"read_mode", OPT_ENUM, true, F(data.read_mode), 0, 0,
	 "kernel: the kernel's page cache on top; direct: every read reaches "
	 "aheadfs",
	 0, 0, afs_read_mode_names, DATA(ZERO_PLAIN, NULL, NULL)},
	{"write_mode", OPT_ENUM, true, F(data.write_mode), 0, 0,
	 "writethrough: every write reaches the backing at once; writeback: "
	 "the kernel's writeback cache, only for data written through the "
	 "mount alone",
	 0, 0, afs_write_mode_names, DATA(ZERO_PLAIN, NULL, NULL)},
	{"cache_size", OPT_BYTES, true, F(data.cache_size), 4 * 1024 * KIB,
	 1024 * GIB, "aheadfs's page cache budget", 0, 0, NULL,
	 DATA(ZERO_AUTO,
	      "an eighth of RAM, or a quarter of a smaller memory cgroup limit",
	      NULL)},
	{"ra_max", OPT_BYTES, true, F(data.ra.max_bytes), 0, RA_MAX_BYTES_LIMIT,
	 "largest readahead window", 0, 0, NULL,
	 DATA(ZERO_AUTO, NULL, describe_ra_max)},
	{"ra_workers", OPT_UINT, true, F(data.ra.workers), 1, RA_WORKERS_MAX,
	 "readahead worker threads", 0, 0, NULL, DATA(ZERO_PLAIN, NULL, NULL)},
	{"stripe", OPT_BYTES, true, F(data.ra.stripe_bytes), 0,
	 RA_MAX_BYTES_LIMIT, "stripe width of the backing RAID", 0, 0, NULL,
	 DATA(ZERO_AUTO, "from sysfs", NULL)},
	{"chunk", OPT_BYTES, true, F(data.ra.chunk_bytes), 0,
	 RA_MAX_BYTES_LIMIT, "chunk size of the backing RAID", 0, 0, NULL,
	 DATA(ZERO_AUTO, "from sysfs", NULL)},
	{"context_ra", OPT_ENUM, true, F(data.ra.context), 0, 0,
	 "context readahead: on (conservative), loose (2009 rule) or off", 0, 0,
	 ra_context_names, DATA(ZERO_PLAIN, NULL, NULL)},
	{"stream_table", OPT_ENUM, true, F(data.ra.stream_table), 0, 0,
	 "per-file stream table for cooperative readers: on or off", 0, 0,
	 ra_stream_table_names, DATA(ZERO_PLAIN, NULL, NULL)},
	{"backing_io", OPT_ENUM, true, F(data.ra.backing_io), 0, 0,
	 "backing reads: auto (O_DIRECT where allowed), direct or buffered", 0,
	 0, ra_backing_io_names, DATA(ZERO_PLAIN, NULL, NULL)},
	{"write_behind", OPT_BYTES, true, F(data.write_behind), 0, 1 * GIB,
	 "hand each finished piece of this size of a sequential run of writes "
	 "to the backing's writeback at once",
	 0, 0, NULL, DATA(ZERO_OFF, NULL, NULL)},
	{"write_direct", OPT_BYTES, true, F(data.write_direct), 0,
	 AFS_DATA_MAX_REQUEST,
	 "write_mode=writeback: send the kernel's writes of at least this "
	 "size to the backing with O_DIRECT, e.g. 256K",
	 0, 0, NULL, DATA(ZERO_OFF, NULL, NULL)},
	{"idle_files", OPT_UINT, true, F(data.idle_files), 1,
	 AFS_IDLE_FILES_MAX,
	 "files no one uses kept with their cache, oldest dropped first", 0, 0,
	 NULL, DATA(ZERO_PLAIN, NULL, NULL)},
	{"warm_state", OPT_PATH, true, F(warm_state), 0, 0,
	 "warm restart: save the cache's map to this file (absolute path, "
	 "outside MOUNTPOINT) and read it back at the next mount",
	 0, 0, NULL, DATA(ZERO_PLAIN, "off", NULL)},
	{"warm_interval", OPT_UINT, true, F(warm_interval), 1, 86400,
	 "seconds between checkpoints of warm_state", 0, 0, NULL,
	 DATA(ZERO_PLAIN, NULL, NULL)},
	{"warm_rate", OPT_BYTES, true, F(warm_rate), 4 * KIB, 1024 * GIB,
	 "most bytes a second the warm-up reads back", 0, 0, NULL,
	 DATA(ZERO_PLAIN, NULL, NULL)},
	{"watch", OPT_ENUM, true, F(watch), 0, 0,
	 "changes behind the mount: auto (fanotify as root, else inotify), "
	 "fanotify, inotify, or off: seen at the next open",
	 0, 0, afs_watch_mode_names, DATA(ZERO_PLAIN, NULL, NULL)},
	/* kernel / libfuse mount options */
	{"allow_other", OPT_MOUNT, false, F(allow_other), 0, 0,
	 "let all users use the mount (root, or user_allow_other)"},
	{"allow_root", OPT_MOUNT, false, F(allow_root), 0, 0,
	 "let root use the mount too"},
	{"auto_unmount", OPT_MOUNT, false, NO_FIELD, 0, 0,
	 "unmount when the daemon dies (via fusermount3)"},
	{"fsname", OPT_MOUNT, true, F(has_fsname), 0, 0,
	 "source name shown in the mount table", 0, 0, NULL,
	 DAEMON(ZERO_PLAIN, "the real path of SOURCE", NULL)},
	{"subtype", OPT_MOUNT, true, F(has_subtype), 0, 0,
	 "type shown as fuse.SUBTYPE", 0, 0, NULL,
	 DAEMON(ZERO_PLAIN, AFS_SUBTYPE, NULL)},
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

#define AFS_OPT_TABLE_LEN (sizeof(afs_opt_table) / sizeof(afs_opt_table[0]))

const struct afs_opt_spec *afs_opt_find(const char *name)
{
	for (size_t i = 0; i < AFS_OPT_TABLE_LEN; i++) {
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

/* @s's default as --help writes it, from a struct afs_opts fresh from
 * afs_opts_init() (@init), into @buf; "" when --help names none.
 * *@flag_default: @s is a flag that is on by default. */
static void default_text(const struct afs_opt_spec *s,
			 const struct afs_opts *init, char *buf, size_t len,
			 bool *flag_default)
{
	const char *f =
		s->field == NO_FIELD ? NULL : (const char *)init + s->field;
	char tmp[24];
	uint64_t v;

	buf[0] = '\0';
	*flag_default = false;
	if (s->doc.describe) {
		s->doc.describe(buf, len);
		return;
	}
	if (!f)
		return;
	switch (s->kind) {
	case OPT_SET:
	case OPT_CLEAR:
		*flag_default = *(const bool *)f == (s->kind == OPT_SET) &&
				!s->doc.text;
		break;
	case OPT_UINT:
	case OPT_BYTES:
		v = s->kind == OPT_UINT ? *(const unsigned *)f
					: *(const uint64_t *)f;
		if (v == 0 && s->doc.zero == ZERO_OFF)
			snprintf(buf, len, "0: off");
		else if (v == 0 && s->doc.zero == ZERO_AUTO)
			break;
		else if (s->kind == OPT_UINT)
			snprintf(buf, len, "%" PRIu64, v);
		else
			snprintf(buf, len, "%s",
				 afs_opt_size_text(tmp, (double)v));
		return;
	case OPT_SECONDS:
		if (*(const double *)f >= 0) {
			snprintf(buf, len, "%g", *(const double *)f);
			return;
		}
		break;
	case OPT_ENUM:
		snprintf(buf, len, "%s", s->names[*(const int *)f]);
		return;
	default:
		break;
	}
	if (s->doc.text)
		snprintf(buf, len, "%s", s->doc.text);
}

/* The @i-th row --help lists. */
static const struct afs_opt_spec *listed(size_t i)
{
	for (size_t k = 0; k < AFS_OPT_TABLE_LEN; k++)
		if (afs_opt_table[k].help && !i--)
			return &afs_opt_table[k];
	return NULL;
}

int afs_opts_doc(size_t i, struct afs_opt_doc *d)
{
	const struct afs_opt_spec *s = listed(i);
	struct afs_opts init;
	bool flag;

	if (!s)
		return -ENOENT;
	afs_opts_init(&init);
	d->name = s->name;
	default_text(s, &init, d->def, sizeof(d->def), &flag);
	d->data_path = s->doc.data_path;
	return 0;
}

void afs_opts_help(FILE *out)
{
	const struct afs_opt_spec *s;
	struct afs_opts init;

	afs_opts_init(&init);
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
	for (size_t i = 0; (s = listed(i)); i++) {
		char head[64], def[128], text[512];
		bool flag;

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
		default_text(s, &init, def, sizeof(def), &flag);
		if (flag)
			snprintf(text, sizeof(text), "%s (default)", s->help);
		else if (!def[0])
			snprintf(text, sizeof(text), "%s", s->help);
		else
			snprintf(text, sizeof(text), "%s (default %s%s)",
				 s->help, def,
				 s->doc.zero == ZERO_OFF &&
						 strcmp(def, "0: off")
					 ? "; 0: off"
					 : "");
		/* wrap long help lines under the text column */
		const char *h = text;
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
