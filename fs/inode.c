/* inode.c - the inode table (see inode.h for the node id scheme and locking).
 *
 * Two chained hashes over the same entries: by node id (requests from the
 * kernel) and by (fsidx, ino) (results of backing lookups).  Both use the
 * same bucket count, which doubles when the table holds more entries than
 * buckets and halves when it holds fewer than an eighth, so a million
 * lookups and forgets leave it as small as they found it.
 */
#include "fs/inode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define AFS_MIN_BUCKETS 64
#define EXT4_MAGIC 0xEF53
#define XFS_MAGIC 0x58465342
#define FILEID_INO32_GEN 1 /* {u32 ino, u32 gen}: ext4, small xfs */
#define XFS_FILEID_INO64_GEN 0x81 /* {u64 ino, u32 gen}, packed: xfs */

/* (ino, generation) from a handle of one of the two layouts above. */
static bool handle_parse(const struct file_handle *fh, uint64_t *ino,
			 uint32_t *gen)
{
	const unsigned char *b = fh->f_handle;
	uint32_t i32;

	if (fh->handle_type == FILEID_INO32_GEN && fh->handle_bytes == 8) {
		memcpy(&i32, b, 4);
		memcpy(gen, b + 4, 4);
		*ino = i32;
		return true;
	}
	if (fh->handle_type == XFS_FILEID_INO64_GEN && fh->handle_bytes == 12) {
		memcpy(ino, b, 8);
		memcpy(gen, b + 8, 4);
		return true;
	}
	return false;
}

/* The inverse; false if @ino does not fit @type. */
static bool handle_build(struct file_handle *fh, int type, uint64_t ino,
			 uint32_t gen)
{
	unsigned char *b = fh->f_handle;
	uint32_t i32 = (uint32_t)ino;

	fh->handle_type = type;
	if (type == FILEID_INO32_GEN) {
		if (ino > UINT32_MAX)
			return false;
		fh->handle_bytes = 8;
		memcpy(b, &i32, 4);
		memcpy(b + 4, &gen, 4);
		return true;
	}
	fh->handle_bytes = 12;
	memcpy(b, &ino, 8);
	memcpy(b + 8, &gen, 4);
	return true;
}

uint64_t afs_nodeid_encode(uint32_t fsidx, uint64_t ino)
{
	if (fsidx > AFS_FSIDX_MAX || ino > AFS_INO_MASK)
		return 0;
	return ((uint64_t)(fsidx + 1) << AFS_INO_BITS) | ino;
}

bool afs_nodeid_decode(uint64_t nodeid, uint32_t *fsidx, uint64_t *ino)
{
	uint64_t hi = nodeid >> AFS_INO_BITS;

	if (nodeid & AFS_NODEID_SYNTH || hi == 0)
		return false;
	*fsidx = (uint32_t)hi - 1;
	*ino = nodeid & AFS_INO_MASK;
	return true;
}

uint64_t afs_shown_dirent_ino(uint32_t fsidx, uint64_t ino)
{
	if (fsidx == 0)
		return ino;
	return ((uint64_t)fsidx << AFS_INO_BITS) | (ino & AFS_INO_MASK);
}

uint64_t afs_shown_ino(const struct afs_inode *inode)
{
	/* Synthetic ids have bit 63 set, which no shown backing number has
	 * (those are below 2^63), so they cannot collide. */
	if (inode->nodeid & AFS_NODEID_SYNTH)
		return inode->nodeid;
	return afs_shown_dirent_ino(inode->fsidx, inode->ino);
}

