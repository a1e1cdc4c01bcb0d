/* test_debug.c - the debug-build checks of cache/base/debug.h: each passes where
 * its rule holds and aborts where it is broken (a mutex not held, or held
 * by another thread; outside or inside an RCU read-side section).  Each
 * breach runs in a child process, whose death by SIGABRT is the pass.  In a
 * build without AHEADFS_DEBUG the checks are compiled out: nothing aborts.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <urcu.h>
#include <cmocka.h>

#include "cache/base/debug.h"

#ifdef AHEADFS_DEBUG
#define BREACH_KILLS true
#else
#define BREACH_KILLS false
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t taken, checked;

/* Run @fn in a child; true if it died of SIGABRT. */
static bool aborts(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fclose(stderr); /* the expected report */
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void held_by_me(void)
{
	pthread_mutex_lock(&lock);
	afs_assert_held(&lock);
	pthread_mutex_unlock(&lock);
}

static void held_by_nobody(void)
{
	afs_assert_held(&lock);
}

static void *holder(void *arg)
{
	pthread_mutex_lock(&lock);
	pthread_barrier_wait(&taken);
	pthread_barrier_wait(&checked);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void held_by_another(void)
{
	pthread_t t;

	pthread_barrier_init(&taken, NULL, 2);
	pthread_barrier_init(&checked, NULL, 2);
	pthread_create(&t, NULL, holder, NULL);
	pthread_barrier_wait(&taken);
	afs_assert_held(&lock); /* locked, but not by this thread */
	pthread_barrier_wait(&checked);
	pthread_join(t, NULL);
}

static void rcu_inside(void)
{
	rcu_register_thread();
	rcu_read_lock();
	afs_assert_rcu();
	rcu_read_unlock();
	afs_assert_no_rcu();
	rcu_unregister_thread();
}

static void rcu_missing(void)
{
	rcu_register_thread();
	afs_assert_rcu();
	rcu_unregister_thread();
}

static void rcu_unwanted(void)
{
	rcu_register_thread();
	rcu_read_lock();
	afs_assert_no_rcu();
	rcu_read_unlock();
	rcu_unregister_thread();
}

static void test_held(void **state)
{
	(void)state;
	assert_false(aborts(held_by_me));
	assert_true(aborts(held_by_nobody) == BREACH_KILLS);
	assert_true(aborts(held_by_another) == BREACH_KILLS);
}

static void test_rcu(void **state)
{
	(void)state;
	assert_false(aborts(rcu_inside));
	assert_true(aborts(rcu_missing) == BREACH_KILLS);
	assert_true(aborts(rcu_unwanted) == BREACH_KILLS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held),
		cmocka_unit_test(test_rcu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
