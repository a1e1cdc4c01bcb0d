/* ops_entry.c - names and attributes: lookup, forget, getattr, setattr,
 * readlink, mknod, mkdir, symlink, link, unlink, rmdir, rename, statfs,
 * access; and the init handshake.
 *
 * Everything acts on the backing with *at() calls relative to the O_PATH
 * fds of the inode table, never on path names from SOURCE, and returns the
 * backing's errno unchanged.  Calls that create or change something run
 * with the caller's credentials (creds.h).  Where a call has no *at() form
 * that takes an O_PATH fd (chmod, truncate, utimes, access), it goes
 * through /proc/self/fd/N, which names the inode itself.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs/data/data.h"
#include "fuse_internal.h"
#include "log.h"

void afs_procpath(char buf[AFS_PROCPATH_LEN], int fd)
{
	snprintf(buf, AFS_PROCPATH_LEN, "/proc/self/fd/%d", fd);
}

struct afs_inode *afs_req_inode(fuse_req_t req, fuse_ino_t ino)
{
	struct afs_inode *i = afs_itable_get(&afs_req_fs(req)->itable, ino);

	if (!i)
		fuse_reply_err(req, ESTALE);
	return i;
}

int afs_req_creds_enter(fuse_req_t req, struct afs_creds *c, bool umask)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct afs_fs *fs = afs_req_fs(req);
	gid_t groups[AFS_CREDS_MAX_GROUPS], *list = groups;
	int n = 0, rc;

	if (fs->as_root && ctx->uid != 0) {
		n = fuse_req_getgroups(req, AFS_CREDS_MAX_GROUPS, groups);
		if (n > AFS_CREDS_MAX_GROUPS) {
			list = malloc(n * sizeof(*list));
			if (!list)
				return -ENOMEM;
			n = fuse_req_getgroups(req, n, list);
		}
		/* The caller may be gone, or /proc unreadable: then only its
		 * primary group counts, which errs on the side of refusal. */
		if (n < 0)
			n = 0;
	}
	rc = afs_creds_enter(c, ctx->uid, ctx->gid, list, n, umask, ctx->umask);
	if (list != groups)
		free(list);
	return rc;
}

