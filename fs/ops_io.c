/* ops_io.c - file data: open, create, read, write, flush, release, fsync,
 * fallocate, lseek, copy_file_range.
 *
 * An open regular file's fi->fh points to a struct afs_handle (ahead.h):
 * the backing fd, opened through /proc/self/fd/N of the inode's O_PATH fd
 * with the caller's flags (less O_DIRECT: the kernel already gives the
 * application direct I/O semantics on the FUSE side, and the backing would
 * refuse the unaligned buffers FUSE requests arrive in) and with the
 * caller's credentials; the handle's readahead state; and a reference to
 * the file's afs_fcache (its cache mapping and ra_file, shared by every
 * open of the file).  Opens keep the kernel's page cache (keep_cache)
 * unless the backing changed behind the mount since the pages were read.
 *
 * Reads go through the cache (afs_ahead_read()); writes, fallocate and
 * copy_file_range go to the backing and then drop the cached pages they
 * covered (afs_ahead_changed()).  Writes: libfuse hands the request's data
 * in its per-thread receive buffer; fuse_buf_copy() pwrite()s it straight
 * to the backing fd, no copy and no allocation.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/ahead.h"
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

/* The handle of a regular file open on @fd: attach the file's cache state
 * (revalidated against the backing: a change behind the mount drops the
 * pages, and the kernel's too through keep_cache = 0). */
static int handle_new(struct afs_fs *fs, struct afs_inode *i, int fd,
		      struct fuse_file_info *fi, bool created)
{
	struct afs_handle *h = calloc(1, sizeof(*h));
	struct stat st;
	bool changed = false;
	int rc;

	if (!h)
		return -ENOMEM;
	if (fstat(fd, &st)) {
		rc = -errno;
		goto out_free;
	}
	bool fresh = !__atomic_load_n(&i->fc, __ATOMIC_ACQUIRE);

	rc = afs_fcache_attach(fs->ahead, &i->fc, fd, &st, &h->fc);
	if (rc)
		goto out_free;
	if (!fresh && !created) {
		if (fi->flags & O_TRUNC) {
			afs_ahead_changed(h->fc, fd, 0, 0, true);
			changed = true;
		} else {
			changed = afs_ahead_revalidate(fs->ahead, h->fc, &st);
		}
	}
	h->fd = fd;
	ra_state_init(&h->ra);
	fi->keep_cache = !changed;
	if (fs->ahead->cfg.read_mode == AFS_READ_DIRECT &&
	    (fi->flags & O_ACCMODE) == O_RDONLY) {
		/* Every read reaches the daemon.  Writable opens keep the
		 * kernel's cache: shared writable mappings need it. */
		fi->direct_io = 1;
		h->direct_io = true;
	}
	fi->fh = (uintptr_t)h;
	pthread_mutex_lock(&fs->handles_lock);
	h->next = fs->handles;
	if (h->next)
		h->next->prev = h;
	fs->handles = h;
	pthread_mutex_unlock(&fs->handles_lock);
	return 0;

out_free:
	free(h);
	return rc;
}

static void handle_free(struct afs_fs *fs, struct afs_handle *h)
{
	pthread_mutex_lock(&fs->handles_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->handles_lock);
	close(h->fd);
	afs_fcache_put(h->fc);
	ra_state_destroy(&h->ra);
	free(h);
}

void afs_handles_release_all(struct afs_fs *fs)
{
	while (fs->handles)
		handle_free(fs, fs->handles);
}

static inline struct afs_handle *fi_handle(const struct fuse_file_info *fi)
{
	return (struct afs_handle *)(uintptr_t)fi->fh;
}

int afs_fi_fd(const struct fuse_file_info *fi)
{
	return fi_handle(fi)->fd;
}

void afs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_itable_get(&fs->itable, ino);
	int fd, rc;

	if (!i) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	fd = open_inode(req, i, fi->flags);
	if (fd < 0) {
		afs_itable_put(&fs->itable, i);
		fuse_reply_err(req, -fd);
		return;
	}
	rc = handle_new(fs, i, fd, fi, false);
	afs_itable_put(&fs->itable, i);
	if (rc) {
		close(fd);
		fuse_reply_err(req, -rc);
		return;
	}
	if (fuse_reply_open(req, fi) == -ENOENT)
		handle_free(fs, fi_handle(fi)); /* interrupted: no release */
}

void afs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *dir = afs_req_inode(req, parent), *file;
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
	afs_itable_put(&fs->itable, dir);
	file = afs_itable_get(&fs->itable, e.ino);
	rc = file ? handle_new(fs, file, fd, fi, true) : -ESTALE;
	if (file)
		afs_itable_put(&fs->itable, file);
	if (rc) {
		afs_itable_forget(&fs->itable, e.ino, 1);
		close(fd);
		fuse_reply_err(req, -rc);
		return;
	}
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		/* interrupted: no forget or release will come */
		afs_itable_forget(&fs->itable, e.ino, 1);
		handle_free(fs, fi_handle(fi));
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
	afs_ahead_read(req, afs_req_fs(req)->ahead, fi_handle(fi), size, off);
}

void afs_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
		      off_t off, struct fuse_file_info *fi)
{
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(fuse_buf_size(bufv));
	ssize_t n;

	struct afs_handle *h = fi_handle(fi);

	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	dst.buf[0].fd = h->fd;
	dst.buf[0].pos = off;
	n = fuse_buf_copy(&dst, bufv, 0);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	afs_ahead_changed(h->fc, h->fd, (uint64_t)off, (uint64_t)n, false);
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
	handle_free(afs_req_fs(req), fi_handle(fi));
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
	struct afs_handle *h = fi_handle(fi);

	if (fallocate(h->fd, mode, offset, length)) {
		fuse_reply_err(req, errno);
		return;
	}
	/* Punched or zeroed bytes change; plain allocation only the size,
	 * but the identity must follow either way. */
	afs_ahead_changed(h->fc, h->fd, (uint64_t)offset, (uint64_t)length,
			  false);
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
	struct afs_handle *out = fi_handle(fi_out);
	off_t dst = off_out;
	ssize_t n = copy_file_range(afs_fi_fd(fi_in), &off_in, out->fd,
				    &off_out, len, (unsigned)flags);

	if (n < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	afs_ahead_changed(out->fc, out->fd, (uint64_t)dst, (uint64_t)n, false);
	fuse_reply_write(req, (size_t)n);
}
