/* pressure.c - the cache budget follows the memory cgroup's pressure; see
 * pressure.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "data_internal.h"
#include "pressure.h"

struct afs_pressure {
	struct afs_data *a;
	char root[256];
	char dir[4096];
	bool v1;
	uint64_t min, ceiling; /* the budget's range, bytes */
	int stop_fd; /* eventfd: afs_pressure_stop() */
	int level_fd; /* eventfd of memory.pressure_level (v1), or -1 */
	pthread_t thread;
	struct afs_pressure_stats st; /* fields written with __atomic */
};

uint64_t afs_pressure_decide(uint64_t limit, uint64_t unreclaimable,
			     uint64_t budget, uint64_t used, uint64_t min,
			     uint64_t ceiling, bool calm)
{
	uint64_t high = limit / 100 * AFS_PRESSURE_HIGH_PCT;
	uint64_t target = limit / 100 * AFS_PRESSURE_TARGET_PCT;
	uint64_t grow = limit / 100 * AFS_PRESSURE_GROW_PCT;

	if (!limit)
		return budget;
	if (unreclaimable > high) {
		uint64_t cut = unreclaimable - target;

		/* From what the cache holds: a budget far above it (a
		 * cache_size beyond the cgroup) would give nothing back. */
		if (used < budget)
			budget = used;
		if (cut < budget / 8)
			cut = budget / 8;
		return budget > min + cut ? budget - cut : min;
	}
	if (calm && unreclaimable < grow && budget < ceiling) {
		uint64_t add = (target - unreclaimable) / 2;

		return ceiling - budget > add ? budget + add : ceiling;
	}
	return budget;
}

static void stat_set(uint64_t *field, uint64_t v)
{
	__atomic_store_n(field, v, __ATOMIC_RELAXED);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* v1: ask for an eventfd signal at "medium" pressure.  -1 if refused. */
static int level_open(const struct afs_pressure *p)
{
	char path[4096 + 64], line[64];
	int efd, lfd, cfd, n;

	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/memory.pressure_level", p->dir);
	lfd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/cgroup.event_control", p->dir);
	cfd = open(path, O_WRONLY | O_CLOEXEC);
	n = snprintf(line, sizeof(line), "%d %d medium", efd, lfd);
	if (lfd < 0 || cfd < 0 || write(cfd, line, (size_t)n) != n) {
		close(efd);
		efd = -1;
	}
	/* The kernel holds the registration until the eventfd closes. */
	if (lfd >= 0)
		close(lfd);
	if (cfd >= 0)
		close(cfd);
	return efd;
}

static void *pressure_main(void *arg)
{
	struct afs_pressure *p = arg;
	uint64_t budget = p->ceiling, last_shrink = 0;
	bool trim = false;

	for (;;) {
		struct pollfd pfd[2] = {{.fd = p->stop_fd, .events = POLLIN},
					{.fd = p->level_fd, .events = POLLIN}};
		uint64_t limit, usage, file, unrecl = 0, used = UINT64_MAX,
					     next, v;

		if (poll(pfd, p->level_fd >= 0 ? 2 : 1, AFS_PRESSURE_TICK_MS) >
			    0 &&
		    (pfd[0].revents & POLLIN))
			break;
		if (pfd[1].revents & POLLIN)
			(void)!read(p->level_fd, &v, sizeof(v));
		limit = afs_cgroup_dir_limit(p->root, p->dir, p->v1);
		if (!afs_cgroup_usage(p->dir, p->v1, &usage, &file))
			unrecl = usage > file ? usage - file : 0;
		stat_set(&p->st.limit, limit);
		stat_set(&p->st.unreclaimable, unrecl);
		if (limit && unrecl > limit / 100 * AFS_PRESSURE_HIGH_PCT) {
			struct cache_stats cs;

			cache_stats(p->a->cache, &cs);
			used = cs.used_bytes;
		}
		next = afs_pressure_decide(
			limit, unrecl, budget, used, p->min, p->ceiling,
			now_ms() - last_shrink >= AFS_PRESSURE_CALM_MS);
		if (next != budget && !cache_set_budget(p->a->cache, next)) {
			if (next < budget) {
				last_shrink = now_ms();
				afs_count(&p->st.shrinks, 1);
				trim = true;
			} else {
				afs_count(&p->st.grows, 1);
			}
			budget = next;
			stat_set(&p->st.budget, budget);
		}
		/* Evicted pages come back after their grace period: hand
		 * their memory to the kernel on the ticks after a shrink. */
		if (trim) {
			afs_count(&p->st.trimmed, cache_trim(p->a->cache));
			trim = now_ms() - last_shrink < AFS_PRESSURE_CALM_MS;
		}
	}
	return NULL;
}

int afs_pressure_start(struct afs_data *a, const char *root,
		       struct afs_pressure **out)
{
	struct afs_pressure *p;
	int rc;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	snprintf(p->root, sizeof(p->root), "%s", root);
	if (afs_cgroup_memory_dir(root, p->dir, sizeof(p->dir), &p->v1) ||
	    !afs_cgroup_dir_limit(root, p->dir, p->v1)) {
		free(p); /* no limit: nothing to follow */
		return 0;
	}
	p->a = a;
	p->ceiling = a->cfg.cache_size;
	p->min = afs_data_min_cache(&a->cfg, a->cfg.threads);
	p->st.watching = true;
	p->st.budget = p->ceiling;
	p->level_fd = p->v1 ? level_open(p) : -1;
	p->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (p->stop_fd < 0) {
		rc = -errno;
		goto out_free;
	}
	rc = -pthread_create(&p->thread, NULL, pressure_main, p);
	if (rc)
		goto out_close;
	*out = p;
	return 0;

out_close:
	close(p->stop_fd);
out_free:
	if (p->level_fd >= 0)
		close(p->level_fd);
	free(p);
	return rc;
}

void afs_pressure_stop(struct afs_pressure *p)
{
	uint64_t one = 1;

	if (!p)
		return;
	(void)!write(p->stop_fd, &one, sizeof(one));
	pthread_join(p->thread, NULL);
	close(p->stop_fd);
	if (p->level_fd >= 0)
		close(p->level_fd);
	free(p);
}

void afs_pressure_stats(const struct afs_pressure *p,
			struct afs_pressure_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!p)
		return;
	st->watching = true;
	st->limit = __atomic_load_n(&p->st.limit, __ATOMIC_RELAXED);
	st->unreclaimable =
		__atomic_load_n(&p->st.unreclaimable, __ATOMIC_RELAXED);
	st->budget = __atomic_load_n(&p->st.budget, __ATOMIC_RELAXED);
	st->shrinks = __atomic_load_n(&p->st.shrinks, __ATOMIC_RELAXED);
	st->grows = __atomic_load_n(&p->st.grows, __ATOMIC_RELAXED);
	st->trimmed = __atomic_load_n(&p->st.trimmed, __ATOMIC_RELAXED);
}