int afs_stat(const struct afs_inode *inode, struct stat *st)
{
	if (fstatat(inode->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return -errno;
	st->st_ino = afs_shown_ino(inode);
	return 0;
}

/* opens=none: no open will tell the kernel that its cached pages of @i
 * are stale (ops_io.c finish_open() does, otherwise); a LOOKUP or GETATTR
 * that finds the count of changes behind the mount moved does, here.
 * Attributes and pages go; the kernel's lock on neither is held. */
static void tell_changes(struct afs_fs *fs, struct afs_inode *i,
			 struct afs_fcache *fc)
{
	uint64_t changes;

	if (fs->opts->opens != AFS_OPENS_NONE || !fs->se || !fc)
		return;
	changes = afs_fcache_changes(fc);
	if (__atomic_exchange_n(&i->changes_told, changes, __ATOMIC_ACQ_REL) !=
	    changes)
		fuse_lowlevel_notify_inval_inode(fs->se, i->nodeid, 0, 0);
}

static void fill_entry(struct afs_fs *fs, struct afs_inode *i,
		       const struct stat *st, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = i->nodeid;
	e->generation = i->generation;
	e->attr = *st;
	e->attr.st_ino = afs_shown_ino(i);
	e->attr_timeout = fs->attr_timeout;
	e->entry_timeout = fs->entry_timeout;
	/* The file's identity starts with what the kernel is told first;
	 * later entry replies compare, as getattr does. */
	if (S_ISREG(i->type)) {
		struct afs_fcache *fc = afs_inode_fc(i);

		if (fc) {
			afs_fcache_revalidate(fc, st);
			tell_changes(fs, i, fc);
		} else {
			afs_inode_fcache(fs, i, st);
		}
	}
}

struct afs_fcache *afs_inode_fcache(struct afs_fs *fs, struct afs_inode *inode,
				    const struct stat *st)
{
	struct afs_fcache *fc = afs_inode_fc(inode), *expected = NULL;
	struct afs_file_key key;
	struct stat now;

	if (fc || !S_ISREG(inode->type))
		return fc;
	if (!st) {
		if (fstatat(inode->fd, "", &now, AT_EMPTY_PATH))
			return NULL;
		st = &now;
	}
	key.dev = st->st_dev;
	key.ino = inode->ino;
	key.gen = inode->generation;
	if (afs_fcache_lookup(fs->ahead, &key, st, &fc))
		return NULL;
	if (!__atomic_compare_exchange_n(&inode->fc, &expected, fc, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Another request attached first: the same file, by key. */
		afs_fcache_put(fc);
		fc = expected;
	}
	return fc;
}

int afs_entry_from_fd(struct afs_fs *fs, int fd, struct fuse_entry_param *e)
{
	struct afs_inode *i;
	struct stat st;
	uint32_t fsidx;
	int rc;

	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = afs_itable_fsidx(&fs->itable, st.st_dev, fd, &fsidx);
	if (rc == -EOVERFLOW) {
		fsidx = UINT32_MAX; /* synthetic node id */
	} else if (rc) {
		close(fd);
		return rc;
	}
	i = afs_itable_find(&fs->itable, fsidx, st.st_ino, true);
	if (i) {
		close(fd);
	} else {
		i = afs_itable_insert(&fs->itable, fsidx, st.st_ino, fd,
				      st.st_mode, afs_fhandle_generation(fd),
				      true);
		if (!i)
			return -ENOMEM;
	}
	fill_entry(fs, i, &st, e);
	afs_itable_put(&fs->itable, i);
	return 0;
}

int afs_lookup_entry(struct afs_fs *fs, fuse_req_t caller,
		     struct afs_inode *dir, const char *name,
		     struct fuse_entry_param *e)
{
	struct afs_creds c;
	struct stat st;
	int fd, rc;

	if (!strcmp(name, ".") ||
	    (!strcmp(name, "..") && dir->nodeid == AFS_ROOT_NODEID)) {
		rc = afs_stat(dir, &st);
		if (rc)
			return rc;
		afs_itable_lookup_ref(&fs->itable, dir);
		fill_entry(fs, dir, &st, e);
		return 0;
	}
	/* Without default_permissions nobody else checks that the caller
	 * may search @dir: the backing does, for the caller. */
	if (caller && !fs->default_permissions) {
		rc = afs_req_creds_enter(caller, &c, false);
		if (rc)
			return rc;
		fd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? -errno : 0;
		afs_creds_leave(&c);
	} else {
		fd = openat(dir->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? -errno : 0;
	}
	if (rc)
		return rc;
	return afs_entry_from_fd(fs, fd, e);
}

/* An entry reply the kernel refuses (the request was interrupted) counts no
 * lookup: take back the one counted for it. */
static void reply_entry(fuse_req_t req, struct fuse_entry_param *e)
{
	if (fuse_reply_entry(req, e) == -ENOENT && e->ino)
		afs_itable_forget(&afs_req_fs(req)->itable, e->ino, 1);
}

/*
 * The longest read reply libfuse can splice.  It splices through a per-thread
 * pipe that it grows to the reply plus three pages (F_SETPIPE_SZ, rounded up
 * to a power of two pages); one it cannot grow far enough makes it copy the
 * data into a buffer it allocates for that reply.  Past the system's
 * pipe-max-size only a daemon with CAP_SYS_RESOURCE may grow a pipe, so the
 * largest size a pipe takes here, less four pages, bounds what is spliced.
 * Return: that length, or 0 when no pipe can hold the smallest reply.
 */
static size_t splice_reply_max(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t sz = 2 * (size_t)AFS_DATA_MAX_REQUEST;
	size_t max = 0;
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return 0;
	for (; sz >= 8 * page; sz /= 2) {
		if (fcntl(p[0], F_SETPIPE_SZ, (int)sz) >= 0) {
			max = sz - 4 * page;
			break;
		}
	}
	close(p[0]);
	close(p[1]);
	return max > AFS_DATA_MAX_REQUEST ? AFS_DATA_MAX_REQUEST : max;
}

void afs_op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct afs_fs *fs = userdata;
	unsigned capable = conn->capable;

	/* Coherency first: no parallel dirops, no writeback cache (but as
	 * -o write_mode=writeback asks, below); not the first kill-priv
	 * protocol (libfuse 3.14 never passes FUSE_CAP_HANDLE_KILLPRIV on to
	 * the kernel), the second one where the kernel offers it (devio.c;
	 * without it the kernel sends the SETATTR that clears suid/sgid, see
	 * kill_bits()); no splice of requests or moved pages (replies come
	 * from the cache's pages), but spliced replies for reads the
	 * backing's page cache holds (ops_io.c read_reply_fd()).
	 * Async reads stay on:
	 * the kernel's readahead then runs in the background instead of
	 * one request at a time per reader, and the cache orders nothing by
	 * arrival. */
	conn->want &= ~(FUSE_CAP_PARALLEL_DIROPS | FUSE_CAP_WRITEBACK_CACHE |
			FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_SPLICE_READ |
			FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	if (capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if ((capable & FUSE_CAP_SPLICE_WRITE) && conn->proto_minor >= 14) {
		size_t max = splice_reply_max();

		if (max)
			conn->want |= FUSE_CAP_SPLICE_WRITE;
		/* libfuse's own threshold: two pages */
		__atomic_store_n(&fs->splice_min,
				 2 * (size_t)sysconf(_SC_PAGESIZE),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&fs->splice_max, max, __ATOMIC_RELEASE);
	}
	/* Writeback: the kernel keeps dirty pages and its own size and
	 * times, and writes whole pages later (docs/tuning.md). */
	if (afs_ahead_config(fs->ahead)->write_mode == AFS_WRITE_BACK) {
		if (capable & FUSE_CAP_WRITEBACK_CACHE)
			conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		else
			afs_log(LOG_WARNING, "the kernel offers no writeback "
					     "cache: writes go through");
	}
	/* Not AUTO_INVAL_DATA: with it the kernel drops a file's whole page
	 * cache whenever the mtime it gets differs from its own, which every
	 * write through the mount causes (the kernel stamps its own mtime),
	 * so a 4 KiB write made the next read fetch the whole file again.
	 * Changes behind the mount reach the kernel's cache at open
	 * (close-to-open: keep_cache off, attributes invalidated). */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	/* Room for the kernel's background (readahead) requests: past the
	 * congestion threshold it silently skips async readahead. */
	conn->max_background = AFS_MAX_BACKGROUND;
	conn->congestion_threshold = AFS_MAX_BACKGROUND * 3 / 4;
	conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	if (capable & FUSE_CAP_DONT_MASK)
		conn->want |= FUSE_CAP_DONT_MASK;
	if (capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* POSIX ACLs make the kernel check permissions itself (it turns
	 * default_permissions on), so only where that is wanted. */
	if ((capable & FUSE_CAP_POSIX_ACL) && fs->default_permissions)
		conn->want |= FUSE_CAP_POSIX_ACL;
	if (conn->max_write < AFS_DATA_MAX_REQUEST)
		conn->max_write = AFS_DATA_MAX_REQUEST;
	/* Zero-message opens: an O_TRUNC open must reach us as a SETATTR,
	 * since no OPEN will (with atomic_o_trunc the kernel would take the
	 * OPEN's truncation as done, and the file would keep its bytes). */
	if (fs->opts->opens == AFS_OPENS_NONE)
		conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	__atomic_store_n(&fs->writeback,
			 (conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0,
			 __ATOMIC_RELEASE);
	/* FUSE passthrough (passthrough.h): asked for in the INIT reply by
	 * devio.c where the kernel offers it, never beside the writeback
	 * cache, and of no use without OPEN replies. */
	afs_pt_want(&fs->pt, conn->want & FUSE_CAP_WRITEBACK_CACHE,
		    fs->opts->opens == AFS_OPENS_NONE);
	/* Write-only opens around the kernel's page cache (ops_io.c
	 * finish_open()): only on a kernel seen to keep other opens' cached
	 * pages of a directly written range coherent -- a page a reader
	 * cached again while the WRITE was in flight is gone once it returns
	 * (Linux 6.18, protocol 7.45; wronly_io.sh checks it with every
	 * backing write held 20 ms).  Earlier kernels drop the range only
	 * before they send the WRITE, or not at all.  Not with the writeback
	 * cache, which is there to gather writes. */
	if (fs->opts->wronly_io == AFS_WRONLY_DIRECT &&
	    !(conn->want & FUSE_CAP_WRITEBACK_CACHE)) {
		if (conn->proto_minor >= AFS_WRONLY_DIRECT_MINOR)
			__atomic_store_n(&fs->wronly_direct, true,
					 __ATOMIC_RELEASE);
		else
			afs_log(LOG_INFO,
				"protocol 7.%u: write-only opens use the "
				"kernel's page cache (wronly_io=direct needs "
				"7.%u)",
				conn->proto_minor, AFS_WRONLY_DIRECT_MINOR);
	}
	afs_log(LOG_INFO,
		"serving %s on %s (protocol 7.%u, max_write %u, spliced "
		"replies up to %zu KiB%s%s)",
		fs->opts->source_real, fs->opts->mountpoint_real,
		conn->proto_minor, conn->max_write,
		conn->want & FUSE_CAP_SPLICE_WRITE ? fs->splice_max >> 10 : 0,
		conn->want & FUSE_CAP_POSIX_ACL ? ", posix_acl" : "",
		conn->want & FUSE_CAP_WRITEBACK_CACHE ? ", writeback" : "");
}

void afs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct fuse_entry_param e;
	struct afs_inode *dir;
	int rc;

	afs_tune_bdi_once(fs);
	/* "." and ".." come from NFS export on node ids the kernel may have
	 * forgotten: reopen those from the id. */
	rc = afs_itable_reopen(&fs->itable, parent, &dir);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	rc = afs_lookup_entry(fs, req, dir, name, &e);
	afs_itable_put(&fs->itable, dir);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry(req, &e);
}

void afs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct afs_fs *fs = afs_req_fs(req);

	if (afs_itable_forget(&fs->itable, ino, nlookup))
		afs_log(LOG_WARNING,
			"forget of %llu lookups of unknown node "
			"%#llx",
			(unsigned long long)nlookup, (unsigned long long)ino);
	fuse_reply_none(req);
}

void afs_op_forget_multi(fuse_req_t req, size_t count,
			 struct fuse_forget_data *forgets)
{
	struct afs_fs *fs = afs_req_fs(req);

	for (size_t n = 0; n < count; n++)
		if (afs_itable_forget(&fs->itable, forgets[n].ino,
				      forgets[n].nlookup))
			afs_log(LOG_WARNING, "forget of unknown node %#llx",
				(unsigned long long)forgets[n].ino);
	fuse_reply_none(req);
}

void afs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);

	afs_tune_bdi_once(fs);
	struct stat st;
	int rc;

	if (!i)
		return;
	rc = afs_stat(i, &st);
	/* Close-to-open plus: a change behind the mount seen here drops
	 * aheadfs's pages (what direct-mode reads and the kernel's next misses
	 * get); the kernel's own pages go at the next open. */
	if (!rc && S_ISREG(i->type)) {
		struct afs_fcache *fc = afs_inode_fc(i);

		if (fc) {
			afs_fcache_revalidate(fc, &st);
			tell_changes(fs, i, fc);
		}
	}
	afs_itable_put(&fs->itable, i);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

/* @io_fd: the inode's own descriptor for an ftruncate() through an open
 * file that has no handle (opens=none), or -1. */
static int do_setattr(struct afs_inode *i, struct stat *attr, int valid,
		      struct fuse_file_info *fi, int io_fd)
{
	char proc[AFS_PROCPATH_LEN];
	int fd = io_fd;

	/* Only truncation carries an open file, and only regular files have
	 * a struct afs_file in fh (a directory's is a struct afs_dir). */
	if (fi && fi->fh && S_ISREG(i->type))
		fd = afs_fi_fd(fi);
	afs_procpath(proc, i->fd);
	if (valid & FUSE_SET_ATTR_MODE) {
		if (fd >= 0 ? fchmod(fd, attr->st_mode)
			    : chmod(proc, attr->st_mode))
			return -errno;
	}
	if (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid =
			valid & FUSE_SET_ATTR_UID ? attr->st_uid : (uid_t)-1;
		gid_t gid =
			valid & FUSE_SET_ATTR_GID ? attr->st_gid : (gid_t)-1;

		if (fchownat(i->fd, "", uid, gid,
			     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			return -errno;
	}
	if (valid & FUSE_SET_ATTR_SIZE) {
		if (fd >= 0 ? ftruncate(fd, attr->st_size)
			    : truncate(proc, attr->st_size))
			return -errno;
		/* Pages past the new end (and the one holding it) go; an
		 * O_PATH fd is enough for the fstat of the new identity. */
		afs_fcache_changed(afs_inode_fc(i), fd >= 0 ? fd : i->fd,
				   (uint64_t)attr->st_size, 0, true);
	}
	if (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		struct timespec tv[2] = {{.tv_nsec = UTIME_OMIT},
					 {.tv_nsec = UTIME_OMIT}};

		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		if (fd >= 0 ? futimens(fd, tv)
			    : utimensat(AT_FDCWD, proc, tv, 0))
			return -errno;
	}
	return 0;
}

/*
 * Kill privileges.  On a write, truncate or chown of a regular file by a
 * caller without CAP_FSETID the kernel clears setuid (and setgid with group
 * execute) itself, with a SETATTR of the mode less those bits, alone
 * (before a WRITE) or beside the size or the owner.  Performed as the
 * caller, that chmod fails with EPERM for anyone but the owner, where the
 * backing's own write, truncate or chown succeeds and clears the bits.
 * kill_bits() recognises the shape: a mode that is the file's current
 * mode less some of S_ISUID and S_ISGID, nothing else changed; those bits
 * are cleared after the rest of the request succeeded (the backing may
 * have cleared them already: a truncate or chown as the caller does) and
 * never set again.  Where the caller may not chmod, the daemon clears
 * them with its own rights when the request carries the truncate or chown
 * that earned the clearing, or, for the mode alone (a write's), when the
 * caller may write the file: such a caller could clear the bits on the
 * backing with any write, so it gains nothing.  (A chmod u-s by such a
 * caller with no_default_permissions looks the same and succeeds; with
 * default_permissions the kernel refuses it first.)  security.capability
 * the kernel removes with a REMOVEXATTR, the backing on a write.
 */
static mode_t kill_bits(const struct afs_inode *i, const struct stat *attr,
			int valid)
{
	struct stat st;
	mode_t kill;

	if (!(valid & FUSE_SET_ATTR_MODE) || !S_ISREG(i->type) ||
	    fstatat(i->fd, "", &st, AT_EMPTY_PATH))
		return 0;
	kill = st.st_mode & (S_ISUID | S_ISGID) & ~attr->st_mode;
	if (!kill || (attr->st_mode & 07777) != (st.st_mode & 07777 & ~kill))
		return 0;
	return kill;
}

/* As the caller: clear @kill.  Return 0 (done), 1 (the daemon must clear
 * them with its rights, into *@mode) or -errno. */
static int kill_as_caller(struct afs_inode *i, mode_t kill, int valid,
			  mode_t *mode)
{
	char proc[AFS_PROCPATH_LEN];
	struct stat st;

	if (fstatat(i->fd, "", &st, AT_EMPTY_PATH))
		return -errno;
	if (!(st.st_mode & kill))
		return 0;
	*mode = st.st_mode & 07777 & ~kill;
	afs_procpath(proc, i->fd);
	if (!chmod(proc, *mode))
		return 0;
	if (errno != EPERM)
		return -errno;
	if (valid &
	    (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		return 1;
	return faccessat(AT_FDCWD, proc, W_OK, AT_EACCESS) ? -EPERM : 1;
}

void afs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		    int valid, struct fuse_file_info *fi)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	struct afs_creds c;
	struct stat st;
	mode_t kill, mode = 0;
	int rc, times = 0, io_fd = -1;

	if (!i)
		return;
	kill = kill_bits(i, attr, valid);
	if (kill)
		valid &= ~FUSE_SET_ATTR_MODE;
	/* With the writeback cache the kernel stamps a file's times itself
	 * and sends them on with SETATTR, in the context of whoever closes or
	 * syncs the file -- a caller who may write it but, not owning it, may
	 * not set its times explicitly.  The kernel has checked every SETATTR
	 * already (default_permissions), so the times are set as the daemon;
	 * the rest stays the caller's. */
	if (__atomic_load_n(&fs->writeback, __ATOMIC_ACQUIRE) &&
	    fs->default_permissions)
		times = valid &
			(FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			 FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW);
	/* ftruncate() through a file opened with no OPEN (opens=none): the
	 * kernel checked the descriptor's write access when it was opened, as
	 * it does for every open under opens=none -- a descriptor made with
	 * O_CREAT and mode 0 may be truncated.  The path, opened again as the
	 * caller, would not be: truncate through the inode's own read-write
	 * descriptor, still as the caller (who clears setuid and setgid as the
	 * backing would). */
	if (fi && !fi->fh && S_ISREG(i->type) && (valid & FUSE_SET_ATTR_SIZE)) {
		io_fd = afs_inode_io_fd(fs, i);
		if (io_fd >= 0 &&
		    __atomic_load_n(&i->io_wr_err, __ATOMIC_ACQUIRE))
			io_fd = -1; /* read-only: the path, as before */
	}
	rc = afs_req_creds_enter(req, &c, false);
	if (!rc) {
		rc = do_setattr(i, attr, valid & ~times, fi, io_fd);
		if (!rc && kill)
			rc = kill_as_caller(i, kill, valid, &mode);
		afs_creds_leave(&c);
	}
	if (rc == 1) {
		char proc[AFS_PROCPATH_LEN];

		afs_procpath(proc, i->fd);
		rc = chmod(proc, mode) ? -errno : 0;
	}
	if (!rc && times)
		rc = do_setattr(i, attr, times, fi, -1);
	if (!rc)
		rc = afs_stat(i, &st);
	/* Our own change of mode, owner or times moves ctime: take the new
	 * identity so it is not taken for a change behind the mount. */
	if (!rc && S_ISREG(i->type))
		afs_fcache_touched(afs_inode_fc(i), i->fd);
	afs_itable_put(&fs->itable, i);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

void afs_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	char buf[PATH_MAX + 1];
	ssize_t n;

	if (!i)
		return;
	n = readlinkat(i->fd, "", buf, sizeof(buf));
	if (n < 0)
		n = -errno;
	afs_itable_put(&fs->itable, i);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
	} else if (n == sizeof(buf)) {
		fuse_reply_err(req, ENAMETOOLONG);
	} else {
		buf[n] = '\0';
		fuse_reply_readlink(req, buf);
	}
}

enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK };

/* mknod, mkdir, symlink: create as the caller, then look the name up. */
static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
		       enum make_kind kind, mode_t mode, dev_t rdev,
		       const char *link)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *dir = afs_req_inode(req, parent);
	struct fuse_entry_param e;
	struct afs_creds c;
	int rc, res;

	if (!dir)
		return;
	rc = afs_req_creds_enter(req, &c, kind != MAKE_SYMLINK);
	if (rc)
		goto out_put;
	switch (kind) {
	case MAKE_NODE:
		res = mknodat(dir->fd, name, mode, rdev);
		break;
	case MAKE_DIR:
		res = mkdirat(dir->fd, name, mode);
		break;
	default:
		res = symlinkat(link, dir->fd, name);
		break;
	}
	rc = res ? -errno : 0;
	afs_creds_leave(&c);
	if (!rc)
		rc = afs_lookup_entry(fs, NULL, dir, name, &e);
out_put:
	afs_itable_put(&fs->itable, dir);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry(req, &e);
}

void afs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, dev_t rdev)
{
	make_entry(req, parent, name, MAKE_NODE, mode, rdev, NULL);
}

void afs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode)
{
	make_entry(req, parent, name, MAKE_DIR, mode, 0, NULL);
}

