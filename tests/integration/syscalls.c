/* syscalls.c - run one sequence of file system operations on the backing
 * directory and through the mount, and compare every outcome.
 *
 * Usage: afs_syscalls BACKING_DIR MOUNT_DIR
 *   MOUNT_DIR must show BACKING_DIR through aheadfs (the mount's SOURCE or a
 *   directory below it).  The sequence runs twice, in fresh directories:
 *     BACKING_DIR/direct  directly on the backing file system;
 *     MOUNT_DIR/fuse      through the mount (BACKING_DIR/fuse on the backing).
 *   Each operation's outcome is recorded as text: "ok", "=N" (a return value
 *   that matters), the errno's name, or data (a stat summary, a read's bytes,
 *   a directory listing, an xattr value).  The two records must be equal line
 *   by line; afterwards both trees are read back *on the backing* and must be
 *   equal too (what went through the mount really reached the backing).
 *
 *   Run it as root and as an unprivileged user (EACCES, EPERM cases): the
 *   sequence is the same; the outcomes differ by user, equally on both sides.
 *
 * Documented FUSE differences (what FUSE itself cannot pass through; the mount
 * must give exactly the listed outcome, whatever the backing does):
 *   fallocate FALLOC_FL_COLLAPSE_RANGE / FALLOC_FL_INSERT_RANGE: the kernel's
 *     FUSE client accepts only KEEP_SIZE, PUNCH_HOLE and ZERO_RANGE and
 *     answers EOPNOTSUPP itself;
 *   open O_TMPFILE: libfuse 3.14 has no tmpfile operation: EOPNOTSUPP.
 *
 * Output: one line per mismatch with the operation, the backing's outcome
 * (expected) and the mount's (got).  Exit 0 when all match, 1 otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

struct rec {
	char *op;
	char *out;
	char *fuse_expect; /* documented difference: what the mount must give */
};

struct log {
	struct rec *v;
	size_t n, cap;
};

static struct log *cur;

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		perror("realloc");
		exit(2);
	}
	return p;
}

static void add(const char *op, const char *fuse_expect, const char *fmt, ...)
{
	va_list ap;
	struct rec *r;

	if (cur->n == cur->cap) {
		cur->cap = cur->cap ? 2 * cur->cap : 256;
		cur->v = xrealloc(cur->v, cur->cap * sizeof(*cur->v));
	}
	r = &cur->v[cur->n++];
	r->op = strdup(op);
	r->fuse_expect = fuse_expect ? strdup(fuse_expect) : NULL;
	va_start(ap, fmt);
	if (vasprintf(&r->out, fmt, ap) < 0)
		exit(2);
	va_end(ap);
}

static const char *ename(int e)
{
	static char buf[32];
	const char *n = strerrorname_np(e);

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "errno%d", e);
	return buf;
}

/* Record the outcome of a call returning -1/errno on failure.  With @value,
 * a non-negative result is recorded as "=N", else as "ok". */
static long rc_rec(const char *op, const char *fuse_expect, long r, int e,
		   bool value)
{
	if (r < 0)
		add(op, fuse_expect, "%s", ename(e));
	else if (value)
		add(op, fuse_expect, "=%ld", r);
	else
		add(op, fuse_expect, "ok");
	return r;
}

/* R: outcome only; V: outcome and value; X: documented FUSE difference. */
#define R(op, expr)                                                            \
	({                                                                     \
		errno = 0;                                                     \
		long r_ = (long)(expr);                                        \
		rc_rec((op), NULL, r_, errno, false);                          \
	})
#define V(op, expr)                                                            \
	({                                                                     \
		errno = 0;                                                     \
		long r_ = (long)(expr);                                        \
		rc_rec((op), NULL, r_, errno, true);                           \
	})
#define X(op, fuse_expect, expr)                                               \
	({                                                                     \
		errno = 0;                                                     \
		long r_ = (long)(expr);                                        \
		rc_rec((op), (fuse_expect), r_, errno, false);                 \
	})

static int D; /* the run's base directory */

static char *stat_str(const struct stat *st)
{
	static char buf[160];

	snprintf(buf, sizeof(buf), "mode=0%o size=%lld nlink=%lu uid=%u gid=%u",
		 st->st_mode, (long long)st->st_size,
		 (unsigned long)st->st_nlink, st->st_uid, st->st_gid);
	return buf;
}

/* stat (or lstat) @path and record the summary, or the errno. */
static void S(const char *path, int flags)
{
	struct stat st;
	char op[300];

	snprintf(op, sizeof(op), "%sstat %s",
		 flags & AT_SYMLINK_NOFOLLOW ? "l" : "", path);
	if (fstatat(D, path, &st, flags) < 0)
		add(op, NULL, "%s", ename(errno));
	else
		add(op, NULL, "%s", stat_str(&st));
}

static void FS(const char *what, int fd)
{
	struct stat st;
	char op[300];

	snprintf(op, sizeof(op), "fstat %s", what);
	if (fstat(fd, &st) < 0)
		add(op, NULL, "%s", ename(errno));
	else
		add(op, NULL, "%s", stat_str(&st));
}

static int OPEN(const char *path, int flags, mode_t mode)
{
	char op[300];
	int fd;

	snprintf(op, sizeof(op), "open %s flags=0%o mode=0%o", path, flags,
		 mode);
	errno = 0;
	fd = openat(D, path, flags, mode);
	rc_rec(op, NULL, fd, errno, false);
	return fd;
}

static void CLOSE(int fd)
{
	if (fd >= 0)
		close(fd);
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ *c++) * 1099511628211ULL;
	return h;
}

/* Read @len bytes at @off through @fd and record count and bytes (short
 * data as text, long data as a hash). */
