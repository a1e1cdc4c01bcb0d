/* passthrough.c - FUSE passthrough: the mount's state, the per-inode I/O
 * mode, the backing ids and the reply patch (see passthrough.h). */
#include "passthrough.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "ra/ra.h"

const char *const afs_pt_state_names[] = {
	[AFS_PT_OFF] = "off",
	[AFS_PT_ASKED] = "asked",
	[AFS_PT_ON] = "on",
	[AFS_PT_UNSUPPORTED] = "unsupported",
	[AFS_PT_WRITEBACK] = "writeback",
	[AFS_PT_NO_OPENS] = "opens_none",
	[AFS_PT_REFUSED] = "refused",
	NULL,
};

_Static_assert(sizeof(struct afs_fuse_open_out) == sizeof(struct fuse_open_out),
	       "fuse_open_out of 7.40 is 7.38's with backing_id for padding");
_Static_assert(AFS_INIT_OUT_FLAGS2 == 32 &&
		       AFS_INIT_OUT_MAX_STACK_DEPTH ==
			       offsetof(struct fuse_init_out, unused),
	       "max_stack_depth follows flags2, in 7.38's unused[0]");
_Static_assert(sizeof(struct afs_fuse_backing_map) == 16,
	       "struct fuse_backing_map: fd, flags, padding");

static bool is_passthrough(enum afs_pt_io io)
{
	return io == AFS_IO_PASSTHROUGH || io == AFS_IO_PASSTHROUGH_DIRECT;
}

enum afs_pt_io afs_pt_decide(enum afs_passthrough policy, bool mount_on,
			     const struct afs_pt_inode *pi,
			     const struct afs_pt_request *rq,
			     enum afs_pt_why *why)
{
	enum afs_pt_io as_before =
		rq->direct_io ? AFS_IO_DIRECT : AFS_IO_CACHED;
	bool writable = (rq->flags & O_ACCMODE) != O_RDONLY;
	bool asks;

	*why = AFS_PT_WHY_NONE;
	/* The kernel takes no other kind of open beside a passthrough one;
	 * those whose I/O must stay aheadfs's join with FOPEN_DIRECT_IO. */
	if (pi->passthrough)
		return (rq->flags & O_DIRECT) || rq->setid_writer
			       ? AFS_IO_PASSTHROUGH_DIRECT
			       : AFS_IO_PASSTHROUGH;
	asks = !(rq->flags & O_DIRECT) &&
	       (policy == AFS_PASSTHROUGH_ALL ||
		((policy == AFS_PASSTHROUGH_WRITES ||
		  policy == AFS_PASSTHROUGH_RESIDENT) &&
		 writable) ||
		(policy == AFS_PASSTHROUGH_RESIDENT &&
		 (rq->resident || rq->random)));
	if (!asks)
		return as_before;
	if (!mount_on)
		*why = AFS_PT_WHY_MOUNT;
	else if (pi->ours)
		*why = AFS_PT_WHY_INODE;
	else if (pi->refused)
		*why = AFS_PT_WHY_FILE;
	else if (rq->setid_writer)
		*why = AFS_PT_WHY_SETID;
	else
		return AFS_IO_PASSTHROUGH;
	return as_before;
}

/* The state's name in the stats. */
static void set_state(struct afs_pt *pt, enum afs_pt_state s)
{
	__atomic_store_n(&pt->state, (int)s, __ATOMIC_RELEASE);
}

static const char *policy_name(const struct afs_pt *pt)
{
	return afs_passthrough_names[pt->policy];
}

void afs_pt_init(struct afs_pt *pt, enum afs_passthrough policy)
{
	memset(pt, 0, sizeof(*pt));
	pt->policy = policy;
	pt->probe_ttl_ns = AFS_PT_PROBE_TTL_NS;
	pt->state = AFS_PT_OFF;
	pt->dev_fd = -1;
	for (int k = 0; k < AFS_PT_LOCKS; k++)
		pthread_mutex_init(&pt->locks[k], NULL);
	pthread_mutex_init(&pt->dev_lock, NULL);
}

void afs_pt_destroy(struct afs_pt *pt)
{
	for (int k = 0; k < AFS_PT_LOCKS; k++)
		pthread_mutex_destroy(&pt->locks[k]);
	pthread_mutex_destroy(&pt->dev_lock);
}

