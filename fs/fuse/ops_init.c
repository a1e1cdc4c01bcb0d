/* ops_init.c - the INIT handshake (afs_op_init()): which of the kernel's
 * capabilities the mount asks for -- coherency first, then the writeback
 * cache, spliced replies, passthrough and write-only direct I/O as the
 * options and the kernel allow -- and the limits it sets.
 */
#include <fcntl.h>
#include <unistd.h>

#include "fs/data/data.h"
#include "fuse_internal.h"
#include "log.h"

/*
 * The longest read reply libfuse can splice.  It splices through a per-thread
 * pipe that it grows to the reply plus three pages (F_SETPIPE_SZ, rounded up
 * to a power of two pages); one it cannot grow far enough makes it copy the
 * data into a buffer it allocates for that reply.  Past the system's
 * pipe-max-size only a daemon with CAP_SYS_RESOURCE may grow a pipe, so the
 * largest size a pipe takes here, less four pages, bounds what is spliced.
 * Return: that length, or 0 when no pipe can hold the smallest reply.
 */
static size_t splice_reply_max(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t sz = 2 * (size_t)AFS_DATA_MAX_REQUEST;
	size_t max = 0;
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return 0;
	for (; sz >= 8 * page; sz /= 2) {
		if (fcntl(p[0], F_SETPIPE_SZ, (int)sz) >= 0) {
			max = sz - 4 * page;
			break;
		}
	}
	close(p[0]);
	close(p[1]);
	return max > AFS_DATA_MAX_REQUEST ? AFS_DATA_MAX_REQUEST : max;
}

void afs_op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct afs_fs *fs = userdata;
	unsigned capable = conn->capable;

	/* Coherency first: no parallel dirops, no writeback cache (but as
	 * -o write_mode=writeback asks, below); not the first kill-priv
	 * protocol (libfuse 3.14 never passes FUSE_CAP_HANDLE_KILLPRIV on to
	 * the kernel), the second one where the kernel offers it (devio.c;
	 * without it the kernel sends the SETATTR that clears suid/sgid, see
	 * kill_bits()); no splice of requests or moved pages (replies come
	 * from the cache's pages), but spliced replies for reads the
	 * backing's page cache holds (ops_io.c read_reply_fd()).
	 * Async reads stay on:
	 * the kernel's readahead then runs in the background instead of
	 * one request at a time per reader, and the cache orders nothing by
	 * arrival. */
	conn->want &= ~(FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_WRITEBACK_CACHE |
			FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_SPLICE_READ |
			FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	if (capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if ((capable & FUSE_CAP_SPLICE_WRITE) && conn->proto_minor >= 14) {
		size_t max = splice_reply_max();

		if (max)
			conn->want |= FUSE_CAP_SPLICE_WRITE;
		/* libfuse's own threshold: two pages */
		__atomic_store_n(&fs->splice_min,
				 2 * (size_t)sysconf(_SC_PAGESIZE),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&fs->splice_max, max, __ATOMIC_RELEASE);
	}
	/* Writeback: the kernel keeps dirty pages and its own size and
	 * times, and writes whole pages later (docs/tuning.md). */
	if (afs_data_options(fs->data)->write_mode == AFS_WRITE_BACK) {
		if (capable & FUSE_CAP_WRITEBACK_CACHE)
			conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		else
			afs_log(LOG_WARNING, "the kernel offers no writeback "
					     "cache: writes go through");
	}
	/* Not AUTO_INVAL_DATA: with it the kernel drops a file's whole page
	 * cache whenever the mtime it gets differs from its own, which every
	 * write through the mount causes (the kernel stamps its own mtime),
	 * so a 4 KiB write made the next read fetch the whole file again.
	 * Changes behind the mount reach the kernel's cache at open
	 * (close-to-open: keep_cache off, attributes invalidated). */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	/* Room for the kernel's background (readahead) requests: past the
	 * congestion threshold it silently skips async readahead. */
	conn->max_background = AFS_MAX_BACKGROUND;
	conn->congestion_threshold = AFS_MAX_BACKGROUND * 3 / 4;
	conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	if (capable & FUSE_CAP_DONT_MASK)
		conn->want |= FUSE_CAP_DONT_MASK;
	if (capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* POSIX ACLs make the kernel check permissions itself (it turns
	 * default_permissions on), so only where that is wanted. */
	if ((capable & FUSE_CAP_POSIX_ACL) && fs->default_permissions)
		conn->want |= FUSE_CAP_POSIX_ACL;
	if (conn->max_write < AFS_DATA_MAX_REQUEST)
		conn->max_write = AFS_DATA_MAX_REQUEST;
	/* Zero-message opens: an O_TRUNC open must reach us as a SETATTR,
	 * since no OPEN will (with atomic_o_trunc the kernel would take the
	 * OPEN's truncation as done, and the file would keep its bytes). */
	if (fs->opts->opens == AFS_OPENS_NONE)
		conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	__atomic_store_n(&fs->writeback,
			 (conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0,
			 __ATOMIC_RELEASE);
	/* FUSE passthrough (passthrough.h): asked for in the INIT reply by
	 * devio.c where the kernel offers it, never beside the writeback
	 * cache, and of no use without OPEN replies. */
	afs_pt_want(&fs->pt, conn->want & FUSE_CAP_WRITEBACK_CACHE,
		    fs->opts->opens == AFS_OPENS_NONE);
	/* Write-only opens around the kernel's page cache (ops_open.c
	 * finish_open()): only on a kernel seen to keep other opens' cached
	 * pages of a directly written range coherent -- a page a reader
	 * cached again while the WRITE was in flight is gone once it returns
	 * (Linux 6.18, protocol 7.45; wronly_io.sh checks it with every
	 * backing write held 20 ms).  Earlier kernels drop the range only
	 * before they send the WRITE, or not at all.  Not with the writeback
	 * cache, which is there to gather writes. */
	if (fs->opts->wronly_io == AFS_WRONLY_DIRECT &&
	    !(conn->want & FUSE_CAP_WRITEBACK_CACHE)) {
		if (conn->proto_minor >= AFS_WRONLY_DIRECT_MINOR)
			__atomic_store_n(&fs->wronly_direct, true,
					 __ATOMIC_RELEASE);
		else
			afs_log(LOG_INFO,
				"protocol 7.%u: write-only opens use the "
				"kernel's page cache (wronly_io=direct needs "
				"7.%u)",
				conn->proto_minor, AFS_WRONLY_DIRECT_MINOR);
	}
	afs_log(LOG_INFO,
		"serving %s on %s (protocol 7.%u, max_write %u, spliced "
		"replies up to %zu KiB%s%s)",
		fs->opts->source_real, fs->opts->mountpoint_real,
		conn->proto_minor, conn->max_write,
		conn->want & FUSE_CAP_SPLICE_WRITE ? fs->splice_max >> 10 : 0,
		conn->want & FUSE_CAP_POSIX_ACL ? ", posix_acl" : "",
		conn->want & FUSE_CAP_WRITEBACK_CACHE ? ", writeback" : "");
}