static void PREAD(const char *op, int fd, size_t len, off_t off)
{
	char *buf = calloc(1, len + 1);
	ssize_t n;

	errno = 0;
	n = pread(fd, buf, len, off);
	if (n < 0)
		add(op, NULL, "%s", ename(errno));
	else if (n <= 64)
		add(op, NULL, "=%zd \"%.*s\"", n, (int)n, buf);
	else
		add(op, NULL, "=%zd fnv=%016llx", n,
		    (unsigned long long)fnv(buf, n));
	free(buf);
}

/* The whole file at @path, read directly (no fd kept). */
static void CONTENT(const char *path)
{
	char op[300];
	int fd = openat(D, path, O_RDONLY);

	snprintf(op, sizeof(op), "content %s", path);
	if (fd < 0) {
		add(op, NULL, "%s", ename(errno));
		return;
	}
	PREAD(op, fd, 1 << 22, 0);
	close(fd);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted "name:type" listing of directory @path (readdir, all entries). */
static void LIST(const char *path)
{
	char op[300], **names = NULL, *out;
	size_t n = 0, cap = 0, len = 0;
	struct dirent *de;
	DIR *d;
	int fd;

	snprintf(op, sizeof(op), "readdir %s", path);
	fd = openat(D, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || !(d = fdopendir(fd))) {
		add(op, NULL, "%s", ename(errno));
		CLOSE(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = xrealloc(names, cap * sizeof(*names));
		}
		if (asprintf(&names[n], "%s:%d", de->d_name, de->d_type) < 0)
			exit(2);
		len += strlen(names[n]) + 1;
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	out = calloc(1, len + 1);
	for (size_t i = 0; i < n; i++) {
		strcat(out, names[i]);
		strcat(out, " ");
		free(names[i]);
	}
	free(names);
	if (strlen(out) > 400)
		add(op, NULL, "n=%zu fnv=%016llx", n,
		    (unsigned long long)fnv(out, strlen(out)));
	else
		add(op, NULL, "n=%zu %s", n, out);
	free(out);
}

static void GETX(const char *path, const char *name, size_t size)
{
	char op[300], buf[8192];
	ssize_t n;

	snprintf(op, sizeof(op), "lgetxattr %s %s size=%zu", path, name, size);
	n = lgetxattr(path, name, size ? buf : NULL, size);
	if (n < 0)
		add(op, NULL, "%s", ename(errno));
	else if (size == 0)
		add(op, NULL, "=%zd", n);
	else
		add(op, NULL, "=%zd \"%.*s\"", n, (int)(n > 64 ? 64 : n), buf);
}

/* Sorted list of the user.* and trusted.* names (security.* and system.*
 * may hold labels or ACLs that a file system adds by itself). */
static void LISTX(const char *path)
{
	char op[300], buf[8192], *names[256], out[8192] = "";
	ssize_t n;
	size_t k = 0;

	snprintf(op, sizeof(op), "llistxattr %s", path);
	n = llistxattr(path, buf, sizeof(buf));
	if (n < 0) {
		add(op, NULL, "%s", ename(errno));
		return;
	}
	for (char *p = buf; p < buf + n && k < 256; p += strlen(p) + 1)
		if (!strncmp(p, "user.", 5) || !strncmp(p, "trusted.", 8))
			names[k++] = p;
	qsort(names, k, sizeof(*names), cmp_str);
	for (size_t i = 0; i < k; i++) {
		strcat(out, names[i]);
		strcat(out, " ");
	}
	add(op, NULL, "%s", out);
}

static struct timespec now_coarse(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return t;
}

/* Is @t within [@a - 1 s, @b + 1 s]?  Timestamps come from the kernel's
 * coarse clock: a second of slack either way, and no timing assertion. */
static bool within(struct timespec t, struct timespec a, struct timespec b)
{
	return t.tv_sec >= a.tv_sec - 1 && t.tv_sec <= b.tv_sec + 1;
}

static void TIMES(const char *op, const char *path, struct timespec a,
		  struct timespec b)
{
	struct stat st;

	if (fstatat(D, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		add(op, NULL, "%s", ename(errno));
		return;
	}
	add(op, NULL, "atime=%s mtime=%s",
	    st.st_atim.tv_sec == 1000000000 ? "set-exact"
	    : within(st.st_atim, a, b)	    ? "now"
					    : "other",
	    st.st_mtim.tv_sec == 1100000000 ? "set-exact"
	    : within(st.st_mtim, a, b)	    ? "now"
					    : "other");
	if (st.st_atim.tv_sec == 1000000000)
		add(op, NULL, "atime.ns=%ld", st.st_atim.tv_nsec);
	if (st.st_mtim.tv_sec == 1100000000)
		add(op, NULL, "mtime.ns=%ld", st.st_mtim.tv_nsec);
}

static void fill(char *buf, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = 'a' + (char)((i * 7 + seed) % 26);
}

static void seq_names_and_errors(void)
{
	char longname[300];
	int fd;

	S("nope", 0);
	R("mkdir d", mkdirat(D, "d", 0755));
	R("mkdir d again", mkdirat(D, "d", 0755));
	S("d", 0);
	fd = OPEN("f", O_CREAT | O_WRONLY | O_EXCL, 0644);
	V("write f", write(fd, "hello world", 11));
	CLOSE(fd);
	S("f", 0);
	CLOSE(OPEN("f", O_CREAT | O_WRONLY | O_EXCL, 0644));
	S("f/x", 0);
	CLOSE(OPEN("d", O_WRONLY, 0));
	CLOSE(OPEN("d", O_RDWR | O_CREAT, 0644));
	CLOSE(OPEN("f", O_RDONLY | O_DIRECTORY, 0));
	CLOSE(OPEN("nodir/x", O_CREAT | O_WRONLY, 0644));
	R("mkdir f/sub", mkdirat(D, "f/sub", 0755));
	R("unlink d", unlinkat(D, "d", 0));
	R("rmdir f", unlinkat(D, "f", AT_REMOVEDIR));
	R("rmdir nope", unlinkat(D, "nope", AT_REMOVEDIR));
	R("rmdir d/.", unlinkat(D, "d/.", AT_REMOVEDIR));
	CLOSE(OPEN("d/inner", O_CREAT | O_WRONLY, 0644));
	R("rmdir d (not empty)", unlinkat(D, "d", AT_REMOVEDIR));
	memset(longname, 'n', 256);
	longname[256] = '\0';
	S(longname, 0);
	CLOSE(OPEN(longname, O_CREAT | O_WRONLY, 0644));
	memset(longname, 'm', 255);
	longname[255] = '\0';
	CLOSE(OPEN(longname, O_CREAT | O_WRONLY, 0644));
	S(longname, 0);
	R("unlink 255-byte name", unlinkat(D, longname, 0));
	R("unlink nope", unlinkat(D, "nope", 0));
}

static void seq_open_read_write(void)
{
	char buf[8192];
	int fd;

	fd = OPEN("f", O_WRONLY | O_TRUNC, 0);
	FS("f after O_TRUNC", fd);
	V("write abc", write(fd, "abc", 3));
	CLOSE(fd);
	fd = OPEN("f", O_WRONLY | O_APPEND, 0);
	V("append def", write(fd, "def", 3));
	V("lseek 0", lseek(fd, 0, SEEK_SET));
	V("append ghi after lseek 0", write(fd, "ghi", 3));
	V("pwrite O_APPEND at 0", pwrite(fd, "jkl", 3, 0));
	V("read on O_WRONLY", read(fd, buf, 3));
	CLOSE(fd);
	CONTENT("f");
	fd = OPEN("f", O_RDONLY, 0);
	V("write on O_RDONLY", write(fd, "x", 1));
	PREAD("pread 4@2", fd, 4, 2);
	PREAD("pread at EOF", fd, 10, 12);
	PREAD("pread past EOF", fd, 10, 1000);
	CLOSE(fd);

	fd = OPEN("g", O_CREAT | O_RDWR | O_EXCL, 0600);
	fill(buf, sizeof(buf), 1);
	V("write 8K", write(fd, buf, sizeof(buf)));
	V("pwrite past EOF", pwrite(fd, "tail", 4, 100000));
	FS("g sparse", fd);
	PREAD("pread hole", fd, 16, 50000);
	PREAD("pread across hole end", fd, 8, 99998);
	R("fsync g", fsync(fd));
	R("fdatasync g", fdatasync(fd));
	PREAD("pread 8K", fd, 8192, 0);
	CLOSE(fd);

	fd = OPEN("d", O_RDONLY | O_DIRECTORY, 0);
	R("fsync dir", fsync(fd));
	R("fdatasync dir", fdatasync(fd));
	V("read dir", read(fd, buf, 16));
	CLOSE(fd);

	/* mmap: a shared writable mapping reaches the file. */
	fd = OPEN("mm", O_CREAT | O_RDWR, 0644);
	R("ftruncate mm 8K", ftruncate(fd, 8192));
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	add("mmap shared", NULL, "%s", m == MAP_FAILED ? ename(errno) : "ok");
	if (m != MAP_FAILED) {
		memcpy(m + 4000, "mapped!", 7);
		R("msync", msync(m, 8192, MS_SYNC));
		munmap(m, 8192);
	}
	PREAD("pread mapped", fd, 7, 4000);
	CLOSE(fd);

	/* An unlinked file stays readable through an open descriptor. */
	fd = OPEN("gone", O_CREAT | O_RDWR, 0644);
	V("write gone", write(fd, "still here", 10));
	R("unlink gone (open)", unlinkat(D, "gone", 0));
	S("gone", 0);
	FS("gone (unlinked)", fd);
	PREAD("pread unlinked", fd, 10, 0);
	V("write unlinked", pwrite(fd, "STILL", 5, 0));
	PREAD("pread unlinked again", fd, 10, 0);
	CLOSE(fd);

	/* O_TMPFILE: documented FUSE difference. */
	errno = 0;
	fd = openat(D, ".", O_TMPFILE | O_RDWR, 0600);
	rc_rec("open O_TMPFILE", "EOPNOTSUPP", fd, errno, false);
	CLOSE(fd);
}

static void seq_setattr(void)
{
	struct timespec a, b;
	gid_t groups[64];
	int fd, ng;
	bool root = geteuid() == 0;

	R("chmod f 0600", fchmodat(D, "f", 0600, 0));
	S("f", 0);
	fd = OPEN("f", O_RDWR, 0);
	R("fchmod 0640", fchmod(fd, 0640));
	FS("f after fchmod", fd);
	R("chmod f 04755", fchmodat(D, "f", 04755, 0));
	S("f", 0);
	R("chmod f 02755", fchmodat(D, "f", 02755, 0));
	S("f", 0);
	R("chmod f 0644", fchmodat(D, "f", 0644, 0));

	/* Ownership: root gives files away; a user may only change the group
	 * to one of its own (primary or supplementary). */
	if (root) {
		R("chown f 1234:5678", fchownat(D, "f", 1234, 5678, 0));
		S("f", 0);
		R("fchown 0:0", fchown(fd, 0, 0));
		FS("f after fchown", fd);
	} else {
		R("chown f to root", fchownat(D, "f", 0, -1, 0));
		R("chgrp f to root", fchownat(D, "f", -1, 0, 0));
		ng = getgroups(64, groups);
		for (int i = 0; i < ng; i++) {
			char op[64];

			snprintf(op, sizeof(op), "chgrp f to supplementary #%d",
				 i);
			R(op, fchownat(D, "f", -1, groups[i], 0));
			S("f", 0);
		}
		R("fchown own gid", fchown(fd, -1, getegid()));
		FS("f after fchown", fd);
	}
	R("chown f no-op", fchownat(D, "f", -1, -1, 0));

	/* Size: path truncate, ftruncate on an open handle, errors. */
	R("truncate f 5000", truncate("f", 5000));
	FS("f after truncate", fd);
	R("ftruncate f 3", ftruncate(fd, 3));
	FS("f after ftruncate", fd);
	CLOSE(fd);
	CONTENT("f");
	R("truncate f -1", truncate("f", -1));
	R("truncate d", truncate("d", 0));
	R("truncate nope", truncate("nope", 0));
	fd = OPEN("f", O_RDONLY, 0);
	R("ftruncate O_RDONLY", ftruncate(fd, 0));
	CLOSE(fd);
	/* A descriptor made with mode 0: the open checked nothing (the file
	 * is new), and ftruncate() and write() through it work, whoever the
	 * caller (pjdfstest's ftruncate/ and open/ cases). */
	fd = OPEN("m0", O_CREAT | O_RDWR, 0);
	R("ftruncate mode 0", ftruncate(fd, 123));
	FS("m0 after ftruncate", fd);
	R("write mode 0", write(fd, "x", 1));
	CLOSE(fd);
	R("unlink m0", unlinkat(D, "m0", 0));

	/* Times: exact values, UTIME_OMIT keeps, UTIME_NOW sets now. */
	struct timespec ts[2] = {{1000000000, 123456789},
				 {1100000000, 987654321}};
	R("utimensat exact", utimensat(D, "f", ts, 0));
	TIMES("times after exact", "f", ts[0], ts[0]);
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_nsec = UTIME_NOW;
	a = now_coarse();
	R("utimensat OMIT,NOW", utimensat(D, "f", ts, 0));
	b = now_coarse();
	TIMES("times after OMIT,NOW", "f", a, b);
	a = now_coarse();
	R("utimensat NULL", utimensat(D, "f", NULL, 0));
	b = now_coarse();
	TIMES("times after NULL", "f", a, b);
	ts[0] = (struct timespec){1000000000, 5};
	ts[1] = (struct timespec){1100000000, 6};
	fd = OPEN("f", O_RDONLY, 0);
	R("futimens exact", futimens(fd, ts));
	TIMES("times after futimens", "f", a, b);
	CLOSE(fd);
	R("symlink for utimes", symlinkat("f", D, "lt"));
	ts[0].tv_nsec = 7;
	ts[1].tv_nsec = 8;
	R("utimensat NOFOLLOW symlink",
	  utimensat(D, "lt", ts, AT_SYMLINK_NOFOLLOW));
	TIMES("symlink times", "lt", a, b);
	R("chmod NOFOLLOW symlink",
	  fchmodat(D, "lt", 0600, AT_SYMLINK_NOFOLLOW));
	R("utimensat nope", utimensat(D, "nope", NULL, 0));
}

static void READLINK(const char *path, size_t size)
{
	char op[300], buf[4096];
	ssize_t n;

	snprintf(op, sizeof(op), "readlink %s size=%zu", path, size);
	n = readlinkat(D, path, buf, size);
	if (n < 0)
		add(op, NULL, "%s", ename(errno));
	else
		add(op, NULL, "=%zd \"%.*s\"", n, (int)n, buf);
}

static void seq_links(void)
{
	struct stat s1, s2;
	char buf[64];
	int fd;
	bool root = geteuid() == 0;

	R("symlink l -> f", symlinkat("f", D, "l"));
	READLINK("l", sizeof(buf));
	READLINK("l", 1);
	READLINK("f", sizeof(buf));
	READLINK("nope", sizeof(buf));
	R("symlink exists", symlinkat("x", D, "l"));
	S("l", 0);
	S("l", AT_SYMLINK_NOFOLLOW);
	R("symlink dangling", symlinkat("nowhere", D, "dang"));
	S("dang", 0);
	S("dang", AT_SYMLINK_NOFOLLOW);
	R("symlink absolute", symlinkat("/etc/hostname", D, "abs"));
	READLINK("abs", sizeof(buf));
	R("symlink dotdot", symlinkat("../../..", D, "up"));
	READLINK("up", sizeof(buf));
	R("symlink loop1", symlinkat("loop2", D, "loop1"));
	R("symlink loop2", symlinkat("loop1", D, "loop2"));
	CLOSE(OPEN("loop1", O_RDONLY, 0));
	CLOSE(OPEN("l", O_RDONLY | O_NOFOLLOW, 0));
	fd = OPEN("l", O_RDONLY, 0);
	PREAD("read through symlink", fd, 16, 0);
	CLOSE(fd);
	R("mkdir l", mkdirat(D, "l", 0755));

	R("mkfifo", mkfifoat(D, "fifo", 0640));
	S("fifo", 0);
	R("mkfifo exists", mkfifoat(D, "fifo", 0640));
	R("mknod sock", mknodat(D, "sock", S_IFSOCK | 0600, 0));
	S("sock", 0);
	R("mknod reg", mknodat(D, "reg", S_IFREG | 0600, 0));
	S("reg", 0);
	R("mknod chr 1:3", mknodat(D, "null", S_IFCHR | 0666, makedev(1, 3)));
	S("null", 0);
	if (root) {
		struct stat st;

		add("null rdev", NULL, "%s",
		    fstatat(D, "null", &st, 0) == 0 &&
				    st.st_rdev == makedev(1, 3)
			    ? "1:3"
			    : "other");
	}

	R("link f f.link", linkat(D, "f", D, "f.link", 0));
	S("f", 0);
	S("f.link", 0);
	fstatat(D, "f", &s1, 0);
	fstatat(D, "f.link", &s2, 0);
	add("link same ino", NULL, "%d", s1.st_ino == s2.st_ino);
	R("link exists", linkat(D, "f", D, "f.link", 0));
	R("link dir", linkat(D, "d", D, "d.link", 0));
	R("link nope", linkat(D, "nope", D, "nope.link", 0));
	R("link into file", linkat(D, "f", D, "f/x", 0));
	R("link symlink", linkat(D, "l", D, "l.link", 0));
	S("l.link", AT_SYMLINK_NOFOLLOW);
	R("link fifo", linkat(D, "fifo", D, "fifo.link", 0));
	S("fifo", 0);
	R("unlink f.link", unlinkat(D, "f.link", 0));
	S("f", 0);
}

static void seq_rename(void)
{
	CLOSE(OPEN("ra", O_CREAT | O_WRONLY, 0644));
	CLOSE(OPEN("rb", O_CREAT | O_WRONLY, 0600));
	R("mkdir rd", mkdirat(D, "rd", 0755));
	R("mkdir rd2", mkdirat(D, "rd2", 0700));
	CLOSE(OPEN("rd2/x", O_CREAT | O_WRONLY, 0644));
	R("rename ra rc", renameat(D, "ra", D, "rc"));
	S("ra", 0);
	S("rc", 0);
	R("rename rc over rb", renameat(D, "rc", D, "rb"));
	S("rb", 0);
	R("rename nope", renameat(D, "nope", D, "x"));
	R("rename rd over rd2 (not empty)", renameat(D, "rd", D, "rd2"));
	R("rename rd over file", renameat(D, "rd", D, "rb"));
	R("rename file over rd", renameat(D, "rb", D, "rd"));
	R("rename rd into itself", renameat(D, "rd", D, "rd/sub"));
	R("rename into missing dir", renameat(D, "rb", D, "nodir/rb"));
	R("rename2 NOREPLACE onto existing",
	  renameat2(D, "rb", D, "f", RENAME_NOREPLACE));
	R("rename2 NOREPLACE new",
	  renameat2(D, "rb", D, "re", RENAME_NOREPLACE));
	S("re", 0);
	R("rename2 EXCHANGE file/dir",
	  renameat2(D, "re", D, "rd2", RENAME_EXCHANGE));
	S("re", 0);
	S("rd2", 0);
	S("re/x", 0);
	R("rename2 EXCHANGE missing",
	  renameat2(D, "re", D, "nope", RENAME_EXCHANGE));
	R("rename2 EXCHANGE|NOREPLACE",
	  renameat2(D, "re", D, "rd2", RENAME_EXCHANGE | RENAME_NOREPLACE));
	R("rename dir rd -> rd3", renameat(D, "rd", D, "rd3"));
	R("rename into subdir", renameat(D, "rd2", D, "re/moved"));
	S("re/moved", 0);
	R("rename same", renameat(D, "f", D, "f"));
	R("rename hardlinks to each other", linkat(D, "f", D, "fh", 0));
	R("rename f over its link", renameat(D, "f", D, "fh"));
	S("f", 0);
	S("fh", 0);
	R("rename fh back", renameat(D, "fh", D, "f"));
	LIST(".");
	LIST("re");
}

static void seq_readdir(void)
{
	char name[64];

	R("mkdir big", mkdirat(D, "big", 0755));
	for (int i = 0; i < 600; i++) {
		snprintf(name, sizeof(name),
			 "big/entry-with-a-longish-name-%04d", i);
		if (i % 3 == 0)
			mkdirat(D, name, 0755);
		else
			close(openat(D, name, O_CREAT | O_WRONLY, 0644));
	}
	LIST("big");
	for (int i = 0; i < 600; i += 2) {
		snprintf(name, sizeof(name),
			 "big/entry-with-a-longish-name-%04d", i);
		unlinkat(D, name, i % 3 == 0 ? AT_REMOVEDIR : 0);
	}
	LIST("big");
	LIST("d");
	LIST("nope");
	LIST("f");
}

static void seq_statfs(void)
{
	struct statfs s;

	errno = 0;
	if (statfs(".", &s) < 0) {
		add("statfs", NULL, "%s", ename(errno));
		return;
	}
	add("statfs", NULL,
	    "bsize=%ld frsize=%ld blocks=%llu files=%llu namelen=%ld",
	    (long)s.f_bsize, (long)s.f_frsize, (unsigned long long)s.f_blocks,
	    (unsigned long long)s.f_files, (long)s.f_namelen);
	R("statfs nope", statfs("nope", &s));
}

static void seq_xattr(void)
{
	char big[4000], buf[64];
	bool root = geteuid() == 0;

	R("setxattr user.a", lsetxattr("f", "user.a", "val1", 4, 0));
	GETX("f", "user.a", sizeof(buf));
	GETX("f", "user.a", 0);
	GETX("f", "user.a", 2);
	GETX("f", "user.missing", sizeof(buf));
	R("setxattr CREATE existing",
	  lsetxattr("f", "user.a", "v", 1, XATTR_CREATE));
	R("setxattr REPLACE missing",
	  lsetxattr("f", "user.b", "v", 1, XATTR_REPLACE));
	R("setxattr REPLACE",
	  lsetxattr("f", "user.a", "val2", 4, XATTR_REPLACE));
	GETX("f", "user.a", sizeof(buf));
	R("setxattr empty value", lsetxattr("f", "user.empty", "", 0, 0));
	GETX("f", "user.empty", sizeof(buf));
	fill(big, sizeof(big), 3);
	R("setxattr 4000 bytes",
	  lsetxattr("f", "user.big", big, sizeof(big), 0));
	GETX("f", "user.big", 8192);
	GETX("f", "user.big", 0);
	LISTX("f");
	V("listxattr size", llistxattr("f", NULL, 0) >= 0);
	V("listxattr short", llistxattr("f", buf, 3));
	R("removexattr user.a", lremovexattr("f", "user.a"));
	R("removexattr user.a again", lremovexattr("f", "user.a"));
	LISTX("f");
	R("setxattr on dir", lsetxattr("d", "user.dir", "dv", 2, 0));
	GETX("d", "user.dir", sizeof(buf));
	R("setxattr user on symlink", lsetxattr("l", "user.x", "v", 1, 0));
	GETX("l", "user.x", sizeof(buf));
	R("setxattr bad namespace", lsetxattr("f", "bogus.x", "v", 1, 0));
	R("setxattr trusted", lsetxattr("f", "trusted.t", "tv", 2, 0));
	if (root)
		GETX("f", "trusted.t", sizeof(buf));
	R("setxattr nope", lsetxattr("nope", "user.a", "v", 1, 0));
	GETX("nope", "user.a", sizeof(buf));
	R("setxattr fifo user", lsetxattr("fifo", "user.x", "v", 1, 0));
	LISTX("d");
}

static void seq_access(void)
{
	R("access f R_OK|W_OK", faccessat(D, "f", R_OK | W_OK, 0));
	R("access f X_OK", faccessat(D, "f", X_OK, 0));
	R("access nope", faccessat(D, "nope", F_OK, 0));
	R("access d X_OK", faccessat(D, "d", X_OK, 0));
	CLOSE(OPEN("ro", O_CREAT | O_WRONLY, 0444));
	R("access ro W_OK", faccessat(D, "ro", W_OK, 0));
	R("access ro W_OK EACCESS", faccessat(D, "ro", W_OK, AT_EACCESS));
	CLOSE(OPEN("ro", O_WRONLY, 0));
	CLOSE(OPEN("none", O_CREAT | O_WRONLY, 0));
	R("access none R_OK", faccessat(D, "none", R_OK, 0));
	CLOSE(OPEN("none", O_RDONLY, 0));
	R("mkdir rx", mkdirat(D, "rx", 0755));
	CLOSE(OPEN("rx/in", O_CREAT | O_WRONLY, 0644));
	R("chmod rx 0555", fchmodat(D, "rx", 0555, 0));
	CLOSE(OPEN("rx/new", O_CREAT | O_WRONLY, 0644));
	R("unlink in 0555 dir", unlinkat(D, "rx/in", 0));
	R("mkdir in 0555 dir", mkdirat(D, "rx/sub", 0755));
	R("chmod rx 0600", fchmodat(D, "rx", 0600, 0));
	S("rx/in", 0);
	LIST("rx");
	R("chmod rx 0311", fchmodat(D, "rx", 0311, 0));
	S("rx/in", 0);
	LIST("rx");
	R("chmod rx 0755", fchmodat(D, "rx", 0755, 0));
	R("mkdir sticky", mkdirat(D, "sticky", 01777));
	R("chmod sticky 01777", fchmodat(D, "sticky", 01777, 0));
	S("sticky", 0);
}

static void seq_fallocate(void)
{
	char buf[65536];
	struct stat st;
	int fd;

	fd = OPEN("fa", O_CREAT | O_RDWR, 0644);
	fill(buf, sizeof(buf), 5);
	for (int i = 0; i < 16; i++)
		pwrite(fd, buf, sizeof(buf), (off_t)i * sizeof(buf));
	R("fsync fa", fsync(fd));
	R("fallocate 0 grow", fallocate(fd, 0, 1 << 20, 1 << 20));
	FS("fa after grow", fd);
	R("fallocate KEEP_SIZE",
	  fallocate(fd, FALLOC_FL_KEEP_SIZE, 2 << 20, 1 << 20));
	FS("fa after KEEP_SIZE", fd);
	fstat(fd, &st);
	add("fa blocks cover 3 MiB", NULL, "%d",
	    (long long)st.st_blocks * 512 >= (3LL << 20));
	R("fallocate PUNCH_HOLE|KEEP_SIZE",
	  fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 65536,
		    65536));
	PREAD("pread punched", fd, 65536, 65536);
	PREAD("pread after punch", fd, 65536, 131072);
	R("fallocate PUNCH_HOLE without KEEP_SIZE",
	  fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096));
	R("fallocate ZERO_RANGE",
	  fallocate(fd, FALLOC_FL_ZERO_RANGE, 200000, 10000));
	PREAD("pread zeroed", fd, 20000, 195000);
	R("fallocate ZERO_RANGE|KEEP_SIZE beyond EOF",
	  fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 4 << 20,
		    4096));
	FS("fa after zero range", fd);
	PREAD("pread fa head", fd, 65536, 0);
	R("fallocate bad length", fallocate(fd, 0, 0, 0));
	R("fallocate negative offset", fallocate(fd, 0, -1, 4096));
	CLOSE(fd);
	fd = OPEN("fa", O_RDONLY, 0);
	R("fallocate O_RDONLY", fallocate(fd, 0, 0, 4096));
	CLOSE(fd);

	/* Documented difference, on a file of its own (unlinked after) so that
	 * the backing's changed contents do not count twice. */
	fd = OPEN("fc", O_CREAT | O_RDWR, 0644);
	R("ftruncate fc", ftruncate(fd, 1 << 20));
	X("fallocate COLLAPSE_RANGE", "EOPNOTSUPP",
	  fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 65536));
	X("fallocate INSERT_RANGE", "EOPNOTSUPP",
	  fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, 65536));
	CLOSE(fd);
	R("unlink fc", unlinkat(D, "fc", 0));
}

