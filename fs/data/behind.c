/* behind.c - write-behind: the backing's writeback of a file written
 * sequentially through the mount starts as the writes arrive, not when the
 * kernel's dirty thresholds or an fsync finally force it.
 *
 * Why: a write(2) through FUSE costs the writer round trips and copies, so
 * a stream of writes runs CPU-bound for a while, during which the backing's
 * device sits idle; then fsync(2) (or the kernel's dirty background ratio,
 * a tenth of memory) writes everything at once, and the writer waits the
 * device's whole time on top.  Handing each finished piece of a sequential
 * run to the backing's writeback at once overlaps the two, and bounds the
 * backlog of dirty pages the kernel would otherwise let grow to gigabytes
 * before an fsync has to wait for all of it (the io-wait regressions of
 * parallel writers).
 *
 * What is a run: writes to one file, each starting at most AFS_BEHIND_GAP
 * past where the run has reached (the serving threads take a writer's
 * consecutive requests in any order), never before where it started.  A
 * write elsewhere starts a new run, but for one that ends at most
 * AFS_BEHIND_GAP before the run's start (overtaken by the requests after
 * it): its pages are left to the kernel and the run goes on.  Once a run spans cfg.write_behind bytes not
 * yet handed over (whole pages: a partly written last page is left for the
 * next write) and as many bytes were written in it (a dense run, not writes
 * scattered over the span), the span is handed over.  Files written
 * randomly, rewritten in place, or smaller than one piece are left to the
 * kernel's own writeback exactly as before.  (The run counts bytes, not
 * pages: a region rewritten inside a run that also grows counts each time,
 * and may make a sparse span look dense; handing over a span with clean
 * holes costs nothing, its rewritten pages one more write each.)
 *
 * Who does it: one thread per mount, started with the first piece, runs
 * sync_file_range(2) with SYNC_FILE_RANGE_WRITE (start the writeback, wait
 * for nothing) on a duplicate of the writer's descriptor.  Not the serving
 * thread: submitting a piece waits for the device queue's room, and that
 * wait would throttle the writer to the device's speed, which is what the
 * overlap is for avoiding.  The queue holds AFS_BEHIND_QUEUE pieces; a
 * piece that finds it full is left to the kernel ("behind.skipped").
 *
 * Errors: nothing here waits for the device, so nothing here consumes the
 * file's writeback error: a failed device write is still fsync(2)'s error.
 * A failed call is counted ("behind.failed") and changes nothing else.
 *
 * Concurrency: fc->lock guards the run (fc->behind_from, behind_next,
 * behind_bytes);
 * b->lock guards the queue, b->stop and b->started; the counters are
 * __atomic.  The thread takes no other lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "data_internal.h"

struct behind_piece {
	int fd; /* a duplicate, closed once handed over */
	uint64_t from, to;
};

struct afs_behind {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool started, stop;
	unsigned int head, count; /* ring of queued pieces */
	struct behind_piece q[AFS_BEHIND_QUEUE];
	struct afs_behind_stats *counts; /* the mount's, __atomic */
};

static void *behind_main(void *arg)
{
	struct afs_behind *b = arg;
	struct behind_piece p;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		while (!b->count && !b->stop)
			pthread_cond_wait(&b->wake, &b->lock);
		if (!b->count)
			break; /* stopped, and nothing left */
		p = b->q[b->head];
		b->head = (b->head + 1) % AFS_BEHIND_QUEUE;
		b->count--;
		pthread_mutex_unlock(&b->lock);
		if (sync_file_range(p.fd, (off_t)p.from, (off_t)(p.to - p.from),
				    SYNC_FILE_RANGE_WRITE)) {
			afs_count(&b->counts->failed, 1);
		} else {
			afs_count(&b->counts->pieces, 1);
			afs_count(&b->counts->bytes, p.to - p.from);
		}
		close(p.fd);
		pthread_mutex_lock(&b->lock);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

int afs_behind_create(struct afs_behind_stats *counts, struct afs_behind **out)
{
	struct afs_behind *b = calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return -ENOMEM;
	rc = -pthread_mutex_init(&b->lock, NULL);
	if (rc)
		goto out_free;
	rc = -pthread_cond_init(&b->wake, NULL);
	if (rc)
		goto out_lock;
	b->counts = counts;
	*out = b;
	return 0;

out_lock:
	pthread_mutex_destroy(&b->lock);
out_free:
	free(b);
	return rc;
}

void afs_behind_destroy(struct afs_behind *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	b->stop = true;
	pthread_cond_signal(&b->wake);
	pthread_mutex_unlock(&b->lock);
	if (b->started)
		pthread_join(b->thread, NULL); /* hands over what is queued */
	pthread_cond_destroy(&b->wake);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* Queue [@from, @to) of @fd's file.  Return: 0, or -EAGAIN (queue full),
 * or a negative errno (dup, thread creation). */
static int behind_queue(struct afs_behind *b, int fd, uint64_t from,
			uint64_t to)
{
	int rc = 0, dfd;

	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	pthread_mutex_lock(&b->lock);
	if (b->stop) {
		rc = -ESHUTDOWN;
	} else if (b->count == AFS_BEHIND_QUEUE) {
		rc = -EAGAIN;
	} else if (!b->started &&
		   (rc = -pthread_create(&b->thread, NULL, behind_main, b))) {
		/* rc set: no thread, nothing queued */
	} else {
		b->started = true;
		b->q[(b->head + b->count) % AFS_BEHIND_QUEUE] =
			(struct behind_piece){dfd, from, to};
		b->count++;
		pthread_cond_signal(&b->wake);
	}
	pthread_mutex_unlock(&b->lock);
	if (rc)
		close(dfd);
	return rc;
}

void afs_fcache_written(struct afs_fcache *fc, int fd, uint64_t off,
			uint64_t len)
{
	uint64_t piece, from = 0, to = 0, end = off + len;

	if (!fc || !len || !fc->a->behind)
		return;
	piece = fc->a->cfg.write_behind;
	pthread_mutex_lock(&fc->lock);
	if (end <= fc->behind_from && end + AFS_BEHIND_GAP >= fc->behind_from) {
		/* A request overtaken by the ones after it, landing in what
		 * was handed over: its pages are the kernel's to write. */
		pthread_mutex_unlock(&fc->lock);
		return;
	}
	if (off < fc->behind_from || off > fc->behind_next + AFS_BEHIND_GAP) {
		/* A new run (the file's first write starts one too). */
		fc->behind_from = off & ~(uint64_t)(PAGE_SIZE - 1);
		fc->behind_next = end;
		fc->behind_bytes = 0;
	} else if (end > fc->behind_next) {
		fc->behind_next = end;
	}
	fc->behind_bytes += len;
	to = fc->behind_next & ~(uint64_t)(PAGE_SIZE - 1);
	/* A whole piece, every byte of it written (not a sparse scatter). */
	if (to >= fc->behind_from + piece &&
	    fc->behind_bytes + PAGE_SIZE >= to - fc->behind_from) {
		from = fc->behind_from;
		fc->behind_bytes -= to - from < fc->behind_bytes
					    ? to - from
					    : fc->behind_bytes;
		fc->behind_from = to;
	} else {
		to = 0;
	}
	pthread_mutex_unlock(&fc->lock);
	if (to > from && behind_queue(fc->a->behind, fd, from, to))
		afs_count(&fc->a->behind_counts.skipped, 1);
}
