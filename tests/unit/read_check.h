/* read_check.h - reads for the unit tests (tests/unit/data, tests/unit/stats),
 * through the data path's own read function (afs_data_read()), every byte
 * checked.  Returns errors instead of asserting, so reader threads can use
 * it.
 */
#ifndef AFS_TEST_READ_CHECK_H
#define AFS_TEST_READ_CHECK_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "fs/data/data.h"
#include "ra/ra.h"

/* Expected byte at @off, or NULL: no check. */
typedef uint8_t (*test_byte_fn)(uint64_t off);

struct test_reply {
	uint64_t off; /* of the next byte */
	uint64_t bytes; /* replied */
	test_byte_fn want;
	bool bad;
};

static inline int test_reply_check(void *ctx, const struct iovec *iov, int n)
{
	struct test_reply *t = ctx;

	for (int v = 0; v < n; v++) {
		const uint8_t *b = iov[v].iov_base;

		for (size_t i = 0; i < iov[v].iov_len; i++, t->off++)
			if (t->want && b[i] != t->want(t->off))
				t->bad = true;
		t->bytes += iov[v].iov_len;
	}
	return 0;
}

/*
 * Read pages [index, index + nr) of @fc on handle @st (backing fd @fd),
 * check each byte against @want, and count the bytes replied in *@bytes
 * (may be NULL).  The pages stay data (direct mode), as the tests look at
 * them afterwards.
 * Return: 0, afs_data_read()'s -errno, or -EIO for a wrong byte.
 */
static inline int test_read_bytes(struct afs_data *a, struct afs_fcache *fc,
				  int fd, struct ra_state *st, uint64_t index,
				  uint64_t nr, test_byte_fn want,
				  uint64_t *bytes)
{
	struct test_reply t = {.off = index * CACHE_PAGE_SIZE, .want = want};
	struct afs_read r = {.fc = fc,
			     .ra = st,
			     .fd = fd,
			     .keep_data = true,
			     .reply = test_reply_check,
			     .ctx = &t};
	int rc = afs_data_read(a, &r, index * CACHE_PAGE_SIZE,
			       nr * CACHE_PAGE_SIZE);

	if (bytes)
		*bytes = t.bytes;
	return rc ? rc : t.bad ? -EIO : 0;
}

/* test_read_bytes() without the count. */
static inline int test_read_check(struct afs_data *a, struct afs_fcache *fc,
				  int fd, struct ra_state *st, uint64_t index,
				  uint64_t nr, test_byte_fn want)
{
	return test_read_bytes(a, fc, fd, st, index, nr, want, NULL);
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

#endif /* AFS_TEST_READ_CHECK_H */
