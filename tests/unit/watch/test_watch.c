/* test_watch.c - the backing watcher (fs/watch/watch.h) without FUSE: a
 * temporary directory, changes made in it, and callbacks that record what
 * the watcher handed over.
 *
 * Covered: off (no watcher, a line saying so); inotify (a name created, a
 * file written, a directory made later and a name in it, a rename away and
 * in); fanotify where the process may use it (root, ext4 or xfs; skipped
 * elsewhere): a write by another process handed over with the file's inode
 * number and generation and force, this process's own write only counted
 * as its own, a rename's two names, an event outside the directory counted
 * as unknown.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs/fhandle/fhandle.h"
#include "fs/watch/watch.h"

#define MAX_CALLS 256

struct call {
	char kind; /* 'f' file, 'n' name, 'o' overflow */
	struct afs_watch_id id;
	bool force;
	char name[64];
};

struct fixture {
	char dir[128], outside[160];
	/* the inodes whose calls are recorded (a fanotify mark sees the
	 * whole filesystem: other files' calls are left out) */
	uint64_t want[4];
	struct afs_watch *w;
	struct afs_watch_counts c; /* the latest afs_watch_stats() */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct call calls[MAX_CALLS];
	int n;
};

/* A counter of @f's watcher now. */
#define COUNTED(f, field) (afs_watch_stats((f)->w, &(f)->c), (f)->c.field)

static void record(struct fixture *f, struct call c)
{
	bool wanted = c.kind == 'o';

	for (int i = 0; i < 4; i++)
		wanted |= __atomic_load_n(&f->want[i], __ATOMIC_ACQUIRE) ==
			  c.id.ino;
	if (!wanted)
		return;
	pthread_mutex_lock(&f->lock);
	if (f->n < MAX_CALLS)
		f->calls[f->n++] = c;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static enum afs_watch_result on_file(void *ctx, const struct afs_watch_id *id,
				     bool force)
{
	record(ctx, (struct call){.kind = 'f', .id = *id, .force = force});
	return AFS_WATCH_DROPPED;
}

static enum afs_watch_result on_name(void *ctx, const struct afs_watch_id *dir,
				     const char *name)
{
	struct call c = {.kind = 'n', .id = *dir};

	snprintf(c.name, sizeof(c.name), "%s", name);
	record(ctx, c);
	return AFS_WATCH_DROPPED;
}

static void on_overflow(void *ctx)
{
	record(ctx, (struct call){.kind = 'o'});
}

static const struct afs_watch_ops ops = {
	.file = on_file, .name = on_name, .overflow = on_overflow};

/* Wait (5 s at most) for a call of @kind on inode @ino (0: any) named
 * @name (NULL: any); true if one came. */
static bool wait_call(struct fixture *f, char kind, uint64_t ino,
		      const char *name, struct call *out)
{
	struct timespec until;
	bool found = false;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&f->lock);
	for (;;) {
		for (int i = 0; i < f->n && !found; i++) {
			struct call *c = &f->calls[i];

			if (c->kind != kind || (ino && c->id.ino != ino) ||
			    (name && strcmp(c->name, name)))
				continue;
			if (out)
				*out = *c;
			found = true;
		}
		if (found || pthread_cond_timedwait(&f->cond, &f->lock, &until))
			break;
	}
	pthread_mutex_unlock(&f->lock);
	return found;
}

static uint64_t ino_of(const char *dir, const char *name);

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s/afs-watch-XXXXXX", tmp);
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->outside, sizeof(f->outside), "%s.outside", f->dir);
	assert_int_equal(mkdir(f->outside, 0755), 0);
	f->want[0] = ino_of(f->dir, ".");
	f->want[1] = ino_of(f->outside, ".");
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[400];

	afs_watch_close(f->w);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", f->dir, f->outside);
	assert_int_equal(system(cmd), 0);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f);
	return 0;
}

static int open_watch(struct fixture *f, enum afs_watch_mode mode)
{
	char what[512], err[512];
	int rc = afs_watch_open(mode, f->dir, &f->w, what, sizeof(what), err,
				sizeof(err));

	if (rc)
		return rc;
	assert_non_null(strstr(what, afs_watch_backend(f->w)));
	return afs_watch_start(f->w, &ops, f);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static uint64_t ino_of(const char *dir, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

/* Run @fn(@f) in a child process: a writer that is not the "daemon". */
static void as_other(struct fixture *f, void (*fn)(struct fixture *))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		fn(f);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && !WEXITSTATUS(status));
}

static void test_off(void **state)
{
	struct fixture *f = *state;
	char what[512], err[512];

	assert_int_equal(afs_watch_open(AFS_WATCH_OFF, f->dir, &f->w, what,
					sizeof(what), err, sizeof(err)),
			 0);
	assert_null(f->w);
	assert_string_equal(afs_watch_backend(NULL), "off");
	assert_non_null(strstr(what, "watch=off"));
	assert_int_equal(afs_watch_start(NULL, &ops, f), 0);
}

