/* test_geometry.c - stripe geometry from fake sysfs trees, overrides, size
 * parsing and window-end rounding (ra/geometry.c).
 *
 * Each test builds its own sysfs tree in a fresh temp dir, laid out as the
 * kernel does: /sys/dev/block/MAJ:MIN is a symlink into /sys/devices, and a
 * partition is a subdirectory of its disk with a "partition" file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "geometry.h"
#include "ra/ra.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)

struct tree {
	char root[PATH_MAX];
};

/* snprintf into a PATH_MAX buffer; a truncated path fails the test. */
static void pathf(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_MAX)
		fail_msg("path too long: %s", fmt);
}

static void mkdir_p(const char *path)
{
	char buf[PATH_MAX];

	pathf(buf, "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			fail_msg("mkdir %s: %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", buf, strerror(errno));
}

/* Write @text (a newline is added, as sysfs does) at root/@rel. */
static void put(struct tree *t, const char *rel, const char *text)
{
	char path[PATH_MAX], *slash;
	FILE *f;

	pathf(path, "%s/%s", t->root, rel);
	slash = strrchr(path, '/');
	*slash = '\0';
	mkdir_p(path);
	*slash = '/';
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", text);
	assert_int_equal(fclose(f), 0);
}

/* root/dev/block/MAJ:MIN -> ../../devices/virtual/block/@devpath */
static void link_dev(struct tree *t, unsigned int maj, unsigned int min,
		     const char *devpath)
{
	char path[PATH_MAX], target[PATH_MAX], dir[PATH_MAX];

	pathf(dir, "%s/devices/virtual/block/%s", t->root, devpath);
	mkdir_p(dir);
	pathf(path, "%s/dev/block", t->root);
	mkdir_p(path);
	pathf(path, "%s/dev/block/%u:%u", t->root, maj, min);
	pathf(target, "../../devices/virtual/block/%s", devpath);
	assert_int_equal(symlink(target, path), 0);
}

/* An md device as the kernel shows it: md0 of @disks x @chunk, @level. */
static void add_md(struct tree *t, const char *name, unsigned int min,
		   const char *level, unsigned int disks, uint64_t chunk,
		   uint64_t io_opt)
{
	char rel[PATH_MAX], num[32];

	link_dev(t, 9, min, name);
	pathf(rel, "devices/virtual/block/%s/md/level", name);
	put(t, rel, level);
	pathf(rel, "devices/virtual/block/%s/md/raid_disks", name);
	snprintf(num, sizeof(num), "%u", disks);
	put(t, rel, num);
	pathf(rel, "devices/virtual/block/%s/md/chunk_size", name);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)chunk);
	put(t, rel, num);
	snprintf(rel, sizeof(rel),
		 "devices/virtual/block/%s/queue/minimum_io_size", name);
	put(t, rel, num);
	snprintf(rel, sizeof(rel),
		 "devices/virtual/block/%s/queue/optimal_io_size", name);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)io_opt);
	put(t, rel, num);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	const char *tmp = getenv("TMPDIR");

	if (!t)
		return -1;
	snprintf(t->root, sizeof(t->root), "%s/afs-geom-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t->root)) {
		free(t);
		return -1;
	}
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	if (system(cmd) != 0)
		return -1;
	free(t);
	return 0;
}

static void test_md_raid0_4x512k(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;

	add_md(t, "md0", 0, "raid0", 4, 512 * KiB, 2 * MiB);
	assert_int_equal(ra_geometry_probe(t->root, makedev(9, 0), &g), 0);
	assert_int_equal(g.source, RA_GEOM_MD);
	assert_int_equal(g.chunk, 512 * KiB);
	assert_int_equal(g.stripe, 2 * MiB);
	assert_int_equal(g.disks, 4);
	assert_int_equal(g.data_disks, 4);
	assert_int_equal(g.io_min, 512 * KiB);
	assert_int_equal(g.io_opt, 2 * MiB);
	assert_int_equal(g.max_window, 4 * MiB); /* 2 x stripe width */
	assert_string_equal(g.why, "");
}