void afs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		    const char *name)
{
	make_entry(req, parent, name, MAKE_SYMLINK, 0, 0, link);
}

void afs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		 const char *newname)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_itable_get(&fs->itable, ino);
	struct afs_inode *dir = afs_itable_get(&fs->itable, newparent);
	char proc[AFS_PROCPATH_LEN];
	struct fuse_entry_param e;
	struct afs_creds c;
	struct stat st;
	int rc;

	if (!i || !dir) {
		rc = -ESTALE;
		goto out_put;
	}
	rc = afs_req_creds_enter(req, &c, false);
	if (rc)
		goto out_put;
	/* linkat(fd, "", AT_EMPTY_PATH) wants CAP_DAC_READ_SEARCH, which
	 * the caller's fsuid does not carry; the /proc link names the inode
	 * just as well. */
	afs_procpath(proc, i->fd);
	if (linkat(AT_FDCWD, proc, dir->fd, newname, AT_SYMLINK_FOLLOW))
		rc = -errno;
	afs_creds_leave(&c);
	if (!rc)
		rc = afs_stat(i, &st);
	if (!rc) {
		afs_itable_lookup_ref(&fs->itable, i);
		fill_entry(fs, i, &st, &e);
	}
out_put:
	if (i)
		afs_itable_put(&fs->itable, i);
	if (dir)
		afs_itable_put(&fs->itable, dir);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		reply_entry(req, &e);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			 int flags)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *dir = afs_req_inode(req, parent);
	struct afs_creds c;
	int rc;

	if (!dir)
		return;
	rc = afs_req_creds_enter(req, &c, false);
	if (!rc) {
		if (unlinkat(dir->fd, name, flags))
			rc = -errno;
		afs_creds_leave(&c);
	}
	afs_itable_put(&fs->itable, dir);
	fuse_reply_err(req, -rc);
}