void afs_pt_attach(struct afs_pt *pt, int dev_fd)
{
	__atomic_store_n(&pt->dev_fd, dev_fd, __ATOMIC_RELEASE);
}

void afs_pt_stats(const struct afs_pt *pt, struct afs_xattr_passthrough *out)
{
	const struct afs_xattr_pt_counts *c = &pt->c;

	out->mode = policy_name(pt);
	out->state = afs_pt_state_names[__atomic_load_n(&pt->state,
							__ATOMIC_ACQUIRE)];
	out->c.opens = afs_count_read(&c->opens);
	out->c.opens_cached = afs_count_read(&c->opens_cached);
	out->c.opens_direct = afs_count_read(&c->opens_direct);
	out->c.opens_resident = afs_count_read(&c->opens_resident);
	out->c.opens_random = afs_count_read(&c->opens_random);
	out->c.fallback_mount = afs_count_read(&c->fallback_mount);
	out->c.fallback_inode = afs_count_read(&c->fallback_inode);
	out->c.fallback_file = afs_count_read(&c->fallback_file);
	out->c.fallback_setid = afs_count_read(&c->fallback_setid);
	out->c.backing_files = afs_count_read(&c->backing_files);
}

void afs_pt_detach(struct afs_pt *pt)
{
	__atomic_store_n(&pt->dev_fd, -1, __ATOMIC_RELEASE);
}

void afs_pt_want(struct afs_pt *pt, bool writeback, bool opens_none)
{
	if (pt->policy == AFS_PASSTHROUGH_OFF)
		return;
	if (opens_none) {
		set_state(pt, AFS_PT_NO_OPENS);
		afs_log(LOG_INFO,
			"passthrough=%s: off with opens=none (no OPEN reply "
			"to carry it)",
			policy_name(pt));
	} else if (writeback) {
		set_state(pt, AFS_PT_WRITEBACK);
		afs_log(LOG_INFO,
			"passthrough=%s: off with write_mode=writeback (the "
			"kernel takes one or the other)",
			policy_name(pt));
	} else {
		set_state(pt, AFS_PT_ASKED);
	}
}

bool afs_pt_init_out(void *arg, size_t len, uint64_t offered)
{
	char *p = arg;
	uint32_t flags, flags2, depth = AFS_PT_STACK_DEPTH;

	if (!(offered & AFS_FUSE_PASSTHROUGH) ||
	    len < AFS_INIT_OUT_MAX_STACK_DEPTH + sizeof(depth))
		return false;
	memcpy(&flags, p + offsetof(struct fuse_init_out, flags),
	       sizeof(flags));
	/* flags2 counts only with FUSE_INIT_EXT; the kernel ignores
	 * passthrough beside the writeback cache. */
	if (!(flags & FUSE_INIT_EXT) || (flags & FUSE_WRITEBACK_CACHE))
		return false;
	memcpy(&flags2, p + AFS_INIT_OUT_FLAGS2, sizeof(flags2));
	flags2 |= (uint32_t)(AFS_FUSE_PASSTHROUGH >> 32);
	memcpy(p + AFS_INIT_OUT_FLAGS2, &flags2, sizeof(flags2));
	memcpy(p + AFS_INIT_OUT_MAX_STACK_DEPTH, &depth, sizeof(depth));
	return true;
}

void afs_pt_init_reply(struct afs_pt *pt, void *arg, size_t len,
		       uint64_t offered)
{
	if (__atomic_load_n(&pt->state, __ATOMIC_ACQUIRE) != AFS_PT_ASKED)
		return;
	if (afs_pt_init_out(arg, len, offered)) {
		set_state(pt, AFS_PT_ON);
		afs_log(LOG_INFO,
			"passthrough=%s: the kernel's FUSE passthrough serves "
			"%s opens' reads and writes",
			policy_name(pt),
			pt->policy == AFS_PASSTHROUGH_ALL ? "all"
			: pt->policy == AFS_PASSTHROUGH_RESIDENT
				? "writable and resident"
				: "writable");
	} else {
		set_state(pt, AFS_PT_UNSUPPORTED);
		afs_log(LOG_INFO,
			"passthrough=%s: the kernel offers no FUSE passthrough "
			"(Linux 6.9 and later): every open goes through "
			"aheadfs",
			policy_name(pt));
	}
}

