/* test_write.c - how a WRITE reaches the backing (afs_data_write(),
 * fs/data/write.c), without FUSE, on a temporary file: which writes go with
 * O_DIRECT and which buffered, that the bytes are right either way, and
 * the file's O_DIRECT descriptor (one, opened once by racing writers,
 * closed with the file's last reference, parked or freed).
 *
 * Where the temporary directory's filesystem refuses O_DIRECT, the same
 * writes must come back buffered and the file counted as refused (the
 * integration test write_direct.sh checks that on a ramfs backing).  Where
 * the kernel has cachestat(2), a direct write must leave none of its pages
 * in the backing's page cache and a buffered one all of them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "data_internal.h"
#include "../fixture/data_path.h"

#define KIB 1024u
#define MIB (1024u * KIB)
#define MIN_DIRECT (256 * KIB)
#define WRITERS 4

struct fixture {
	struct data_path f;
	bool takes_direct; /* the directory's filesystem takes O_DIRECT */
	bool memory_fs; /* tmpfs or ramfs: every page is resident */
};

static uint8_t pattern(uint64_t off, unsigned seed)
{
	/* (off >> 20): no two MiB alike, so bytes a whole MiB off show */
	return (uint8_t)((off >> 12) * 13 + (off >> 20) * 7 + (off & 4095) * 5 +
			 seed);
}

static int setup_min(void **state, uint64_t min)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct afs_data_config cfg;
	char proc[32];
	struct statfs sf;
	int d;

	assert_non_null(fx);
	afs_data_config_init(&cfg);
	cfg.cache_size = 16u << 20;
	cfg.manual_reclaim = true;
	cfg.ra.workers = 1;
	cfg.write_direct = min;
	cache_thread_online();
	data_path_tmpfile(&fx->f, "afs-write");
	data_path_mount(&fx->f, &cfg, false);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fx->f.fd);
	d = open(proc, O_WRONLY | O_DIRECT);
	fx->takes_direct = d >= 0;
	if (d >= 0)
		close(d);
	assert_int_equal(fstatfs(fx->f.fd, &sf), 0);
	fx->memory_fs = sf.f_type == 0x01021994 /* TMPFS_MAGIC */ ||
			sf.f_type == 0x858458f6 /* RAMFS_MAGIC */;
	*state = fx;
	return 0;
}

static int setup(void **state)
{
	return setup_min(state, MIN_DIRECT);
}

static int setup_off(void **state)
{
	return setup_min(state, 0);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	data_path_close(&fx->f);
	free(fx);
	return 0;
}