static size_t mix(uint64_t x)
{
	/* splitmix64 finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (size_t)x;
}

static size_t id_bucket(const struct afs_itable *t, uint64_t nodeid)
{
	return mix(nodeid) & (t->nbuckets - 1);
}

static size_t key_bucket(const struct afs_itable *t, uint32_t fsidx,
			 uint64_t ino)
{
	return mix(ino ^ ((uint64_t)fsidx << 49) ^ 0x9e3779b97f4a7c15ULL) &
	       (t->nbuckets - 1);
}

int afs_itable_init(struct afs_itable *t)
{
	int rc;

	memset(t, 0, sizeof(*t));
	t->nbuckets = AFS_MIN_BUCKETS;
	t->by_id = calloc(t->nbuckets, sizeof(*t->by_id));
	t->by_key = calloc(t->nbuckets, sizeof(*t->by_key));
	if (!t->by_id || !t->by_key) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = -pthread_mutex_init(&t->lock, NULL);
	if (rc)
		goto out_free;
	return 0;

out_free:
	free(t->by_id);
	free(t->by_key);
	return rc;
}

void afs_itable_destroy(struct afs_itable *t)
{
	for (size_t b = 0; b < t->nbuckets; b++) {
		struct afs_inode *i = t->by_id[b], *next;

		for (; i; i = next) {
			next = i->next_id;
			if (i->fc && t->release_fc)
				t->release_fc(i->fc);
			if (i->fd >= 0)
				close(i->fd);
			pthread_mutex_destroy(&i->attr_lock);
			free(i);
		}
	}
	for (uint32_t f = 0; f < t->nfs; f++)
		close(t->fs[f].mount_fd);
	free(t->fs);
	free(t->by_id);
	free(t->by_key);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

/* Rehash into @n buckets; on allocation failure keep the old size (a hash
 * that is too small or too large is slow, not wrong). */
static void resize_locked(struct afs_itable *t, size_t n)
{
	struct afs_inode **id = calloc(n, sizeof(*id));
	struct afs_inode **key = calloc(n, sizeof(*key));
	size_t old = t->nbuckets;
	struct afs_inode **old_id = t->by_id;

	if (!id || !key) {
		free(id);
		free(key);
		return;
	}
	free(t->by_key);
	t->by_id = id;
	t->by_key = key;
	t->nbuckets = n;
	for (size_t b = 0; b < old; b++) {
		struct afs_inode *i = old_id[b], *next;

		for (; i; i = next) {
			size_t bi = id_bucket(t, i->nodeid);
			size_t bk = key_bucket(t, i->fsidx, i->ino);

			next = i->next_id;
			i->next_id = t->by_id[bi];
			t->by_id[bi] = i;
			i->next_key = t->by_key[bk];
			t->by_key[bk] = i;
		}
	}
	free(old_id);
}

static struct afs_inode *find_id_locked(struct afs_itable *t, uint64_t nodeid)
{
	struct afs_inode *i = t->by_id[id_bucket(t, nodeid)];

	while (i && i->nodeid != nodeid)
		i = i->next_id;
	return i;
}

static struct afs_inode *find_key_locked(struct afs_itable *t, uint32_t fsidx,
					 uint64_t ino)
{
	struct afs_inode *i = t->by_key[key_bucket(t, fsidx, ino)];

	while (i && (i->fsidx != fsidx || i->ino != ino))
		i = i->next_key;
	return i;
}

static void link_locked(struct afs_itable *t, struct afs_inode *i)
{
	size_t bi, bk;

	if (t->count + 1 > t->nbuckets)
		resize_locked(t, t->nbuckets * 2);
	bi = id_bucket(t, i->nodeid);
	bk = key_bucket(t, i->fsidx, i->ino);
	i->next_id = t->by_id[bi];
	t->by_id[bi] = i;
	i->next_key = t->by_key[bk];
	t->by_key[bk] = i;
	t->count++;
}

static void unlink_free_locked(struct afs_itable *t, struct afs_inode *i)
{
	struct afs_inode **p = &t->by_id[id_bucket(t, i->nodeid)];

	while (*p != i)
		p = &(*p)->next_id;
	*p = i->next_id;
	p = &t->by_key[key_bucket(t, i->fsidx, i->ino)];
	while (*p != i)
		p = &(*p)->next_key;
	*p = i->next_key;
	t->count--;
	/* The cache's release may cancel queued readahead: the lock order is
	 * the table's lock first, the cache's and ra's locks after. */
	if (i->fc && t->release_fc)
		t->release_fc(i->fc);
	if (i->fd >= 0)
		close(i->fd);
	pthread_mutex_destroy(&i->attr_lock);
	free(i);
	if (t->nbuckets > AFS_MIN_BUCKETS && t->count < t->nbuckets / 8)
		resize_locked(t, t->nbuckets / 2);
}

static void maybe_free_locked(struct afs_itable *t, struct afs_inode *i)
{
	if (!i->pinned && i->nlookup == 0 && i->refs == 0)
		unlink_free_locked(t, i);
}

/*
 * XFS checks the generation of a handle, so a handle rebuilt from the inode
 * number needs the inode's current generation: XFS_IOC_BULKSTAT (v5, Linux
 * 5.4+, CAP_SYS_ADMIN) reports it from the inode number alone.  Only the
 * request header's layout and two fields of the first record are used
 * (bs_ino at offset 0, bs_gen at 64: the record starts with eight 64-bit
 * fields), so the records' full size need not be known here.
 */
struct xfs_bulk_ireq_hdr {
	uint64_t ino;
	uint32_t flags;
	uint32_t icount;
	uint32_t ocount;
	uint32_t agno;
	uint64_t reserved[5];
};
#define XFS_IOC_BULKSTAT_V5 _IOR('X', 127, struct xfs_bulk_ireq_hdr)

static int xfs_generation(int mount_fd, uint64_t ino, uint32_t *gen)
{
	union {
		struct xfs_bulk_ireq_hdr hdr;
		unsigned char bytes[sizeof(struct xfs_bulk_ireq_hdr) + 1024];
	} req;
	const unsigned char *rec = req.bytes + sizeof(req.hdr);
	uint64_t got;

	memset(&req, 0, sizeof(req));
	req.hdr.ino = ino; /* first inode at or after this number */
	req.hdr.icount = 1;
	if (ioctl(mount_fd, XFS_IOC_BULKSTAT_V5, &req) < 0)
		return -errno;
	memcpy(&got, rec, sizeof(got));
	if (req.hdr.ocount != 1 || got != ino)
		return -ESTALE; /* no such inode (any more) */
	memcpy(gen, rec + 64, sizeof(*gen));
	return 0;
}

/* The handle type (FILEID_INO32_GEN or XFS_FILEID_INO64_GEN) when handles on
 * this filesystem can be rebuilt from the inode number alone, else 0;
 * *@gen_lookup if the generation must be looked up for that (XFS). */
static int probe_handle_type(int fd, bool *gen_lookup)
{
	struct statfs sfs;
	struct {
		struct file_handle fh;
		unsigned char bytes[MAX_HANDLE_SZ];
	} h;
	uint64_t ino;
	uint32_t gen;
	int mnt_id;

	if (fstatfs(fd, &sfs) < 0)
		return 0;
	if (sfs.f_type != EXT4_MAGIC && sfs.f_type != XFS_MAGIC)
		return 0;
	*gen_lookup = sfs.f_type == XFS_MAGIC;
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", &h.fh, &mnt_id, AT_EMPTY_PATH) < 0 ||
	    !handle_parse(&h.fh, &ino, &gen))
		return 0;
	return h.fh.handle_type;
}