static pthread_mutex_t *inode_lock(struct afs_pt *pt,
				   const struct afs_inode *inode)
{
	uint64_t id = inode->nodeid;

	return &pt->locks[(id ^ (id >> 48)) % AFS_PT_LOCKS];
}

/*
 * Whether the filesystem of @fd takes O_DIRECT.  The kernel reopens the
 * backing file for every passthrough open with the opener's flags, so an
 * O_DIRECT open that must join a passthrough inode would fail with EINVAL
 * where the backing refuses O_DIRECT (ramfs): such files get none.  Probed
 * with an O_DIRECT reopen of @fd as the daemon, once per filesystem for
 * the first AFS_PT_DEVS of them, per file past that.  Only EINVAL says no.
 * Context: Under an inode's passthrough lock; takes pt->dev_lock.
 */
static bool takes_o_direct(struct afs_pt *pt, int fd)
{
	char proc[32];
	struct stat st;
	bool direct;
	int probe;

	if (fstat(fd, &st))
		return true; /* the registration will tell */
	pthread_mutex_lock(&pt->dev_lock);
	for (unsigned k = 0; k < pt->ndevs; k++)
		if (pt->devs[k].dev == st.st_dev) {
			direct = pt->devs[k].direct;
			pthread_mutex_unlock(&pt->dev_lock);
			return direct;
		}
	pthread_mutex_unlock(&pt->dev_lock);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	probe = open(proc, O_RDONLY | O_DIRECT | O_CLOEXEC);
	direct = probe >= 0 || errno != EINVAL;
	if (probe >= 0)
		close(probe);
	pthread_mutex_lock(&pt->dev_lock);
	if (pt->ndevs < AFS_PT_DEVS)
		pt->devs[pt->ndevs++] = (struct afs_pt_dev){st.st_dev, direct};
	pthread_mutex_unlock(&pt->dev_lock);
	return direct;
}

/* Register the backing file through @fd.  Return: the id, or -errno. */
static int backing_open(struct afs_pt *pt, int fd)
{
	struct afs_fuse_backing_map map = {.fd = fd};
	int dev = __atomic_load_n(&pt->dev_fd, __ATOMIC_ACQUIRE);
	int id;

	if (dev < 0)
		return -EBADF;
	if (!takes_o_direct(pt, fd))
		return -EINVAL;
	id = ioctl(dev, AFS_FUSE_DEV_IOC_BACKING_OPEN, &map);
	if (id < 0)
		return -errno;
	return id > 0 ? id : -EIO;
}

static void backing_close(struct afs_pt *pt, int32_t id)
{
	int dev = __atomic_load_n(&pt->dev_fd, __ATOMIC_ACQUIRE);
	uint32_t arg = (uint32_t)id;

	if (dev >= 0 && ioctl(dev, AFS_FUSE_DEV_IOC_BACKING_CLOSE, &arg))
		afs_log(LOG_WARNING, "passthrough: closing backing id %d: %s",
			id, strerror(errno));
}

/* A registration refused with -@err: the mount's passthrough goes off
 * (EPERM), or the file's (not for a shortage that may pass). */
