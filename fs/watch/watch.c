/* watch.c - the backing watcher's two backends and its thread; see
 * watch.h.
 *
 * fanotify: one mark on SOURCE's filesystem; each event's info records
 * (FAN_EVENT_INFO_TYPE_FID: the object, _DFID_NAME: its directory and
 * name) are decoded in place.  inotify: a chained hash of watched
 * directories by watch descriptor, each with an O_PATH fd that names in
 * it are fstatat()'ed through.  The thread polls the notification fd and
 * an eventfd that afs_watch_close() writes to stop it.
 */
#include "fs/watch/watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "cache/base/count.h"
#include "fs/fhandle/fhandle.h"

#define FAN_EVENTS                                                             \
	(FAN_MODIFY | FAN_ATTRIB | FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM |  \
	 FAN_MOVED_TO | FAN_ONDIR)
#define FAN_NAME_EVENTS                                                        \
	(FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO)
#define IN_EVENTS                                                              \
	(IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM |       \
	 IN_MOVED_TO | IN_ONLYDIR | IN_EXCL_UNLINK)
#define IN_NAME_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
#define EVENT_BUF (64u << 10)
/* After a wake-up the thread waits this long before reading, so that a
 * burst of writes to one file (by one writer) merges in the kernel's queue
 * into one event: a wake-up and a lookup per burst, not per write, for at
 * most this much more latency. */
#define BATCH_NS 1000000
#define DIRS_MIN_BUCKETS 64

/* -o watch='s names (watch.h). */
const char *const afs_watch_mode_names[] = {"auto", "fanotify", "inotify",
					    "off", NULL};

/* A directory inotify watches. */
struct wdir {
	int wd;
	int fd; /* O_PATH on it */
	unsigned int seen; /* the last scan that walked it */
	dev_t dev;
	uint64_t ino;
	struct wdir *next;
};

struct afs_watch {
	enum afs_watch_mode mode; /* FANOTIFY or INOTIFY */
	int fd; /* the notification fd */
	int stop_fd; /* eventfd */
	pthread_t thread;
	bool started;
	const struct afs_watch_ops *ops;
	void *ctx;
	struct afs_watch_counts c; /* counters (cache/base/count.h) */
	pid_t self;
	/* fanotify: the marked filesystem */
	dev_t dev;
	fsid_t fsid;
	/* inotify: watched directories by wd, SOURCE, the scans of its tree */
	struct wdir **dirs;
	size_t nbuckets, ndirs;
	int root_fd; /* O_PATH */
	unsigned int scan;
	bool full; /* a watch was refused (the limit): logged once */
	char buf[EVENT_BUF] __attribute__((aligned(8))); /* the thread's */
};

static void count_result(struct afs_watch *w, enum afs_watch_result r)
{
	if (r == AFS_WATCH_DROPPED)
		afs_count(&w->c.invalidated, 1);
	else if (r == AFS_WATCH_SAME)
		afs_count(&w->c.ignored_own, 1);
	else
		afs_count(&w->c.ignored_unknown, 1);
}

static enum afs_watch_result worse(enum afs_watch_result a,
				   enum afs_watch_result b)
{
	return a > b ? a : b;
}

/* fanotify */

/* errno as the -errno to return, in one line after @what. */
static int fan_fail(const char *what, char *err, size_t errlen)
{
	int rc = -errno;

	snprintf(err, errlen, "fanotify: %s%s%s", what, strerror(-rc),
		 rc == -EPERM ? " (FAN_MARK_FILESYSTEM needs CAP_SYS_ADMIN)"
			      : "");
	return rc;
}

