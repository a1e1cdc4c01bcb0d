/* inode.c - the inode table (see inode.h for the node id scheme and locking).
 *
 * Two chained hashes over the same entries: by node id (requests from the
 * kernel) and by (fsidx, ino) (results of backing lookups).  Both use the
 * same bucket count, which doubles when the table holds more entries than
 * buckets and halves when it holds fewer than an eighth, so a million
 * lookups and forgets leave it as small as they found it.
 */
#include "inode.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/base/debug.h"
#include "cache/base/locked.h"
#include "fs/data/data.h"

#define AFS_MIN_BUCKETS 64
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
			if (i->io_fd >= 0)
				close(i->io_fd);
			if (i->ro_fd >= 0)
				close(i->ro_fd);
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

	afs_assert_held(&t->lock);
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

	afs_assert_held(&t->lock);
	while (i && i->nodeid != nodeid)
		i = i->next_id;
	return i;
}

static struct afs_inode *find_key_locked(struct afs_itable *t, uint32_t fsidx,
					 uint64_t ino)
{
	struct afs_inode *i = t->by_key[key_bucket(t, fsidx, ino)];

	afs_assert_held(&t->lock);
	while (i && (i->fsidx != fsidx || i->ino != ino))
		i = i->next_key;
	return i;
}

static void link_locked(struct afs_itable *t, struct afs_inode *i)
{
	size_t bi, bk;

	afs_assert_held(&t->lock);
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

	afs_assert_held(&t->lock);
	while (*p != i)
		p = &(*p)->next_id;
	*p = i->next_id;
	p = &t->by_key[key_bucket(t, i->fsidx, i->ino)];
	while (*p != i)
		p = &(*p)->next_key;
	*p = i->next_key;
	t->count--;
	/* Every open holds a reference: the last passthrough open's release
	 * closed the backing id (passthrough.c). */
	assert(!i->pt.backing_id && !i->pt.passthrough);
	/* The cache's release may cancel queued readahead: the lock order is
	 * the table's lock first, the cache's and ra's locks after. */
	if (i->fc && t->release_fc)
		t->release_fc(i->fc);
	if (i->fd >= 0)
		close(i->fd);
	if (i->io_fd >= 0)
		close(i->io_fd);
	if (i->ro_fd >= 0)
		close(i->ro_fd);
	free(i);
	if (t->nbuckets > AFS_MIN_BUCKETS && t->count < t->nbuckets / 8)
		resize_locked(t, t->nbuckets / 2);
}

static void maybe_free_locked(struct afs_itable *t, struct afs_inode *i)
{
	afs_assert_held(&t->lock);
	if (!i->pinned && i->nlookup == 0 && i->refs == 0)
		unlink_free_locked(t, i);
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
	struct afs_fhandle_fs hfs = {0};

	if (real)
		hfs = afs_fhandle_probe(mfd);
	t->fs[t->nfs] = (struct afs_backing_fs){
		.dev = dev, .mount_fd = mfd, .handles = hfs};
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
	i->io_fd = -1;
	i->ro_fd = -1;
	i->type = type & S_IFMT;
	i->generation = generation;
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
	struct afs_backing_fs bfs;
	uint32_t fsidx;
	struct stat st;
	uint64_t ino;
	int fd;

	*out = afs_itable_get(t, nodeid);
	if (*out)
		return 0;
	if (!afs_nodeid_decode(nodeid, &fsidx, &ino))
		return -ESTALE;
	if (afs_itable_backing(t, fsidx, &bfs))
		return -ESTALE;
	fd = afs_fhandle_open(bfs.mount_fd, &bfs.handles, ino,
			      O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || st.st_dev != bfs.dev || st.st_ino != ino) {
		close(fd);
		return -ESTALE;
	}
	*out = afs_itable_insert(t, fsidx, ino, fd, st.st_mode,
				 afs_fhandle_generation(fd), false);
	return *out ? 0 : -ENOMEM;
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

int afs_itable_fsidx_of(struct afs_itable *t, dev_t dev, uint32_t *fsidx)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&t->lock);
	for (uint32_t f = 0; f < t->nfs; f++) {
		if (t->fs[f].dev == dev) {
			*fsidx = f;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int afs_itable_nodeids(struct afs_itable *t, uint64_t **ids, size_t *n)
{
	uint64_t *v = afs_alloc_locked(&t->lock, &t->count, sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t b = 0; b < t->nbuckets; b++)
		for (struct afs_inode *i = t->by_id[b]; i; i = i->next_id)
			v[k++] = i->nodeid;
	pthread_mutex_unlock(&t->lock);
	*ids = v;
	*n = k;
	return 0;
}
