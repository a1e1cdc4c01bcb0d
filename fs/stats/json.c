/* json.c - recursive-descent JSON reader; see json.h. */
#include "fs/stats/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

/* All nodes and strings of one tree come from one chain of blocks. */
struct json_arena_block {
	struct json_arena_block *next;
	size_t used, size;
	max_align_t data[];
};

struct parser {
	const char *s, *end, *start;
	const char *err;
	struct json_arena_block *blocks;
	int depth;
};

static void *arena_alloc(struct parser *p, size_t n)
{
	struct json_arena_block *b = p->blocks;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!b || b->size - b->used < n) {
		size_t size = n > 16384 ? n : 16384;

		b = malloc(sizeof(*b) + size);
		if (!b) {
			p->err = "out of memory";
			return NULL;
		}
		b->size = size;
		b->used = 0;
		b->next = p->blocks;
		p->blocks = b;
	}
	void *r = (char *)b->data + b->used;
	b->used += n;
	return r;
}

static struct json *new_node(struct parser *p, enum json_type type)
{
	struct json *j = arena_alloc(p, sizeof(*j));

	if (j) {
		memset(j, 0, sizeof(*j));
		j->type = type;
	}
	return j;
}

static void skip_ws(struct parser *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' ||
				 *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool read_hex4(struct parser *p, unsigned *out)
{
	unsigned v = 0;

	if (p->end - p->s < 4)
		return false;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p->s[i]);

		if (h < 0)
			return false;
		v = v << 4 | (unsigned)h;
	}
	p->s += 4;
	*out = v;
	return true;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Called with p->s on the opening quote.  A decoded string is never longer
 * than its escaped form, so one allocation of the raw length suffices. */
static char *parse_string(struct parser *p)
{
	const char *q = ++p->s;

	while (q < p->end && *q != '"')
		q += (*q == '\\') ? 2 : 1;
	if (q >= p->end) {
		p->err = "unterminated string";
		return NULL;
	}
	char *out = arena_alloc(p, (size_t)(q - p->s) + 1);
	size_t n = 0;

	if (!out)
		return NULL;
	while (*p->s != '"') {
		unsigned char c = (unsigned char)*p->s++;

		if (c < 0x20) {
			p->err = "control character in string";
			return NULL;
		}
		if (c != '\\') {
			out[n++] = (char)c;
			continue;
		}
		c = (unsigned char)*p->s++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			out[n++] = (char)c;
			break;
		case 'b':
			out[n++] = '\b';
			break;
		case 'f':
			out[n++] = '\f';
			break;
		case 'n':
			out[n++] = '\n';
			break;
		case 'r':
			out[n++] = '\r';
			break;
		case 't':
			out[n++] = '\t';
			break;
		case 'u': {
			unsigned cp, lo;

			if (!read_hex4(p, &cp)) {
				p->err = "bad \\u escape";
				return NULL;
			}
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (p->end - p->s < 6 || p->s[0] != '\\' ||
				    p->s[1] != 'u') {
					p->err = "lone surrogate";
					return NULL;
				}
				p->s += 2;
				if (!read_hex4(p, &lo) || lo < 0xdc00 ||
				    lo >= 0xe000) {
					p->err = "bad surrogate pair";
					return NULL;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				     (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				p->err = "lone surrogate";
				return NULL;
			}
			n += put_utf8(out + n, cp);
			break;
		}
		default:
			p->err = "bad escape";
			return NULL;
		}
	}
	p->s++; /* closing quote */
	out[n] = '\0';
	return out;
}

static struct json *parse_number(struct parser *p)
{
	const char *q = p->s;

	/* Check the JSON grammar before strtod, which accepts more. */
	if (q < p->end && *q == '-')
		q++;
	if (q >= p->end || !(*q >= '0' && *q <= '9'))
		goto bad;
	if (*q == '0')
		q++;
	else
		while (q < p->end && *q >= '0' && *q <= '9')
			q++;
	bool integral = true;

