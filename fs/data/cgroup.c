/* cgroup.c - the daemon's memory cgroup: where it is, its limit, and its
 * figures (afs_cgroup_mem_limit() in data.h; the rest for pressure.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "fs/data/data.h"

/* A cgroup limit this large is "no limit" (v1 writes 2^63 less a page). */
#define CG_UNLIMITED (1ull << 62)

uint64_t afs_cgroup_read_num(const char *path, const char *key)
{
	char line[256];
	size_t klen = key ? strlen(key) : 0;
	uint64_t v = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		if (key) {
			if (strncmp(line, key, klen) || line[klen] != ' ')
				continue;
			p += klen + 1;
		}
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno || end == p || (*end && *end != '\n'))
			v = 0;
		break;
	}
	fclose(f);
	return v >= CG_UNLIMITED ? 0 : v;
}

static uint64_t cg_min(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

int afs_cgroup_memory_dir(const char *root, char *dir, size_t len, bool *v1)
{
	char line[4096], path[4096 + 64], v2[4096] = "";
	FILE *f;
	int rc = -ENOENT;

	snprintf(path, sizeof(path), "%s/proc/self/cgroup", root);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	while (rc && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *cg, *c, *save;

		cg = ctl ? strchr(++ctl, ':') : NULL;
		if (!cg)
			continue;
		*cg++ = '\0';
		cg[strcspn(cg, "\n")] = '\0';
		if (*cg != '/' || strstr(cg, "/.."))
			continue;
		if (!*ctl) { /* v2: "0::/path" */
			snprintf(v2, sizeof(v2), "%s", cg);
			continue;
		}
		for (c = strtok_r(ctl, ",", &save); c;
		     c = strtok_r(NULL, ",", &save)) {
			if (strcmp(c, "memory"))
				continue;
			if ((size_t)snprintf(dir, len,
					     "%s/sys/fs/cgroup/memory%s", root,
					     strcmp(cg, "/") ? cg : "") < len) {
				*v1 = true;
				rc = 0;
			}
			break;
		}
	}
	fclose(f);
	if (!rc || !*v2)
		return rc;
	if ((size_t)snprintf(dir, len, "%s/sys/fs/cgroup%s", root,
			     strcmp(v2, "/") ? v2 : "") >= len)
		return -ENAMETOOLONG;
	*v1 = false;
	return 0;
}

uint64_t afs_cgroup_dir_limit(const char *root, const char *dir, bool v1)
{
	char path[4096 + 64], up[4096];
	size_t base = strlen(root) + strlen("/sys/fs/cgroup");
	uint64_t limit = 0;

	if (v1) {
		/* The hierarchical limit is the smallest of the cgroup's and
		 * its ancestors'. */
		snprintf(path, sizeof(path), "%s/memory.stat", dir);
		limit = afs_cgroup_read_num(path, "hierarchical_memory_limit");
		snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", dir);
		return cg_min(limit, afs_cgroup_read_num(path, NULL));
	}
	/* v2: memory.max of the cgroup and of every ancestor below the root
	 * (which has none). */
	snprintf(up, sizeof(up), "%s", dir);
	while (strlen(up) > base) {
		snprintf(path, sizeof(path), "%s/memory.max", up);
		limit = cg_min(limit, afs_cgroup_read_num(path, NULL));
		*strrchr(up, '/') = '\0';
	}
	return limit;
}

uint64_t afs_cgroup_mem_limit(const char *root)
{
	char dir[4096];
	bool v1;

	if (afs_cgroup_memory_dir(root, dir, sizeof(dir), &v1))
		return 0;
	return afs_cgroup_dir_limit(root, dir, v1);
}

int afs_cgroup_usage(const char *dir, bool v1, uint64_t *usage, uint64_t *file)
{
	char path[4096 + 64];

	snprintf(path, sizeof(path), "%s/%s", dir,
		 v1 ? "memory.usage_in_bytes" : "memory.current");
	*usage = afs_cgroup_read_num(path, NULL);
	if (!*usage)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	*file = afs_cgroup_read_num(path,
				    v1 ? "total_active_file" : "active_file") +
		afs_cgroup_read_num(path, v1 ? "total_inactive_file"
					     : "inactive_file");
	return 0;
}
