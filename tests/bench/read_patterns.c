/* read_patterns.c - the read and write workloads of the seed reports, timed.
 *
 * Usage: read_patterns PATTERN FILE [options]
 *        read_patterns write DIR [options]
 * Prints one line: "PATTERN bytes seconds MB/s requests [key=value...]"
 * (MB = 10^6 bytes).  The extra fields, where the pattern has them:
 *   p50_us, p99_us  latency of one request (random, per-request; slow
 *                   --fast: of the unpaced readers' reads)
 *   tenths          MB/s of each tenth of the range, comma-separated (seq
 *                   with --tenths)
 *   flat            the slowest tenth over the median tenth
 *   paced           bytes the streams were paced to deliver (slow)
 *   streams_ok      streams that delivered >= 98 % of their paced bytes, of all
 *   min_pct         the worst stream's delivered / paced bytes, percent
 *   fast_mbs        MB/s of the unpaced readers (slow --fast), from their
 *                   start until the last of them ended
 *   cpu_ns          with --cpu FILE: the CPU time FILE counted from when the
 *                   clock started to when it stopped, ns
 *
 * Patterns (each names the report it comes from, see ../../docs/benchmarks.md):
 *   seq          one reader, --bs bytes per read (default 1 MiB), whole file
 *   files        --threads readers (default 4), reader i reading its own file
 *                FILE.i (FILE.0, FILE.1, ...) sequentially from its start with
 *                its own fd, --bs per read (default 128 KiB); --limit applies
 *                to each file (many clients streaming their own files)
 *   shared-fd    --threads readers (default 2) sharing one fd, read(2) at the
 *                shared file position, --bs (default 11 KiB): the 2004 RAID0
 *                multi-thread regression (429 -> 81 MB/s)
 *   interleave   one reader, --streams streams (default 2) started evenly
 *                through the file, --bs per read (default 4 KiB), visited in
 *                turn: 1,1001,2,1002,... (the context readahead patch set)
 *   column       the column scan of a matrix of --streams rows (default 512),
 *                each row a contiguous 1/rows of the file: 4 KiB of row 0,
 *                of row 1, ... of the last row, then the next 4 KiB of each
 *   random       --count random reads (default 2000) of --bs bytes (default
 *                8 KiB, also try 2048) at page-aligned offsets, --threads
 *                readers (default 1; 5 = one reader with 4 thrashers as in the
 *                2004 bigfile report), seeded
 *   per-request  --threads readers (default 4) sharing one sequential stream:
 *                each request opens the file, preads --bs (default 128 KiB) at
 *                the next offset of the stream and closes (NFS/SMB thread pool)
 *   slow         --streams readers (default 64), each with its own fd reading
 *                its own 1/streams of the file sequentially, --bs (default
 *                4 KiB) per read, paced at --rate bytes a second each (default
 *                512 KiB), for --seconds (default 20); with --fast N, N
 *                more readers read the first half of the file unpaced, each
 *                its own part, 128 KiB per read, until it ends or the time is
 *                up, and the paced streams share the second half (a backup
 *                or a scan passing through while a server's clients stream)
 *   write        --threads writers (default 8), each writing its own new file
 *                DIR/write.N, --bs per write (default 64 KiB), --total bytes in
 *                all (default 2 GiB); the clock stops after every file's fsync
 *                (tiobench, parallel dd)
 *
 * Options: --bs N[K|M], --threads N, --streams N, --count N, --seed N,
 *          --limit N[K|M|G] (read at most this many bytes of the file),
 *          --seconds S (stop reading after S seconds; slow: its duration),
 *          --rate N[K|M], --fast N (slow), --total N[K|M|G] (write),
 *          --warm 1 (read the range once, untimed, before the timed pass:
 *          the hot-cache workload), --tenths 1 (seq: time every tenth),
 *          --latency 0 (random, per-request: time no request, print no
 *          p50/p99; a run of millions of requests then keeps no list of
 *          latencies and sorts none after the clock stops), --cpu FILE (a
 *          cgroup's CPU count, read as the clock starts and stops: cgroup
 *          v1's cpuacct.usage or cgroup v2's cpu.stat; with the daemon in
 *          that cgroup, what the timed reads cost, this process's start and
 *          exit left out).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_nanosleep, pthread_barrier_t; the build defines it */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

