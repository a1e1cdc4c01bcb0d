/* fault_shim.c - test-only LD_PRELOAD library: faults on chosen backing
 * reads and writes of the process it is loaded into (the aheadfs daemon
 * under test, or a program run directly on the backing for comparison).
 * Never linked into the product.
 *
 * Configuration: AFS_FAULT_CTL names a control file, read again whenever
 * its size, mtime or inode changes (rewrite it with mv for an atomic
 * change).  One rule a line, '#' starts a comment:
 *
 *   OP PATH FIRST END ACTION [ARG]
 *
 *   OP      read (pread, pread64, preadv, preadv2 and their 64 forms),
 *           write (pwrite, pwrite64, pwritev, pwritev2 and their 64 forms)
 *           or sync (fsync, fdatasync: the range is not looked at)
 *   PATH    a substring of the file's path (readlink of /proc/self/fd/N)
 *   FIRST, END   the byte range [FIRST, END) the call must overlap;
 *           END -1: to the end of any file
 *   ACTION  eio     fail with EIO
 *           enospc  a write: everything before FIRST is written (a short
 *                   write), a write that starts at or past FIRST fails
 *                   with ENOSPC -- a full disk at FIRST
 *           short N return at most N bytes (N > 0): a short read or write
 *           stall   block until this line is gone from the control file
 *           delay MS  sleep MS milliseconds, then do the call
 *           slow_eio MS  sleep MS milliseconds, then fail with EIO
 *           direct_einval  fail with EINVAL on a descriptor opened with
 *                   O_DIRECT (a filesystem that refuses a direct write);
 *                   other descriptors' calls pass
 *
 * The first matching rule applies.  Each matched call is counted: the
 * file AFS_FAULT_CTL.hits gets one line "OP PATH OFF LEN ACTION" per
 * match (O_APPEND, for the tests to see what the daemon asked for); a
 * matched sync call also gets "synced PATH NS" once the real call returned,
 * NS its CLOCK_MONOTONIC time in nanoseconds (the durability test orders
 * it against the application's own fsync).
 *
 * Concurrency: the rules are swapped under a mutex; a stall polls the
 * control file every 20 ms.  With no rules the calls cost one stat() of
 * the control file more.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_RULES 32

enum action {
	A_EIO,
	A_ENOSPC,
	A_SHORT,
	A_STALL,
	A_DELAY,
	A_DELAY_EIO,
	A_DIRECT_EINVAL,
};

struct rule {
	bool write;
	bool sync; /* fsync/fdatasync (write is false) */
	char path[256];
	int64_t first, end; /* end < 0: no end */
	enum action act;
	long arg;
	char line[400]; /* as written, to find it again (stall) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rule rules[MAX_RULES];
static int nrules;
static struct stat seen;
static bool loaded;

static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_preadv)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_preadv2)(int, const struct iovec *, int, off_t, int);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static void resolve(void)
{
	if (real_pread)
		return;
	real_pwrite = dlsym(RTLD_NEXT, "pwrite64");
	real_preadv = dlsym(RTLD_NEXT, "preadv64");
	real_pwritev = dlsym(RTLD_NEXT, "pwritev64");
	real_preadv2 = dlsym(RTLD_NEXT, "preadv64v2");
	real_pwritev2 = dlsym(RTLD_NEXT, "pwritev64v2");
	real_fsync = dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
	__atomic_store_n(&real_pread, dlsym(RTLD_NEXT, "pread64"),
			 __ATOMIC_RELEASE);
}

static bool parse(const char *line, struct rule *r)
{
	char op[16], act[16];
	long long first, end;
	int n;

	memset(r, 0, sizeof(*r));
	n = sscanf(line, "%15s %255s %lld %lld %15s %ld", op, r->path, &first,
		   &end, act, &r->arg);
	if (n < 5 || op[0] == '#')
		return false;
	r->write = !strcmp(op, "write");
	r->sync = !strcmp(op, "sync");
	if (!r->write && !r->sync && strcmp(op, "read"))
		return false;
	r->first = first;
	r->end = end;
	if (!strcmp(act, "eio"))
		r->act = A_EIO;
	else if (!strcmp(act, "enospc"))
		r->act = A_ENOSPC;
	else if (!strcmp(act, "short") && n == 6 && r->arg > 0)
		r->act = A_SHORT;
	else if (!strcmp(act, "stall"))
		r->act = A_STALL;
	else if (!strcmp(act, "delay") && n == 6)
		r->act = A_DELAY;
	else if (!strcmp(act, "slow_eio") && n == 6)
		r->act = A_DELAY_EIO;
	else if (!strcmp(act, "direct_einval"))
		r->act = A_DIRECT_EINVAL;
	else
		return false;
	snprintf(r->line, sizeof(r->line), "%s", line);
	return true;
}

/* Read the control file again if it changed.  Called under lock. */
static void reload(void)
{
	const char *ctl = getenv("AFS_FAULT_CTL");
	struct stat st;
	char line[400];
	FILE *f;

	if (!ctl || stat(ctl, &st)) {
		nrules = 0;
		loaded = false;
		return;
	}
	if (loaded && st.st_ino == seen.st_ino && st.st_size == seen.st_size &&
	    st.st_mtim.tv_sec == seen.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == seen.st_mtim.tv_nsec)
		return;
	seen = st;
	loaded = true;
	nrules = 0;
	f = fopen(ctl, "re");
	if (!f)
		return;
	while (nrules < MAX_RULES && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (parse(line, &rules[nrules]))
			nrules++;
	}
	fclose(f);
}

