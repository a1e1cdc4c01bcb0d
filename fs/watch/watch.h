/* watch.h - the backing watcher: changes made behind the mount (by programs
 * writing the backing directly), seen as they happen, for files held open
 * too -- beyond close-to-open.
 *
 * Owns: one notification descriptor on the backing (fanotify or inotify),
 * what it needs to read events (inotify: one watch per directory of
 * SOURCE's tree and an O_PATH fd on each), and one thread that reads the
 * events, counts them (struct afs_watch_counts, read by the stats with
 * afs_watch_stats()) and hands each to the adapter's callbacks (struct
 * afs_watch_ops).  It knows neither FUSE nor the caches: it turns an
 * event into a backing identity (device, inode number, generation) or a
 * name in a directory, and the adapter maps those to what it knows -- its
 * data path state (afs_fcache_find() + afs_fcache_outside()) and its node
 * ids (fuse_lowlevel_notify_inval_inode()/_inval_entry()).
 *
 * Backends (-o watch=, docs/tuning.md "Changes behind the mount"):
 *   fanotify  FAN_MARK_FILESYSTEM on SOURCE's filesystem, with
 *             FAN_REPORT_FID | FAN_REPORT_DFID_NAME: every event names the
 *             file by its file handle, decoded to (inode number,
 *             generation) without a system call (ext4's and xfs's
 *             layouts, fs/fhandle/fhandle.h), so an event outside SOURCE,
 *             or on a file the kernel never looked up, costs one table
 *             lookup in the adapter and nothing else; the event's pid
 *             tells the daemon's own writes (already coherent) apart.
 *             Needs CAP_SYS_ADMIN.  Submounts under SOURCE are not
 *             watched.
 *   inotify   one watch per directory of SOURCE's tree (new directories
 *             are added as they appear, before their name is told, and the
 *             names already in one then are told as name events: made
 *             before its watch existed, they have no event; the tree is
 *             walked again after an overflow), within
 *             fs.inotify.max_user_watches;
 *             a file event costs an fstatat() of its name; no pid, so the
 *             daemon's own writes are told apart by the file's identity
 *             being the one the daemon recorded (callback answers SAME).
 *   auto      fanotify where the daemon may (CAP_SYS_ADMIN) and SOURCE's
 *             filesystem has a handle layout it decodes, else inotify, else
 *             off; the choice is logged at mount.
 * Neither sees writes through a shared writable mmap (no event is raised)
 * and neither reports offsets: a changed file loses all its pages.  On a
 * queue overflow (FAN_Q_OVERFLOW, IN_Q_OVERFLOW) events were lost: the
 * overflow callback drops everything.
 *
 * Thread and concurrency: afs_watch_open() runs before mounting (an
 * explicit mode that cannot work is a start-up error); afs_watch_start()
 * starts the thread, which serves no FUSE request (it reads events 1 ms
 * after each wake-up, so that a burst to one file merges into one queued
 * event) -- so a notification it
 * sends that waits on a request (the kernel writing back dirty pages, a
 * directory lock a lookup holds) is served by the adapter's workers, never
 * by itself.  The callbacks run on that thread only, one at a time; they
 * must not be called with locks the serving threads wait on held across a
 * notification.  The counters are atomic; afs_watch_close() stops the
 * thread (an eventfd wakes it) and frees everything.
 */
#ifndef AFS_WATCH_H
#define AFS_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/data/data.h"

/* -o watch=: names afs_watch_mode_names, NULL-terminated, indexed by the
 * enum (ra_name_parse()). */
enum afs_watch_mode {
	AFS_WATCH_AUTO = 0, /* default */
	AFS_WATCH_FANOTIFY,
	AFS_WATCH_INOTIFY,
	AFS_WATCH_OFF,
};

extern const char *const afs_watch_mode_names[];

/* A backing inode as an event names it. */
struct afs_watch_id {
	dev_t dev;
	uint64_t ino;
	uint32_t gen;
	bool has_gen; /* fanotify: from the handle; inotify: unknown */
};

/* What a file callback found. */
enum afs_watch_result {
	AFS_WATCH_UNKNOWN, /* not a file aheadfs knows: ignored */
	AFS_WATCH_SAME, /* known, identity unchanged (the daemon's own) */
	AFS_WATCH_DROPPED, /* known: its caches were dropped */
};

/**
 * struct afs_watch_ops - The adapter's side, called on the watcher's thread.
 * @file:	@id's data or attributes changed.  @force: the event is
 *		surely not the daemon's (fanotify's pid): drop even when the
 *		identity looks the same; false (inotify): drop only when it
 *		differs.
 * @name:	the entry @name of directory @dir was created, deleted or
 *		moved away or in.  Return: UNKNOWN or DROPPED.
 * @overflow:	events were lost: drop everything.
 */
struct afs_watch_ops {
	enum afs_watch_result (*file)(void *ctx, const struct afs_watch_id *id,
				      bool force);
	enum afs_watch_result (*name)(void *ctx, const struct afs_watch_id *dir,
				      const char *name);
	void (*overflow)(void *ctx);
};

struct afs_watch;

/**
 * afs_watch_open() - Set up the watcher of @source in @mode.
 * @what: One line for the log: the backend chosen and why (also for off).
 * @err: One line on failure.
 *
 * Context: Before mounting, single-threaded; fanotify_init()/_mark() or
 * a walk of @source's directory tree (inotify).
 * Return: 0 and *@out (NULL for off: every other call accepts NULL);
 * -EPERM (fanotify without CAP_SYS_ADMIN), -EOPNOTSUPP (fanotify on a
 * filesystem whose handles it cannot decode), or the system's -errno, for
 * an explicit mode; auto falls back and does not fail.
 */
int afs_watch_open(enum afs_watch_mode mode, const char *source,
		   struct afs_watch **out, char *what, size_t whatlen,
		   char *err, size_t errlen);

/**
 * afs_watch_backend() - "fanotify", "inotify", or "off" for @w NULL.
 * Context: Pure.
 */
const char *afs_watch_backend(const struct afs_watch *w);

/**
 * struct afs_watch_counts - What the watcher did (docs/stats.md "watch").
 */
struct afs_watch_counts {
	const char
		*mode; /* afs_watch_backend(): "fanotify", "inotify", "off" */
	uint64_t events; /* events read from the notification queue */
	uint64_t ignored_own; /* the daemon's own changes */
	uint64_t ignored_unknown; /* files and names aheadfs does not know */
	uint64_t invalidated; /* files and names dropped (both caches) */
	uint64_t overflows; /* queue overflows: everything dropped */
};

/**
 * afs_watch_stats() - @w's backend and counters now (zeros and "off" for
 * @w NULL).
 * Context: Any thread; relaxed loads.
 */
void afs_watch_stats(const struct afs_watch *w, struct afs_watch_counts *out);

/**
 * afs_watch_start() - Start the thread that reads events, counts them
 * (afs_watch_stats()) and calls @ops.
 * Context: After the fork into the background; before serving.
 * Return: 0 or the thread creation's -errno.
 */
int afs_watch_start(struct afs_watch *w, const struct afs_watch_ops *ops,
		    void *ctx);

/**
 * afs_watch_close() - Stop the thread (if started) and free @w.
 * Context: After serving ended, before the adapter's state goes.
 */
void afs_watch_close(struct afs_watch *w);

#endif /* AFS_WATCH_H */