struct params {
	const char *pattern, *path;
	const char *cpu_file; /* --cpu */
	uint64_t bs, limit, count, seed, rate, total;
	double seconds;
	unsigned int threads, streams, fast;
	bool warm, tenths, nolat;
	uint64_t size; /* bytes of the file in play */
};

struct shared {
	const struct params *p;
	int fd; /* shared-fd, interleave, column, random */
	double deadline; /* 0: none */
	uint64_t next; /* __atomic: per-request's stream position */
	uint64_t bytes, requests; /* __atomic */
	int error; /* __atomic: first errno */
	pthread_mutex_t lock; /* lat, tenth_at */
	double *lat; /* seconds per request, when recorded */
	size_t nlat, caplat;
	double tenth_at[11]; /* seq --tenths: when bytes passed k tenths */
	uint64_t paced, streams_ok; /* slow */
	double min_pct; /* slow */
	uint64_t fast_bytes; /* slow --fast */
	double fast_end; /* slow --fast: when the last unpaced reader ended */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end || !v) {
		fprintf(stderr, "read_patterns: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

/* The CPU time, ns, a cgroup file counts so far: cgroup v1's cpuacct.usage
 * (ns) or cgroup v2's cpu.stat (its usage_usec line); -1 without @path or
 * when it holds neither.  The kernel charges a running task's time to its
 * cgroup when it is next scheduled or ticked: the yield charges this one's
 * (its start, at the first call) before the count is read. */
static int64_t cgroup_cpu_ns(const char *path)
{
	char buf[4096];
	const char *u;
	ssize_t n;
	int fd;

	if (!path)
		return -1;
	sched_yield();
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (buf[0] >= '0' && buf[0] <= '9')
		return strtoll(buf, NULL, 10);
	u = strstr(buf, "usage_usec ");
	return u ? strtoll(u + strlen("usage_usec "), NULL, 10) * 1000 : -1;
}

static void account(struct shared *s, ssize_t n)
{
	__atomic_add_fetch(&s->bytes, (uint64_t)n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->requests, 1, __ATOMIC_RELAXED);
}

static void fail(struct shared *s, int err)
{
	int zero = 0;

	__atomic_compare_exchange_n(&s->error, &zero, err, false,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* A stream's read came back with @n: count it into *@done. False when the
 * stream ends here (an error, recorded, or the end of the file). */
static bool took(struct shared *s, ssize_t n, uint64_t *done)
{
	if (n < 0) {
		fail(s, errno);
		return false;
	}
	if (n == 0)
		return false;
	*done += (uint64_t)n;
	account(s, n);
	return true;
}

static bool expired(const struct shared *s)
{
	return s->deadline > 0 && now() >= s->deadline;
}

/* A thread's latencies, merged into the shared list when it ends. */
struct lats {
	double *v;
	size_t n, cap;
};

static void lat_add(struct lats *l, double sec)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		double *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = sec;
}

static void lat_merge(struct shared *s, struct lats *l)
{
	if (!l->n) /* none recorded (--latency 0): l->v is NULL */
		return;
	pthread_mutex_lock(&s->lock);
	if (s->nlat + l->n > s->caplat) {
		size_t cap = s->nlat + l->n;
		double *v = realloc(s->lat, cap * sizeof(*v));

		if (v) {
			s->lat = v;
			s->caplat = cap;
		}
	}
	if (s->nlat + l->n <= s->caplat) {
		memcpy(s->lat + s->nlat, l->v, l->n * sizeof(*l->v));
		s->nlat += l->n;
	}
	pthread_mutex_unlock(&s->lock);
	free(l->v);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void *thread_shared_fd(void *arg)
{
	struct shared *s = arg;
	const struct params *p = s->p;
	char *buf = malloc(p->bs);
	unsigned int tenth = 1;
	ssize_t n = 0;

	/* read(2) on one fd: the threads share and advance its position. */
	while (buf && (n = read(s->fd, buf, p->bs)) > 0) {
		uint64_t b = __atomic_add_fetch(&s->bytes, (uint64_t)n,
						__ATOMIC_RELAXED);

		__atomic_add_fetch(&s->requests, 1, __ATOMIC_RELAXED);
		/* --tenths is only offered with one reader (seq). */
		while (p->tenths && tenth <= 10 && b >= p->size / 10 * tenth)
			s->tenth_at[tenth++] = now();
		if (b >= p->size || expired(s))
			break;
	}
	if (!buf || n < 0)
		fail(s, buf ? errno : ENOMEM);
	free(buf);
	return NULL;
}

static void *thread_per_request(void *arg)
{
	struct shared *s = arg;
	char *buf = malloc(s->p->bs);
	struct lats l = {0};

	for (; buf && !expired(s);) {
		uint64_t off = __atomic_fetch_add(&s->next, s->p->bs,
						  __ATOMIC_RELAXED);
		double t0 = now();
		int fd;
		ssize_t n;

		if (off >= s->p->size)
			break;
		fd = open(s->p->path, O_RDONLY);
		if (fd < 0) {
			fail(s, errno);
			break;
		}
		n = pread(fd, buf, s->p->bs, (off_t)off);
		close(fd);
		if (n < 0) {
			fail(s, errno);
			break;
		}
		if (!s->p->nolat)
			lat_add(&l, now() - t0);
		account(s, n);
	}
	lat_merge(s, &l);
	free(buf);
	return NULL;
}

/* xorshift64*: the same offsets for every target with the same seed. */
static uint64_t rnd(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ULL;
}

struct thread_arg {
	struct shared *s;
	uint64_t seed;
	unsigned int index;
};

static void *thread_random(void *arg)
{
	struct thread_arg *a = arg;
	struct shared *s = a->s;
	const struct params *p = s->p;
	uint64_t x = a->seed ? a->seed : 1, pages = p->size / 4096;
	char *buf = malloc(p->bs);
	struct lats l = {0};

	for (uint64_t i = 0; buf && i < p->count && pages && !expired(s); i++) {
		uint64_t off = (rnd(&x) % pages) * 4096;
		double t0 = now();
		ssize_t n = pread(s->fd, buf, p->bs, (off_t)off);

		if (n < 0) {
			fail(s, errno);
			break;
		}
		if (!p->nolat)
			lat_add(&l, now() - t0);
		account(s, n);
	}
	lat_merge(s, &l);
	free(buf);
	return NULL;
}

static void sleep_until(double t)
{
	struct timespec ts = {.tv_sec = (time_t)t,
			      .tv_nsec = (long)((t - (double)(time_t)t) * 1e9)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

#define FAST_BS (128u << 10)

/* One unpaced reader of slow --fast: [start, start + len), its own fd. */
static void read_fast(struct shared *s, uint64_t start, uint64_t len)
{
	char *buf = malloc(FAST_BS);
	int fd = open(s->p->path, O_RDONLY);
	struct lats l = {0};
	uint64_t done = 0;
	double end;

	if (fd < 0 || !buf) {
		fail(s, fd < 0 ? errno : ENOMEM);
		goto out;
	}
	while (done < len && !expired(s)) {
		uint64_t want = len - done < FAST_BS ? len - done : FAST_BS;
		double t = now();
		ssize_t n = pread(fd, buf, want, (off_t)(start + done));
		double dt = now() - t;

		if (!took(s, n, &done)) /* before lat_add: errno */
			break;
		lat_add(&l, dt);
	}
out:
	end = now();
	lat_merge(s, &l);
	pthread_mutex_lock(&s->lock);
	s->fast_bytes += done;
	if (end > s->fast_end)
		s->fast_end = end;
	pthread_mutex_unlock(&s->lock);
	if (fd >= 0)
		close(fd);
	free(buf);
}

/* One slow stream: its own fd, its own slice, reads due at a steady rate.
 * With --fast, the first p->fast threads are the unpaced readers. */
static void *thread_slow(void *arg)
{
	struct thread_arg *a = arg;
	struct shared *s = a->s;
	const struct params *p = s->p;
	uint64_t half = p->fast ? p->size / 2 : 0;
	uint64_t slice = (p->size - half) / p->streams / p->bs * p->bs;
	uint64_t start, done = 0, due, paced;
	double t0 = s->deadline - p->seconds, pct, dues;
	char *buf;
	int fd;

	if (a->index < p->fast) {
		uint64_t part = half / p->fast / FAST_BS * FAST_BS;

		read_fast(s, part * a->index, part);
		return NULL;
	}
	start = half + slice * (a->index - p->fast);
	buf = malloc(p->bs);
	fd = open(p->path, O_RDONLY);

	if (fd < 0 || !buf) {
		fail(s, fd < 0 ? errno : ENOMEM);
		goto out;
	}
	for (uint64_t k = 0; done < slice; k++) {
		double at = t0 + (double)(k * p->bs) / (double)p->rate;
		ssize_t n;

		if (at >= s->deadline)
			break;
		if (at > now())
			sleep_until(at);
		n = pread(fd, buf, p->bs, (off_t)(start + done));
		if (!took(s, n, &done))
			break;
	}
out:
	/* Reads due before the end: those at k * bs / rate < seconds. */
	dues = (double)p->rate * p->seconds / (double)p->bs;
	due = (uint64_t)dues;
	if ((double)due < dues)
		due++;
	paced = due * p->bs < slice ? due * p->bs : slice;
	pct = paced ? 100.0 * (double)done / (double)paced : 100.0;
	pthread_mutex_lock(&s->lock);
	s->paced += paced;
	if (pct >= 98.0)
		s->streams_ok++;
	if (pct < s->min_pct)
		s->min_pct = pct;
	pthread_mutex_unlock(&s->lock);
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* One reader of files: FILE.index from its start, its own fd, up to --limit
 * bytes of it. */
static void *thread_files(void *arg)
{
	struct thread_arg *a = arg;
	struct shared *s = a->s;
	const struct params *p = s->p;
	char name[4096];
	char *buf = malloc(p->bs);
	uint64_t done = 0, size;
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "%s.%u", p->path, a->index);
	fd = open(name, O_RDONLY);
	if (!buf) {
		fail(s, ENOMEM);
		goto out;
	}
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "read_patterns: %s: %s\n", name,
			strerror(errno));
		fail(s, errno);
		goto out;
	}
	size = (uint64_t)st.st_size;
	if (p->limit && p->limit < size)
		size = p->limit;
	while (done < size && !expired(s)) {
		uint64_t want = size - done < p->bs ? size - done : p->bs;

		if (!took(s, read(fd, buf, want), &done))
			break;
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static void *thread_write(void *arg)
{
	struct thread_arg *a = arg;
	struct shared *s = a->s;
	const struct params *p = s->p;
	uint64_t want = p->total / p->threads, done = 0;
	char name[4096];
	char *buf = malloc(p->bs);
	uint64_t x = a->seed;
	int fd;

	snprintf(name, sizeof(name), "%s/write.%u", p->path, a->index);
	fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !buf) {
		fail(s, fd < 0 ? errno : ENOMEM);
		goto out;
	}
	for (uint64_t i = 0; i + 8 <= p->bs; i += 8) {
		uint64_t r = rnd(&x);

		memcpy(buf + i, &r, 8);
	}
	while (done < want) {
		size_t len = want - done < p->bs ? want - done : p->bs;
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			fail(s, errno);
			goto out;
		}
		done += (uint64_t)n;
		account(s, n);
	}
	if (fsync(fd))
		fail(s, errno);
out:
	if (fd >= 0 && close(fd))
		fail(s, errno);
	free(buf);
	return NULL;
}

static void run_threads(struct shared *s, void *(*fn)(void *), unsigned int n,
			bool per_thread)
{
	static struct thread_arg a[MAX_THREADS];
	pthread_t t[MAX_THREADS];

	if (n > MAX_THREADS)
		n = MAX_THREADS;
	for (unsigned int i = 0; i < n; i++) {
		a[i] = (struct thread_arg){s, s->p->seed + i * 7919, i};
		if (pthread_create(&t[i], NULL, fn,
				   per_thread ? (void *)&a[i] : (void *)s)) {
			fprintf(stderr,
				"read_patterns: pthread_create failed\n");
			exit(1);
		}
	}
	for (unsigned int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* One reader visiting @streams positions in turn, @bs each time. */
static void run_interleave(struct shared *s, uint64_t stride, uint64_t step)
{
	const struct params *p = s->p;
	char *buf = malloc(p->bs);
	uint64_t rounds = stride / step;

	for (uint64_t r = 0; buf && r < rounds && !expired(s); r++)
		for (unsigned int c = 0; c < p->streams; c++) {
			uint64_t off = c * stride + r * step;
			ssize_t n = pread(s->fd, buf, p->bs, (off_t)off);

			if (n < 0) {
				fail(s, errno);
				free(buf);
				return;
			}
			account(s, n);
		}
	free(buf);
}

/* The untimed first pass of a hot-cache workload. */
static void warm(struct shared *s)
{
	char *buf = malloc(1 << 20);
	uint64_t off = 0;
	ssize_t n = 1;

	while (buf && off < s->p->size &&
	       (n = pread(s->fd, buf, 1 << 20, (off_t)off)) > 0)
		off += (uint64_t)n;
	if (!buf || n < 0)
		fail(s, buf ? errno : ENOMEM);
	free(buf);
}

static void print_extras(struct shared *s, const struct params *p, double t0)
{
	if (s->nlat) {
		size_t i50 = s->nlat / 2, i99 = s->nlat * 99 / 100;

		qsort(s->lat, s->nlat, sizeof(*s->lat), cmp_double);
		printf(" p50_us=%.0f p99_us=%.0f", s->lat[i50] * 1e6,
		       s->lat[i99 < s->nlat ? i99 : s->nlat - 1] * 1e6);
	}
	if (p->tenths && s->tenth_at[10] > 0) {
		double mbs[10], sorted[10];

		s->tenth_at[0] = t0;
		printf(" tenths=");
		for (int i = 0; i < 10; i++) {
			double dt = s->tenth_at[i + 1] - s->tenth_at[i];

			mbs[i] = (double)(p->size / 10) /
				 (dt > 1e-9 ? dt : 1e-9) / 1e6;
			sorted[i] = mbs[i];
			printf("%s%.0f", i ? "," : "", mbs[i]);
		}
		qsort(sorted, 10, sizeof(*sorted), cmp_double);
		printf(" flat=%.2f", sorted[0] / ((sorted[4] + sorted[5]) / 2));
	}
	if (!strcmp(p->pattern, "slow"))
		printf(" paced=%" PRIu64 " streams_ok=%" PRIu64 "/%u"
		       " min_pct=%.1f",
		       s->paced, s->streams_ok, p->streams, s->min_pct);
	if (!strcmp(p->pattern, "slow") && p->fast)
		printf(" fast_mbs=%.1f",
		       (double)s->fast_bytes / (s->fast_end - t0) / 1e6);
}

int main(int argc, char **argv)
{
	struct params p = {.threads = 0, .streams = 0, .seed = 42};
	struct shared s = {.p = &p, .fd = -1, .min_pct = 100.0};
	struct stat st;
	double t0, t1;
	int64_t c0 = -1, c1 = -1; /* --cpu: the cgroup's count then */

	if (argc < 3) {
		fprintf(stderr, "usage: read_patterns PATTERN FILE [--bs N] "
				"[--threads N] [--streams N] [--count N] "
				"[--seed N] [--limit N] [--seconds S] "
				"[--rate N] [--fast N] [--total N] [--warm 1] "
				"[--tenths 1] [--latency 0] [--cpu FILE]\n");
		return 2;
	}
	pthread_mutex_init(&s.lock, NULL);
	p.pattern = argv[1];
	p.path = argv[2];
	for (int i = 3; i < argc; i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "read_patterns: %s needs a value\n",
				argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--bs"))
			p.bs = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--limit"))
			p.limit = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			p.threads = (unsigned int)parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--streams"))
			p.streams = (unsigned int)parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--count"))
			p.count = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--seed"))
			p.seed = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--fast"))
			p.fast = (unsigned int)parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--rate"))
			p.rate = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--total"))
			p.total = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			p.seconds = strtod(argv[i + 1], NULL);
		else if (!strcmp(argv[i], "--warm"))
			p.warm = atoi(argv[i + 1]) != 0;
		else if (!strcmp(argv[i], "--tenths"))
			p.tenths = atoi(argv[i + 1]) != 0;
		else if (!strcmp(argv[i], "--latency"))
			p.nolat = atoi(argv[i + 1]) == 0;
		else if (!strcmp(argv[i], "--cpu"))
			p.cpu_file = argv[i + 1];
		else {
			fprintf(stderr, "read_patterns: unknown option %s\n",
				argv[i]);
			return 2;
		}
	}
	if (p.threads > MAX_THREADS || p.streams > 65536) {
		fprintf(stderr, "read_patterns: too many threads or streams\n");
		return 2;
	}
	if (p.cpu_file && cgroup_cpu_ns(p.cpu_file) < 0) {
		fprintf(stderr,
			"read_patterns: --cpu %s: not a cgroup's cpuacct.usage "
			"or cpu.stat\n",
			p.cpu_file);
		return 2;
	}

	if (!strcmp(p.pattern, "write")) {
		p.bs = p.bs ? p.bs : 64 << 10;
		p.threads = p.threads ? p.threads : 8;
		p.total = p.total ? p.total : (uint64_t)2 << 30;
		c0 = cgroup_cpu_ns(p.cpu_file);
		t0 = now();
		run_threads(&s, thread_write, p.threads, true);
		t1 = now();
		c1 = cgroup_cpu_ns(p.cpu_file);
		goto report;
	}
	if (!strcmp(p.pattern, "files")) {
		/* No one FILE: each reader opens its own FILE.i. */
		p.bs = p.bs ? p.bs : 128 << 10;
		p.threads = p.threads ? p.threads : 4;
		c0 = cgroup_cpu_ns(p.cpu_file);
		t0 = now();
		if (p.seconds > 0)
			s.deadline = t0 + p.seconds;
		run_threads(&s, thread_files, p.threads, true);
		t1 = now();
		c1 = cgroup_cpu_ns(p.cpu_file);
		goto report;
	}

	if (stat(p.path, &st)) {
		fprintf(stderr, "read_patterns: %s: %s\n", p.path,
			strerror(errno));
		return 1;
	}
	p.size = (uint64_t)st.st_size;
	if (p.limit && p.limit < p.size)
		p.size = p.limit;
	s.fd = open(p.path, O_RDONLY);
	if (s.fd < 0) {
		fprintf(stderr, "read_patterns: %s: %s\n", p.path,
			strerror(errno));
		return 1;
	}
	if (p.warm) {
		warm(&s);
		if (lseek(s.fd, 0, SEEK_SET) < 0)
			fail(&s, errno);
	}

	c0 = cgroup_cpu_ns(p.cpu_file);
	t0 = now();
	if (p.seconds > 0)
		s.deadline = t0 + p.seconds;
	if (!strcmp(p.pattern, "seq")) {
		p.bs = p.bs ? p.bs : 1 << 20;
		p.threads = 1;
		run_threads(&s, thread_shared_fd, 1, false);
	} else if (!strcmp(p.pattern, "shared-fd")) {
		p.bs = p.bs ? p.bs : 11 << 10;
		p.tenths = false;
		run_threads(&s, thread_shared_fd, p.threads ? p.threads : 2,
			    false);
	} else if (!strcmp(p.pattern, "interleave")) {
		p.bs = p.bs ? p.bs : 4096;
		p.streams = p.streams ? p.streams : 2;
		run_interleave(&s, p.size / p.streams, p.bs);
	} else if (!strcmp(p.pattern, "column")) {
		p.bs = 4096;
		p.streams = p.streams ? p.streams : 512;
		/* Row r is bytes [r * stride, (r + 1) * stride). */
		run_interleave(&s, p.size / p.streams, 4096);
	} else if (!strcmp(p.pattern, "random")) {
		p.bs = p.bs ? p.bs : 8192;
		p.count = p.count ? p.count : 2000;
		run_threads(&s, thread_random, p.threads ? p.threads : 1, true);
	} else if (!strcmp(p.pattern, "per-request")) {
		p.bs = p.bs ? p.bs : 128 << 10;
		run_threads(&s, thread_per_request, p.threads ? p.threads : 4,
			    false);
	} else if (!strcmp(p.pattern, "slow")) {
		p.bs = p.bs ? p.bs : 4096;
		p.streams = p.streams ? p.streams : 64;
		p.rate = p.rate ? p.rate : 512 << 10;
		p.seconds = p.seconds > 0 ? p.seconds : 20;
		if (p.streams + p.fast > MAX_THREADS) {
			fprintf(stderr,
				"read_patterns: slow: at most %d streams\n",
				MAX_THREADS);
			return 2;
		}
		s.deadline = t0 + p.seconds;
		run_threads(&s, thread_slow, p.streams + p.fast, true);
	} else {
		fprintf(stderr, "read_patterns: unknown pattern '%s'\n",
			p.pattern);
		return 2;
	}
	t1 = now();
	c1 = cgroup_cpu_ns(p.cpu_file);
	close(s.fd);
report:
	if (s.error) {
		fprintf(stderr, "read_patterns: %s: %s\n", p.path,
			strerror(s.error));
		return 1;
	}
	printf("%s %" PRIu64 " %.3f %.1f %" PRIu64, p.pattern, s.bytes, t1 - t0,
	       (double)s.bytes / (t1 - t0) / 1e6, s.requests);
	print_extras(&s, &p, t0);
	if (c0 >= 0 && c1 >= c0)
		printf(" cpu_ns=%" PRId64, c1 - c0);
	printf("\n");
	free(s.lat);
	return 0;
}
