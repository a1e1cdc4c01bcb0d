/* ops_open.c - opening and closing regular files: open, create, flush,
 * release; and the inode's own descriptors that opens share.
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
 * 0 and work on the inode's own descriptor (afs_inode_io_fd(), opened once
 * as the daemon, read-write where it may, closed at FORGET; ops_io.c), with
 * the file's own readahead state.
 *
 * The kernel's FUSE passthrough (-o passthrough=, passthrough.h): the last
 * step of an open is its I/O mode (afs_pt_open()); the reply names it and
 * the backing id (afs_pt_reply_begin()); the open's release undoes its
 * mode (afs_pt_release()) before its descriptor is closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs/data/data.h"
#include "ra/ra.h"
#include "fuse_internal.h"

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

/* Whether a read-only open (@flags) is of a file advised random
 * (user.aheadfs.advice): under passthrough=resident it then goes around
 * aheadfs (passthrough.h, struct afs_pt_request).  Asked only under that
 * policy, the only one that reads the answer: an open per request pays
 * no lock for it elsewhere. */
static bool advised_random(const struct afs_pt *pt, struct afs_fcache *fc,
			   int flags)
{
	struct ra_file *rf;

	if (pt->policy != AFS_PASSTHROUGH_RESIDENT ||
	    (flags & O_ACCMODE) != O_RDONLY)
		return false;
	rf = afs_fcache_ra_file(fc);
	return rf && ra_file_advice(rf) == RA_ADVICE_RANDOM;
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
 * cleared setuid/setgid (afs_kill_privs_possible()), the kernel's attributes.
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
		if (afs_data_options(fs->data)->read_mode == AFS_READ_DIRECT &&
		    (fi->flags & O_ACCMODE) == O_RDONLY) {
			/* Every read reaches the daemon.  Writable opens keep
			 * the kernel's cache: shared writable mappings need
			 * it. */
			fi->direct_io = 1;
			direct_io = true;
		}
		/* Write-only opens in write-through mode (-o wronly_io=,
		 * ops_init.c afs_op_init()): the kernel copies nothing into
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
					afs_kill_privs_possible(req),
			.size = (uint64_t)st.st_size,
			.random = advised_random(&fs->pt, fc, fi->flags),
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
	if ((stale || (truncated && afs_kill_privs_possible(req))) && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, inode->nodeid, -1, 0);
	return 0;
}

void afs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_fcache *trunc_fc = NULL;
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
	/* An O_TRUNC open truncates, and finish_open() records what it left:
	 * a change of the daemon's own meanwhile. */
	if (fi->flags & O_TRUNC)
		trunc_fc = afs_inode_fc(i);
	afs_fcache_own_begin(trunc_fc);
	if (share_ro(fs, i, fi->flags)) {
		fd = inode_ro_fd(i);
		shared = fd >= 0;
	}
	if (!shared)
		fd = open_inode(req, i, fi->flags);
	if (fd < 0) {
		afs_fcache_own_end(trunc_fc);
		afs_itable_put(&fs->itable, i);
		fuse_reply_err(req, -fd);
		return;
	}
	rc = finish_open(req, i, fd, shared, fi, false);
	afs_fcache_own_end(trunc_fc);
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
