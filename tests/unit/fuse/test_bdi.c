/* test_bdi.c - the kernel's readahead on the mount (fs/fuse/bdi.h): the
 * policy, without a mount. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bdi.h"

#define MIB (UINT64_C(1) << 20)

/* The kernel's readahead on the mount: one 512 KiB request without a
 * limit; under one, its 8192nd (1 GiB: 128 KiB, 2 GiB: 256 KiB, 4 GiB:
 * 512 KiB), never below the kernel's 128 KiB default, never above 512 KiB,
 * a whole number of pages. */
static void mount_readahead(void **state)
{
	(void)state;
	assert_int_equal(afs_mount_readahead(0), 512 * 1024);
	assert_int_equal(afs_mount_readahead(64 * MIB), 128 * 1024);
	assert_int_equal(afs_mount_readahead(1024 * MIB), 128 * 1024);
	assert_int_equal(afs_mount_readahead(2048 * MIB), 256 * 1024);
	assert_int_equal(afs_mount_readahead(4096 * MIB), 512 * 1024);
	assert_int_equal(afs_mount_readahead(16 * 1024 * MIB), 512 * 1024);
	assert_int_equal(afs_mount_readahead(16 * MIB), 128 * 1024);
	assert_int_equal(afs_mount_readahead(3000 * MIB + 12345) % 4096, 0);
	assert_true(afs_mount_readahead(3000 * MIB + 12345) > 256 * 1024);
	assert_true(afs_mount_readahead(3000 * MIB + 12345) < 512 * 1024);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mount_readahead),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