static int fan_open(struct afs_watch *w, const char *source, char *err,
		    size_t errlen)
{
	struct afs_fhandle_fs hfs;
	struct statfs sfs;
	struct stat st;
	int dfd;

	dfd = open(source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) || fstatfs(dfd, &sfs)) {
		int rc = -errno;

		snprintf(err, errlen, "cannot open SOURCE: %s", strerror(-rc));
		if (dfd >= 0)
			close(dfd);
		return rc;
	}
	hfs = afs_fhandle_probe(dfd);
	close(dfd);
	if (!hfs.type) {
		snprintf(err, errlen,
			 "fanotify: SOURCE's filesystem has file handles "
			 "aheadfs cannot decode (ext4 and xfs only)");
		return -EOPNOTSUPP;
	}
	w->dev = st.st_dev;
	w->fsid = sfs.f_fsid;
	w->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK |
				      FAN_REPORT_FID | FAN_REPORT_DFID_NAME,
			      O_RDONLY | O_LARGEFILE | O_CLOEXEC);
	if (w->fd < 0)
		return fan_fail("", err, errlen);
	if (fanotify_mark(w->fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_EVENTS,
			  AT_FDCWD, source))
		return fan_fail("cannot mark SOURCE's filesystem: ", err,
				errlen);
	return 0;
}

/* The identity in a FID record; false for another filesystem or a handle
 * layout not decoded. */
static bool fan_id(const struct afs_watch *w,
		   const struct fanotify_event_info_fid *fid,
		   struct afs_watch_id *id, const char **name)
{
	const struct file_handle *h = (const void *)fid->handle;

	if (memcmp(&fid->fsid, &w->fsid, sizeof(w->fsid)))
		return false;
	if (name)
		*name = (const char *)h->f_handle + h->handle_bytes;
	id->dev = w->dev;
	id->has_gen = true;
	return afs_fhandle_decode(h->handle_type, h->f_handle, h->handle_bytes,
				  &id->ino, &id->gen);
}

/* The event at @ev, its metadata copied to @m (the kernel aligns events to
 * 4 bytes only, the metadata's u64 wants 8). */
static void fan_event(struct afs_watch *w, const char *ev,
		      const struct fanotify_event_metadata *m)
{
	const struct fanotify_event_info_fid *obj = NULL, *dir = NULL;
	enum afs_watch_result r = AFS_WATCH_UNKNOWN;
	const char *p = ev + m->metadata_len;
	const char *end = ev + m->event_len;
	struct afs_watch_id id;
	const char *name = NULL;

	afs_count(&w->c.events, 1);
	if (m->mask & FAN_Q_OVERFLOW) {
		afs_count(&w->c.overflows, 1);
		w->ops->overflow(w->ctx);
		return;
	}
	if (m->pid == w->self) {
		afs_count(&w->c.ignored_own, 1);
		return;
	}
	while (p + sizeof(struct fanotify_event_info_header) <= end) {
		const struct fanotify_event_info_header *hd = (const void *)p;

		if (hd->len < sizeof(*hd) || p + hd->len > end)
			break;
		if (hd->info_type == FAN_EVENT_INFO_TYPE_FID)
			obj = (const void *)p;
		else if (hd->info_type == FAN_EVENT_INFO_TYPE_DFID_NAME)
			dir = (const void *)p;
		p += hd->len;
	}
	if ((m->mask & (FAN_MODIFY | FAN_ATTRIB)) && obj &&
	    fan_id(w, obj, &id, NULL))
		r = worse(r, w->ops->file(w->ctx, &id, true));
	if ((m->mask & FAN_NAME_EVENTS) && dir && fan_id(w, dir, &id, &name) &&
	    *name && strcmp(name, "."))
		r = worse(r, w->ops->name(w->ctx, &id, name));
	count_result(w, r);
}

static void fan_read(struct afs_watch *w, char *buf)
{
	struct fanotify_event_metadata m;

	for (;;) {
		ssize_t n = read(w->fd, buf, EVENT_BUF);

		if (n <= 0)
			return; /* EAGAIN: drained */
		for (const char *p = buf; buf + n - p >= (ssize_t)sizeof(m);
		     p += m.event_len) {
			memcpy(&m, p, sizeof(m));
			if (m.event_len < sizeof(m) ||
			    m.event_len > buf + n - p)
				break;
			if (m.vers != FANOTIFY_METADATA_VERSION)
				continue;
			if (m.fd >= 0)
				close(m.fd); /* not asked for; never */
			fan_event(w, p, &m);
		}
	}
}

