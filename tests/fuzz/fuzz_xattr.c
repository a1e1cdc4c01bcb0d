/* fuzz_xattr.c - libFuzzer target: the user.aheadfs.* value parsers
 * (afs_xattr_ahead_set()) on a real data path over a temporary file.
 *
 * Input: the first byte picks a name (advice on the file; the tunables
 * on the root; a few others) and the setxattr flags, the rest is the
 * value.  Properties: the answer is one of 0, -EINVAL, -EPERM, -ENOTSUP,
 * -EEXIST; when it is not 0 nothing changed (the rendered tunables and
 * advice are the same before and after); nothing crashes or leaks.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cache/cache.h"
#include "fs/data/data.h"
#include "fs/stats/xattr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {
	"user.aheadfs.advice",	    "user.aheadfs.ra_max",
	"user.aheadfs.context_ra",  "user.aheadfs.stream_table",
	"user.aheadfs.stats",	    "user.aheadfs.map",
	"user.aheadfs.nonexistent",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static struct afs_data *a;
static struct afs_fcache *fc;
static struct stat file_st, dir_st;
static struct afs_xattr_target file_t, root_t;

static void setup(void)
{
	struct afs_data_config cfg;
	char path[] = "/tmp/afs-fuzz-xattr-XXXXXX", err[256];
	struct afs_file_key key;
	int fd = mkstemp(path);

	assert(fd >= 0);
	unlink(path);
	assert(!ftruncate(fd, 1 << 20));
	assert(!fstat(fd, &file_st) && !stat("/", &dir_st));
	afs_data_config_init(&cfg);
	cfg.cache_size = 64u << 20;
	cfg.manual_reclaim = true;
	cfg.ra.max_bytes = 1u << 20;
	cfg.ra.workers = 1;
	cache_thread_online();
	assert(!afs_data_create(&cfg, &a, err, sizeof(err)));
	key = (struct afs_file_key){.dev = file_st.st_dev,
				    .ino = file_st.st_ino};
	assert(!afs_fcache_lookup(a, &key, &file_st, &fc));
	assert(!afs_fcache_ra(fc, fd));
	file_t = (struct afs_xattr_target){
		.is_reg = true, .shown_ino = 2, .st = &file_st, .fc = fc};
	root_t = (struct afs_xattr_target){
		.is_root = true, .shown_ino = 1, .st = &dir_st};
}

/* What can be set, rendered: the tunables and the file's advice. */
static void state(char *out, size_t len)
{
	size_t used = 0;

	for (size_t i = 0; i < 4; i++) {
		const struct afs_xattr_target *t = i ? &root_t : &file_t;
		ssize_t n = afs_xattr_ahead_get(a, t, names[i], out + used,
						len - used - 1);

		used += n > 0 ? (size_t)n : 0;
		out[used++] = '|';
	}
	out[used] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int flags[] = {0, XATTR_CREATE, XATTR_REPLACE, 0x40};
	char before[1024], after[1024];
	const struct afs_xattr_target *t;
	const char *name;
	int rc;

	if (!a)
		setup();
	if (!size)
		return 0;
	name = names[data[0] % NNAMES];
	t = (data[0] / NNAMES) & 1 ? &root_t : &file_t;
	state(before, sizeof(before));
	rc = afs_xattr_ahead_set(a, t, name, (const char *)data + 1, size - 1,
				 flags[(data[0] >> 5) & 3], 0, 0);
	assert(rc == 0 || rc == -EINVAL || rc == -EPERM || rc == -ENOTSUP ||
	       rc == -EEXIST);
	if (rc) {
		state(after, sizeof(after));
		assert(!strcmp(before, after));
	}
	return 0;
}