/* Whether a line equal to @line is still a rule. */
static bool still_there(const char *line)
{
	bool found = false;

	pthread_mutex_lock(&lock);
	reload();
	for (int i = 0; i < nrules && !found; i++)
		found = !strcmp(rules[i].line, line);
	pthread_mutex_unlock(&lock);
	return found;
}

static void record(const struct rule *r, const char *path, off_t off,
		   size_t len)
{
	const char *ctl = getenv("AFS_FAULT_CTL");
	static const char *const names[] = {
		"eio",	 "enospc",   "short",	     "stall",
		"delay", "slow_eio", "direct_einval"};
	char hits[4096], buf[600];
	int fd, n;

	snprintf(hits, sizeof(hits), "%s.hits", ctl);
	fd = open(hits, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "%s %s %lld %zu %s\n",
		     r->sync	? "sync"
		     : r->write ? "write"
				: "read",
		     path, (long long)off, len, names[r->act]);
	if (write(fd, buf, (size_t)n) < 0) {
		/* nothing to do: the count is for the test's eyes only */
	}
	close(fd);
}

/* The rule for this call, copied out; false: none. */
static bool match(bool write, bool sync, int fd, off_t off, size_t len,
		  struct rule *out, char *path, size_t pathlen)
{
	char link[64];
	ssize_t n;
	bool found = false;

	pthread_mutex_lock(&lock);
	reload();
	if (!nrules) {
		pthread_mutex_unlock(&lock);
		return false;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, pathlen - 1);
	if (n < 0) {
		pthread_mutex_unlock(&lock);
		return false;
	}
	path[n] = '\0';
	for (int i = 0; i < nrules && !found; i++) {
		const struct rule *r = &rules[i];

		if (r->write != write || r->sync != sync ||
		    !strstr(path, r->path))
			continue;
		if (!sync && ((r->end >= 0 && off >= r->end) ||
			      off + (off_t)len <= r->first))
			continue;
		*out = *r;
		found = true;
	}
	pthread_mutex_unlock(&lock);
	if (found)
		record(out, path, off, len);
	return found;
}

/* What to do before the real call: -1 with errno set (fail), or the
 * length to pass on (possibly shortened). */
static ssize_t apply_rule(bool write, bool sync, int fd, off_t off, size_t len,
			  char *path, size_t pathlen, bool *matched)
{
	struct rule r;

	*matched = match(write, sync, fd, off, len, &r, path, pathlen);
	if (!*matched)
		return (ssize_t)len;
	switch (r.act) {
	case A_EIO:
		errno = EIO;
		return -1;
	case A_ENOSPC:
		if (!write || off >= r.first) {
			errno = ENOSPC;
			return -1;
		}
		return (ssize_t)(r.first - off);
	case A_SHORT:
		return len < (size_t)r.arg ? (ssize_t)len : r.arg;
	case A_STALL:
		while (still_there(r.line))
			usleep(20000);
		return (ssize_t)len;
	case A_DELAY:
	case A_DELAY_EIO: {
		struct timespec ts = {r.arg / 1000, (r.arg % 1000) * 1000000};

		nanosleep(&ts, NULL);
		if (r.act == A_DELAY)
			return (ssize_t)len;
		errno = EIO;
		return -1;
	}
	case A_DIRECT_EINVAL:
		if (fcntl(fd, F_GETFL) & O_DIRECT) {
			errno = EINVAL;
			return -1;
		}
		return (ssize_t)len;
	}
	return (ssize_t)len;
}

