/* ops_io.c - file data: open, create, read, write, flush, release, fsync,
 * fallocate, lseek, copy_file_range.
 *
 * An open regular file is a struct afs_file in fi->fh: a reference on the
 * inode and a struct afs_handle (fs/data/data.h) -- the backing fd, opened
 * through /proc/self/fd/N of the inode's O_PATH fd with the caller's flags
 * (less O_DIRECT: the kernel already gives the application direct I/O
 * semantics on the FUSE side, and the backing would refuse the unaligned
 * buffers FUSE requests arrive in) and credentials, and the handle's
 * readahead state.  A plain read-only open while the kernel checks access
 * (share_ro()) takes the inode's shared read-only descriptor instead: no
 * reopen, nothing to close at RELEASE.  The file's data path state
 * (identity, cache mapping, ra_file) is the inode's (afs_inode_fc()),
 * shared by every open of it.
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
 * Zero-message opens (-o opens=none): the first OPEN is answered ENOSYS,
 * and the kernel then sends no OPEN, and no RELEASE, for any file again;
 * CREATE too is answered ENOSYS (the kernel falls back to MKNOD and an
 * open that sends nothing), and FLUSH without a handle (the kernel then
 * stops sending FLUSH).  No handle ever exists, so requests arrive with fh
 * 0 and work on the inode's own descriptor (io_target(): inode->io_fd,
 * opened once as the daemon, read-write where it may, closed at FORGET),
 * with the file's own readahead state; a WRITE's O_APPEND and O_[D]SYNC
 * come from its flags (pwritev2 RWF_APPEND, RWF_DSYNC, RWF_SYNC).  The
 * kernel checked the open's access (default_permissions, forced on); a
 * change behind the mount reaches the kernel's page cache at LOOKUP and
 * GETATTR (ops_entry.c tell_changes()) instead of at open.
 *
 * Reads go through the data path (afs_data_read(), replying with an iovec
 * over cache pages).  Writes: libfuse hands the request's data in its
 * per-thread receive buffer; afs_data_write() pwrite()s it straight to the
 * backing fd, no copy and no allocation -- or, for a large write of the
 * kernel's writeback cache, with O_DIRECT (fs/data/write.c); then
 * afs_fcache_changed() drops the cached pages the write covered.
 *
 * The kernel's FUSE passthrough (-o passthrough=, passthrough.h): the last
 * step of an open is its I/O mode (afs_pt_open()); the reply names it and
 * the backing id (afs_pt_reply_begin()).  A passthrough open's reads and
 * writes never come here -- but those of an O_DIRECT open or a setid writer
 * that joined one with direct_io, and those go around the cache while the
 * file has a passthrough writer (afs_pt_writing()); the open's release
 * undoes its mode (afs_pt_release()) before its descriptor is closed.
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

/* Set the inode's descriptor slot @slot (-1 until now) to @fd, opened
 * meanwhile, unless another request set it first: then @fd is closed.
 * Return: the descriptor in the slot. */
