/* ops_io.c - file data: read, write, fsync, fallocate, lseek,
 * copy_file_range.  Opening and closing is ops_open.c's.
 *
 * A data request works on an io_target: the open's handle (struct
 * afs_file in fi->fh: its backing fd and readahead state), or, for a
 * request without one (-o opens=none: requests arrive with fh 0), the
 * inode's own descriptor (afs_inode_io_fd(), ops_open.c) with the file's
 * own readahead state; a WRITE's O_APPEND and O_[D]SYNC then come from its
 * flags (pwritev2 RWF_APPEND, RWF_DSYNC, RWF_SYNC).  The kernel checked the
 * open's access (default_permissions, forced on); a change behind the
 * mount reaches the kernel's page cache at LOOKUP and GETATTR (ops_entry.c
 * afs_tell_changes()) instead of at open.
 *
 * Reads go through the data path (afs_data_read(), replying with an iovec
 * over cache pages).  Writes: libfuse hands the request's data in its
 * per-thread receive buffer; afs_data_write() pwrite()s it straight to the
 * backing fd, no copy and no allocation -- or, for a large write of the
 * kernel's writeback cache, with O_DIRECT (fs/data/write.c); then
 * afs_fcache_changed() drops the cached pages the write covered.
 *
 * The kernel's FUSE passthrough (-o passthrough=, passthrough.h): a
 * passthrough open's reads and writes never come here -- but those of an
 * O_DIRECT open or a setid writer that joined one with direct_io, and
 * those go around the cache while the file has a passthrough writer
 * (afs_pt_writing()).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/data/data.h"
#include "fuse_internal.h"
#include "log.h"
#include "notify.h"

/* What a data request works on: the open's handle, or for a request
 * without one (opens=none) the inode's own descriptor. */
struct io_target {
	struct afs_inode *inode;
	int fd;
	struct ra_state *ra; /* NULL: the file's own */
	bool cached; /* reads go through the cache */
	bool keep_data; /* direct_io: the reader keeps no copy */
	bool ref; /* @inode is a reference of ours (io_target_put) */
};

/* Fill @t for a request on @ino with @fi.  Return: 0, or -errno. */
static int io_target(fuse_req_t req, fuse_ino_t ino,
		     const struct fuse_file_info *fi, struct io_target *t)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_fcache *fc;

	if (fi && fi->fh) {
		struct afs_file *f = afs_file_of(fi);

		*t = (struct io_target){.inode = f->inode,
					.fd = f->h.fd,
					.ra = &f->h.ra,
					.cached = f->h.cached,
					.keep_data = f->h.direct_io};
		return 0;
	}
	*t = (struct io_target){.ref = true};
	t->inode = afs_itable_get(&fs->itable, ino);
	if (!t->inode)
		return -ESTALE;
	if (!S_ISREG(t->inode->type)) {
		afs_itable_put(&fs->itable, t->inode);
		return -EBADF;
	}
	t->fd = afs_inode_io_fd(fs, t->inode);
	if (t->fd < 0) {
		afs_itable_put(&fs->itable, t->inode);
		return t->fd;
	}
	fc = afs_inode_fc(t->inode);
	t->cached = afs_fcache_has_ra(fc);
	return 0;
}

/* @fs, not the request: a read's request is gone once it is replied. */
static void io_target_put(struct afs_fs *fs, struct io_target *t)
{
	if (t->ref)
		afs_itable_put(&fs->itable, t->inode);
}

/* A write through @t's descriptor may fail only because the inode's own
 * descriptor is read-only: its reason then, else 0. */
static int io_target_wr_err(const struct io_target *t)
{
	return t->ref ? __atomic_load_n(&t->inode->io_wr_err, __ATOMIC_ACQUIRE)
		      : 0;
}

/* A READ in progress: the request and how much the reply carried. */
struct read_req {
	fuse_req_t req;
	size_t replied;
};

static int read_reply(void *ctx, const struct iovec *iov, int n)
{
	struct read_req *rr = ctx;

	for (int k = 0; k < n; k++)
		rr->replied += iov[k].iov_len;
	return fuse_reply_iov(rr->req, iov, n);
}

