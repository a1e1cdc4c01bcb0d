/* inode.h - the inode table: FUSE node ids <-> backing inodes.
 *
 * Every backing inode the kernel knows of has one struct afs_inode, keyed by
 * its backing filesystem (fsidx, an index into the table's list of backing
 * filesystems seen under SOURCE: SOURCE's own is 0, submounts follow) and its
 * backing inode number.  The entry holds an O_PATH|O_NOFOLLOW fd on the
 * backing inode and two counts:
 *   nlookup  references the kernel holds (each entry reply adds one, FORGET
 *            takes them away);
 *   refs     in-flight requests using the entry right now.
 * The entry is freed, and its fd closed, when both reach zero.
 *
 * Node ids are not pointers: a node id is computed from (fsidx, ino) --
 * bits 48..62 hold fsidx + 1, bits 0..47 the backing inode number -- so a
 * node id the kernel hands back after forgetting it (NFS re-export: LOOKUP
 * of "." or ".." on an old file handle) still names the same backing inode,
 * and afs_itable_reopen() opens it again on filesystems whose handles can
 * be rebuilt from the inode number (fs/fhandle/fhandle.h).
 * Elsewhere it answers -ESTALE.  Inodes that do not
 * fit (inode number >= 2^48, more than 32767 backing filesystems) get a
 * synthetic node id (bit 63 set, from a counter) that is valid only while
 * the entry lives.  The root is always FUSE_ROOT_ID and never freed.
 *
 * Inode numbers shown to the kernel (st_ino) are the backing numbers on
 * SOURCE's own filesystem and (fsidx << 48 | ino) on submounts, so that
 * st_ino is unique across the whole mount (cp -a and tar find hard links by
 * it); see afs_shown_ino().
 *
 * Locking: one mutex (t->lock) guards the hash chains, the counts and the
 * backing filesystem list.  It is never held across a FUSE reply; it is
 * held across the few syscalls that register a new backing filesystem or
 * free an entry (close()).  Entry fields other than the counts and chains
 * are immutable after insertion, so a caller holding a reference reads them
 * without the lock.
 */
#ifndef AFS_INODE_H
#define AFS_INODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "fs/fhandle/fhandle.h"

#define AFS_INO_BITS 48
#define AFS_INO_MASK ((1ULL << AFS_INO_BITS) - 1)
#define AFS_FSIDX_MAX ((1U << 15) - 2) /* fsidx + 1 must fit 15 bits */
#define AFS_NODEID_SYNTH (1ULL << 63)
#define AFS_ROOT_NODEID 1ULL /* FUSE_ROOT_ID */

struct afs_fcache;

/* A regular file's I/O modes while it is open (passthrough.h): the opens
 * answered in each mode and not yet released, and the backing id the
 * passthrough ones share.  Guarded by the inode's passthrough lock
 * (passthrough.c); writers and wrote are also read __atomic
 * (afs_pt_writing(), afs_pt_wrote()).  An
 * open holds a reference on the inode, so the backing id is closed by the
 * last passthrough open's release, always before the entry is freed. */
struct afs_pt_inode {
	uint32_t passthrough; /* FOPEN_PASSTHROUGH, with or without DIRECT_IO */
	uint32_t writers; /* of those, writable opens doing their own I/O */
	/* opens on aheadfs's path: the kernel's cached mode (neither
	 * DIRECT_IO nor PASSTHROUGH; the kernel refuses passthrough beside
	 * them) and DIRECT_IO alone (served by aheadfs's cache) */
	uint32_t ours;
	int32_t backing_id; /* > 0 while passthrough opens exist, else 0 */
	bool refused; /* the kernel refused this file's backing: never again */
	bool wrote; /* a passthrough writer opened it (sticky) */
	/* the inode's shared read-only fd was last registered with
	 * POSIX_FADV_RANDOM (a file advised random): the next registration
	 * of another open resets it */
	bool fadv_random;
	/* passthrough=resident's last probe of the file (afs_pt_open()):
	 * whether the page cache held it whole at probed_size bytes; taken
	 * again after probed_until (CLOCK_MONOTONIC_COARSE, ns) or at another
	 * size */
	bool probed_resident;
	uint64_t probed_size;
	int64_t probed_until;
};

