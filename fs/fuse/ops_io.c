/* ops_io.c - file data: open, create, read, write, flush, release, fsync,
 * fallocate, lseek, copy_file_range.
 *
 * An open regular file is a struct afs_file in fi->fh: a reference on the
 * inode and a struct afs_handle (fs/data/data.h) -- the backing fd, opened
 * through /proc/self/fd/N of the inode's O_PATH fd with the caller's flags
 * (less O_DIRECT: the kernel already gives the application direct I/O
 * semantics on the FUSE side, and the backing would refuse the unaligned
 * buffers FUSE requests arrive in) and credentials, and the handle's
 * readahead state.  The file's data path state (identity, cache mapping,
 * ra_file) is the inode's (afs_inode_fc()), shared by every open of it.
 *
 * Close-to-open consistency for changes made behind the mount, for both
 * caches at once: at open (and getattr) the backing is compared with the
 * file's identity (afs_fcache_revalidate()); a change drops aheadfs's
 * pages and counts one change; an open that sees the count moved since
 * the kernel was last told drops the kernel's attributes and pages too.
 * Changes made through the mount (write, fallocate, copy_file_range,
 * truncate) update the identity (afs_fcache_changed()), so they do not
 * count as such.
 *
 * Reads go through the data path (afs_data_read(), replying with an iovec
 * over cache pages).  Writes: libfuse hands the request's data in its
 * per-thread receive buffer; fuse_buf_copy() pwrite()s it straight to the
 * backing fd, no copy and no allocation; then afs_fcache_changed() drops
 * the cached pages the write covered.
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

/*
 * The backing open's flags for an open with @flags.  With the kernel's
 * writeback cache the kernel computes every write's offset itself, appends
 * included (a backing O_APPEND would put the bytes elsewhere), and reads
 * pages through a write-only open to fill the rest of a partly written
 * page: such an open is made read-write where the caller may read too.
 */
static int backing_flags(struct afs_fs *fs, int flags, bool *widened)
{
	*widened = false;
	if (!__atomic_load_n(&fs->writeback, __ATOMIC_ACQUIRE))
		return flags;
	flags &= ~O_APPEND;
	if ((flags & O_ACCMODE) == O_WRONLY) {
		flags = (flags & ~O_ACCMODE) | O_RDWR;
		*widened = true;
	}
	return flags;
}

/* Reopen @i for I/O with @flags, as the caller. */
static int open_inode(fuse_req_t req, struct afs_inode *i, int flags)
{
	char proc[AFS_PROCPATH_LEN];
	struct afs_creds c;
	bool widened;
	int fd, rc;

	/* O_NOFOLLOW would refuse the /proc magic link itself; the inode is
	 * never a symlink here (the kernel resolves those). */
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_DIRECT);
	flags = backing_flags(afs_req_fs(req), flags, &widened);
	rc = afs_req_creds_enter(req, &c, false);
	if (rc)
		return rc;
	afs_procpath(proc, i->fd);
	fd = open(proc, flags | O_CLOEXEC);
	/* A caller who may write but not read: the write-only open it asked
	 * for.  A partly written page then cannot be read back through it:
	 * such a write(2) fails (EBADF) unless the daemon's own readahead
	 * side, which reads as the daemon, serves the page. */
	if (fd < 0 && widened && errno == EACCES)
		fd = open(proc, ((flags & ~O_ACCMODE) | O_WRONLY) | O_CLOEXEC);
	rc = fd < 0 ? -errno : fd;
	afs_creds_leave(&c);
	return rc;
}

static void free_file(struct afs_open *h)
{
	struct afs_file *f = (struct afs_file *)h;

	afs_handle_destroy(&f->h);
	afs_itable_put(f->itable, f->inode);
	free(f);
}

static void release_file(struct afs_fs *fs, struct afs_file *f)
{
	afs_open_release(fs, &f->open);
}

/*
 * Hand @fd, opened on @inode (whose reference the file takes over), to the
 * kernel as @fi.  A regular file gets its readahead side (opened by its
 * first open) and a readahead state of its own.  Close-to-open
 * consistency: if the backing changed behind the mount since its identity
 * was taken, aheadfs's pages go now, and -- whenever the file's count of
 * such changes moved since the kernel was last told (here or at getattr)
 * -- the kernel drops its attributes now and its cached pages as it opens.
 * An O_TRUNC open has truncated the backing (atomic_o_trunc): the pages go
 * as for a truncate through the mount.
 */
