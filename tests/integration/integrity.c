/* integrity.c - seeded random I/O through the mount, checked against a model.
 *
 * Usage: afs_integrity [-s SEED] [-n OPS] [-f FILES] [-z MAXSIZE] [-m]
 *                      MOUNT_DIR BACKING_DIR
 *   Runs OPS (default 5000) random operations on a few files in MOUNT_DIR:
 *   pwrite (O_APPEND writes too), read, ftruncate/truncate, rename (also over
 *   another file), fsync/fdatasync, close and reopen (O_TRUNC sometimes).
 *   An in-memory model holds every file's expected bytes; every read is
 *   checked against it, and at the end every file is read on the backing
 *   (BACKING_DIR is MOUNT_DIR's directory on the backing) and compared, and
 *   names the model says are gone must be gone.
 *   -m mixes in mmap: reads and MAP_SHARED writes of random ranges.
 *   The seed (default: from the clock) is printed first; the same seed and
 *   options replay the same operations.  On a mismatch the last operations
 *   are printed with the first differing byte.  Exit 0 ok, 1 mismatch.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAMES 16 /* name pool: files are renamed among these */
#define HISTORY 16

struct mfile {
	int fd; /* open O_RDWR through the mount, follows renames */
	char *data; /* expected contents */
	size_t size;
};

static struct mfile *slot[NAMES]; /* slot[i]: the file named "f<i>" */
static size_t max_size = 4 << 20;
static uint64_t rng;
static char hist[HISTORY][160];
static unsigned long nops;
static int mdir = -1; /* MOUNT_DIR */

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible across libcs, unlike rand(). */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static size_t below(size_t n)
{
	return n ? rnd() % n : 0;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hist[nops % HISTORY], sizeof(hist[0]), fmt, ap);
	va_end(ap);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL at op %lu: ", nops);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nlast operations:\n");
	for (unsigned long i = nops >= HISTORY ? nops - HISTORY + 1 : 0;
	     i <= nops; i++)
		printf("  #%lu %s\n", i, hist[i % HISTORY]);
	exit(1);
}

static void name_of(int i, char *buf)
{
	sprintf(buf, "f%d", i);
}

static void grow(struct mfile *f, size_t size)
{
	if (size > f->size)
		memset(f->data + f->size, 0, size - f->size);
	f->size = size;
}

static void check(const char *what, const char *got, const char *want,
		  size_t len, size_t off)
{
	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i])
			fail("%s: byte %zu: got 0x%02x, expected 0x%02x", what,
			     off + i, (unsigned char)got[i],
			     (unsigned char)want[i]);
}

static int open_slot(int i, int flags)
{
	char name[16];
	int fd;

	name_of(i, name);
	fd = openat(mdir, name, O_RDWR | flags, 0644);
	if (fd < 0)
		fail("open %s: %s", name, strerror(errno));
	return fd;
}

static void create(int i)
{
	struct mfile *f = calloc(1, sizeof(*f));

	f->data = malloc(max_size);
	f->fd = open_slot(i, O_CREAT | O_EXCL);
	slot[i] = f;
}

static void destroy(struct mfile *f)
{
	close(f->fd);
	free(f->data);
	free(f);
}

static int pick_live(void)
{
	int i = below(NAMES);

	while (!slot[i])
		i = (i + 1) % NAMES;
	return i;
}

static size_t pick_len(void)
{
	/* Mostly small, sometimes page-sized runs, sometimes large. */
	switch (below(4)) {
	case 0:
		return 1 + below(100);
	case 1:
		return 4096 * (1 + below(4));
	case 2:
		return 1 + below(65536);
	default:
		return 1 + below(300000);
	}
}