static enum afs_pt_why refused(struct afs_pt *pt, struct afs_inode *inode,
			       int err)
{
	int on = AFS_PT_ON;

	if (err == EPERM) {
		if (__atomic_compare_exchange_n(&pt->state, &on, AFS_PT_REFUSED,
						false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			set_state(pt, AFS_PT_REFUSED);
			afs_log(LOG_INFO,
				"passthrough=%s: the kernel refuses backing "
				"files (%s: the daemon needs CAP_SYS_ADMIN): "
				"every open goes through aheadfs",
				policy_name(pt), strerror(err));
		}
		return AFS_PT_WHY_MOUNT;
	}
	if (err != ENOMEM && err != EMFILE && err != ENFILE && err != EINTR)
		inode->pt.refused = true;
	if (!__atomic_exchange_n(&pt->logged_file, true, __ATOMIC_RELAXED))
		afs_log(LOG_INFO,
			"passthrough: no backing file for inode %llu (%s): its "
			"opens go through aheadfs (logged once)",
			(unsigned long long)inode->ino, strerror(err));
	return AFS_PT_WHY_FILE;
}

/* Whether the backing's page cache holds the first @size bytes of @fd
 * (ra_held_resident()): @pi's last answer for that size within
 * pt->probe_ttl_ns, else a new probe, kept.  A pool that opens a large file
 * per request pays at most one walk of it a second.
 * Context: Under @pi's passthrough lock. */
static bool resident_now(const struct afs_pt *pt, struct afs_pt_inode *pi,
			 int fd, uint64_t size)
{
	struct timespec ts;
	int64_t now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	if (pi->probed_until && now < pi->probed_until &&
	    pi->probed_size == size)
		return pi->probed_resident;
	pi->probed_resident = ra_held_resident(fd, size);
	pi->probed_size = size;
	pi->probed_until = now + pt->probe_ttl_ns;
	return pi->probed_resident;
}

void afs_pt_open(struct afs_pt *pt, struct afs_inode *inode, int fd,
		 const struct afs_pt_request *rq, struct afs_pt_open *out)
{
	pthread_mutex_t *lock = inode_lock(pt, inode);
	struct afs_pt_inode *pi = &inode->pt;
	bool on = __atomic_load_n(&pt->state, __ATOMIC_ACQUIRE) == AFS_PT_ON;
	bool writable = (rq->flags & O_ACCMODE) != O_RDONLY;
	enum afs_pt_why why;
	bool resident = false, random = false;
	struct afs_pt_request asked = *rq;

	*out = (struct afs_pt_open){0};
	asked.random = false;
	pthread_mutex_lock(lock);
	if (pt->policy == AFS_PASSTHROUGH_RESIDENT && on && !writable &&
	    !(rq->flags & O_DIRECT) && !pi->passthrough && !pi->ours &&
	    !pi->refused) {
		/* The probe only where its answer decides: a file with opens
		 * keeps their mode.  A file advised random needs none: there
		 * is nothing for aheadfs to read ahead either way. */
		random = rq->random;
		asked.random = random;
		if (!random)
			asked.resident = resident_now(pt, pi, fd, rq->size);
		resident = asked.resident;
	}
	out->io = afs_pt_decide(pt->policy, on, pi, &asked, &why);
	if (is_passthrough(out->io) && !pi->backing_id) {
		int id;

		/* Every passthrough open of the inode reads through this
		 * backing file while one is open: its readahead as the advice
		 * says now (a reader's fd is the inode's shared one, which an
		 * earlier registration may have left random). */
		if (random || pi->fadv_random) {
			posix_fadvise(fd, 0, 0,
				      random ? POSIX_FADV_RANDOM
					     : POSIX_FADV_NORMAL);
			pi->fadv_random = random;
		}
		id = backing_open(pt, fd);

		if (id > 0) {
			pi->backing_id = id;
			afs_count(&pt->c.backing_files, 1);
		} else {
			why = refused(pt, inode, -id);
			out->io = rq->direct_io ? AFS_IO_DIRECT : AFS_IO_CACHED;
		}
	}
	switch (out->io) {
	case AFS_IO_CACHED:
	case AFS_IO_DIRECT:
		pi->ours++;
		break;
	case AFS_IO_PASSTHROUGH:
		if (writable) {
			out->first_writer = !pi->writers;
			__atomic_store_n(&pi->writers, pi->writers + 1,
					 __ATOMIC_RELEASE);
			__atomic_store_n(&pi->wrote, true, __ATOMIC_RELAXED);
		}
		/* fall through */
	case AFS_IO_PASSTHROUGH_DIRECT:
		pi->passthrough++;
		out->backing_id = pi->backing_id;
		break;
	}
	pthread_mutex_unlock(lock);
	afs_count(is_passthrough(out->io)    ? &pt->c.opens
		  : out->io == AFS_IO_DIRECT ? &pt->c.opens_direct
					     : &pt->c.opens_cached,
		  1);
	if (resident && out->io == AFS_IO_PASSTHROUGH)
		afs_count(&pt->c.opens_resident, 1);
	if (random && out->io == AFS_IO_PASSTHROUGH)
		afs_count(&pt->c.opens_random, 1);
	switch (why) {
	case AFS_PT_WHY_NONE:
		break;
	case AFS_PT_WHY_MOUNT:
		afs_count(&pt->c.fallback_mount, 1);
		break;
	case AFS_PT_WHY_INODE:
		afs_count(&pt->c.fallback_inode, 1);
		break;
	case AFS_PT_WHY_FILE:
		afs_count(&pt->c.fallback_file, 1);
		break;
	case AFS_PT_WHY_SETID:
		afs_count(&pt->c.fallback_setid, 1);
		break;
	}
}

uint32_t afs_pt_opens(struct afs_pt *pt, const struct afs_inode *inode)
{
	pthread_mutex_t *lock = inode_lock(pt, inode);
	uint32_t n;

	pthread_mutex_lock(lock);
	n = inode->pt.passthrough;
	pthread_mutex_unlock(lock);
	return n;
}

void afs_pt_release(struct afs_pt *pt, struct afs_inode *inode,
		    enum afs_pt_io io, bool writable, int fd)
{
	pthread_mutex_t *lock = inode_lock(pt, inode);
	struct afs_pt_inode *pi = &inode->pt;

	pthread_mutex_lock(lock);
	switch (io) {
	case AFS_IO_CACHED:
	case AFS_IO_DIRECT:
		pi->ours--;
		break;
	case AFS_IO_PASSTHROUGH:
		if (writable) {
			/* The last writer: what it wrote never passed the
			 * cache, which readers may have filled meanwhile
			 * (readahead workers, a warm-up); the identity follows
			 * the bytes -- before the count says no writer is
			 * left, so that the watcher never finds the file
			 * changed and unclaimed in between. */
			if (pi->writers == 1)
				afs_fcache_changed(afs_inode_fc(inode), fd, 0,
						   0, true);
			__atomic_store_n(&pi->writers, pi->writers - 1,
					 __ATOMIC_RELEASE);
		}
		/* fall through */
	case AFS_IO_PASSTHROUGH_DIRECT:
		/* The kernel let go of the backing file as it sent the
		 * RELEASE: the id can go with the last one. */
		if (!--pi->passthrough) {
			backing_close(pt, pi->backing_id);
			pi->backing_id = 0;
			afs_count_sub(&pt->c.backing_files, 1);
		}
		break;
	}
	pthread_mutex_unlock(lock);
}

/* The reply the calling thread is about to write (afs_pt_reply_begin()). */
static __thread struct {
	uint64_t fh;
	int32_t backing_id; /* > 0 while one is pending */
} pending;

void afs_pt_reply_begin(uint64_t fh, int32_t backing_id)
{
	pending.fh = fh;
	pending.backing_id = backing_id > 0 ? backing_id : 0;
}

bool afs_pt_reply_end(void)
{
	int32_t left = pending.backing_id;

	pending.backing_id = 0;
	if (left)
		afs_log(LOG_ERR,
			"passthrough: an open reply with backing id %d went "
			"out "
			"unpatched",
			left);
	return !left;
}

void afs_pt_reply_hook(struct iovec *iov, int count)
{
	if (__builtin_expect(!pending.backing_id, 1))
		return;
	if (afs_pt_patch_open_out(iov, count, pending.fh, pending.backing_id))
		pending.backing_id = 0;
}

bool afs_pt_patch_open_out(struct iovec *iov, int count, uint64_t fh,
			   int32_t backing_id)
{
	struct fuse_out_header out;
	struct afs_fuse_open_out o;
	char *p;

	if (count != 2 || iov[0].iov_len != sizeof(out))
		return false;
	memcpy(&out, iov[0].iov_base, sizeof(out));
	if (out.error)
		return false;
	/* The argument may sit at any alignment (CREATE's is a char
	 * buffer): copied in and out. */
	p = iov[1].iov_base;
	if (iov[1].iov_len == sizeof(struct fuse_entry_out) + sizeof(o))
		p += sizeof(struct fuse_entry_out);
	else if (iov[1].iov_len != sizeof(o))
		return false;
	memcpy(&o, p, sizeof(o));
	if (o.fh != fh)
		return false;
	o.open_flags = (o.open_flags & AFS_FOPEN_PASSTHROUGH_MASK) |
		       AFS_FOPEN_PASSTHROUGH;
	o.backing_id = backing_id;
	memcpy(p, &o, sizeof(o));
	return true;
}
