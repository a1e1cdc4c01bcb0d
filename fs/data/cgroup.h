/* cgroup.h - the daemon's memory cgroup, read from its files (v1 and v2).
 *
 * Owns nothing: plain functions over the files under a root prefix ("" for
 * the machine, a directory of fake files in tests).
 *
 * Concurrency: no state, no lock; any thread.
 */
#ifndef AFS_DATA_CGROUP_H
#define AFS_DATA_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first number in @path (after "@key " when @key), or 0: none, "max",
 * unreadable, or a limit that is none. */
uint64_t afs_cgroup_read_num(const char *path, const char *key);

/* The calling process's memory cgroup directory into @dir: v1 (a "memory"
 * controller line in /proc/self/cgroup) under ROOT/sys/fs/cgroup/memory,
 * else v2 (the "0::" line) under ROOT/sys/fs/cgroup; *@v1 says which.
 * Return: 0, -ENOENT (none), -ENAMETOOLONG. */
int afs_cgroup_memory_dir(const char *root, char *dir, size_t len, bool *v1);

/* The limit in force for the cgroup at @dir (the smallest up the tree);
 * 0: none. */
uint64_t afs_cgroup_dir_limit(const char *root, const char *dir, bool v1);

/* The cgroup's usage and the file pages in it (what the kernel reclaims
 * by itself).  Return: 0, or -ENOENT when the usage cannot be read. */
int afs_cgroup_usage(const char *dir, bool v1, uint64_t *usage, uint64_t *file);

#endif /* AFS_DATA_CGROUP_H */
