/* test_cgroup.c - the default cache budget and the memory cgroup probe
 * (afs_cgroup_mem_limit(), afs_data_default_size()), on fake /proc and
 * /sys trees under a temporary directory.
 *
 * Covered: cgroup v1 (the cgroup's own limit, the hierarchical limit of an
 * ancestor being smaller, "unlimited", the root cgroup, the memory
 * controller sharing a line with others); cgroup v2 (memory.max of the
 * cgroup, of an ancestor, "max"); a hybrid machine (the v1 memory line
 * wins); no /proc/self/cgroup, malformed lines and values, a path with
 * ".."; the default: an eighth of RAM, a quarter of a smaller cgroup
 * limit, never below the minimum, a limit above RAM ignored.  The
 * pressure watch's inputs (usage less file pages, v1 and v2) and its
 * decisions (afs_pressure_decide()).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cgroup.h"
#include "data_internal.h"
#include "pressure.h"

#define MIB (1ull << 20)

static char root[64];

/* Write @text to @root/@rel, making the directories on the way. */
static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/afs-cgroup.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

static void v1_own_limit(void **state)
{
	(void)state;
	put("proc/self/cgroup", "9:name=systemd:/\n4:memory:/svc/a\n0::/\n");
	put("sys/fs/cgroup/memory/svc/a/memory.limit_in_bytes", "268435456\n");
	put("sys/fs/cgroup/memory/svc/a/memory.stat",
	    "cache 0\nrss 0\nhierarchical_memory_limit 268435456\n"
	    "hierarchical_memsw_limit 9223372036854771712\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 256 * MIB);
}

static void v1_ancestor_smaller(void **state)
{
	(void)state;
	put("proc/self/cgroup", "4:memory:/svc/b\n");
	put("sys/fs/cgroup/memory/svc/b/memory.limit_in_bytes",
	    "9223372036854771712\n");
	put("sys/fs/cgroup/memory/svc/b/memory.stat",
	    "hierarchical_memory_limit 67108864\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 64 * MIB);
}

static void v1_unlimited(void **state)
{
	(void)state;
	put("proc/self/cgroup", "4:memory:/svc/c\n");
	put("sys/fs/cgroup/memory/svc/c/memory.limit_in_bytes",
	    "9223372036854771712\n");
	put("sys/fs/cgroup/memory/svc/c/memory.stat",
	    "hierarchical_memory_limit 9223372036854771712\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 0);
}

static void v1_root_and_shared_line(void **state)
{
	(void)state;
	/* A container's namespaced view: "/" is its own cgroup. */
	put("proc/self/cgroup", "5:cpu,memory,pids:/\n");
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", "1073741824\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 1024 * MIB);
}

static void v2_own_and_ancestor(void **state)
{
	(void)state;
	put("proc/self/cgroup", "0::/system.slice/afs.service\n");
	put("sys/fs/cgroup/system.slice/afs.service/memory.max", "max\n");
	put("sys/fs/cgroup/system.slice/memory.max", "134217728\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 128 * MIB);
	put("sys/fs/cgroup/system.slice/afs.service/memory.max", "33554432\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 32 * MIB);
	put("sys/fs/cgroup/system.slice/afs.service/memory.max", "max\n");
	put("sys/fs/cgroup/system.slice/memory.max", "max\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 0);
}

static void hybrid_v1_wins(void **state)
{
	(void)state;
	put("proc/self/cgroup", "0::/x\n4:memory:/y\n");
	put("sys/fs/cgroup/x/memory.max", "1048576\n");
	put("sys/fs/cgroup/memory/y/memory.limit_in_bytes", "536870912\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 512 * MIB);
}

static void malformed(void **state)
{
	(void)state;
	/* Nothing there at all. */
	assert_int_equal(afs_cgroup_mem_limit("/nonexistent-afs-root"), 0);
	/* Garbage lines, a relative path, a ".." path, garbage values. */
	put("proc/self/cgroup", "garbage\n4:memory\n4:memory:rel\n"
				"4:memory:/../etc\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 0);
	put("proc/self/cgroup", "4:memory:/z\n");
	put("sys/fs/cgroup/memory/z/memory.limit_in_bytes", "12abc\n");
	put("sys/fs/cgroup/memory/z/memory.stat",
	    "hierarchical_memory_limitX 4096\nhierarchical_memory_limit -1\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 0);
	put("sys/fs/cgroup/memory/z/memory.limit_in_bytes",
	    "99999999999999999999999\n");
	assert_int_equal(afs_cgroup_mem_limit(root), 0);
	put("sys/fs/cgroup/memory/z/memory.limit_in_bytes", "");
	assert_int_equal(afs_cgroup_mem_limit(root), 0);
}

static void default_size(void **state)
{
	uint64_t ram = 24 * 1024 * MIB, min = 18 * MIB;

	(void)state;
	assert_int_equal(afs_data_default_size(ram, 0, min), ram / 8);
	assert_int_equal(afs_data_default_size(0, 0, min), 256 * MIB);
	/* A quarter of the cgroup's limit. */
	assert_int_equal(afs_data_default_size(ram, 256 * MIB, min), 64 * MIB);
	assert_int_equal(afs_data_default_size(0, 256 * MIB, min), 64 * MIB);
	/* Never below what the threads need. */
	assert_int_equal(afs_data_default_size(ram, 64 * MIB, min), min);
	/* A limit at or above RAM, or whose quarter is above an eighth of
	 * RAM, changes nothing. */
	assert_int_equal(afs_data_default_size(ram, ram, min), ram / 8);
	assert_int_equal(afs_data_default_size(ram, 2 * ram, min), ram / 8);
	assert_int_equal(afs_data_default_size(ram, ram / 2 + MIB, min),
			 ram / 8);
}

static void usage_v1_v2(void **state)
{
	char dir[4096];
	uint64_t usage, file;
	bool v1;

	(void)state;
	put("proc/self/cgroup", "4:memory:/svc/u\n");
	put("sys/fs/cgroup/memory/svc/u/memory.usage_in_bytes", "209715200\n");
	put("sys/fs/cgroup/memory/svc/u/memory.stat",
	    "active_file 1\ntotal_active_file 41943040\n"
	    "total_inactive_file 20971520\n");
	assert_int_equal(afs_cgroup_memory_dir(root, dir, sizeof(dir), &v1), 0);
	assert_true(v1);
	assert_int_equal(afs_cgroup_usage(dir, v1, &usage, &file), 0);
	assert_int_equal(usage, 200 * MIB);
	assert_int_equal(file, 60 * MIB); /* the hierarchical totals */

	put("proc/self/cgroup", "0::/w\n");
	put("sys/fs/cgroup/w/memory.current", "104857600\n");
	put("sys/fs/cgroup/w/memory.stat",
	    "anon 1\nactive_file 10485760\ninactive_file 10485760\n");
	assert_int_equal(afs_cgroup_memory_dir(root, dir, sizeof(dir), &v1), 0);
	assert_false(v1);
	assert_int_equal(afs_cgroup_usage(dir, v1, &usage, &file), 0);
	assert_int_equal(usage, 100 * MIB);
	assert_int_equal(file, 20 * MIB);
	put("sys/fs/cgroup/w/memory.current", "garbage\n");
	assert_int_equal(afs_cgroup_usage(dir, v1, &usage, &file), -ENOENT);
}

static void pressure_decisions(void **state)
{
	uint64_t lim = 256 * MIB, min = 20 * MIB, ceil = 160 * MIB;

	(void)state;
	/* No limit, or room: nothing changes. */
	assert_int_equal(afs_pressure_decide(0, 900 * MIB, ceil, UINT64_MAX,
					     min, ceil, 1),
			 ceil);
	assert_int_equal(afs_pressure_decide(lim, 200 * MIB, ceil, UINT64_MAX,
					     min, ceil, true),
			 ceil);
	/* Above 90 %: the excess over 85 % goes, at least an eighth. */
	assert_int_equal(afs_pressure_decide(lim, 250 * MIB, ceil, UINT64_MAX,
					     min, ceil, false),
			 ceil - (250 * MIB - lim / 100 * 85));
	assert_int_equal(afs_pressure_decide(lim, lim / 100 * 90 + 1, 128 * MIB,
					     UINT64_MAX, min, ceil, false),
			 112 * MIB);
	/* A budget far above what the cache holds is cut from what it holds
	 * (a cache_size of 3G in a 256 MiB cgroup). */
	assert_int_equal(afs_pressure_decide(lim, 250 * MIB, 3072 * MIB,
					     100 * MIB, min, 3072 * MIB, false),
			 100 * MIB - (250 * MIB - lim / 100 * 85));
	/* Never below the minimum. */
	assert_int_equal(afs_pressure_decide(lim, lim, 24 * MIB, UINT64_MAX,
					     min, ceil, 0),
			 min);
	/* Calm and below 75 %: half the room under 85 %, up to the ceiling;
	 * not calm yet: nothing. */
	assert_int_equal(afs_pressure_decide(lim, 100 * MIB, 40 * MIB,
					     UINT64_MAX, min, ceil, false),
			 40 * MIB);
	assert_int_equal(afs_pressure_decide(lim, 180 * MIB, 40 * MIB,
					     UINT64_MAX, min, ceil, true),
			 40 * MIB + (lim / 100 * 85 - 180 * MIB) / 2);
	assert_int_equal(afs_pressure_decide(lim, 10 * MIB, 150 * MIB,
					     UINT64_MAX, min, ceil, true),
			 ceil);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(v1_own_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(v1_ancestor_smaller, setup,
						teardown),
		cmocka_unit_test_setup_teardown(v1_unlimited, setup, teardown),
		cmocka_unit_test_setup_teardown(v1_root_and_shared_line, setup,
						teardown),
		cmocka_unit_test_setup_teardown(v2_own_and_ancestor, setup,
						teardown),
		cmocka_unit_test_setup_teardown(hybrid_v1_wins, setup,
						teardown),
		cmocka_unit_test_setup_teardown(malformed, setup, teardown),
		cmocka_unit_test(default_size),
		cmocka_unit_test_setup_teardown(usage_v1_v2, setup, teardown),
		cmocka_unit_test(pressure_decisions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
