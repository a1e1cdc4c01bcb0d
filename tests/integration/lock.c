/* lock.c - take, try or wait for a file lock, for the locks test.
 *
 * Usage: afs_lock KIND MODE FILE [START LEN]
 *   KIND  flock | posix | ofd    (flock(2), fcntl F_SETLK*, fcntl F_OFD_SETLK*)
 *   MODE  hold   take an exclusive lock (non-blocking), print "locked", then
 *                keep it until stdin reaches EOF; exit 0
 *         try    try an exclusive lock without blocking: print "locked"
 *                (exit 0) or the errno's name (exit 1)
 *         wait   print "waiting", take the lock blocking, print "locked",
 *                exit 0
 *         test   (posix) F_GETLK: print "unlocked" or "held pid=PID"
 *   START LEN    the byte range for posix/ofd (default 0 0: whole file)
 * The file is opened O_RDWR.  Output lines are flushed at once so that a
 * script can follow the steps.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: afs_lock flock|posix|ofd hold|try|wait|test "
			"FILE [START LEN]\n");
	return 2;
}

static int take(const char *kind, int fd, int blocking, off_t start, off_t len)
{
	struct flock fl = {.l_type = F_WRLCK,
			   .l_whence = SEEK_SET,
			   .l_start = start,
			   .l_len = len};

	if (!strcmp(kind, "flock"))
		return flock(fd, LOCK_EX | (blocking ? 0 : LOCK_NB));
	if (!strcmp(kind, "posix"))
		return fcntl(fd, blocking ? F_SETLKW : F_SETLK, &fl);
	return fcntl(fd, blocking ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
}

int main(int argc, char **argv)
{
	const char *kind, *mode;
	off_t start = 0, len = 0;
	char buf[64];
	int fd;

	if (argc != 4 && argc != 6)
		return usage();
	kind = argv[1];
	mode = argv[2];
	if (strcmp(kind, "flock") && strcmp(kind, "posix") &&
	    strcmp(kind, "ofd"))
		return usage();
	if (argc == 6) {
		start = strtoll(argv[4], NULL, 0);
		len = strtoll(argv[5], NULL, 0);
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	fd = open(argv[3], O_RDWR);
	if (fd < 0) {
		printf("open %s\n", strerrorname_np(errno));
		return 1;
	}
	if (!strcmp(mode, "hold")) {
		if (take(kind, fd, 0, start, len) < 0) {
			printf("%s\n", strerrorname_np(errno));
			return 1;
		}
		printf("locked\n");
		while (read(0, buf, sizeof(buf)) > 0)
			;
		return 0;
	}
	if (!strcmp(mode, "try")) {
		if (take(kind, fd, 0, start, len) < 0) {
			printf("%s\n", strerrorname_np(errno));
			return 1;
		}
		printf("locked\n");
		return 0;
	}
	if (!strcmp(mode, "wait")) {
		printf("waiting\n");
		if (take(kind, fd, 1, start, len) < 0) {
			printf("%s\n", strerrorname_np(errno));
			return 1;
		}
		printf("locked\n");
		return 0;
	}
	if (!strcmp(mode, "test") && !strcmp(kind, "posix")) {
		struct flock fl = {.l_type = F_WRLCK,
				   .l_whence = SEEK_SET,
				   .l_start = start,
				   .l_len = len};

		if (fcntl(fd, F_GETLK, &fl) < 0) {
			printf("%s\n", strerrorname_np(errno));
			return 1;
		}
		if (fl.l_type == F_UNLCK)
			printf("unlocked\n");
		else
			printf("held pid=%d\n", (int)fl.l_pid);
		return 0;
	}
	return usage();
}