static void seq_seek(void)
{
	char buf[4096];
	int fd;

	fill(buf, sizeof(buf), 9);
	fd = OPEN("sparse", O_CREAT | O_RDWR, 0644);
	pwrite(fd, buf, sizeof(buf), 0);
	pwrite(fd, buf, sizeof(buf), 1 << 20);
	R("ftruncate sparse 2 MiB", ftruncate(fd, 2 << 20));
	R("fsync sparse", fsync(fd));
	V("SEEK_DATA 0", lseek(fd, 0, SEEK_DATA));
	V("SEEK_HOLE 0", lseek(fd, 0, SEEK_HOLE));
	V("SEEK_DATA 4096", lseek(fd, 4096, SEEK_DATA));
	V("SEEK_HOLE 1 MiB", lseek(fd, 1 << 20, SEEK_HOLE));
	V("SEEK_DATA after last data", lseek(fd, (1 << 20) + 8192, SEEK_DATA));
	V("SEEK_HOLE in tail hole", lseek(fd, (1 << 20) + 8192, SEEK_HOLE));
	V("SEEK_DATA past EOF", lseek(fd, 3 << 20, SEEK_DATA));
	V("SEEK_HOLE past EOF", lseek(fd, 3 << 20, SEEK_HOLE));
	V("SEEK_END", lseek(fd, 0, SEEK_END));
	V("SEEK_CUR", lseek(fd, -10, SEEK_CUR));
	V("SEEK_SET negative", lseek(fd, -1, SEEK_SET));
	V("bad whence", lseek(fd, 0, 42));
	CLOSE(fd);
}

