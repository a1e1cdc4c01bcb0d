/* handles.c - NFS-style file handles through the mount, for nfs_handles.sh.
 *
 * Usage:
 *   afs_handles save PATH HANDLE_FILE
 *     name_to_handle_at(PATH) and store the handle in HANDLE_FILE.
 *   afs_handles open MOUNT_DIR HANDLE_FILE EXPECT_FILE [EXPECT_PARENT]
 *     open_by_handle_at(MOUNT_DIR's fd, handle, O_RDONLY) and compare what it
 *     reads with EXPECT_FILE (for a directory handle: compare the sorted
 *     entry names of the two directories).  With EXPECT_PARENT (directory
 *     handles), also open ".." from the opened directory -- a LOOKUP of ".."
 *     in a directory the kernel may have just reconnected -- and compare its
 *     entries with EXPECT_PARENT's.  Exit 0 when equal.
 *   afs_fhandle stale MOUNT_DIR HANDLE_FILE
 *     open_by_handle_at must fail with ESTALE (the object is gone).
 * open_by_handle_at needs CAP_DAC_READ_SEARCH (root).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_HANDLE 128

static int die(const char *what, const char *arg)
{
	fprintf(stderr, "afs_fhandle: %s %s: %s (%s)\n", what, arg,
		strerror(errno), strerrorname_np(errno) ?: "?");
	return 1;
}

static ssize_t slurp(int fd, char **out)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	ssize_t k;

	while ((k = read(fd, buf + n, cap - n)) > 0) {
		n += k;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	*out = buf;
	return k < 0 ? -1 : (ssize_t)n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, newline-joined entry names of the open directory @fd. */
static char *dir_names(int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	char *names[4096], *out;
	size_t n = 0, len = 1;

	if (!d)
		return NULL;
	while ((de = readdir(d)) && n < 4096) {
		names[n] = strdup(de->d_name);
		len += strlen(names[n++]) + 1;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	out = calloc(1, len);
	for (size_t i = 0; i < n; i++) {
		strcat(out, names[i]);
		strcat(out, "\n");
		free(names[i]);
	}
	return out;
}

static int load(const char *file, struct file_handle *fh)
{
	FILE *f = fopen(file, "rb");
	size_t n;

	if (!f)
		return die("open", file);
	n = fread(fh, 1, sizeof(*fh) + MAX_HANDLE, f);
	fclose(f);
	if (n < sizeof(*fh) || n != sizeof(*fh) + fh->handle_bytes) {
		fprintf(stderr, "afs_fhandle: %s: bad handle file\n", file);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE];
	} h;
	int mount_id, mfd, fd, efd;

	if (argc == 4 && !strcmp(argv[1], "save")) {
		FILE *f;

		h.fh.handle_bytes = MAX_HANDLE;
		if (name_to_handle_at(AT_FDCWD, argv[2], &h.fh, &mount_id, 0))
			return die("name_to_handle_at", argv[2]);
		f = fopen(argv[3], "wb");
		if (!f ||
		    fwrite(&h, sizeof(h.fh) + h.fh.handle_bytes, 1, f) != 1)
			return die("write", argv[3]);
		fclose(f);
		printf("handle type %d, %u bytes, mount id %d\n",
		       h.fh.handle_type, h.fh.handle_bytes, mount_id);
		return 0;
	}
	if (((argc == 5 || argc == 6) && !strcmp(argv[1], "open")) ||
	    (argc == 4 && !strcmp(argv[1], "stale"))) {
		mfd = open(argv[2], O_RDONLY | O_DIRECTORY);
		if (mfd < 0)
			return die("open", argv[2]);
		if (load(argv[3], &h.fh))
			return 1;
		fd = open_by_handle_at(mfd, &h.fh, O_RDONLY);
		if (!strcmp(argv[1], "stale")) {
			if (fd >= 0 || errno != ESTALE) {
				fprintf(stderr,
					"afs_fhandle: expected ESTALE, got "
					"%s\n",
					fd >= 0 ? "an open file"
						: strerrorname_np(errno));
				return 1;
			}
			return 0;
		}
		if (fd < 0)
			return die("open_by_handle_at", argv[3]);
		efd = open(argv[4], O_RDONLY);
		if (efd < 0)
			return die("open", argv[4]);
		struct stat st;
		fstat(fd, &st);
		if (S_ISDIR(st.st_mode)) {
			int pfd = argc == 6 ? openat(fd, "..",
						     O_RDONLY | O_DIRECTORY)
					    : -1;
			int epfd = argc == 6 ? open(argv[5],
						    O_RDONLY | O_DIRECTORY)
					     : -1;
			char *a = dir_names(fd), *b = dir_names(efd);
			int same = a && b && !strcmp(a, b);

			if (argc == 6) {
				char *pa = pfd >= 0 ? dir_names(pfd) : NULL;
				char *pb = epfd >= 0 ? dir_names(epfd) : NULL;

				if (!pa || !pb || strcmp(pa, pb)) {
					fprintf(stderr,
						"afs_fhandle: '..' of the "
						"handle's directory differs "
						"from %s\n",
						argv[5]);
					same = 0;
				}
				free(pa);
				free(pb);
			}

			if (!same)
				fprintf(stderr,
					"afs_fhandle: directory "
					"listings differ:\n%s---\n%s",
					a ? a : "(error)\n",
					b ? b : "(error)\n");
			free(a);
			free(b);
			return !same;
		}
		char *a, *b;
		ssize_t na = slurp(fd, &a), nb = slurp(efd, &b);
		int same = na >= 0 && na == nb && !memcmp(a, b, na);

		if (!same)
			fprintf(stderr,
				"afs_fhandle: content differs: %zd bytes "
				"by handle, %zd expected\n",
				na, nb);
		free(a);
		free(b);
		close(fd);
		close(efd);
		close(mfd);
		return !same;
	}
	fprintf(stderr, "usage: afs_handles save PATH HANDLE_FILE | open "
			"MOUNT_DIR HANDLE_FILE EXPECT_FILE [EXPECT_PARENT] | "
			"stale MOUNT_DIR "
			"HANDLE_FILE\n");
	return 2;
}
