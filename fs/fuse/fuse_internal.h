/* fuse_internal.h - state shared by the FUSE adapter's sources, private to
 * fs/fuse/.
 *
 * struct afs_fs is the session's user data: configuration fixed at start
 * and the inode table.  See daemon.h for the threading model.
 *
 * Locking (who guards what of the structs below):
 *   fs->open_lock (a leaf)      fs->open_list and every struct afs_open's
 *                               links: afs_open_add(), afs_open_release()
 *   __atomic, no lock           fs->writeback, fs->wronly_direct,
 *                               fs->splice_min, fs->splice_max (stored by
 *                               afs_op_init()), fs->bdi_tuned
 *   set before serving, then    fs->data, fs->warm, fs->se, fs->opts,
 *   read-only                   fs->as_root, fs->default_permissions, the
 *                               timeouts; fs->notifier (NULL again after)
 *   its own locks               fs->itable (inode.h), fs->pt
 *                               (passthrough.h)
 *   set before the OPEN reply,  a struct afs_file's fields, read by every
 *   then read-only              request on the open at once; its handle's
 *                               readahead state is the data path's
 *                               (fs/data/data.h)
 *   one request at a time       a struct afs_dir (the kernel serialises
 *                               readdir per open directory)
 *   set once (compare-and-swap) a struct afs_inode's io_fd
 *   by whoever comes first,     (afs_inode_io_fd()), ro_fd (ops_open.c)
 *   then acquire loads          and fc (afs_inode_fcache()), by any
 *                               request holding a reference on it; the
 *                               loser closes or puts its own
 * Nothing here is read under RCU.
 */
#ifndef AFS_FUSE_INTERNAL_H
#define AFS_FUSE_INTERNAL_H

#include <dirent.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "fs/data/data.h"
#include "fs/watch/watch.h"
#include "bdi.h"
#include "creds.h"
#include "inode.h"
#include "opts.h"
#include "passthrough.h"

#define AFS_MAX_BACKGROUND 64 /* the kernel's background requests */
/* The oldest protocol (kernel) write-only opens go direct_io on
 * (-o wronly_io=direct, ops_init.c afs_op_init()). */
#define AFS_WRONLY_DIRECT_MINOR 45

struct afs_data;

/* Every open file and directory is on the session's list, so that what the
 * kernel never released (the daemon stopped while programs held files open)
 * is freed at exit. */
struct afs_open {
	struct afs_open *prev, *next; /* afs_fs.open_lock */
	void (*free)(struct afs_open *h); /* close and free the handle */
};

struct afs_fs {
	struct afs_itable itable;
	struct afs_data *data; /* the data path (fs/data/data.h) */
	struct afs_warm *warm; /* warm restart (fs/warm/warm.h) or NULL */
	struct afs_watch *watch; /* the backing watcher or NULL; set before
				  * serving */
	struct fuse_session *se; /* for notifications */
	/* Page invalidations a serving thread may not send (notify.h); set
	 * before the watcher starts, NULL before and after serving. */
	struct afs_notifier *notifier;
	pthread_mutex_t open_lock; /* a leaf lock */
	struct afs_open open_list; /* list head */
	bool bdi_tuned; /* __atomic: afs_tune_bdi_once() ran */
	bool writeback; /* __atomic: the kernel's writeback cache is on */
	/* __atomic: write-only opens get FOPEN_DIRECT_IO (-o wronly_io=,
	 * ops_open.c finish_open()) */
	bool wronly_direct;
	/* __atomic, set at init: reads the backing's page cache holds whole
	 * are spliced into the reply from splice_min (libfuse copies shorter
	 * ones into a buffer it allocates) up to splice_max (0: never;
	 * ops_io.c read_reply_fd()) */
	size_t splice_min, splice_max;
	const struct afs_opts *opts;
	struct afs_pt pt; /* the kernel's FUSE passthrough (passthrough.h) */
	/* transport=uring's rings and workers (uring.h); NULL: dev */
	struct afs_uring *uring;
	bool as_root; /* euid 0: switch to the caller's ids */
	bool default_permissions; /* the kernel checks permissions */
	double attr_timeout, entry_timeout;
};

/* Open regular file: fi->fh points to this.  The inode reference keeps the
 * table entry (and the file's cache state hanging off it) alive while the
 * file is open. */
