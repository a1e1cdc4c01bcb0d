/* cut_churn.c - a file cut short and re-extended behind the mount, over and
 * over, while readers read it through the mount; counts the zero words the
 * readers see.  Every word the writer ever puts in the file is non-zero, so
 * a zero word was never the file's content, old or new.
 *
 * Usage: afs_cut_churn BACKING_FILE MOUNT_FILE SECONDS [READER...]
 *   READER: held    one descriptor held open, 1 MiB pread()s from 0 to the
 *                   end of file, again and again
 *           odirect the same through a descriptor opened O_DIRECT (a pass
 *                   also ends at a read that ends off a page boundary)
 *           reopen  an open per pass, 64 KiB read()s to the end of file
 *           mmap    a mapping per pass of the size fstat() gives, SIGBUS
 *                   (the file shrank under the mapping) ends the pass
 *   (default: all three)
 * The writer, on BACKING_FILE: ftruncate() to a random length under
 * 128 KiB, then append 64 KiB write()s up to a random length between 1 and
 * 4 MiB, then cut again.  Lengths are word multiples.
 *
 * Prints one line per reader: "READER passes P zero_words Z zero_runs R"
 * and, for the first few runs, where they were ("READER zeros at OFF len N
 * (read of LEN at ROFF returned GOT)").  Exit status 0; the caller judges
 * the counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KIB 1024u
#define MIB (1024u * 1024u)
#define SHOW_RUNS 5

static const char *mnt_path;
static volatile bool stop;

static uint32_t word_at(uint64_t off, uint32_t gen)
{
	/* The top bit set: never zero. */
	return 0x80000000u | (((gen & 0x7fffu) << 16) ^ (uint32_t)(off >> 2));
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "cut_churn: %s %s: %s\n", what, path, strerror(errno));
	exit(2);
}

struct writer {
	const char *path;
	uint64_t cuts;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t seed = (uint64_t)time(NULL) * 2654435761u | 1;
	static uint32_t buf[64 * KIB / 4];
	uint32_t gen = 0;
	int fd = open(w->path, O_WRONLY);

	if (fd < 0)
		die("open", w->path);
	while (!stop) {
		uint64_t cut = (rnd(&seed) % (128 * KIB)) & ~3ull;
		uint64_t end = (MIB + rnd(&seed) % (3 * MIB)) & ~3ull;
		uint64_t off = cut;

		gen++;
		if (ftruncate(fd, (off_t)cut) < 0)
			die("ftruncate", w->path);
		w->cuts++;
		while (off < end && !stop) {
			size_t n = end - off < sizeof(buf) ? end - off
							   : sizeof(buf);
			ssize_t done;

			for (size_t i = 0; i < n / 4; i++)
				buf[i] = word_at(off + 4 * i, gen);
			done = pwrite(fd, buf, n, (off_t)off);
			if (done < 0)
				die("pwrite", w->path);
			off += (uint64_t)done;
		}
	}
	close(fd);
	return NULL;
}

struct reader {
	const char *kind;
	pthread_t tid;
	uint64_t passes, zero_words, zero_runs;
	int shown;
};

/* A run of @len zero bytes at @at ended: count it, show the first few. */
static void zero_run(struct reader *r, uint64_t at, uint64_t len, size_t rlen,
		     uint64_t roff, size_t n)
{
	r->zero_runs++;
	if (r->shown++ < SHOW_RUNS)
		printf("%s zeros at %llu len %llu (read of %zu at %llu "
		       "returned %zu)\n",
		       r->kind, (unsigned long long)at, (unsigned long long)len,
		       rlen, (unsigned long long)roff, n);
}

/* Count the zero words of @buf: @n bytes at @off, returned by a read of
 * @rlen at @roff. */
static void check(struct reader *r, const char *buf, size_t n, uint64_t off,
		  uint64_t roff, size_t rlen)
{
	uint64_t run_start = 0, run_len = 0;

	for (size_t i = 0; i + 4 <= n; i += 4) {
		uint32_t v;

		memcpy(&v, buf + i, 4);
		if (v == 0) {
			if (!run_len)
				run_start = off + i;
			run_len += 4;
			r->zero_words++;
			continue;
		}
		if (run_len)
			zero_run(r, run_start, run_len, rlen, roff, n);
		run_len = 0;
	}
	if (run_len)
		zero_run(r, run_start, run_len, rlen, roff, n);
}

/* Read @fd from 0 to the end of file in @chunk reads; 0 or -errno. */
static int read_pass(struct reader *r, int fd, size_t chunk, char *buf)
{
	uint64_t off = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, chunk, (off_t)off);

		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		check(r, buf, (size_t)n, off, off, chunk);
		off += (uint64_t)n;
		if (off % 4096 && !strcmp(r->kind, "odirect"))
			return 0; /* O_DIRECT: the end, or as good as */
	}
}

