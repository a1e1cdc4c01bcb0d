/* warm.c - warm restart: the state file saved and read back; see warm.h. */
#define _LGPL_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cache/base/count.h"
#include "fs/warm/state.h"
#include "fs/warm/warm.h"

#define PAGE_SHIFT CACHE_PAGE_SHIFT
/* Hole pages probed per file by the checkpoint's walk (4 GiB of file):
 * past it the lower part of a sparse file is not saved. */
#define WALK_PROBES (1u << 20)

struct afs_warm {
	struct afs_data *a;
	struct afs_warm_config cfg;
	char *path;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled by stop */
	bool stop; /* lock */
	bool cut; /* the warm-up was cut short by afs_warm_stop() (the
		   * thread's, read after the join) */
	struct afs_warm_map map; /* loaded at start, the thread's */
	struct afs_warm_counters c; /* counters (cache/base/count.h) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleep @ns, or less when stopped.  Return: true when stopped. */
static bool nap(struct afs_warm *w, uint64_t ns)
{
	uint64_t until = now_ns() + ns;
	struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
			      .tv_nsec = (long)(until % 1000000000u)};
	bool stop;

	pthread_mutex_lock(&w->lock);
	while (!w->stop && now_ns() < until)
		if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) ==
		    ETIMEDOUT)
			break;
	stop = w->stop;
	pthread_mutex_unlock(&w->lock);
	return stop;
}

/* -------------------------------------------------------------------- */
/* Saving                                                                 */

struct ranges {
	struct afs_warm_range *r;
	uint32_t n, cap;
};

static int ranges_push(struct ranges *v, uint64_t first, uint64_t count_)
{
	if (v->n == AFS_WARM_MAX_RANGES)
		return -E2BIG;
	if (v->n == v->cap) {
		uint32_t cap = v->cap ? 2 * v->cap : 64;
		struct afs_warm_range *r = realloc(v->r, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		v->r = r;
		v->cap = cap;
	}
	v->r[v->n].first = first;
	v->r[v->n++].count = count_;
	return 0;
}

/* The runs of present pages (data or history) of [0, @npages) of @m, in
 * ascending order.  Walked down from the end: cache_prev_hole_rcu() skips
 * a run of present pages in one call; holes are stepped over one index at
 * a time, at most WALK_PROBES of them. */
static int hot_ranges(struct cache_mapping *m, uint64_t npages,
		      struct ranges *v)
{
	uint64_t i, probes = 0;

	v->n = 0;
	if (!npages)
		return 0;
	if (npages > CACHE_INDEX_LIMIT)
		npages = CACHE_INDEX_LIMIT;
	i = npages - 1;
	for (;;) {
		uint64_t h;

		rcu_read_lock();
		h = cache_prev_hole_rcu(m, i, i + 1);
		rcu_read_unlock();
		if (h != i) {
			uint64_t start = h == CACHE_NO_HOLE ? 0 : h + 1;

			if (ranges_push(v, start, i - start + 1))
				break; /* the most per file: keep the top */
			if (h == CACHE_NO_HOLE)
				break;
			i = h;
		}
		if (!i || ++probes > WALK_PROBES)
			break;
		i--;
	}
	/* Collected top down: reverse into ascending order. */
	for (uint32_t a = 0, b = v->n ? v->n - 1 : 0; a < b; a++, b--) {
		struct afs_warm_range t = v->r[a];

		v->r[a] = v->r[b];
		v->r[b] = t;
	}
	return 0;
}

/* Write @len bytes to @path atomically: PATH.tmp, fsync, rename, fsync of
 * the directory. */
static int write_atomic(const char *path, const uint8_t *buf, size_t len,
			char *err, size_t errlen)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	size_t done = 0;
	int fd, dfd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "path too long");
		return -ENAMETOOLONG;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot create %s: %s", tmp,
			 strerror(errno));
		return rc;
	}
	if (fchmod(fd, 0600))
		rc = -errno;
	while (!rc && done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "cannot write %s: %s", tmp,
			 strerror(-rc));
		unlink(tmp);
		return rc;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd); /* best effort: the rename is durable with it */
		close(dfd);
	}
	return 0;
}

