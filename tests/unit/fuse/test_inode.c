/* test_inode.c - the inode table: node id encoding, reference counting
 * (lookup / forget / batches of forgets / in-flight references), a million
 * lookups without growth, synthetic ids, and reopening a forgotten node id
 * from the id alone (NFS re-export). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>

#include "inode.h"

struct fixture {
	struct afs_itable t;
	char dir[64];
	int dirfd; /* O_PATH on dir */
	struct stat dirst;
	uint32_t fsidx;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(afs_itable_init(&f->t), 0);
	strcpy(f->dir, "/tmp/afs-test-inode-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->dirfd = open(f->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->dirfd >= 0);
	assert_int_equal(fstat(f->dirfd, &f->dirst), 0);
	assert_int_equal(
		afs_itable_fsidx(&f->t, f->dirst.st_dev, f->dirfd, &f->fsidx),
		0);
	assert_int_equal(afs_itable_set_root(&f->t, f->fsidx, f->dirst.st_ino,
					     dup(f->dirfd), f->dirst.st_mode,
					     0),
			 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	afs_itable_destroy(&f->t);
	close(f->dirfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static bool fd_is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static int path_fd(void)
{
	int fd = open("/", O_PATH | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static void test_nodeid_round_trip(void **state)
{
	const uint32_t fsidx[] = {0, 1, 2, 77, AFS_FSIDX_MAX};
	const uint64_t ino[] = {0, 1, 2, 12345, UINT32_MAX, AFS_INO_MASK};

	(void)state;
	for (size_t a = 0; a < 5; a++) {
		for (size_t b = 0; b < 6; b++) {
			uint64_t id = afs_nodeid_encode(fsidx[a], ino[b]);
			uint32_t f2;
			uint64_t i2;

			assert_true(id > AFS_ROOT_NODEID);
			assert_false(id & AFS_NODEID_SYNTH);
			assert_true(afs_nodeid_decode(id, &f2, &i2));
			assert_int_equal(f2, fsidx[a]);
			assert_int_equal(i2, ino[b]);
		}
	}
}

static void test_nodeid_not_encodable(void **state)
{
	uint32_t f;
	uint64_t i;

	(void)state;
	assert_int_equal(afs_nodeid_encode(0, AFS_INO_MASK + 1), 0);
	assert_int_equal(afs_nodeid_encode(AFS_FSIDX_MAX + 1, 5), 0);
	assert_false(afs_nodeid_decode(AFS_ROOT_NODEID, &f, &i));
	assert_false(afs_nodeid_decode(0, &f, &i));
	assert_false(afs_nodeid_decode(AFS_NODEID_SYNTH | 7, &f, &i));
}

static void test_shown_ino(void **state)
{
	struct afs_inode a = {.fsidx = 0, .ino = 1234};
	struct afs_inode b = {.fsidx = 3, .ino = 1234};
	struct afs_inode s = {.fsidx = 0, .ino = 1ULL << 50};

	(void)state;
	a.nodeid = afs_nodeid_encode(0, 1234);
	b.nodeid = afs_nodeid_encode(3, 1234);
	s.nodeid = AFS_NODEID_SYNTH | 9;
	assert_int_equal(afs_shown_ino(&a), 1234); /* SOURCE's fs: as is */
	assert_int_equal(afs_shown_ino(&b), (3ULL << 48) | 1234);
	assert_int_not_equal(afs_shown_ino(&a), afs_shown_ino(&b));
	assert_int_equal(afs_shown_ino(&s), s.nodeid);
	assert_int_equal(afs_shown_dirent_ino(3, 1234), afs_shown_ino(&b));
}

static void test_root(void **state)
{
	struct fixture *f = *state;
	struct afs_inode *r = afs_itable_get(&f->t, AFS_ROOT_NODEID);

	assert_non_null(r);
	assert_int_equal(r->ino, f->dirst.st_ino);
	/* the kernel may forget the root: it stays */
	assert_int_equal(afs_itable_forget(&f->t, AFS_ROOT_NODEID, 1), 0);
	afs_itable_put(&f->t, r);
	assert_non_null(r = afs_itable_get(&f->t, AFS_ROOT_NODEID));
	afs_itable_put(&f->t, r);
	assert_int_equal(
		afs_itable_set_root(&f->t, 0, 1, path_fd(), S_IFDIR, 0),
		-EEXIST);
}

static void test_lookup_forget(void **state)
{
	struct fixture *f = *state;
	int fd1 = path_fd(), fd2 = path_fd();
	struct afs_inode *i, *j;
	uint64_t id;

	i = afs_itable_insert(&f->t, 0, 4242, fd1, S_IFREG, 7, true);
	assert_non_null(i);
	id = i->nodeid;
	assert_int_equal(id, afs_nodeid_encode(0, 4242));
	assert_int_equal(i->generation, 7);
	afs_itable_put(&f->t, i);
	assert_int_equal(afs_itable_count(&f->t), 2);

	/* a second lookup finds the entry and closes the new fd */
	j = afs_itable_insert(&f->t, 0, 4242, fd2, S_IFREG, 7, true);
	assert_ptr_equal(j, i);
	assert_false(fd_is_open(fd2));
	afs_itable_put(&f->t, j);

	assert_int_equal(afs_itable_forget(&f->t, id, 1), 0);
	assert_non_null(i = afs_itable_get(&f->t, id)); /* one lookup left */
	afs_itable_put(&f->t, i);
	assert_true(fd_is_open(fd1));
	assert_int_equal(afs_itable_forget(&f->t, id, 1), 0);
	assert_null(afs_itable_get(&f->t, id));
	assert_false(fd_is_open(fd1));
	assert_int_equal(afs_itable_count(&f->t), 1);
}

static void test_find_by_key(void **state)
{
	struct fixture *f = *state;
	struct afs_inode *i, *j;

	assert_null(afs_itable_find(&f->t, 0, 99, true));
	i = afs_itable_insert(&f->t, 0, 99, path_fd(), S_IFREG, 0, true);
	j = afs_itable_find(&f->t, 0, 99, true);
	assert_ptr_equal(i, j);
	afs_itable_put(&f->t, i);
	afs_itable_put(&f->t, j);
	assert_null(afs_itable_find(&f->t, 1, 99, false)); /* other fs */
	assert_int_equal(afs_itable_forget(&f->t, i->nodeid, 2), 0);
	assert_int_equal(afs_itable_count(&f->t), 1);
}

/* What the backing watcher asks: a device's index without registering it,
 * and every node id (the root's too) for an overflow. */
static void test_watcher_lookups(void **state)
{
	struct fixture *f = *state;
	uint64_t *ids, want[3] = {AFS_ROOT_NODEID};
	uint32_t fsidx = 77;
	size_t n;

	assert_int_equal(afs_itable_fsidx_of(&f->t, f->dirst.st_dev, &fsidx),
			 0);
	assert_int_equal(fsidx, f->fsidx);
	assert_int_equal(
		afs_itable_fsidx_of(&f->t, f->dirst.st_dev + 1, &fsidx),
		-ENOENT);
	for (int k = 0; k < 2; k++) {
		struct afs_inode *i = afs_itable_insert(&f->t, 0, 500 + k, -1,
							S_IFREG, 0, true);

		want[k + 1] = i->nodeid;
		afs_itable_put(&f->t, i);
	}
	assert_int_equal(afs_itable_nodeids(&f->t, &ids, &n), 0);
	assert_int_equal(n, 3);
	for (size_t w = 0; w < 3; w++) {
		bool found = false;

		for (size_t k = 0; k < n; k++)
			found |= ids[k] == want[w];
		assert_true(found);
	}
	free(ids);
	for (int k = 0; k < 2; k++)
		assert_int_equal(afs_itable_forget(&f->t, want[k + 1], 1), 0);
}

/* An in-flight request keeps the entry alive past the kernel's forget. */
static void test_ref_outlives_forget(void **state)
{
	struct fixture *f = *state;
	int fd = path_fd();
	struct afs_inode *i =
		afs_itable_insert(&f->t, 0, 5, fd, S_IFREG, 0, true);
	uint64_t id = i->nodeid;

	assert_int_equal(afs_itable_forget(&f->t, id, 1), 0);
	assert_true(fd_is_open(fd));
	assert_ptr_equal(afs_itable_get(&f->t, id), i);
	afs_itable_put(&f->t, i);
	afs_itable_put(&f->t, i);
	assert_false(fd_is_open(fd));
	assert_null(afs_itable_get(&f->t, id));
}

static void test_forget_unknown_or_too_many(void **state)
{
	struct fixture *f = *state;
	struct afs_inode *i;

	assert_int_equal(afs_itable_forget(&f->t, 0xdead, 1), -ENOENT);
	i = afs_itable_insert(&f->t, 0, 6, path_fd(), S_IFREG, 0, true);
	afs_itable_put(&f->t, i);
	/* more than counted: clamped, freed, reported */
	assert_int_equal(afs_itable_forget(&f->t, i->nodeid, 5), -ENOENT);
	assert_int_equal(afs_itable_count(&f->t), 1);
}

/* FORGET batches (forget_multi): many nodes, various counts. */
static void test_forget_batch(void **state)
{
	struct fixture *f = *state;
	uint64_t ids[100];

	for (int n = 0; n < 100; n++) {
		for (int k = 0; k <= n % 3; k++) {
			struct afs_inode *i =
				afs_itable_insert(&f->t, 0, 1000 + n, path_fd(),
						  S_IFREG, 0, true);

			ids[n] = i->nodeid;
			afs_itable_put(&f->t, i);
		}
	}
	assert_int_equal(afs_itable_count(&f->t), 101);
	for (int n = 0; n < 100; n++)
		assert_int_equal(afs_itable_forget(&f->t, ids[n], n % 3 + 1),
				 0);
	assert_int_equal(afs_itable_count(&f->t), 1);
}

/* A million lookups over a thousand inodes, then the forgets: the table,
 * its hash and the open fds come back to where they were. */
/* The first of @n inode numbers from @want on, moved past the fixture's
 * root directory when that range holds it: the root is pinned, and an
 * insert of its (fsidx, ino) returns the root (nodeid 1), not a new inode.
 * In a fresh debootstrapped root, /tmp's inode numbers were in the
 * millions and test_grow_and_shrink forgot a nodeid nobody had. */
static uint64_t free_inos(const struct fixture *f, uint64_t want, uint64_t n)
{
	uint64_t root = f->dirst.st_ino;

	return root >= want && root - want < n ? root + 1 : want;
}

static void test_million_lookups_no_growth(void **state)
{
	struct fixture *f = *state;
	const int distinct = 1000, total = 1000000;
	const uint64_t base = free_inos(f, 50000, distinct);
	uint64_t *ids = calloc(distinct, sizeof(*ids));
	uint64_t *counts = calloc(distinct, sizeof(*counts));
	size_t buckets = afs_itable_buckets(&f->t);
	int fds = open_fds();

	assert_non_null(ids);
	assert_non_null(counts);
	for (int n = 0; n < total; n++) {
		int k = (int)((n * 7919ULL) % distinct);
		struct afs_inode *i = afs_itable_insert(
			&f->t, 0, base + k, path_fd(), S_IFREG, 0, true);

		assert_non_null(i);
		ids[k] = i->nodeid;
		counts[k]++;
		afs_itable_put(&f->t, i);
	}
	assert_int_equal(afs_itable_count(&f->t), distinct + 1);
	assert_int_equal(open_fds(), fds + distinct);
	for (int k = 0; k < distinct; k++)
		assert_int_equal(afs_itable_forget(&f->t, ids[k], counts[k]),
				 0);
	assert_int_equal(afs_itable_count(&f->t), 1);
	assert_int_equal(afs_itable_buckets(&f->t), buckets);
	assert_int_equal(open_fds(), fds);
	free(ids);
	free(counts);
}

/* The hash grows with many live entries and shrinks back after. */
static void test_grow_and_shrink(void **state)
{
	struct fixture *f = *state;
	const int n = 200000;
	const uint64_t base = free_inos(f, 1000000, n);
	size_t buckets = afs_itable_buckets(&f->t);

	for (int k = 0; k < n; k++) {
		/* fd -1: the table owns no descriptor for these */
		struct afs_inode *i = afs_itable_insert(&f->t, 0, base + k, -1,
							S_IFREG, 0, true);

		assert_non_null(i);
		afs_itable_put(&f->t, i);
	}
	assert_true(afs_itable_buckets(&f->t) >= (size_t)n);
	for (int k = 0; k < n; k++)
		assert_int_equal(
			afs_itable_forget(&f->t, afs_nodeid_encode(0, base + k),
					  1),
			0);
	assert_int_equal(afs_itable_count(&f->t), 1);
	assert_int_equal(afs_itable_buckets(&f->t), buckets);
}

static void test_synthetic_ids(void **state)
{
	struct fixture *f = *state;
	uint64_t big = AFS_INO_MASK + 10;
	struct afs_inode *a, *b, *c;
	struct afs_inode *r;

	a = afs_itable_insert(&f->t, 0, big, path_fd(), S_IFREG, 0, true);
	b = afs_itable_insert(&f->t, 0, big + 1, path_fd(), S_IFREG, 0, true);
	c = afs_itable_insert(&f->t, UINT32_MAX, 5, path_fd(), S_IFREG, 0,
			      true);
	assert_true(a->nodeid & AFS_NODEID_SYNTH);
	assert_true(b->nodeid & AFS_NODEID_SYNTH);
	assert_true(c->nodeid & AFS_NODEID_SYNTH);
	assert_int_not_equal(a->nodeid, b->nodeid);
	assert_int_not_equal(afs_shown_ino(a), afs_shown_ino(b));
	assert_ptr_equal(afs_itable_get(&f->t, a->nodeid), a);
	afs_itable_put(&f->t, a);
	/* a synthetic id cannot be reopened once forgotten */
	uint64_t id = b->nodeid;

	afs_itable_put(&f->t, b);
	assert_int_equal(afs_itable_forget(&f->t, id, 1), 0);
	assert_int_equal(afs_itable_reopen(&f->t, id, &r), -ESTALE);
	afs_itable_put(&f->t, a);
	afs_itable_put(&f->t, c);
}

static void test_fsidx_registration(void **state)
{
	struct fixture *f = *state;
	struct afs_backing_fs b;
	uint32_t x, y;

	assert_int_equal(afs_itable_fsidx(&f->t, f->dirst.st_dev, f->dirfd, &x),
			 0);
	assert_int_equal(x, f->fsidx);
	assert_int_equal(afs_itable_fsidx(&f->t, (dev_t)0xfeed, f->dirfd, &y),
			 0);
	assert_int_equal(y, f->fsidx + 1);
	assert_int_equal(afs_itable_backing(&f->t, y, &b), 0);
	assert_int_equal(b.dev, (dev_t)0xfeed);
	assert_int_equal(afs_itable_backing(&f->t, y + 1, &b), -ENOENT);
}

/* NFS re-export: a forgotten node id still opens the same file, where the
 * backing filesystem's handles allow it (ext4, xfs) and we may use them
 * (root); elsewhere it is ESTALE, never another file. */
static void test_reopen_forgotten(void **state)
{
	struct fixture *f = *state;
	struct afs_backing_fs bfs;
	struct afs_inode *i, *r;
	char path[128];
	struct stat st;
	uint64_t id;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/file", f->dir);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	assert_int_equal(fstat(fd, &st), 0);
	i = afs_itable_insert(&f->t, f->fsidx, st.st_ino, fd, st.st_mode,
			      afs_fhandle_generation(fd), true);
	id = i->nodeid;
	afs_itable_put(&f->t, i);
	assert_int_equal(afs_itable_forget(&f->t, id, 1), 0);
	assert_null(afs_itable_get(&f->t, id));

	assert_int_equal(afs_itable_backing(&f->t, f->fsidx, &bfs), 0);
	rc = afs_itable_reopen(&f->t, id, &r);
	if (bfs.handles.type && geteuid() == 0) {
		assert_int_equal(rc, 0);
		assert_int_equal(r->nodeid, id);
		assert_int_equal(r->ino, st.st_ino);
		struct stat st2;

		assert_int_equal(fstat(r->fd, &st2), 0);
		assert_int_equal(st2.st_ino, st.st_ino);
		afs_itable_put(&f->t, r);
		assert_null(afs_itable_get(&f->t, id)); /* no lookup held */
	} else {
		assert_int_equal(rc, -ESTALE);
	}

	/* a deleted file: ESTALE, not some other inode */
	assert_int_equal(unlink(path), 0);
	if (bfs.handles.type && geteuid() == 0) {
		rc = afs_itable_reopen(&f->t, id, &r);
		if (rc == 0) {
			/* ext4 may still have the inode cached if open
			 * elsewhere; it must at least be the same one */
			assert_int_equal(r->ino, st.st_ino);
			afs_itable_put(&f->t, r);
		} else {
			assert_int_equal(rc, -ESTALE);
		}
	}
	/* unknown filesystem index */
	assert_int_equal(
		afs_itable_reopen(&f->t, afs_nodeid_encode(999, 5), &r),
		-ESTALE);
}

/* Racing lookups, forgets and in-flight references on shared inodes.
 *
 * Four threads each run, on 64 shared inode numbers in an order of their own:
 *   insert (one lookup)          -- the kernel's LOOKUP reply
 *   get by node id, put          -- a request using the node
 *   forget 1                     -- the kernel's FORGET
 * so an entry is freed by one thread while another is about to find it by
 * key or by id, and re-created right after.  Each thread forgets exactly what
 * it looked up, so at the end only the root is left and every fd is closed.
 * Failure looks like a use-after-free (ASan), a data race (TSan), a count
 * other than 1, or leaked fds.  Bounded: a fixed number of rounds.
 */
struct race_arg {
	struct afs_itable *t;
	unsigned seed;
};

static void *race_main(void *p)
{
	struct race_arg *a = p;

	for (int n = 0; n < 20000; n++) {
		uint64_t ino = 7000 + (rand_r(&a->seed) % 64);
		struct afs_inode *i = afs_itable_insert(a->t, 0, ino, path_fd(),
							S_IFREG, 0, true);
		uint64_t id = i->nodeid;
		struct afs_inode *g;

		afs_itable_put(a->t, i);
		g = afs_itable_get(a->t, id); /* we still hold a lookup */
		assert_non_null(g);
		assert_int_equal(g->ino, ino);
		afs_itable_put(a->t, g);
		assert_int_equal(afs_itable_forget(a->t, id, 1), 0);
	}
	return NULL;
}

static void test_concurrent_lookup_forget(void **state)
{
	struct fixture *f = *state;
	struct race_arg args[4];
	pthread_t th[4];
	int fds = open_fds();

	for (int k = 0; k < 4; k++) {
		args[k] = (struct race_arg){.t = &f->t, .seed = 17u * k + 1};
		assert_int_equal(
			pthread_create(&th[k], NULL, race_main, &args[k]), 0);
	}
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	assert_int_equal(afs_itable_count(&f->t), 1);
	assert_int_equal(open_fds(), fds);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_nodeid_round_trip),
		T(test_nodeid_not_encodable),
		T(test_shown_ino),
		T(test_root),
		T(test_lookup_forget),
		T(test_find_by_key),
		T(test_watcher_lookups),
		T(test_ref_outlives_forget),
		T(test_forget_unknown_or_too_many),
		T(test_forget_batch),
		T(test_million_lookups_no_growth),
		T(test_grow_and_shrink),
		T(test_synthetic_ids),
		T(test_concurrent_lookup_forget),
		T(test_fsidx_registration),
		T(test_reopen_forgotten),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
