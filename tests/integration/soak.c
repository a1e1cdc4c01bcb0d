/* soak.c - a bounded soak of mixed operations through a mount, every byte
 * read checked.
 *
 * Usage: afs_soak MOUNT_DIR BACKING_DIR SECONDS SEED
 *
 * Creates (through the mount) NR_R pattern files r0.. (pattern.h, one seed
 * each), then runs these threads at once for SECONDS:
 *   seq        whole-file sequential reads of a random r file, in pieces of
 *              4K, 64K, 128K, 1M or an odd 12345 bytes (half of them after
 *              dropping the kernel's cached pages of the file:
 *              POSIX_FADV_DONTNEED)
 *   random     preads at random byte offsets and lengths (1 to 256K)
 *   coop x3    three threads on ONE fd, taking 128K chunks from a shared
 *              counter (a server's thread pool)
 *   per-req    an open/pread/close for every 64K chunk of a sequential pass
 *   interleave three streams of one fd read in turn (a column scan)
 *   writer x2  each owns a file w<i> and a model of its bytes: pwrite,
 *              ftruncate, truncate by name, O_APPEND writes, reads checked
 *              against the model, rename away and back, replace by a
 *              rename over it, fsync/fdatasync, close and reopen (O_TRUNC
 *              too)
 *   churn      create, write, rename, read back, unlink small files, mkdir
 *              and rmdir, in churn/
 *   xattr      user.* set/get/list/remove on its own file (listxattr never
 *              shows user.aheadfs.*); user.aheadfs.stats and map of r and
 *              w files and the root (a JSON object); advice set on r files
 *              and read back
 *   tune       the root's tunables (ra_max, context_ra, stream_table) set
 *              and read back; a bad value is EINVAL and changes nothing
 * At the end each writer's file is compared with its model through the
 * mount and on the backing.  Prints one line of counts per kind; every
 * kind must have run.  Exit 0 ok, 1 a failure (the first is printed), 2
 * usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"

#define NR_R 4
#define R_SIZE (12u << 20)
#define NR_W 2
#define W_MAX (2u << 20)
#define BUF_MAX (1u << 20)
#define AHEAD "user.aheadfs."

enum kind {
	K_SEQ,
	K_RANDOM,
	K_COOP,
	K_PERREQ,
	K_INTERLEAVE,
	K_WRITER,
	K_CHURN,
	K_XATTR,
	K_TUNE,
	K_NR
};
static const char *const kind_name[K_NR] = {"seq",     "random",     "coop",
					    "per-req", "interleave", "writer",
					    "churn",   "xattr",	     "tune"};

static const char *mnt, *back;
static uint64_t base_seed;
static atomic_bool stop_now;
static atomic_int failed;
static atomic_uint_fast64_t ops[K_NR], bytes_read;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&failed, 1) < 5) {
		va_start(ap, fmt);
		fputs("soak: FAIL: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
	atomic_store(&stop_now, true);
}

static bool running(void)
{
	return !atomic_load(&stop_now);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static uint64_t below(uint64_t *s, uint64_t n)
{
	return n ? rnd(s) % n : 0;
}

static void path_of(char *out, size_t len, const char *dir, const char *name)
{
	if (snprintf(out, len, "%s/%s", dir, name) >= (int)len)
		fail("path too long: %s/%s", dir, name);
}

static uint64_t r_seed(int i)
{
	return base_seed * 131 + (uint64_t)i + 1;
}

/* pread until @len bytes or EOF. */
static ssize_t pread_full(int fd, uint8_t *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, off + (off_t)got);

		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* pread exactly what is there of [@off, @off + @len) of r file @f (EOF
 * R_SIZE) and check it; false after a failure. */
static bool check_r(const char *what, int fd, int f, uint64_t off, size_t len,
		    uint8_t *buf)
{
	size_t want =
		off >= R_SIZE ? 0 : (R_SIZE - off < len ? R_SIZE - off : len);
	ssize_t n = pread_full(fd, buf, len, (off_t)off);
	size_t got = n < 0 ? 0 : (size_t)n;
	long bad;

	if (n < 0) {
		fail("%s: pread r%d at %" PRIu64 ": %s", what, f, off,
		     strerror(errno));
		return false;
	}
	if (got != want) {
		fail("%s: r%d at %" PRIu64 ": %zu bytes, expected %zu", what, f,
		     off, got, want);
		return false;
	}
	bad = afs_pattern_mismatch(buf, r_seed(f), off, got);
	if (bad >= 0) {
		fail("%s: r%d: wrong byte at %" PRIu64, what, f,
		     off + (uint64_t)bad);
		return false;
	}
	atomic_fetch_add(&bytes_read, got);
	return true;
}