int afs_warm_save(struct afs_data *a, const char *path,
		  struct afs_warm_counters *counts, char *err, size_t errlen)
{
	struct afs_warm_enc e = {0};
	struct afs_file_snap *s;
	struct ranges v = {0};
	size_t n;
	int rc;

	rc = afs_data_files(a, &s, &n);
	if (rc) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct afs_warm_file f = {
			.dev = (uint64_t)s[i].key.dev,
			.ino = s[i].key.ino,
			.gen = s[i].key.gen,
			.size = s[i].size,
			.mtime_sec = s[i].mtime.tv_sec,
			.mtime_nsec = (uint32_t)s[i].mtime.tv_nsec,
			.ctime_sec = s[i].ctime.tv_sec,
			.ctime_nsec = (uint32_t)s[i].ctime.tv_nsec,
		};
		uint64_t npages =
			(s[i].size + CACHE_PAGE_SIZE - 1) >> PAGE_SHIFT;

		if (!e.err && !hot_ranges(s[i].map, npages, &v) && v.n) {
			f.nranges = v.n;
			f.ranges = v.r;
			afs_warm_enc_file(&e, &f);
		}
		cache_mapping_put(s[i].map);
	}
	free(v.r);
	free(s);
	rc = afs_warm_enc_finish(&e);
	if (rc) {
		snprintf(err, errlen, "cannot encode the map: %s",
			 strerror(-rc));
		return rc;
	}
	rc = write_atomic(path, e.buf, e.len, err, errlen);
	free(e.buf);
	if (!rc)
		if (counts)
			afs_count(&counts->checkpoints, 1);
	return rc;
}

/* -------------------------------------------------------------------- */
/* Loading                                                                */

/* Read and parse the state file into w->map.  Return: 0 (loaded), 1
 * (none: cold), -EINVAL (refused, logged). */
static int load(struct afs_warm *w)
{
	struct stat st;
	uint8_t *buf;
	char err[256];
	size_t done = 0;
	int fd, rc;

	fd = open(w->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT) {
			w->cfg.log(LOG_INFO,
				   "warm_state %s: none yet, starting cold",
				   w->path);
			return 1;
		}
		snprintf(err, sizeof(err), "cannot open it: %s",
			 strerror(errno));
		goto refuse;
	}
	if (fstat(fd, &st)) {
		snprintf(err, sizeof(err), "cannot stat it: %s",
			 strerror(errno));
		goto refuse_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, sizeof(err), "not a regular file");
		goto refuse_fd;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(err, sizeof(err),
			 "owned by uid %u or writable by others (mode %o): "
			 "not trusted",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		goto refuse_fd;
	}
	if (st.st_size > AFS_WARM_MAX_BYTES) {
		snprintf(err, sizeof(err),
			 "%lld bytes, more than the %u allowed",
			 (long long)st.st_size, AFS_WARM_MAX_BYTES);
		goto refuse_fd;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		snprintf(err, sizeof(err), "out of memory");
		goto refuse_fd;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shorter than it was: the parser says so */
		done += (size_t)n;
	}
	close(fd);
	rc = afs_warm_parse(buf, done, &w->map, err, sizeof(err));
	free(buf);
	if (rc)
		goto refuse;
	w->cfg.log(LOG_INFO, "warm_state %s: %zu files, %llu pages to warm up",
		   w->path, w->map.nfiles, (unsigned long long)w->map.pages);
	return 0;

refuse_fd:
	close(fd);
refuse:
	afs_count(&w->c.refused, 1);
	w->cfg.log(LOG_WARNING,
		   "warm_state %s refused (%s): starting cold; the next "
		   "checkpoint replaces it",
		   w->path, err);
	return -EINVAL;
}

/* -------------------------------------------------------------------- */
/* The warm-up                                                            */

/* Wait while reads of the mount are missing: until one AFS_WARM_YIELD_MS
 * interval passes without a miss.  Return: true when stopped. */