static uint64_t count(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* Pages of [@off, @off + @len) in the backing's page cache; -1: no
 * cachestat(2) (syscall 451 on x86-64 and arm64). */
static long resident(int fd, uint64_t off, uint64_t len)
{
	uint64_t range[2] = {off, len}, out[5] = {0};

	if (syscall(451, fd, range, out, 0))
		return -1;
	return (long)out[0];
}

static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Write @len bytes of pattern @seed at @off (with RWF_APPEND: at the end,
 * which afs_data_write() must report) through afs_data_write(), in three
 * iovecs (the adapter's requests may come in several); return whether they
 * went direct. */
static bool write_at(struct fixture *fx, uint64_t off, size_t len, int rwf,
		     bool writeback, unsigned seed)
{
	uint8_t *buf = malloc(len + 1);
	struct iovec iov[3];
	size_t a = len / 3, b = len / 3;
	uint64_t at, pos = off;
	struct stat st;
	bool direct;

	assert_non_null(buf);
	if (rwf & RWF_APPEND) {
		assert_int_equal(fstat(fx->f.fd, &st), 0);
		pos = (uint64_t)st.st_size;
	}
	/* Deliberately unaligned, as libfuse's receive buffer is. */
	for (size_t k = 0; k < len; k++)
		buf[1 + k] = pattern(pos + k, seed);
	iov[0] = (struct iovec){buf + 1, a};
	iov[1] = (struct iovec){buf + 1 + a, b};
	iov[2] = (struct iovec){buf + 1 + a + b, len - a - b};
	assert_int_equal(afs_data_write(fx->f.fc, fx->f.fd, iov, 3, off, rwf,
					writeback, &at, &direct),
			 (ssize_t)len);
	assert_int_equal(at, pos);
	free(buf);
	return direct;
}

static void check_bytes(struct fixture *fx, uint64_t off, size_t len,
			unsigned seed)
{
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	assert_int_equal(pread(fx->f.fd, buf, len, (off_t)off), (ssize_t)len);
	for (size_t k = 0; k < len; k++)
		if (buf[k] != pattern(off + k, seed))
			fail_msg("byte %llu: %u, want %u",
				 (unsigned long long)(off + k), buf[k],
				 pattern(off + k, seed));
	free(buf);
}

/* Large aligned writes of the writeback cache: O_DIRECT where the
 * filesystem takes it, nothing left in its page cache; else buffered and
 * the file refused once. */
static void test_large_aligned_writeback_goes_direct(void **state)
{
	struct fixture *fx = *state;
	bool d1, d2, d3;
	long res;

	d1 = write_at(fx, 0, MIB, 0, true, 1);
	d2 = write_at(fx, MIB, MIB, 0, true, 2);
	d3 = write_at(fx, 4 * MIB, MIN_DIRECT, RWF_DSYNC, true, 3);
	check_bytes(fx, 0, MIB, 1);
	check_bytes(fx, MIB, MIB, 2);
	check_bytes(fx, 4 * MIB, MIN_DIRECT, 3);
	if (!fx->takes_direct) {
		assert_false(d1 || d2 || d3);
		assert_int_equal(count(&fx->f.a->direct_counts.writes), 0);
		assert_int_equal(count(&fx->f.a->direct_counts.refused), 1);
		return;
	}
	assert_true(d1 && d2 && d3);
	assert_int_equal(count(&fx->f.a->direct_counts.writes), 3);
	assert_int_equal(count(&fx->f.a->direct_counts.bytes),
			 2 * MIB + MIN_DIRECT);
	assert_int_equal(count(&fx->f.a->direct_counts.refused), 0);
	/* (Read back with pread above: those pages are cached now; the
	 * check is of a range written and never read.) */
	d1 = write_at(fx, 8 * MIB, MIB, 0, true, 4);
	assert_true(d1);
	res = resident(fx->f.fd, 8 * MIB, MIB);
	if (res >= 0 && !fx->memory_fs)
		assert_int_equal(res, 0);
	check_bytes(fx, 8 * MIB, MIB, 4);
}

/* Everything else is buffered, and counts nothing. */
static void test_buffered_otherwise(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *what;
		uint64_t off;
		size_t len;
		int rwf;
		bool writeback;
	} cases[] = {
		{"a write-through write", 0, MIB, 0, false},
		{"smaller than write_direct", MIB, MIN_DIRECT - 4096, 0, true},
		{"an unaligned offset", 2 * MIB + 512, MIB, 0, true},
		{"an unaligned length", 4 * MIB, MIB - 100, 0, true},
		{"larger than a request", 8 * MIB, 2 * MIB, 0, true},
		{"an append", 0, MIB, RWF_APPEND, true},
	};
	uint64_t end = 0;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		long res;

		if (write_at(fx, cases[k].off, cases[k].len, cases[k].rwf,
			     cases[k].writeback, (unsigned)k))
			fail_msg("%s went direct", cases[k].what);
		if (cases[k].rwf & RWF_APPEND) {
			check_bytes(fx, end, cases[k].len, (unsigned)k);
			continue;
		}
		res = resident(fx->f.fd, cases[k].off, cases[k].len);
		if (res >= 0 && (uint64_t)res < cases[k].len / 4096)
			fail_msg("%s: %ld pages cached, want %zu",
				 cases[k].what, res, cases[k].len / 4096);
		check_bytes(fx, cases[k].off, cases[k].len, (unsigned)k);
		if (cases[k].off + cases[k].len > end)
			end = cases[k].off + cases[k].len;
	}
	assert_int_equal(count(&fx->f.a->direct_counts.writes), 0);
	assert_int_equal(count(&fx->f.a->direct_counts.refused), 0);
}

