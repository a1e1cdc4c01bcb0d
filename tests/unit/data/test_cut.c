/* test_cut.c - the data path's reads of a file cut short and extended again,
 * over and over, by another thread on the backing, with no watcher: every
 * word the writer ever wrote is non-zero, so a zero word in a reply was
 * never the file's.  Kernel mode (pages dropped to history, resident reads
 * from the backing's page cache, spliced ones) and direct mode (pages kept)
 * read side by side; neither may reply a zero word (docs/reliability.md, "A
 * file cut while it is read"), and kernel mode splices nothing of a file
 * that changed lately.  Plus the pieces: a page that held the file's end
 * is never served past it once the file is longer.
 *
 * Needs a backing that takes O_DIRECT ($TMPDIR on ext4 or xfs): in buffered
 * mode (tmpfs) the backing's own buffered reads can copy a truncate's zeros
 * (ra_backing_cut()), and the churn test is skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "data_internal.h"
#include "ra/ra.h"

#include "../fixture/data_path.h"

#define PAGE 4096u
#define MIB (1u << 20)
#define CHURN_NS 1500000000ll /* how long the writer churns */

struct fixture {
	struct data_path dp; /* the file, its mount, its afs_fcache */
	bool stop; /* __atomic */
	uint64_t cuts;
};

static uint32_t word_at(uint64_t off, uint32_t gen)
{
	return 0x80000000u | (((gen & 0x7fffu) << 16) ^ (uint32_t)(off >> 2));
}

/* Write [@from, @to) of generation @gen (word multiples). */
static void fill(int fd, uint64_t from, uint64_t to, uint32_t gen)
{
	static __thread uint32_t buf[64 * 1024 / 4];

	while (from < to) {
		size_t n = to - from < sizeof(buf) ? to - from : sizeof(buf);

		for (size_t i = 0; i < n / 4; i++)
			buf[i] = word_at(from + 4 * i, gen);
		assert_int_equal(pwrite(fd, buf, n, (off_t)from), (ssize_t)n);
		from += n;
	}
}

static int setup(void **state)
{
	struct afs_data_config cfg = {
		.cache_size = 64u << 20,
		.ra = {.max_bytes = 512 << 10, .workers = 2}};
	struct fixture *fx = calloc(1, sizeof(*fx));

	cache_thread_online();
	assert_non_null(fx);
	data_path_tmpfile(&fx->dp, "afs-cut");
	fill(fx->dp.fd, 0, 2 * MIB, 1);
	data_path_mount(&fx->dp, &cfg, true);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	data_path_close(&fx->dp);
	free(fx);
	return 0;
}

/* What a reader's replies held. */
struct reader {
	struct fixture *fx;
	bool keep_data; /* direct mode */
	int fd; /* its own descriptor, as a handle's */
	uint64_t off; /* of the next byte replied */
	uint64_t bytes, zero_words, passes;
	uint64_t first_zero; /* offset of the first zero word seen */
};

static void count_zeros(struct reader *rd, const uint8_t *b, size_t n)
{
	/* Replies start at word multiples and, short of the end, are word
	 * multiples long: the writer's words. */
	for (size_t i = 0; i + 4 <= n; i += 4) {
		uint32_t v;

		memcpy(&v, b + i, 4);
		if (!v && !rd->zero_words++)
			rd->first_zero = rd->off + i;
	}
	rd->off += n;
	rd->bytes += n;
}

static int reply_count(void *ctx, const struct iovec *iov, int n)
{
	for (int v = 0; v < n; v++)
		count_zeros(ctx, iov[v].iov_base, iov[v].iov_len);
	return 0;
}

/* A spliced reply: the bytes are taken from @fd here, where the kernel's
 * pipe would take them. */
static int reply_fd_count(void *ctx, int fd, uint64_t off, size_t len)
{
	static __thread uint8_t b[MIB];
	ssize_t n = pread(fd, b, len, (off_t)off);

	if (n > 0)
		count_zeros(ctx, b, (size_t)n);
	return 0;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct fixture *fx = rd->fx;
	struct ra_state st;

	cache_thread_online();
	ra_state_init(&st);
	while (!__atomic_load_n(&fx->stop, __ATOMIC_ACQUIRE)) {
		uint64_t before;

		rd->off = 0;
		do {
			struct afs_read r = {.fc = fx->dp.fc,
					     .ra = &st,
					     .fd = rd->fd,
					     .keep_data = rd->keep_data,
					     .reply = reply_count,
					     .reply_fd = reply_fd_count,
					     .fd_min = PAGE,
					     .fd_max = MIB,
					     .ctx = rd};

			before = rd->off;
			assert_int_equal(
				afs_data_read(fx->dp.a, &r, rd->off, 256 << 10),
				0);
		} while (rd->off > before);
		rd->passes++;
	}
	ra_state_destroy(&st);
	return NULL;
}