static int open_r(int f, int flags)
{
	char p[4096], name[16];
	int fd;

	snprintf(name, sizeof(name), "r%d", f);
	path_of(p, sizeof(p), mnt, name);
	fd = open(p, flags, 0644);
	if (fd < 0)
		fail("open %s: %s", p, strerror(errno));
	return fd;
}

struct worker {
	pthread_t tid;
	enum kind kind;
	int id;
	uint64_t seed;
	uint8_t *buf;
};

static void *seq_thread(struct worker *w)
{
	static const size_t sizes[] = {4096, 65536, 131072, BUF_MAX, 12345};

	while (running()) {
		int f = (int)below(&w->seed, NR_R), fd = open_r(f, O_RDONLY);
		size_t bs = sizes[below(&w->seed, 5)];

		if (fd < 0)
			return NULL;
		/* Half the passes start with the kernel's copy dropped, so
		 * that a kernel-mode mount reads from aheadfs again. */
		if (rnd(&w->seed) & 1)
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		for (uint64_t off = 0; off <= R_SIZE && running(); off += bs)
			if (!check_r("seq", fd, f, off, bs, w->buf))
				break;
		close(fd);
		atomic_fetch_add(&ops[K_SEQ], 1);
	}
	return NULL;
}

static void *random_thread(struct worker *w)
{
	int fds[NR_R];

	for (int f = 0; f < NR_R; f++)
		if ((fds[f] = open_r(f, O_RDONLY)) < 0)
			return NULL;
	while (running()) {
		int f = (int)below(&w->seed, NR_R);
		uint64_t off = below(&w->seed, R_SIZE + 8192);
		size_t len = 1 + below(&w->seed, 256 << 10);

		if (!check_r("random", fds[f], f, off, len, w->buf))
			break;
		atomic_fetch_add(&ops[K_RANDOM], 1);
	}
	for (int f = 0; f < NR_R; f++)
		close(fds[f]);
	return NULL;
}

static int coop_fd = -1;
static atomic_uint_fast64_t coop_next;
#define COOP_FILE 1
#define COOP_CHUNK (128u << 10)

static void *coop_thread(struct worker *w)
{
	while (running()) {
		uint64_t c =
			atomic_fetch_add(&coop_next, 1) % (R_SIZE / COOP_CHUNK);

		if (!check_r("coop", coop_fd, COOP_FILE, c * COOP_CHUNK,
			     COOP_CHUNK, w->buf))
			break;
		atomic_fetch_add(&ops[K_COOP], 1);
	}
	return NULL;
}

static void *perreq_thread(struct worker *w)
{
	while (running()) {
		int f = (int)below(&w->seed, NR_R);

		for (uint64_t off = 0; off < R_SIZE && running();
		     off += 65536) {
			int fd = open_r(f, O_RDONLY);
			bool ok;

			if (fd < 0)
				return NULL;
			ok = check_r("per-req", fd, f, off, 65536, w->buf);
			close(fd);
			if (!ok)
				return NULL;
			atomic_fetch_add(&ops[K_PERREQ], 1);
		}
	}
	return NULL;
}

static void *interleave_thread(struct worker *w)
{
	int f = 3, fd = open_r(f, O_RDONLY);
	uint64_t pos[3];

	if (fd < 0)
		return NULL;
	for (int s = 0; s < 3; s++)
		pos[s] = (uint64_t)s * (R_SIZE / 3);
	while (running()) {
		for (int s = 0; s < 3 && running(); s++) {
			if (!check_r("interleave", fd, f, pos[s], 32768,
				     w->buf)) {
				close(fd);
				return NULL;
			}
			pos[s] = (pos[s] + 32768) % R_SIZE;
		}
		atomic_fetch_add(&ops[K_INTERLEAVE], 1);
	}
	close(fd);
	return NULL;
}

/* --- writers: a file and its model ------------------------------------ */

struct wfile {
	char name[32], path[4096], tmp[4096], bpath[4096];
	int fd;
	uint8_t *model;
	size_t size;
};