static void test_inotify(void **state)
{
	struct fixture *f = *state;
	char sub[200];
	struct call c;

	put_file(f->dir, "f", "one");
	__atomic_store_n(&f->want[2], ino_of(f->dir, "f"), __ATOMIC_RELEASE);
	assert_int_equal(open_watch(f, AFS_WATCH_INOTIFY), 0);
	assert_string_equal(afs_watch_backend(f->w), "inotify");
	put_file(f->dir, "f", "two"); /* inotify: no pid, so not filtered */
	assert_true(wait_call(f, 'f', ino_of(f->dir, "f"), NULL, &c));
	assert_false(c.force); /* compared, not forced */
	put_file(f->dir, "g", "new");
	assert_true(wait_call(f, 'n', ino_of(f->dir, "."), "g", NULL));
	/* A directory made after the start is watched too. */
	snprintf(sub, sizeof(sub), "%s/sub", f->dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_true(wait_call(f, 'n', ino_of(f->dir, "."), "sub", NULL));
	__atomic_store_n(&f->want[3], ino_of(sub, "."), __ATOMIC_RELEASE);
	put_file(sub, "h", "deep");
	assert_true(wait_call(f, 'n', ino_of(sub, "."), "h", NULL));
	/* A directory made with a file in it at once, before the watcher can
	 * have watched it: the file's name is told all the same. */
	snprintf(sub, sizeof(sub), "%s/sub2", f->dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	__atomic_store_n(&f->want[3], ino_of(sub, "."), __ATOMIC_RELEASE);
	put_file(sub, "h2", "at once");
	assert_true(wait_call(f, 'n', ino_of(sub, "."), "h2", NULL));
	assert_true(COUNTED(f, events) >= 4);
	assert_int_equal(COUNTED(f, overflows), 0);
}

static void other_write(struct fixture *f)
{
	put_file(f->dir, "f", "written by another process");
}

static void other_rename(struct fixture *f)
{
	char a[256], b[256];

	snprintf(a, sizeof(a), "%s/f", f->dir);
	snprintf(b, sizeof(b), "%s/renamed", f->dir);
	if (rename(a, b))
		_exit(1);
}

static void other_outside(struct fixture *f)
{
	put_file(f->outside, "x", "elsewhere on the filesystem");
}

static void test_fanotify(void **state)
{
	struct fixture *f = *state;
	uint64_t ino, dir_ino = ino_of(f->dir, ".");
	uint32_t gen;
	struct call c;
	char path[256];
	int rc, fd;

	put_file(f->dir, "f", "one");
	__atomic_store_n(&f->want[2], ino_of(f->dir, "f"), __ATOMIC_RELEASE);
	rc = open_watch(f, AFS_WATCH_FANOTIFY);
	if (rc == -EPERM || rc == -EOPNOTSUPP || rc == -ENOSYS) {
		print_message("fanotify not available here (%s): skipped\n",
			      strerror(-rc));
		skip();
	}
	assert_int_equal(rc, 0);
	assert_string_equal(afs_watch_backend(f->w), "fanotify");
	ino = ino_of(f->dir, "f");
	snprintf(path, sizeof(path), "%s/f", f->dir);
	fd = open(path, O_PATH);
	assert_true(fd >= 0);
	gen = afs_fhandle_generation(fd);
	close(fd);

	/* This process is the "daemon": its own write is only counted. */
	put_file(f->dir, "f", "own");
	for (int i = 0; i < 500 && !COUNTED(f, ignored_own); i++)
		usleep(10000);
	assert_true(COUNTED(f, ignored_own) > 0);
	usleep(100000);
	pthread_mutex_lock(&f->lock);
	bool own_called = false;

	for (int i = 0; i < f->n; i++)
		own_called |=
			f->calls[i].kind == 'f' && f->calls[i].id.ino == ino;
	pthread_mutex_unlock(&f->lock);
	assert_false(own_called);
	as_other(f, other_write);
	assert_true(wait_call(f, 'f', ino, NULL, &c));
	assert_true(c.force);
	assert_true(c.id.has_gen);
	assert_int_equal(c.id.gen, gen);

	as_other(f, other_rename);
	assert_true(wait_call(f, 'n', dir_ino, "f", NULL));
	assert_true(wait_call(f, 'n', dir_ino, "renamed", NULL));

	/* Outside the directory, on the same filesystem: handed over as
	 * well (the adapter's table lookup filters it), never as a name of
	 * the watched directory. */
	as_other(f, other_outside);
	assert_true(wait_call(f, 'n', ino_of(f->outside, "."), "x", NULL));
	assert_int_equal(COUNTED(f, overflows), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_off),
		T(test_inotify),
		T(test_fanotify),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
