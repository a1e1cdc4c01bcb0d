/* write.c - how a WRITE reaches the backing (afs_data_write(), data.h).
 *
 * Buffered, as a rule: pwritev2() on the writer's descriptor copies the
 * bytes into the backing's page cache, and the backing's writeback (and
 * write-behind, behind.c) takes them to the device.
 *
 * Direct writes (off by default).  With the kernel's writeback cache (-o
 * write_mode=writeback) the kernel gathers writes into page-aligned
 * requests of up to 1 MiB, and no writer waits on them.  With -o
 * write_direct= set, such a request of at least that many bytes goes with
 * O_DIRECT.  Why: through FUSE the bytes
 * are copied three times where the backing alone copies once -- the
 * writer's copy into the mount's page cache, the kernel's into the
 * daemon's receive buffer, pwrite()'s into the backing's page cache -- and
 * the last writes fresh page-cache pages, which then need the backing's
 * writeback too.  Going around it halves the machine's CPU time and the
 * memory the data takes; it is faster with 8 writers and slower with 16,
 * which is why it is off by default (docs/benchmarks.md, "Writes around
 * the page caches").
 * The bytes are copied once more on the way, into this thread's huge-page
 * buffer (afs_thread_buf_contig()): libfuse's receive buffer holds a
 * WRITE's data 80 bytes into a malloc()ed block, never aligned, and a
 * physically contiguous buffer makes a 1 MiB write one device request, not
 * as many as the queue's segment count cuts scattered 4 KiB pages into.
 * That copy is of a hot buffer, the cheapest of them.  Not in write-through
 * mode, nor for smaller writes: an O_DIRECT write waits for the device,
 * and there a writer waits on it.
 *
 * The descriptor: one per file (fc->direct_fd), opened on the first direct
 * write as the daemon, write-only, through /proc/self/fd of the writer's
 * descriptor (a writeback-cache write carries no caller's credentials
 * anyway: the kernel's writeback sends it), given up with the file's last
 * reference -- the FUSE inode holds one until the kernel forgets it, so
 * the descriptor outlives the last close as long as the kernel keeps the
 * inode (one more open descriptor per such file; the backing file counts
 * as open for writing, and exec(2) of it on the backing gets ETXTBSY).  A backing that refuses -- the open fails (EINVAL: no O_DIRECT
 * on that filesystem; EACCES, EPERM, EROFS: not as the daemon; ENOENT: no
 * /proc; ETXTBSY, EOPNOTSUPP), or a direct write fails with EINVAL --
 * marks the file
 * (fc->direct_refused, counted once in writes.direct_refused); that write
 * and the file's later ones are buffered.  Other open failures (EMFILE,
 * ENOMEM) make only that write buffered.
 *
 * Coherency: an O_DIRECT write writes back and drops the backing's cached
 * pages of its range first (the kernel's rule), so every reader of the
 * backing sees the bytes; aheadfs's own pages are dropped by the adapter's
 * afs_fcache_changed(), as for any write.  Errors: ENOSPC and EIO come
 * back with the write itself (the kernel keeps them for the file's next
 * fsync(2) and close(2)), not only from the backing's fsync.  fsync means
 * what it did: the writer's descriptor's fsync(2) commits the file's
 * metadata and the device's cache for every descriptor of the inode.
 *
 * Concurrency: fc->direct_fd is set once by compare-and-swap (a loser
 * closes its own), read __atomic, and taken out only with no reference
 * left (afs_fcache_direct_take()); direct_refused only goes false to true.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_internal.h"

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t len = 0;

	for (int k = 0; k < n; k++)
		len += iov[k].iov_len;
	return len;
}

static void refuse(struct afs_fcache *fc)
{
	if (!__atomic_exchange_n(&fc->direct_refused, true, __ATOMIC_RELAXED))
		afs_count(&fc->a->direct_counts.refused, 1);
}

/* @fc's O_DIRECT descriptor, opened on first use from @fd; -1: buffered
 * this time. */
static int direct_fd(struct afs_fcache *fc, int fd)
{
	int d = __atomic_load_n(&fc->direct_fd, __ATOMIC_ACQUIRE),
	    expected = -1;
	char path[32];

	if (d >= 0)
		return d;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	d = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	if (d < 0) {
		if (errno == EINVAL || errno == EACCES || errno == EPERM ||
		    errno == EROFS || errno == ENOENT || errno == ETXTBSY ||
		    errno == EOPNOTSUPP)
			refuse(fc);
		return -1;
	}
	if (!__atomic_compare_exchange_n(&fc->direct_fd, &expected, d, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		close(d);
		d = expected;
	}
	return d;
}

/* The O_DIRECT write of @len bytes; -EAGAIN: not taken, write buffered. */
static ssize_t write_direct(struct afs_fcache *fc, int fd,
			    const struct iovec *iov, int n, size_t len,
			    uint64_t off, int rwf)
{
	char *buf, *p;
	ssize_t w;
	int d;

	d = direct_fd(fc, fd);
	buf = d < 0 ? NULL : afs_thread_buf_contig(len);
	if (!buf)
		return -EAGAIN;
	p = buf;
	for (int k = 0; k < n; k++) {
		memcpy(p, iov[k].iov_base, iov[k].iov_len);
		p += iov[k].iov_len;
	}
	w = pwritev2(d, &(struct iovec){.iov_base = buf, .iov_len = len}, 1,
		     (off_t)off, rwf & (RWF_DSYNC | RWF_SYNC));
	if (w < 0 && errno == EINVAL) {
		refuse(fc);
		return -EAGAIN;
	}
	if (w < 0)
		return -errno;
	afs_count(&fc->a->direct_counts.writes, 1);
	afs_count(&fc->a->direct_counts.bytes, (uint64_t)w);
	return w;
}

ssize_t afs_data_write(struct afs_fcache *fc, int fd, const struct iovec *iov,
		       int n, uint64_t off, int rwf, bool writeback,
		       uint64_t *at, bool *direct)
{
	size_t len = iov_total(iov, n);
	uint64_t min = fc ? fc->a->cfg.write_direct : 0;
	struct stat st;
	ssize_t w;

	*at = off;
	*direct = false;
	if (writeback && min && len >= min && len <= AFS_DATA_MAX_REQUEST &&
	    !(off % AFS_WRITE_DIRECT_ALIGN) &&
	    !(len % AFS_WRITE_DIRECT_ALIGN) && !(rwf & RWF_APPEND) &&
	    !__atomic_load_n(&fc->direct_refused, __ATOMIC_RELAXED)) {
		w = write_direct(fc, fd, iov, n, len, off, rwf);
		if (w != -EAGAIN) {
			*direct = w > 0;
			return w;
		}
	}
	w = pwritev2(fd, iov, n, (off_t)off, rwf);
	if (w < 0)
		return -errno;
	if ((rwf & RWF_APPEND) && !fstat(fd, &st))
		*at = (uint64_t)st.st_size - (uint64_t)w;
	return w;
}

int afs_fcache_direct_take(struct afs_fcache *fc)
{
	return __atomic_exchange_n(&fc->direct_fd, -1, __ATOMIC_ACQ_REL);
}