static void seq_copy_range(void)
{
	char buf[100000];
	loff_t in_off, out_off;
	int in, out;

	fill(buf, sizeof(buf), 11);
	in = OPEN("cfr.in", O_CREAT | O_RDWR, 0644);
	V("write cfr.in", write(in, buf, sizeof(buf)));
	out = OPEN("cfr.out", O_CREAT | O_RDWR, 0644);
	in_off = 1000;
	out_off = 0;
	V("copy_file_range 50000",
	  copy_file_range(in, &in_off, out, &out_off, 50000, 0));
	add("copy_file_range offsets", NULL, "in=%lld out=%lld",
	    (long long)in_off, (long long)out_off);
	in_off = 90000;
	out_off = 60000;
	V("copy_file_range short at EOF",
	  copy_file_range(in, &in_off, out, &out_off, 50000, 0));
	in_off = 200000;
	V("copy_file_range past EOF",
	  copy_file_range(in, &in_off, out, &out_off, 100, 0));
	FS("cfr.out", out);
	PREAD("pread cfr.out", out, 100000, 0);
	in_off = 0;
	out_off = 10;
	V("copy_file_range overlapping same file",
	  copy_file_range(in, &in_off, in, &out_off, 100, 0));
	V("copy_file_range bad flags",
	  copy_file_range(in, NULL, out, NULL, 100, 1));
	CLOSE(in);
	in = OPEN("cfr.in", O_RDONLY, 0);
	V("copy_file_range to O_RDONLY",
	  copy_file_range(out, NULL, in, NULL, 100, 0));
	CLOSE(in);
	CLOSE(out);
	CONTENT("cfr.out");
}

