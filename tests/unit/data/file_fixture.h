/* file_fixture.h - the write tests' fixture (test_behind.c, test_write.c):
 * a mount's data path with a small cache and no reclaimer, and one
 * temporary file under $TMPDIR (or /tmp) looked up in it.  Include after
 * cmocka.h. */
#ifndef AFS_TEST_FILE_FIXTURE_H
#define AFS_TEST_FILE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache.h"
#include "fs/data/data.h"

struct file_fixture {
	char path[64];
	int fd;
	struct afs_ahead *a;
	struct afs_fcache *fc; /* the fixture's reference */
};

/* The file's afs_fcache, with a new reference. */
static inline struct afs_fcache *file_fixture_lookup(struct file_fixture *fx)
{
	struct afs_file_key key;
	struct afs_fcache *fc;
	struct stat st;

	assert_int_equal(fstat(fx->fd, &st), 0);
	key = (struct afs_file_key){.dev = st.st_dev, .ino = st.st_ino};
	assert_int_equal(afs_fcache_lookup(fx->a, &key, &st, &fc), 0);
	return fc;
}

/* Open the fixture into @fx with @writes' write options (write_behind,
 * write_direct: from afs_ahead_config_init() unless the test changed them);
 * the rest is the fixture's.  @name: the file's prefix. */
static inline void file_fixture_open(struct file_fixture *fx,
				     const struct afs_ahead_config *writes,
				     const char *name)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct afs_ahead_config cfg;
	char err[256];

	afs_ahead_config_init(&cfg);
	cfg.cache_size = 16u << 20;
	cfg.manual_reclaim = true;
	cfg.ra.workers = 1;
	cfg.write_behind = writes->write_behind;
	cfg.write_direct = writes->write_direct;

	cache_thread_online();
	snprintf(fx->path, sizeof(fx->path), "%s/%s-XXXXXX", dir, name);
	fx->fd = mkstemp(fx->path);
	assert_true(fx->fd >= 0);
	assert_int_equal(afs_ahead_create(&cfg, &fx->a, err, sizeof(err)), 0);
	fx->fc = file_fixture_lookup(fx);
}

static inline void file_fixture_close(struct file_fixture *fx)
{
	afs_fcache_put(fx->fc);
	afs_ahead_destroy(fx->a);
	close(fx->fd);
	unlink(fx->path);
}

#endif /* AFS_TEST_FILE_FIXTURE_H */