static int finish_open(fuse_req_t req, struct afs_inode *inode, int fd,
		       struct fuse_file_info *fi, bool created)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_file *f = calloc(1, sizeof(*f));
	struct afs_fcache *fc = NULL;
	bool direct_io = false, stale = false;
	struct stat st;
	int rc;

	if (!f)
		return -ENOMEM;
	if (fstat(fd, &st)) {
		rc = -errno;
		free(f);
		return rc;
	}
	if (S_ISREG(st.st_mode)) {
		uint64_t changes;

		fc = afs_inode_fcache(fs, inode, &st);
		if (!fc) {
			free(f);
			return -ENOMEM;
		}
		if (!created && (fi->flags & O_TRUNC))
			afs_fcache_changed(fc, fd, 0, 0, true);
		else if (!created)
			afs_fcache_revalidate(fc, &st);
		changes = afs_fcache_changes(fc);
		stale = __atomic_exchange_n(&inode->changes_told, changes,
					    __ATOMIC_ACQ_REL) != changes;
		/* The readahead side reopens the file for reading, as the
		 * daemon: a non-root daemon may not read a file a caller opens
		 * write-only.  Such an open works without a cache of its own
		 * (its writes still drop the file's pages: they go through
		 * the inode's cache state). */
		rc = afs_fcache_ra(fc, fd);
		if (rc &&
		    !(rc == -EACCES && (fi->flags & O_ACCMODE) == O_WRONLY)) {
			free(f);
			return rc;
		}
		if (fs->ahead->cfg.read_mode == AFS_READ_DIRECT &&
		    (fi->flags & O_ACCMODE) == O_RDONLY) {
			/* Every read reaches the daemon.  Writable opens keep
			 * the kernel's cache: shared writable mappings need
			 * it. */
			fi->direct_io = 1;
			direct_io = true;
		}
	}
	afs_handle_init(&f->h, fc, fd, direct_io);
	f->open.free = free_file;
	f->itable = &fs->itable;
	f->inode = inode;
	afs_open_add(fs, &f->open);
	fi->fh = (uintptr_t)f;
	fi->keep_cache = !stale;
	/* A read-only open has nothing to flush and no lock for a FLUSH to
	 * release (locks stay with the kernel), so its close(2) costs no
	 * round trip: the kernel sends only the asynchronous RELEASE.  A
	 * writable open keeps its FLUSH: close(2) reports the backing's
	 * close errors (NFS backings write back on close). */
	fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
	/* Attributes only (offset < 0): dropping pages here could need a
	 * WRITE of dirty mmap pages that this thread, still inside the OPEN,
	 * might be the one to serve.  keep_cache 0 drops them as the kernel
	 * opens. */
	if (stale && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, inode->nodeid, -1, 0);
	return 0;
}

void afs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	int fd, rc;

	if (!i)
		return;
	fd = open_inode(req, i, fi->flags);
	if (fd < 0) {
		afs_itable_put(&fs->itable, i);
		fuse_reply_err(req, -fd);
		return;
	}
	rc = finish_open(req, i, fd, fi, false);
	if (rc) {
		close(fd);
		afs_itable_put(&fs->itable, i);
		fuse_reply_err(req, -rc);
		return;
	}
	if (fuse_reply_open(req, fi) == -ENOENT)
		release_file(fs, afs_file_of(fi)); /* interrupted: no release */
}

void afs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *dir = afs_req_inode(req, parent);
	struct afs_inode *i = NULL;
	char proc[AFS_PROCPATH_LEN];
	struct fuse_entry_param e;
	struct afs_creds c;
	bool widened;
	int fd = -1, pfd, rc;

	if (!dir)
		return;
	rc = afs_req_creds_enter(req, &c, true);
	if (rc)
		goto out_put;
	/* The kernel sends CREATE only for a name it believes absent; if a
	 * symlink appeared there behind its back, refuse to follow it. */
	fd = openat(dir->fd, name,
		    backing_flags(fs, fi->flags & ~O_DIRECT, &widened) |
			    O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		    mode);
	if (fd < 0 && widened && errno == EACCES)
		fd = openat(dir->fd, name,
			    (fi->flags & ~(O_DIRECT | O_APPEND)) | O_CREAT |
				    O_NOFOLLOW | O_CLOEXEC,
			    mode);
	if (fd < 0)
		rc = -errno;
	afs_creds_leave(&c);
	if (rc)
		goto out_put;
	/* The entry is the inode just opened, whatever happens to the name
	 * meanwhile. */
	afs_procpath(proc, fd);
	pfd = open(proc, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		rc = -errno;
		goto out_close;
	}
	rc = afs_entry_from_fd(fs, pfd, &e);
	if (rc)
		goto out_close;
	i = afs_itable_get(&fs->itable, e.ino); /* held by the lookup */
	rc = finish_open(req, i, fd, fi, true);
	if (rc) {
		afs_itable_forget(&fs->itable, e.ino, 1);
		afs_itable_put(&fs->itable, i);
		goto out_close;
	}
	afs_itable_put(&fs->itable, dir);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		/* interrupted: no forget or release will come */
		afs_itable_forget(&fs->itable, e.ino, 1);
		release_file(fs, afs_file_of(fi));
	}
	return;

out_close:
	close(fd);
out_put:
	afs_itable_put(&fs->itable, dir);
	fuse_reply_err(req, -rc);
}

static int read_reply(void *ctx, const struct iovec *iov, int n)
{
	return fuse_reply_iov(ctx, iov, n);
}

