/* test_soak.c - a time-bounded soak of the FUSE-free data path (the cache,
 * the readahead and the read loop), for the ThreadSanitizer build above
 * all (libfuse and liburcu are not TSan-instrumented, so this is where the
 * daemon's own concurrency is checked under TSan); it runs in every build.
 *
 * Three files of a known pattern (one seed each), a cache budget a quarter
 * of their size with its reclaimer thread, and at once:
 *   readers x5   afs_data_read() with mixed patterns: sequential on their
 *                own handle state, random offsets and lengths, reads with
 *                no handle (the file's own state), two threads sharing ONE
 *                handle state (several threads on one fd); pages kept as
 *                data or handed over (history), at random; every byte
 *                replied is checked against the file
 *   changer      rewrites ranges with the bytes they hold and reports them
 *                (afs_fcache_changed(), as a WRITE does), takes new
 *                metadata (afs_fcache_touched()), finds the files again by
 *                their keys and drops the reference (afs_fcache_lookup(),
 *                afs_fcache_put(), as an open and a release), and makes the
 *                identity see a change behind the mount
 *                (afs_fcache_revalidate() with another mtime, then the real
 *                one): pages dropped under the readers
 *   tuner        ra_engine_tune() of the cap, the context rule and the
 *                stream table; advice on the files (willneed, dontneed
 *                included)
 *   reclaimer    cache_reclaim() of a random number of pages
 * for AHEADFS_STRESS_SECONDS (default 3), then: no reader saw a wrong byte,
 * a short answer or an error; every thread did work; each file read whole
 * once more is right.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "data_internal.h"
#include "../fixture/data_path.h"
#include "../read_check.h"

#define PAGE 4096u
#define NFILES 3
#define FILE_PAGES 1024u /* 4 MiB each */
#define FILE_SIZE ((uint64_t)FILE_PAGES * PAGE)
#define NREADERS 5

static uint8_t pattern_of(int f, uint64_t off)
{
	return (uint8_t)((off >> 12) * (7 + 4 * f) + (off & 4095) * 3 + f);
}
static uint8_t pattern0(uint64_t off)
{
	return pattern_of(0, off);
}
static uint8_t pattern1(uint64_t off)
{
	return pattern_of(1, off);
}
static uint8_t pattern2(uint64_t off)
{
	return pattern_of(2, off);
}
static const test_byte_fn patterns[NFILES] = {pattern0, pattern1, pattern2};

struct soak {
	struct afs_data *a;
	struct afs_fcache *fc[NFILES];
	int fd[NFILES];
	char path[NFILES][64];
	struct ra_state shared; /* one handle, two threads */
	int stop;
	uint64_t work[NREADERS + 3]; /* operations per thread */
	char failure[256];
	pthread_mutex_t lock;
};