struct afs_file {
	struct afs_open open; /* first: the list entry */
	struct afs_itable *itable;
	struct afs_pt *pt; /* the mount's passthrough state */
	struct afs_inode *inode; /* a reference, dropped at release */
	struct afs_handle h; /* backing fd, readahead state (data.h) */
	enum afs_pt_io io; /* how the kernel does its I/O (passthrough.h) */
	bool writable; /* opened for writing */
	int32_t backing_id; /* its reply's, > 0 for passthrough */
};

static inline struct afs_file *afs_file_of(const struct fuse_file_info *fi)
{
	return (struct afs_file *)(uintptr_t)fi->fh;
}

/* The backing fd of an open regular file. */
static inline int afs_fi_fd(const struct fuse_file_info *fi)
{
	return afs_file_of(fi)->h.fd;
}

/* Open directory: fi->fh points to this. */
struct afs_dir {
	struct afs_open open; /* first: the list entry */
	DIR *dp;
	struct dirent *entry; /* read but not yet replied */
	off_t offset; /* telldir cookie of the next entry to reply */
};

static inline struct afs_fs *afs_req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/**
 * afs_req_inode() - The table entry for @ino, with a reference, or NULL after
 * replying ESTALE to @req (the kernel used a node id it does not hold).
 *
 * Context: Serving thread; takes the table lock.
 */
struct afs_inode *afs_req_inode(fuse_req_t req, fuse_ino_t ino);

/**
 * afs_inode_io_fd() - The inode's own descriptor, for requests that come
 * with no handle (opens=none), opened on first use: as the daemon,
 * read-write, else read-only (a read-only backing, a running executable, a
 * non-root daemon without write access).
 * Context: Serving thread, with the daemon's own credentials (not between
 * afs_req_creds_enter() and afs_creds_leave()).
 * Return: the descriptor (kept by @i), or -errno.
 */
int afs_inode_io_fd(struct afs_fs *fs, struct afs_inode *i);

/**
 * afs_open_add() - Put @h on @fs's list of open handles.
 *
 * Context: Takes fs->open_lock.
 */
void afs_open_add(struct afs_fs *fs, struct afs_open *h);

/**
 * afs_open_release() - Take @h off the list and free it (release,
 * releasedir, or an open whose reply the kernel refused).
 *
 * Context: Takes fs->open_lock; closes descriptors.
 */
void afs_open_release(struct afs_fs *fs, struct afs_open *h);

/**
 * afs_open_release_all() - Free every handle still open.
 *
 * Context: At exit, no request being served.
 */
void afs_open_release_all(struct afs_fs *fs);

/* "/proc/self/fd/N": reopen or act on an O_PATH fd's inode itself. */
#define AFS_PROCPATH_LEN 32
void afs_procpath(char buf[AFS_PROCPATH_LEN], int fd);

/**
 * afs_req_creds_enter() - afs_creds_enter() with the caller of @req.
 * @umask: also take the caller's umask (creating calls).
 *
 * Context: Serving thread; pair with afs_creds_leave().
 * Return: 0 or -errno.
 */
int afs_req_creds_enter(fuse_req_t req, struct afs_creds *c, bool umask);

/**
 * afs_stat() - stat of @inode as the kernel sees it (st_ino shown).
 *
 * Context: One fstatat().
 * Return: 0 or -errno.
 */
int afs_stat(const struct afs_inode *inode, struct stat *st);

/**
 * afs_lookup_entry() - Look up @name in @dir and fill @e, counting one
 * kernel lookup on the result.  "." is @dir itself; ".." at the root is the
 * root (the path never leaves SOURCE).  Symlinks are not followed.
 * @caller: The request to look up for; with no_default_permissions the
 *          name is opened with its credentials (search permission on @dir
 *          is then checked by the backing).  NULL: as the daemon.
 *
 * Context: Serving thread; backing syscalls; takes the table lock.
 * Return: 0 or the backing's -errno.
 */
int afs_lookup_entry(struct afs_fs *fs, fuse_req_t caller,
		     struct afs_inode *dir, const char *name,
		     struct fuse_entry_param *e);

/**
 * afs_entry_from_fd() - Enter the inode of O_PATH @fd in the table (the
 * table takes @fd) and fill @e, counting one kernel lookup.
 *
 * Context: Serving thread; backing syscalls; takes the table lock.
 * Return: 0 or -errno (@fd is closed then too).
 */
int afs_entry_from_fd(struct afs_fs *fs, int fd, struct fuse_entry_param *e);

/**
 * afs_fill_entry() - Fill @e for inode @i with attributes @st (as the
 * backing has them: st_ino is made the shown one).  A regular file's
 * identity is taken from @st by its first entry reply and compared with it
 * by later ones (afs_tell_changes()).
 *
 * Context: Serving thread; the caller holds a reference on @i and counted
 * the entry's kernel lookup; may take the data path's table lock.
 */
