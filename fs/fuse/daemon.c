/* daemon.c - afs_main(): from the command line to a served mount and back.
 *
 *   parse and check options (opts.c)    errors: one stderr line, exit 1,
 *   raise RLIMIT_NOFILE                 nothing mounted
 *   open SOURCE, enter it as the root node
 *   set up the backing watcher (fs/watch/watch.h, -o watch=)
 *   fuse_session_new + signal handlers + mount
 *   daemonize unless -f (then log to syslog)
 *   start the data path, then the watcher's thread (serves no request)
 *   serve: fuse_session_loop_mt (clone_fd, max_threads, max_idle_threads)
 *          or fuse_session_loop with -s
 *   unmount, free everything, exit 0 (also after SIGTERM/SIGINT/SIGHUP or
 *   fusermount3 -u)
 *
 * The inode table holds one O_PATH fd per inode the kernel knows, so the
 * soft open-file limit (often 1024) is raised to the hard one (root first
 * raises the hard limit to fs.nr_open).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/data/data.h"
#include "fs/data/tbuf.h"
#include "fs/fuse/daemon.h"
#include "fs/warm/warm.h"
#include "fuse_internal.h"
#include "log.h"
#include "notify.h"
#include "uring.h"

static const struct fuse_lowlevel_ops afs_ops = {
	.init = afs_op_init,
	.lookup = afs_op_lookup,
	.forget = afs_op_forget,
	.forget_multi = afs_op_forget_multi,
	.getattr = afs_op_getattr,
	.setattr = afs_op_setattr,
	.readlink = afs_op_readlink,
	.mknod = afs_op_mknod,
	.mkdir = afs_op_mkdir,
	.symlink = afs_op_symlink,
	.link = afs_op_link,
	.unlink = afs_op_unlink,
	.rmdir = afs_op_rmdir,
	.rename = afs_op_rename,
	.statfs = afs_op_statfs,
	.access = afs_op_access,
	.opendir = afs_op_opendir,
	.readdir = afs_op_readdir,
	.readdirplus = afs_op_readdirplus,
	.releasedir = afs_op_releasedir,
	.fsyncdir = afs_op_fsyncdir,
	.open = afs_op_open,
	.create = afs_op_create,
	.read = afs_op_read,
	.write_buf = afs_op_write_buf,
	.flush = afs_op_flush,
	.release = afs_op_release,
	.fsync = afs_op_fsync,
	.fallocate = afs_op_fallocate,
	.lseek = afs_op_lseek,
	.copy_file_range = afs_op_copy_file_range,
	.getxattr = afs_op_getxattr,
	.setxattr = afs_op_setxattr,
	.listxattr = afs_op_listxattr,
	.removexattr = afs_op_removexattr,
	/* No getlk/setlk/flock: locks stay with the kernel's local lock
	 * handling (the daemon is one process; locks it took on the backing
	 * for every client would exclude no one). */
};

static void raise_nofile(void)
{
	struct rlimit rl;
	FILE *f;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	f = fopen("/proc/sys/fs/nr_open", "r");
	if (f) {
		unsigned long long nr;

		if (geteuid() == 0 && fscanf(f, "%llu", &nr) == 1 &&
		    nr > rl.rlim_max) {
			struct rlimit hi = {nr, nr};

			if (!setrlimit(RLIMIT_NOFILE, &hi))
				rl = hi;
		}
		fclose(f);
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		afs_log(LOG_WARNING, "cannot raise the open file limit: %s",
			strerror(errno));
}

void afs_open_add(struct afs_fs *fs, struct afs_open *h)
{
	pthread_mutex_lock(&fs->open_lock);
	h->prev = &fs->open_list;
	h->next = fs->open_list.next;
	h->next->prev = h;
	fs->open_list.next = h;
	pthread_mutex_unlock(&fs->open_lock);
}

void afs_open_release(struct afs_fs *fs, struct afs_open *h)
{
	pthread_mutex_lock(&fs->open_lock);
	h->prev->next = h->next;
	h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->open_lock);
	h->free(h);
}