static bool w_check(struct wfile *wf, int fd, const char *what, uint8_t *buf)
{
	ssize_t n = pread_full(fd, buf, W_MAX + 1, 0);

	if (n < 0) {
		fail("writer %s: %s: read: %s", wf->name, what,
		     strerror(errno));
		return false;
	}
	if ((size_t)n != wf->size || memcmp(buf, wf->model, wf->size)) {
		size_t i = 0;

		while (i < (size_t)n && i < wf->size && buf[i] == wf->model[i])
			i++;
		fail("writer %s: %s: %zd bytes, expected %zu; first "
		     "difference at %zu",
		     wf->name, what, n, wf->size, i);
		return false;
	}
	return true;
}

static bool w_resize(struct wfile *wf, size_t size)
{
	if (size > wf->size)
		memset(wf->model + wf->size, 0, size - wf->size);
	wf->size = size;
	return true;
}

static bool w_op(struct worker *w, struct wfile *wf)
{
	uint64_t r = below(&w->seed, 100);
	uint8_t *b = w->buf;

	if (r < 40) { /* pwrite */
		size_t len = 1 + below(&w->seed, 65536);
		size_t off = below(&w->seed, W_MAX - len);

		for (size_t i = 0; i < len; i++)
			b[i] = (uint8_t)rnd(&w->seed);
		if (pwrite(wf->fd, b, len, (off_t)off) != (ssize_t)len)
			return fail("pwrite %s: %s", wf->name, strerror(errno)),
			       false;
		if (off + len > wf->size)
			w_resize(wf, off + len);
		memcpy(wf->model + off, b, len);
	} else if (r < 55) { /* ftruncate, truncate by name */
		size_t size = below(&w->seed, W_MAX);

		if ((r < 50 ? ftruncate(wf->fd, (off_t)size)
			    : truncate(wf->path, (off_t)size)))
			return fail("truncate %s: %s", wf->name,
				    strerror(errno)),
			       false;
		w_resize(wf, size);
	} else if (r < 65) { /* append */
		size_t len = 1 + below(&w->seed, 16384);
		int afd;

		if (wf->size + len > W_MAX)
			return true;
		afd = open(wf->path, O_WRONLY | O_APPEND);
		if (afd < 0)
			return fail("open O_APPEND %s: %s", wf->name,
				    strerror(errno)),
			       false;
		for (size_t i = 0; i < len; i++)
			b[i] = (uint8_t)rnd(&w->seed);
		if (write(afd, b, len) != (ssize_t)len) {
			close(afd);
			return fail("append %s: %s", wf->name, strerror(errno)),
			       false;
		}
		close(afd);
		memcpy(wf->model + wf->size, b, len);
		wf->size += len;
	} else if (r < 80) { /* read back */
		return w_check(wf, wf->fd, "read back", b);
	} else if (r < 85) { /* rename away and back */
		if (rename(wf->path, wf->tmp) || rename(wf->tmp, wf->path))
			return fail("rename %s: %s", wf->name, strerror(errno)),
			       false;
	} else if (r < 90) { /* replace by a rename over it */
		char np[4200];
		size_t len = below(&w->seed, 256 << 10);
		int nfd;

		snprintf(np, sizeof(np), "%s.new", wf->path);
		nfd = open(np, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (nfd < 0)
			return fail("create %s: %s", np, strerror(errno)),
			       false;
		for (size_t i = 0; i < len; i++)
			b[i] = (uint8_t)rnd(&w->seed);
		if (write(nfd, b, len) != (ssize_t)len || fsync(nfd) ||
		    rename(np, wf->path)) {
			close(nfd);
			return fail("replace %s: %s", wf->name,
				    strerror(errno)),
			       false;
		}
		close(wf->fd);
		wf->fd = nfd;
		memcpy(wf->model, b, len);
		wf->size = len;
	} else if (r < 95) { /* fsync, fdatasync */
		if ((r & 1 ? fsync(wf->fd) : fdatasync(wf->fd)))
			return fail("fsync %s: %s", wf->name, strerror(errno)),
			       false;
	} else { /* close and reopen, O_TRUNC sometimes */
		bool trunc = r == 99;

		close(wf->fd);
		wf->fd = open(wf->path, O_RDWR | (trunc ? O_TRUNC : 0));
		if (wf->fd < 0)
			return fail("reopen %s: %s", wf->name, strerror(errno)),
			       false;
		if (trunc)
			wf->size = 0;
	}
	return true;
}

static struct wfile wfiles[NR_W];

static void *writer_thread(struct worker *w)
{
	struct wfile *wf = &wfiles[w->id];

	while (running()) {
		if (!w_op(w, wf))
			break;
		atomic_fetch_add(&ops[K_WRITER], 1);
	}
	return NULL;
}

/* --- churn, xattrs, tunables ------------------------------------------ */

static void *churn_thread(struct worker *w)
{
	char dir[4096], a[4200], b[4200];

	path_of(dir, sizeof(dir), mnt, "churn");
	for (uint64_t k = 0; running(); k++) {
		size_t len = below(&w->seed, 200000);
		uint64_t seed = base_seed ^ (k << 20);
		int fd;
		long bad;

		snprintf(a, sizeof(a), "%s/t%" PRIu64, dir, k);
		snprintf(b, sizeof(b), "%s/u%" PRIu64, dir, k);
		afs_pattern(w->buf, seed, 0, len);
		fd = open(a, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || write(fd, w->buf, len) != (ssize_t)len ||
		    close(fd) || rename(a, b))
			return fail("churn %s: %s", a, strerror(errno)), NULL;
		fd = open(b, O_RDONLY);
		if (fd < 0)
			return fail("churn open %s: %s", b, strerror(errno)),
			       NULL;
		memset(w->buf, 0, len + 1);
		if (read(fd, w->buf, len + 1) != (ssize_t)len) {
			close(fd);
			return fail("churn read %s: short", b), NULL;
		}
		close(fd);
		bad = afs_pattern_mismatch(w->buf, seed, 0, len);
		if (bad >= 0)
			return fail("churn %s: wrong byte at %ld", b, bad),
			       NULL;
		if (unlink(b))
			return fail("churn unlink %s: %s", b, strerror(errno)),
			       NULL;
		if (k % 16 == 0 && (mkdir(a, 0755) || rmdir(a)))
			return fail("churn mkdir %s: %s", a, strerror(errno)),
			       NULL;
		atomic_fetch_add(&ops[K_CHURN], 1);
	}
	return NULL;
}

/* getxattr the way getfattr does it: the size, then the value. */
static ssize_t get_value(const char *path, const char *name, char *buf,
			 size_t cap)
{
	for (int tries = 0; tries < 3; tries++) {
		ssize_t n = getxattr(path, name, NULL, 0);

		if (n < 0)
			return -errno;
		if ((size_t)n >= cap)
			return -E2BIG;
		n = getxattr(path, name, buf, (size_t)n);
		if (n >= 0) {
			buf[n] = '\0';
			return n;
		}
		if (errno != ERANGE)
			return -errno;
	}
	return -ERANGE;
}

static bool json_object(const char *path, const char *name, char *buf,
			bool may_vanish)
{
	ssize_t n = get_value(path, name, buf, 65537);

	if (n == -ENOENT && may_vanish)
		return true;
	if (n < 0)
		return fail("getxattr %s %s: %s", path, name,
			    strerror((int)-n)),
		       false;
	if (n < 2 || buf[0] != '{' || buf[n - 1] != '}')
		return fail("getxattr %s %s: not a JSON object: %.60s", path,
			    name, buf),
		       false;
	return true;
}

static void *xattr_thread(struct worker *w)
{
	static const char *const advice[] = {"normal", "sequential", "random",
					     "willneed", "dontneed"};
	char *buf = (char *)w->buf, own[4096], p[4096], v[32];

	path_of(own, sizeof(own), mnt, "x0");
	for (uint64_t k = 0; running(); k++) {
		char name[16];
		ssize_t n;
		int a;

		snprintf(v, sizeof(v), "%" PRIu64, k);
		if (setxattr(own, "user.soak", v, strlen(v), 0))
			return fail("setxattr x0: %s", strerror(errno)), NULL;
		n = get_value(own, "user.soak", buf, 65536);
		if (n < 0 || strcmp(buf, v))
			return fail("getxattr x0: %zd '%s', expected '%s'", n,
				    n < 0 ? "" : buf, v),
			       NULL;
		n = listxattr(own, buf, 65536);
		if (n < 0 || !memmem(buf, (size_t)n, "user.soak", 10) ||
		    memmem(buf, (size_t)n, AHEAD, sizeof(AHEAD) - 1))
			return fail("listxattr x0: %zd", n), NULL;
		if (removexattr(own, "user.soak") ||
		    getxattr(own, "user.soak", NULL, 0) >= 0 ||
		    errno != ENODATA)
			return fail("removexattr x0: %s", strerror(errno)),
			       NULL;
		snprintf(name, sizeof(name), "r%d", (int)(k % NR_R));
		path_of(p, sizeof(p), mnt, name);
		if (!json_object(p, AHEAD "stats", buf, false) ||
		    !json_object(p, AHEAD "map", buf, false) ||
		    !json_object(mnt, AHEAD "stats", buf, false))
			return NULL;
		snprintf(name, sizeof(name), "w%d", (int)(k % NR_W));
		path_of(p, sizeof(p), mnt, name);
		if (!json_object(p, AHEAD "stats", buf, true))
			return NULL;
		a = (int)below(&w->seed, 5);
		snprintf(name, sizeof(name), "r%d", (int)(k % NR_R));
		path_of(p, sizeof(p), mnt, name);
		if (setxattr(p, AHEAD "advice", advice[a], strlen(advice[a]),
			     0))
			return fail("advice %s on %s: %s", advice[a], p,
				    strerror(errno)),
			       NULL;
		n = get_value(p, AHEAD "advice", buf, 65536);
		if (n < 0 || (a < 3 && strcmp(buf, advice[a])))
			return fail("advice of %s: %zd '%s', expected %s", p, n,
				    n < 0 ? "" : buf, advice[a]),
			       NULL;
		atomic_fetch_add(&ops[K_XATTR], 1);
	}
	return NULL;
}

static bool tune_one(const char *name, const char *value, const char *want)
{
	char got[1024], full[64];
	ssize_t n;

	snprintf(full, sizeof(full), AHEAD "%s", name);
	if (setxattr(mnt, full, value, strlen(value), 0))
		return fail("set %s=%s: %s", name, value, strerror(errno)),
		       false;
	n = get_value(mnt, full, got, sizeof(got));
	if (n < 0 || strcmp(got, want))
		return fail("%s after setting %s: '%s', expected '%s'", name,
			    value, n < 0 ? strerror((int)-n) : got, want),
		       false;
	/* a bad value: EINVAL, nothing changed */
	if (setxattr(mnt, full, "bogus", 5, 0) == 0 || errno != EINVAL)
		return fail("set %s=bogus: not EINVAL", name), false;
	n = get_value(mnt, full, got, sizeof(got));
	if (n < 0 || strcmp(got, want))
		return fail("%s changed by a bad value: '%s'", name, got),
		       false;
	return true;
}

static void *tune_thread(struct worker *w)
{
	static const char *const ra[][2] = {{"64K", "65536"},
					    {"256K", "262144"},
					    {"1M", "1048576"},
					    {"4M", "4194304"},
					    {"8M", "8388608"}};
	static const char *const ctx[] = {"on", "loose", "off"};
	static const char *const st[] = {"on", "off"};

	while (running()) {
		int i = (int)below(&w->seed, 5), c = (int)below(&w->seed, 3),
		    s = (int)below(&w->seed, 2);

		if (!tune_one("ra_max", ra[i][0], ra[i][1]) ||
		    !tune_one("context_ra", ctx[c], ctx[c]) ||
		    !tune_one("stream_table", st[s], st[s]))
			return NULL;
		atomic_fetch_add(&ops[K_TUNE], 1);
		usleep(20000);
	}
	/* leave the defaults */
	tune_one("context_ra", "on", "on");
	tune_one("stream_table", "on", "on");
	return NULL;
}

/* --- setup and the end ------------------------------------------------- */

static int setup(void)
{
	uint8_t *buf = malloc(BUF_MAX);
	char p[4096];

	if (!buf)
		return -1;
	for (int f = 0; f < NR_R; f++) {
		int fd = open_r(f, O_WRONLY | O_CREAT | O_TRUNC);

		if (fd < 0)
			return -1;
		for (uint64_t off = 0; off < R_SIZE; off += BUF_MAX) {
			afs_pattern(buf, r_seed(f), off, BUF_MAX);
			if (pwrite(fd, buf, BUF_MAX, (off_t)off) != BUF_MAX) {
				fail("write r%d: %s", f, strerror(errno));
				return -1;
			}
		}
		close(fd);
	}
	free(buf);
	for (int i = 0; i < NR_W; i++) {
		struct wfile *wf = &wfiles[i];

		snprintf(wf->name, sizeof(wf->name), "w%d", i);
		path_of(wf->path, sizeof(wf->path), mnt, wf->name);
		if (snprintf(wf->tmp, sizeof(wf->tmp), "%s/w%d.tmp", mnt, i) >=
		    (int)sizeof(wf->tmp))
			return fail("path too long: %s", mnt), -1;
		path_of(wf->bpath, sizeof(wf->bpath), back, wf->name);
		wf->model = calloc(1, W_MAX);
		wf->fd = open(wf->path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (!wf->model || wf->fd < 0) {
			fail("create %s: %s", wf->path, strerror(errno));
			return -1;
		}
	}
	path_of(p, sizeof(p), mnt, "churn");
	if (mkdir(p, 0755) && errno != EEXIST) {
		fail("mkdir %s: %s", p, strerror(errno));
		return -1;
	}
	path_of(p, sizeof(p), mnt, "x0");
	close(open(p, O_WRONLY | O_CREAT, 0644));
	coop_fd = open_r(COOP_FILE, O_RDONLY);
	return coop_fd < 0 ? -1 : 0;
}

static void *(*const body[K_NR])(struct worker *) = {
	seq_thread,    random_thread,	  coop_thread,
	perreq_thread, interleave_thread, writer_thread,
	churn_thread,  xattr_thread,	  tune_thread};
static const int count[K_NR] = {2, 2, 3, 1, 1, NR_W, 1, 1, 1};

static void *start(void *arg)
{
	struct worker *w = arg;

	return body[w->kind](w);
}

int main(int argc, char **argv)
{
	struct worker workers[32];
	int nw = 0, rc = 0;
	double seconds;

	if (argc != 5) {
		fprintf(stderr, "usage: afs_soak MOUNT_DIR BACKING_DIR "
				"SECONDS SEED\n");
		return 2;
	}
	mnt = argv[1];
	back = argv[2];
	seconds = atof(argv[3]);
	base_seed = strtoull(argv[4], NULL, 0) | 1;
	if (setup())
		return 1;
	for (int k = 0; k < K_NR; k++)
		for (int i = 0; i < count[k]; i++) {
			struct worker *w = &workers[nw++];

			*w = (struct worker){.kind = (enum kind)k,
					     .id = i,
					     .seed = base_seed * 7919 +
						     (uint64_t)nw};
			w->buf = malloc(W_MAX + 4096);
			if (!w->buf ||
			    pthread_create(&w->tid, NULL, start, w)) {
				fail("cannot start a %s thread", kind_name[k]);
				return 1;
			}
		}
	double t = 0;

	for (; t < seconds && running(); t += 0.1)
		usleep(100000);
	atomic_store(&stop_now, true);
	for (int i = 0; i < nw; i++) {
		pthread_join(workers[i].tid, NULL);
	}
	/* Each writer's file: the model, through the mount and on the
	 * backing. */
	for (int i = 0; i < NR_W && !atomic_load(&failed); i++) {
		struct wfile *wf = &wfiles[i];
		int bfd = open(wf->bpath, O_RDONLY);

		if (bfd < 0) {
			fail("open %s: %s", wf->bpath, strerror(errno));
			break;
		}
		w_check(wf, wf->fd, "at the end, through the mount",
			workers[0].buf);
		w_check(wf, bfd, "at the end, on the backing", workers[0].buf);
		close(bfd);
	}
	printf("soak: %.1f s, %" PRIu64 " MiB read and checked:", t,
	       (uint64_t)atomic_load(&bytes_read) >> 20);
	for (int k = 0; k < K_NR; k++) {
		printf(" %s %" PRIu64, kind_name[k],
		       (uint64_t)atomic_load(&ops[k]));
		if (!atomic_load(&ops[k]) && !atomic_load(&failed)) {
			fprintf(stderr, "soak: FAIL: no %s operation ran\n",
				kind_name[k]);
			rc = 1;
		}
	}
	printf("\n");
	for (int i = 0; i < nw; i++)
		free(workers[i].buf);
	for (int i = 0; i < NR_W; i++) {
		close(wfiles[i].fd);
		free(wfiles[i].model);
	}
	close(coop_fd);
	return atomic_load(&failed) ? 1 : rc;
}
