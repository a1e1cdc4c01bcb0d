/* cache_test.h - fixtures shared by the cache/ unit tests.
 *
 * Each test gets a fresh cache (manual reclaim unless the test asks for
 * the reclaimer) and one mapping; teardown puts the mapping and destroys
 * the cache, so ASan's leak check sees every page and node come back.
 */
#ifndef AHEADFS_TEST_CACHE_TEST_H
#define AHEADFS_TEST_CACHE_TEST_H

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cache/cache.h"
#include "cache_internal.h"

struct fixture {
	struct cache *c;
	struct cache_mapping *m;
	struct cache_config cfg;
};

static inline int fixture_setup_cfg(void **state,
				    const struct cache_config *cfg)
{
	struct fixture *f = calloc(1, sizeof(*f));

	cache_thread_online();
	if (!f)
		return -1;
	f->cfg = *cfg;
	if (cache_create(&f->cfg, &f->c) || cache_mapping_create(f->c, &f->m)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

#include <sys/mman.h>
#include <unistd.h>

/* Whether every page of [@p, @p + @len) is in memory (mincore()); @p page
 * aligned.  -1 where this kernel cannot populate ahead of use
 * (MADV_POPULATE_WRITE, Linux 5.14), which is then not an error. */
static inline int all_resident(void *p, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE),
	       n = (len + page - 1) / page;
	unsigned char *vec = malloc(n);
	void *probe = mmap(NULL, page, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int rc = 1;

	assert_non_null(vec);
	assert_true(probe != MAP_FAILED);
	if (madvise(probe, page, MADV_POPULATE_WRITE)) {
		rc = -1;
	} else {
		assert_int_equal(mincore(p, len, vec), 0);
		for (size_t i = 0; i < n; i++)
			if (!(vec[i] & 1))
				rc = 0;
	}
	munmap(probe, page);
	free(vec);
	return rc;
}

/* Budget in pages (each page costs 4 KiB plus its descriptor). */
static inline uint64_t budget_for(uint64_t pages)
{
	return pages * (CACHE_PAGE_SIZE + sizeof(struct cache_page));
}

static inline int fixture_setup(void **state)
{
	struct cache_config cfg = {
		.budget_bytes = budget_for(4096),
		.manual_reclaim = true,
		.alloc_wait_ms = 10,
	};

	return fixture_setup_cfg(state, &cfg);
}

static inline int fixture_teardown(void **state)
{
	struct fixture *f = *state;
	int rc;

	if (f->m)
		cache_mapping_put(f->m);
	rc = cache_destroy(f->c);
	free(f);
	return rc ? -1 : 0;
}

/* Insert [start, start + nr) and complete every inserted page with a
 * recognisable fill; returns the number inserted. */
static inline unsigned int fill_range(struct cache_mapping *m, uint64_t start,
				      uint64_t nr, unsigned int flags)
{
	struct cache_page **pages = calloc(nr, sizeof(*pages));
	unsigned int got = 0;
	int rc;

	assert_non_null(pages);
	rc = cache_insert_range(m, start, nr, CACHE_NO_MARK, flags, pages,
				&got);
	assert_int_equal(rc, 0);
	for (unsigned int i = 0; i < got; i++) {
		uint64_t *d = cache_page_data(pages[i]);

		d[0] = cache_page_index(pages[i]);
		cache_page_complete(pages[i], 0);
	}
	free(pages);
	return got;
}

/* Lookup outside any read-side section, for tests: is the index data? */
static inline bool has_data(struct cache_mapping *m, uint64_t index)
{
	bool ok;

	rcu_read_lock();
	ok = cache_lookup_rcu(m, index) != NULL;
	rcu_read_unlock();
	return ok;
}

#endif /* AHEADFS_TEST_CACHE_TEST_H */
