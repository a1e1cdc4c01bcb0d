/* uring.h - FUSE over io_uring (protocol 7.42, Linux 6.14 and later),
 * spoken by aheadfs over libfuse 3.14: requests reach the daemon through
 * one queue per CPU instead of the one queue every read(2) of /dev/fuse
 * shares, and each worker takes its next request in the same system call
 * that hands in its last reply.  -o transport=uring asks for it;
 * transport=dev (the default) keeps every request on /dev/fuse.
 *
 * The protocol (the kernel's uapi fuse.h, 7.42, and its fuse dev_uring.c).
 * libfuse 3.14 builds on linux/fuse.h of 7.38, which lacks it, so it is
 * defined below under aheadfs's names:
 *   INIT      the kernel offers FUSE_OVER_IO_URING, bit 41 of its flags
 *             (bit 9 of flags2, valid with FUSE_INIT_EXT), while the fuse
 *             module's parameter enable_uring is Y.  A reply that takes it
 *             makes every request after INIT wait until the ring is
 *             ready, or until a registration fails (the kernel then
 *             serves the connection through /dev/fuse again).
 *   register  an IORING_OP_URING_CMD on a /dev/fuse descriptor of the
 *             connection, from a ring set up with IORING_SETUP_SQE128:
 *             cmd_op FUSE_IO_URING_CMD_REGISTER, the 80-byte command area
 *             holding struct afs_uring_cmd_req {qid}, addr and len an
 *             array of two iovecs -- the entry's header buffer (struct
 *             afs_uring_req_header) and its payload buffer, at least
 *             max(8 KiB, max_write, max_pages pages) long.  The kernel
 *             answers -EAGAIN until it has taken the INIT reply.  The ring
 *             is ready once every possible CPU's queue has an entry.
 *   request   a reader's request goes to the queue of the CPU it runs on;
 *             an entry waiting there completes with res 0, holding the
 *             fuse_in_header in in_out, the opcode's fixed argument (its
 *             first, up to 128 bytes) in op_in, the rest in the payload
 *             (payload_sz bytes) and the request's unique in commit_id.
 *   reply     cmd_op FUSE_IO_URING_CMD_COMMIT_AND_FETCH with the commit_id:
 *             the fuse_out_header in in_out, the reply's arguments in the
 *             payload (payload_sz); the same command waits for the next
 *             request.  Notifications, FORGET and INTERRUPT stay on
 *             /dev/fuse.
 *   teardown  at the connection's end each entry completes with
 *             -ENOTCONN; closing a ring cancels its entry.
 *
 * How aheadfs serves it: the INIT reply (devio.c) asks for it when the
 * kernel offers it and every ring and thread could be made beforehand, so
 * that no request can wait on a ring that never becomes ready.  Each
 * worker thread owns one ring with one entry on one queue (uring_depth=
 * threads per queue, pinned to the queue's CPU where allowed), rebuilds
 * the request as libfuse reads it (header and op argument laid just
 * before the payload, which is not moved) and hands it to
 * fuse_session_process_buf().  The reply libfuse writes on that same
 * thread -- through devio.c's writev or splice hook -- is copied into the
 * entry instead of to /dev/fuse (afs_uring_take_reply(),
 * afs_uring_take_splice()); every handler replies on its own thread
 * (none defers), so a thread has at most one request open.
 *
 * Locking: none on the request path (each entry belongs to its thread;
 * the thread's current entry is thread-local).  u->state and the
 * counters are __atomic; start and stop are the daemon thread's (start
 * from the INIT reply, before any other request exists).
 */
#ifndef AFS_URING_H
#define AFS_URING_H

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define AFS_FUSE_OVER_IO_URING (1ULL << 41) /* INIT: flags | flags2 << 32 */
#define AFS_URING_CMD_REGISTER 1
#define AFS_URING_CMD_COMMIT_AND_FETCH 2
#define AFS_URING_HEADER_SZ 128 /* in_out and op_in, each */

struct afs_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id; /* the request's unique; echoed in the commit */
	uint32_t payload_sz; /* bytes valid in the payload, either way */
	uint32_t padding;
	uint64_t reserved;
};

struct afs_uring_req_header {
	char in_out[AFS_URING_HEADER_SZ]; /* fuse_in_header / fuse_out_header */
	char op_in[AFS_URING_HEADER_SZ]; /* the opcode's fixed argument */
	struct afs_uring_ent_in_out ring_ent_in_out;
};

struct afs_uring_cmd_req { /* in the SQE's 80-byte command area */
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

/* Where the mount stands (stats "transport.state"). */
enum afs_uring_state {
	AFS_URING_OFF, /* transport=dev */
	AFS_URING_ASKED, /* before INIT */
	AFS_URING_STARTING, /* asked for in the INIT reply; registering */
	AFS_URING_ON, /* every queue registered: requests come through it */
	AFS_URING_UNSUPPORTED, /* the kernel did not offer it */
	AFS_URING_REFUSED, /* a ring or thread could not be made, or the
			    * kernel refused a registration */
	AFS_URING_STOPPED, /* the connection ended */
	AFS_URING_NSTATES
};
extern const char *const afs_uring_state_names[];

struct afs_uring;

/**
 * afs_uring_create() - The transport=uring state of a session, before it
 * serves: nothing is set up until the INIT reply.
 * @se: The session (its /dev/fuse descriptor and the request processor).
 * @depth: Worker threads (entries) per CPU queue, >= 1.
 *
 * Return: 0, or -ENOMEM.
 */
int afs_uring_create(struct fuse_session *se, unsigned depth,
		     struct afs_uring **out);

/**
 * afs_uring_init_reply() - On the INIT reply (@arg, @len bytes of
 * fuse_init_out) to a kernel that offered @offered (flags | flags2 << 32):
 * where it offers FUSE_OVER_IO_URING, make every ring and worker thread
 * and take the flag; otherwise leave the reply as it is.  @u may be NULL.
 *
 * Context: the session's thread, before the reply is written.
 */
void afs_uring_init_reply(struct afs_uring *u, void *arg, size_t len,
			  uint64_t offered);

/**
 * afs_uring_init_sent() - The INIT reply went out (@ok) or failed: the
 * workers register, or stop.  @u may be NULL.
 */
void afs_uring_init_sent(struct afs_uring *u, bool ok);

/**
 * afs_uring_take_reply() - devio.c's writev hook: when @iov (@count
 * pieces, a fuse_out_header first) answers the request the calling thread
 * serves from a ring, copy it into the entry and set *@res to what
 * writev(2) would return (-1 with errno on error).
 *
 * Return: whether the reply was taken (false: write it to /dev/fuse).
 */
bool afs_uring_take_reply(const struct iovec *iov, int count, ssize_t *res);

/**
 * afs_uring_take_splice() - devio.c's splice hook: the same for a reply
 * libfuse put in the pipe @fdin (@len bytes, the header first).
 */
bool afs_uring_take_splice(int fdin, size_t len, ssize_t *res);

/**
 * afs_uring_stop() - Stop and join the workers and close their rings
 * (which cancels their entries).  @u may be NULL.
 *
 * Context: the daemon's thread, after serving.
 */
void afs_uring_stop(struct afs_uring *u);

/** afs_uring_free() - Free @u (stopped, or never started); NULL is ok. */
void afs_uring_free(struct afs_uring *u);

/* What the stats show (fs/stats/xattr.h struct afs_xattr_transport). */
struct afs_xattr_transport;
void afs_uring_stats(const struct afs_uring *u,
		     struct afs_xattr_transport *out);

#endif
