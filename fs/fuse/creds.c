/* creds.c - per-thread caller credentials (see creds.h). */
#include "creds.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static gid_t *daemon_groups; /* for the process's life */
static int daemon_ngroups;
static uid_t daemon_uid;
static gid_t daemon_gid;
static __thread bool thread_fs_unshared;

int afs_creds_init(void)
{
	int n = getgroups(0, NULL);
	gid_t *list;

	if (n < 0)
		return -errno;
	list = calloc((size_t)n + 1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	n = getgroups(n, list);
	if (n < 0) {
		free(list);
		return -errno;
	}
	free(daemon_groups);
	daemon_groups = list;
	daemon_ngroups = n;
	daemon_uid = geteuid();
	daemon_gid = getegid();
	return 0;
}

static int raw_setgroups(int n, const gid_t *list)
{
	/* glibc's setgroups() would change every thread of the process */
	return syscall(SYS_setgroups, n, list) < 0 ? -errno : 0;
}

int afs_creds_enter(struct afs_creds *c, uid_t uid, gid_t gid,
		    const gid_t *groups, int ngroups, bool set_umask,
		    mode_t umask_val)
{
	int rc;

	c->switched = false;
	c->umask_set = false;
	if (set_umask) {
		if (!thread_fs_unshared) {
			if (unshare(CLONE_FS) < 0)
				return -errno;
			thread_fs_unshared = true;
		}
		c->old_umask = umask(umask_val);
		c->umask_set = true;
	}
	if (daemon_uid != 0 || (uid == 0 && gid == 0))
		return 0;
	rc = raw_setgroups(ngroups, groups);
	if (rc)
		goto out_umask;
	setfsgid(gid);
	setfsuid(uid);
	/* setfsuid() reports the previous id, never an error: read back */
	if ((uid_t)setfsuid((uid_t)-1) != uid ||
	    (gid_t)setfsgid((gid_t)-1) != gid) {
		rc = -EPERM;
		setfsuid(daemon_uid);
		setfsgid(daemon_gid);
		raw_setgroups(daemon_ngroups, daemon_groups);
		goto out_umask;
	}
	c->switched = true;
	return 0;

out_umask:
	if (c->umask_set)
		umask(c->old_umask);
	c->umask_set = false;
	return rc;
}

void afs_creds_leave(struct afs_creds *c)
{
	if (c->switched) {
		/* uid first: back to 0 restores the capabilities fsuid 0 has */
		setfsuid(daemon_uid);
		setfsgid(daemon_gid);
		raw_setgroups(daemon_ngroups, daemon_groups);
		c->switched = false;
	}
	if (c->umask_set) {
		umask(c->old_umask);
		c->umask_set = false;
	}
}
