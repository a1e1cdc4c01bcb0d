/* passthrough.h - the kernel's FUSE passthrough (protocol 7.40, Linux 6.9
 * and later), spoken by aheadfs over libfuse 3.14: the kernel sends an open
 * file's reads, writes, splices and mmaps straight to a backing file the
 * daemon registered -- one copy, the backing's own readahead and
 * writeback -- and only the rest (open, flush, fsync, fallocate, setattr,
 * release) to the daemon.
 *
 * The protocol (the kernel's uapi fuse.h, 7.40).  libfuse 3.14 builds on
 * linux/fuse.h of 7.38, which lacks it, so what is missing is defined
 * below under aheadfs's names:
 *   INIT      the kernel offers FUSE_PASSTHROUGH, bit 37 of its flags: bit 5
 *             of flags2, valid with FUSE_INIT_EXT.  The reply takes it with
 *             the same bit and max_stack_depth >= 1 (the word after
 *             flags2, unused before 7.40); the kernel ignores it beside
 *             FUSE_WRITEBACK_CACHE.
 *   register  ioctl(FUSE_DEV_IOC_BACKING_OPEN) on /dev/fuse with an open
 *             fd of the backing file answers a backing id > 0.  It needs
 *             CAP_SYS_ADMIN in the initial user namespace (EPERM, also
 *             when INIT did not take passthrough), a backing filesystem
 *             stacked less deep than max_stack_depth (ELOOP: overlayfs
 *             under a depth of 1), a file with read_iter and write_iter
 *             (EOPNOTSUPP).  FUSE_DEV_IOC_BACKING_CLOSE drops the id; files
 *             the kernel opened with it keep the backing file.  (aheadfs
 *             also registers none on a filesystem without O_DIRECT:
 *             passthrough.c takes_o_direct().)
 *   open      an OPEN or CREATE reply's fuse_open_out carries
 *             FOPEN_PASSTHROUGH and the id (in backing_id, which was
 *             padding).  Only FOPEN_DIRECT_IO (reads and writes then still
 *             come to the daemon, mmap goes to the backing), FOPEN_NOFLUSH
 *             and FOPEN_PARALLEL_DIRECT_WRITES may go with it:
 *             FOPEN_KEEP_CACHE fails the open(2) with EIO.  The kernel
 *             opens the backing file again for every such open, with the
 *             opener's flags and the credentials of the thread that
 *             registered it (the daemon's own: see afs_pt_open()).
 *
 * One I/O mode per inode (the kernel's iomode.c, in its fs/fuse): while an inode
 * has passthrough opens, an open without FOPEN_PASSTHROUGH fails with EIO;
 * while it has opens in cached mode (neither FOPEN_DIRECT_IO nor
 * FOPEN_PASSTHROUGH), a passthrough open fails with EIO.  FOPEN_DIRECT_IO
 * opens are neutral.  All passthrough opens of an inode share one backing
 * file.  So the daemon keeps, per inode, the opens it answered in each mode
 * (struct afs_pt_inode, counted from the decision to the RELEASE: a
 * superset of the kernel's own counts, which drop before the RELEASE is
 * sent) and decides each open by them (afs_pt_decide()): an inode with a
 * passthrough open gives every later open passthrough too; an inode with
 * opens on aheadfs's path -- cached ones, which the kernel would not let
 * a passthrough open beside, and direct_io ones, which it would, but
 * whose reads aheadfs's cache serves (read_mode=direct) -- keeps a new
 * writer on aheadfs's path too.  Every open(2) that succeeds without
 * passthrough succeeds with it.
 *
 * Coherency: bytes written through passthrough never pass aheadfs's cache.
 * While an inode has a passthrough writer, reads that reach the daemon (an
 * O_DIRECT open that joined it) go around the cache (afs_pt_writing()); its
 * cached pages are dropped, and
 * its identity taken again, when the first passthrough writer opens and
 * when the last one closes (ops_open.c).  The kernel's page cache of the
 * inode is dropped by the kernel at every passthrough open (no
 * FOPEN_KEEP_CACHE) and cannot fill while the inode is passthrough (no
 * cached opens).
 *
 * How a reply carries the flag: libfuse 3.14 fills fuse_open_out with
 * backing_id 0.  The open handler names the fh and backing id it is about
 * to answer (afs_pt_reply_begin()); libfuse writes the reply on that same
 * thread through devio.c's writev hook, which sets the flag and the id in
 * the reply whose fh is that one (afs_pt_patch_open_out()).
 *
 * Locking: an inode's struct afs_pt_inode is guarded by one of
 * AFS_PT_LOCKS mutexes picked by its node id, held across the registering
 * and closing ioctls and the last writer's cache drop (the file's data
 * path locks, taken under it and never the other way); its writers count
 * and wrote flag are also read without it (__atomic).  pt->state and pt->dev_fd are __atomic.
 * Reply patching state is per thread.
 */
