/* file.c - the data path's files: the table of struct afs_fcache by key,
 * the idle LRU, each file's identity and its coherency hooks; see file.h.
 *
 * The table is a chained hash guarded by a->files_lock, which also guards
 * every reference count and the idle LRU, so a lookup never finds a file
 * on its way out: whoever frees a file (the last put of a file with
 * nothing cached, the trim of the idle LRU) unlinks it under the lock,
 * then frees it outside.  The bucket count doubles when the table holds
 * more files than buckets.
 *
 * The last put of a file with something cached parks it in two steps: its
 * raf is detached under the lock and closed outside it (ra_file_put()
 * sleeps), then the file goes onto the LRU if nobody revived it meanwhile.
 * A parked file not yet on the LRU is in the table and can be revived,
 * but nothing frees it.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data_internal.h"
#include "cache/base/count.h"
#include "cache/base/debug.h"
#include "cache/base/locked.h"

static size_t key_bucket(const struct afs_data *a, const struct afs_file_key *k)
{
	uint64_t x =
		k->ino ^ ((uint64_t)k->dev << 40) ^ ((uint64_t)k->gen << 20);

	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return (size_t)x & (a->nbuckets - 1);
}

static bool key_equal(const struct afs_file_key *a,
		      const struct afs_file_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->gen == b->gen;
}

/* Double the buckets (best effort: a failed allocation keeps the table). */
static void grow_locked(struct afs_data *a)
{
	size_t n = a->nbuckets * 2, old = a->nbuckets;
	struct afs_fcache **b = calloc(n, sizeof(*b)), **ob = a->files;

	afs_assert_held(&a->files_lock);
	if (!b)
		return;
	a->files = b;
	a->nbuckets = n;
	for (size_t i = 0; i < old; i++) {
		struct afs_fcache *fc = ob[i], *next;

		for (; fc; fc = next) {
			size_t k = key_bucket(a, &fc->key);

			next = fc->next;
			fc->next = b[k];
			b[k] = fc;
		}
	}
	free(ob);
}

static void identity_set_locked(struct afs_fcache *fc, const struct stat *st)
{
	afs_assert_held(&fc->lock);
	fc->mtime = st->st_mtim;
	fc->ctime = st->st_ctim;
	__atomic_store_n(&fc->size, (uint64_t)st->st_size, __ATOMIC_RELEASE);
}

static bool ts_equal(struct timespec x, struct timespec y)
{
	return x.tv_sec == y.tv_sec && x.tv_nsec == y.tv_nsec;
}

static struct afs_fcache *fcache_new(struct afs_data *a,
				     const struct afs_file_key *key,
				     const struct stat *st)
{
	struct afs_fcache *fc = calloc(1, sizeof(*fc));

	if (!fc)
		return NULL;
	if (pthread_mutex_init(&fc->lock, NULL))
		goto out_free;
	if (cache_mapping_create(a->cache, &fc->map))
		goto out_lock;
	fc->a = a;
	fc->key = *key;
	fc->direct_fd = -1;
	/* Not yet shared, but the rule is the rule (debug builds check
	 * it): uncontended, once per file. */
	pthread_mutex_lock(&fc->lock);
	identity_set_locked(fc, st);
	pthread_mutex_unlock(&fc->lock);
	ra_state_init(&fc->ra);
	fc->refs = 1;
	return fc;

out_lock:
	pthread_mutex_destroy(&fc->lock);
out_free:
	free(fc);
	return NULL;
}

static void fcache_free(struct afs_fcache *fc)
{
	int dfd = afs_fcache_direct_take(fc);

	if (dfd >= 0)
		close(dfd);
	cache_thread_online();
	if (fc->raf)
		ra_file_put(fc->raf);
	cache_mapping_put(fc->map);
	ra_state_destroy(&fc->ra);
	pthread_mutex_destroy(&fc->lock);
	free(fc);
}

unsigned int afs_data_idle_max(const struct afs_data *a)
{
	return a->cfg.idle_files ? a->cfg.idle_files : AFS_IDLE_FILES_DEFAULT;
}

