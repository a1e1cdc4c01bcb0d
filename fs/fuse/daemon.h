/* daemon.h - the aheadfs daemon: a POSIX passthrough of SOURCE at MOUNTPOINT on
 * the libfuse 3.14 low-level API.
 *
 * The FUSE adapter (fs/fuse/): it turns requests into backing system calls
 * and data path calls (fs/data/data.h) and replies.
 *   opts.{c,h}    command line: parser, checks before mounting
 *   opts_table.{c,h} the option table, --help and every option's default
 *   daemon.c      afs_main(): session, mount, signals, logging, rlimit, the
 *                 multi-threaded loop; the fuse_lowlevel_ops table
 *   inode.{c,h}   inode table: node ids <-> backing inodes (O_PATH fds,
 *                 lookup counts, node ids that survive forget for NFS)
 *   creds.{c,h}   per-thread caller credentials (fsuid/fsgid/groups/umask)
 *   req.c         what every handler starts from: the request's inode,
 *                 the caller's credentials, /proc/self/fd/N names
 *   ops_init.c    init: the capabilities the mount asks the kernel for
 *   ops_entry.c   lookup, forget, the entry replies
 *   ops_attr.c    getattr, setattr (kill-privilege included), statfs,
 *                 access
 *   ops_name.c    readlink, mknod, mkdir, symlink, link, unlink, rmdir,
 *                 rename
 *   ops_dir.c     opendir, readdir(plus), releasedir, fsyncdir
 *   ops_open.c    open/create, flush, release: each open's handle and
 *                 I/O mode, the inode's shared descriptors
 *   ops_io.c      read, write, fsync, fallocate, lseek, copy_file_range:
 *                 all file data goes through here, into the data path
 *   ops_xattr.c   get/set/list/removexattr (user.aheadfs.*: fs/stats/)
 *   ops_watch.c   the backing watcher's callbacks (fs/watch/watch.h): a
 *                 file or name changed behind the mount -> the data path's
 *                 drop and the kernel's notifications, on the watcher's
 *                 thread (serves no request)
 *   passthrough.{c,h} the kernel's FUSE passthrough: each open's I/O mode
 *   devio.c       /dev/fuse through libfuse's I/O hooks (INIT flags,
 *                 open replies)
 *   notify.{c,h}  page invalidations sent from a thread of their own
 *   log.{c,h}     stderr in the foreground, syslog in the background
 *
 * Concurrency: requests are served by libfuse worker threads (several at
 * once, also on one inode and one open file); the watcher's thread runs
 * ops_watch.c, the notifier's thread sends what notify.h queues.  Shared
 * mutable state and what guards it (outer locks first):
 *   t->lock (inode.h)          the inode table: chains, counts, the list
 *                              of backing filesystems
 *   pt->locks[] (passthrough.h) an inode's I/O modes (struct
 *                              afs_pt_inode); the data path's locks are
 *                              taken under it, never the other way
 *   fs->open_lock              the list of open handles (struct afs_open);
 *                              a leaf lock
 *   the notifier's lock        its queue of invalidations; a leaf lock
 *   (notify.h)
 *   the data path's locks      each file's identity and cache state, the
 *   (fs/data/data.h)           table of files
 *   __atomic, no lock          struct afs_fs's flags set at INIT and
 *                              afterwards, struct afs_inode's descriptors
 *                              and data path state (each set once),
 *                              changes_told, nocap (fuse_internal.h)
 *   per thread                 the reply buffer (afs_thread_buf(), no
 *                              allocation per read), the caller's
 *                              credentials and umask (creds.h), the open
 *                              reply being patched (passthrough.h)
 * Attributes are not kept here: every getattr asks the backing.
 * Configuration (struct afs_opts) is read-only once serving starts.  A
 * directory stream is used by one request at a time (the kernel serialises
 * readdir per open directory).  The adapter takes no RCU read lock itself;
 * the data path makes every thread that calls it an RCU reader and may run
 * a read's reply callback inside its read-side section (fs/data/data.h).
 * No mutex is held across a FUSE reply or notification, nor across a
 * backing system call that can block for long (the passthrough lock is
 * held across its registering ioctls, the table lock across a close()).
 */
#ifndef AFS_FUSE_DAEMON_H
#define AFS_FUSE_DAEMON_H

/**
 * afs_main() - The aheadfs program: parse, check, mount, serve, unmount.
 *
 * Context: The process's main thread, before any other thread exists.
 * Return: The process exit status: 0 after --help/--version or a clean
 * unmount (fusermount3 -u, SIGTERM, SIGINT, SIGHUP); 1 after an error,
 * described in one line on stderr (or syslog once in the background).
 */
int afs_main(int argc, char **argv);

#endif /* AFS_FUSE_DAEMON_H */