#ifndef AFS_PASSTHROUGH_H
#define AFS_PASSTHROUGH_H

#include <linux/fuse.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "cache/base/count.h"
#include "fs/data/data.h"
#include "fs/stats/xattr.h"
#include "inode.h"
#include "opts.h"

/* Protocol 7.40, under aheadfs's names (see the top of this file). */
#define AFS_FUSE_PASSTHROUGH (1ULL << 37) /* INIT: flags | flags2 << 32 */
#define AFS_FOPEN_PASSTHROUGH (1u << 7)
/* The open flags the kernel takes beside FOPEN_PASSTHROUGH. */
#define AFS_FOPEN_PASSTHROUGH_MASK                                             \
	(AFS_FOPEN_PASSTHROUGH | FOPEN_DIRECT_IO | FOPEN_NOFLUSH |             \
	 FOPEN_PARALLEL_DIRECT_WRITES)

/* fuse_open_out of 7.40: backing_id was padding. */
struct afs_fuse_open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

/* fuse_init_out of 7.40: max_stack_depth is what 7.38 calls unused[0]. */
#define AFS_INIT_OUT_FLAGS2 offsetof(struct fuse_init_out, flags2)
#define AFS_INIT_OUT_MAX_STACK_DEPTH (AFS_INIT_OUT_FLAGS2 + 4)

struct afs_fuse_backing_map {
	int32_t fd;
	uint32_t flags; /* 0 */
	uint64_t padding; /* 0 */
};

#define AFS_FUSE_DEV_IOC_BACKING_OPEN                                          \
	_IOW(FUSE_DEV_IOC_MAGIC, 1, struct afs_fuse_backing_map)
#define AFS_FUSE_DEV_IOC_BACKING_CLOSE _IOW(FUSE_DEV_IOC_MAGIC, 2, uint32_t)

/* The stack depth aheadfs asks for: backings on ext4, xfs, tmpfs (depth
 * 0), and the mount itself usable as an overlayfs layer. */
#define AFS_PT_STACK_DEPTH 1

/* Stripes of the per-inode lock. */
#define AFS_PT_LOCKS 64
/* How long passthrough=resident trusts a file's last residency probe
 * (struct afs_pt_inode's probed_*): at most one probe a second per file,
 * however often a pool opens it. */
#define AFS_PT_PROBE_TTL_NS 1000000000LL
/* Backing filesystems whose O_DIRECT answer is remembered. */
#define AFS_PT_DEVS 16

/* A backing filesystem, and whether it takes O_DIRECT (passthrough.c
 * takes_o_direct()). */
struct afs_pt_dev {
	dev_t dev;
	bool direct;
};

/* Where passthrough stands on the mount (pt->state); names
 * afs_pt_state_names, as the stats show them. */
enum afs_pt_state {
	AFS_PT_OFF, /* -o passthrough=off */
	AFS_PT_ASKED, /* INIT is being answered with it */
	AFS_PT_ON, /* negotiated; opens may use it */
	AFS_PT_UNSUPPORTED, /* the kernel offered none */
	AFS_PT_WRITEBACK, /* write_mode=writeback: the kernel refuses both */
	AFS_PT_NO_OPENS, /* opens=none: no OPEN reply to carry it */
	AFS_PT_REFUSED, /* the kernel refused to register a backing file
			 * (EPERM: no CAP_SYS_ADMIN) */
};
extern const char *const afs_pt_state_names[];