static ssize_t apply(bool write, int fd, off_t off, size_t len)
{
	char path[4096];
	bool matched;

	return apply_rule(write, false, fd, off, len, path, sizeof(path),
			  &matched);
}

/* fsync and fdatasync: the rule first, then the real call, then the
 * "synced" line with the time it returned. */
static int sync_call(int fd, bool data)
{
	const char *ctl = getenv("AFS_FAULT_CTL");
	char path[4096], hits[4096], buf[4200];
	struct timespec now;
	bool matched;
	int rc, n, hfd;

	resolve();
	if (apply_rule(false, true, fd, 0, 0, path, sizeof(path), &matched) < 0)
		return -1;
	rc = data ? real_fdatasync(fd) : real_fsync(fd);
	if (!matched || !ctl)
		return rc;
	clock_gettime(CLOCK_MONOTONIC, &now);
	snprintf(hits, sizeof(hits), "%s.hits", ctl);
	hfd = open(hits, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (hfd >= 0) {
		n = snprintf(buf, sizeof(buf), "synced %s %lld\n", path,
			     (long long)now.tv_sec * 1000000000LL +
				     now.tv_nsec);
		if (write(hfd, buf, (size_t)n) < 0) {
			/* for the test's eyes only */
		}
		close(hfd);
	}
	return rc;
}

int fsync(int fd)
{
	return sync_call(fd, false);
}

int fdatasync(int fd)
{
	return sync_call(fd, true);
}

static size_t iov_len(const struct iovec *iov, int n)
{
	size_t len = 0;

	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	return len;
}

/* @iov cut to @len bytes into @tmp; returns the count of entries. */
static int iov_cut(const struct iovec *iov, int n, size_t len,
		   struct iovec *tmp)
{
	int i;

	for (i = 0; i < n && len; i++) {
		tmp[i] = iov[i];
		if (tmp[i].iov_len > len)
			tmp[i].iov_len = len;
		len -= tmp[i].iov_len;
	}
	return i;
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n;

	resolve();
	n = apply(false, fd, off, len);
	return n < 0 ? -1 : real_pread(fd, buf, (size_t)n, off);
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	return pread64(fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	ssize_t n;

	resolve();
	n = apply(true, fd, off, len);
	return n < 0 ? -1 : real_pwrite(fd, buf, (size_t)n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return pwrite64(fd, buf, len, off);
}

static ssize_t vio(bool write, int fd, const struct iovec *iov, int cnt,
		   off_t off, int flags, bool v2)
{
	struct iovec tmp[1024];
	size_t len = iov_len(iov, cnt);
	ssize_t n;

	resolve();
	n = apply(write, fd, off, len);
	if (n < 0)
		return -1;
	if ((size_t)n < len && cnt <= 1024) {
		cnt = iov_cut(iov, cnt, (size_t)n, tmp);
		iov = tmp;
	}
	if (v2)
		return write ? real_pwritev2(fd, iov, cnt, off, flags)
			     : real_preadv2(fd, iov, cnt, off, flags);
	return write ? real_pwritev(fd, iov, cnt, off)
		     : real_preadv(fd, iov, cnt, off);
}

ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return vio(false, fd, iov, cnt, off, 0, false);
}

ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return vio(false, fd, iov, cnt, off, 0, false);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return vio(true, fd, iov, cnt, off, 0, false);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return vio(true, fd, iov, cnt, off, 0, false);
}

ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off_t off,
		   int flags)
{
	return vio(false, fd, iov, cnt, off, flags, true);
}

ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return vio(false, fd, iov, cnt, off, flags, true);
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off_t off,
		    int flags)
{
	return vio(true, fd, iov, cnt, off, flags, true);
}

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return vio(true, fd, iov, cnt, off, flags, true);
}
