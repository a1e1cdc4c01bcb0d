/* devio.c - the session's reads and writes of /dev/fuse, through libfuse's
 * custom I/O hooks, for the one thing libfuse 3.14 cannot negotiate:
 * FUSE_HANDLE_KILLPRIV_V2 (protocol 7.33).
 *
 * Why: without it the kernel keeps the superblock without SB_NOSEC, and
 * then asks for security.capability with a GETXATTR round trip before
 * every write(2), in both write modes -- half the round trips of a
 * write-through write, and the only one a writeback-cache write makes
 * (docs/benchmarks.md, "Writes").  With it the kernel asks once per inode
 * (an answer of "none" marks the inode S_NOSEC) and leaves the clearing of
 * setuid, setgid and capabilities on write, truncate and chown to the
 * server.  aheadfs does that clearing the backing's way already: writes,
 * fallocate and copy_file_range of a file with either bit run as the
 * caller (ops_io.c kill_privs_as_caller()), truncates and chowns run as
 * the caller (ops_entry.c afs_op_setattr()), an O_TRUNC open as the
 * caller, and the backing removes a capability on any write -- exactly
 * what the same call on the backing clears (tests/integration/killpriv.sh
 * compares every case).  libfuse 3.14 passes neither the WRITE's
 * FUSE_WRITE_KILL_SUIDGID nor the SETATTR's FATTR_KILL_SUIDGID on; none is
 * needed, for the same reason.
 *
 * How: the read hook notes the INIT request (its unique and the kernel's
 * flags); the writev hook, seeing the reply to it, adds the flag when the
 * kernel offered it.  Every other request and reply passes untouched (one
 * predictable branch); spliced replies pass through their own hook.  Only
 * the session's thread reads INIT, before any other request exists, so the
 * two words below need no lock; they are __atomic for the threads that read
 * them later.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse_internal.h"
#include "log.h"

static uint64_t init_unique; /* __atomic: the INIT request's, 0 before */
static uint32_t init_flags; /* __atomic: the kernel's offer */
static bool init_done; /* __atomic: the INIT reply went out */

static ssize_t devio_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;

	(void)userdata;
	if (__builtin_expect(!__atomic_load_n(&init_done, __ATOMIC_RELAXED),
			     0) &&
	    n >= (ssize_t)(sizeof(*in) + offsetof(struct fuse_init_in, flags) +
			   sizeof(uint32_t)) &&
	    in->opcode == FUSE_INIT) {
		const struct fuse_init_in *arg = (const void *)(in + 1);

		__atomic_store_n(&init_flags, arg->flags, __ATOMIC_RELAXED);
		__atomic_store_n(&init_unique, in->unique, __ATOMIC_RELEASE);
	}
	return n;
}

/* The INIT reply (@out, @arg of @len bytes): add the flag if offered. */
static void patch_init(const struct fuse_out_header *out,
		       struct fuse_init_out *arg, size_t len)
{
	if (out->error || len < offsetof(struct fuse_init_out, flags) + 4 ||
	    !(__atomic_load_n(&init_flags, __ATOMIC_RELAXED) &
	      FUSE_HANDLE_KILLPRIV_V2))
		return;
	arg->flags |= FUSE_HANDLE_KILLPRIV_V2;
	afs_log(LOG_INFO, "kill-privilege handled by aheadfs "
			  "(handle_killpriv_v2)");
}

static ssize_t devio_writev(int fd, struct iovec *iov, int count,
			    void *userdata)
{
	(void)userdata;
	if (__builtin_expect(!__atomic_load_n(&init_done, __ATOMIC_RELAXED),
			     0) &&
	    count >= 2 && iov[0].iov_len == sizeof(struct fuse_out_header)) {
		const struct fuse_out_header *out = iov[0].iov_base;
		uint64_t u = __atomic_load_n(&init_unique, __ATOMIC_ACQUIRE);

		if (u && out->unique == u) {
			patch_init(out, iov[1].iov_base, iov[1].iov_len);
			__atomic_store_n(&init_done, true, __ATOMIC_RELEASE);
		}
	}
	return writev(fd, iov, count);
}

/* Spliced replies (reads the backing's page cache holds, ops_io.c
 * read_reply_fd()) pass untouched; with no hook here libfuse would offer
 * no splice at all under custom I/O. */
static ssize_t devio_splice_send(int fdin, off_t *offin, int fdout,
				 off_t *offout, size_t len, unsigned int flags,
				 void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int afs_devio_install(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = devio_read,
		.writev = devio_writev,
		.splice_send = devio_splice_send,
	};
	int rc = fuse_session_custom_io(se, &io, fuse_session_fd(se));

	return rc > 0 ? -rc : rc;
}