uint32_t afs_backing_generation(int fd)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[MAX_HANDLE_SZ];
	} h;
	uint32_t gen;
	uint64_t ino;
	int mnt_id;

	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", &h.fh, &mnt_id, AT_EMPTY_PATH) < 0 ||
	    !handle_parse(&h.fh, &ino, &gen))
		return 0;
	return gen;
}

int afs_itable_fsidx(struct afs_itable *t, dev_t dev, int fd, uint32_t *fsidx)
{
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	for (uint32_t f = 0; f < t->nfs; f++) {
		if (t->fs[f].dev == dev) {
			*fsidx = f;
			goto out_unlock;
		}
	}
	if (t->nfs > AFS_FSIDX_MAX) {
		rc = -EOVERFLOW;
		goto out_unlock;
	}
	if (t->nfs == t->fs_cap) {
		uint32_t cap = t->fs_cap ? t->fs_cap * 2 : 4;
		struct afs_backing_fs *n = realloc(t->fs, cap * sizeof(*n));

		if (!n) {
			rc = -ENOMEM;
			goto out_unlock;
		}
		t->fs = n;
		t->fs_cap = cap;
	}
	/* open_by_handle_at() refuses an O_PATH mount fd: open a real one.
	 * The first inode seen on a filesystem is its root directory (the
	 * path enters through it); should it not be a directory, keep the
	 * O_PATH fd and do without handles. */
	char proc[32];
	bool real = true;
	int mfd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	mfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0) {
		real = false;
		mfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	}
	if (mfd < 0) {
		rc = -errno;
		goto out_unlock;
	}
	bool gen_lookup = false;
	int type = real ? probe_handle_type(mfd, &gen_lookup) : 0;

	t->fs[t->nfs] = (struct afs_backing_fs){.dev = dev,
						.mount_fd = mfd,
						.by_handle = type != 0,
						.handle_type = type,
						.gen_lookup = gen_lookup};
	*fsidx = t->nfs++;
