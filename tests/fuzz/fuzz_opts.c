/* fuzz_opts.c - libFuzzer target: the option parser (afs_opts_parse()).
 *
 * The input is a command line: arguments separated by NUL or newline bytes
 * (at most 64), after the program name.  Property: the parser returns 0,
 * -EINVAL or -ENOMEM, writes a NUL-terminated error line on failure, and
 * afs_opts_free() frees everything (ASan/LSan); nothing crashes.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size + 1), *argv[MAX_ARGS + 2], err[256];
	struct afs_opts o;
	char *start = copy;
	int argc = 1, rc;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	argv[0] = "aheadfs";
	for (size_t i = 0; i <= size && argc <= MAX_ARGS; i++) {
		if (i < size && copy[i] && copy[i] != '\n')
			continue;
		copy[i] = '\0';
		argv[argc++] = start;
		start = copy + i + 1;
	}
	argv[argc] = NULL;
	afs_opts_init(&o);
	err[0] = '\0';
	rc = afs_opts_parse(&o, argc, argv, err, sizeof(err));
	assert(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	assert(rc == 0 || (err[0] && memchr(err, '\0', sizeof(err))));
	afs_opts_free(&o);
	free(copy);
	return 0;
}