static void op_write(int i)
{
	struct mfile *f = slot[i];
	size_t len = pick_len(), off;
	char *buf;
	bool append = below(8) == 0;
	int fd = f->fd;

	off = below(f->size + 65536);
	if (off >= max_size)
		off = below(max_size);
	if (off + len > max_size)
		len = max_size - off;
	if (append && f->size + len > max_size)
		append = false;
	if (append)
		off = f->size;
	if (!len)
		return;
	buf = malloc(len);
	for (size_t k = 0; k < len; k++)
		buf[k] = (char)rnd();
	note("write f%d off=%zu len=%zu%s", i, off, len,
	     append ? " O_APPEND" : "");
	if (append)
		fd = open_slot(i, O_APPEND);
	ssize_t n = append ? write(fd, buf, len) : pwrite(fd, buf, len, off);
	if (n != (ssize_t)len)
		fail("write f%d: %zd of %zu: %s", i, n, len, strerror(errno));
	if (append)
		close(fd);
	if (off + len > f->size)
		grow(f, off + len);
	memcpy(f->data + off, buf, len);
	free(buf);
}

static void op_read(int i)
{
	struct mfile *f = slot[i];
	size_t len = pick_len(), off = below(f->size + 4096), want;
	char *buf = malloc(len);
	ssize_t n;

	note("read f%d off=%zu len=%zu (size %zu)", i, off, len, f->size);
	n = pread(f->fd, buf, len, off);
	want = off >= f->size ? 0 : (f->size - off < len ? f->size - off : len);
	if (n != (ssize_t)want)
		fail("read f%d off=%zu len=%zu: got %zd bytes, expected %zu "
		     "(%s)",
		     i, off, len, n, want, n < 0 ? strerror(errno) : "short");
	check("read", buf, f->data + off, want, off);
	free(buf);
}

static void op_truncate(int i)
{
	struct mfile *f = slot[i];
	size_t size = below(3) ? below(f->size + 1) : below(max_size);
	char name[16];
	int r;

	name_of(i, name);
	if (below(2)) {
		note("ftruncate f%d %zu", i, size);
		r = ftruncate(f->fd, size);
	} else {
		note("truncate f%d %zu", i, size);
		r = truncate(name, size);
	}
	if (r)
		fail("truncate f%d: %s", i, strerror(errno));
	grow(f, size);
}

static void op_rename(int i)
{
	int j = below(NAMES);
	char from[16], to[16];

	if (j == i)
		return;
	name_of(i, from);
	name_of(j, to);
	note("rename f%d -> f%d%s", i, j, slot[j] ? " (replaces)" : "");
	if (renameat(mdir, from, mdir, to))
		fail("rename f%d f%d: %s", i, j, strerror(errno));
	if (slot[j])
		destroy(slot[j]);
	slot[j] = slot[i];
	slot[i] = NULL;
}

static void op_sync(int i)
{
	bool data = below(2);

	note("%s f%d", data ? "fdatasync" : "fsync", i);
	if (data ? fdatasync(slot[i]->fd) : fsync(slot[i]->fd))
		fail("fsync f%d: %s", i, strerror(errno));
}

static void op_reopen(int i)
{
	bool trunc = below(4) == 0;

	note("reopen f%d%s", i, trunc ? " O_TRUNC" : "");
	close(slot[i]->fd);
	slot[i]->fd = open_slot(i, trunc ? O_TRUNC : 0);
	if (trunc)
		slot[i]->size = 0;
}

static void op_mmap(int i)
{
	struct mfile *f = slot[i];
	long pg = sysconf(_SC_PAGESIZE);
	size_t off, len, moff;
	bool wr = below(2);
	char *m;

	if (!f->size)
		return;
	off = below(f->size);
	len = 1 + below(f->size - off < 200000 ? f->size - off : 200000);
	moff = off - off % pg;
	note("mmap %s f%d off=%zu len=%zu", wr ? "write" : "read", i, off, len);
	m = mmap(NULL, len + (off - moff), PROT_READ | (wr ? PROT_WRITE : 0),
		 MAP_SHARED, f->fd, moff);
	if (m == MAP_FAILED)
		fail("mmap f%d: %s", i, strerror(errno));
	if (wr) {
		for (size_t k = 0; k < len; k++)
			f->data[off + k] = (char)rnd();
		memcpy(m + (off - moff), f->data + off, len);
		if (below(2) && msync(m, len + (off - moff), MS_SYNC))
			fail("msync f%d: %s", i, strerror(errno));
	} else {
		check("mmap read", m + (off - moff), f->data + off, len, off);
	}
	munmap(m, len + (off - moff));
}