out_unlock:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int afs_itable_backing(struct afs_itable *t, uint32_t fsidx,
		       struct afs_backing_fs *out)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&t->lock);
	if (fsidx < t->nfs) {
		*out = t->fs[fsidx];
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

static struct afs_inode *new_inode(uint32_t fsidx, uint64_t ino, int fd,
				   mode_t type, uint32_t generation)
{
	struct afs_inode *i = calloc(1, sizeof(*i));

	if (!i)
		return NULL;
	i->fsidx = fsidx;
	i->ino = ino;
	i->fd = fd;
	i->type = type & S_IFMT;
	i->generation = generation;
	if (pthread_mutex_init(&i->attr_lock, NULL)) {
		free(i);
		return NULL;
	}
	return i;
}

int afs_itable_set_root(struct afs_itable *t, uint32_t fsidx, uint64_t ino,
			int fd, mode_t type, uint32_t generation)
{
	struct afs_inode *i;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	if (find_id_locked(t, AFS_ROOT_NODEID)) {
		rc = -EEXIST;
		goto out_close;
	}
	i = new_inode(fsidx, ino, fd, type, generation);
	if (!i) {
		rc = -ENOMEM;
		goto out_close;
	}
	i->nodeid = AFS_ROOT_NODEID;
	i->pinned = true;
	i->nlookup = 1;
	link_locked(t, i);
	pthread_mutex_unlock(&t->lock);
	return 0;

out_close:
	pthread_mutex_unlock(&t->lock);
	close(fd);
	return rc;
}

struct afs_inode *afs_itable_insert(struct afs_itable *t, uint32_t fsidx,
				    uint64_t ino, int fd, mode_t type,
				    uint32_t generation, bool lookup)
{
	struct afs_inode *i;
	uint64_t id = 0;

	pthread_mutex_lock(&t->lock);
	i = find_key_locked(t, fsidx, ino);
	if (i) {
		close(fd);
		goto out_ref;
	}
	if (fsidx != UINT32_MAX)
		id = afs_nodeid_encode(fsidx, ino);
	if (!id)
		id = AFS_NODEID_SYNTH | t->next_synth++;
	i = new_inode(fsidx, ino, fd, type, generation);
	if (!i) {
		pthread_mutex_unlock(&t->lock);
		close(fd);
		return NULL;
	}
	i->nodeid = id;
	link_locked(t, i);
out_ref:
	i->refs++;
	if (lookup)
		i->nlookup++;
	pthread_mutex_unlock(&t->lock);
	return i;
}

struct afs_inode *afs_itable_find(struct afs_itable *t, uint32_t fsidx,
				  uint64_t ino, bool lookup)
{
	struct afs_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_key_locked(t, fsidx, ino);
	if (i) {
		i->refs++;
		if (lookup)
			i->nlookup++;
	}
	pthread_mutex_unlock(&t->lock);
	return i;
}

struct afs_inode *afs_itable_get(struct afs_itable *t, uint64_t nodeid)
{
	struct afs_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_id_locked(t, nodeid);
	if (i)
		i->refs++;
	pthread_mutex_unlock(&t->lock);
	return i;
}

int afs_itable_reopen(struct afs_itable *t, uint64_t nodeid,
		      struct afs_inode **out)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[16];
	} h;
	struct afs_backing_fs bfs;
	uint32_t fsidx, gen = 0;
	struct stat st;
	uint64_t ino;
	int fd;

	*out = afs_itable_get(t, nodeid);
	if (*out)
		return 0;
	if (!afs_nodeid_decode(nodeid, &fsidx, &ino))
		return -ESTALE;
	if (afs_itable_backing(t, fsidx, &bfs) || !bfs.by_handle)
		return -ESTALE;
	/* Generation 0: ext4 then skips its generation check.  XFS checks
	 * it: ask XFS for the current one.  Either way the kernel compares
	 * the generation we return with the one in its own handle, so a
	 * reused inode number is still refused as stale. */
	if (bfs.gen_lookup && xfs_generation(bfs.mount_fd, ino, &gen))
		return -ESTALE;
	if (!handle_build(&h.fh, bfs.handle_type, ino, gen))
		return -ESTALE;
	fd = open_by_handle_at(bfs.mount_fd, &h.fh,
			       O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == EMFILE || errno == ENFILE ? -errno : -ESTALE;
	if (fstat(fd, &st) < 0 || st.st_dev != bfs.dev || st.st_ino != ino) {
		close(fd);
		return -ESTALE;
	}
	*out = afs_itable_insert(t, fsidx, ino, fd, st.st_mode,
				 afs_backing_generation(fd), false);
	return *out ? 0 : -ENOMEM;
}

