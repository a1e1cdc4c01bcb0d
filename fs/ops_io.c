/* ops_io.c - file data: open, create, read, write, flush, release, fsync,
 * fallocate, lseek, copy_file_range.
 *
 * An open file (struct afs_file in fi->fh) is a backing fd, opened through
 * /proc/self/fd/N of the inode's O_PATH fd with the caller's flags (less
 * O_DIRECT: the kernel already gives the application direct I/O semantics
 * on the FUSE side, and the backing would refuse the unaligned buffers FUSE
 * requests arrive in) and with the caller's credentials, and a reference
 * on the inode.  Opens keep the kernel's page cache (keep_cache): an open
 * does not throw away what other opens cached -- unless the backing file
 * changed behind the mount since the kernel last saw its attributes
 * (size, mtime, ctime): then the open drops the kernel's attributes and
 * pages (close-to-open consistency, as NFS gives).  Changes made through
 * the mount (write, fallocate, copy_file_range, setattr) are noted so they
 * do not count as such.
 *
 * Reads: one pread() into this thread's preallocated buffer and one
 * fuse_reply_buf().  libfuse's fuse_reply_data() from an fd buffer would,
 * without splice, malloc a fresh reply buffer per call -- an mmap/munmap
 * pair for every reply of 128 KiB or more -- and splice needs a pipe as
 * large as the request plus headers, which pipe-max-size (1 MiB) refuses
 * for 1 MiB requests.  Writes: libfuse hands the request's data in its
 * per-thread receive buffer; fuse_buf_copy() pwrite()s it straight to the
 * backing fd, no copy and no allocation.
 *
 * This is the one file through which file data flows: the page cache
 * (cache/) and readahead (ra/) of later issues hook in at afs_op_read() and
 * at every call that changes file data (write, truncate in setattr,
 * fallocate, copy_file_range's destination).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs_internal.h"
#include "fs/log.h"

struct thread_buf {
	size_t size;
	void *data;
};

static pthread_key_t thread_buf_key;

static void thread_buf_free(void *p)
{
	struct thread_buf *b = p;

	free(b->data);
	free(b);
}

int afs_thread_buf_key_init(void)
{
	return -pthread_key_create(&thread_buf_key, thread_buf_free);
}

void *afs_thread_buf(size_t size)
{
	struct thread_buf *b = pthread_getspecific(thread_buf_key);
	void *data;

	if (b && b->size >= size)
		return b->data;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return NULL;
		if (pthread_setspecific(thread_buf_key, b)) {
			free(b);
			return NULL;
		}
	}
	/* Grow straight to a whole request size, so a thread reallocates at
	 * most once or twice in its life. */
	if (size < AFS_MAX_WRITE)
		size = AFS_MAX_WRITE;
	if (posix_memalign(&data, 4096, size))
		return NULL;
	free(b->data);
	b->data = data;
	b->size = size;
	return data;
}

void afs_thread_buf_release(void)
{
	struct thread_buf *b = pthread_getspecific(thread_buf_key);

	if (b) {
		pthread_setspecific(thread_buf_key, NULL);
		thread_buf_free(b);
	}
}

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

static void free_file(struct afs_open *h)
{
	struct afs_file *f = (struct afs_file *)h;

	close(f->fd);
	afs_itable_put(f->itable, f->inode);
	free(f);
}

static void release_file(struct afs_fs *fs, struct afs_file *f)
{
	afs_open_release(fs, &f->open);
}

/* Hand @fd, opened on @inode (whose reference the file takes over), to
 * the kernel as @fi; and with close-to-open consistency: if the backing file
 * changed behind the mount since the kernel last heard of it, the kernel
 * drops its attributes now and its cached pages as it opens. */
static int finish_open(fuse_req_t req, struct afs_inode *inode, int fd,
		       struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_file *f = malloc(sizeof(*f));
	struct stat st;

	if (!f)
		return -ENOMEM;
	f->open.free = free_file;
	f->itable = &fs->itable;
	f->fd = fd;
	f->inode = inode;
	afs_open_add(fs, &f->open);
	fi->fh = (uintptr_t)f;
	fi->keep_cache = 1;
	if (!fstat(fd, &st) && afs_inode_changed_behind(inode, &st)) {
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
	rc = finish_open(req, i, fd, fi);
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
	rc = finish_open(req, i, fd, fi);
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
	char *buf = afs_thread_buf(size);
	size_t done = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	while (done < size) {
		ssize_t n = pread(afs_file_of(fi)->fd, buf + done, size - done,
				  off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (done)
				break; /* short read: what was read is data */
			fuse_reply_err(req, errno);
			return;
		}
		if (n == 0)
			break; /* end of file */
		done += (size_t)n;
	}
	fuse_reply_buf(req, buf, done);
}

void afs_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
		      off_t off, struct fuse_file_info *fi)
{
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(fuse_buf_size(bufv));
	struct afs_file *f = afs_file_of(fi);
	ssize_t n;

	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	dst.buf[0].fd = f->fd;
	dst.buf[0].pos = off;
	afs_inode_note_write(f->inode);
	n = fuse_buf_copy(&dst, bufv, 0);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

void afs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* close() of a duplicate reports what the backing's close would
	 * (NFS backings flush on close) without closing the handle. */
	int fd = dup(afs_file_of(fi)->fd);

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
	int fd = afs_file_of(fi)->fd;
	int res = datasync ? fdatasync(fd) : fsync(fd);

	fuse_reply_err(req, res ? errno : 0);
}

void afs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		      off_t length, struct fuse_file_info *fi)
{
	struct afs_file *f = afs_file_of(fi);
	int res;

	afs_inode_note_write(f->inode);
	res = fallocate(f->fd, mode, offset, length);

	fuse_reply_err(req, res ? errno : 0);
}

void afs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		  struct fuse_file_info *fi)
{
	off_t res = lseek(afs_file_of(fi)->fd, off, whence);

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
	ssize_t n;

	afs_inode_note_write(out->inode);
	n = copy_file_range(afs_file_of(fi_in)->fd, &off_in, out->fd, &off_out,
			    len, (unsigned)flags);

	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}