/* inotify */

static size_t wd_bucket(const struct afs_watch *w, int wd)
{
	return ((uint32_t)wd * 2654435761u) & (w->nbuckets - 1);
}

static struct wdir *dir_find(struct afs_watch *w, int wd)
{
	struct wdir *d = w->dirs[wd_bucket(w, wd)];

	while (d && d->wd != wd)
		d = d->next;
	return d;
}

static void dirs_grow(struct afs_watch *w)
{
	size_t n = w->nbuckets * 2, old = w->nbuckets;
	struct wdir **b = calloc(n, sizeof(*b)), **ob = w->dirs;

	if (!b)
		return; /* slower, not wrong */
	w->dirs = b;
	w->nbuckets = n;
	for (size_t i = 0; i < old; i++)
		for (struct wdir *d = ob[i], *next; d; d = next) {
			size_t k = wd_bucket(w, d->wd);

			next = d->next;
			d->next = b[k];
			b[k] = d;
		}
	free(ob);
}

static void dir_forget(struct afs_watch *w, int wd)
{
	struct wdir **pp = &w->dirs[wd_bucket(w, wd)], *d;

	while (*pp && (*pp)->wd != wd)
		pp = &(*pp)->next;
	d = *pp;
	if (!d)
		return;
	*pp = d->next;
	close(d->fd);
	free(d);
	w->ndirs--;
}

/* Watch directory @name of @at, then every directory below it.  A
 * directory watched already is walked again (a rescan after an overflow
 * finds directories made meanwhile), once per scan: @w->scan marks the
 * ones this scan saw, so a bind mount looping back ends the walk. */
static void add_tree(struct afs_watch *w, int at, const char *name)
{
	char proc[32];
	struct wdir *d;
	struct stat st;
	struct dirent *de;
	bool keep = false;
	DIR *dp;
	int fd, rfd, wd;

	fd = openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st))
		goto out_close;
	/* Through the fd's magic link (so no IN_DONT_FOLLOW): the O_PATH
	 * open refused a symlink already. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(w->fd, proc, IN_EVENTS);
	if (wd < 0) {
		w->full = true; /* said at mount; later ones are not */
		goto out_close;
	}
	d = dir_find(w, wd);
	if (d && d->seen == w->scan)
		goto out_close; /* walked by this scan already */
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d) {
			inotify_rm_watch(w->fd, wd);
			goto out_close;
		}
		*d = (struct wdir){
			.wd = wd, .fd = fd, .dev = st.st_dev, .ino = st.st_ino};
		d->next = w->dirs[wd_bucket(w, wd)];
		w->dirs[wd_bucket(w, wd)] = d;
		keep = true;
		if (++w->ndirs > w->nbuckets)
			dirs_grow(w);
	}
	d->seen = w->scan;
	rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dp = rfd >= 0 ? fdopendir(rfd) : NULL;
	if (!dp) {
		if (rfd >= 0)
			close(rfd);
		goto out_close;
	}
	while ((de = readdir(dp)))
		if (de->d_type == DT_DIR && strcmp(de->d_name, ".") &&
		    strcmp(de->d_name, ".."))
			add_tree(w, fd, de->d_name);
	closedir(dp);

out_close:
	if (!keep)
		close(fd);
}

static int ino_open(struct afs_watch *w, const char *source, char *err,
		    size_t errlen)
{
	w->nbuckets = DIRS_MIN_BUCKETS;
	w->dirs = calloc(w->nbuckets, sizeof(*w->dirs));
	if (!w->dirs)
		return -ENOMEM;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		int rc = -errno;

		snprintf(err, errlen, "inotify: %s", strerror(-rc));
		return rc;
	}
	w->root_fd = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->root_fd < 0) {
		int rc = -errno;

		snprintf(err, errlen, "cannot open SOURCE: %s", strerror(-rc));
		return rc;
	}
	add_tree(w, w->root_fd, ".");
	if (!w->ndirs) {
		snprintf(err, errlen, "inotify: cannot watch SOURCE");
		return -ENOSPC;
	}
	return 0;
}