void afs_open_release_all(struct afs_fs *fs)
{
	while (fs->open_list.next != &fs->open_list)
		afs_open_release(fs, fs->open_list.next);
}

static int fs_init(struct afs_fs *fs, const struct afs_opts *o)
{
	struct stat st;
	uint32_t fsidx;
	int fd, rc;

	memset(fs, 0, sizeof(*fs));
	fs->opts = o;
	fs->as_root = geteuid() == 0;
	/* The kernel checks permissions (and POSIX ACLs) unless refused;
	 * with allow_other, default_permissions is also a mount option
	 * (afs_opts_fuse_args()). */
	fs->default_permissions = !o->no_default_permissions;
	fs->attr_timeout = o->attr_timeout;
	fs->entry_timeout = afs_opts_entry_timeout(o);
	fs->open_list.next = fs->open_list.prev = &fs->open_list;
	rc = -pthread_mutex_init(&fs->open_lock, NULL);
	if (rc)
		return rc;
	rc = afs_itable_init(&fs->itable);
	if (rc) {
		pthread_mutex_destroy(&fs->open_lock);
		return rc;
	}
	afs_pt_init(&fs->pt, (enum afs_passthrough)o->passthrough);
	fd = open(o->source_real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		rc = -errno;
		goto out_close;
	}
	rc = afs_itable_fsidx(&fs->itable, st.st_dev, fd, &fsidx);
	if (rc)
		goto out_close;
	return afs_itable_set_root(&fs->itable, fsidx, st.st_ino, fd,
				   st.st_mode, afs_fhandle_generation(fd));

out_close:
	if (fd >= 0)
		close(fd);
	afs_pt_destroy(&fs->pt);
	afs_itable_destroy(&fs->itable);
	pthread_mutex_destroy(&fs->open_lock);
	return rc;
}

/* Atime options libfuse cannot pass: set them on the new mount.  A user
 * mount may not be allowed to; it then keeps the kernel's defaults. */
static void apply_mount_attrs(const struct afs_opts *o)
{
	struct mount_attr a = {.attr_set = o->mount_attr_set,
			       .attr_clr = o->mount_attr_clr};

	if (!a.attr_set && !a.attr_clr)
		return;
	if (mount_setattr(AT_FDCWD, o->mountpoint_real, 0, &a, sizeof(a)))
		afs_log(LOG_WARNING, "cannot set the atime options: %s",
			strerror(errno));
}

static void data_config(const struct afs_opts *o, struct afs_data_config *c)
{
	*c = o->data;
	c->threads = o->single_thread ? 1 : o->max_threads;
	c->ra.auto_floor_bytes = AFS_RA_AUTO_FLOOR;
}

static unsigned serving_threads(const struct afs_opts *o)
{
	return o->single_thread ? 1 : o->max_threads;
}

/* The cache's part of the option checks, before anything is mounted. */
static int check_ahead(const struct afs_opts *o)
{
	struct afs_data_config c;
	char err[AFS_ERRLEN];

	data_config(o, &c);
	if (afs_data_check(&c, serving_threads(o), err, sizeof(err))) {
		afs_log(LOG_ERR, "%s", err);
		return -EINVAL;
	}
	return 0;
}

static void release_fc(struct afs_fcache *fc)
{
	afs_fcache_put(fc);
}

/* -o warm_state=: the warm-up and the checkpoints over SOURCE's own
 * filesystem.  A failure to start leaves the mount cold, and says so. */