/* How the kernel does an open's I/O (what the OPEN reply says). */
enum afs_pt_io {
	AFS_IO_CACHED, /* the kernel's page cache, misses to aheadfs */
	AFS_IO_DIRECT, /* FOPEN_DIRECT_IO: every read and write to aheadfs */
	AFS_IO_PASSTHROUGH, /* FOPEN_PASSTHROUGH: to the backing file */
	/* FOPEN_PASSTHROUGH | FOPEN_DIRECT_IO: reads and writes to aheadfs
	 * (O_DIRECT, setid files), mmap to the backing; joins an inode that
	 * is passthrough */
	AFS_IO_PASSTHROUGH_DIRECT,
};

/* Why an open that would have been passthrough is not (the stats'
 * fallback_* counters). */
enum afs_pt_why {
	AFS_PT_WHY_NONE, /* passthrough, or never asked for */
	AFS_PT_WHY_MOUNT, /* the mount has none (pt->state) */
	AFS_PT_WHY_INODE, /* the inode has opens on aheadfs's path */
	AFS_PT_WHY_FILE, /* the kernel refused this file's backing */
	AFS_PT_WHY_SETID, /* a setuid/setgid file opened for writing by a
			   * caller the daemon clears those bits for */
};

/* What an open asks for (afs_pt_decide()). */
struct afs_pt_request {
	int flags; /* open(2)'s flags */
	bool direct_io; /* aheadfs's answer without passthrough */
	/* writable open of a setuid/setgid file by a caller whose writes the
	 * daemon makes as the caller (ops_io.c kill_privs_as_caller()): the
	 * kernel's passthrough writes with the daemon's credentials, which
	 * would keep the bits the backing clears for the caller */
	bool setid_writer;
	uint64_t size; /* the file's size at the open */
	/* a read-only open of a file the backing's page cache holds
	 * (ra_held_resident()): set by afs_pt_open() where policy resident
	 * would give it passthrough, probed for no other open */
	bool resident;
	/* the file's advice is random (user.aheadfs.advice): aheadfs would
	 * read it ahead never, so under policy resident a read-only open that
	 * would be probed asks for passthrough without the probe, and the
	 * backing file it registers reads with POSIX_FADV_RANDOM (the
	 * backing's readahead off too; any other registration resets it to
	 * POSIX_FADV_NORMAL: a reader's fd is the inode's shared one);
	 * ignored by afs_pt_decide() where afs_pt_open() would not probe */
	bool random;
};

/* The mount's passthrough state (in struct afs_fs). */
struct afs_pt {
	enum afs_passthrough policy; /* -o passthrough=, immutable */
	int64_t probe_ttl_ns; /* AFS_PT_PROBE_TTL_NS; tests set it, before use */
	int state; /* __atomic enum afs_pt_state */
	int dev_fd; /* __atomic: the session's /dev/fuse; -1: none */
	struct afs_xattr_pt_counts c; /* counters (afs_pt_stats()) */
	bool logged_file; /* __atomic: a file's refusal was logged */
	pthread_mutex_t locks[AFS_PT_LOCKS];
	pthread_mutex_t dev_lock; /* a leaf: devs, ndevs */
	struct afs_pt_dev devs[AFS_PT_DEVS];
	unsigned int ndevs;
};

/**
 * afs_pt_decide() - The I/O mode of an open of an inode in state @pi.
 * @mount_on: passthrough is negotiated and not refused (AFS_PT_ON).
 * @why: Set to why the open is not passthrough though @policy asks for
 *	it, else AFS_PT_WHY_NONE.
 *
 * An inode with passthrough opens gives every open passthrough (the
 * kernel refuses any other), with FOPEN_DIRECT_IO for an O_DIRECT open and
 * a setid writer (their I/O then stays aheadfs's, as without passthrough).
 * Else @policy says which opens ask for it: writes: writable ones;
 * resident: writable ones, @rq->resident ones and @rq->random ones; all:
 * every one; off: none.  O_DIRECT opens never ask (the backing file would
 * take the application's O_DIRECT alignment rules).  An open that asks
 * gets it unless the mount has none, the inode has an open on aheadfs's
 * path (cached or direct_io: struct afs_pt_inode's ours), the
 * kernel refused the file's backing before, or it is a setid writer; it
 * then gets @rq->direct_io's mode, as without passthrough.
 * Context: Pure; the caller holds @pi's lock.
 */
