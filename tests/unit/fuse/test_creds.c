/* test_creds.c - caller credentials are per thread.
 *
 * A worker thread switches to uid/gid 65534 with supplementary group 100
 * and umask 077 and creates files; meanwhile the main thread's ids, groups
 * and umask must be untouched (glibc's setgroups() or a process-wide umask
 * would fail this), and after afs_creds_leave() the worker is root again.
 * Needs root (skipped otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "creds.h"

static char dir[64];

struct worker {
	pthread_barrier_t *switched, *checked;
	int rc_enter;
	struct stat made; /* file created while switched */
	int groups_while; /* getgroups() count while switched */
	gid_t group0;
	uid_t fsuid_after;
	struct stat made_after;
};

static void make(const char *name, struct stat *st)
{
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
	if (fd >= 0) {
		fstat(fd, st);
		close(fd);
	} else {
		memset(st, 0xff, sizeof(*st));
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const gid_t groups[] = {100};
	struct afs_creds c;
	gid_t list[8];

	w->rc_enter = afs_creds_enter(&c, 65534, 65534, groups, 1, true, 077);
	make("as_user", &w->made);
	w->groups_while = getgroups(8, list);
	w->group0 = w->groups_while > 0 ? list[0] : 0;
	pthread_barrier_wait(w->switched);
	pthread_barrier_wait(w->checked);
	afs_creds_leave(&c);
	w->fsuid_after = (uid_t)setfsuid((uid_t)-1);
	make("after", &w->made_after);
	return NULL;
}

static void test_switch_is_per_thread(void **state)
{
	pthread_barrier_t b1, b2;
	struct worker w = {.switched = &b1, .checked = &b2};
	gid_t before[64], during[64];
	int nbefore, nduring;
	struct stat mine;
	pthread_t t;
	mode_t um;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(afs_creds_init(), 0);
	nbefore = getgroups(64, before);
	pthread_barrier_init(&b1, NULL, 2);
	pthread_barrier_init(&b2, NULL, 2);
	assert_int_equal(pthread_create(&t, NULL, worker_main, &w), 0);
	pthread_barrier_wait(&b1);

	/* the worker is switched right now: the main thread is not */
	nduring = getgroups(64, during);
	assert_int_equal(nduring, nbefore);
	assert_memory_equal(during, before, nbefore * sizeof(gid_t));
	assert_int_equal(setfsuid((uid_t)-1), 0);
	um = umask(022);
	umask(um);
	make("as_main", &mine);
	assert_int_equal(mine.st_uid, 0);
	pthread_barrier_wait(&b2);
	pthread_join(t, NULL);

	assert_int_equal(w.rc_enter, 0);
	assert_int_equal(w.made.st_uid, 65534);
	assert_int_equal(w.made.st_gid, 65534);
	assert_int_equal(w.made.st_mode & 0777, 0600); /* umask 077 */
	assert_int_equal(w.groups_while, 1);
	assert_int_equal(w.group0, 100);
	assert_int_equal(w.fsuid_after, 0);
	assert_int_equal(w.made_after.st_uid, 0);
	assert_int_equal(w.made_after.st_mode & 0777, 0666 & ~um);
	pthread_barrier_destroy(&b1);
	pthread_barrier_destroy(&b2);
}

/* Root callers keep the daemon's ids; only the umask is taken. */
static void test_root_caller_keeps_ids(void **state)
{
	struct afs_creds c;
	struct stat st;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(afs_creds_init(), 0);
	assert_int_equal(afs_creds_enter(&c, 0, 0, NULL, 0, false, 0), 0);
	assert_false(c.switched);
	make("root", &st);
	afs_creds_leave(&c);
	assert_int_equal(st.st_uid, 0);
}

static int group_setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/afs-test-creds-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	return chmod(dir, 0777);
}

static int group_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switch_is_per_thread),
		cmocka_unit_test(test_root_caller_keeps_ids),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
