/* read_patterns.c - the read workloads of the seed reports, timed.
 *
 * Usage: read_patterns PATTERN FILE [options]
 * Prints one line: "PATTERN bytes seconds MB/s requests" (MB = 10^6 bytes).
 *
 * Patterns (each names the report it comes from, see ../../docs/benchmarks.md):
 *   seq          one reader, --bs bytes per read (default 1 MiB), whole file
 *   shared-fd    --threads readers (default 2) sharing one fd, read(2) at the
 *                shared file position, --bs (default 11 KiB): the 2004 RAID0
 *                multi-thread regression (429 -> 81 MB/s)
 *   interleave   one reader, --streams streams (default 2) started evenly
 *                through the file, --bs per read (default 4 KiB), visited in
 *                turn: 1,1001,2,1002,... (the context readahead patch set)
 *   column       a matrix column scan: --streams columns (default 64), 4 KiB
 *                per read, page c*stride + r for r = 0.. then the next row
 *   random       --count random reads (default 2000) of --bs bytes (default
 *                8 KiB, also try 2048) at page-aligned offsets, --threads
 *                readers (default 1; 5 = one reader with 4 thrashers as in the
 *                2004 bigfile report), seeded
 *   per-request  --threads readers (default 4) sharing one sequential stream:
 *                each request opens the file, preads --bs (default 128 KiB) at
 *                the next offset of the stream and closes (NFS/SMB thread pool)
 *
 * Options: --bs N[K|M], --threads N, --streams N, --count N, --seed N,
 *          --limit N[K|M|G] (read at most this many bytes of the file).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct params {
	const char *pattern, *path;
	uint64_t bs, limit, count, seed;
	unsigned int threads, streams;
	uint64_t size; /* bytes of the file in play */
};

struct shared {
	const struct params *p;
	int fd; /* shared-fd, interleave, column */
	uint64_t next; /* __atomic: per-request's stream position */
	uint64_t bytes, requests; /* __atomic */
	int error; /* __atomic: first errno */
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

static void *thread_shared_fd(void *arg)
{
	struct shared *s = arg;
	char *buf = malloc(s->p->bs);
	ssize_t n;

	/* read(2) on one fd: the threads share and advance its position. */
	while (buf && (n = read(s->fd, buf, s->p->bs)) > 0) {
		account(s, n);
		if (__atomic_load_n(&s->bytes, __ATOMIC_RELAXED) >= s->p->size)
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

	for (; buf;) {
		uint64_t off = __atomic_fetch_add(&s->next, s->p->bs,
						  __ATOMIC_RELAXED);
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
		account(s, n);
	}
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

struct random_arg {
	struct shared *s;
	uint64_t seed;
};

static void *thread_random(void *arg)
{
	struct random_arg *a = arg;
	struct shared *s = a->s;
	const struct params *p = s->p;
	uint64_t x = a->seed ? a->seed : 1, pages = p->size / 4096;
	char *buf = malloc(p->bs);

	for (uint64_t i = 0; buf && i < p->count && pages; i++) {
		uint64_t off = (rnd(&x) % pages) * 4096;
		ssize_t n = pread(s->fd, buf, p->bs, (off_t)off);

		if (n < 0) {
			fail(s, errno);
			break;
		}
		account(s, n);
	}
	free(buf);
	return NULL;
}

static int run_threads(struct shared *s, void *(*fn)(void *), unsigned int n,
		       void **args)
{
	pthread_t t[256];

	if (n > 256)
		n = 256;
	for (unsigned int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, args ? args[i] : s)) {
			fprintf(stderr,
				"read_patterns: pthread_create failed\n");
			exit(1);
		}
	for (unsigned int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* One reader visiting @streams positions in turn, @bs each time. */
static void run_interleave(struct shared *s, uint64_t stride, uint64_t step)
{
	const struct params *p = s->p;
	char *buf = malloc(p->bs);
	uint64_t rounds = stride / step;

	for (uint64_t r = 0; buf && r < rounds; r++)
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

int main(int argc, char **argv)
{
	struct params p = {.threads = 0, .streams = 0, .seed = 42};
	struct shared s = {.p = &p, .fd = -1};
	struct stat st;
	double t0, t1;

	if (argc < 3) {
		fprintf(stderr, "usage: read_patterns PATTERN FILE [--bs N] "
				"[--threads N] [--streams N] [--count N] "
				"[--seed N] [--limit N]\n");
		return 2;
	}
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
		else {
			fprintf(stderr, "read_patterns: unknown option %s\n",
				argv[i]);
			return 2;
		}
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

	t0 = now();
	if (!strcmp(p.pattern, "seq")) {
		p.bs = p.bs ? p.bs : 1 << 20;
		p.threads = 1;
		run_threads(&s, thread_shared_fd, 1, NULL);
	} else if (!strcmp(p.pattern, "shared-fd")) {
		p.bs = p.bs ? p.bs : 11 << 10;
		run_threads(&s, thread_shared_fd, p.threads ? p.threads : 2,
			    NULL);
	} else if (!strcmp(p.pattern, "interleave")) {
		p.bs = p.bs ? p.bs : 4096;
		p.streams = p.streams ? p.streams : 2;
		run_interleave(&s, p.size / p.streams, p.bs);
	} else if (!strcmp(p.pattern, "column")) {
		p.bs = p.bs ? p.bs : 4096;
		p.streams = p.streams ? p.streams : 64;
		/* Row r of column c is page c * rows + r. */
		run_interleave(&s, p.size / p.streams, 4096);
	} else if (!strcmp(p.pattern, "random")) {
		unsigned int n = p.threads ? p.threads : 1;
		struct random_arg a[256];
		void *args[256];

		p.bs = p.bs ? p.bs : 8192;
		p.count = p.count ? p.count : 2000;
		for (unsigned int i = 0; i < n && i < 256; i++) {
			a[i] = (struct random_arg){&s, p.seed + i * 7919};
			args[i] = &a[i];
		}
		run_threads(&s, thread_random, n, args);
	} else if (!strcmp(p.pattern, "per-request")) {
		p.bs = p.bs ? p.bs : 128 << 10;
		run_threads(&s, thread_per_request, p.threads ? p.threads : 4,
			    NULL);
	} else {
		fprintf(stderr, "read_patterns: unknown pattern '%s'\n",
			p.pattern);
		return 2;
	}
	t1 = now();
	close(s.fd);
	if (s.error) {
		fprintf(stderr, "read_patterns: %s: %s\n", p.path,
			strerror(s.error));
		return 1;
	}
	printf("%s %" PRIu64 " %.3f %.1f %" PRIu64 "\n", p.pattern, s.bytes,
	       t1 - t0, s.bytes / (t1 - t0) / 1e6, s.requests);
	return 0;
}
