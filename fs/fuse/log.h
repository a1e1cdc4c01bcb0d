/* log.h - daemon messages: stderr in the foreground, syslog once the daemon
 * has gone to the background.  libfuse's own messages take the same way.
 *
 * Concurrency: afs_log() may be called from any thread; afs_log_to_syslog()
 * only before worker threads start.
 */
#ifndef AFS_LOG_H
#define AFS_LOG_H

#include <stdbool.h>
#include <syslog.h>

/**
 * afs_log_to_syslog() - Send messages to syslog (facility daemon) from now on.
 *
 * Context: Main thread, before serving starts.
 */
void afs_log_to_syslog(void);

/**
 * afs_log_capture_fuse() - Start (@on) or stop keeping libfuse's messages
 * instead of printing them, so that a failure to set up the session or to
 * mount is reported in one line with them (afs_log_captured()).
 *
 * Context: Main thread, before serving starts.
 */
void afs_log_capture_fuse(bool on);

/**
 * afs_log_captured() - libfuse's messages since capturing started, joined
 * by "; ", or "failed" if it said nothing.
 *
 * Context: Main thread.
 */
const char *afs_log_captured(void);

/**
 * afs_log() - One message at syslog priority @prio ("aheadfs: " prefixed on
 * stderr).
 *
 * Context: Any thread.
 */
void afs_log(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* AFS_LOG_H */
