/* test_json.c - the JSON reader behind aheadfs-stat. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fs/stats/json.h"

static struct json_doc *parse(const char *s)
{
	return json_parse(s, strlen(s), NULL, NULL);
}

static void assert_rejects(const char *s, const char *why)
{
	const char *err = NULL;
	size_t off = 0;

	assert_null(json_parse(s, strlen(s), &err, &off));
	assert_non_null(err);
	if (why)
		assert_string_equal(err, why);
}

static void test_stats_object(void **state)
{
	struct json_doc *d =
		parse("{\"cache\":{\"hits\":9007199254740993,\"ratio\":1.25},"
		      "\"streams\":[{\"start\":0},{\"start\":512}],\"mode\":"
		      "\"direct\","
		      "\"ok\":true,\"none\":null}   \n  ");
	const struct json *cache, *hits, *streams;

	assert_non_null(d);
	cache = json_get(d->root, "cache");
	hits = json_get(cache, "hits");
	assert_non_null(hits);
	assert_true(hits->is_int); /* exact beyond 2^53, unlike the double */
	assert_int_equal(hits->i64, 9007199254740993LL);
	assert_true(json_get(cache, "ratio")->num == 1.25);
	assert_false(json_get(cache, "ratio")->is_int);
	streams = json_get(d->root, "streams");
	assert_int_equal(streams->type, JSON_ARRAY);
	assert_int_equal(streams->count, 2);
	assert_int_equal(json_get(streams->child->next, "start")->i64, 512);
	assert_string_equal(json_get(d->root, "mode")->str, "direct");
	assert_int_equal(json_get(d->root, "ok")->type, JSON_TRUE);
	assert_int_equal(json_get(d->root, "none")->type, JSON_NULL);
	assert_null(json_get(d->root, "missing"));
	assert_null(json_get(hits, "x")); /* not an object */
	json_doc_free(d);
}

static void test_string_escapes(void **state)
{
	struct json_doc *d =
		parse("[\"a\\\"b\\\\c\\/\\n\\t\", \"\\u00e9\\u20ac\", "
		      "\"\\ud83d\\ude00\"]");
	const struct json *e;

	assert_non_null(d);
	e = d->root->child;
	assert_string_equal(e->str, "a\"b\\c/\n\t");
	assert_string_equal(e->next->str, "\xc3\xa9\xe2\x82\xac");
	assert_string_equal(e->next->next->str, "\xf0\x9f\x98\x80");
	json_doc_free(d);
}

static void test_numbers(void **state)
{
	struct json_doc *d = parse("[0, -7, 1e3, 2.5E-1, -0.5]");
	const struct json *e;

	assert_non_null(d);
	e = d->root->child;
	assert_true(e->is_int && e->i64 == 0);
	e = e->next;
	assert_true(e->is_int && e->i64 == -7);
	e = e->next;
	assert_false(e->is_int);
	assert_true(e->num == 1000);
	assert_true(e->next->num == 0.25);
	assert_true(e->next->next->num == -0.5);
	json_doc_free(d);
}

static void test_rejects_malformed(void **state)
{
	assert_rejects("", "unexpected end of text");
	assert_rejects("{\"a\":1,}", "expected a member name");
	assert_rejects("[1,2", "expected ',' or ']'");
	assert_rejects("{\"a\" 1}", "expected ':'");
	assert_rejects("01", "text after the value");
	assert_rejects("1.", "bad number");
	assert_rejects("-", "bad number");
	assert_rejects("\"abc", "unterminated string");
	assert_rejects("\"a\\qb\"", "bad escape");
	assert_rejects("\"\\ud800\"", "lone surrogate");
	assert_rejects("\"\\udc00\"", "lone surrogate");
	assert_rejects("\"a\x01\"", "control character in string");
	assert_rejects("tru", "unexpected character");
	assert_rejects("{} {}", "text after the value");
}

static void test_depth_limit(void **state)
{
	char deep[201] = {0};
	struct json_doc *d;

	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	assert_rejects(deep, "nested too deeply");
	/* 64 levels are fine. */
	memset(deep, 0, sizeof(deep));
	memset(deep, '[', 64);
	memset(deep + 64, ']', 64);
	d = parse(deep);
	assert_non_null(d);
	json_doc_free(d);
}

static void test_large_document(void **state)
{
	/* Many members: the arena grows past its first block. */
	char *s = malloc(200000);
	size_t n = 0;

	n += (size_t)sprintf(s + n, "{");
	for (int i = 0; i < 5000; i++)
		n += (size_t)sprintf(s + n, "%s\"k%d\":[%d,\"v%d\"]",
				     i ? "," : "", i, i, i);
	sprintf(s + n, "}");
	struct json_doc *d = parse(s);

	assert_non_null(d);
	assert_int_equal(d->root->count, 5000);
	assert_string_equal(json_get(d->root, "k4999")->child->next->str,
			    "v4999");
	json_doc_free(d);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_object),
		cmocka_unit_test(test_string_escapes),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_rejects_malformed),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_large_document),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