static void test_partition_on_md_follows_to_disk(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;

	add_md(t, "md0", 0, "raid0", 4, 512 * KiB, 2 * MiB);
	link_dev(t, 259, 3, "md0/md0p1");
	put(t, "devices/virtual/block/md0/md0p1/partition", "1");
	assert_int_equal(ra_geometry_probe(t->root, makedev(259, 3), &g), 0);
	assert_int_equal(g.source, RA_GEOM_MD);
	assert_int_equal(g.chunk, 512 * KiB);
	assert_int_equal(g.stripe, 2 * MiB);
	assert_int_equal(g.max_window, 4 * MiB);
}

static void test_md_raid5_without_io_opt(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;

	/* io_opt 0: stripe = chunk x (5 - 1 parity) data disks. */
	add_md(t, "md1", 1, "raid5", 5, 64 * KiB, 0);
	assert_int_equal(ra_geometry_probe(t->root, makedev(9, 1), &g), 0);
	assert_int_equal(g.source, RA_GEOM_MD);
	assert_int_equal(g.data_disks, 4);
	assert_int_equal(g.chunk, 64 * KiB);
	assert_int_equal(g.stripe, 256 * KiB);
	assert_int_equal(g.max_window, 1 * MiB); /* 2 x 256 KiB < 1 MiB */
}

static void test_plain_disk_and_its_partition(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;

	link_dev(t, 8, 0, "sda");
	put(t, "devices/virtual/block/sda/queue/minimum_io_size", "512");
	put(t, "devices/virtual/block/sda/queue/optimal_io_size", "0");
	link_dev(t, 8, 1, "sda/sda1");
	put(t, "devices/virtual/block/sda/sda1/partition", "1");
	for (unsigned int min = 0; min < 2; min++) {
		assert_int_equal(
			ra_geometry_probe(t->root, makedev(8, min), &g), 0);
		assert_int_equal(g.source, RA_GEOM_NONE);
		assert_int_equal(g.chunk, 0);
		assert_int_equal(g.stripe, 0);
		assert_int_equal(g.io_min, 512);
		assert_int_equal(g.max_window, 1 * MiB);
	}
}

static void test_max_io(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;

	/* A loop device: the largest request is a hint for the cap. */
	link_dev(t, 7, 0, "loop0");
	put(t, "devices/virtual/block/loop0/queue/max_sectors_kb", "1280");
	assert_int_equal(ra_geometry_probe(t->root, makedev(7, 0), &g), 0);
	assert_int_equal(g.source, RA_GEOM_NONE);
	assert_int_equal(g.max_io, 1280 * 1024);
	/* Not a page multiple, or garbage: no hint, and no error either. */
	put(t, "devices/virtual/block/loop0/queue/max_sectors_kb", "6");
	assert_int_equal(ra_geometry_probe(t->root, makedev(7, 0), &g), 0);
	assert_int_equal(g.max_io, 0);
	put(t, "devices/virtual/block/loop0/queue/max_sectors_kb", "lots");
	assert_int_equal(ra_geometry_probe(t->root, makedev(7, 0), &g), 0);
	assert_int_equal(g.max_io, 0);
	assert_int_equal(g.source, RA_GEOM_NONE);
	assert_string_equal(g.why, "");
}

static void test_no_io_opt_file(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;

	/* An old kernel or a virtual disk: no optimal_io_size at all. */
	link_dev(t, 253, 0, "vda");
	put(t, "devices/virtual/block/vda/queue/minimum_io_size", "4096");
	assert_int_equal(ra_geometry_probe(t->root, makedev(253, 0), &g), 0);
	assert_int_equal(g.source, RA_GEOM_NONE);
	assert_int_equal(g.chunk, 0);
	assert_int_equal(g.stripe, 0);
	assert_int_equal(g.io_min, 4096);
	assert_int_equal(g.max_window, 1 * MiB);
}

static void test_hardware_raid_from_queue(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;

	/* A RAID controller: io_min = chunk, io_opt = full stripe. */
	link_dev(t, 8, 16, "sdb");
	put(t, "devices/virtual/block/sdb/queue/minimum_io_size", "65536");
	put(t, "devices/virtual/block/sdb/queue/optimal_io_size", "786432");
	assert_int_equal(ra_geometry_probe(t->root, makedev(8, 16), &g), 0);
	assert_int_equal(g.source, RA_GEOM_QUEUE);
	assert_int_equal(g.chunk, 64 * KiB);
	assert_int_equal(g.stripe, 768 * KiB);
	assert_int_equal(g.data_disks, 12);
	assert_int_equal(g.max_window, 1536 * KiB);
}