/* Every name on the backing must match the model. */
static void final_check(const char *backing)
{
	char path[4096], *buf = malloc(max_size + 1);

	for (int i = 0; i < NAMES; i++) {
		int fd;
		ssize_t n;

		snprintf(path, sizeof(path), "%s/f%d", backing, i);
		fd = open(path, O_RDONLY);
		if (!slot[i]) {
			if (fd >= 0)
				fail("backing f%d exists, the model says it "
				     "was renamed away",
				     i);
			continue;
		}
		if (fd < 0)
			fail("backing f%d: %s", i, strerror(errno));
		n = pread(fd, buf, max_size + 1, 0);
		close(fd);
		if (n != (ssize_t)slot[i]->size)
			fail("backing f%d: %zd bytes, expected %zu", i, n,
			     slot[i]->size);
		check("backing file", buf, slot[i]->data, n, 0);
	}
	free(buf);
}

int main(int argc, char **argv)
{
	unsigned long ops = 5000, seed = 0;
	int files = 4, c, live;
	bool use_mmap = false;

	while ((c = getopt(argc, argv, "s:n:f:z:m")) != -1) {
		switch (c) {
		case 's':
			seed = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			ops = strtoul(optarg, NULL, 0);
			break;
		case 'f':
			files = atoi(optarg);
			break;
		case 'z':
			max_size = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			use_mmap = true;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 2 || files < 1 || files > NAMES / 2 ||
	    max_size < 4096)
		goto usage;
	if (!seed)
		seed = (unsigned long)time(NULL) ^
		       ((unsigned long)getpid() << 16);
	printf("afs_integrity: seed %lu ops %lu files %d max %zu%s\n", seed,
	       ops, files, max_size, use_mmap ? " mmap" : "");
	fflush(stdout);
	rng = seed * 0x9E3779B97F4A7C15ULL | 1;
	mdir = open(argv[optind], O_RDONLY | O_DIRECTORY);
	if (mdir < 0 || fchdir(mdir) < 0) {
		perror(argv[optind]);
		return 2;
	}
	for (int i = 0; i < files; i++)
		create(i);
	live = files;
	for (nops = 0; nops < ops; nops++) {
		int i = pick_live(), r = below(use_mmap ? 100 : 90);

		if (r < 35)
			op_write(i);
		else if (r < 65)
			op_read(i);
		else if (r < 72)
			op_truncate(i);
		else if (r < 77)
			op_rename(i);
		else if (r < 83)
			op_sync(i);
		else if (r < 90)
			op_reopen(i);
		else
			op_mmap(i);
		live = 0;
		for (int k = 0; k < NAMES; k++)
			live += slot[k] != NULL;
		/* Renames over other files shrink the set: refill it. */
		for (int k = 0; live < files && k < NAMES; k++)
			if (!slot[k]) {
				note("create f%d", k);
				create(k);
				live++;
			}
	}
	for (int i = 0; i < NAMES; i++)
		if (slot[i] && fsync(slot[i]->fd))
			fail("final fsync f%d: %s", i, strerror(errno));
	final_check(argv[optind + 1]);
	for (int i = 0; i < NAMES; i++)
		if (slot[i])
			destroy(slot[i]);
	close(mdir);
	printf("afs_integrity: %lu operations ok\n", ops);
	return 0;

usage:
	fprintf(stderr,
		"usage: afs_integrity [-s SEED] [-n OPS] [-f FILES(1-%d)] "
		"[-z MAXSIZE] [-m] MOUNT_DIR BACKING_DIR\n",
		NAMES / 2);
	return 2;
}