/* Resident data, spliced: the pages of the backing's page cache go through
 * the thread's pipe into the reply by reference; the kernel's copy into the
 * mount's page cache is the only one.  An error or a short count at the EOF
 * libfuse turns into the reply itself. */
static int read_reply_fd(void *ctx, int fd, uint64_t off, size_t len)
{
	struct read_req *rr = ctx;
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);

	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = fd;
	bv.buf[0].pos = (off_t)off;
	rr->replied = len; /* at most: a short splice is the EOF */
	return fuse_reply_data(rr->req, &bv, 0);
}

static void read_interrupted(fuse_req_t req, void *data)
{
	cache_wait_cancel(data);
}

/* The interrupt callback is registered only while the reader waits: a
 * replied request is freed, so it must be gone by then. */
static void read_wait(void *ctx, struct cache_wait_cancel *wc)
{
	struct read_req *rr = ctx;

	fuse_req_interrupt_func(rr->req, wc ? read_interrupted : NULL, wc);
}

static uint64_t page_up(uint64_t pos)
{
	return (pos + CACHE_PAGE_SIZE - 1) & ~(uint64_t)(CACHE_PAGE_SIZE - 1);
}

/* A READ of @size at @off whose reply carried @replied bytes asked for a
 * whole page past the end it found.  (A read of a file's last page asks
 * for that page whole: not past the end.) */
static bool read_past_end(uint64_t off, size_t size, size_t replied)
{
	return replied < size && page_up(off + replied) < off + size;
}

void afs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct io_target t;
	int rc;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = io_target(req, ino, fi, &t);
	if (!rc) {
		/* Around the cache while passthrough writes may change
		 * bytes under it (passthrough.h). */
		struct read_req rr = {.req = req};
		struct afs_read r = {
			.fc = t.cached && !afs_pt_writing(t.inode)
				      ? afs_inode_fc(t.inode)
				      : NULL,
			.ra = t.ra,
			.fd = t.fd,
			.keep_data = t.keep_data,
			.reply = read_reply,
			.reply_fd = read_reply_fd,
			.fd_max = __atomic_load_n(&fs->splice_max,
						  __ATOMIC_ACQUIRE),
			.fd_min = __atomic_load_n(&fs->splice_min,
						  __ATOMIC_RELAXED),
			.wait = read_wait,
			.ctx = &rr,
		};

		rc = afs_data_read(fs->data, &r, (uint64_t)off, size);
		/* Kernel mode: the kernel asked for whole pages past the end
		 * the reply found -- it believed the file longer, so it was
		 * cut -- and fills them with zeros, which it keeps if its
		 * attributes moved meanwhile: have them dropped at once.
		 * Not from here (notify.h). */
		if (!rc && !t.keep_data &&
		    read_past_end((uint64_t)off, size, rr.replied))
			afs_notifier_inval(fs->notifier, ino,
					   page_up((uint64_t)off + rr.replied));
		io_target_put(fs, &t);
	}
	if (rc)
		fuse_reply_err(req, -rc);
}

/* Kill privileges on a write.  The kernel's SETATTR before the WRITE
 * clears setuid and setgid-with-group-execute (ops_attr.c kill_bits());
 * the backing also clears setgid without group execute when the writer is
 * not in the file's group.  A write the backing performs under the
 * caller's ids clears exactly what the same write on the backing would; a
 * root daemon writing as itself (CAP_FSETID) would clear nothing.  One
 * fstat per write of a non-root caller; the ids are switched only for a
 * file that still has either bit.  Return: those bits (0: write as the
 * daemon). */
static mode_t kill_privs_as_caller(fuse_req_t req, int fd)
{
	struct stat st;

	if (!afs_kill_privs_possible(req) || fstat(fd, &st))
		return 0;
	return st.st_mode & (S_ISUID | S_ISGID);
}

/* After a write, fallocate or copy_file_range run as the caller on a file
 * with setuid or setgid (kill_privs_as_caller()): if the backing cleared
 * either, the kernel's cached mode must not keep it.  With
 * handle_killpriv_v2 (devio.c) no SETATTR of the kernel's own carries the
 * new mode back, so the attributes are invalidated (no page is touched:
 * safe while the writer waits for this request's reply). */