static void *writer_main(void *arg)
{
	struct fixture *fx = arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	long long end = now_ns() + CHURN_NS;
	uint32_t gen = 1;

	while (now_ns() < end) {
		uint64_t cut, to;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		cut = (seed % (128 << 10)) & ~3ull;
		to = (MIB / 2 + (seed >> 20) % (3 * MIB / 2)) & ~3ull;
		assert_int_equal(ftruncate(fx->dp.fd, (off_t)cut), 0);
		fill(fx->dp.fd, cut, to, ++gen);
		fx->cuts++;
	}
	__atomic_store_n(&fx->stop, true, __ATOMIC_RELEASE);
	return NULL;
}

static void test_churn_no_zero_word(void **state)
{
	struct fixture *fx = *state;
	struct reader rd[2] = {{.fx = fx, .keep_data = false},
			       {.fx = fx, .keep_data = true}};
	struct ra_file_stats rs;
	pthread_t w, t[2];

	ra_file_stats(fx->dp.fc->raf, &rs);
	if (rs.backing_io != RA_BACKING_IO_DIRECT) {
		print_message(
			"backing takes no O_DIRECT: churn test skipped\n");
		skip();
	}
	for (int k = 0; k < 2; k++) {
		rd[k].fd = open(fx->dp.path, O_RDONLY);
		assert_true(rd[k].fd >= 0);
		assert_int_equal(
			pthread_create(&t[k], NULL, reader_main, &rd[k]), 0);
	}
	assert_int_equal(pthread_create(&w, NULL, writer_main, fx), 0);
	pthread_join(w, NULL);
	for (int k = 0; k < 2; k++) {
		pthread_join(t[k], NULL);
		close(rd[k].fd);
		print_message("%s mode: %llu passes, %llu MiB, %llu zero words "
			      "(first at %llu); %llu cuts\n",
			      rd[k].keep_data ? "direct" : "kernel",
			      (unsigned long long)rd[k].passes,
			      (unsigned long long)(rd[k].bytes >> 20),
			      (unsigned long long)rd[k].zero_words,
			      (unsigned long long)rd[k].first_zero,
			      (unsigned long long)fx->cuts);
		assert_true(rd[k].passes > 0);
		assert_int_equal(rd[k].zero_words, 0);
	}
	assert_true(fx->cuts > 0);
	/* The file changed all along: none of its resident pages went out
	 * spliced, where a cut while the reply copies them could not be seen
	 * (ra_backing_resident_fd()); those read were checked instead. */
	print_message("resident reads %llu, spliced %llu\n",
		      (unsigned long long)fx->dp.fc->resident_reads,
		      (unsigned long long)fx->dp.fc->resident_spliced);
	assert_int_equal(fx->dp.fc->resident_spliced, 0);
}

/* Pages read past the end of a file cut behind the data path (zeros, no
 * data), then the file grown back to the size the data path knows: the size
 * it takes again is the same, so nothing is dropped -- and a read of those
 * pages is not served their zeros but the file's new bytes. */
static void test_end_pages_not_served_past_their_end(void **state)
{
	struct fixture *fx = *state;
	struct reader rd = {.fx = fx, .keep_data = true, .fd = fx->dp.fd};
	struct afs_read r = {.fc = fx->dp.fc,
			     .fd = fx->dp.fd,
			     .keep_data = true,
			     .reply = reply_count,
			     .ctx = &rd};

	assert_int_equal(ftruncate(fx->dp.fd, MIB + 1000), 0);
	assert_int_equal(afs_fcache_warm(fx->dp.fc, MIB / PAGE, 16), 16);
	fill(fx->dp.fd, MIB + 1000, 2 * MIB, 2);
	rd.off = MIB;
	assert_int_equal(afs_data_read(fx->dp.a, &r, MIB, 16 * PAGE), 0);
	assert_int_equal(rd.bytes, 16 * PAGE);
	assert_int_equal(rd.zero_words, 0);
	assert_int_equal(afs_fcache_size(fx->dp.fc), 2 * MIB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_end_pages_not_served_past_their_end, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_churn_no_zero_word, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