struct afs_inode {
	uint64_t nodeid; /* immutable */
	uint64_t ino; /* backing st_ino, immutable */
	uint32_t fsidx; /* immutable */
	uint32_t generation; /* backing i_generation (0 if unknown) */
	mode_t type; /* S_IFMT bits, immutable */
	int fd; /* O_PATH|O_NOFOLLOW on the backing inode, owned */
	/* -o opens=none: the daemon's own read-write (else read-only)
	 * descriptor of a regular file, for the requests that come without
	 * an open handle; -1 until the first one (set once, __atomic),
	 * closed with the entry.  io_wr_err: why it is read-only (-errno),
	 * what a write then gets. */
	int io_fd;
	int io_wr_err;
	/* The daemon's own read-only descriptor of a regular file, shared by
	 * plain read-only opens (ops_open.c share_ro()): -1 until the first one
	 * (set once, __atomic), closed with the entry. */
	int ro_fd;
	bool pinned; /* the root: never freed by forget */
	/* a regular file's data path state (fs/data/data.h: its identity,
	 * cache and readahead), a reference set once (__atomic) by the first
	 * request that needs it, released with the entry through
	 * t->release_fc */
	struct afs_fcache *fc;
	/* afs_fcache_changes() when the kernel was last told of a change
	 * behind the mount (__atomic): a different count means its cached
	 * pages and attributes are stale */
	uint64_t changes_told;
	/* afs_fcache_changes() + 1 when the backing answered that the file
	 * has no security.capability, 0 when that is not known (__atomic;
	 * ops_xattr.c) */
	uint64_t nocap;
	struct afs_pt_inode pt; /* passthrough.h */
	uint64_t nlookup; /* protected by table lock */
	uint64_t refs; /* protected by table lock */
	struct afs_inode *next_id; /* by_id chain, table lock */
	struct afs_inode *next_key; /* by_key chain, table lock */
};

/* A backing filesystem under SOURCE (the list only grows). */
struct afs_backing_fs {
	dev_t dev;
	int mount_fd; /* fd on its first directory, for open_by_handle_at() */
	struct afs_fhandle_fs handles; /* how handles are rebuilt (fhandle.h) */
};

struct afs_itable {
	pthread_mutex_t lock;
	struct afs_inode **by_id; /* buckets by node id */
	struct afs_inode **by_key; /* buckets by (fsidx, ino) */
	size_t nbuckets; /* power of two, both arrays */
	size_t count; /* entries, root included */
	uint64_t next_synth; /* next synthetic node id (low bits) */
	struct afs_backing_fs *fs;
	uint32_t nfs, fs_cap;
	/* Called, under t->lock, for an entry's fc when the entry is freed
	 * (the table does not know what it is).  NULL: nothing to release. */
	void (*release_fc)(struct afs_fcache *fc);
};

/**
 * afs_nodeid_encode() - Node id for backing inode @ino on filesystem @fsidx.
 *
 * Context: Pure.
 * Return: The node id, or 0 if (@fsidx, @ino) does not fit the encoding
 * (the caller then needs a synthetic id).
 */
uint64_t afs_nodeid_encode(uint32_t fsidx, uint64_t ino);

/**
 * afs_nodeid_decode() - Inverse of afs_nodeid_encode().
 *
 * Context: Pure.
 * Return: true and (*@fsidx, *@ino) for an encoded node id; false for the
 * root id, synthetic ids and ids that no encoding produces.
 */
bool afs_nodeid_decode(uint64_t nodeid, uint32_t *fsidx, uint64_t *ino);

/**
 * afs_shown_ino() - The st_ino the kernel and programs see for @inode.
 *
 * Context: Pure; @inode's immutable fields only.
 * Return: The backing number on SOURCE's filesystem, (fsidx << 48 | ino) on
 * submounts, the node id for inodes with a synthetic one.
 */
uint64_t afs_shown_ino(const struct afs_inode *inode);

/**
 * afs_shown_dirent_ino() - The d_ino shown for a directory entry with backing
 * number @ino read from a directory on filesystem @fsidx.
 *
 * Context: Pure.
 * Return: As afs_shown_ino() for an inode with a regular node id.
 */
uint64_t afs_shown_dirent_ino(uint32_t fsidx, uint64_t ino);

/**
 * afs_itable_init() - Empty table.
 *
 * Context: Process context, may allocate.
 * Return: 0 or -ENOMEM.
 */
int afs_itable_init(struct afs_itable *t);

/**
 * afs_itable_destroy() - Free every entry (closing its fd) and the table.
 *
 * Context: No other thread uses @t any more.
 */
void afs_itable_destroy(struct afs_itable *t);

/**
 * afs_itable_fsidx() - Index of the backing filesystem @dev, registering it
 * (with a dup of @fd as its mount fd) the first time it is seen.
 * @fd: An O_PATH fd on some inode of @dev.
 *
 * Context: Takes t->lock; may probe @fd with fstatfs()/name_to_handle_at().
 * Return: 0 and *@fsidx, -EMFILE/-ENOMEM, or -EOVERFLOW past AFS_FSIDX_MAX
 * filesystems (the caller then uses synthetic ids: fsidx UINT32_MAX).
 */
int afs_itable_fsidx(struct afs_itable *t, dev_t dev, int fd, uint32_t *fsidx);

/**
 * afs_itable_set_root() - Insert the root entry (node id FUSE_ROOT_ID).
 * @fd: O_PATH fd on SOURCE; the table owns it from now on (also on error).
 *
 * Context: Before any other insertion.
 * Return: 0, -EEXIST if a root is already there, or -ENOMEM.
 */
int afs_itable_set_root(struct afs_itable *t, uint32_t fsidx, uint64_t ino,
			int fd, mode_t type, uint32_t generation);