/* Tell every entry of directory @name of @at as a name event. */
static enum afs_watch_result tell_names(struct afs_watch *w, int at,
					const char *name)
{
	enum afs_watch_result r = AFS_WATCH_UNKNOWN;
	struct afs_watch_id id = {0};
	struct dirent *de;
	struct stat st;
	DIR *dp;
	int fd = openat(at, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return r;
	dp = fstat(fd, &st) ? NULL : fdopendir(fd);
	if (!dp) {
		close(fd);
		return r;
	}
	id.dev = st.st_dev;
	id.ino = st.st_ino;
	while ((de = readdir(dp)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = worse(r, w->ops->name(w->ctx, &id, de->d_name));
	closedir(dp);
	return r;
}

static void ino_event(struct afs_watch *w, const struct inotify_event *ev)
{
	enum afs_watch_result r = AFS_WATCH_UNKNOWN;
	struct afs_watch_id id = {0};
	struct stat st;
	struct wdir *d;

	afs_count(&w->c.events, 1);
	if (ev->mask & IN_Q_OVERFLOW) {
		afs_count(&w->c.overflows, 1);
		w->ops->overflow(w->ctx);
		/* Directories made meanwhile were never added: walk again. */
		w->scan++;
		add_tree(w, w->root_fd, ".");
		return;
	}
	if (ev->mask & IN_IGNORED) { /* the directory is gone */
		dir_forget(w, ev->wd);
		afs_count(&w->c.ignored_unknown, 1);
		return;
	}
	d = dir_find(w, ev->wd);
	if (!d) {
		afs_count(&w->c.ignored_unknown, 1);
		return;
	}
	id.dev = d->dev;
	id.ino = d->ino;
	if (!ev->len || !*ev->name) { /* the directory itself */
		if (ev->mask & (IN_MODIFY | IN_ATTRIB))
			r = w->ops->file(w->ctx, &id, false);
		count_result(w, r);
		return;
	}
	/* A directory made or moved in: watched before its name is told, and
	 * the names already in it told too -- made before its watch existed,
	 * they have no event of their own. */
	if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && (ev->mask & IN_ISDIR)) {
		add_tree(w, d->fd, ev->name);
		r = worse(r, tell_names(w, d->fd, ev->name));
	}
	if (ev->mask & IN_NAME_EVENTS)
		r = worse(r, w->ops->name(w->ctx, &id, ev->name));
	if ((ev->mask & (IN_MODIFY | IN_ATTRIB)) &&
	    !fstatat(d->fd, ev->name, &st, AT_SYMLINK_NOFOLLOW)) {
		id.dev = st.st_dev;
		id.ino = st.st_ino;
		r = worse(r, w->ops->file(w->ctx, &id, false));
	}
	count_result(w, r);
}

static void ino_read(struct afs_watch *w, char *buf)
{
	for (;;) {
		ssize_t n = read(w->fd, buf, EVENT_BUF);

		if (n <= 0)
			return;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;

			ino_event(w, ev);
			p += sizeof(*ev) + ev->len;
		}
	}
}

/* The thread */

static void *watch_thread(void *arg)
{
	struct afs_watch *w = arg;
	const struct timespec batch = {.tv_nsec = BATCH_NS};
	struct pollfd p[2] = {{.fd = w->fd, .events = POLLIN},
			      {.fd = w->stop_fd, .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		/* Stopped; or a notification fd that broke (never seen):
		 * better no watcher than one spinning. */
		if (p[1].revents || (p[0].revents & (POLLERR | POLLNVAL)))
			break;
		nanosleep(&batch, NULL);
		if (w->mode == AFS_WATCH_FANOTIFY)
			fan_read(w, w->buf);
		else
			ino_read(w, w->buf);
	}
	return NULL;
}

static void watch_free(struct afs_watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	if (w->root_fd >= 0)
		close(w->root_fd);
	for (size_t b = 0; w->dirs && b < w->nbuckets; b++)
		for (struct wdir *d = w->dirs[b], *next; d; d = next) {
			next = d->next;
			close(d->fd);
			free(d);
		}
	free(w->dirs);
	free(w);
}

static int watch_new(enum afs_watch_mode mode, const char *source,
		     struct afs_watch **out, char *err, size_t errlen)
{
	struct afs_watch *w = calloc(1, sizeof(*w));
	int rc;

	if (!w) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	w->mode = mode;
	w->fd = -1;
	w->root_fd = -1;
	w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->stop_fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "eventfd: %s", strerror(-rc));
		watch_free(w);
		return rc;
	}
	rc = mode == AFS_WATCH_FANOTIFY ? fan_open(w, source, err, errlen)
					: ino_open(w, source, err, errlen);
	if (rc) {
		watch_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int afs_watch_open(enum afs_watch_mode mode, const char *source,
		   struct afs_watch **out, char *what, size_t whatlen,
		   char *err, size_t errlen)
{
	char why[256] = "";
	int rc;

	*out = NULL;
	if (mode == AFS_WATCH_OFF) {
		snprintf(what, whatlen,
			 "watch=off: changes behind the mount are seen at the "
			 "next open (close-to-open)");
		return 0;
	}
	if (mode != AFS_WATCH_INOTIFY) {
		rc = watch_new(AFS_WATCH_FANOTIFY, source, out, err, errlen);
		if (!rc) {
			snprintf(what, whatlen,
				 "watch=fanotify: changes behind the mount "
				 "are seen as they happen (FAN_MARK_FILESYSTEM "
				 "on SOURCE's filesystem)");
			return 0;
		}
		if (mode == AFS_WATCH_FANOTIFY)
			return rc;
		snprintf(why, sizeof(why), " (%s)", err);
	}
	rc = watch_new(AFS_WATCH_INOTIFY, source, out, err, errlen);
	if (!rc) {
		snprintf(
			what, whatlen,
			"watch=inotify%s: changes behind the mount are seen as "
			"they happen in %zu directories of SOURCE%s",
			why, (*out)->ndirs,
			(*out)->full ? ", not all of them: raise "
				       "fs.inotify.max_user_watches"
				     : "");
		return 0;
	}
	if (mode == AFS_WATCH_INOTIFY)
		return rc;
	snprintf(what, whatlen,
		 "watch=off%s (%s): changes behind the mount are seen at the "
		 "next open (close-to-open)",
		 why, err);
	return 0;
}

const char *afs_watch_backend(const struct afs_watch *w)
{
	if (!w)
		return "off";
	return w->mode == AFS_WATCH_FANOTIFY ? "fanotify" : "inotify";
}

void afs_watch_stats(const struct afs_watch *w, struct afs_watch_counts *out)
{
	*out = (struct afs_watch_counts){.mode = afs_watch_backend(w)};
	if (!w)
		return;
	out->events = afs_count_read(&w->c.events);
	out->ignored_own = afs_count_read(&w->c.ignored_own);
	out->ignored_unknown = afs_count_read(&w->c.ignored_unknown);
	out->invalidated = afs_count_read(&w->c.invalidated);
	out->overflows = afs_count_read(&w->c.overflows);
}

int afs_watch_start(struct afs_watch *w, const struct afs_watch_ops *ops,
		    void *ctx)
{
	int rc;

	if (!w)
		return 0;
	w->ops = ops;
	w->ctx = ctx;
	w->self = getpid();
	rc = -pthread_create(&w->thread, NULL, watch_thread, w);
	if (!rc) {
		w->started = true;
		pthread_setname_np(w->thread, "afs-watch");
	}
	return rc;
}

void afs_watch_close(struct afs_watch *w)
{
	uint64_t one = 1;

	if (!w)
		return;
	if (w->started) {
		/* An eventfd write of 1 fails only past 2^64 - 2. */
		while (write(w->stop_fd, &one, sizeof(one)) < 0 &&
		       errno == EINTR)
			;
		pthread_join(w->thread, NULL);
	}
	watch_free(w);
}
