/* test_grammar.c - the command line (-o NAME=VALUE, fs/fuse/opts_table.c) and the
 * run-time tunables (setxattr user.aheadfs.NAME, fs/stats) accept the same
 * values with the same meaning: one size parser and one name table per
 * setting.  The mount is made with the data path's constructor
 * (afs_data_create()).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fs/stats/xattr.h"
#include "opts.h"

#include "../fixture/data_path.h"

struct fixture {
	struct afs_data *a;
	struct afs_xattr_target root;
};

static int setup(void **state)
{
	struct afs_data_config cfg;
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	afs_data_config_init(&cfg);
	cfg.cache_size = 64u << 20;
	cfg.ra.workers = 1;
	fx->a = data_path_ahead(&cfg);
	fx->root = (struct afs_xattr_target){.is_root = true, .shown_ino = 1};
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	afs_data_destroy(fx->a);
	free(fx);
	return 0;
}

/* -o NAME=VALUE: 0 and the parsed options, or -EINVAL. */
static int parse_opt(const char *name, const char *value, struct afs_opts *o)
{
	char item[128], err[AFS_ERRLEN];
	char *argv[] = {"aheadfs", "-o", item, "src", "mnt"};
	int rc;

	snprintf(item, sizeof(item), "%s=%s", name, value);
	afs_opts_init(o);
	rc = afs_opts_parse(o, 5, argv, err, sizeof(err));
	afs_opts_free(o);
	return rc;
}

/* setxattr user.aheadfs.NAME VALUE as root; 0 or -EINVAL. */
static int set_tunable(struct fixture *fx, const char *name, const char *value)
{
	char xname[64];

	snprintf(xname, sizeof(xname), "user.aheadfs.%s", name);
	return afs_xattr_ahead_set(fx->a, &fx->root, xname, value,
				   strlen(value), 0, 0, 0);
}

static const char *const sizes[] = {
	"0",
	"4096",
	"8192B",
	"4K",
	"4k",
	"4KB",
	"4KiB",
	"512k",
	"1M",
	"1m",
	"4MiB",
	"4mib",
	"4MB",
	"1G",
	"1GiB",
	"1T",
	"",
	"K",
	"4Ki",
	"4 K",
	" 4K",
	"4K ",
	"-4K",
	"+4K",
	"1.5M",
	"0x1000",
	"4097",
	"123",
	"1025M",
	"2G",
	"4Q",
	"4MiBB",
	"18446744073709551616",
	"99999999999999999999999",
	"4194304K",
};

/* Every size is refused by both or accepted by both, as the same bytes. */
static void test_ra_max_same_grammar(void **state)
{
	struct fixture *fx = *state;
	unsigned int accepted = 0;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		struct afs_opts o;
		struct ra_tuning t;
		int cmd = parse_opt("ra_max", sizes[i], &o);
		int set = set_tunable(fx, "ra_max", sizes[i]);

		if (cmd != set)
			fail_msg("ra_max '%s': command line %d, setxattr %d",
				 sizes[i], cmd, set);
		if (cmd)
			continue;
		ra_engine_tuning(afs_data_engine(fx->a), &t);
		if (t.max_bytes != o.data.ra.max_bytes)
			fail_msg("ra_max '%s': command line %" PRIu64
				 ", setxattr %" PRIu64,
				 sizes[i], o.data.ra.max_bytes, t.max_bytes);
		accepted++;
	}
	/* both sides of the grammar were exercised */
	assert_true(accepted >= 10);
	assert_true(accepted < sizeof(sizes) / sizeof(*sizes) - 10);
}

/* The word settings: the same words, the same enum values. */
static void test_words_same_names(void **state)
{
	struct fixture *fx = *state;
	static const char *const words[] = {"on",  "off", "loose", "auto",
					    "ON",  "",	  "1",	   "true",
					    "yes", "on ", "Off"};
	static const char *const settings[] = {"context_ra", "stream_table"};

	for (size_t n = 0; n < 2; n++) {
		for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++) {
			struct afs_opts o;
			struct ra_tuning t;
			int cmd = parse_opt(settings[n], words[i], &o);
			int set = set_tunable(fx, settings[n], words[i]);

			if (cmd != set)
				fail_msg("%s '%s': command line %d, setxattr "
					 "%d",
					 settings[n], words[i], cmd, set);
			if (cmd)
				continue;
			ra_engine_tuning(afs_data_engine(fx->a), &t);
			if (n == 0)
				assert_int_equal(t.context, o.data.ra.context);
			else
				assert_int_equal(t.stream_table,
						 o.data.ra.stream_table);
		}
	}
}

/* All-zero is every setting's default; the name tables index the enums. */
static void test_defaults_are_zero(void **state)
{
	struct afs_opts o;

	assert_int_equal(parse_opt("ra_workers", "2", &o), 0);
	assert_int_equal(o.data.ra.stream_table, RA_STREAM_TABLE_ON);
	assert_int_equal(o.data.ra.context, RA_CONTEXT_CONSERVATIVE);
	assert_int_equal(o.data.ra.backing_io, RA_BACKING_IO_AUTO);
	assert_int_equal(o.data.read_mode, AFS_READ_KERNEL);
	assert_string_equal(ra_name_of(ra_stream_table_names, 0), "on");
	assert_string_equal(ra_name_of(ra_context_names, 0), "on");
	assert_string_equal(ra_name_of(ra_backing_io_names, 0), "auto");
	assert_string_equal(ra_name_of(afs_read_mode_names, 0), "kernel");
	assert_null(ra_name_of(afs_read_mode_names, 2));
	assert_int_equal(ra_name_parse(afs_read_mode_names, "direct"),
			 AFS_READ_DIRECT);
	assert_int_equal(ra_name_parse(ra_backing_io_names, "Direct"), -EINVAL);
	assert_int_equal(ra_workers_of(&(struct ra_config){0}),
			 RA_WORKERS_DEFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ra_max_same_grammar, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_words_same_names, setup,
						teardown),
		cmocka_unit_test(test_defaults_are_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