void afs_fill_entry(struct afs_fs *fs, struct afs_inode *i,
		    const struct stat *st, struct fuse_entry_param *e);

/**
 * afs_reply_entry() - Reply @e to @req; a reply the kernel refuses (the
 * request was interrupted) counts no lookup: the one counted for it is
 * taken back.
 *
 * Context: Serving thread; takes the table lock on refusal.
 */
void afs_reply_entry(fuse_req_t req, struct fuse_entry_param *e);

/**
 * afs_tell_changes() - Under opens=none, tell the kernel that its
 * attributes and pages of @i are stale when the count of changes behind
 * the mount of @fc (@i's) moved since it was last told (LOOKUP and
 * GETATTR; otherwise an open does, ops_open.c finish_open()).
 *
 * Context: Serving thread; one atomic exchange of i->changes_told; sends
 * a notification, with no lock held.
 */
void afs_tell_changes(struct afs_fs *fs, struct afs_inode *i,
		      struct afs_fcache *fc);

/* Whether the backing may clear setuid/setgid on what @req does as its
 * caller (a write, truncate or chown by anyone but root, under a root
 * daemon that switched to the caller's ids): then the kernel's cached mode
 * may be left stale, since with handle_killpriv_v2 (devio.c) no SETATTR of
 * the kernel's own carries the new mode back. */
static inline bool afs_kill_privs_possible(fuse_req_t req)
{
	return afs_req_fs(req)->as_root && fuse_req_ctx(req)->uid != 0;
}

/**
 * afs_inode_fcache() - The data path state of regular file @inode, created
 * by the first call with the identity @st (fstat of the backing, st_ino
 * as the backing has it; NULL: fstat'ed here).
 *
 * Context: Serving thread; takes the data path's table lock.
 * Return: The state (owned by @inode: no reference is passed), or NULL for
 * a file that is not regular or when no memory was left (such a file is
 * served around the cache).
 */
struct afs_fcache *afs_inode_fcache(struct afs_fs *fs, struct afs_inode *inode,
				    const struct stat *st);

/* Operations, by file. */
/* ops_init.c */
void afs_op_init(void *userdata, struct fuse_conn_info *conn);

/**
 * afs_devio_install() - Serve @se's /dev/fuse through devio.c's hooks,
 * which negotiate FUSE_HANDLE_KILLPRIV_V2 and FUSE passthrough where the
 * kernel offers them, and carry passthrough in open replies.
 * Context: After fuse_session_mount(), before the session loop.
 * Return: 0, or a negative errno.
 */
int afs_devio_install(struct fuse_session *se);
/* ops_entry.c */
void afs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void afs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void afs_op_forget_multi(fuse_req_t req, size_t count,
			 struct fuse_forget_data *forgets);
/* ops_attr.c */
void afs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void afs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		    int valid, struct fuse_file_info *fi);
void afs_op_statfs(fuse_req_t req, fuse_ino_t ino);
void afs_op_access(fuse_req_t req, fuse_ino_t ino, int mask);
/* ops_name.c */
void afs_op_readlink(fuse_req_t req, fuse_ino_t ino);
void afs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode, dev_t rdev);
void afs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		  mode_t mode);
void afs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		    const char *name);
void afs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		 const char *newname);
void afs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void afs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void afs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		   fuse_ino_t newparent, const char *newname,
		   unsigned int flags);
/* ops_dir.c */
void afs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void afs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void afs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi);
void afs_op_releasedir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi);
void afs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi);
/* ops_open.c */
void afs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void afs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		   mode_t mode, struct fuse_file_info *fi);
void afs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void afs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* ops_io.c */
void afs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 struct fuse_file_info *fi);
void afs_op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv,
		      off_t off, struct fuse_file_info *fi);
void afs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		  struct fuse_file_info *fi);
void afs_op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
		      off_t length, struct fuse_file_info *fi);
void afs_op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		  struct fuse_file_info *fi);
void afs_op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			    struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			    off_t off_out, struct fuse_file_info *fi_out,
			    size_t len, int flags);
/* ops_watch.c: the backing watcher's callbacks (ctx: the struct afs_fs) */
extern const struct afs_watch_ops afs_watch_adapter;
/* ops_xattr.c */
void afs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		     size_t size);
void afs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		     const char *value, size_t size, int flags);
void afs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void afs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif /* AFS_FUSE_INTERNAL_H */
