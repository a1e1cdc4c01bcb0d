/* json.h - a small JSON reader for aheadfs-stat.
 *
 * Parses one JSON text (RFC 8259: objects, arrays, strings, numbers, true,
 * false, null) into a document whose nodes all come from one arena, so the
 * whole tree is freed with json_doc_free().  Numbers are kept as double and, when they are
 * integers that fit, as int64 too (counters up to 2^63).  Strings are
 * decoded (escapes, \uXXXX to UTF-8); object member order is kept.
 *
 * Concurrency: no lock and no global state.  A document belongs to one
 * thread at a time (json_parse() builds it, json_doc_free() frees it;
 * lookups only read); separate documents are independent.
 */
#ifndef AHEADFS_JSON_H
#define AHEADFS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json {
	enum json_type type;
	double num;
	int64_t i64;
	bool is_int; /* num is an integer that fits in i64 */
	char *str; /* JSON_STRING: decoded, NUL-terminated */
	char *key; /* member name when this value sits in an object */
	struct json *child; /* first element or member */
	struct json *next; /* next sibling */
	size_t count; /* elements or members */
};

struct json_doc {
	struct json *root;
	struct json_arena_block *blocks; /* private */
};

/**
 * json_parse() - Parse @len bytes of @text.
 * @err: On failure, a static message naming what was wrong.
 * @err_off: On failure, the byte offset where parsing stopped.
 *
 * Trailing white space (the stats values are padded with it) is allowed;
 * anything else after the value is an error.
 * Context: Allocates; the result is freed with json_doc_free().
 * Return: The document, or NULL (malformed text or out of memory).
 */
struct json_doc *json_parse(const char *text, size_t len, const char **err,
			    size_t *err_off);

/** json_doc_free() - Free a document from json_parse(); NULL is ignored. */
void json_doc_free(struct json_doc *doc);

/**
 * json_get() - Member @key of object @obj.
 * Return: The value, or NULL if @obj is not an object or has no such member.
 */
const struct json *json_get(const struct json *obj, const char *key);

#endif /* AHEADFS_JSON_H */
