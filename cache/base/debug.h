/* debug.h - the lock and RCU rules of the Context: lines, checked in debug
 * builds.
 *
 * A function whose comment says "Context: Caller holds X" (or whose name
 * ends in _locked) starts with afs_assert_held(&X); one whose name ends in
 * _rcu ("Caller holds the RCU read lock") with afs_assert_rcu(); one that
 * may sleep with afs_assert_no_rcu().  With AHEADFS_DEBUG (the sanitizer
 * stages of tests/run.sh build with -DAHEADFS_DEBUG=ON) a broken rule
 * aborts with the file, line and rule on stderr; without it (release) the
 * macros compile to nothing and evaluate nothing, as the kernel's
 * lockdep_assert_held() does without lockdep.
 *
 * afs_assert_held() checks ownership, not merely that the mutex is locked:
 * glibc records the owning thread of every pthread mutex (__data.__owner,
 * the kernel thread id), whatever its type; elsewhere it falls back to
 * pthread_mutex_trylock(), which can only tell that someone holds it.
 * afs_assert_rcu() asks liburcu (rcu_read_ongoing(), the default flavour's
 * read-side nesting count of the calling thread).
 *
 * Concurrency: the checks read only the calling thread's own state (its
 * RCU nesting, its thread id) and a mutex it holds.
 */
#ifndef AFS_DEBUG_H
#define AFS_DEBUG_H

#ifdef AHEADFS_DEBUG
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>
#include <urcu.h>

__attribute__((noreturn)) static inline void
afs_debug_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: debug check failed: %s\n", file, line, what);
	abort();
}

/* Does the calling thread own @m? */
static inline bool afs_debug_owns(const pthread_mutex_t *m)
{
#ifdef __GLIBC__
	static __thread pid_t tid;

	if (!tid)
		tid = gettid();
	return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == tid;
#else
	pthread_mutex_t *w = (pthread_mutex_t *)m;

	if (pthread_mutex_trylock(w) == EBUSY)
		return true; /* held, by someone */
	pthread_mutex_unlock(w);
	return false;
#endif
}

/* afs_assert_held() - The calling thread holds the pthread mutex @lock. */
#define afs_assert_held(lock)                                                  \
	do {                                                                   \
		if (!afs_debug_owns(lock))                                     \
			afs_debug_fail(__FILE__, __LINE__,                     \
				       "this thread does not hold " #lock);    \
	} while (0)

/* afs_assert_rcu() - The calling thread is inside rcu_read_lock(). */
#define afs_assert_rcu()                                                       \
	do {                                                                   \
		if (!rcu_read_ongoing())                                       \
			afs_debug_fail(__FILE__, __LINE__,                     \
				       "not inside an RCU read-side section"); \
	} while (0)

/* afs_assert_no_rcu() - The calling thread is outside every RCU read-side
 * section (it may sleep, or wait for a grace period). */
#define afs_assert_no_rcu()                                                    \
	do {                                                                   \
		if (rcu_read_ongoing())                                        \
			afs_debug_fail(__FILE__, __LINE__,                     \
				       "inside an RCU read-side section");     \
	} while (0)
#else
#define afs_assert_held(lock) ((void)sizeof(lock))
#define afs_assert_rcu() ((void)0)
#define afs_assert_no_rcu() ((void)0)
#endif

#endif /* AFS_DEBUG_H */