enum afs_pt_io afs_pt_decide(enum afs_passthrough policy, bool mount_on,
			     const struct afs_pt_inode *pi,
			     const struct afs_pt_request *rq,
			     enum afs_pt_why *why);

/**
 * afs_pt_init() - Set up @pt for -o passthrough=@policy (state AFS_PT_OFF
 * until afs_pt_want(); no /dev/fuse yet).
 * Context: Before serving.
 */
void afs_pt_init(struct afs_pt *pt, enum afs_passthrough policy);

/** afs_pt_destroy() - Free @pt's locks.  Context: no request served. */
void afs_pt_destroy(struct afs_pt *pt);

/**
 * afs_pt_attach() - The session's /dev/fuse (@dev_fd, for the ioctls).
 * Context: Before serving.
 */
void afs_pt_attach(struct afs_pt *pt, int dev_fd);

/**
 * afs_pt_stats() - The policy's and the state's names and the counters
 * now, for the stats (fs/stats/xattr.h).
 * Context: Any thread; relaxed loads.
 */
void afs_pt_stats(const struct afs_pt *pt, struct afs_xattr_passthrough *out);

/**
 * afs_pt_detach() - No /dev/fuse any more (the session is going): a
 * release from now on closes no backing id (the kernel's connection frees
 * them).
 * Context: After serving stopped.
 */
void afs_pt_detach(struct afs_pt *pt);

/**
 * afs_pt_want() - INIT is being answered (ops_init.c afs_op_init()):
 * whether to ask for passthrough, from the policy, @writeback (the
 * kernel's writeback cache is taken) and @opens_none (-o opens=none).  A
 * reason not to is logged once and becomes the state.
 * Context: The INIT request's thread, before its reply.
 */
void afs_pt_want(struct afs_pt *pt, bool writeback, bool opens_none);

/**
 * afs_pt_init_out() - Take FUSE_PASSTHROUGH in the INIT reply @arg of
 * @len bytes if the kernel's flags @offered (flags | flags2 << 32) have it
 * and the reply carries FUSE_INIT_EXT: the flag in flags2 and
 * max_stack_depth AFS_PT_STACK_DEPTH.
 * Context: Pure.
 * Return: true if the reply asks for passthrough now.
 */
bool afs_pt_init_out(void *arg, size_t len, uint64_t offered);

/**
 * afs_pt_init_reply() - devio.c's writev hook saw the INIT reply @arg (@len
 * bytes) to a kernel that offered @offered: asks for passthrough in it
 * where afs_pt_want() decided to (afs_pt_init_out()), and logs what came
 * of it once.
 * Context: The INIT request's thread.
 */
void afs_pt_init_reply(struct afs_pt *pt, void *arg, size_t len,
		       uint64_t offered);

/* The outcome of afs_pt_open() for the open handler. */
struct afs_pt_open {
	enum afs_pt_io io;
	int32_t backing_id; /* for the reply; 0: not passthrough */
	/* this open is the inode's first passthrough writer: its cached pages
	 * go (they would be stale once the writer writes) */
	bool first_writer;
};

/**
 * afs_pt_open() - Decide an open of @inode (afs_pt_decide()) -- under
 * policy resident, a read-only open of an inode with no other open probes
 * the backing's page cache first (@rq->resident), or takes the inode's
 * last probe of the same size within pt->probe_ttl_ns, or asks without a
 * probe for a file advised random (@rq->random) --, register the
 * backing file through @fd (an open fd of it) where the inode needs one,
 * and count the open in the inode's state and the stats.  A refusal
 * falls back: EPERM turns passthrough off on the mount (one log line),
 * another error off for the file (one log line for the mount's first).
 * Undone by afs_pt_release().
 * Context: Serving thread, as the daemon (not the caller's ids: the kernel
 * keeps the registering thread's credentials for the backing file's
 * I/O); takes @inode's passthrough lock and may issue the ioctl and the
 * residency probe under it.
 */