static bool yield_to_readers(struct afs_warm *w, uint64_t *seen)
{
	uint64_t m = afs_data_demand_misses(w->a);

	while (m != *seen) {
		*seen = m;
		afs_count(&w->c.pauses, 1);
		if (nap(w, AFS_WARM_YIELD_MS * 1000000ull))
			return true;
		m = afs_data_demand_misses(w->a);
	}
	return false;
}

/* Room for @bytes more below the cache's low watermark. */
static bool budget_allows(struct afs_warm *w, uint64_t bytes)
{
	struct cache_stats cs;

	cache_stats(afs_data_cache(w->a), &cs);
	return cs.used_bytes + bytes <= cs.low_bytes;
}

static bool ts_is(struct timespec t, int64_t sec, uint32_t nsec)
{
	return t.tv_sec == sec && (uint32_t)t.tv_nsec == nsec;
}

/* The saved file @f, reopened and checked: an fd, or -1 (skipped). */
static int reopen(struct afs_warm *w, const struct afs_warm_file *f,
		  struct stat *st)
{
	int fd;

	if (f->dev != (uint64_t)w->cfg.dev || !w->cfg.handles.type)
		return -1;
	fd = afs_fhandle_open(w->cfg.mount_fd, &w->cfg.handles, f->ino,
			      O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_ino != f->ino ||
	    (uint64_t)st->st_dev != f->dev ||
	    afs_fhandle_generation(fd) != f->gen ||
	    (uint64_t)st->st_size != f->size ||
	    !ts_is(st->st_mtim, f->mtime_sec, f->mtime_nsec) ||
	    !ts_is(st->st_ctim, f->ctime_sec, f->ctime_nsec)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Return: 1 when the warm-up must end (stopped, budget), else 0. */
static int warm_file(struct afs_warm *w, const struct afs_warm_file *f,
		     uint64_t *seen, uint64_t rate)
{
	struct afs_file_key key = {
		.dev = (dev_t)f->dev, .ino = f->ino, .gen = f->gen};
	struct afs_fcache *fc;
	struct stat st;
	uint64_t warmed = 0;
	int fd, end = 0;

	fd = reopen(w, f, &st);
	if (fd < 0) {
		afs_count(&w->c.skipped, 1);
		return 0;
	}
	if (afs_fcache_lookup(w->a, &key, &st, &fc)) {
		close(fd);
		return 1;
	}
	if (afs_fcache_ra(fc, fd)) {
		afs_fcache_put(fc);
		close(fd);
		afs_count(&w->c.skipped, 1);
		return 0;
	}
	close(fd); /* ra/ reopened it */
	for (uint32_t r = 0; r < f->nranges && !end; r++) {
		uint64_t first = f->ranges[r].first;
		uint64_t left = f->ranges[r].count;

		while (left) {
			uint64_t n = left < (AFS_WARM_CHUNK >> PAGE_SHIFT)
					     ? left
					     : AFS_WARM_CHUNK >> PAGE_SHIFT;
			uint64_t t0, spent, want;
			int got;

			if (yield_to_readers(w, seen)) {
				w->cut = true;
				end = 1;
				break;
			}
			if (!budget_allows(w, n << PAGE_SHIFT)) {
				end = 1;
				break;
			}
			t0 = now_ns();
			got = afs_fcache_warm(fc, first, n);
			if (got < 0)
				break; /* the backing's error: next file */
			warmed += (uint64_t)got;
			afs_count(&w->c.bytes, (uint64_t)got << PAGE_SHIFT);
			first += n;
			left -= n;
			/* At most @rate bytes a second. */
			spent = now_ns() - t0;
			want = (n << PAGE_SHIFT) * 1000000000ull / rate;
			if (want > spent && nap(w, want - spent)) {
				w->cut = true;
				end = 1;
				break;
			}
		}
	}
	if (warmed)
		afs_count(&w->c.files, 1);
	afs_fcache_put(fc); /* idle now, found again by its key */
	return end;
}

static void warm_up(struct afs_warm *w)
{
	uint64_t seen, rate = w->cfg.rate_bytes ? w->cfg.rate_bytes
						: AFS_WARM_RATE_DEFAULT;
	uint64_t t0 = now_ns();
	size_t i;

	/* The map lists the hottest files first; each warmed file becomes
	 * an idle one, so no more than the idle limit are warmed (the
	 * oldest idle would be freed again). */
	if (!w->cfg.handles.type)
		w->cfg.log(LOG_WARNING,
			   "warm-up: SOURCE's filesystem cannot reopen files "
			   "from inode numbers (no known handle layout): "
			   "nothing is warmed");
	else if (geteuid())
		w->cfg.log(LOG_WARNING,
			   "warm-up: reopening files by handle needs "
			   "CAP_DAC_READ_SEARCH (a non-root daemon has it "
			   "only if granted): files it cannot open are "
			   "skipped");
	seen = afs_data_demand_misses(w->a);
	for (i = 0; i < w->map.nfiles; i++) {
		if (afs_count_read(&w->c.files) >= afs_data_idle_max(w->a))
			break;
		if (warm_file(w, &w->map.files[i], &seen, rate))
			break;
	}
	w->cfg.log(LOG_INFO,
		   "warm-up %s after %.1f s: %llu files, %llu MiB read back, "
		   "%llu skipped, %llu pauses",
		   i < w->map.nfiles ? "stopped" : "done",
		   (double)(now_ns() - t0) / 1e9,
		   (unsigned long long)afs_count_read(&w->c.files),
		   (unsigned long long)(afs_count_read(&w->c.bytes) >> 20),
		   (unsigned long long)afs_count_read(&w->c.skipped),
		   (unsigned long long)afs_count_read(&w->c.pauses));
	afs_warm_map_free(&w->map);
}

static void checkpoint(struct afs_warm *w)
{
	char err[256 + PATH_MAX];

	if (afs_warm_save(w->a, w->path, &w->c, err, sizeof(err)))
		w->cfg.log(LOG_WARNING, "warm_state checkpoint: %s", err);
}

static void *warm_thread(void *arg)
{
	struct afs_warm *w = arg;
	unsigned int interval = w->cfg.interval_s ? w->cfg.interval_s
						  : AFS_WARM_INTERVAL_DEFAULT;

	cache_thread_online();
	if (w->map.nfiles)
		warm_up(w);
	afs_count_set(&w->c.pending, 0);
	while (!nap(w, interval * 1000000000ull))
		checkpoint(w);
	return NULL;
}

int afs_warm_start(struct afs_data *a, const struct afs_warm_config *cfg,
		   struct afs_warm **out)
{
	struct afs_warm *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	int rc;

	if (!w)
		return -ENOMEM;
	w->a = a;
	w->cfg = *cfg;
	w->path = strdup(cfg->path);
	if (!w->path) {
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (!load(w))
		afs_count_set(&w->c.pending, 1);
	rc = -pthread_create(&w->thread, NULL, warm_thread, w);
	if (rc) {
		afs_count_set(&w->c.pending, 0);
		afs_warm_map_free(&w->map);
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w->path);
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void afs_warm_stats(const struct afs_warm *w, struct afs_warm_counters *out)
{
	*out = (struct afs_warm_counters){0};
	if (!w)
		return;
	out->files = afs_count_read(&w->c.files);
	out->skipped = afs_count_read(&w->c.skipped);
	out->bytes = afs_count_read(&w->c.bytes);
	out->pauses = afs_count_read(&w->c.pauses);
	out->pending = afs_count_read(&w->c.pending);
	out->checkpoints = afs_count_read(&w->c.checkpoints);
	out->refused = afs_count_read(&w->c.refused);
}

void afs_warm_stop(struct afs_warm *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	if (w->cut)
		w->cfg.log(LOG_WARNING,
			   "warm_state %s kept as it was: the warm-up was cut "
			   "short by the unmount",
			   w->path);
	else
		checkpoint(w);
	afs_warm_map_free(&w->map);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w->path);
	free(w);
}