/**
 * afs_itable_insert() - Find or add the entry for (@fsidx, @ino) and take a
 * reference on it, plus one kernel lookup if @lookup.
 * @fd: O_PATH fd on the inode; the table owns it from now on (closed at
 *      once when the entry already exists, or on error).
 * @fsidx: UINT32_MAX for "no encodable fsidx": the entry gets a synthetic id.
 *
 * Context: Takes t->lock; may allocate.
 * Return: The entry (release it with afs_itable_put()), or NULL on ENOMEM.
 */
struct afs_inode *afs_itable_insert(struct afs_itable *t, uint32_t fsidx,
				    uint64_t ino, int fd, mode_t type,
				    uint32_t generation, bool lookup);

/**
 * afs_itable_find() - Take a reference on the entry for (@fsidx, @ino), plus
 * one kernel lookup if @lookup, when there is one.
 *
 * Context: Takes t->lock.
 * Return: The entry, or NULL (then afs_itable_insert() adds it).
 */
struct afs_inode *afs_itable_find(struct afs_itable *t, uint32_t fsidx,
				  uint64_t ino, bool lookup);

/**
 * afs_itable_get() - Take a reference on the entry for @nodeid.
 *
 * Context: Takes t->lock.
 * Return: The entry, or NULL if the table has none (forgotten or never given
 * out; see afs_itable_reopen()).
 */
struct afs_inode *afs_itable_get(struct afs_itable *t, uint64_t nodeid);

/**
 * afs_itable_reopen() - afs_itable_get(), and when the entry is gone, open
 * the backing inode again from the node id alone (open_by_handle_at()).
 *
 * Context: Takes t->lock; may do backing syscalls without it.
 * Return: 0 and *@out with a reference; -ESTALE if the node id cannot be
 * reopened (synthetic, no handle support, inode gone), or -ENOMEM/-EMFILE.
 */
int afs_itable_reopen(struct afs_itable *t, uint64_t nodeid,
		      struct afs_inode **out);

/**
 * afs_itable_lookup_ref() - Count one more kernel lookup on @inode, which
 * the caller holds a reference on (entry replies for "." and for nodes the
 * caller already holds).
 *
 * Context: Takes t->lock.
 */
void afs_itable_lookup_ref(struct afs_itable *t, struct afs_inode *inode);

/**
 * afs_itable_put() - Drop a reference from afs_itable_get()/_insert()/
 * _reopen().  Frees the entry when nothing refers to it any more.
 *
 * Context: Takes t->lock; may close() an fd under it.
 */
void afs_itable_put(struct afs_itable *t, struct afs_inode *inode);

/**
 * afs_itable_forget() - The kernel drops @nlookup lookups of @nodeid.
 *
 * Context: Takes t->lock; may close() an fd under it.
 * Return: 0, or -ENOENT if @nodeid is unknown or @nlookup exceeds its count
 * (the count is then clamped to zero: a kernel/daemon mismatch is logged
 * by the caller, never fatal).
 */
int afs_itable_forget(struct afs_itable *t, uint64_t nodeid, uint64_t nlookup);

/**
 * afs_itable_count() - Entries in the table, root included.
 *
 * Context: Takes t->lock.
 */
size_t afs_itable_count(struct afs_itable *t);

/**
 * afs_itable_buckets() - Current hash size (tests check it shrinks back).
 *
 * Context: Takes t->lock.
 */
size_t afs_itable_buckets(struct afs_itable *t);

/**
 * afs_itable_backing() - Backing filesystem @fsidx.
 *
 * Context: Takes t->lock.  The returned copy stays valid: entries of the
 * list never change once registered.
 * Return: 0, or -ENOENT for an unknown index.
 */
int afs_itable_backing(struct afs_itable *t, uint32_t fsidx,
		       struct afs_backing_fs *out);

/**
 * afs_itable_fsidx_of() - Index of the backing filesystem @dev if it was
 * seen under SOURCE (never registers one).
 * Context: Takes t->lock.
 * Return: 0 and *@fsidx, or -ENOENT.
 */
int afs_itable_fsidx_of(struct afs_itable *t, dev_t dev, uint32_t *fsidx);

/**
 * afs_itable_nodeids() - The node ids of every entry now, root included,
 * in a new array (free() it): for telling the kernel that everything may
 * be stale, outside the lock.
 * Context: Takes t->lock; allocates outside it.
 * Return: 0 and *@ids, *@n; or -ENOMEM.
 */
int afs_itable_nodeids(struct afs_itable *t, uint64_t **ids, size_t *n);

/**
 * afs_inode_fc() - @inode's cache state, or NULL while it has none.
 * Context: Any thread holding a reference on @inode; one acquire load.
 */
static inline struct afs_fcache *afs_inode_fc(const struct afs_inode *inode)
{
	return __atomic_load_n(&inode->fc, __ATOMIC_ACQUIRE);
}

#endif /* AFS_INODE_H */
