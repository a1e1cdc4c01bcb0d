/* backing_internal.h - struct ra_backing and what backing.c lends to
 * backing_pages.c.  Private to those two files (and test_backing*.c).
 *
 * The object and its descriptors, the reads around the cache and the
 * residency probe are backing.c's; the reads into LOCKED cache pages (pieces,
 * windows, the work items the pool runs) are backing_pages.c's.
 *
 * Concurrency: as backing.h.  The fields are set at ra_backing_open() and
 * read-only afterwards but for refs, eofs, changed_s and the counters, each
 * an __atomic word; no lock.
 */
#ifndef AHEADFS_RA_BACKING_INTERNAL_H
#define AHEADFS_RA_BACKING_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "backing.h"
#include "cache/base/count.h"

struct ra_backing {
	int fd; /* read-only, O_DIRECT in RA_BACKING_IO_DIRECT mode */
	/* Buffered read-only fd for ranges the backing's page cache holds
	 * (DIRECT mode; BUFFERED mode reads b->fd), or -1.  probe: the
	 * kernel has cachestat(2) and it works on this file. */
	int cached_fd;
	bool probe;
	enum ra_backing_io mode; /* in force */
	uint64_t chunk_pages; /* split pieces on this; 0: no split */
	const struct ra_page_ops *ops;
	ra_preadv_fn hook;
	void *hook_ctx;
	int refs; /* __atomic */
	/* Reads that met the file's end (a zeroed tail or zero pages).  Every
	 * window is cut at the owner's EOF, so a read meets the end only in
	 * the file's last page -- or where the file shrank behind the owner
	 * (ra_backing_eofs()).  Release: counted before the pages it zeroed
	 * complete. */
	uint64_t eofs;
	/* __atomic: the CLOCK_MONOTONIC_COARSE second of the last
	 * ra_backing_cut(), plus one; 0: never (ra_backing_cut_lately()). */
	uint64_t changed_s;
	/* Counters: relaxed atomics, also added to *totals when set.  A page
	 * is counted before it is completed, so whoever saw it complete sees
	 * it counted. */
	struct ra_io_totals c;
	struct ra_io_totals *totals;
};

#define CTR_ADD(b, field, v)                                                   \
	do {                                                                   \
		afs_count(&(b)->c.field, (v));                                 \
		if ((b)->totals)                                               \
			__atomic_fetch_add(&(b)->totals->field, (v),           \
					   __ATOMIC_RELAXED);                  \
	} while (0)

/**
 * ra_backing_preadv() - preadv(2) of @fd, or the test hook; EINTR retried.
 * Context: Any thread; blocks on the read.
 * Return: The count read, or -errno.
 */
ssize_t ra_backing_preadv(struct ra_backing *b, int fd, const struct iovec *iov,
			  int iovcnt, off_t off);

/* ra_backing_cut_lately() - The file was cut less than RA_CUT_S seconds ago
 * (ra_backing_cut()): read it from the disk descriptor only, never from the
 * page cache.  Context: Any thread. */
bool ra_backing_cut_lately(const struct ra_backing *b);

/**
 * ra_backing_changed() - Whether the file changed between two fstat(2)s
 * @a and @b: its ctime or its size moved (a write, a truncate).  A read from
 * the backing's page cache between them is kept only when it did not: a
 * truncate meanwhile may have zeroed pages it copied, and a write since
 * may have put the size back.  After a query the kernel stamps the next
 * change with a finer ctime than the one queried (multigrain timestamps,
 * Linux 6.13), so two changes apart are seen apart.
 * Context: Pure.
 */
bool ra_backing_changed(const struct stat *a, const struct stat *b);

/**
 * ra_backing_resident_pages() - Pages of [@off, @off + @len) the backing's
 * page cache holds (cachestat(2); a short count is taken again).
 * Context: Any thread; one or two system calls, no I/O.
 * Return: The count, or -errno (no cachestat(2)).
 */
int64_t ra_backing_resident_pages(int fd, off_t off, size_t len);

/**
 * ra_backing_none_resident() - Whether the calling thread's last
 * ra_backing_resident_fd() was on @b and found no page of a range holding
 * [@off, @off + @len) resident.  Forgets it either way: an answer serves
 * one read.  A kernel-mode miss probes its request (fs/data/read.c), then
 * reads the same pages (read_piece()): one cachestat(2) for both.
 * Context: Any thread; thread-local, no system call.
 */
bool ra_backing_none_resident(const struct ra_backing *b, uint64_t off,
			      size_t len);

#endif /* AHEADFS_RA_BACKING_INTERNAL_H */