static void soak_fail(struct soak *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void soak_fail(struct soak *s, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->lock);
	if (!s->failure[0]) {
		va_start(ap, fmt);
		vsnprintf(s->failure, sizeof(s->failure), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&s->lock);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
}

static bool stopped(struct soak *s)
{
	return __atomic_load_n(&s->stop, __ATOMIC_RELAXED);
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * UINT64_C(2685821657736338717);
}

/* One read of [off, off + len) of file @f, checked; false on failure. */
static bool read_one(struct soak *s, int f, struct ra_state *st, uint64_t off,
		     size_t len, bool keep)
{
	struct test_reply t = {.off = off, .want = patterns[f]};
	struct afs_read r = {.fc = s->fc[f],
			     .ra = st,
			     .fd = s->fd[f],
			     .keep_data = keep,
			     .reply = test_reply_check,
			     .ctx = &t};
	uint64_t want = off >= FILE_SIZE	? 0
			: FILE_SIZE - off < len ? FILE_SIZE - off
						: len;
	int rc = afs_data_read(s->a, &r, off, len);

	if (rc)
		soak_fail(s, "file %d: read at %llu+%zu: %s", f,
			  (unsigned long long)off, len, strerror(-rc));
	else if (t.bad)
		soak_fail(s, "file %d: read at %llu+%zu: a wrong byte", f,
			  (unsigned long long)off, len);
	else if (t.bytes != want)
		soak_fail(s, "file %d: read at %llu+%zu: %llu bytes, not %llu",
			  f, (unsigned long long)off, len,
			  (unsigned long long)t.bytes,
			  (unsigned long long)want);
	return !rc && !t.bad && t.bytes == want;
}

struct worker {
	struct soak *s;
	int id;
	uint64_t seed;
};

/* Readers 0, 1: sequential streams on their own state; 2: random; 3, 4:
 * the shared state (3 sequential, 4 with no handle in between). */
static void *reader_main(void *arg)
{
	struct worker *w = arg;
	struct soak *s = w->s;
	struct ra_state own;
	uint64_t pos = 0;
	int f = w->id == 3 ? 0 : w->id % NFILES;

	cache_thread_online();
	ra_state_init(&own);
	while (!stopped(s)) {
		uint64_t r = rnd(&w->seed);
		bool keep = r & 1, ok;
		size_t len;

		switch (w->id) {
		case 0:
		case 1:
		case 3:
			len = (size_t)(1 + (r >> 8) % 32) * PAGE;
			ok = read_one(s, f, w->id == 3 ? &s->shared : &own, pos,
				      len, keep);
			pos += len;
			if (pos >= FILE_SIZE) {
				pos = 0;
				/* the shared state is one handle's: one file */
				if (w->id != 3)
					f = (int)((r >> 20) % NFILES);
			}
			break;
		case 2:
			len = (size_t)(1 + (r >> 8) % (256 << 10));
			ok = read_one(s, (int)((r >> 40) % NFILES), &own,
				      (r >> 16) % (FILE_SIZE + PAGE), len,
				      keep);
			break;
		default:
			len = (size_t)(1 + (r >> 8) % 16) * PAGE;
			ok = read_one(s, 0, r & 2 ? &s->shared : NULL,
				      (r >> 24) % FILE_SIZE, len, keep);
			break;
		}
		if (!ok)
			break;
		__atomic_fetch_add(&s->work[w->id], 1, __ATOMIC_RELAXED);
	}
	ra_state_destroy(&own);
	return NULL;
}

static void *changer_main(void *arg)
{
	struct worker *w = arg;
	struct soak *s = w->s;
	uint8_t buf[16 * PAGE];

	cache_thread_online();
	while (!stopped(s)) {
		uint64_t r = rnd(&w->seed);
		int f = (int)(r % NFILES);
		uint64_t off = (r >> 8) % (FILE_SIZE - sizeof(buf));
		size_t len = (size_t)(1 + (r >> 32) % sizeof(buf));
		struct stat st;

		switch ((r >> 56) % 5) {
		case 0:
		case 1: /* a WRITE of the bytes the file holds */
			for (size_t i = 0; i < len; i++)
				buf[i] = patterns[f](off + i);
			if (pwrite(s->fd[f], buf, len, (off_t)off) !=
			    (ssize_t)len) {
				soak_fail(s, "pwrite: %s", strerror(errno));
				return NULL;
			}
			afs_fcache_changed(s->fc[f], s->fd[f], off, len, false);
			break;
		case 2: /* metadata through the mount */
			afs_fcache_touched(s->fc[f], s->fd[f]);
			break;
		case 3: { /* an open: the file found again by its key */
			struct afs_fcache *again;
			struct afs_file_key key;

			if (fstat(s->fd[f], &st)) {
				soak_fail(s, "fstat: %s", strerror(errno));
				return NULL;
			}
			key = (struct afs_file_key){.dev = st.st_dev,
						    .ino = st.st_ino};
			if (afs_fcache_lookup(s->a, &key, &st, &again) ||
			    again != s->fc[f]) {
				soak_fail(s, "lookup of file %d: another state",
					  f);
				return NULL;
			}
			afs_fcache_put(again);
			break;
		}
		default: /* a change behind the mount, then the real one */
			if (fstat(s->fd[f], &st)) {
				soak_fail(s, "fstat: %s", strerror(errno));
				return NULL;
			}
			st.st_mtim.tv_nsec ^= 1;
			afs_fcache_revalidate(s->fc[f], &st);
			st.st_mtim.tv_nsec ^= 1;
			afs_fcache_revalidate(s->fc[f], &st);
			break;
		}
		__atomic_fetch_add(&s->work[NREADERS], 1, __ATOMIC_RELAXED);
		sched_yield();
	}
	return NULL;
}

static void *tuner_main(void *arg)
{
	struct worker *w = arg;
	struct soak *s = w->s;

	cache_thread_online();
	while (!stopped(s)) {
		uint64_t r = rnd(&w->seed);
		struct ra_tuning t = {
			.max_bytes = (uint64_t)(1 + r % 8) << 15, /* 32K-256K */
			.context = (enum ra_context_rule)((r >> 8) % 3),
			.stream_table =
				(enum ra_stream_table_mode)((r >> 16) % 2)};
		int f = (int)((r >> 24) % NFILES), rc;

		rc = ra_engine_tune(s->a->ra, &t,
				    RA_TUNE_MAX | RA_TUNE_CONTEXT |
					    RA_TUNE_STREAM_TABLE);
		if (!rc && (r >> 32) % 4 == 0)
			rc = ra_file_advise(s->fc[f]->raf,
					    (enum ra_advice)((r >> 40) % 5), 0,
					    0);
		if (rc) {
			soak_fail(s, "tune/advise: %s", strerror(-rc));
			return NULL;
		}
		__atomic_fetch_add(&s->work[NREADERS + 1], 1, __ATOMIC_RELAXED);
		usleep(200);
	}
	return NULL;
}

static void *reclaimer_main(void *arg)
{
	struct worker *w = arg;
	struct soak *s = w->s;

	cache_thread_online();
	while (!stopped(s)) {
		cache_reclaim(s->a->cache, 1 + rnd(&w->seed) % 256);
		__atomic_fetch_add(&s->work[NREADERS + 2], 1, __ATOMIC_RELAXED);
		usleep(500);
	}
	return NULL;
}

static void write_file(int fd, int f)
{
	uint8_t buf[PAGE];

	for (uint64_t off = 0; off < FILE_SIZE; off += PAGE) {
		for (unsigned int b = 0; b < PAGE; b++)
			buf[b] = patterns[f](off + b);
		assert_int_equal(pwrite(fd, buf, PAGE, (off_t)off), PAGE);
	}
}

static void test_soak(void **state)
{
	const char *env = getenv("AHEADFS_STRESS_SECONDS");
	struct afs_data_config cfg;
	struct worker w[NREADERS + 3];
	pthread_t th[NREADERS + 3];
	struct soak *s = calloc(1, sizeof(*s));
	int seconds = env ? atoi(env) : 3;

	(void)state;
	assert_non_null(s);
	cache_thread_online();
	pthread_mutex_init(&s->lock, NULL);
	afs_data_config_init(&cfg);
	cfg.cache_size = NFILES * FILE_SIZE / 4;
	cfg.ra.max_bytes = 256 << 10;
	cfg.ra.workers = 2;
	s->a = data_path_ahead(&cfg);
	for (int f = 0; f < NFILES; f++) {
		struct stat st;

		s->fd[f] = data_path_tmpfile_at(s->path[f], sizeof(s->path[f]),
						"afs-soak");
		/* Gone at once: a failed or killed run leaves nothing (the
		 * readahead side reopens it through /proc/self/fd). */
		assert_int_equal(unlink(s->path[f]), 0);
		write_file(s->fd[f], f);
		s->fc[f] = data_path_lookup(s->a, s->fd[f], 0, true, &st);
	}
	ra_state_init(&s->shared);
	for (int i = 0; i < NREADERS + 3; i++) {
		void *(*fn)(void *) = i < NREADERS	  ? reader_main
				      : i == NREADERS	  ? changer_main
				      : i == NREADERS + 1 ? tuner_main
							  : reclaimer_main;

		w[i] = (struct worker){.s = s,
				       .id = i,
				       .seed = UINT64_C(0x9e3779b9) * (i + 1)};
		assert_int_equal(pthread_create(&th[i], NULL, fn, &w[i]), 0);
	}
	for (int t = 0; t < seconds * 10 && !stopped(s); t++)
		usleep(100000);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NREADERS + 3; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	if (s->failure[0])
		fail_msg("%s", s->failure);
	for (int i = 0; i < NREADERS + 3; i++) {
		printf("soak thread %d: %llu operations\n", i,
		       (unsigned long long)s->work[i]);
		assert_true(s->work[i] > 0);
	}
	/* Every file once more, whole, on a fresh handle state. */
	for (int f = 0; f < NFILES; f++) {
		struct ra_state st;

		ra_state_init(&st);
		for (uint64_t p = 0; p < FILE_PAGES; p += 64)
			assert_true(
				read_one(s, f, &st, p * PAGE, 64 * PAGE, true));
		ra_state_destroy(&st);
		test_settle(s->fc[f]->map, FILE_PAGES);
	}
	ra_state_destroy(&s->shared);
	for (int f = 0; f < NFILES; f++) {
		afs_fcache_put(s->fc[f]);
		close(s->fd[f]);
	}
	afs_data_destroy(s->a);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_soak)};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