	if (q < p->end && *q == '.') {
		integral = false;
		if (++q >= p->end || !(*q >= '0' && *q <= '9'))
			goto bad;
		while (q < p->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < p->end && (*q == 'e' || *q == 'E')) {
		integral = false;
		q++;
		if (q < p->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= p->end || !(*q >= '0' && *q <= '9'))
			goto bad;
		while (q < p->end && *q >= '0' && *q <= '9')
			q++;
	}

	char buf[64];
	size_t len = (size_t)(q - p->s);
	struct json *j;

	if (len >= sizeof(buf))
		goto bad;
	memcpy(buf, p->s, len);
	buf[len] = '\0';
	j = new_node(p, JSON_NUMBER);
	if (!j)
		return NULL;
	j->num = strtod(buf, NULL);
	if (integral) {
		errno = 0;
		long long v = strtoll(buf, NULL, 10);

		if (!errno) {
			j->i64 = v;
			j->is_int = true;
		}
	}
	p->s = q;
	return j;
bad:
	p->err = "bad number";
	return NULL;
}

static bool match_word(struct parser *p, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(p->end - p->s) < n || memcmp(p->s, w, n))
		return false;
	p->s += n;
	return true;
}

static struct json *parse_value(struct parser *p);

/* Parses the members or elements of a container after its opening bracket. */
static struct json *parse_container(struct parser *p, bool object)
{
	struct json *c = new_node(p, object ? JSON_OBJECT : JSON_ARRAY);
	struct json **tail;
	char close = object ? '}' : ']';

	if (!c)
		return NULL;
	if (++p->depth > JSON_MAX_DEPTH) {
		p->err = "nested too deeply";
		return NULL;
	}
	tail = &c->child;
	p->s++;
	skip_ws(p);
	if (p->s < p->end && *p->s == close) {
		p->s++;
		p->depth--;
		return c;
	}
	for (;;) {
		char *key = NULL;
		struct json *v;

		skip_ws(p);
		if (object) {
			if (p->s >= p->end || *p->s != '"') {
				p->err = "expected a member name";
				return NULL;
			}
			key = parse_string(p);
			if (!key)
				return NULL;
			skip_ws(p);
			if (p->s >= p->end || *p->s != ':') {
				p->err = "expected ':'";
				return NULL;
			}
			p->s++;
		}
		v = parse_value(p);
		if (!v)
			return NULL;
		v->key = key;
		*tail = v;
		tail = &v->next;
		c->count++;
		skip_ws(p);
		if (p->s < p->end && *p->s == ',') {
			p->s++;
			continue;
		}
		if (p->s < p->end && *p->s == close) {
			p->s++;
			p->depth--;
			return c;
		}
		p->err = object ? "expected ',' or '}'" : "expected ',' or ']'";
		return NULL;
	}
}

static struct json *parse_value(struct parser *p)
{
	struct json *j;

	skip_ws(p);
	if (p->s >= p->end) {
		p->err = "unexpected end of text";
		return NULL;
	}
	switch (*p->s) {
	case '{':
		return parse_container(p, true);
	case '[':
		return parse_container(p, false);
	case '"': {
		char *s = parse_string(p);

		if (!s)
			return NULL;
		j = new_node(p, JSON_STRING);
		if (j)
			j->str = s;
		return j;
	}
	case 't':
		if (match_word(p, "true"))
			return new_node(p, JSON_TRUE);
		break;
	case 'f':
		if (match_word(p, "false"))
			return new_node(p, JSON_FALSE);
		break;
	case 'n':
		if (match_word(p, "null"))
			return new_node(p, JSON_NULL);
		break;
	default:
		if (*p->s == '-' || (*p->s >= '0' && *p->s <= '9'))
			return parse_number(p);
	}
	p->err = "unexpected character";
	return NULL;
}

static void free_blocks(struct json_arena_block *b)
{
	while (b) {
		struct json_arena_block *next = b->next;

		free(b);
		b = next;
	}
}

struct json_doc *json_parse(const char *text, size_t len, const char **err,
			    size_t *err_off)
{
	struct parser p = {.s = text, .end = text + len, .start = text};
	struct json_doc *doc = malloc(sizeof(*doc));
	struct json *root = NULL;

	if (doc)
		root = parse_value(&p);
	if (root) {
		skip_ws(&p);
		if (p.s != p.end) {
			p.err = "text after the value";
			root = NULL;
		}
	}
	if (!root) {
		if (err)
			*err = p.err ? p.err : "out of memory";
		if (err_off)
			*err_off = (size_t)(p.s - p.start);
		free_blocks(p.blocks);
		free(doc);
		return NULL;
	}
	doc->root = root;
	doc->blocks = p.blocks;
	return doc;
}

void json_doc_free(struct json_doc *doc)
{
	if (doc) {
		free_blocks(doc->blocks);
		free(doc);
	}
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (const struct json *m = obj->child; m; m = m->next)
		if (!strcmp(m->key, key))
			return m;
	return NULL;
}