static void *held_main(void *arg)
{
	struct reader *r = arg;
	char *buf = NULL;
	int fd = open(mnt_path,
		      O_RDONLY | (!strcmp(r->kind, "odirect") ? O_DIRECT : 0));

	if (posix_memalign((void **)&buf, 4096, MIB))
		buf = NULL;
	if (fd < 0 || !buf)
		die("open", mnt_path);
	while (!stop) {
		if (read_pass(r, fd, MIB, buf) < 0)
			die("pread", mnt_path);
		r->passes++;
	}
	close(fd);
	free(buf);
	return NULL;
}

static void *reopen_main(void *arg)
{
	struct reader *r = arg;
	char *buf = malloc(64 * KIB);

	while (!stop) {
		int fd = open(mnt_path, O_RDONLY);

		if (fd < 0)
			die("open", mnt_path);
		if (read_pass(r, fd, 64 * KIB, buf) < 0)
			die("read", mnt_path);
		close(fd);
		r->passes++;
	}
	free(buf);
	return NULL;
}

static __thread sigjmp_buf *bus_jmp;

static void on_bus(int sig)
{
	(void)sig;
	if (bus_jmp)
		siglongjmp(*bus_jmp, 1);
	abort();
}

static void *mmap_main(void *arg)
{
	struct reader *r = arg;
	char *copy = malloc(4 * MIB);

	while (!stop) {
		int fd = open(mnt_path, O_RDONLY);
		struct stat st;
		sigjmp_buf jb;
		volatile size_t got = 0;
		char *p;

		if (fd < 0 || fstat(fd, &st) < 0)
			die("open", mnt_path);
		if (st.st_size == 0 || st.st_size > 4 * MIB) {
			close(fd);
			continue;
		}
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd,
			 0);
		if (p == MAP_FAILED)
			die("mmap", mnt_path);
		/* Copy page by page; a SIGBUS (the file shrank) ends the
		 * copy, and only what was copied is checked. */
		if (!sigsetjmp(jb, 1)) {
			bus_jmp = &jb;
			while (got < (size_t)st.st_size) {
				size_t n = (size_t)st.st_size - got;

				n = n < 4096 ? n : 4096;
				memcpy(copy + got, p + got, n);
				got += n;
			}
		}
		bus_jmp = NULL;
		check(r, copy, got, 0, 0, (size_t)st.st_size);
		munmap(p, (size_t)st.st_size);
		close(fd);
		r->passes++;
	}
	free(copy);
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *all[] = {"held", "reopen", "mmap"};
	struct reader rs[8];
	struct writer w = {0};
	struct sigaction sa = {.sa_handler = on_bus};
	pthread_t wt;
	const char **kinds;
	int nk;
	double secs;

	if (argc < 4) {
		fprintf(stderr, "usage: afs_cut_churn BACKING_FILE MOUNT_FILE "
				"SECONDS [held|reopen|mmap]...\n");
		return 2;
	}
	w.path = argv[1];
	mnt_path = argv[2];
	secs = atof(argv[3]);
	kinds = argc > 4 ? (const char **)argv + 4 : all;
	nk = argc > 4 ? argc - 4 : 3;
	if (nk > 8 || secs <= 0) {
		fprintf(stderr, "cut_churn: bad arguments\n");
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	if (pthread_create(&wt, NULL, writer_main, &w))
		return 2;
	for (int i = 0; i < nk; i++) {
		void *(*fn)(void *);

		memset(&rs[i], 0, sizeof(rs[i]));
		rs[i].kind = kinds[i];
		if (!strcmp(kinds[i], "held") || !strcmp(kinds[i], "odirect"))
			fn = held_main;
		else if (!strcmp(kinds[i], "reopen"))
			fn = reopen_main;
		else if (!strcmp(kinds[i], "mmap"))
			fn = mmap_main;
		else {
			fprintf(stderr, "cut_churn: unknown reader '%s'\n",
				kinds[i]);
			return 2;
		}
		if (pthread_create(&rs[i].tid, NULL, fn, &rs[i]))
			return 2;
	}
	usleep((useconds_t)(secs * 1e6));
	stop = true;
	pthread_join(wt, NULL);
	for (int i = 0; i < nk; i++) {
		pthread_join(rs[i].tid, NULL);
		printf("%s passes %llu zero_words %llu zero_runs %llu\n",
		       rs[i].kind, (unsigned long long)rs[i].passes,
		       (unsigned long long)rs[i].zero_words,
		       (unsigned long long)rs[i].zero_runs);
	}
	printf("writer cuts %llu\n", (unsigned long long)w.cuts);
	return 0;
}