void afs_inode_note_attr(struct afs_inode *inode, const struct stat *st)
{
	pthread_mutex_lock(&inode->attr_lock);
	inode->attr_known = true;
	inode->written = false;
	inode->attr_size = st->st_size;
	inode->attr_mtime = st->st_mtim;
	inode->attr_ctime = st->st_ctim;
	pthread_mutex_unlock(&inode->attr_lock);
}

void afs_inode_note_write(struct afs_inode *inode)
{
	pthread_mutex_lock(&inode->attr_lock);
	inode->written = true;
	pthread_mutex_unlock(&inode->attr_lock);
}

static bool ts_equal(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool afs_inode_changed_behind(struct afs_inode *inode, const struct stat *st)
{
	bool changed;

	pthread_mutex_lock(&inode->attr_lock);
	changed = inode->attr_known && !inode->written &&
		  (inode->attr_size != st->st_size ||
		   !ts_equal(inode->attr_mtime, st->st_mtim) ||
		   !ts_equal(inode->attr_ctime, st->st_ctim));
	inode->attr_known = true;
	inode->written = false;
	inode->attr_size = st->st_size;
	inode->attr_mtime = st->st_mtim;
	inode->attr_ctime = st->st_ctim;
	pthread_mutex_unlock(&inode->attr_lock);
	return changed;
}

void afs_itable_lookup_ref(struct afs_itable *t, struct afs_inode *inode)
{
	pthread_mutex_lock(&t->lock);
	inode->nlookup++;
	pthread_mutex_unlock(&t->lock);
}

void afs_itable_put(struct afs_itable *t, struct afs_inode *inode)
{
	pthread_mutex_lock(&t->lock);
	inode->refs--;
	maybe_free_locked(t, inode);
	pthread_mutex_unlock(&t->lock);
}

int afs_itable_forget(struct afs_itable *t, uint64_t nodeid, uint64_t nlookup)
{
	struct afs_inode *i;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	i = find_id_locked(t, nodeid);
	if (!i) {
		rc = -ENOENT;
		goto out_unlock;
	}
	if (nlookup > i->nlookup) {
		rc = -ENOENT;
		nlookup = i->nlookup;
	}
	i->nlookup -= nlookup;
	maybe_free_locked(t, i);
out_unlock:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

size_t afs_itable_count(struct afs_itable *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}

size_t afs_itable_buckets(struct afs_itable *t)
{
	size_t n;

	pthread_mutex_lock(&t->lock);
	n = t->nbuckets;
	pthread_mutex_unlock(&t->lock);
	return n;
}
