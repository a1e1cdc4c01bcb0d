/* fuzz_warm.c - libFuzzer target: the warm restart's state-file parser
 * (afs_warm_parse(), fs/warm/state.h), which reads untrusted input.
 *
 * The input is a state file's bytes, parsed as it is (the header and
 * checksum checks), then again with its body length and checksum patched
 * in (or random mutations would never get past the checksum to the
 * records).  Properties: the parser returns 0,
 * -EINVAL or -ENOMEM, with a NUL-terminated error line on failure; an
 * accepted file's ranges stay within its files' sizes, ascending and not
 * overlapping; the format is canonical, so encoding what was parsed gives
 * back the input byte for byte; nothing crashes or leaks.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/warm/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *data, size_t size)
{
	struct afs_warm_enc e = {0};
	struct afs_warm_map m;
	char err[256] = "";
	int rc;

	rc = afs_warm_parse(data, size, &m, err, sizeof(err));
	assert(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc) {
		assert(err[0] && memchr(err, '\0', sizeof(err)));
		return;
	}
	for (size_t i = 0; i < m.nfiles; i++) {
		const struct afs_warm_file *f = &m.files[i];
		uint64_t pages = f->size / 4096 + (f->size % 4096 != 0);
		uint64_t end = 0;

		for (uint32_t k = 0; k < f->nranges; k++) {
			assert(f->ranges[k].count > 0);
			assert(f->ranges[k].first >= end);
			end = f->ranges[k].first + f->ranges[k].count;
			assert(end <= pages);
		}
		afs_warm_enc_file(&e, f);
	}
	assert(afs_warm_enc_finish(&e) == 0);
	assert(e.len == size && !memcmp(e.buf, data, size));
	free(e.buf);
	afs_warm_map_free(&m);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;

	check(data, size);
	if (size < AFS_WARM_HDR_LEN)
		return 0;
	fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	put_le64(fixed + 24, size - AFS_WARM_HDR_LEN);
	put_le64(fixed + 32, afs_warm_checksum(fixed, size));
	check(fixed, size);
	free(fixed);
	return 0;
}