/* write_direct=0: nothing goes direct. */
static void test_off(void **state)
{
	struct fixture *fx = *state;

	assert_false(write_at(fx, 0, MIB, 0, true, 9));
	check_bytes(fx, 0, MIB, 9);
	assert_int_equal(count(&fx->f.a->direct_counts.writes), 0);
}

struct writer {
	struct fixture *fx;
	pthread_barrier_t *go;
	unsigned k;
	bool direct;
};

static void *writer(void *p)
{
	struct writer *w = p;

	cache_thread_online();
	pthread_barrier_wait(w->go);
	w->direct = write_at(w->fx, w->k * MIB, MIB, 0, true, 20 + w->k);
	afs_thread_buf_release();
	cache_thread_offline();
	return NULL;
}

/* Racing first writers open one descriptor between them; the file's last
 * reference closes it, whether the file is freed or parked idle. */
static void test_one_descriptor_closed_with_the_file(void **state)
{
	struct fixture *fx = *state;
	struct writer w[WRITERS];
	pthread_t t[WRITERS];
	pthread_barrier_t go;
	unsigned before;

	if (!fx->takes_direct)
		skip();
	afs_fcache_put(fx->f.fc); /* the fixture's, opened with nothing */
	before = open_fds();
	fx->f.fc = data_path_lookup(fx->f.a, fx->f.fd, 0, false, &fx->f.st);
	pthread_barrier_init(&go, NULL, WRITERS);
	for (unsigned k = 0; k < WRITERS; k++) {
		w[k] = (struct writer){.fx = fx, .go = &go, .k = k};
		assert_int_equal(pthread_create(&t[k], NULL, writer, &w[k]), 0);
	}
	for (unsigned k = 0; k < WRITERS; k++) {
		assert_int_equal(pthread_join(t[k], NULL), 0);
		assert_true(w[k].direct);
		check_bytes(fx, k * MIB, MIB, 20 + k);
	}
	pthread_barrier_destroy(&go);
	assert_int_equal(open_fds(), before + 1);

	/* Freed (nothing cached): closed. */
	afs_fcache_put(fx->f.fc);
	assert_int_equal(open_fds(), before);

	/* Parked idle (a page cached): closed too, and a revived
	 * file opens its own. */
	fx->f.fc = data_path_lookup(fx->f.a, fx->f.fd, 0, false, &fx->f.st);
	assert_true(write_at(fx, 0, MIB, 0, true, 30));
	assert_int_equal(open_fds(), before + 1);
	{
		struct cache_page *pg;
		unsigned int got;

		assert_int_equal(cache_insert_range(fx->f.fc->map, 0, 1,
						    CACHE_NO_MARK, 0, &pg,
						    &got),
				 0);
		assert_int_equal(got, 1);
		assert_int_equal(pread(fx->f.fd, cache_page_data(pg), 4096, 0),
				 4096);
		cache_page_complete(pg, 0);
	}
	afs_fcache_put(fx->f.fc);
	assert_int_equal(count(&fx->f.a->nidle), 1);
	assert_int_equal(open_fds(), before);
	fx->f.fc = data_path_lookup(fx->f.a, fx->f.fd, 0, false, &fx->f.st);
	assert_true(write_at(fx, MIB, MIB, 0, true, 31));
	assert_int_equal(open_fds(), before + 1);
	check_bytes(fx, 0, MIB, 30);
	check_bytes(fx, MIB, MIB, 31);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_large_aligned_writeback_goes_direct, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_buffered_otherwise, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_off, setup_off, teardown),
		cmocka_unit_test_setup_teardown(
			test_one_descriptor_closed_with_the_file, setup,
			teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	afs_thread_buf_release();
	return rc;
}
