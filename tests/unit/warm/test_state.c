/* test_state.c - the warm restart's state file (fs/warm/state.h): what is
 * encoded parses back the same; every malformed form is refused with a
 * line saying why: any single flipped byte (the checksum), every
 * truncation, a range out of order, past the file's size or empty, a
 * version from the future, garbage after the records.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fs/warm/state.h"

static const struct afs_warm_range r1[] = {{0, 256}, {512, 257}};
static const struct afs_warm_range r2[] = {{0, 2048}};

static void two_files(struct afs_warm_enc *e, const struct afs_warm_range *a,
		      uint32_t na)
{
	struct afs_warm_file f = {.dev = 0x700001,
				  .ino = 13,
				  .gen = 7,
				  .size = (4 << 20) + 100,
				  .mtime_sec = 1700000000,
				  .mtime_nsec = 5,
				  .ctime_sec = -3,
				  .ctime_nsec = 999999999,
				  .nranges = na,
				  .ranges = a};
	struct afs_warm_file g = {.dev = 0x700001,
				  .ino = 12,
				  .gen = 0xdeadbeef,
				  .size = 8 << 20,
				  .nranges = 1,
				  .ranges = r2};

	afs_warm_enc_file(e, &f);
	afs_warm_enc_file(e, &g);
	assert_int_equal(afs_warm_enc_finish(e), 0);
}

static void test_round_trip(void **state)
{
	struct afs_warm_enc e = {0};
	struct afs_warm_map m;
	char err[256];

	(void)state;
	two_files(&e, r1, 2);
	assert_int_equal(e.len, 40 + 64 + 32 + 64 + 16);
	assert_int_equal(afs_warm_parse(e.buf, e.len, &m, err, sizeof(err)), 0);
	assert_int_equal(m.nfiles, 2);
	assert_int_equal(m.pages, 256 + 257 + 2048);
	assert_int_equal(m.files[0].ino, 13);
	assert_int_equal(m.files[0].gen, 7);
	assert_int_equal(m.files[0].ctime_sec, -3);
	assert_int_equal(m.files[0].ctime_nsec, 999999999);
	assert_int_equal(m.files[0].nranges, 2);
	assert_int_equal(m.files[0].ranges[1].first, 512);
	assert_int_equal(m.files[0].ranges[1].count, 257);
	assert_int_equal(m.files[1].gen, 0xdeadbeef);
	assert_int_equal(m.files[1].ranges[0].count, 2048);
	afs_warm_map_free(&m);
	free(e.buf);
}

static void test_every_flip_and_cut_refused(void **state)
{
	struct afs_warm_enc e = {0};
	struct afs_warm_map m;
	char err[256];

	(void)state;
	two_files(&e, r1, 2);
	for (size_t i = 0; i < e.len; i++)
		for (int bit = 0; bit < 8; bit++) {
			e.buf[i] ^= (uint8_t)(1u << bit);
			err[0] = '\0';
			assert_int_equal(afs_warm_parse(e.buf, e.len, &m, err,
							sizeof(err)),
					 -EINVAL);
			assert_true(err[0]);
			assert_null(m.files);
			e.buf[i] ^= (uint8_t)(1u << bit);
		}
	for (size_t len = 0; len < e.len; len++)
		assert_int_equal(
			afs_warm_parse(e.buf, len, &m, err, sizeof(err)),
			-EINVAL);
	free(e.buf);
}

/* Records the checksum covers but the rules refuse. */
static void expect_refused(const struct afs_warm_range *r, uint32_t n,
			   const char *why)
{
	struct afs_warm_enc e = {0};
	struct afs_warm_map m;
	char err[256] = "";

	two_files(&e, r, n);
	assert_int_equal(afs_warm_parse(e.buf, e.len, &m, err, sizeof(err)),
			 -EINVAL);
	if (!strstr(err, why))
		fail_msg("'%s' does not say '%s'", err, why);
	free(e.buf);
}

static void test_bad_ranges_refused(void **state)
{
	static const struct afs_warm_range overlap[] = {{0, 10}, {5, 10}};
	static const struct afs_warm_range past[] = {{1000, 26}};
	static const struct afs_warm_range empty[] = {{3, 0}};

	(void)state;
	/* 4 MiB + 100 bytes: 1025 pages */
	expect_refused(overlap, 2, "out of order");
	expect_refused(past, 1, "past the file's 1025 pages");
	expect_refused(empty, 1, "empty");
}

static void test_version_and_garbage(void **state)
{
	struct afs_warm_enc e = {0};
	struct afs_warm_map m;
	char err[256];
	uint8_t *big;

	(void)state;
	two_files(&e, r1, 2);
	e.buf[8] = 2; /* version 2: refused before the checksum */
	assert_int_equal(afs_warm_parse(e.buf, e.len, &m, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "version 2"));
	e.buf[8] = 1;
	big = calloc(1, e.len + 8);
	assert_non_null(big);
	memcpy(big, e.buf, e.len);
	assert_int_equal(afs_warm_parse(big, e.len + 8, &m, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "truncated or padded"));
	free(big);
	free(e.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_every_flip_and_cut_refused),
		cmocka_unit_test(test_bad_ranges_refused),
		cmocka_unit_test(test_version_and_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