static void seq_more(void)
{
	char name[64], a[5][256], b[5][256];
	struct dirent *de;
	void *abuf;
	DIR *d;
	long pos;
	int fd, ok;

	/* Offsets past 4 GiB. */
	fd = OPEN("huge", O_CREAT | O_RDWR, 0644);
	V("pwrite at 5 GiB", pwrite(fd, "far", 3, 5LL << 30));
	FS("huge", fd);
	PREAD("pread at 5 GiB", fd, 8, 5LL << 30);
	V("SEEK_DATA 0 in huge", lseek(fd, 0, SEEK_DATA) >= 0);
	V("SEEK_HOLE 0 in huge", lseek(fd, 0, SEEK_HOLE));
	R("ftruncate huge to 4 GiB + 1", ftruncate(fd, (4LL << 30) + 1));
	FS("huge truncated", fd);
	CLOSE(fd);
	R("unlink huge", unlinkat(D, "huge", 0));

	/* O_DIRECT: aligned reads and writes pass through. */
	if (posix_memalign(&abuf, 4096, 8192))
		exit(2);
	fill(abuf, 8192, 13);
	fd = OPEN("odirect", O_CREAT | O_RDWR | O_DIRECT, 0644);
	V("O_DIRECT pwrite 8K", pwrite(fd, abuf, 8192, 0));
	memset(abuf, 0, 8192);
	V("O_DIRECT pread 4K at 4K", pread(fd, abuf, 4096, 4096));
	add("O_DIRECT data", NULL, "%016llx",
	    (unsigned long long)fnv(abuf, 4096));
	CLOSE(fd);
	free(abuf);
	CONTENT("odirect");

	/* Setattr on the open handle of an unlinked file. */
	fd = OPEN("orphan", O_CREAT | O_RDWR, 0644);
	V("write orphan", write(fd, "0123456789", 10));
	R("unlink orphan", unlinkat(D, "orphan", 0));
	R("ftruncate orphan", ftruncate(fd, 4));
	R("fchmod orphan", fchmod(fd, 0600));
	R("futimens orphan",
	  futimens(fd, (struct timespec[2]){{1000000000, 1}, {1100000000, 2}}));
	FS("orphan", fd);
	PREAD("pread orphan", fd, 10, 0);
	R("fsync orphan", fsync(fd));
	CLOSE(fd);

	/* Directory streams: telldir/seekdir resume at the same entry, and a
	 * rewound stream sees a new entry. */
	R("mkdir tell", mkdirat(D, "tell", 0755));
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "tell/n%02d", i);
		CLOSE(openat(D, name, O_CREAT | O_WRONLY, 0644));
	}
	d = opendir("tell");
	for (int i = 0; d && i < 17; i++)
		readdir(d);
	pos = d ? telldir(d) : -1;
	for (int i = 0; d && i < 5; i++) {
		de = readdir(d);
		snprintf(a[i], sizeof(a[i]), "%s", de ? de->d_name : "(end)");
	}
	if (d)
		seekdir(d, pos);
	ok = d != NULL;
	for (int i = 0; d && i < 5; i++) {
		de = readdir(d);
		snprintf(b[i], sizeof(b[i]), "%s", de ? de->d_name : "(end)");
		ok &= !strcmp(a[i], b[i]);
	}
	add("seekdir(telldir) resumes", NULL, "%d", ok);
	CLOSE(openat(D, "tell/zz-new", O_CREAT | O_WRONLY, 0644));
	ok = 0;
	if (d) {
		rewinddir(d);
		while ((de = readdir(d)))
			ok |= !strcmp(de->d_name, "zz-new");
		closedir(d);
	}
	add("rewinddir sees a new entry", NULL, "%d", ok);
	LIST("tell");
}

