/* notify.h - invalidations of the kernel's page cache that a serving thread
 * asks for but must not send itself.
 *
 * fuse_lowlevel_notify_inval_inode() with an offset drops the kernel's
 * pages of a file, and waits for each page that a READ still holds locked.
 * A serving thread that sent it could wait for a READ that only a serving
 * thread can answer: with every thread waiting so, the mount hangs (tried:
 * it did).  So a serving thread queues the invalidation here, and the
 * notifier's own thread, which serves no request, sends it.
 *
 * Used by afs_op_read() (ops_io.c): a READ of the kernel's page cache that
 * asked for whole pages past the end the reply found (the file was cut
 * behind the mount) leaves those pages zero-filled in the kernel, which
 * keeps them when its attributes moved meanwhile (docs/reliability.md,
 * "A file cut while it is read"); dropping them at once leaves a reader
 * the shortest window to copy them.
 *
 * Owns: one thread, a mutex-guarded queue of (node id, offset), coalesced
 * per node id (the lower offset wins).  A full queue drops the request and
 * counts it: an invalidation is a narrowing of a window, never what makes
 * data right (the watcher's next event drops every page anyway).
 * Concurrency: afs_notifier_inval() from any thread (takes the queue
 * mutex, never waits for the kernel); afs_notifier_stop() once, from the
 * thread that started it, while the session is still mounted -- as
 * afs_watch_close(), whose notifications have the same life.
 */
#ifndef AFS_FUSE_NOTIFY_H
#define AFS_FUSE_NOTIFY_H

#include <stdint.h>

struct fuse_session;
struct afs_notifier;

/**
 * afs_notifier_start() - Start the thread that sends invalidations on @se.
 * Return: 0 and *@out, or -errno (the thread could not be created).
 */
int afs_notifier_start(struct fuse_session *se, struct afs_notifier **out);

/**
 * afs_notifier_inval() - Queue: drop the kernel's pages of @nodeid from
 * byte @off on (and its attributes).  @n may be NULL (no notifier): nothing.
 * Context: Any thread; never waits for the kernel.
 */
void afs_notifier_inval(struct afs_notifier *n, uint64_t nodeid, uint64_t off);

/**
 * afs_notifier_stop() - Send nothing more, join the thread, free @n (NULL:
 * nothing).  Returns how many requests were sent and how many a full queue
 * dropped, for the log.
 */
void afs_notifier_stop(struct afs_notifier *n, uint64_t *sent,
		       uint64_t *dropped);

#endif