static void privs_killed(fuse_req_t req, fuse_ino_t ino, int fd, mode_t had)
{
	struct stat st;

	if (!fstat(fd, &st) && (st.st_mode & had) != had)
		(void)fuse_lowlevel_notify_inval_inode(afs_req_fs(req)->se, ino,
						       -1, 0);
}

/* The pwritev2() flags of a WRITE without a handle: the open's O_APPEND
 * and O_[D]SYNC, which a handle's descriptor carries itself. */
static int write_rwf(const struct io_target *t, int flags)
{
	if (!t->ref)
		return 0;
	return (flags & O_APPEND ? RWF_APPEND : 0) |
	       ((flags & O_SYNC) == O_SYNC ? RWF_SYNC
		: flags & O_DSYNC	   ? RWF_DSYNC
					   : 0);
}

/* Write @bufv at @off of @t's file (@rwf: pwritev2 flags; @writeback: a
 * write of the kernel's writeback cache) through the data path
 * (afs_data_write(): buffered, or O_DIRECT for large writeback writes);
 * *@at says where the bytes went, *@direct how.  Return: bytes, or
 * -errno. */
static ssize_t write_data(const struct io_target *t, struct fuse_bufvec *bufv,
			  off_t off, int rwf, bool writeback, off_t *at,
			  bool *direct)
{
	struct iovec iov[8];
	uint64_t where;
	ssize_t n;

	/* No splice (ops_init.c afs_op_init()): the data is in memory. */
	if (bufv->count - bufv->idx > 8)
		return -EINVAL;
	for (size_t k = bufv->idx; k < bufv->count; k++) {
		if (bufv->buf[k].flags & FUSE_BUF_IS_FD)
			return -EINVAL;
		iov[k - bufv->idx].iov_base = (char *)bufv->buf[k].mem +
					      (k == bufv->idx ? bufv->off : 0);
		iov[k - bufv->idx].iov_len =
			bufv->buf[k].size - (k == bufv->idx ? bufv->off : 0);
	}
	n = afs_data_write(afs_inode_fc(t->inode), t->fd, iov,
			   (int)(bufv->count - bufv->idx), (uint64_t)off, rwf,
			   writeback, &where, direct);
	*at = (off_t)where;
	return n;
}

void afs_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
		      off_t off, struct fuse_file_info *fi)
{
	/* A page of the kernel's writeback cache (FUSE_WRITE_CACHE): no
	 * writer waits on it.  Not every WRITE of a writeback mount: an
	 * O_DIRECT open's writes there come straight from its writer. */
	bool writeback = fi && fi->writepage;
	struct afs_fcache *own;
	struct io_target t;
	bool direct = false;
	mode_t had;
	off_t at;
	ssize_t n;
	int rc = io_target(req, ino, fi, &t), rwf;

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	rwf = write_rwf(&t, fi->flags);
	/* To the identity it leaves: the daemon's own change. */
	own = afs_inode_fc(t.inode);
	afs_fcache_own_begin(own);
	had = kill_privs_as_caller(req, t.fd);
	if (had) {
		struct afs_creds c;

		rc = afs_req_creds_enter(req, &c, false);
		if (rc) {
			afs_fcache_own_end(own);
			io_target_put(afs_req_fs(req), &t);
			fuse_reply_err(req, -rc);
			return;
		}
		/* Buffered: the write's kill-privilege is the backing's
		 * buffered write's, as the caller. */
		n = write_data(&t, bufv, off, rwf, false, &at, &direct);
		afs_creds_leave(&c);
		if (n > 0)
			privs_killed(req, ino, t.fd, had);
	} else {
		n = write_data(&t, bufv, off, rwf, writeback, &at, &direct);
	}
	if (n == -EBADF && io_target_wr_err(&t))
		n = io_target_wr_err(
			&t); /* the inode's descriptor is read-only */
	if (n >= 0)
		afs_fcache_changed(own, t.fd, (uint64_t)at, (uint64_t)n, false);
	afs_fcache_own_end(own);
	if (n < 0) {
		io_target_put(afs_req_fs(req), &t);
		fuse_reply_err(req, (int)-n);
		return;
	}
	/* Before the reply: once the kernel has it, a RELEASE may close the
	 * handle and drop the inode.  Synced and direct writes are on the
	 * device. */
	if (!direct && !(rwf & (RWF_DSYNC | RWF_SYNC)) &&
	    !(fi->flags & O_DSYNC))
		afs_fcache_written(afs_inode_fc(t.inode), t.fd, (uint64_t)at,
				   (uint64_t)n);
	io_target_put(afs_req_fs(req), &t);
	fuse_reply_write(req, (size_t)n);
}

