/* ops_io.c - file data: open, create, read, write, flush, release, fsync,
 * fallocate, lseek, copy_file_range.
 *
 * An open regular file is a struct afs_file in fi->fh: a reference on the
 * inode and a struct afs_handle (ahead.h) -- the backing fd, opened through
 * /proc/self/fd/N of the inode's O_PATH fd with the caller's flags (less
 * O_DIRECT: the kernel already gives the application direct I/O semantics on
 * the FUSE side, and the backing would refuse the unaligned buffers FUSE
 * requests arrive in) and credentials; the handle's readahead state; and a
 * reference to the file's cache state (afs_fcache: its cache mapping and
 * ra_file, shared by every open of the file).
 *
 * Two caches, two checks at open, both close-to-open consistency for changes
 * made behind the mount:
 *   - the kernel's: opens keep its page cache (keep_cache) unless the backing
 *     changed since the kernel last saw its attributes (size, mtime, ctime:
 *     afs_inode_changed_behind()); then its attributes are invalidated and
 *     the open drops its pages;
 *   - aheadfs's: the pages are dropped if the backing's identity differs
 *     from the one they were read under (afs_ahead_revalidate()).
 * Changes made through the mount (write, fallocate, copy_file_range,
 * truncate) are noted in both so they do not count as such.
 *
 * Reads go through the cache (afs_ahead_read()).  Writes: libfuse hands the
 * request's data in its per-thread receive buffer; fuse_buf_copy()
 * pwrite()s it straight to the backing fd, no copy and no allocation; then
 * afs_ahead_changed() drops the cached pages the write covered.
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

/* Reopen @i for I/O with @flags, as the caller. */
static int open_inode(fuse_req_t req, struct afs_inode *i, int flags)
{
	char proc[AFS_PROCPATH_LEN];
	struct afs_creds c;
	int fd, rc;

	/* O_NOFOLLOW would refuse the /proc magic link itself; the inode is
	 * never a symlink here (the kernel resolves those). */
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_DIRECT);
	rc = afs_req_creds_enter(req, &c, false);
	if (rc)
		return rc;
	afs_procpath(proc, i->fd);
	fd = open(proc, flags | O_CLOEXEC);
	rc = fd < 0 ? -errno : fd;
	afs_creds_leave(&c);
	return rc;
}

/* The file's cache state, for changes through any open of it: the entry's,
 * which lives while the open's inode reference does (NULL if no open
 * could create one). */
static struct afs_fcache *inode_fc(struct afs_inode *inode)
{
	return __atomic_load_n(&inode->fc, __ATOMIC_ACQUIRE);
}

static void free_file(struct afs_open *h)
{
	struct afs_file *f = (struct afs_file *)h;

	close(f->h.fd);
	afs_fcache_put(f->h.fc);
	ra_state_destroy(&f->h.ra);
	afs_itable_put(f->itable, f->inode);
	free(f);
}

static void release_file(struct afs_fs *fs, struct afs_file *f)
{
	afs_open_release(fs, &f->open);
}

/*
 * Hand @fd, opened on @inode (whose reference the file takes over), to the
 * kernel as @fi.  A regular file gets its cache state (created by its first
 * open) and a readahead state of its own.  Close-to-open consistency: if the
 * backing changed behind the mount since the kernel last heard of it, the
 * kernel drops its attributes now and its cached pages as it opens; if it
 * changed since aheadfs's pages were read, those go too.  An O_TRUNC open
 * has truncated the backing (atomic_o_trunc): the pages go as for a
 * truncate through the mount.
 */
static int finish_open(fuse_req_t req, struct afs_inode *inode, int fd,
		       struct fuse_file_info *fi, bool created)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_file *f = calloc(1, sizeof(*f));
	bool fresh, stale = false;
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
		fresh = !__atomic_load_n(&inode->fc, __ATOMIC_ACQUIRE);
		rc = afs_fcache_attach(fs->ahead, &inode->fc, fd, &st,
				       &f->h.fc);
		/* The readahead side reopens the file for reading, as the
		 * daemon: a non-root daemon may not read a file a caller opens
		 * write-only.  Such an open works without a cache of its own
		 * (its writes still drop the file's pages: write_buf() takes
		 * the inode's cache state, whoever created it). */
		if (rc == -EACCES && (fi->flags & O_ACCMODE) == O_WRONLY) {
			f->h.fc = NULL;
			fresh = true;
		} else if (rc) {
			free(f);
			return rc;
		}
		if (!fresh && !created && (fi->flags & O_TRUNC))
			afs_ahead_changed(f->h.fc, fd, 0, 0, true);
		else if (!fresh && !created)
			stale = afs_ahead_revalidate(fs->ahead, f->h.fc, &st);
		if (fs->ahead->cfg.read_mode == AFS_READ_DIRECT &&
		    (fi->flags & O_ACCMODE) == O_RDONLY) {
			/* Every read reaches the daemon.  Writable opens keep
			 * the kernel's cache: shared writable mappings need
			 * it. */
			fi->direct_io = 1;
			f->h.direct_io = true;
		}
	}
	ra_state_init(&f->h.ra);
	f->open.free = free_file;
	f->itable = &fs->itable;
	f->h.fd = fd;
	f->inode = inode;
	afs_open_add(fs, &f->open);
	fi->fh = (uintptr_t)f;
	fi->keep_cache = !stale;
	if (afs_inode_changed_behind(inode, &st)) {
		/* Attributes only (offset < 0): dropping pages here could
		 * need a WRITE of dirty mmap pages that this thread, still
		 * inside the OPEN, might be the one to serve. */
		if (fs->se)
			fuse_lowlevel_notify_inval_inode(fs->se, inode->nodeid,
							 -1, 0);
		fi->keep_cache = 0;
	}
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
	int fd = -1, pfd, rc;

	if (!dir)
		return;
	rc = afs_req_creds_enter(req, &c, true);
	if (rc)
		goto out_put;
	/* The kernel sends CREATE only for a name it believes absent; if a
	 * symlink appeared there behind its back, refuse to follow it. */
	fd = openat(dir->fd, name,
		    (fi->flags & ~O_DIRECT) | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
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

void afs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	afs_ahead_read(req, afs_req_fs(req)->ahead, &afs_file_of(fi)->h, size,
		       off);
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
	afs_inode_note_write(f->inode);
	n = fuse_buf_copy(&dst, bufv, 0);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	afs_ahead_changed(inode_fc(f->inode), f->h.fd, (uint64_t)off,
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

	afs_inode_note_write(f->inode);
	if (fallocate(f->h.fd, mode, offset, length)) {
		fuse_reply_err(req, errno);
		return;
	}
	/* Punched or zeroed bytes change; plain allocation only the size,
	 * but the identity must follow either way. */
	afs_ahead_changed(inode_fc(f->inode), f->h.fd, (uint64_t)offset,
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
	off_t dst = off_out;
	ssize_t n;

	afs_inode_note_write(out->inode);
	n = copy_file_range(afs_fi_fd(fi_in), &off_in, out->h.fd, &off_out, len,
			    (unsigned)flags);
	if (n < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	afs_ahead_changed(inode_fc(out->inode), out->h.fd, (uint64_t)dst,
			  (uint64_t)n, false);
	fuse_reply_write(req, (size_t)n);
}
