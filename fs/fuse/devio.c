/* devio.c - the session's reads and writes of /dev/fuse, through libfuse's
 * custom I/O hooks, for what libfuse 3.14 cannot negotiate or say:
 * FUSE_HANDLE_KILLPRIV_V2 (protocol 7.33), and the kernel's FUSE
 * passthrough (7.40: its INIT flag and max_stack_depth, and the OPEN and
 * CREATE replies' FOPEN_PASSTHROUGH and backing id; passthrough.h), and
 * FUSE over io_uring (7.42: its INIT flag, and the replies to requests a
 * ring carried, which go into the ring's entry; uring.h).
 *
 * Why handle_killpriv_v2: without it the kernel keeps the superblock
 * without SB_NOSEC, and
 * then asks for security.capability with a GETXATTR round trip before
 * every write(2), in both write modes -- half the round trips of a
 * write-through write, and the only one a writeback-cache write makes
 * (docs/benchmarks.md, "Writes").  With it the kernel asks once per inode
 * (an answer of "none" marks the inode S_NOSEC) and leaves the clearing of
 * setuid, setgid and capabilities on write, truncate and chown to the
 * server.  aheadfs does that clearing the backing's way already: writes,
 * fallocate and copy_file_range of a file with either bit run as the
 * caller (ops_io.c kill_privs_as_caller()), truncates and chowns run as
 * the caller (ops_attr.c afs_op_setattr()), an O_TRUNC open as the
 * caller, and the backing removes a capability on any write -- exactly
 * what the same call on the backing clears (tests/integration/killpriv.sh
 * compares every case).  libfuse 3.14 passes neither the WRITE's
 * FUSE_WRITE_KILL_SUIDGID nor the SETATTR's FATTR_KILL_SUIDGID on; none is
 * needed, for the same reason.  (Passthrough writes are the kernel's, with
 * the daemon's credentials: a setuid or setgid file opened for writing by
 * such a caller is not given passthrough, passthrough.h.)
 *
 * How: the read hook notes the INIT request (its unique and the kernel's
 * flags, flags2 included); the writev hook, seeing the reply to it, adds
 * what the kernel offered and aheadfs takes.  Every other reply passes
 * untouched but the one open reply a thread named before writing it
 * (afs_pt_reply_hook(): a thread-local load otherwise); requests pass
 * untouched (one predictable branch); spliced replies pass through their
 * own hook.  Only the session's thread reads INIT, before any other
 * request exists, so the words below need no lock; they are __atomic for
 * the threads that read them later.  The hooks' userdata is the session's
 * (struct afs_fs).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse_internal.h"
#include "log.h"
#include "passthrough.h"
#include "uring.h"

static uint64_t init_unique; /* __atomic: the INIT request's, 0 before */
static uint64_t init_flags; /* __atomic: the kernel's offer, flags2 << 32 */
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
		uint64_t flags = arg->flags;

		if ((flags & FUSE_INIT_EXT) &&
		    n >= (ssize_t)(sizeof(*in) +
				   offsetof(struct fuse_init_in, flags2) +
				   sizeof(uint32_t)))
			flags |= (uint64_t)arg->flags2 << 32;
		__atomic_store_n(&init_flags, flags, __ATOMIC_RELAXED);
		__atomic_store_n(&init_unique, in->unique, __ATOMIC_RELEASE);
	}
	return n;
}

/* The INIT reply (@out, @arg of @len bytes): add what was offered. */
static void patch_init(struct afs_fs *fs, const struct fuse_out_header *out,
		       struct fuse_init_out *arg, size_t len)
{
	uint64_t offered = __atomic_load_n(&init_flags, __ATOMIC_RELAXED);

	if (out->error || len < offsetof(struct fuse_init_out, flags) + 4)
		return;
	if (offered & FUSE_HANDLE_KILLPRIV_V2) {
		arg->flags |= FUSE_HANDLE_KILLPRIV_V2;
		afs_log(LOG_INFO, "kill-privilege handled by aheadfs "
				  "(handle_killpriv_v2)");
	}
	afs_pt_init_reply(&fs->pt, arg, len, offered);
	afs_uring_init_reply(fs->uring, arg, len, offered);
}

static ssize_t devio_writev(int fd, struct iovec *iov, int count,
			    void *userdata)
{
	struct afs_fs *fs = userdata;
	ssize_t n;

	if (__builtin_expect(!__atomic_load_n(&init_done, __ATOMIC_RELAXED),
			     0) &&
	    count >= 2 && iov[0].iov_len == sizeof(struct fuse_out_header)) {
		const struct fuse_out_header *out = iov[0].iov_base;
		uint64_t u = __atomic_load_n(&init_unique, __ATOMIC_ACQUIRE);

		if (u && out->unique == u) {
			patch_init(fs, out, iov[1].iov_base, iov[1].iov_len);
			n = writev(fd, iov, count);
			__atomic_store_n(&init_done, true, __ATOMIC_RELEASE);
			/* the kernel took the reply: the rings may register */
			afs_uring_init_sent(fs->uring, n >= 0);
			return n;
		}
	}
	afs_pt_reply_hook(iov, count);
	if (afs_uring_take_reply(iov, count, &n))
		return n;
	return writev(fd, iov, count);
}

/* Spliced replies (reads the backing's page cache holds, ops_io.c
 * read_reply_fd()) pass untouched; with no hook here libfuse would offer
 * no splice at all under custom I/O. */
static ssize_t devio_splice_send(int fdin, off_t *offin, int fdout,
				 off_t *offout, size_t len, unsigned int flags,
				 void *userdata)
{
	ssize_t n;

	(void)userdata;
	if (afs_uring_take_splice(fdin, len, &n))
		return n;
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