static void test_io_opt_with_small_io_min(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;

	/* An SSD reporting io_opt 1 MiB, io_min 4 KiB: one "chunk" of 1 MiB,
	 * never 4 KiB pieces. */
	link_dev(t, 259, 0, "nvme0n1");
	put(t, "devices/virtual/block/nvme0n1/queue/minimum_io_size", "4096");
	put(t, "devices/virtual/block/nvme0n1/queue/optimal_io_size",
	    "1048576");
	assert_int_equal(ra_geometry_probe(t->root, makedev(259, 0), &g), 0);
	assert_int_equal(g.source, RA_GEOM_QUEUE);
	assert_int_equal(g.chunk, 1 * MiB);
	assert_int_equal(g.stripe, 1 * MiB);
	assert_int_equal(g.max_window, 2 * MiB);
}

static void test_no_block_device(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;

	/* tmpfs, overlay: anonymous device, major 0; sysfs is not read. */
	assert_int_equal(ra_geometry_probe("/nonexistent", makedev(0, 42), &g),
			 0);
	assert_int_equal(g.source, RA_GEOM_NONE);
	assert_int_equal(g.chunk, 0);
	assert_int_equal(g.max_window, 1 * MiB);
	/* A device this sysfs does not know. */
	assert_int_equal(ra_geometry_probe(t->root, makedev(8, 99), &g), 0);
	assert_int_equal(g.source, RA_GEOM_NONE);
	assert_int_equal(g.stripe, 0);
	assert_int_equal(ra_geometry_probe(NULL, makedev(8, 0), &g), -EINVAL);
	assert_int_equal(ra_geometry_probe(t->root, makedev(8, 0), NULL),
			 -EINVAL);
}

/* One garbage value: the device counts as unstriped and why says so. */
static void check_garbage(struct tree *t, unsigned int min, const char *file,
			  const char *text, const char *why_part)
{
	char name[16], rel[PATH_MAX];
	struct ra_geometry g;

	snprintf(name, sizeof(name), "md%u", min);
	add_md(t, name, min, "raid0", 4, 512 * KiB, 2 * MiB);
	pathf(rel, "devices/virtual/block/%s/%s", name, file);
	put(t, rel, text);
	assert_int_equal(ra_geometry_probe(t->root, makedev(9, min), &g), 0);
	assert_int_equal(g.source, RA_GEOM_INVALID);
	assert_int_equal(g.chunk, 0);
	assert_int_equal(g.stripe, 0);
	assert_int_equal(g.max_window, 1 * MiB);
	if (!strstr(g.why, why_part))
		fail_msg("why '%s' lacks '%s'", g.why, why_part);
}

static void test_garbage_files(void **state)
{
	struct tree *t = *state;

	check_garbage(t, 10, "md/chunk_size", "abc", "md/chunk_size");
	check_garbage(t, 11, "md/chunk_size", "", "md/chunk_size");
	check_garbage(t, 12, "md/chunk_size", "-4096", "md/chunk_size");
	check_garbage(t, 13, "md/chunk_size", "1000", "not a multiple");
	check_garbage(t, 14, "md/raid_disks", "99999", "md/raid_disks");
	check_garbage(t, 15, "queue/optimal_io_size", "99999999999999999999999",
		      "optimal_io_size");
	check_garbage(t, 16, "queue/optimal_io_size", "3000000",
		      "not a multiple of the chunk");
	check_garbage(t, 17, "queue/minimum_io_size", "4k", "minimum_io_size");
}

