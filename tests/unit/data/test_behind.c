/* test_behind.c - write-behind's runs (fs/data/behind.c), without FUSE: the
 * writes a serving thread reports (afs_fcache_written()) against what the
 * mount's thread hands to the backing's writeback (the writes.behind_*
 * counters), on a temporary file, with a 64 KiB piece.
 *
 * Covered: a sequential run handed over piece by piece, whole pages only;
 * requests taken in another order; a request overtaken by later ones,
 * landing in what was handed over; a sparse scatter, a region rewritten
 * in place, jumps past the gap and back (none handed over); write_behind=0
 * (no thread, nothing counted).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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
#include "../fixture/data_path.h"

#define KIB 1024u
#define PIECE (64 * KIB)

static int setup_piece(void **state, uint64_t piece)
{
	struct data_path *fx = calloc(1, sizeof(*fx));
	struct afs_data_config cfg;

	assert_non_null(fx);
	afs_data_config_init(&cfg);
	cfg.cache_size = 16u << 20;
	cfg.manual_reclaim = true;
	cfg.ra.workers = 1;
	cfg.write_behind = piece;
	cache_thread_online();
	data_path_tmpfile(fx, "afs-behind");
	data_path_mount(fx, &cfg, false);
	*state = fx;
	return 0;
}

static int setup(void **state)
{
	return setup_piece(state, PIECE);
}

static int setup_off(void **state)
{
	return setup_piece(state, 0);
}

static int teardown(void **state)
{
	struct data_path *fx = *state;

	data_path_close(fx);
	free(fx);
	return 0;
}

/* Write [@off, @off + @len) to the file (real dirty pages for the thread to
 * hand over) and report it as a serving thread does. */
static void wrote(struct data_path *fx, uint64_t off, uint64_t len)
{
	static const char buf[256 * KIB];

	assert_true(len <= sizeof(buf));
	assert_int_equal(pwrite(fx->fd, buf, len, (off_t)off), (ssize_t)len);
	afs_fcache_written(fx->fc, fx->fd, off, len);
}

static uint64_t counted(const struct data_path *fx, const uint64_t *c)
{
	(void)fx;
	return __atomic_load_n(c, __ATOMIC_ACQUIRE);
}

/* Wait (at most 2 s) until the thread has handed over @bytes, then a
 * little longer for anything more; return the bytes handed over. */
static uint64_t handed(const struct data_path *fx, uint64_t bytes)
{
	const uint64_t *b = &fx->a->behind_counts.bytes;
	struct timespec ms = {0, 1000 * 1000};

	for (int i = 0; i < 2000 && counted(fx, b) < bytes; i++)
		nanosleep(&ms, NULL);
	ms.tv_nsec = 50 * 1000 * 1000;
	nanosleep(&ms, NULL);
	assert_int_equal(counted(fx, &fx->a->behind_counts.failed), 0);
	return counted(fx, b);
}

static void test_sequential(void **state)
{
	struct data_path *fx = *state;

	/* 4 KiB writes, then one ending mid-page: whole pieces of whole
	 * pages go, the partly written last page stays. */
	for (uint64_t off = 0; off < 4 * PIECE; off += 4 * KIB)
		wrote(fx, off, 4 * KIB);
	assert_int_equal(handed(fx, 4 * PIECE), 4 * PIECE);
	assert_int_equal(counted(fx, &fx->a->behind_counts.pieces), 4);
	wrote(fx, 4 * PIECE, PIECE + 100);
	assert_int_equal(handed(fx, 5 * PIECE), 5 * PIECE);
	assert_int_equal(counted(fx, &fx->a->behind_counts.skipped), 0);
}

static void test_reordered(void **state)
{
	struct data_path *fx = *state;

	/* Pairs of 16 KiB requests taken second first. */
	for (uint64_t off = 0; off < 4 * PIECE; off += 32 * KIB) {
		wrote(fx, off + 16 * KIB, 16 * KIB);
		wrote(fx, off, 16 * KIB);
	}
	assert_int_equal(handed(fx, 4 * PIECE), 4 * PIECE);
}

static void test_overtaken(void **state)
{
	struct data_path *fx = *state;

	for (uint64_t off = 0; off < PIECE; off += 16 * KIB)
		wrote(fx, off, 16 * KIB);
	assert_int_equal(handed(fx, PIECE), PIECE);
	/* A late request into the piece handed over: left to the kernel,
	 * and the run goes on from where it was. */
	wrote(fx, 16 * KIB, 16 * KIB);
	for (uint64_t off = PIECE; off < 2 * PIECE; off += 16 * KIB)
		wrote(fx, off, 16 * KIB);
	assert_int_equal(handed(fx, 2 * PIECE), 2 * PIECE);
	assert_int_equal(counted(fx, &fx->a->behind_counts.pieces), 2);
}

static void test_sparse(void **state)
{
	struct data_path *fx = *state;

	/* Every other page of 4 pieces: the run's span is twice its bytes. */
	for (uint64_t off = 0; off < 4 * PIECE; off += 8 * KIB)
		wrote(fx, off, 4 * KIB);
	assert_int_equal(handed(fx, 0), 0);
}

static void test_rewritten(void **state)
{
	struct data_path *fx = *state;

	/* Half a piece rewritten 100 times: never a piece's span. */
	for (int i = 0; i < 100; i++)
		for (uint64_t off = 0; off < PIECE / 2; off += 4 * KIB)
			wrote(fx, off, 4 * KIB);
	assert_int_equal(handed(fx, 0), 0);
}

static void test_jumps(void **state)
{
	struct data_path *fx = *state;

	/* Jumps past the gap: every write starts a run of its own. */
	for (uint64_t k = 0; k < 16; k++)
		wrote(fx, k * (AFS_BEHIND_GAP + PIECE), 32 * KIB);
	/* Writes before the run's start (beyond the overtaken ones' reach):
	 * each starts a run again. */
	for (uint64_t k = 16; k > 0; k--)
		wrote(fx, k * (AFS_BEHIND_GAP + 2 * PIECE), 32 * KIB);
	assert_int_equal(handed(fx, 0), 0);
	assert_int_equal(counted(fx, &fx->a->behind_counts.pieces), 0);
}

static void test_off(void **state)
{
	struct data_path *fx = *state;

	assert_null(fx->a->behind);
	for (uint64_t off = 0; off < 4 * PIECE; off += 64 * KIB)
		wrote(fx, off, 64 * KIB);
	assert_int_equal(handed(fx, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sequential, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reordered, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_overtaken, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sparse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewritten, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_jumps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off, setup_off, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
