/* test_save.c - afs_warm_save() (fs/warm/warm.h): the map it writes holds
 * every file of the table, in use or idle, with its identity and the runs
 * of pages it has cached -- data and history alike -- and the file is
 * mode 0600 and replaced atomically (no temporary left behind).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs/data/data.h"
#include "fs/warm/state.h"
#include "fs/warm/warm.h"

#include "../fixture/data_path.h"

static void fill(struct cache_mapping *m, uint64_t first, uint64_t n)
{
	struct cache_page *p[16];
	unsigned int got;

	assert_true(n <= 16);
	assert_int_equal(
		cache_insert_range(m, first, n, CACHE_NO_MARK, 0, p, &got), 0);
	assert_int_equal(got, n);
	for (unsigned int i = 0; i < got; i++)
		cache_page_complete(p[i], 0);
}

static void test_save_runs_and_history(void **state)
{
	struct afs_data_config cfg;
	struct afs_warm_counters counts = {0};
	struct stat st = {.st_size = 40 * 4096 + 10,
			  .st_mtim = {.tv_sec = 1700000000, .tv_nsec = 42},
			  .st_ctim = {.tv_sec = 1700000001, .tv_nsec = 43}};
	struct afs_file_key k1 = {.dev = 7, .ino = 1, .gen = 99};
	struct afs_file_key k2 = {.dev = 7, .ino = 2};
	struct afs_fcache *f1, *f2;
	struct afs_warm_map m;
	struct afs_data *a;
	char err[256], dir[] = "/tmp/afs-warm-save-XXXXXX", path[64], tmp[80];
	uint8_t *buf;
	struct stat fs;
	int fd;

	(void)state;
	cache_thread_online();
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	afs_data_config_init(&cfg);
	cfg.cache_size = 64u << 20;
	cfg.manual_reclaim = true;
	cfg.ra.max_bytes = 256 << 10;
	cfg.ra.workers = 1;
	a = data_path_ahead(&cfg);
	assert_int_equal(afs_fcache_lookup(a, &k1, &st, &f1), 0);
	assert_int_equal(afs_fcache_lookup(a, &k2, &st, &f2), 0);
	fill(afs_fcache_map(f1), 0, 4);
	fill(afs_fcache_map(f1), 10, 3);
	fill(afs_fcache_map(f1), 20, 6);
	/* pages the kernel took a copy of: history, still hot */
	assert_int_equal(cache_page_drop_to_history(afs_fcache_map(f1), 20, 25),
			 6);
	fill(afs_fcache_map(f1), 26, 2); /* data right after history: one run */
	fill(afs_fcache_map(f1), 32, 3); /* history alone: a run of its own */
	assert_int_equal(cache_page_drop_to_history(afs_fcache_map(f1), 32, 34),
			 3);
	fill(afs_fcache_map(f2), 40, 1); /* the last page of the file */
	afs_fcache_put(f2); /* idle: saved too */

	assert_int_equal(afs_warm_save(a, path, &counts, err, sizeof(err)), 0);
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(stat(path, &fs), 0);
	assert_int_equal(fs.st_mode & 0777, 0600);
	assert_int_equal(counts.checkpoints, 1);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	buf = malloc((size_t)fs.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)fs.st_size), fs.st_size);
	close(fd);
	assert_int_equal(
		afs_warm_parse(buf, (size_t)fs.st_size, &m, err, sizeof(err)),
		0);
	assert_int_equal(m.nfiles, 2);
	/* in use first, then idle */
	assert_int_equal(m.files[0].ino, 1);
	assert_int_equal(m.files[0].gen, 99);
	assert_int_equal(m.files[0].dev, 7);
	assert_int_equal(m.files[0].size, 40 * 4096 + 10);
	assert_int_equal(m.files[0].mtime_sec, 1700000000);
	assert_int_equal(m.files[0].mtime_nsec, 42);
	assert_int_equal(m.files[0].ctime_nsec, 43);
	assert_int_equal(m.files[0].nranges, 4);
	assert_int_equal(m.files[0].ranges[0].first, 0);
	assert_int_equal(m.files[0].ranges[0].count, 4);
	assert_int_equal(m.files[0].ranges[1].first, 10);
	assert_int_equal(m.files[0].ranges[1].count, 3);
	assert_int_equal(m.files[0].ranges[2].first, 20);
	assert_int_equal(m.files[0].ranges[2].count, 8);
	assert_int_equal(m.files[0].ranges[3].first, 32);
	assert_int_equal(m.files[0].ranges[3].count, 3);
	assert_int_equal(m.files[1].ino, 2);
	assert_int_equal(m.files[1].nranges, 1);
	assert_int_equal(m.files[1].ranges[0].first, 40);
	assert_int_equal(m.files[1].ranges[0].count, 1);
	afs_warm_map_free(&m);
	free(buf);

	/* Saved again over the old file: replaced whole. */
	afs_fcache_put(f1);
	assert_int_equal(afs_data_drop_idle(a), 2);
	assert_int_equal(afs_warm_save(a, path, NULL, err, sizeof(err)), 0);
	assert_int_equal(stat(path, &fs), 0);
	assert_int_equal(fs.st_size, AFS_WARM_HDR_LEN);
	afs_data_destroy(a);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_save_runs_and_history),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