void afs_pt_open(struct afs_pt *pt, struct afs_inode *inode, int fd,
		 const struct afs_pt_request *rq, struct afs_pt_open *out);

/**
 * afs_pt_release() - An open afs_pt_open() answered @io (@writable: opened
 * for writing; @fd: its backing fd) is gone (RELEASE, or a reply the
 * kernel never took).  The inode's last passthrough writer drops the
 * file's cached pages and takes its identity again (afs_fcache_changed());
 * its last passthrough open closes the backing id.
 * Context: Serving thread, before @fd is closed; takes @inode's
 * passthrough lock, and the file's data path locks under it.
 */
void afs_pt_release(struct afs_pt *pt, struct afs_inode *inode,
		    enum afs_pt_io io, bool writable, int fd);

/**
 * afs_pt_opens() - How many of @inode's opens are passthrough now (the
 * file's stats: their reads never reach aheadfs).
 * Context: Any thread holding a reference on @inode; takes its
 * passthrough lock.
 */
uint32_t afs_pt_opens(struct afs_pt *pt, const struct afs_inode *inode);

/**
 * afs_pt_writing() - Whether @inode has a passthrough writer open: bytes
 * may change under aheadfs's cache, so reads go around it.
 * Context: Any thread holding a reference on @inode; one atomic load.
 */
static inline bool afs_pt_writing(const struct afs_inode *inode)
{
	return __atomic_load_n(&inode->pt.writers, __ATOMIC_ACQUIRE) != 0;
}

/**
 * afs_pt_wrote() - Whether a passthrough writer opened @inode since its
 * entry was made.  Such a file's writes are made in the writer's name, not
 * the daemon's: the backing watcher's events then tell nothing by their
 * pid, and the file is judged by its identity (ops_watch.c).
 * Context: Any thread holding a reference on @inode; one atomic load.
 */
static inline bool afs_pt_wrote(const struct afs_inode *inode)
{
	return __atomic_load_n(&inode->pt.wrote, __ATOMIC_RELAXED);
}

/**
 * afs_pt_reply_begin() - The calling thread is about to answer an OPEN or
 * CREATE with @fh: with @backing_id > 0, its writev (devio.c) sets
 * FOPEN_PASSTHROUGH and the id.  Pair with afs_pt_reply_end().
 * Context: Serving thread.
 */
void afs_pt_reply_begin(uint64_t fh, int32_t backing_id);

/**
 * afs_pt_reply_end() - The reply went out (or failed).
 * Context: Serving thread, after afs_pt_reply_begin().
 * Return: false if a reply carrying a backing id was not seen: a bug,
 * logged (the kernel then fails that open with EIO).
 */
bool afs_pt_reply_end(void);

/**
 * afs_pt_reply_hook() - devio.c's writev hook, for every reply: patches
 * the one afs_pt_reply_begin() named (afs_pt_patch_open_out()).
 * Context: Serving thread; one thread-local load when nothing is pending.
 */
void afs_pt_reply_hook(struct iovec *iov, int count);

/**
 * afs_pt_patch_open_out() - In a reply @iov[0..@count) as libfuse 3.14
 * writes it (the fuse_out_header, then one argument: fuse_open_out for
 * OPEN, fuse_entry_out and fuse_open_out for CREATE), set
 * FOPEN_PASSTHROUGH and @backing_id in the fuse_open_out whose fh is @fh,
 * and drop the flags the kernel refuses beside it (FOPEN_KEEP_CACHE:
 * outside AFS_FOPEN_PASSTHROUGH_MASK).
 * Context: Pure.
 * Return: true if patched; false for any other reply (an error, another
 * shape or fh).
 */
bool afs_pt_patch_open_out(struct iovec *iov, int count, uint64_t fh,
			   int32_t backing_id);

#endif /* AFS_PASSTHROUGH_H */
