/* xattr_test.h - the read path as the unit tests of tests/unit/xattr drive
 * it: misses through ra_sync_miss(), readahead marks through
 * ra_marker_hit(), pages waited for and counted as hits, as fs/ahead.c
 * does.  Returns errors instead of asserting, so reader threads can use it.
 */
#ifndef AFS_TEST_XATTR_TEST_H
#define AFS_TEST_XATTR_TEST_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "ra/ra.h"

/* Expected byte at @off, or NULL: no check. */
typedef uint8_t (*test_byte_fn)(uint64_t off);

/*
 * Read pages [index, index + nr) of @m through @f on handle @st, check each
 * byte against @want.
 * Return: 0, a cache or readahead -errno, -EIO for a wrong byte, or
 * -EAGAIN if a page kept disappearing (100 tries).
 */
static inline int test_read_check(struct cache_mapping *m, struct ra_file *f,
				  struct ra_state *st, uint64_t index,
				  uint64_t nr, test_byte_fn want)
{
	for (uint64_t i = index; i < index + nr; i++) {
		struct cache_page *p;
		const uint8_t *data;
		int tries = 0, rc;
		bool mark;

	again:
		if (++tries > 100)
			return -EAGAIN;
		rcu_read_lock();
		p = cache_lookup_rcu(m, i);
		if (!p) {
			rcu_read_unlock();
			cache_count_miss(m, 1);
			rc = ra_sync_miss(f, st, i, index + nr - i);
			if (rc)
				return rc;
			goto again;
		}
		mark = cache_page_test_clear_readahead(p);
		if (!cache_page_tryget(p)) {
			rcu_read_unlock();
			goto again;
		}
		rcu_read_unlock();
		if (mark) {
			rc = ra_marker_hit(f, st, i, index + nr - i);
			if (rc) {
				cache_page_put(p);
				return rc;
			}
		}
		rc = cache_page_wait(p, NULL);
		if (rc == -EAGAIN) { /* refused window or invalidated */
			cache_page_put(p);
			goto again;
		}
		if (rc) {
			cache_page_put(p);
			return rc;
		}
		data = cache_page_data(p);
		for (uint64_t b = 0; want && b < CACHE_PAGE_SIZE; b++) {
			if (data[b] != want(i * CACHE_PAGE_SIZE + b)) {
				cache_page_put(p);
				return -EIO;
			}
		}
		cache_page_mark_accessed(p);
		cache_count_hit(m, 1, CACHE_PAGE_SIZE);
		cache_page_put(p);
	}
	ra_note_read(st, index, nr);
	return 0;
}

/* Wait until no page of [0, @npages) has I/O in flight. */
static inline void test_settle(struct cache_mapping *m, uint64_t npages)
{
	for (uint64_t i = 0; i < npages; i++) {
		struct cache_page *p;

		rcu_read_lock();
		p = cache_lookup_rcu(m, i);
		if (p && !cache_page_tryget(p))
			p = NULL;
		rcu_read_unlock();
		if (p) {
			cache_page_wait(p, NULL);
			cache_page_put(p);
		}
	}
}

#endif /* AFS_TEST_XATTR_TEST_H */
