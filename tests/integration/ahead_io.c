/* ahead_io.c - read workloads for the cache tests, every byte checked.
 *
 * Files hold a seeded pattern (pattern.h): the 8-byte little-endian word at
 * byte offset 8*w is mix(w ^ seed), so any byte of any file can be checked
 * without a copy of the file, and a stale page (another seed, another
 * offset) is seen.
 *
 * Usage: afs_data_io COMMAND ARGS...
 *   fill FILE SIZE SEED          create/truncate FILE and write SIZE bytes,
 *                                then leave it out of the page cache
 *                                (fdatasync, POSIX_FADV_DONTNEED): a data
 *                                file on disk, as a daemon meets it (a
 *                                kernel-mode read of a resident file is
 *                                served around aheadfs's cache)
 *   write FILE SEED OFF LEN      pwrite the pattern of SEED over [OFF, OFF+LEN)
 *                                of an existing file (no truncation)
 *   check FILE SEED [BS [OFF [LEN]]]
 *                                read [OFF, OFF+LEN) (default: to EOF) in BS
 *                                pieces (default 64K), check; prints
 *                                "bytes N requests R"
 *   coop FILE SEED THREADS BS one|per-request
 *                                THREADS threads take the file's BS chunks in
 *                                turn (a shared counter: chunk i goes to the
 *                                next free thread) and pread them, through ONE
 *                                fd shared by all or an open/pread/close per
 *                                chunk (an NFS server's thread pool); checks
 *                                every chunk and that all were read
 *   random FILE SEED COUNT BS RSEED [SPAN [GRID [HEAD]]]
 *                                COUNT preads of BS bytes at offsets drawn
 *                                (xorshift, RSEED) in (0, SPAN - BS]
 *                                (default SPAN: the file): page-aligned,
 *                                never 0 (a read at 0 starts a sequential
 *                                window by rule, random or not);
 *                                with GRID, distinct multiples of GRID
 *                                (GRID >= BS + 2 pages: no read is ever
 *                                next to another); HEAD 1: first read
 *                                BS bytes at 0 on the same fd (a header);
 *                                prints "requested N rounded P", P = the
 *                                distinct pages touched x 4096
 *   slow FILE SEED THREADS BS RATE SECONDS
 *                                THREADS slow streams: thread t opens FILE
 *                                itself and reads its own part (the file in
 *                                THREADS equal parts) sequentially in BS
 *                                pieces at RATE bytes/s, for SECONDS, every
 *                                piece checked; prints "bytes N"
 *   pin FILE                     map FILE and lock its pages in memory
 *                                (mlock: any page not resident is read in
 *                                first), print "pinned N" (N pages), hold
 *                                them until stdin ends: a file that must
 *                                stay in the page cache, whatever reclaims
 *                                memory meanwhile (a proactive reclaimer
 *                                such as DAMON's pageout scheme takes
 *                                clean file pages idle for seconds, free
 *                                memory or not)
 *   xattr PATH NAME              getxattr(PATH, NAME) the way getfattr does:
 *                                size first, then the value into a buffer of
 *                                that size; prints the value; fails if the
 *                                second answer does not fit the first
 *
 * Sizes take K, M, G suffixes.  Exit 0 ok, 1 mismatch or I/O error (one line
 * on stderr), 2 usage.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"

#define PAGE ((uint64_t)4096)

static uint64_t seed;

static void pattern(uint8_t *buf, uint64_t off, size_t len)
{
	afs_pattern(buf, seed, off, len);
}

/* 0 if @buf holds the pattern of [@off, @off + @len); else prints where. */
static int verify(const char *what, const uint8_t *buf, uint64_t off,
		  size_t len)
{
	uint8_t want[65536];

	for (size_t done = 0; done < len;) {
		size_t n =
			len - done < sizeof(want) ? len - done : sizeof(want);

		pattern(want, off + done, n);
		if (memcmp(want, buf + done, n)) {
			for (size_t i = 0; i < n; i++)
				if (want[i] != buf[done + i]) {
					fprintf(stderr,
						"ahead_io: %s: byte %" PRIu64
						" is 0x%02x, expected 0x%02x\n",
						what, off + done + i,
						buf[done + i], want[i]);
					break;
				}
			return -1;
		}
		done += n;
	}
	return 0;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (end == s || errno) {
		fprintf(stderr, "ahead_io: bad number '%s'\n", s);
		exit(2);
	}
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10, end++;
		break;
	case 'M':
	case 'm':
		v <<= 20, end++;
		break;
	case 'G':
	case 'g':
		v <<= 30, end++;
		break;
	}
	if (*end) {
		fprintf(stderr, "ahead_io: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static int die(const char *what)
{
	fprintf(stderr, "ahead_io: %s: %s\n", what, strerror(errno));
	return 1;
}

static int cmd_fill(const char *path, int flags, uint64_t off, uint64_t end,
		    bool cold)
{
	static uint8_t buf[1 << 20];
	int fd = open(path, O_WRONLY | flags, 0644);

	if (fd < 0)
		return die(path);
	while (off < end) {
		size_t n = end - off < sizeof(buf) ? end - off : sizeof(buf);
		ssize_t w;

		pattern(buf, off, n);
		w = pwrite(fd, buf, n, (off_t)off);
		if (w <= 0)
			return die("pwrite");
		off += (uint64_t)w;
	}
	if (cold && (fdatasync(fd) ||
		     (errno = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))))
		return die("fdatasync/fadvise");
	if (close(fd))
		return die("close");
	return 0;
}

static int cmd_check(const char *path, uint64_t bs, uint64_t off, uint64_t len)
{
	int fd = open(path, O_RDONLY);
	uint64_t end, done = 0, reqs = 0;
	struct stat st;
	uint8_t *buf;

	if (fd < 0 || fstat(fd, &st))
		return die(path);
	end = len ? off + len : (uint64_t)st.st_size;
	buf = malloc(bs);
	if (!buf)
		return die("malloc");
	while (off + done < end) {
		size_t want = end - off - done < bs ? end - off - done : bs;
		ssize_t n = pread(fd, buf, want, (off_t)(off + done));

		if (n < 0)
			return die("pread");
		if (n == 0) {
			fprintf(stderr,
				"ahead_io: %s: EOF at %" PRIu64
				", expected %" PRIu64 "\n",
				path, off + done, end);
			return 1;
		}
		if (verify(path, buf, off + done, (size_t)n))
			return 1;
		done += (uint64_t)n;
		reqs++;
	}
	free(buf);
	close(fd);
	printf("bytes %" PRIu64 " requests %" PRIu64 "\n", done, reqs);
	return 0;
}

struct coop {
	const char *path;
	int fd; /* -1: per request */
	uint64_t size, bs;
	uint64_t next; /* __atomic: next chunk */
	uint64_t bytes; /* __atomic */
	int failed; /* __atomic */
};

static void *coop_thread(void *arg)
{
	struct coop *c = arg;
	uint8_t *buf = malloc(c->bs);

	if (!buf) {
		__atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	while (!__atomic_load_n(&c->failed, __ATOMIC_RELAXED)) {
		uint64_t i = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
		uint64_t off = i * c->bs;
		size_t want;
		ssize_t n;
		int fd = c->fd;

		if (off >= c->size)
			break;
		want = c->size - off < c->bs ? c->size - off : c->bs;
		if (fd < 0 && (fd = open(c->path, O_RDONLY)) < 0) {
			die(c->path);
			goto fail;
		}
		n = pread(fd, buf, want, (off_t)off);
		if (n < 0)
			die("pread");
		if (c->fd < 0)
			close(fd);
		if (n != (ssize_t)want) {
			if (n >= 0)
				fprintf(stderr,
					"ahead_io: short read %zd of %zu at "
					"%" PRIu64 "\n",
					n, want, off);
			goto fail;
		}
		if (verify(c->path, buf, off, want))
			goto fail;
		__atomic_add_fetch(&c->bytes, want, __ATOMIC_RELAXED);
	}
	free(buf);
	return NULL;
fail:
	__atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
	free(buf);
	return NULL;
}

static int cmd_coop(const char *path, unsigned threads, uint64_t bs,
		    const char *handle)
{
	struct coop c = {.path = path, .fd = -1, .bs = bs};
	pthread_t tid[64];
	struct stat st;
	bool one = !strcmp(handle, "one");

	if (!one && strcmp(handle, "per-request")) {
		fprintf(stderr, "ahead_io: coop: handle is one|per-request\n");
		return 2;
	}
	if (!threads || threads > 64 || !bs)
		return 2;
	if (stat(path, &st))
		return die(path);
	c.size = (uint64_t)st.st_size;
	if (one && (c.fd = open(path, O_RDONLY)) < 0)
		return die(path);
	for (unsigned t = 0; t < threads; t++)
		if (pthread_create(&tid[t], NULL, coop_thread, &c)) {
			fprintf(stderr, "ahead_io: pthread_create failed\n");
			return 1;
		}
	for (unsigned t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	if (c.fd >= 0)
		close(c.fd);
	if (c.failed)
		return 1;
	if (c.bytes != c.size) {
		fprintf(stderr, "ahead_io: read %" PRIu64 " of %" PRIu64 "\n",
			c.bytes, c.size);
		return 1;
	}
	printf("bytes %" PRIu64 "\n", c.bytes);
	return 0;
}

struct slow {
	const char *path;
	uint64_t part, bs, rate;
	struct timespec end;
	uint64_t bytes; /* __atomic */
	int failed; /* __atomic */
	unsigned next; /* __atomic: next thread's number */
};

static double ts_sec(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

static void *slow_thread(void *arg)
{
	struct slow *s = arg;
	unsigned t = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
	uint64_t off = t * s->part, end = off + s->part, done = 0;
	uint8_t *buf = malloc(s->bs);
	struct timespec start, now;
	int fd = open(s->path, O_RDONLY);

	clock_gettime(CLOCK_MONOTONIC, &start);
	if (!buf || fd < 0) {
		die(s->path);
		goto fail;
	}
	for (;;) {
		size_t want = end - off < s->bs ? end - off : s->bs;
		double due;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!want || ts_sec(&now) >= ts_sec(&s->end) ||
		    __atomic_load_n(&s->failed, __ATOMIC_RELAXED))
			break;
		/* Pace: piece k is due at start + k * bs / rate. */
		due = ts_sec(&start) + (double)done / (double)s->rate;
		if (due > ts_sec(&now))
			usleep((useconds_t)((due - ts_sec(&now)) * 1e6));
		n = pread(fd, buf, want, (off_t)off);
		if (n != (ssize_t)want) {
			if (n < 0)
				die("pread");
			else
				fprintf(stderr,
					"ahead_io: short read %zd of %zu at "
					"%" PRIu64 "\n",
					n, want, off);
			goto fail;
		}
		if (verify(s->path, buf, off, want))
			goto fail;
		off += want;
		done += want;
	}
	__atomic_add_fetch(&s->bytes, done, __ATOMIC_RELAXED);
	free(buf);
	close(fd);
	return NULL;
fail:
	__atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
	free(buf);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int cmd_slow(const char *path, unsigned threads, uint64_t bs,
		    uint64_t rate, uint64_t seconds)
{
	struct slow s = {.path = path, .bs = bs, .rate = rate};
	pthread_t tid[256];
	struct stat st;
	unsigned t;

	if (!threads || threads > 256 || !bs || !rate)
		return 2;
	if (stat(path, &st))
		return die(path);
	s.part = (uint64_t)st.st_size / threads / bs * bs;
	clock_gettime(CLOCK_MONOTONIC, &s.end);
	s.end.tv_sec += (time_t)seconds;
	for (t = 0; t < threads; t++)
		if (pthread_create(&tid[t], NULL, slow_thread, &s))
			break;
	for (unsigned i = 0; i < t; i++)
		pthread_join(tid[i], NULL);
	if (t < threads || s.failed)
		return 1;
	printf("bytes %" PRIu64 "\n", s.bytes);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmd_random(const char *path, uint64_t count, uint64_t bs,
		      uint64_t rseed, uint64_t span, uint64_t grid, bool head)
{
	uint8_t *used = NULL; /* grid: slots drawn */
	int fd = open(path, O_RDONLY);
	uint64_t rng = rseed * 0x9E3779B97F4A7C15ULL | 1, npages = 0, slots;
	uint64_t *pages, pages_per = (bs + PAGE - 1) / PAGE + 1;
	struct stat st;
	uint8_t *buf = malloc(bs);

	if (fd < 0 || fstat(fd, &st))
		return die(path);
	if (!span)
		span = (uint64_t)st.st_size;
	if (!buf || !bs || span < bs || span > (uint64_t)st.st_size)
		return 2;
	if (grid % PAGE || (grid && grid < bs))
		return 2;
	slots = (span - bs) / (grid ? grid : PAGE); /* slot 0 is not drawn */
	if (slots < 2 || (grid && count > slots / 2)) {
		fprintf(stderr,
			"ahead_io: %" PRIu64 " reads on %" PRIu64
			" grid slots: too dense\n",
			count, slots);
		return 2;
	}
	pages = calloc(count * pages_per, sizeof(*pages));
	if (grid)
		used = calloc(slots + 1, 1);
	if (!pages || (grid && !used))
		return die("calloc");
	if (head) {
		if (pread(fd, buf, bs, 0) != (ssize_t)bs)
			return die("pread of the head");
		if (verify(path, buf, 0, bs))
			return 1;
	}
	for (uint64_t i = 0; i < count; i++) {
		uint64_t off;
		ssize_t n;

		uint64_t slot;

		do {
			rng ^= rng >> 12;
			rng ^= rng << 25;
			rng ^= rng >> 27;
			slot = 1 + (rng * 2685821657736338717ULL) % slots;
		} while (used && used[slot]);
		if (used)
			used[slot] = 1;
		off = slot * (grid ? grid : PAGE);
		n = pread(fd, buf, bs, (off_t)off);
		if (n != (ssize_t)bs) {
			if (n < 0)
				return die("pread");
			fprintf(stderr, "ahead_io: short read at %" PRIu64 "\n",
				off);
			return 1;
		}
		if (verify(path, buf, off, bs))
			return 1;
		for (uint64_t p = off / PAGE; p * PAGE < off + bs; p++)
			pages[npages++] = p;
	}
	qsort(pages, npages, sizeof(*pages), cmp_u64);
	uint64_t distinct = 0;
	for (uint64_t i = 0; i < npages; i++)
		distinct += !i || pages[i] != pages[i - 1];
	printf("requested %" PRIu64 " rounded %" PRIu64 "\n", count * bs,
	       distinct * PAGE);
	free(used);
	free(pages);
	free(buf);
	close(fd);
	return 0;
}

static int cmd_pin(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	void *map;
	char c;

	if (fd < 0)
		return die(path);
	if (fstat(fd, &st))
		return die("fstat");
	if (!st.st_size) {
		fprintf(stderr, "ahead_io: %s is empty\n", path);
		return 1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return die("mmap");
	if (mlock(map, (size_t)st.st_size))
		return die("mlock");
	printf("pinned %" PRIu64 "\n",
	       ((uint64_t)st.st_size + PAGE - 1) / PAGE);
	fflush(stdout);
	while (read(STDIN_FILENO, &c, 1) > 0)
		;
	munmap(map, (size_t)st.st_size);
	close(fd);
	return 0;
}

static int cmd_xattr(const char *path, const char *name)
{
	ssize_t size = getxattr(path, name, NULL, 0), n;
	char *buf;

	if (size < 0)
		return die("getxattr size");
	buf = malloc((size_t)size + 1);
	if (!buf)
		return die("malloc");
	n = getxattr(path, name, buf, (size_t)size);
	if (n < 0)
		return die("getxattr value (into the size it answered)");
	fwrite(buf, 1, (size_t)n, stdout);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "fill") && argc == 5) {
		seed = parse_size(argv[4]);
		return cmd_fill(argv[2], O_CREAT | O_TRUNC, 0,
				parse_size(argv[3]), true);
	}
	if (!strcmp(cmd, "write") && argc == 6) {
		uint64_t off = parse_size(argv[4]);

		seed = parse_size(argv[3]);
		return cmd_fill(argv[2], 0, off, off + parse_size(argv[5]),
				false);
	}
	if (!strcmp(cmd, "check") && argc >= 4 && argc <= 7) {
		seed = parse_size(argv[3]);
		return cmd_check(argv[2],
				 argc > 4 ? parse_size(argv[4]) : 64 << 10,
				 argc > 5 ? parse_size(argv[5]) : 0,
				 argc > 6 ? parse_size(argv[6]) : 0);
	}
	if (!strcmp(cmd, "coop") && argc == 7) {
		seed = parse_size(argv[3]);
		return cmd_coop(argv[2], (unsigned)parse_size(argv[4]),
				parse_size(argv[5]), argv[6]);
	}
	if (!strcmp(cmd, "random") && argc >= 7 && argc <= 10) {
		seed = parse_size(argv[3]);
		return cmd_random(argv[2], parse_size(argv[4]),
				  parse_size(argv[5]), parse_size(argv[6]),
				  argc > 7 ? parse_size(argv[7]) : 0,
				  argc > 8 ? parse_size(argv[8]) : 0,
				  argc > 9 && parse_size(argv[9]));
	}
	if (!strcmp(cmd, "slow") && argc == 8) {
		seed = parse_size(argv[3]);
		return cmd_slow(argv[2], (unsigned)parse_size(argv[4]),
				parse_size(argv[5]), parse_size(argv[6]),
				parse_size(argv[7]));
	}
	if (!strcmp(cmd, "pin") && argc == 3)
		return cmd_pin(argv[2]);
	if (!strcmp(cmd, "xattr") && argc == 4)
		return cmd_xattr(argv[2], argv[3]);
	fprintf(stderr, "usage: afs_data_io fill FILE SIZE SEED\n"
			"       afs_data_io write FILE SEED OFF LEN\n"
			"       afs_data_io check FILE SEED [BS [OFF [LEN]]]\n"
			"       afs_data_io coop FILE SEED THREADS BS "
			"one|per-request\n"
			"       afs_data_io random FILE SEED COUNT BS RSEED "
			"[SPAN [GRID [HEAD]]]\n"
			"       afs_data_io slow FILE SEED THREADS BS RATE "
			"SECONDS\n"
			"       afs_data_io pin FILE\n"
			"       afs_data_io xattr PATH NAME\n");
	return 2;
}
