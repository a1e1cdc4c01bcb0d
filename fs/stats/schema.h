/* schema.h - the one schema of user.aheadfs.stats: every field's name, kind
 * and meaning, defined once.
 *
 * Owns: the field lists below (X-macros) and the tables generated from
 * them.  The daemon's renderer (fs/stats/stats.c) expands the lists into
 * its snapshot structs and renders from them; aheadfs-stat reads the JSON
 * by them (the live view's columns, the rates, the Prometheus metrics);
 * docs/stats.md carries the table afs_schema_doc() writes, checked by
 * tests/unit/stats/test_schema.c.
 *
 * A list row is X(obj, key, kind, help):
 *   obj   the member of the value the field sits in ("cache" for
 *         cache.hits), empty for a top-level field; rows of one obj are
 *         consecutive, so the value's objects follow from the rows' order
 *   key   the field's JSON key
 *   kind  COUNTER (only grows), GAUGE (the state now), TEXT (a word of the
 *         owning module's name table), RATIO (a number with three
 *         decimals), DECISIONS (an object: one counter per readahead
 *         decision kind, afs_schema_kinds), STREAMS (an array of objects,
 *         AFS_SCHEMA_STREAM)
 *   help  one line, the Prometheus HELP text
 * Metric names: aheadfs_OBJ_KEY (aheadfs_KEY at the top), plus _total for
 * a counter; DECISIONS is one family with a "kind" label.  Only the
 * mount's numeric fields are metrics.
 *
 * Concurrency: constant tables; pure functions.  Links nothing of the
 * daemon (aheadfs-stat uses it).
 */
#ifndef AFS_STATS_SCHEMA_H
#define AFS_STATS_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The readahead counters a file and the mount share. */
#define AFS_SCHEMA_RA_COUNTS(X)                                                \
	X(readahead, sync, COUNTER,                                            \
	  "decisions taken on a miss, a reader waiting for the backing")       \
	X(readahead, async, COUNTER,                                           \
	  "windows started before any reader needed them")                     \
	X(readahead, context, COUNTER, "context readahead decisions")          \
	X(readahead, random, COUNTER,                                          \
	  "random decisions: only the pages asked for were read")              \
	X(readahead, stream, COUNTER,                                          \
	  "decisions of the per-file stream table")                            \
	X(readahead, decisions, DECISIONS, "readahead decisions by kind")      \
	X(readahead, windows, COUNTER,                                         \
	  "decisions that opened or moved a window")                           \
	X(readahead, sync_pages, COUNTER,                                      \
	  "pages read for a waiting reader's own request")                     \
	X(readahead, async_pages, COUNTER, "pages read ahead of the readers")  \
	X(readahead, queued, COUNTER, "windows handed to the workers")         \
	X(readahead, queue_refused, COUNTER,                                   \
	  "windows the workers' queue refused")                                \
	X(readahead, enospc, COUNTER, "insertions the cache budget refused")   \
	X(readahead, thrash, COUNTER,                                          \
	  "misses on pages read ahead and evicted unused")                     \
	X(readahead, waste, COUNTER, "pages read ahead and evicted unused")    \
	X(readahead, errors, COUNTER, "failed backing reads for a reader")     \
	X(readahead, resident_skipped, COUNTER,                                \
	  "windows not read ahead: the backing's page cache held them")

/* The daemon's counters, last in both values. */
#define AFS_SCHEMA_TAIL(X)                                                     \
	X(, uncached_reads, COUNTER,                                           \
	  "reads served from the backing around the cache")                    \
	X(, resident_reads, COUNTER,                                           \
	  "reads served from the backing's page cache, around the cache")      \
	X(, resident_spliced, COUNTER,                                         \
	  "of those, spliced into the reply (no copy through the daemon)")     \
	X(, random_around, COUNTER,                                            \
	  "random misses read from the backing into the reply, around the "    \
	  "cache")                                                             \
	X(, revalidations, COUNTER, "files found changed behind the mount")

