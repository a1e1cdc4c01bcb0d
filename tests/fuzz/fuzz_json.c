/* fuzz_json.c - libFuzzer target: aheadfs-stat's JSON reader
 * (json_parse()).
 *
 * Property: any bytes parse to a document or to NULL with a message and
 * an offset within the input; the document is walked (json_get() of a few
 * keys) and freed without a leak (ASan/LSan); nothing crashes.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fs/stats/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *err = NULL;
	size_t off = (size_t)-1;
	struct json_doc *doc = json_parse((const char *)data, size, &err, &off);

	if (!doc) {
		assert(err && off <= size);
		return 0;
	}
	(void)json_get(doc->root, "options");
	(void)json_get(doc->root, "cache");
	(void)json_get(doc->root, "");
	json_doc_free(doc);
	return 0;
}
