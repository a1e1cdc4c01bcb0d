/* warm.h - warm restart (-o warm_state=PATH): the cache's map saved at
 * unmount and at every checkpoint, read back at the next mount.
 *
 * Owns: one struct afs_warm per mount -- the state file's path, one
 * thread, and the map loaded at start (freed once the warm-up is done).
 * The file format is state.h's.
 *
 * What is saved: every file of the data path's table (in use first, then
 * idle ones from the most recently used, afs_data_files()): its identity (backing device, inode number,
 * generation, size, mtime, ctime) and the ranges of pages it has cached,
 * data or history (history: pages the kernel took a copy of in kernel
 * mode).  Saved atomically: written to PATH.tmp (mode 0600, created with
 * O_NOFOLLOW), fsync()ed, renamed over PATH, the directory fsync()ed; a
 * daemon killed at any moment leaves the last complete checkpoint.
 *
 * When: every cfg.interval_s seconds once the warm-up is over (a
 * checkpoint taken during the warm-up would save a partial map over a
 * complete one), and at afs_warm_stop() (unmount) -- unless the warm-up
 * was still running, when the previous file is kept as it is.
 *
 * The warm-up, at start, on the module's thread: the state file is opened
 * with O_NOFOLLOW and read only if it is a regular file of the daemon's
 * user that no one else may write, at most AFS_WARM_MAX_BYTES, and parsed
 * as untrusted input (afs_warm_parse()); a refused file is logged in one
 * line, counted (warm.refused) and the mount goes on cold.  Each saved file
 * on SOURCE's filesystem is reopened from its inode number
 * (afs_fhandle_open()), and warmed only if its generation, size, mtime and
 * ctime are still the saved ones (else warm.skipped).  Its ranges are read
 * in chunks of at most AFS_WARM_CHUNK through the readahead workers
 * (afs_fcache_warm()), then the file is put: it stays in the table as an
 * idle file (fs/data/data.h) until a LOOKUP finds it by key; so files are
 * warmed in the map's order, hottest first, at most the idle limit of them
 * (afs_data_idle_max()).  Throttled by
 * aheadfs itself -- I/O priority classes do nothing under the none
 * scheduler: at most cfg.rate_bytes a second, one chunk in flight, and a
 * pause (warm.pauses) of AFS_WARM_YIELD_MS whenever reads of the mount
 * missed since the last chunk, until a quiet interval; it stops where the
 * cache would pass its low watermark (warming never evicts).
 *
 * Concurrency: afs_warm_start() and afs_warm_stop() run on the daemon's
 * main thread; the module's thread is the only other user of struct
 * afs_warm (w->lock guards w->stop, the condition variable wakes its
 * sleeps).  It calls the data path as any serving thread does.  Its
 * counters are cache/base/count.h's, read with afs_warm_stats().
 */
#ifndef AFS_WARM_H
#define AFS_WARM_H

#include <stdint.h>
#include <sys/types.h>

#include "fs/data/data.h"
#include "fs/fhandle/fhandle.h"

#define AFS_WARM_INTERVAL_DEFAULT 60 /* seconds between checkpoints */
#define AFS_WARM_RATE_DEFAULT (64ull << 20) /* warm-up bytes a second */
#define AFS_WARM_CHUNK (1u << 20) /* bytes read back at a time */
#define AFS_WARM_YIELD_MS 100 /* pause after reads of the mount missed */

/**
 * struct afs_warm_config - What afs_warm_start() needs.
 * @path: The state file (absolute).
 * @interval_s: Seconds between checkpoints (0: the default).
 * @rate_bytes: Warm-up bytes a second at most (0: the default).
 * @dev: st_dev of SOURCE's filesystem: files elsewhere are not warmed.
 * @mount_fd: A descriptor on a directory of it (open_by_handle_at()).
 * @handles: How its handles are rebuilt (fhandle.h).
 * @log: Where the module's messages go (syslog priorities); the adapter's
 *	afs_log().
 */
struct afs_warm_config {
	const char *path;
	unsigned int interval_s;
	uint64_t rate_bytes;
	dev_t dev;
	int mount_fd;
	struct afs_fhandle_fs handles;
	void (*log)(int prio, const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));
};

struct afs_warm;

/** struct afs_warm_counters - What warm restart did (docs/stats.md "warm"). */
struct afs_warm_counters {
	uint64_t files; /* files whose saved ranges were read back */
	uint64_t skipped; /* saved files changed or gone */
	uint64_t bytes; /* bytes read back */
	uint64_t pauses; /* times the warm-up yielded to readers */
	uint64_t pending; /* 1 while a warm-up is running */
	uint64_t checkpoints; /* state files written */
	uint64_t refused; /* state files refused as malformed */
};

/**
 * afs_warm_stats() - @w's counters now (zeros for @w NULL: no warm_state).
 * Context: Any thread; relaxed loads.
 */
void afs_warm_stats(const struct afs_warm *w, struct afs_warm_counters *out);

/**
 * afs_warm_start() - Load the state file and start the thread: warm-up,
 * then checkpoints.  A missing or refused state file is no error (cold).
 * Context: The daemon's main thread, after afs_data_create(); @cfg's
 * mount_fd must stay open until afs_warm_stop().
 * Return: 0 and *@out, -ENOMEM or the thread creation's -errno.
 */
int afs_warm_start(struct afs_data *a, const struct afs_warm_config *cfg,
		   struct afs_warm **out);

/**
 * afs_warm_stop() - Stop the thread (an unfinished warm-up is cut short),
 * save the map unless the warm-up was cut short, free @w.  NULL: nothing.
 * Context: The daemon's main thread, after serving ended, before the
 * data path is destroyed.
 */
void afs_warm_stop(struct afs_warm *w);

/**
 * afs_warm_save() - Write @a's map to @path now (atomically, 0600).
 * @counts: Where a checkpoint written is counted (NULL: nowhere).
 * @err: One line on failure.
 * Context: Online thread; takes a->files_lock briefly, walks the mappings
 * under RCU, writes and fsyncs the file.
 * Return: 0, or -errno (nothing replaced).
 */
int afs_warm_save(struct afs_data *a, const char *path,
		  struct afs_warm_counters *counts, char *err, size_t errlen);

#endif /* AFS_WARM_H */