static void test_override(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g, before;

	add_md(t, "md0", 0, "raid0", 4, 512 * KiB, 2 * MiB);
	assert_int_equal(ra_geometry_probe(t->root, makedev(9, 0), &g), 0);

	/* Nothing asked: nothing changes. */
	before = g;
	assert_int_equal(ra_geometry_override(&g, 0, 0), 0);
	assert_memory_equal(&g, &before, sizeof(g));

	/* Bad values change nothing. */
	assert_int_equal(ra_geometry_override(&g, 1000000, 0), -EINVAL);
	assert_int_equal(ra_geometry_override(&g, 1 * MiB, 3 * MiB), -EINVAL);
	assert_int_equal(ra_geometry_override(&g, 1 * MiB, 384 * KiB),
			 -EINVAL); /* not a divisor */
	assert_int_equal(ra_geometry_override(&g, 0, 6000), -EINVAL);
	assert_int_equal(ra_geometry_override(NULL, 1 * MiB, 0), -EINVAL);
	assert_memory_equal(&g, &before, sizeof(g));

	/* chunk only: keeps the probed 4 data disks. */
	assert_int_equal(ra_geometry_override(&g, 0, 128 * KiB), 0);
	assert_int_equal(g.source, RA_GEOM_OVERRIDE);
	assert_int_equal(g.chunk, 128 * KiB);
	assert_int_equal(g.stripe, 512 * KiB);
	assert_int_equal(g.max_window, 1 * MiB);

	/* stripe only: the current chunk divides it, so it stays. */
	assert_int_equal(ra_geometry_override(&g, 4 * MiB, 0), 0);
	assert_int_equal(g.chunk, 128 * KiB);
	assert_int_equal(g.stripe, 4 * MiB);
	assert_int_equal(g.data_disks, 32);
	assert_int_equal(g.max_window, 8 * MiB);

	/* Both, on an unstriped device. */
	memset(&g, 0, sizeof(g));
	assert_int_equal(ra_geometry_override(&g, 3 * MiB, 768 * KiB), 0);
	assert_int_equal(g.chunk, 768 * KiB);
	assert_int_equal(g.stripe, 3 * MiB);
	assert_int_equal(g.data_disks, 4);
	assert_int_equal(g.max_window, 6 * MiB);
	/* stripe only, unstriped device: one chunk per stripe. */
	memset(&g, 0, sizeof(g));
	assert_int_equal(ra_geometry_override(&g, 256 * KiB, 0), 0);
	assert_int_equal(g.chunk, 256 * KiB);
	assert_int_equal(g.stripe, 256 * KiB);
}

static void test_parse_size(void **state)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} cases[] = {
		{"0", 0, 0},
		{"524288", 0, 524288},
		{"512K", 0, 512 * KiB},
		{"512k", 0, 512 * KiB},
		{"4M", 0, 4 * MiB},
		{"4MiB", 0, 4 * MiB},
		{"4MB", 0, 4 * MiB},
		{"1G", 0, 1024 * MiB},
		{"2T", 0, 2ull << 40},
		{"4096B", 0, 4096},
		{"18446744073709551615", 0, UINT64_MAX},
		{"18446744073709551616", -ERANGE, 0},
		{"16777216T", -ERANGE, 0},
		{"", -EINVAL, 0},
		{"-1", -EINVAL, 0},
		{"+1", -EINVAL, 0},
		{" 1", -EINVAL, 0},
		{"1 ", -EINVAL, 0},
		{"K", -EINVAL, 0},
		{"1X", -EINVAL, 0},
		{"1KK", -EINVAL, 0},
		{"1iB", -EINVAL, 0},
		{"1Ki", -EINVAL, 0},
		{"1.5M", -EINVAL, 0},
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		int rc = ra_parse_size(cases[i].s, &v);

		if (rc != cases[i].rc)
			fail_msg("'%s': rc %d, want %d", cases[i].s, rc,
				 cases[i].rc);
		assert_int_equal(v, rc ? 12345 : cases[i].v);
	}
	assert_int_equal(ra_parse_size(NULL, &v), -EINVAL);
	assert_int_equal(ra_parse_size("1", NULL), -EINVAL);
}

static void test_round_end(void **state)
{
	struct ra_geometry g = {0};

	/* Not striped: unchanged. */
	assert_int_equal(ra_geometry_round_end(&g, 0, 37, 1, 1000), 37);
	assert_int_equal(ra_geometry_round_end(NULL, 0, 37, 1, 1000), 37);
	/* 2 MiB stripe = 512 pages. */
	g.stripe = 2 * MiB;
	g.chunk = 512 * KiB;
	/* Aligned already. */
	assert_int_equal(ra_geometry_round_end(&g, 0, 1024, 1, 2048), 1024);
	/* Up when the cap allows it. */
	assert_int_equal(ra_geometry_round_end(&g, 100, 600, 101, 1124), 1024);
	/* Cap too low for up: down, above start and the reader's pages. */
	assert_int_equal(ra_geometry_round_end(&g, 100, 600, 101, 700), 512);
	/* Down would cut the reader's own pages: unchanged. */
	assert_int_equal(ra_geometry_round_end(&g, 100, 600, 550, 700), 600);
	/* Down would empty the window: unchanged. */
	assert_int_equal(ra_geometry_round_end(&g, 512, 600, 513, 700), 600);
	/* EOF as the limit. */
	assert_int_equal(ra_geometry_round_end(&g, 1000, 1100, 1001, 1100),
			 1024);
	/* No overflow near the top. */
	assert_int_equal(ra_geometry_round_end(&g, UINT64_MAX - 10,
					       UINT64_MAX - 1, UINT64_MAX - 9,
					       UINT64_MAX),
			 UINT64_MAX - 1);
}