static void run_seq(void)
{
	seq_names_and_errors();
	seq_open_read_write();
	seq_setattr();
	seq_links();
	seq_rename();
	seq_readdir();
	seq_statfs();
	seq_xattr();
	seq_access();
	seq_fallocate();
	seq_seek();
	seq_copy_range();
	seq_more();
}

/* Read a whole tree on the backing into the log: names, types, modes, sizes,
 * owners, link counts, contents, symlink targets, user.* xattrs. */
static size_t tree_strip; /* length of the run's directory name */

static void tree(int dfd, const char *rel)
{
	DIR *d;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int fd = openat(dfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

	if (fd < 0 || !(d = fdopendir(fd))) {
		add(rel + tree_strip, NULL, "opendir %s", ename(errno));
		CLOSE(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = xrealloc(names, cap * sizeof(*names));
		}
		names[n++] = strdup(de->d_name);
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char path[4096], buf[4096], xl[4096] = "";
		struct stat st;
		ssize_t k;

		snprintf(path, sizeof(path), "%s/%s", rel, names[i]);
		if (fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			add(path + tree_strip, NULL, "%s", ename(errno));
			free(names[i]);
			continue;
		}
		add(path + tree_strip, NULL, "%s", stat_str(&st));
		if (S_ISLNK(st.st_mode)) {
			k = readlinkat(dfd, path, buf, sizeof(buf));
			add(path + tree_strip, NULL, "-> %.*s",
			    (int)(k > 0 ? k : 0), buf);
			free(names[i]);
			continue;
		}
		if (S_ISREG(st.st_mode) && (st.st_mode & 0444)) {
			int f = openat(dfd, path, O_RDONLY);
			char *data = malloc(st.st_size + 1);

			k = f >= 0 ? pread(f, data, st.st_size, 0) : -1;
			add(path + tree_strip, NULL, "data %zd fnv=%016llx", k,
			    (unsigned long long)fnv(data, k > 0 ? k : 0));
			free(data);
			CLOSE(f);
		}
		if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
			char full[4096];
			int f = openat(dfd, path, O_PATH | O_NOFOLLOW);

			snprintf(full, sizeof(full), "/proc/self/fd/%d", f);
			k = listxattr(full, xl, sizeof(xl));
			for (char *p = xl; k > 0 && p < xl + k;
			     p += strlen(p) + 1)
				if (!strncmp(p, "user.", 5)) {
					ssize_t vl = getxattr(full, p, buf,
							      sizeof(buf));
					add(path + tree_strip, NULL,
					    "xattr %s=%016llx", p,
					    (unsigned long long)fnv(
						    buf, vl > 0 ? vl : 0));
				}
			CLOSE(f);
		}
		if (S_ISDIR(st.st_mode) && (st.st_mode & 0500) == 0500)
			tree(dfd, path);
		free(names[i]);
	}
	free(names);
	closedir(d);
}

