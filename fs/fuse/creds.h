/* creds.h - act as the calling user on the serving thread.
 *
 * Objects created through the mount must belong to the caller exactly as if
 * the caller had created them on the backing (setgid directories and
 * supplementary groups included), and a daemon running as root must not
 * lend its rights to users.  Around every call that creates or changes
 * something on the backing, afs_creds_enter() switches the serving thread's
 * fsuid, fsgid and supplementary groups to the caller's, and the thread's
 * umask to the caller's (the kernel hands the umask over because aheadfs
 * asks for FUSE_CAP_DONT_MASK: the backing then applies it, or a default
 * ACL instead, as it would for the caller).
 *
 * All of this is per thread: setfsuid()/setfsgid() are per-thread system
 * calls; supplementary groups use the raw setgroups system call because
 * glibc's setgroups() changes every thread of the process; each serving
 * thread unshares its fs_struct (CLONE_FS) once, which makes its umask its
 * own.  Ids are switched only when the daemon runs as root and the caller is
 * not root; the umask always.
 *
 * Concurrency: thread-local state only; enter and leave pair up on one
 * thread, never nested, and nothing may reply to FUSE in between that
 * depends on the daemon's own rights.
 */
#ifndef AFS_CREDS_H
#define AFS_CREDS_H

#include <stdbool.h>
#include <sys/types.h>

/* Groups read without allocating; callers with more are read into a
 * buffer of their size. */
#define AFS_CREDS_MAX_GROUPS 64

struct afs_creds {
	bool switched; /* ids were switched and must be restored */
	mode_t old_umask;
	bool umask_set;
};

/**
 * afs_creds_init() - Remember the daemon's own groups, to restore them.
 *
 * Context: Once, before serving threads start.
 * Return: 0, -ENOMEM, or -errno from getgroups().
 */
int afs_creds_init(void);

/**
 * afs_creds_enter() - Become @uid/@gid with @groups on this thread, with
 * umask @umask_val when @set_umask.
 *
 * Context: Serving thread; pairs with afs_creds_leave() on the same thread.
 * Return: 0, or -errno when the switch failed (nothing is then switched).
 */
int afs_creds_enter(struct afs_creds *c, uid_t uid, gid_t gid,
		    const gid_t *groups, int ngroups, bool set_umask,
		    mode_t umask_val);

/**
 * afs_creds_leave() - Back to the daemon's own ids, groups and umask.
 *
 * Context: Same thread as the matching afs_creds_enter().
 */
void afs_creds_leave(struct afs_creds *c);

#endif /* AFS_CREDS_H */