/* The automatic window cap: the largest of 1 MiB, the floor and two
 * stripes, then whole device requests when it is larger than one. */
static void test_auto_max_bytes(void **state)
{
	assert_int_equal(ra_auto_max_bytes(0, 0, 0), 1 * MiB);
	assert_int_equal(ra_auto_max_bytes(256 * KiB, 0, 0), 1 * MiB);
	assert_int_equal(ra_auto_max_bytes(2 * MiB, 0, 0), 4 * MiB);
	assert_int_equal(ra_auto_max_bytes(2 * MiB, 8 * MiB, 0), 8 * MiB);
	assert_int_equal(ra_auto_max_bytes(0, 4 * MiB, 0), 4 * MiB);
	assert_int_equal(ra_auto_max_bytes(0, 4 * KiB, 0), 1 * MiB);
	/* 4 MiB on a 1280 KiB queue: four whole requests, 5 MiB. */
	assert_int_equal(ra_auto_max_bytes(0, 4 * MiB, 1280 * KiB), 5 * MiB);
	/* Already whole, larger than the cap, or one page: unchanged. */
	assert_int_equal(ra_auto_max_bytes(0, 4 * MiB, 512 * KiB), 4 * MiB);
	assert_int_equal(ra_auto_max_bytes(0, 0, 2 * MiB), 1 * MiB);
	assert_int_equal(ra_auto_max_bytes(0, 0, 4 * KiB), 1 * MiB);
	/* The geometry's own part of it. */
	assert_int_equal(ra_auto_max_bytes(3 * MiB, 0, 0), 6 * MiB);
}

/* This machine's own /sys, for the disk holding the temp dir: whatever the
 * device is, its files must parse (never RA_GEOM_INVALID), and the cap must
 * follow the rule.  A machine without /sys gives "none". */
static void test_real_sysfs_parses(void **state)
{
	struct tree *t = *state;
	struct ra_geometry g;
	struct stat st;

	assert_int_equal(stat(t->root, &st), 0);
	assert_int_equal(ra_geometry_probe("/sys", st.st_dev, &g), 0);
	if (g.source == RA_GEOM_INVALID)
		fail_msg("real sysfs judged invalid: %s", g.why);
	assert_int_equal(g.max_window,
			 g.stripe * 2 > 1 * MiB ? g.stripe * 2 : 1 * MiB);
	assert_true(g.chunk == 0 || g.stripe % g.chunk == 0);
}

static void test_source_names(void **state)
{
	assert_string_equal(ra_geometry_source_name(RA_GEOM_NONE), "none");
	assert_string_equal(ra_geometry_source_name(RA_GEOM_MD), "md");
	assert_string_equal(ra_geometry_source_name(RA_GEOM_QUEUE), "queue");
	assert_string_equal(ra_geometry_source_name(RA_GEOM_OVERRIDE),
			    "override");
	assert_string_equal(ra_geometry_source_name(RA_GEOM_INVALID),
			    "invalid");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_md_raid0_4x512k),
		T(test_partition_on_md_follows_to_disk),
		T(test_md_raid5_without_io_opt),
		T(test_plain_disk_and_its_partition),
		T(test_no_io_opt_file),
		T(test_max_io),
		T(test_hardware_raid_from_queue),
		T(test_io_opt_with_small_io_min),
		T(test_no_block_device),
		T(test_garbage_files),
		T(test_override),
		T(test_parse_size),
		T(test_round_end),
		T(test_auto_max_bytes),
		T(test_real_sysfs_parses),
		T(test_source_names),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