static int publish_fd(int *slot, int fd)
{
	int expected = -1;

	if (__atomic_compare_exchange_n(slot, &expected, fd, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return fd;
	close(fd);
	return expected;
}

/*
 * Whether an open with @flags of @i shares the inode's read-only descriptor
 * instead of opening one of its own: a plain read-only open of a regular
 * file while the kernel checks every caller's access (default_permissions).
 * It then costs no reopen through /proc under the caller's ids, and no
 * descriptor to close at RELEASE.  Flags that change how the backing reads
 * or what the open does (O_NOATIME, O_DIRECT, O_[D]SYNC, O_TRUNC) keep an
 * open of their own.
 */
static bool share_ro(const struct afs_fs *fs, const struct afs_inode *i,
		     int flags)
{
	return S_ISREG(i->type) && (flags & O_ACCMODE) == O_RDONLY &&
	       !(flags & (O_TRUNC | O_NOATIME | O_DIRECT | O_SYNC | O_DSYNC)) &&
	       fs->default_permissions;
}

/* The inode's shared read-only descriptor, opened as the daemon on first
 * use.  Return: it, or -errno (the caller then opens its own). */
static int inode_ro_fd(struct afs_inode *i)
{
	char proc[AFS_PROCPATH_LEN];
	int fd = __atomic_load_n(&i->ro_fd, __ATOMIC_ACQUIRE);

	if (fd >= 0)
		return fd;
	afs_procpath(proc, i->fd);
	fd = open(proc, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return publish_fd(&i->ro_fd, fd);
}

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

int afs_inode_io_fd(struct afs_fs *fs, struct afs_inode *i)
{
	char proc[AFS_PROCPATH_LEN];
	int fd = __atomic_load_n(&i->io_fd, __ATOMIC_ACQUIRE), won;
	int wr_err = 0;
	struct afs_fcache *fc;

	if (fd >= 0)
		return fd;
	afs_procpath(proc, i->fd);
	fd = open(proc, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		wr_err = -errno;
		fd = open(proc, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	fc = afs_inode_fcache(fs, i, NULL);
	if (fc)
		(void)afs_fcache_ra(fc,
				    fd); /* else reads go around the cache */
	won = publish_fd(&i->io_fd, fd);
	if (won == fd)
		__atomic_store_n(&i->io_wr_err, wr_err, __ATOMIC_RELEASE);
	return won;
}

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

static void free_file(struct afs_open *h)
{
	struct afs_file *f = (struct afs_file *)h;

	afs_pt_release(f->pt, f->inode, f->io, f->writable, f->h.fd);
	afs_handle_destroy(&f->h);
	afs_itable_put(f->itable, f->inode);
	free(f);
}

static void release_file(struct afs_fs *fs, struct afs_file *f)
{
	afs_open_release(fs, &f->open);
}

/* Whether the backing may clear setuid/setgid on what @req does as its
 * caller (a write, truncate or chown by anyone but root, under a root
 * daemon that switched to the caller's ids): then the kernel's cached mode
 * may be left stale, since with handle_killpriv_v2 (devio.c) no SETATTR of
 * the kernel's own carries the new mode back. */
static bool kill_privs_possible(fuse_req_t req)
{
	return afs_req_fs(req)->as_root && fuse_req_ctx(req)->uid != 0;
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
 * as for a truncate through the mount, and, where the truncation may have
 * cleared setuid/setgid (kill_privs_possible()), the kernel's attributes.
 * The I/O mode comes last (passthrough.h, afs_pt_open()): a passthrough
 * open keeps no kernel cache (the kernel refuses FOPEN_KEEP_CACHE with
 * it), and the inode's first passthrough writer drops aheadfs's pages;
 * while the inode has one, changes the backing shows are its writes
 * through the mount, not behind it.
 */
static int finish_open(fuse_req_t req, struct afs_inode *inode, int fd,
		       bool shared, struct fuse_file_info *fi, bool created)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_file *f = calloc(1, sizeof(*f));
	struct afs_fcache *fc = NULL;
	bool direct_io = false, stale = false, truncated = false;
	/* a file that is not regular takes no I/O mode: neutral */
	struct afs_pt_open pt = {.io = AFS_IO_DIRECT};
	struct afs_pt_request rq;
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
		truncated = !created && (fi->flags & O_TRUNC);
		if (truncated || (!created && afs_pt_writing(inode)))
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
		if (afs_ahead_config(fs->ahead)->read_mode == AFS_READ_DIRECT &&
		    (fi->flags & O_ACCMODE) == O_RDONLY) {
			/* Every read reaches the daemon.  Writable opens keep
			 * the kernel's cache: shared writable mappings need
			 * it. */
			fi->direct_io = 1;
			direct_io = true;
		}
		/* Write-only opens in write-through mode (-o wronly_io=,
		 * ops_entry.c afs_op_init()): the kernel copies nothing into
		 * its page cache for them -- a write(2)'s bytes go from the
		 * writer's pages to the WRITE, one copy less and no second
		 * copy of the file in memory -- and, never reading, they lose
		 * nothing.  (No shared mapping needs the cache: mmap() needs a
		 * readable open.) */
		if (__atomic_load_n(&fs->wronly_direct, __ATOMIC_ACQUIRE) &&
		    (fi->flags & O_ACCMODE) == O_WRONLY) {
			fi->direct_io = 1;
			direct_io = true;
		}
		rq = (struct afs_pt_request){
			.flags = fi->flags,
			.direct_io = direct_io,
			.setid_writer = (fi->flags & O_ACCMODE) != O_RDONLY &&
					(st.st_mode & (S_ISUID | S_ISGID)) &&
					kill_privs_possible(req),
		};
		afs_pt_open(&fs->pt, inode, fd, &rq, &pt);
		direct_io = pt.io == AFS_IO_DIRECT ||
			    pt.io == AFS_IO_PASSTHROUGH_DIRECT;
		fi->direct_io = direct_io;
		if (pt.first_writer && !truncated && !created)
			afs_fcache_changed(fc, fd, 0, 0, true);
	}
	afs_handle_init(&f->h, fc, fd, direct_io);
	f->h.shared_fd = shared;
	f->open.free = free_file;
	f->itable = &fs->itable;
	f->inode = inode;
	f->pt = &fs->pt;
	f->io = pt.io;
	f->writable = (fi->flags & O_ACCMODE) != O_RDONLY;
	f->backing_id = pt.backing_id;
	afs_open_add(fs, &f->open);
	fi->fh = (uintptr_t)f;
	fi->keep_cache = !stale && !pt.backing_id;
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
	if ((stale || (truncated && kill_privs_possible(req))) && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, inode->nodeid, -1, 0);
	return 0;
}

void afs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i;
	bool shared = false;
	int fd = -1, rc;

	if (fs->opts->opens == AFS_OPENS_NONE) {
		/* The kernel stops sending OPEN and RELEASE for good. */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	i = afs_req_inode(req, ino);
	if (!i)
		return;
	if (share_ro(fs, i, fi->flags)) {
		fd = inode_ro_fd(i);
		shared = fd >= 0;
	}
	if (!shared)
		fd = open_inode(req, i, fi->flags);
	if (fd < 0) {
		afs_itable_put(&fs->itable, i);
		fuse_reply_err(req, -fd);
		return;
	}
	rc = finish_open(req, i, fd, shared, fi, false);
	if (rc) {
		if (!shared)
			close(fd);
		afs_itable_put(&fs->itable, i);
		fuse_reply_err(req, -rc);
		return;
	}
	afs_pt_reply_begin(fi->fh, afs_file_of(fi)->backing_id);
	rc = fuse_reply_open(req, fi);
	afs_pt_reply_end();
	if (rc == -ENOENT)
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
	if (fs->opts->opens == AFS_OPENS_NONE) {
		/* An open handle would never be released: the kernel makes
		 * the file with MKNOD instead, and opens it without a word. */
		afs_itable_put(&fs->itable, dir);
		fuse_reply_err(req, ENOSYS);
		return;
	}
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
	rc = finish_open(req, i, fd, false, fi, true);
	if (rc) {
		afs_itable_forget(&fs->itable, e.ino, 1);
		afs_itable_put(&fs->itable, i);
		goto out_close;
	}
	afs_itable_put(&fs->itable, dir);
	afs_pt_reply_begin(fi->fh, afs_file_of(fi)->backing_id);
	rc = fuse_reply_create(req, &e, fi);
	afs_pt_reply_end();
	if (rc == -ENOENT) {
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

		rc = afs_data_read(fs->ahead, &r, (uint64_t)off, size);
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
 * clears setuid and setgid-with-group-execute (ops_entry.c kill_bits());
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

	if (!kill_privs_possible(req) || fstat(fd, &st))
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

	/* No splice (ops_entry.c afs_op_init()): the data is in memory. */
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
	had = kill_privs_as_caller(req, t.fd);
	if (had) {
		struct afs_creds c;

		rc = afs_req_creds_enter(req, &c, false);
		if (rc) {
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
		afs_fcache_changed(afs_inode_fc(t.inode), t.fd, (uint64_t)at,
				   (uint64_t)n, false);
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

void afs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* close() of a duplicate reports what the backing's close would
	 * (NFS backings flush on close) without closing the handle. */
	int fd;

	if (!fi->fh) {
		/* opens=none: nothing to flush; the kernel stops asking. */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fd = dup(afs_fi_fd(fi));

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
	struct io_target t;
	struct afs_creds c;
	mode_t as_caller;
	int rc = io_target(req, ino, fi, &t);

	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
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
		afs_fcache_changed(afs_inode_fc(t.inode), t.fd,
				   (uint64_t)offset, (uint64_t)length, false);
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
		afs_fcache_changed(afs_inode_fc(out.inode), out.fd,
				   (uint64_t)dst, (uint64_t)n, false);
	io_target_put(afs_req_fs(req), &in);
	io_target_put(afs_req_fs(req), &out);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, (size_t)n);
}