static int shown; /* mismatch lines printed so far, capped */

static int compare(const struct log *exp, const struct log *got,
		   const char *what)
{
	size_t n = exp->n > got->n ? exp->n : got->n;
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		const struct rec *e = i < exp->n ? &exp->v[i] : NULL;
		const struct rec *g = i < got->n ? &got->v[i] : NULL;
		const char *want;

		if (!e || !g || strcmp(e->op, g->op)) {
			printf("FAIL %s #%zu: sequences diverge: backing '%s', "
			       "mount '%s'\n",
			       what, i, e ? e->op : "(end)",
			       g ? g->op : "(end)");
			return bad + 1;
		}
		want = g->fuse_expect ? g->fuse_expect : e->out;
		if (strcmp(want, g->out) && ++shown > 60) {
			bad++;
		} else if (strcmp(want, g->out)) {
			printf("FAIL %s #%zu %s: expected %s%s, got %s\n", what,
			       i, e->op, want,
			       g->fuse_expect ? " (documented FUSE difference)"
					      : "",
			       g->out);
			bad++;
		}
	}
	return bad;
}

static int run_in(const char *parent, const char *name, struct log *lg)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", parent, name);
	if (mkdir(path, 0755) < 0) {
		fprintf(stderr, "afs_syscalls: mkdir %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	D = open(path, O_RDONLY | O_DIRECTORY);
	if (D < 0 || fchdir(D) < 0) {
		fprintf(stderr, "afs_syscalls: open %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	cur = lg;
	run_seq();
	if (chdir("/") < 0)
		return -1;
	close(D);
	return 0;
}

/* Static, so that LeakSanitizer sees them reachable at exit. */
static struct log direct, fuse, tdirect, tfuse;

int main(int argc, char **argv)
{
	int bad, bfd;

	if (argc != 3) {
		fprintf(stderr, "usage: afs_syscalls BACKING_DIR MOUNT_DIR\n");
		return 2;
	}
	umask(022);
	if (run_in(argv[1], "direct", &direct) < 0)
		return 2;
	if (run_in(argv[2], "fuse", &fuse) < 0)
		return 2;
	bad = compare(&direct, &fuse, "op");

	bfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (bfd < 0) {
		perror(argv[1]);
		return 2;
	}
	cur = &tdirect;
	tree_strip = strlen("direct");
	tree(bfd, "direct");
	cur = &tfuse;
	tree_strip = strlen("fuse");
	tree(bfd, "fuse");
	close(bfd);
	bad += compare(&tdirect, &tfuse, "backing tree");
	if (shown > 60)
		printf("(%d more mismatch lines not shown)\n", shown - 60);
	printf("afs_syscalls: %zu operations, %zu tree entries compared, %d "
	       "mismatches (%s)\n",
	       direct.n, tdirect.n, bad, geteuid() ? "unprivileged" : "root");
	return bad ? 1 : 0;
}
