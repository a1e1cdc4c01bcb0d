/* test_schema.c - the stats schema (fs/stats/schema.h) and its
 * documentation: docs/stats.md's field reference is exactly what
 * afs_schema_doc() writes (every schema field appears there and no other),
 * and the metric names are valid Prometheus names, unique, counters ending
 * in _total.
 */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fs/stats/schema.h"

#include "../slurp.h"

#define BEGIN                                                                  \
	"<!-- schema:begin (afs_schema_doc(); aheadfs-stat --schema) -->\n"
#define END "<!-- schema:end -->\n"

static void test_doc_matches_schema(void **state)
{
	char *doc = slurp(AFS_DOCS_DIR "/stats.md");
	char *want = NULL, *b, *e;
	size_t len = 0;
	FILE *m;

	assert_non_null(doc);
	m = open_memstream(&want, &len);
	assert_int_equal(afs_schema_doc(m), 0);
	fclose(m);
	b = strstr(doc, BEGIN);
	assert_non_null(b);
	b += strlen(BEGIN);
	e = strstr(b, END);
	assert_non_null(e);
	*e = '\0';
	if (strcmp(b, want))
		fail_msg("docs/stats.md's field reference is not the schema's; "
			 "replace it with the output of aheadfs-stat "
			 "--schema:\n%s",
			 want);
	/* only one reference */
	assert_null(strstr(e + 1, BEGIN));
	free(want);
	free(doc);
}

static void check_table(const struct afs_schema_field *t, size_t n,
			bool metrics)
{
	regex_t re;
	char names[256][128];
	size_t nn = 0;

	assert_int_equal(regcomp(&re, "^[a-zA-Z_:][a-zA-Z0-9_:]*$",
				 REG_EXTENDED | REG_NOSUB),
			 0);
	for (size_t i = 0; i < n; i++) {
		char m[128];
		int rc = afs_schema_metric(&t[i], m, sizeof(m));

		/* no two rows of one table name one field */
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t[i].obj, t[j].obj) &&
			    !strcmp(t[i].key, t[j].key))
				fail_msg("%s.%s twice", t[i].obj, t[i].key);
		assert_non_null(t[i].help);
		assert_true(strlen(t[i].help) > 0);
		if (!metrics)
			continue;
		if (t[i].kind == AFS_STAT_TEXT ||
		    t[i].kind == AFS_STAT_STREAMS) {
			assert_int_equal(rc, -ENOENT);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(regexec(&re, m, 0, NULL, 0), 0);
		assert_int_equal(strncmp(m, "aheadfs_", 8), 0);
		size_t l = strlen(m);
		bool total = l > 6 && !strcmp(m + l - 6, "_total");
		assert_true(total == (t[i].kind == AFS_STAT_COUNTER ||
				      t[i].kind == AFS_STAT_DECISIONS));
		for (size_t j = 0; j < nn; j++)
			if (!strcmp(names[j], m))
				fail_msg("metric %s twice", m);
		assert_true(nn < 256);
		strcpy(names[nn++], m);
	}
	regfree(&re);
}

static void test_names(void **state)
{
	check_table(afs_schema_root, afs_schema_root_n, true);
	check_table(afs_schema_file, afs_schema_file_n, false);
	check_table(afs_schema_stream, afs_schema_stream_n, false);
	for (int i = 0; i < AFS_SCHEMA_KINDS; i++)
		assert_non_null(afs_schema_kinds[i]);
	assert_null(afs_schema_kinds[AFS_SCHEMA_KINDS]);
	assert_non_null(afs_schema_find(afs_schema_root, afs_schema_root_n,
					"cache", "evictions"));
	assert_null(afs_schema_find(afs_schema_root, afs_schema_root_n, "",
				    "evictions"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doc_matches_schema),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
