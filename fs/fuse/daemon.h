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
 *   ops_entry.c   lookup, forget, attributes, names (mknod ... rename),
 *                 statfs, access
 *   ops_dir.c     opendir, readdir(plus), releasedir, fsyncdir
 *   ops_io.c      open/create, read, write, flush, release, fsync,
 *                 fallocate, lseek, copy_file_range: all file data goes
 *                 through here, into the data path
 *   ops_xattr.c   get/set/list/removexattr (user.aheadfs.*: fs/stats/)
 *   ops_watch.c   the backing watcher's callbacks (fs/watch/watch.h): a
 *                 file or name changed behind the mount -> the data path's
 *                 drop and the kernel's notifications, on the watcher's
 *                 thread (serves no request)
 *   log.{c,h}     stderr in the foreground, syslog in the background
 *
 * Concurrency: requests are served by libfuse worker threads (several at
 * once, also on one inode and one open file).  Shared mutable state: the
 * inode table (its own mutex, t->lock, see inode.h), the list of open
 * handles (fs->open_lock, a leaf lock, in struct afs_fs), a few __atomic
 * flags of struct afs_fs, and what the data path owns (each file's
 * identity under its own lock, fs/data/data.h); attributes are not kept
 * here, every getattr asks the backing.  Configuration is read-only.  A
 * directory stream is used by one request at a time (the kernel serialises
 * readdir per open directory).  Each worker thread owns a reply buffer
 * (afs_thread_buf(), no allocation per read) and its fs_struct (umask, see
 * creds.h).  No lock is held across a backing system call that can block
 * for long or across a FUSE reply.
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