static void idle_unlink_locked(struct afs_data *a, struct afs_fcache *fc)
{
	afs_assert_held(&a->files_lock);
	if (fc->idle_prev)
		fc->idle_prev->idle_next = fc->idle_next;
	else
		a->idle_head = fc->idle_next;
	if (fc->idle_next)
		fc->idle_next->idle_prev = fc->idle_prev;
	else
		a->idle_tail = fc->idle_prev;
	fc->idle_prev = fc->idle_next = NULL;
	fc->idle = false;
	__atomic_store_n(&a->nidle, a->nidle - 1, __ATOMIC_RELAXED);
}

/* Take a reference under files_lock.  An idle file (no reference left)
 * leaves the idle LRU first: the LRU holds only files no one references,
 * so that trimming it never frees a file someone holds, and the last put
 * parks a file there once. */
static void ref_locked(struct afs_data *a, struct afs_fcache *fc)
{
	afs_assert_held(&a->files_lock);
	if (!fc->refs++ && fc->idle)
		idle_unlink_locked(a, fc);
}

static void idle_push_locked(struct afs_data *a, struct afs_fcache *fc)
{
	afs_assert_held(&a->files_lock);
	fc->idle = true;
	fc->idle_prev = NULL;
	fc->idle_next = a->idle_head;
	if (a->idle_head)
		a->idle_head->idle_prev = fc;
	else
		a->idle_tail = fc;
	a->idle_head = fc;
	__atomic_store_n(&a->nidle, a->nidle + 1, __ATOMIC_RELAXED);
}

static void table_unlink_locked(struct afs_data *a, struct afs_fcache *fc)
{
	struct afs_fcache **pp;

	afs_assert_held(&a->files_lock);
	for (pp = &a->files[key_bucket(a, &fc->key)]; *pp != fc;
	     pp = &(*pp)->next)
		;
	*pp = fc->next;
	a->nfiles--;
}

/* Take idle files off the LRU's tail until at most @keep are left; they
 * leave the table and come back chained by ->next, to be freed outside
 * the lock. */
static struct afs_fcache *idle_trim_locked(struct afs_data *a, size_t keep)
{
	struct afs_fcache *victims = NULL;

	afs_assert_held(&a->files_lock);
	while (a->nidle > keep) {
		struct afs_fcache *fc = a->idle_tail;

		idle_unlink_locked(a, fc);
		table_unlink_locked(a, fc);
		fc->next = victims;
		victims = fc;
	}
	return victims;
}

static size_t free_chain(struct afs_fcache *fc)
{
	size_t n = 0;

	while (fc) {
		struct afs_fcache *next = fc->next;

		fcache_free(fc);
		fc = next;
		n++;
	}
	return n;
}

size_t afs_data_drop_idle(struct afs_data *a)
{
	struct afs_fcache *victims;

	afs_assert_no_rcu();
	pthread_mutex_lock(&a->files_lock);
	victims = idle_trim_locked(a, 0);
	pthread_mutex_unlock(&a->files_lock);
	return free_chain(victims);
}

/* A revived file: compare it with the backing now. */
static void revive(struct afs_data *a, struct afs_fcache *fc,
		   const struct stat *st)
{
	afs_count(&a->revived, 1);
	if (afs_fcache_revalidate(fc, st))
		afs_count(&a->revived_changed, 1);
}

int afs_fcache_lookup(struct afs_data *a, const struct afs_file_key *key,
		      const struct stat *st, struct afs_fcache **out)
{
	struct afs_fcache *fc, *fresh = NULL;
	size_t b;

	cache_thread_online();
	for (;;) {
		pthread_mutex_lock(&a->files_lock);
		b = key_bucket(a, key);
		for (fc = a->files[b]; fc; fc = fc->next)
			if (key_equal(&fc->key, key))
				break;
		if (fc) {
			bool revived = !fc->refs;

			ref_locked(a, fc);
			pthread_mutex_unlock(&a->files_lock);
			if (fresh)
				fcache_free(fresh); /* another thread won */
			if (revived)
				revive(a, fc, st);
			*out = fc;
			return 0;
		}
		if (fresh)
			break;
		/* Allocate outside the lock, then look again. */
		pthread_mutex_unlock(&a->files_lock);
		fresh = fcache_new(a, key, st);
		if (!fresh)
			return -ENOMEM;
	}
	fresh->next = a->files[b];
	a->files[b] = fresh;
	if (++a->nfiles > a->nbuckets)
		grow_locked(a);
	pthread_mutex_unlock(&a->files_lock);
	*out = fresh;
	return 0;
}