/* user.aheadfs.stats of a regular file. */
#define AFS_SCHEMA_FILE(X)                                                     \
	X(file, ino, GAUGE, "the inode number on the mount")                   \
	X(file, size, GAUGE, "the backing file's size in bytes")               \
	X(file, pages, GAUGE, "the size in 4 KiB pages")                       \
	X(file, passthrough_opens, GAUGE,                                      \
	  "its opens the kernel serves from the backing now: uncounted reads") \
	X(cache, cached_pages, GAUGE, "pages holding data now")                \
	X(cache, history_pages, GAUGE,                                         \
	  "pages handed to the kernel and dropped here")                       \
	X(cache, hits, COUNTER, "pages served from the cache")                 \
	X(cache, hit_bytes, COUNTER, "bytes served from the cache")            \
	X(cache, misses, COUNTER, "pages a read found absent")                 \
	X(cache, inserted, COUNTER, "pages put into the cache")                \
	X(cache, prefetched, COUNTER, "pages put in ahead of any reader")      \
	X(cache, evicted, COUNTER, "pages evicted to stay within the budget")  \
	X(cache, waste, COUNTER, "evicted pages read ahead and never used")    \
	X(cache, thrash, COUNTER,                                              \
	  "misses on pages read ahead and evicted unused")                     \
	X(cache, errors, COUNTER, "pages whose backing read failed")           \
	X(cache, invalidated, COUNTER,                                         \
	  "pages dropped because the file changed")                            \
	X(cache, to_history, COUNTER, "pages dropped to history entries")      \
	X(cache, enospc, COUNTER, "insertions refused with the cache full")    \
	X(backing, io, TEXT, "direct or buffered")                             \
	X(backing, reads, COUNTER, "read calls on the backing")                \
	X(backing, bytes, COUNTER, "bytes read from the backing")              \
	X(backing, cached_reads, COUNTER,                                      \
	  "of those reads, served by the backing's page cache")                \
	X(backing, cached_bytes, COUNTER, "... and their bytes")               \
	X(backing, amplification, RATIO, "backing bytes per byte served")      \
	AFS_SCHEMA_RA_COUNTS(X)                                                \
	X(readahead, max_window_pages, GAUGE, "the window cap now, pages")     \
	X(readahead, stripe_pages, GAUGE, "the stripe windows are rounded to") \
	X(readahead, advice, TEXT, "the advice in force")                      \
	X(, streams, STREAMS, "the file's streams, active ones first")         \
	AFS_SCHEMA_TAIL(X)

/* One element of the file's "streams". */
#define AFS_SCHEMA_STREAM(X)                                                   \
	X(, state, TEXT, "active or candidate")                                \
	X(, start, GAUGE, "the window's first page")                           \
	X(, size, GAUGE, "the window in pages")                                \
	X(, async_size, GAUGE, "pages before the window's end the mark sits")  \
	X(, cap, GAUGE, "the stream's window cap after thrash feedback")       \
	X(, windows, COUNTER, "windows the stream opened")                     \
	X(, thrash, COUNTER, "thrash events charged to the stream")            \
	X(, waste, COUNTER, "wasted pages charged to the stream")