void afs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		  struct fuse_file_info *fi)
{
	struct io_target t;
	int rc = io_target(req, ino, fi, &t);

	if (!rc) {
		if (datasync ? fdatasync(t.fd) : fsync(t.fd))
			rc = -errno;
		io_target_put(afs_req_fs(req), &t);
	}
	fuse_reply_err(req, -rc);
}

void afs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		      off_t length, struct fuse_file_info *fi)
{
	struct afs_fcache *own;
	struct io_target t;
	struct afs_creds c;
	mode_t as_caller;
	int rc = io_target(req, ino, fi, &t);

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	own = afs_inode_fc(t.inode);
	afs_fcache_own_begin(own);
	as_caller = kill_privs_as_caller(req, t.fd);
	rc = as_caller ? afs_req_creds_enter(req, &c, false) : 0;
	if (!rc) {
		if (fallocate(t.fd, mode, offset, length))
			rc = errno == EBADF && io_target_wr_err(&t)
				     ? io_target_wr_err(&t)
				     : -errno;
		if (as_caller)
			afs_creds_leave(&c);
		if (as_caller && !rc)
			privs_killed(req, ino, t.fd, as_caller);
	}
	/* Punched or zeroed bytes change; plain allocation only the size,
	 * but the identity must follow either way. */
	if (!rc)
		afs_fcache_changed(own, t.fd, (uint64_t)offset,
				   (uint64_t)length, false);
	afs_fcache_own_end(own);
	io_target_put(afs_req_fs(req), &t);
	fuse_reply_err(req, -rc);
}

void afs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		  struct fuse_file_info *fi)
{
	struct io_target t;
	int rc = io_target(req, ino, fi, &t);
	off_t res = -1;

	if (!rc) {
		res = lseek(t.fd, off, whence);
		rc = res < 0 ? -errno : 0;
		io_target_put(afs_req_fs(req), &t);
	}
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_lseek(req, res);
}

void afs_op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			    struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			    off_t off_out, struct fuse_file_info *fi_out,
			    size_t len, int flags)
{
	struct afs_fcache *own;
	struct io_target in, out;
	off_t dst = off_out;
	struct afs_creds c;
	mode_t as_caller;
	ssize_t n = -1;
	int rc = io_target(req, ino_in, fi_in, &in);

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	rc = io_target(req, ino_out, fi_out, &out);
	if (rc) {
		io_target_put(afs_req_fs(req), &in);
		fuse_reply_err(req, -rc);
		return;
	}
	own = afs_inode_fc(out.inode);
	afs_fcache_own_begin(own);
	as_caller = kill_privs_as_caller(req, out.fd);
	rc = as_caller ? afs_req_creds_enter(req, &c, false) : 0;
	if (!rc) {
		n = copy_file_range(in.fd, &off_in, out.fd, &off_out, len,
				    (unsigned)flags);
		rc = n >= 0 ? 0
		     : errno == EBADF && io_target_wr_err(&out)
			     ? io_target_wr_err(&out)
			     : -errno;
		if (as_caller)
			afs_creds_leave(&c);
		if (as_caller && !rc)
			privs_killed(req, ino_out, out.fd, as_caller);
	}
	if (!rc)
		afs_fcache_changed(own, out.fd, (uint64_t)dst, (uint64_t)n,
				   false);
	afs_fcache_own_end(own);
	io_target_put(afs_req_fs(req), &in);
	io_target_put(afs_req_fs(req), &out);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, (size_t)n);
}