void afs_fcache_get(struct afs_fcache *fc)
{
	pthread_mutex_lock(&fc->a->files_lock);
	fc->refs++;
	pthread_mutex_unlock(&fc->a->files_lock);
}

/* Worth keeping idle: something cached, data or history. */
static bool has_cached(struct afs_fcache *fc)
{
	struct cache_mapping_stats ms;

	cache_mapping_stats(fc->map, &ms);
	return ms.cached_pages || ms.history_pages;
}

void afs_fcache_put(struct afs_fcache *fc)
{
	struct afs_fcache *victims = NULL;
	struct afs_data *a;
	struct ra_file *raf;
	size_t dropped;
	int dfd;

	afs_assert_no_rcu();
	if (!fc)
		return;
	a = fc->a;
	cache_thread_online();
	pthread_mutex_lock(&a->files_lock);
	if (--fc->refs) {
		pthread_mutex_unlock(&a->files_lock);
		return;
	}
	if (!has_cached(fc)) {
		table_unlink_locked(a, fc);
		pthread_mutex_unlock(&a->files_lock);
		fcache_free(fc);
		return;
	}
	/* Park it: no reference is left, so no reader uses raf. */
	raf = fc->raf;
	__atomic_store_n(&fc->raf, NULL, __ATOMIC_RELAXED);
	dfd = afs_fcache_direct_take(fc); /* a reviver opens its own */
	pthread_mutex_unlock(&a->files_lock);
	ra_file_put(raf); /* its queued windows, its backing fd */
	if (dfd >= 0)
		close(dfd);
	pthread_mutex_lock(&a->files_lock);
	if (!fc->refs && !fc->idle) {
		idle_push_locked(a, fc);
		victims = idle_trim_locked(a, afs_data_idle_max(a));
	}
	pthread_mutex_unlock(&a->files_lock);
	dropped = free_chain(victims);
	if (dropped)
		afs_count(&a->idle_dropped, dropped);
}

static void snap_locked(struct afs_fcache *fc, struct afs_file_snap *s)
{
	afs_assert_held(&fc->a->files_lock);
	s->key = fc->key;
	pthread_mutex_lock(&fc->lock);
	s->size = fc->size;
	s->mtime = fc->mtime;
	s->ctime = fc->ctime;
	pthread_mutex_unlock(&fc->lock);
	cache_mapping_get(fc->map);
	s->map = fc->map;
}

int afs_data_files(struct afs_data *a, struct afs_file_snap **out, size_t *n)
{
	struct afs_file_snap *s;
	size_t k = 0;

	cache_thread_online();
	pthread_mutex_lock(&a->files_lock);
	s = calloc(a->nfiles ? a->nfiles : 1, sizeof(*s));
	if (!s) {
		pthread_mutex_unlock(&a->files_lock);
		return -ENOMEM;
	}
	/* Files in use first, then the idle ones, most recently used first. */
	for (size_t b = 0; b < a->nbuckets; b++)
		for (struct afs_fcache *fc = a->files[b]; fc; fc = fc->next)
			if (!fc->idle)
				snap_locked(fc, &s[k++]);
	for (struct afs_fcache *fc = a->idle_head; fc; fc = fc->idle_next)
		snap_locked(fc, &s[k++]);
	pthread_mutex_unlock(&a->files_lock);
	*out = s;
	*n = k;
	return 0;
}