/* user.aheadfs.stats of the mount's root directory. */
#define AFS_SCHEMA_ROOT(X)                                                     \
	X(, version, TEXT, "aheadfs's version")                                \
	X(, uptime_s, GAUGE, "seconds since the mount started")                \
	X(, started, TEXT, "when the mount started, UTC")                      \
	X(options, read_mode, TEXT, "kernel or direct")                        \
	X(options, write_mode, TEXT, "writethrough or writeback")              \
	X(options, write_behind, GAUGE,                                        \
	  "the write-behind piece in bytes, 0 off")                            \
	X(options, write_direct, GAUGE,                                        \
	  "the smallest writeback write sent with O_DIRECT, bytes, 0 off")     \
	X(options, cache_size, GAUGE, "the cache's memory budget in bytes")    \
	X(options, ra_max, GAUGE,                                              \
	  "the readahead window cap in bytes, 0 automatic")                    \
	X(options, ra_workers, GAUGE, "readahead worker threads")              \
	X(options, stripe, GAUGE, "the stripe width in bytes, 0 probed")       \
	X(options, chunk, GAUGE, "the chunk size in bytes, 0 probed")          \
	X(options, context_ra, TEXT, "on, loose or off")                       \
	X(options, stream_table, TEXT, "on or off")                            \
	X(options, backing_io, TEXT, "auto, direct or buffered")               \
	X(cache, budget_bytes, GAUGE, "page data the budget holds")            \
	X(cache, used_bytes, GAUGE, "page data in use")                        \
	X(cache, pending_free_bytes, GAUGE,                                    \
	  "freed page data waiting for readers to leave")                      \
	X(cache, high_bytes, GAUGE, "the reclaimer starts above this")         \
	X(cache, low_bytes, GAUGE, "the reclaimer evicts down to this")        \
	X(cache, cached_pages, GAUGE, "pages holding data now")                \
	X(cache, history_pages, GAUGE,                                         \
	  "pages handed to the kernel and dropped here")                       \
	X(cache, small_pages, GAUGE, "pages in the probationary queue")        \
	X(cache, main_pages, GAUGE, "pages in the main queue")                 \
	X(cache, hits, GAUGE, "pages served from the cache, files cached now") \
	X(cache, misses, GAUGE, "pages reads found absent, files cached now")  \
	X(cache, evictions, COUNTER,                                           \
	  "pages evicted to stay within the budget")                           \
	X(cache, waste, COUNTER, "evicted pages read ahead and never used")    \
	X(cache, thrash, COUNTER,                                              \
	  "misses on pages read ahead and evicted unused")                     \
	X(cache, promotions, COUNTER, "pages moved to the main queue")         \
	X(cache, enospc, COUNTER, "insertions cut short at the budget")        \
	X(cache, alloc_waits, COUNTER, "readers that waited for memory")       \
	X(cache, reclaim_runs, COUNTER, "reclaimer wake-ups")                  \
	X(cache, mappings, GAUGE, "files with a cache now")                    \
	X(cache, tree_bytes, GAUGE, "memory of the page trees")                \
	X(cache, page_overhead_bytes, GAUGE,                                   \
	  "descriptor bytes per cached page")                                  \
	X(memory, cgroup_limit, GAUGE,                                         \
	  "the daemon's memory cgroup limit in bytes, 0 none")                 \
	X(memory, cgroup_unreclaimable, GAUGE,                                 \
	  "the cgroup's usage less its file pages, bytes")                     \
	X(memory, pressure_shrinks, COUNTER,                                   \
	  "budget cuts under the cgroup's memory pressure")                    \
	X(memory, pressure_grows, COUNTER, "budget regrowths after pressure")  \
	X(memory, trimmed_bytes, COUNTER,                                      \
	  "freed cache memory handed back to the kernel")                      \
	X(backing, reads, COUNTER, "read calls on the backing")                \
	X(backing, bytes, COUNTER, "bytes read from the backing")              \
	X(backing, cached_reads, COUNTER,                                      \
	  "of those reads, served by the backing's page cache")                \
	X(backing, cached_bytes, COUNTER, "... and their bytes")               \
	X(backing, errors, COUNTER, "failed backing reads")                    \
	X(backing, opens_direct, COUNTER,                                      \
	  "backing files opened with O_DIRECT")                                \
	X(backing, opens_buffered, COUNTER,                                    \
	  "backing files opened without O_DIRECT")                             \
	AFS_SCHEMA_RA_COUNTS(X)                                                \
	X(readahead, files, GAUGE, "files open for readahead now")             \
	X(readahead, workers, GAUGE, "readahead worker threads")               \
	X(readahead, queue_depth, GAUGE, "windows waiting for a worker now")   \
	X(readahead, workers_busy, GAUGE, "windows being read now")            \
	X(readahead, queue_dropped, COUNTER, "windows the full queue refused") \
	X(readahead, queue_late, COUNTER,                                      \
	  "windows a worker started after their reader was due there")         \
	X(files, idle, GAUGE, "files no one uses kept with their cache now")   \
	X(files, idle_max, GAUGE, "the most idle files kept (idle_files=)")    \
	X(files, revived, COUNTER, "idle files looked up again")               \
	X(files, revived_changed, COUNTER,                                     \
	  "idle files found changed when looked up again, cache dropped")      \
	X(files, idle_dropped, COUNTER,                                        \
	  "idle files freed, oldest first, past the limit")                    \
	X(warm, pending, GAUGE, "1 while the warm-up reads saved ranges back") \
	X(warm, files, COUNTER, "saved files whose ranges were read back")     \
	X(warm, skipped, COUNTER, "saved files changed or gone, not warmed")   \
	X(warm, bytes, COUNTER, "bytes the warm-up read back")                 \
	X(warm, pauses, COUNTER, "times the warm-up yielded to readers")       \
	X(warm, checkpoints, COUNTER, "state files written (warm_state=)")     \
	X(warm, refused, COUNTER, "state files refused as malformed")          \
	X(watch, mode, TEXT, "the backing watcher: fanotify, inotify or off")  \
	X(watch, events, COUNTER, "events the watcher read")                   \
	X(watch, ignored_own, COUNTER,                                         \
	  "events of the daemon's own changes, ignored")                       \
	X(watch, ignored_unknown, COUNTER,                                     \
	  "events on files and names aheadfs does not know, ignored")          \
	X(watch, invalidated, COUNTER,                                         \
	  "files and names dropped from both caches on an event")              \
	X(watch, overflows, COUNTER,                                           \
	  "queue overflows: every file's caches dropped")                      \
	X(writes, behind_pieces, COUNTER,                                      \
	  "pieces of sequential writes handed to the backing's writeback")     \
	X(writes, behind_bytes, COUNTER, "... and their bytes")                \
	X(writes, behind_skipped, COUNTER,                                     \
	  "pieces left to the kernel's writeback: the queue was full")         \
	X(writes, behind_failed, COUNTER,                                      \
	  "pieces whose sync_file_range() failed")                             \
	X(writes, direct_writes, COUNTER,                                      \
	  "writes sent to the backing with O_DIRECT (write_direct=)")          \
	X(writes, direct_bytes, COUNTER, "... and their bytes")                \
	X(writes, direct_refused, COUNTER,                                     \
	  "files whose backing refused O_DIRECT writes: buffered since")       \
	X(passthrough, mode, TEXT,                                             \
	  "passthrough=: resident, writes, all or off")                        \
	X(passthrough, state, TEXT,                                            \
	  "on, or why not: off, unsupported, writeback, opens_none, refused")  \
	X(passthrough, opens, COUNTER,                                         \
	  "opens whose reads and writes the kernel sends to the backing")      \
	X(passthrough, opens_cached, COUNTER,                                  \
	  "opens through the kernel's page cache")                             \
	X(passthrough, opens_direct, COUNTER,                                  \
	  "opens whose every read and write reaches aheadfs (direct_io)")      \
	X(passthrough, opens_resident, COUNTER,                                \
	  "of opens, read-only ones of a file the page cache held")            \
	X(passthrough, opens_random, COUNTER,                                  \
	  "of opens, read-only ones of a file advised random")                 \
	X(passthrough, fallback_mount, COUNTER,                                \
	  "opens that asked for passthrough on a mount without it")            \
	X(passthrough, fallback_inode, COUNTER,                                \
	  "opens that asked for it while their file had cached opens")         \
	X(passthrough, fallback_file, COUNTER,                                 \
	  "opens that asked for it: the kernel refused the file's backing")    \
	X(passthrough, fallback_setid, COUNTER,                                \
	  "writers of setuid/setgid files kept on aheadfs's path")             \
	X(passthrough, backing_files, GAUGE,                                   \
	  "backing files registered with the kernel now")                      \
	X(transport, mode, TEXT, "transport=: dev or uring")                   \
	X(transport, state, TEXT,                                              \
	  "on, or why not: off, starting, unsupported, refused, stopped")      \
	X(transport, requests, COUNTER, "requests served through io_uring")    \
	X(transport, unanswered, COUNTER,                                      \
	  "requests through io_uring that got no reply (answered EIO)")        \
	AFS_SCHEMA_TAIL(X)