static void read_interrupted(fuse_req_t req, void *data)
{
	cache_wait_cancel(data);
}

/* The interrupt callback is registered only while the reader waits: a
 * replied request is freed, so it must be gone by then. */
static void read_wait(void *ctx, struct cache_wait_cancel *wc)
{
	fuse_req_interrupt_func(ctx, wc ? read_interrupted : NULL, wc);
}

void afs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_file *f = afs_file_of(fi);
	struct afs_read r = {
		.fc = f->h.cached ? afs_inode_fc(f->inode) : NULL,
		.ra = &f->h.ra,
		.fd = f->h.fd,
		.keep_data = f->h.direct_io,
		.reply = read_reply,
		.wait = read_wait,
		.ctx = req,
	};
	int rc;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	rc = afs_data_read(fs->ahead, &r, (uint64_t)off, size);
	if (rc)
		fuse_reply_err(req, -rc);
}

/* Kill privileges on a write.  The kernel's SETATTR before the WRITE
 * clears setuid and setgid-with-group-execute (ops_entry.c kill_bits());
 * the backing also clears setgid without group execute when the writer is
 * not in the file's group.  A write the backing performs under the
 * caller's ids clears exactly what the same write on the backing would; a
 * root daemon writing as itself (CAP_FSETID) would clear nothing.  One
 * fstat per write of a non-root caller; the ids are switched only for a
 * file that still has either bit. */
static bool kill_privs_as_caller(fuse_req_t req, int fd)
{
	struct stat st;

	if (!afs_req_fs(req)->as_root || fuse_req_ctx(req)->uid == 0)
		return false;
	return !fstat(fd, &st) && (st.st_mode & (S_ISUID | S_ISGID));
}

void afs_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
		      off_t off, struct fuse_file_info *fi)
{
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(fuse_buf_size(bufv));
	struct afs_file *f = afs_file_of(fi);
	ssize_t n;

	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	dst.buf[0].fd = f->h.fd;
	dst.buf[0].pos = off;
	if (kill_privs_as_caller(req, f->h.fd)) {
		struct afs_creds c;
		int rc = afs_req_creds_enter(req, &c, false);

		if (rc) {
			fuse_reply_err(req, -rc);
			return;
		}
		n = fuse_buf_copy(&dst, bufv, 0);
		afs_creds_leave(&c);
	} else {
		n = fuse_buf_copy(&dst, bufv, 0);
	}
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	afs_fcache_changed(afs_inode_fc(f->inode), f->h.fd, (uint64_t)off,
			   (uint64_t)n, false);
	fuse_reply_write(req, (size_t)n);
}

void afs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* close() of a duplicate reports what the backing's close would
	 * (NFS backings flush on close) without closing the handle. */
	int fd = dup(afs_fi_fd(fi));

	if (fd < 0 || close(fd) < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_err(req, 0);
}

void afs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	release_file(afs_req_fs(req), afs_file_of(fi));
	fuse_reply_err(req, 0);
}

void afs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		  struct fuse_file_info *fi)
{
	int fd = afs_fi_fd(fi);
	int res = datasync ? fdatasync(fd) : fsync(fd);

	fuse_reply_err(req, res ? errno : 0);
}

void afs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		      off_t length, struct fuse_file_info *fi)
{
	struct afs_file *f = afs_file_of(fi);
	bool as_caller = kill_privs_as_caller(req, f->h.fd);
	struct afs_creds c;
	int rc = as_caller ? afs_req_creds_enter(req, &c, false) : 0;

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (fallocate(f->h.fd, mode, offset, length))
		rc = -errno;
	if (as_caller)
		afs_creds_leave(&c);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* Punched or zeroed bytes change; plain allocation only the size,
	 * but the identity must follow either way. */
	afs_fcache_changed(afs_inode_fc(f->inode), f->h.fd, (uint64_t)offset,
			   (uint64_t)length, false);
	fuse_reply_err(req, 0);
}

void afs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		  struct fuse_file_info *fi)
{
	off_t res = lseek(afs_fi_fd(fi), off, whence);

	if (res < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, res);
}

void afs_op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			    struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			    off_t off_out, struct fuse_file_info *fi_out,
			    size_t len, int flags)
{
	struct afs_file *out = afs_file_of(fi_out);
	bool as_caller = kill_privs_as_caller(req, out->h.fd);
	off_t dst = off_out;
	struct afs_creds c;
	ssize_t n;
	int rc = as_caller ? afs_req_creds_enter(req, &c, false) : 0;

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	n = copy_file_range(afs_fi_fd(fi_in), &off_in, out->h.fd, &off_out, len,
			    (unsigned)flags);
	rc = n < 0 ? -errno : 0;
	if (as_caller)
		afs_creds_leave(&c);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	afs_fcache_changed(afs_inode_fc(out->inode), out->h.fd, (uint64_t)dst,
			   (uint64_t)n, false);
	fuse_reply_write(req, (size_t)n);
}