int afs_fcache_ra(struct afs_fcache *fc, int fd)
{
	struct ra_file *raf;
	int rc = 0;

	if (fc_raf(fc))
		return 0;
	cache_thread_online();
	pthread_mutex_lock(&fc->lock);
	if (!fc->raf) {
		rc = ra_file_open(fc->a->ra, fc->map, fd, fc->key.dev,
				  &fc->size, &raf);
		if (!rc)
			__atomic_store_n(&fc->raf, raf, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&fc->lock);
	return rc;
}

/* Drop @fc's pages and streams and count a change behind the mount when
 * @force or when @st (the backing now) differs from the identity; take @st
 * as the new identity (NULL: unknown, the next comparison takes one). */
/* identity_drop() with @own: the daemon's own changes stood still from
 * the load of *@own (afs_fcache_own_begin()) until now, else -EAGAIN. */
static int identity_drop_own(struct afs_fcache *fc, const struct stat *st,
			     bool force, const uint32_t *own)
{
	struct ra_file *raf;
	bool changed, cut;

	cache_thread_online();
	pthread_mutex_lock(&fc->lock);
	if (own &&
	    (__atomic_load_n(&fc->own_active, __ATOMIC_ACQUIRE) ||
	     __atomic_load_n(&fc->own_began, __ATOMIC_SEQ_CST) != *own)) {
		pthread_mutex_unlock(&fc->lock);
		return -EAGAIN;
	}
	changed = force || !st || (uint64_t)st->st_size != fc->size ||
		  !ts_equal(st->st_mtim, fc->mtime) ||
		  !ts_equal(st->st_ctim, fc->ctime);
	/* Shorter, or no size to tell: it may have been cut. */
	cut = !st || (uint64_t)st->st_size < fc->size;
	if (changed) {
		/* Drop the pages before the new EOF is published, so that a
		 * reader clipped to it finds none of the old bytes. */
		cache_mapping_invalidate(fc->map, 0, UINT64_MAX);
		if (st)
			identity_set_locked(fc, st);
		else
			fc->mtime = fc->ctime =
				(struct timespec){.tv_sec = -1, .tv_nsec = -1};
		__atomic_add_fetch(&fc->changes, 1, __ATOMIC_RELEASE);
	}
	raf = fc->raf;
	pthread_mutex_unlock(&fc->lock);
	if (!changed)
		return 0;
	/* Streams describe the old contents: forget them with the pages. */
	if (raf)
		ra_file_invalidate(raf, cut);
	afs_count(&fc->revalidations, 1);
	afs_count(&fc->a->revalidations, 1);
	return 1;
}

static bool identity_drop(struct afs_fcache *fc, const struct stat *st,
			  bool force)
{
	return identity_drop_own(fc, st, force, NULL) > 0;
}

bool afs_fcache_revalidate(struct afs_fcache *fc, const struct stat *st)
{
	return identity_drop(fc, st, false);
}

/* The watcher's wait for the daemon's own changes: polls of 50 us, and
 * comparisons a change of its own may send back, before it compares
 * regardless. */
#define OWN_POLLS 2000
#define OWN_TRIES 8

void afs_fcache_own_begin(struct afs_fcache *fc)
{
	if (!fc)
		return;
	__atomic_add_fetch(&fc->own_active, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&fc->own_began, 1, __ATOMIC_SEQ_CST);
}

void afs_fcache_own_end(struct afs_fcache *fc)
{
	if (fc)
		__atomic_sub_fetch(&fc->own_active, 1, __ATOMIC_RELEASE);
}

/* Wait until none of the daemon's own changes is in flight; *@own: how
 * many began by then.  False when they never stopped. */
static bool own_quiet(struct afs_fcache *fc, uint32_t *own)
{
	const struct timespec poll = {0, 50 * 1000};

	for (int i = 0; i < OWN_POLLS; i++) {
		if (!__atomic_load_n(&fc->own_active, __ATOMIC_ACQUIRE)) {
			*own = __atomic_load_n(&fc->own_began,
					       __ATOMIC_SEQ_CST);
			return true;
		}
		nanosleep(&poll, NULL);
	}
	return false;
}

/*
 * The identity, taken (fstatat()) and compared with none of the daemon's
 * own changes in flight from before the one to after the other: a change
 * of its own is taken first, and recorded (afs_fcache_changed(),
 * afs_fcache_touched()) after, so seen in between it would be taken for
 * one behind the mount -- the passthrough writer's late events, judged by
 * identity (fs/fuse/ops_watch.c), met the daemon's own truncate that way.
 * A change that begins meanwhile sends the comparison back to wait.
 */
bool afs_fcache_outside(struct afs_fcache *fc, int fd, bool force)
{
	struct stat st;

	for (int tries = 0;; tries++) {
		uint32_t own;
		bool quiet = !force && tries < OWN_TRIES && own_quiet(fc, &own);
		bool known = fd >= 0 &&
			     !fstatat(fd, "", &st,
				      AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		int rc = identity_drop_own(fc, known ? &st : NULL, force,
					   quiet ? &own : NULL);

		if (rc != -EAGAIN)
			return rc > 0;
	}
}

int afs_fcache_find(struct afs_data *a, const struct afs_file_key *key,
		    struct afs_fcache **out)
{
	struct afs_fcache *fc;

	pthread_mutex_lock(&a->files_lock);
	for (fc = a->files[key_bucket(a, key)]; fc; fc = fc->next)
		if (key_equal(&fc->key, key))
			break;
	if (fc)
		ref_locked(a, fc);
	pthread_mutex_unlock(&a->files_lock);
	*out = fc;
	return fc ? 0 : -ENOENT;
}

int afs_data_outside_all(struct afs_data *a, size_t *count)
{
	/* A reference on every file, taken under files_lock (a leaf). */
	struct afs_fcache **all =
		afs_alloc_locked(&a->files_lock, &a->nfiles, sizeof(*all));
	size_t n = 0;

	if (!all)
		return -ENOMEM;
	for (size_t b = 0; b < a->nbuckets; b++)
		for (struct afs_fcache *fc = a->files[b]; fc; fc = fc->next) {
			ref_locked(a, fc);
			all[n++] = fc;
		}
	pthread_mutex_unlock(&a->files_lock);
	for (size_t i = 0; i < n; i++) {
		identity_drop(all[i], NULL, true);
		afs_fcache_put(all[i]);
	}
	free(all);
	*count = n;
	return 0;
}

uint64_t afs_fcache_changes(const struct afs_fcache *fc)
{
	return __atomic_load_n(&fc->changes, __ATOMIC_ACQUIRE);
}

uint64_t afs_fcache_size(const struct afs_fcache *fc)
{
	return __atomic_load_n(&fc->size, __ATOMIC_ACQUIRE);
}

struct cache_mapping *afs_fcache_map(const struct afs_fcache *fc)
{
	return fc->map;
}

struct ra_file *afs_fcache_ra_file(const struct afs_fcache *fc)
{
	return fc_raf(fc);
}

bool afs_fcache_has_ra(const struct afs_fcache *fc)
{
	return fc && fc_raf(fc);
}

void afs_fcache_stats(const struct afs_fcache *fc, struct afs_fcache_stats *out)
{
	out->map = fc->map;
	out->raf = fc_raf(fc);
	out->size = afs_fcache_size(fc);
	out->uncached_reads = afs_count_read(&fc->uncached_reads);
	out->resident_reads = afs_count_read(&fc->resident_reads);
	out->resident_spliced = afs_count_read(&fc->resident_spliced);
	out->random_around = afs_count_read(&fc->random_around);
	out->revalidations = afs_count_read(&fc->revalidations);
}

void afs_fcache_changed(struct afs_fcache *fc, int fd, uint64_t off,
			uint64_t len, bool to_end)
{
	struct ra_file *raf;
	struct stat st;
	uint64_t first, last;
	bool known, cut = false;

	if (!fc || (!len && !to_end))
		return;
	cache_thread_online();
	if (to_end) {
		/* A truncate: from the page holding the lower of the old and
		 * new EOF on (its tail changes either way). */
		uint64_t old = afs_fcache_size(fc);

		cut = off < old;
		first = (off < old ? off : old) >> PAGE_SHIFT;
		last = UINT64_MAX;
	} else {
		first = off >> PAGE_SHIFT;
		last = (off + len - 1) >> PAGE_SHIFT;
	}
	cache_mapping_invalidate(fc->map, first, last);
	known = fstat(fd, &st) == 0;
	pthread_mutex_lock(&fc->lock);
	if (known)
		identity_set_locked(fc, &st);
	else
		/* Without the new identity, nothing cached can be trusted. */
		cache_mapping_invalidate(fc->map, 0, UINT64_MAX);
	raf = fc->raf;
	pthread_mutex_unlock(&fc->lock);
	if (to_end && raf)
		ra_file_invalidate(raf, cut);
}

void afs_fcache_touched(struct afs_fcache *fc, int fd)
{
	struct stat st;

	if (!fc)
		return;
	cache_thread_online();
	if (fstat(fd, &st)) {
		cache_mapping_invalidate(fc->map, 0, UINT64_MAX);
		return;
	}
	pthread_mutex_lock(&fc->lock);
	identity_set_locked(fc, &st);
	pthread_mutex_unlock(&fc->lock);
}

void afs_handle_init(struct afs_handle *h, struct afs_fcache *fc, int fd,
		     bool direct_io)
{
	h->fd = fd;
	h->direct_io = direct_io;
	h->cached = fc && fc_raf(fc);
	ra_state_init(&h->ra);
}

void afs_handle_destroy(struct afs_handle *h)
{
	if (!h->shared_fd)
		close(h->fd);
	ra_state_destroy(&h->ra);
}