enum afs_stat_kind {
	AFS_STAT_COUNTER,
	AFS_STAT_GAUGE,
	AFS_STAT_TEXT,
	AFS_STAT_RATIO,
	AFS_STAT_DECISIONS,
	AFS_STAT_STREAMS,
};

/* One row of a list. */
struct afs_schema_field {
	const char *obj; /* "" at the top level */
	const char *key;
	enum afs_stat_kind kind;
	const char *help;
};

/* The lists as tables: afs_schema_file[AFS_SCHEMA_FILE_N], ... */
extern const struct afs_schema_field afs_schema_file[];
extern const struct afs_schema_field afs_schema_stream[];
extern const struct afs_schema_field afs_schema_root[];
extern const size_t afs_schema_file_n, afs_schema_stream_n, afs_schema_root_n;

/* The keys of a DECISIONS object, in the order of enum ra_kind from
 * RA_KIND_INITIAL (ra/ra.h), NULL-terminated. */
extern const char *const *const afs_schema_kinds;
#define AFS_SCHEMA_KINDS 13

/** afs_stat_kind_name() - "counter", "gauge", ... Context: Pure. */
const char *afs_stat_kind_name(enum afs_stat_kind kind);

/**
 * afs_schema_metric() - @f's Prometheus metric name into @buf.
 * Context: Pure.
 * Return: 0, or -ENOENT for a field that is no metric (TEXT, STREAMS),
 * -ERANGE if @len is too small.
 */
int afs_schema_metric(const struct afs_schema_field *f, char *buf, size_t len);

/**
 * afs_schema_find() - The row of @table (@n rows) for @obj and @key.
 * Context: Pure.  Return: The row, or NULL.
 */
const struct afs_schema_field *
afs_schema_find(const struct afs_schema_field *table, size_t n, const char *obj,
		const char *key);

/**
 * afs_schema_doc() - Write the field reference of docs/stats.md (the lines
 * between its "schema:begin" and "schema:end" markers) to @out.
 * Context: Writes to @out.  Return: 0 or -EIO.
 */
int afs_schema_doc(FILE *out);

#endif /* AFS_STATS_SCHEMA_H */