static void start_warm(struct afs_fs *fs, const struct afs_opts *o)
{
	struct afs_warm_config wc = {.path = o->warm_state,
				     .interval_s = o->warm_interval,
				     .rate_bytes = o->warm_rate,
				     .log = afs_log};
	struct afs_backing_fs b;
	int rc;

	if (!o->warm_state)
		return;
	rc = afs_itable_backing(&fs->itable, 0, &b);
	if (!rc) {
		wc.dev = b.dev;
		wc.mount_fd = b.mount_fd;
		wc.handles = b.handles;
		rc = afs_warm_start(fs->data, &wc, &fs->warm);
	}
	if (rc)
		afs_log(LOG_WARNING, "warm_state %s: cannot start: %s",
			o->warm_state, strerror(-rc));
}

static void stop_notifier(struct afs_fs *fs)
{
	uint64_t sent, dropped;

	afs_notifier_stop(fs->notifier, &sent, &dropped);
	fs->notifier = NULL;
	if (dropped)
		afs_log(LOG_INFO,
			"notifier: %llu page invalidations sent, %llu dropped "
			"(queue full)",
			(unsigned long long)sent, (unsigned long long)dropped);
}

static int serve(struct fuse_session *se, const struct afs_opts *o)
{
	struct fuse_loop_config *cfg;
	int rc;

	if (o->single_thread) {
		rc = fuse_session_loop(se);
		afs_thread_buf_release();
		return rc;
	}
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(cfg, o->clone_fd);
	fuse_loop_cfg_set_max_threads(cfg, o->max_threads);
	fuse_loop_cfg_set_idle_threads(cfg, o->max_idle_threads);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

static int run(struct afs_opts *o)
{
	struct fuse_args args;
	struct fuse_session *se;
	struct afs_data_config cfg;
	char err[AFS_ERRLEN];
	const char *warning;
	char watching[AFS_ERRLEN];
	struct afs_watch *watch = NULL;
	struct afs_fs fs;
	int rc, status = 1;

	raise_nofile();
	rc = afs_creds_init();
	if (!rc)
		rc = afs_thread_buf_key_init();
	if (rc) {
		afs_log(LOG_ERR, "cannot set up: %s", strerror(-rc));
		return 1;
	}
	if (check_ahead(o))
		return 1;
	rc = fs_init(&fs, o);
	if (rc) {
		afs_log(LOG_ERR, "cannot open SOURCE '%s': %s", o->source,
			strerror(-rc));
		return 1;
	}
	warning = afs_opts_permission_warning(o, geteuid());
	if (warning)
		afs_log(LOG_WARNING, "%s", warning);
	/* Before mounting: an explicit watch= that cannot work is an error
	 * with nothing mounted. */
	rc = afs_watch_open(o->watch, o->source_real, &watch, watching,
			    sizeof(watching), err, sizeof(err));
	if (rc) {
		afs_log(LOG_ERR, "-o watch=%s: %s",
			ra_name_of(afs_watch_mode_names, o->watch), err);
		goto out_fs;
	}
	rc = afs_opts_fuse_args(o, &args);
	if (rc) {
		afs_log(LOG_ERR, "out of memory");
		goto out_fs;
	}
	/* libfuse's own complaints become part of our one line */
	afs_log_capture_fuse(true);
	se = fuse_session_new(&args, &afs_ops, sizeof(afs_ops), &fs);
	fuse_opt_free_args(&args);
	if (!se) {
		afs_log(LOG_ERR, "cannot create the FUSE session: %s",
			afs_log_captured());
		afs_log_capture_fuse(false);
		goto out_fs;
	}
	fs.se = se;
	if (fuse_set_signal_handlers(se)) {
		afs_log(LOG_ERR, "cannot install signal handlers: %s",
			afs_log_captured());
		afs_log_capture_fuse(false);
		goto out_session;
	}
	if (fuse_session_mount(se, o->mountpoint_real)) {
		afs_log(LOG_ERR, "cannot mount on '%s': %s", o->mountpoint,
			afs_log_captured());
		afs_log_capture_fuse(false);
		goto out_signals;
	}
	afs_log_capture_fuse(false);
	rc = afs_devio_install(se);
	if (!rc && o->transport == AFS_TRANSPORT_URING)
		rc = afs_uring_create(se, o->uring_depth, &fs.uring);
	if (rc) {
		afs_log(LOG_ERR, "cannot serve /dev/fuse: %s", strerror(-rc));
		goto out_unmount;
	}
	apply_mount_attrs(o);
	if (!o->foreground)
		afs_log_to_syslog();
	if (fuse_daemonize(o->foreground)) {
		afs_log(LOG_ERR, "cannot go to the background");
		goto out_unmount;
	}
	/* Threads of the cache and the readahead engine start after the
	 * fork of fuse_daemonize(), which would not carry them over. */
	data_config(o, &cfg);
	rc = afs_data_create(&cfg, &fs.data, err, sizeof(err));
	if (rc) {
		afs_log(LOG_ERR, "%s", err);
		goto out_unmount;
	}
	fs.itable.release_fc = release_fc;
	afs_pt_attach(&fs.pt, fuse_session_fd(se));
	start_warm(&fs, o);
	fs.watch = watch;
	afs_log(LOG_INFO, "%s", watching);
	rc = afs_notifier_start(se, &fs.notifier);
	if (rc) {
		afs_log(LOG_ERR, "cannot start the notifier: %s",
			strerror(-rc));
		goto out_unmount;
	}
	rc = afs_watch_start(watch, &afs_watch_adapter, &fs);
	if (rc) {
		afs_log(LOG_ERR, "cannot start the watcher: %s", strerror(-rc));
		goto out_unmount;
	}
	rc = serve(se, o);
	/* 0: unmounted (fusermount3 -u); > 0: the signal that stopped us;
	 * < 0: an error of the loop. */
	if (rc < 0)
		afs_log(LOG_ERR, "serving stopped: %s", strerror(-rc));
	else
		status = 0;
out_unmount:
	/* Their threads send notifications on @se: stopped first. */
	fs.watch = NULL;
	afs_watch_close(watch);
	watch = NULL;
	stop_notifier(&fs);
	/* Files still open at exit close no backing id: the connection's end
	 * frees them. */
	afs_pt_detach(&fs.pt);
	/* The rings' workers serve until here (their requests' handlers
	 * use the notifier and the watcher no more than the loop's). */
	afs_uring_stop(fs.uring);
	fuse_session_unmount(se);
	/* Unmounted, the map is saved while every file is still in the
	 * table (fs.warm is NULL where no warm-up started). */
	afs_warm_stop(fs.warm);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_fs:
	/* Files programs still held when we stopped get no RELEASE; they,
	 * then the inode entries, release their files' cache state before
	 * the cache goes. */
	fs.watch = NULL;
	afs_watch_close(watch);
	afs_pt_detach(&fs.pt);
	afs_open_release_all(&fs);
	afs_itable_destroy(&fs.itable);
	afs_data_destroy(fs.data);
	afs_pt_destroy(&fs.pt);
	afs_uring_free(fs.uring);
	pthread_mutex_destroy(&fs.open_lock);
	return status;
}

int afs_main(int argc, char **argv)
{
	char err[AFS_ERRLEN] = "";
	struct afs_opts o;
	int rc, status;

	afs_opts_init(&o);
	rc = afs_opts_parse(&o, argc, argv, err, sizeof(err));
	if (!rc && o.show_help) {
		afs_opts_help(stdout);
		afs_opts_free(&o);
		return 0;
	}
	if (!rc && o.show_version) {
		printf("aheadfs %s (libfuse %s)\n", AHEADFS_VERSION,
		       fuse_pkgversion());
		afs_opts_free(&o);
		return 0;
	}
	if (!rc)
		rc = afs_opts_check(&o, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "aheadfs: %s\n", err);
		afs_opts_free(&o);
		return 1;
	}
	status = run(&o);
	afs_opts_free(&o);
	return status;
}