void afs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

void afs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

void afs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname,
		   unsigned int flags)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *from = afs_itable_get(&fs->itable, parent);
	struct afs_inode *to = afs_itable_get(&fs->itable, newparent);
	struct afs_creds c;
	int rc;

	if (!from || !to) {
		rc = -ESTALE;
		goto out_put;
	}
	rc = afs_req_creds_enter(req, &c, false);
	if (rc)
		goto out_put;
	if (renameat2(from->fd, name, to->fd, newname, flags))
		rc = -errno;
	afs_creds_leave(&c);
out_put:
	if (from)
		afs_itable_put(&fs->itable, from);
	if (to)
		afs_itable_put(&fs->itable, to);
	fuse_reply_err(req, -rc);
}

void afs_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	struct statvfs sv;
	int rc = 0;

	if (!i)
		return;
	if (fstatvfs(i->fd, &sv))
		rc = -errno;
	afs_itable_put(&fs->itable, i);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_statfs(req, &sv);
}

void afs_op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct afs_fs *fs = afs_req_fs(req);
	struct afs_inode *i = afs_req_inode(req, ino);
	char proc[AFS_PROCPATH_LEN];
	struct afs_creds c;
	int rc;

	if (!i)
		return;
	rc = afs_req_creds_enter(req, &c, false);
	if (!rc) {
		/* AT_EACCESS: check with the fs ids just switched to, not
		 * the daemon's real ids. */
		afs_procpath(proc, i->fd);
		if (faccessat(AT_FDCWD, proc, mask, AT_EACCESS))
			rc = -errno;
		afs_creds_leave(&c);
	}
	afs_itable_put(&fs->itable, i);
	fuse_reply_err(req, -rc);
}
