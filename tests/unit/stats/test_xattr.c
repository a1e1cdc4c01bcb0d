/* test_xattr.c - the user.aheadfs.* names (fs/stats) rendered from a
 * real cache and readahead engine: a temporary file on disk, pages read
 * through ra_sync_miss() the way the read path does, or inserted directly
 * where a test needs an exact set of cached pages.  Every value is parsed
 * with the JSON reader aheadfs-stat uses (fs/stats/json.h) and checked key
 * by key, in the documented order (docs/stats.md), against the figures
 * the cache and the engine report.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs/stats/xattr.h"
#include "data_internal.h" /* the counters set by hand below */
#include "fs/stats/json.h"
#include "../fixture/data_path.h"
#include "../read_check.h"

#define PAGE 4096u
#define FILE_SIZE (8u << 20) /* 2048 pages */
#define SHOWN_INO 4242
#define OWNER 1000

struct fixture {
	struct data_path dp; /* the file, its mount, its afs_fcache */
	struct stat dir_st;
	struct afs_xattr_target file, root, dir;
};

/* The test file's bytes: 0x5a up to FILE_SIZE, then a hole. */
static uint8_t file_byte(uint64_t off)
{
	return off < FILE_SIZE ? 0x5a : 0;
}

static int make_file(struct fixture *fx, uint64_t size)
{
	char buf[65536];

	data_path_tmpfile(&fx->dp, "afs-xattr");
	memset(buf, 0x5a, sizeof(buf));
	/* Data where the tests read; a sparse tail beyond FILE_SIZE. */
	for (uint64_t off = 0; off < size && off < FILE_SIZE;
	     off += sizeof(buf))
		if (pwrite(fx->dp.fd, buf, sizeof(buf), (off_t)off) !=
		    (ssize_t)sizeof(buf))
			return -EIO;
	if (ftruncate(fx->dp.fd, (off_t)size))
		return -errno;
	return fstat(fx->dp.fd, &fx->dp.st) ? -errno : 0;
}

static int setup_size(void **state, uint64_t size)
{
	struct afs_data_config cfg;
	struct fixture *fx = calloc(1, sizeof(*fx));

	cache_thread_online();
	assert_non_null(fx);
	assert_int_equal(make_file(fx, size), 0);
	assert_int_equal(stat("/", &fx->dir_st), 0);
	afs_data_config_init(&cfg);
	cfg.cache_size = 160u << 20;
	cfg.manual_reclaim = true;
	cfg.read_mode = AFS_READ_KERNEL;
	cfg.ra.max_bytes = 1u << 20;
	cfg.ra.workers = 2;
	data_path_mount(&fx->dp, &cfg, true);
	/* Counters the renderers must show as they are. */
	fx->dp.a->uncached_reads = 5;
	fx->dp.a->resident_reads = 7;
	fx->dp.a->resident_spliced = 2;
	fx->dp.a->revalidations = 6;
	fx->dp.fc->uncached_reads = 3;
	fx->dp.fc->resident_reads = 8;
	fx->dp.fc->resident_spliced = 1;
	fx->dp.fc->revalidations = 4;

	fx->file = (struct afs_xattr_target){.is_reg = true,
					     .shown_ino = SHOWN_INO,
					     .st = &fx->dp.st,
					     .fc = fx->dp.fc,
					     .passthrough_opens = 3};
	fx->root = (struct afs_xattr_target){
		.is_root = true, .shown_ino = 1, .st = &fx->dir_st};
	fx->root.passthrough.c.opens = 4; /* the adapter's snapshot */
	fx->dir = (struct afs_xattr_target){.shown_ino = 7, .st = &fx->dir_st};
	*state = fx;
	return 0;
}

static int setup(void **state)
{
	return setup_size(state, FILE_SIZE);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	data_path_close(&fx->dp);
	free(fx);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

/* Read pages [index, index + nr) as the read path does. */
static void test_read(struct fixture *fx, struct ra_state *st, uint64_t index,
		      uint64_t nr)
{
	assert_int_equal(test_read_check(fx->dp.a, fx->dp.fc, fx->dp.fd, st,
					 index, nr, file_byte),
			 0);
}

/* Make [start, start + nr) cached data pages (no backing I/O). */
static void insert_pages(struct fixture *fx, uint64_t start, uint64_t nr)
{
	struct cache_page *pages[256];
	unsigned int got;

	while (nr) {
		uint64_t n = nr < 256 ? nr : 256;

		assert_int_equal(cache_insert_range(fx->dp.fc->map, start, n,
						    CACHE_NO_MARK, 0, pages,
						    &got),
				 0);
		for (unsigned int i = 0; i < got; i++)
			cache_page_complete(pages[i], 0);
		start += n;
		nr -= n;
	}
}

/* getfattr: size query, then the data call with that size.  The value is
 * NUL-terminated in a malloc'd buffer; *@len its length. */
static char *get_value(struct fixture *fx, const struct afs_xattr_target *t,
		       const char *name, ssize_t *len)
{
	ssize_t size = afs_xattr_ahead_get(fx->dp.a, t, name, NULL, 0);
	char *buf;

	assert_true(size > 0);
	assert_int_equal(size % AFS_XATTR_ROUND, 0);
	assert_true(size <= AFS_XATTR_VALUE_MAX);
	buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	*len = afs_xattr_ahead_get(fx->dp.a, t, name, buf, (size_t)size);
	assert_true(*len > 0);
	assert_true(*len <= size);
	buf[*len] = '\0';
	return buf;
}

static struct json_doc *get_json(struct fixture *fx,
				 const struct afs_xattr_target *t,
				 const char *name, char **text)
{
	const char *err = NULL;
	size_t off = 0;
	ssize_t len;
	struct json_doc *doc;

	*text = get_value(fx, t, name, &len);
	doc = json_parse(*text, (size_t)len, &err, &off);
	if (!doc)
		fail_msg("%s: %s at %zu: %s", name, err, off, *text);
	return doc;
}

/* Type codes: i integer >= 0, f number, s string, o object, a array. */
struct key_spec {
	const char *key;
	char type;
};

/* @obj has exactly @spec's members, in that order, of those types. */
static void check_object(const struct json *obj, const struct key_spec *spec,
			 size_t n)
{
	const struct json *m;
	size_t i = 0;

	assert_non_null(obj);
	assert_int_equal(obj->type, JSON_OBJECT);
	for (m = obj->child; m; m = m->next, i++) {
		if (i >= n)
			fail_msg("extra member '%s'", m->key);
		if (strcmp(m->key, spec[i].key))
			fail_msg("member %zu is '%s', want '%s'", i, m->key,
				 spec[i].key);
		switch (spec[i].type) {
		case 'i':
			if (m->type != JSON_NUMBER || !m->is_int || m->i64 < 0)
				fail_msg("'%s' is not a counter", m->key);
			break;
		case 'f':
			assert_int_equal(m->type, JSON_NUMBER);
			break;
		case 's':
			assert_int_equal(m->type, JSON_STRING);
			break;
		case 'o':
			assert_int_equal(m->type, JSON_OBJECT);
			break;
		case 'a':
			assert_int_equal(m->type, JSON_ARRAY);
			break;
		}
	}
	assert_int_equal(i, n);
}

static int64_t ival(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	if (!v || v->type != JSON_NUMBER || !v->is_int)
		fail_msg("no integer '%s'", key);
	return v->i64;
}

static const char *sval(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	if (!v || v->type != JSON_STRING)
		fail_msg("no string '%s'", key);
	return v->str;
}

#define CHECK(obj, spec)                                                       \
	check_object((obj), (spec), sizeof(spec) / sizeof(spec[0]))

static const struct key_spec file_top[] = {
	{"file", 'o'},		 {"cache", 'o'},
	{"backing", 'o'},	 {"readahead", 'o'},
	{"streams", 'a'},	 {"uncached_reads", 'i'},
	{"resident_reads", 'i'}, {"resident_spliced", 'i'},
	{"random_around", 'i'},	 {"revalidations", 'i'},
};
static const struct key_spec file_file[] = {{"ino", 'i'},
					    {"size", 'i'},
					    {"pages", 'i'},
					    {"passthrough_opens", 'i'}};
static const struct key_spec file_cache[] = {
	{"cached_pages", 'i'}, {"history_pages", 'i'}, {"hits", 'i'},
	{"hit_bytes", 'i'},    {"misses", 'i'},	       {"inserted", 'i'},
	{"prefetched", 'i'},   {"evicted", 'i'},       {"waste", 'i'},
	{"thrash", 'i'},       {"errors", 'i'},	       {"invalidated", 'i'},
	{"to_history", 'i'},   {"enospc", 'i'},
};
static const struct key_spec file_backing[] = {
	{"io", 's'},	       {"reads", 'i'},	      {"bytes", 'i'},
	{"cached_reads", 'i'}, {"cached_bytes", 'i'}, {"amplification", 'f'}};
static const struct key_spec decisions[] = {
	{"initial", 'i'},	{"oversize", 'i'},	{"seq_miss", 'i'},
	{"context", 'i'},	{"random", 'i'},	{"async", 'i'},
	{"async_recover", 'i'}, {"async_giveup", 'i'},	{"stream_seq", 'i'},
	{"stream_ahead", 'i'},	{"stream_refill", 'i'}, {"stream_behind", 'i'},
	{"stream_async", 'i'},
};
#define RA_COMMON                                                              \
	{"sync", 'i'}, {"async", 'i'}, {"context", 'i'}, {"random", 'i'},      \
		{"stream", 'i'}, {"decisions", 'o'}, {"windows", 'i'},         \
		{"sync_pages", 'i'}, {"async_pages", 'i'}, {"queued", 'i'},    \
		{"queue_refused", 'i'}, {"enospc", 'i'}, {"thrash", 'i'},      \
		{"waste", 'i'}, {"errors", 'i'},                               \
	{                                                                      \
		"resident_skipped", 'i'                                        \
	}
static const struct key_spec file_ra[] = {
	RA_COMMON,
	{"max_window_pages", 'i'},
	{"stripe_pages", 'i'},
	{"advice", 's'},
};
static const struct key_spec stream_keys[] = {
	{"state", 's'}, {"start", 'i'},	  {"size", 'i'},   {"async_size", 'i'},
	{"cap", 'i'},	{"windows", 'i'}, {"thrash", 'i'}, {"waste", 'i'},
};
static const struct key_spec root_top[] = {
	{"version", 's'},
	{"uptime_s", 'i'},
	{"started", 's'},
	{"options", 'o'},
	{"cache", 'o'},
	{"memory", 'o'},
	{"backing", 'o'},
	{"readahead", 'o'},
	{"files", 'o'},
	{"warm", 'o'},
	{"watch", 'o'},
	{"writes", 'o'},
	{"passthrough", 'o'},
	{"transport", 'o'},
	{"uncached_reads", 'i'},
	{"resident_reads", 'i'},
	{"resident_spliced", 'i'},
	{"random_around", 'i'},
	{"revalidations", 'i'},
};
static const struct key_spec root_writes[] = {
	{"behind_pieces", 'i'},	 {"behind_bytes", 'i'},
	{"behind_skipped", 'i'}, {"behind_failed", 'i'},
	{"direct_writes", 'i'},	 {"direct_bytes", 'i'},
	{"direct_refused", 'i'},
};
static const struct key_spec root_passthrough[] = {
	{"mode", 's'},		 {"state", 's'},
	{"opens", 'i'},		 {"opens_cached", 'i'},
	{"opens_direct", 'i'},	 {"opens_resident", 'i'},
	{"opens_random", 'i'},	 {"fallback_mount", 'i'},
	{"fallback_inode", 'i'}, {"fallback_file", 'i'},
	{"fallback_setid", 'i'}, {"backing_files", 'i'},
};
static const struct key_spec root_files[] = {
	{"idle", 'i'},	       {"idle_max", 'i'},
	{"revived", 'i'},      {"revived_changed", 'i'},
	{"idle_dropped", 'i'},
};
static const struct key_spec root_warm[] = {
	{"pending", 'i'}, {"files", 'i'},  {"skipped", 'i'},
	{"bytes", 'i'},	  {"pauses", 'i'}, {"checkpoints", 'i'},
	{"refused", 'i'},
};
static const struct key_spec root_options[] = {
	{"read_mode", 's'},    {"write_mode", 's'},   {"write_behind", 'i'},
	{"write_direct", 'i'}, {"cache_size", 'i'},   {"ra_max", 'i'},
	{"ra_workers", 'i'},   {"stripe", 'i'},	      {"chunk", 'i'},
	{"context_ra", 's'},   {"stream_table", 's'}, {"backing_io", 's'},
};
static const struct key_spec root_cache[] = {
	{"budget_bytes", 'i'},
	{"used_bytes", 'i'},
	{"pending_free_bytes", 'i'},
	{"high_bytes", 'i'},
	{"low_bytes", 'i'},
	{"cached_pages", 'i'},
	{"history_pages", 'i'},
	{"small_pages", 'i'},
	{"main_pages", 'i'},
	{"hits", 'i'},
	{"misses", 'i'},
	{"evictions", 'i'},
	{"waste", 'i'},
	{"thrash", 'i'},
	{"promotions", 'i'},
	{"enospc", 'i'},
	{"alloc_waits", 'i'},
	{"reclaim_runs", 'i'},
	{"mappings", 'i'},
	{"tree_bytes", 'i'},
	{"page_overhead_bytes", 'i'},
};
static const struct key_spec root_memory[] = {
	{"cgroup_limit", 'i'},	   {"cgroup_unreclaimable", 'i'},
	{"pressure_shrinks", 'i'}, {"pressure_grows", 'i'},
	{"trimmed_bytes", 'i'},
};
static const struct key_spec root_backing[] = {
	{"reads", 'i'},		 {"bytes", 'i'},  {"cached_reads", 'i'},
	{"cached_bytes", 'i'},	 {"errors", 'i'}, {"opens_direct", 'i'},
	{"opens_buffered", 'i'},
};
static const struct key_spec root_ra[] = {
	RA_COMMON,
	{"files", 'i'},
	{"workers", 'i'},
	{"queue_depth", 'i'},
	{"workers_busy", 'i'},
	{"queue_dropped", 'i'},
	{"queue_late", 'i'},
};

/* The readahead object's sums against its decisions. */
static void check_ra_sums(const struct json *ra)
{
	const struct json *d = json_get(ra, "decisions");
	int64_t stream = ival(d, "stream_seq") + ival(d, "stream_ahead") +
			 ival(d, "stream_refill") + ival(d, "stream_behind");

	CHECK(d, decisions);
	assert_int_equal(ival(ra, "sync"),
			 ival(d, "initial") + ival(d, "oversize") +
				 ival(d, "seq_miss") + ival(d, "context") +
				 ival(d, "random") + stream);
	assert_int_equal(ival(ra, "async"), ival(d, "async") +
						    ival(d, "async_recover") +
						    ival(d, "stream_async"));
	assert_int_equal(ival(ra, "context"), ival(d, "context"));
	assert_int_equal(ival(ra, "random"), ival(d, "random"));
	assert_int_equal(ival(ra, "stream"), stream + ival(d, "stream_async"));
}

/* ------------------------------------------------------------------ */
/* Stats                                                                */

/* Two random reads, a sequential read of 2 MiB: every member of the file's
 * value, in order, with the figures the cache and engine report. */
static void test_file_stats(void **state)
{
	struct fixture *fx = *state;
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	struct ra_state st;
	const struct json *root, *c, *b, *ra, *s;
	struct json_doc *doc;
	char *text, want[64];

	/* The random reads first: after the stream they would be within its
	 * reach (stream_ahead).  Each leaves a candidate stream. */
	ra_state_init(&st);
	test_read(fx, &st, 1500, 1);
	test_read(fx, &st, 1900, 1);
	for (uint64_t i = 0; i < 512; i += 8)
		test_read(fx, &st, i, 8);
	ra_state_destroy(&st);
	test_settle(fx->dp.fc->map, 2048);
	cache_mapping_stats(fx->dp.fc->map, &ms);
	ra_file_stats(fx->dp.fc->raf, &rs);

	doc = get_json(fx, &fx->file, "user.aheadfs.stats", &text);
	root = doc->root;
	CHECK(root, file_top);
	CHECK(json_get(root, "file"), file_file);
	assert_int_equal(ival(json_get(root, "file"), "ino"), SHOWN_INO);
	assert_int_equal(ival(json_get(root, "file"), "size"), FILE_SIZE);
	assert_int_equal(ival(json_get(root, "file"), "pages"), 2048);
	assert_int_equal(ival(json_get(root, "file"), "passthrough_opens"), 3);

	c = json_get(root, "cache");
	CHECK(c, file_cache);
	assert_int_equal(ival(c, "cached_pages"), ms.cached_pages);
	assert_true(ival(c, "cached_pages") >= 514);
	assert_int_equal(ival(c, "hits"), 514);
	assert_int_equal(ival(c, "hit_bytes"), 514 * PAGE);
	assert_int_equal(ival(c, "inserted"), ms.inserted);
	assert_int_equal(ival(c, "prefetched"), ms.prefetched);
	assert_true(ival(c, "prefetched") > 0);
	assert_true(ival(c, "misses") >= 3);

	b = json_get(root, "backing");
	CHECK(b, file_backing);
	assert_true(!strcmp(sval(b, "io"), "direct") ||
		    !strcmp(sval(b, "io"), "buffered"));
	assert_int_equal(ival(b, "bytes"), rs.backing_bytes);
	assert_int_equal(ival(b, "reads"), rs.backing_reads);
	assert_true(ival(b, "bytes") >= 514 * PAGE);
	/* amplification: bytes / hit_bytes, three decimals */
	snprintf(want, sizeof(want), "\"amplification\": %.3f}",
		 (double)rs.backing_bytes / (514.0 * PAGE));
	assert_non_null(strstr(text, want));
	assert_true(json_get(b, "amplification")->num >= 1.0);

	ra = json_get(root, "readahead");
	CHECK(ra, file_ra);
	check_ra_sums(ra);
	assert_int_equal(ival(json_get(ra, "decisions"), "initial"), 1);
	assert_int_equal(ival(ra, "random"), 2);
	assert_true(ival(ra, "async") > 0);
	assert_int_equal(ival(ra, "windows"), rs.c.windows);
	assert_int_equal(ival(ra, "sync_pages"), rs.c.sync_pages);
	assert_int_equal(ival(ra, "async_pages"), rs.c.async_pages);
	assert_int_equal(ival(ra, "max_window_pages"), 256);
	assert_int_equal(ival(ra, "stripe_pages"), rs.stripe_pages);
	assert_string_equal(sval(ra, "advice"), "normal");

	s = json_get(root, "streams");
	assert_int_equal(s->count, rs.nr_streams);
	assert_true(s->count >= 1);
	for (const struct json *e = s->child; e; e = e->next) {
		CHECK(e, stream_keys);
		assert_true(!strcmp(sval(e, "state"), "active") ||
			    !strcmp(sval(e, "state"), "candidate"));
	}
	/* active streams are listed first; the sequential one is active */
	assert_string_equal(sval(s->child, "state"), "active");
	assert_true(ival(s->child, "windows") > 1);
	assert_int_equal(ival(root, "uncached_reads"), 3);
	assert_int_equal(ival(root, "resident_reads"), 8);
	assert_int_equal(ival(root, "resident_spliced"), 1);
	assert_int_equal(ival(root, "revalidations"), 4);
	json_doc_free(doc);
	free(text);
}

/* Nothing read yet: amplification 0 (nothing served), no streams. */
static void test_file_stats_fresh(void **state)
{
	struct fixture *fx = *state;
	struct json_doc *doc;
	char *text;

	doc = get_json(fx, &fx->file, "user.aheadfs.stats", &text);
	assert_non_null(strstr(text, "\"amplification\": 0.000}"));
	assert_int_equal(json_get(doc->root, "streams")->count, 0);
	assert_int_equal(ival(json_get(doc->root, "cache"), "cached_pages"), 0);
	json_doc_free(doc);
	free(text);
}

static void test_root_stats(void **state)
{
	struct fixture *fx = *state;
	struct cache_stats cs;
	struct ra_engine_stats es;
	const struct json *root, *o, *c, *ra;
	struct json_doc *doc;
	struct ra_state st;
	const char *started;
	char *text;

	ra_state_init(&st);
	test_read(fx, &st, 0, 64);
	ra_state_destroy(&st);
	test_settle(fx->dp.fc->map, 2048);
	cache_stats(fx->dp.a->cache, &cs);
	ra_engine_stats(fx->dp.a->ra, &es);

	doc = get_json(fx, &fx->root, "user.aheadfs.stats", &text);
	root = doc->root;
	CHECK(root, root_top);
	assert_string_equal(sval(root, "version"), AHEADFS_VERSION);
	assert_true(ival(root, "uptime_s") < 3600);
	started = sval(root, "started");
	/* 2026-11-29T23:50:00Z */
	assert_int_equal(strlen(started), 20);
	assert_int_equal(started[4], '-');
	assert_int_equal(started[10], 'T');
	assert_int_equal(started[19], 'Z');

	o = json_get(root, "options");
	CHECK(o, root_options);
	assert_string_equal(sval(o, "read_mode"), "kernel");
	assert_string_equal(sval(o, "write_mode"), "writethrough");
	assert_int_equal(ival(o, "cache_size"), 160u << 20);
	assert_int_equal(ival(o, "ra_max"), 1u << 20);
	assert_int_equal(ival(o, "ra_workers"), 2);
	assert_int_equal(ival(o, "stripe"), 0);
	assert_int_equal(ival(o, "chunk"), 0);
	assert_string_equal(sval(o, "context_ra"), "on");
	assert_string_equal(sval(o, "stream_table"), "on");
	assert_string_equal(sval(o, "backing_io"), "auto");

	c = json_get(root, "cache");
	CHECK(c, root_cache);
	assert_int_equal(ival(c, "budget_bytes"), cs.budget_bytes);
	/* the page data of cache_size: pages plus their descriptors */
	assert_int_equal(
		ival(c, "budget_bytes"),
		(160u << 20) / (PAGE + ival(c, "page_overhead_bytes")) * PAGE);
	assert_int_equal(ival(c, "cached_pages"), cs.cached_pages);
	assert_true(ival(c, "cached_pages") >= 64);
	assert_int_equal(ival(c, "hits"), 64);
	assert_int_equal(ival(c, "mappings"), 1);
	assert_true(ival(c, "high_bytes") > ival(c, "low_bytes"));
	assert_true(ival(c, "used_bytes") > 0);

	CHECK(json_get(root, "memory"), root_memory);
	CHECK(json_get(root, "writes"), root_writes);
	/* a data path no adapter set the names of */
	CHECK(json_get(root, "passthrough"), root_passthrough);
	assert_string_equal(sval(json_get(root, "passthrough"), "state"),
			    "off");
	assert_int_equal(ival(json_get(root, "passthrough"), "opens"), 4);
	CHECK(json_get(root, "backing"), root_backing);
	assert_int_equal(ival(json_get(root, "backing"), "bytes"),
			 es.backing_bytes);
	assert_int_equal(
		ival(json_get(root, "backing"), "opens_direct") +
			ival(json_get(root, "backing"), "opens_buffered"),
		1);

	ra = json_get(root, "readahead");
	CHECK(ra, root_ra);
	check_ra_sums(ra);
	assert_int_equal(ival(json_get(ra, "decisions"), "initial"), 1);
	assert_int_equal(ival(ra, "files"), 1);
	assert_int_equal(ival(ra, "workers"), 2);
	assert_int_equal(ival(ra, "queue_depth"), 0);
	CHECK(json_get(root, "files"), root_files);
	assert_int_equal(ival(json_get(root, "files"), "idle_max"),
			 AFS_IDLE_FILES_DEFAULT);
	CHECK(json_get(root, "warm"), root_warm);
	assert_int_equal(ival(root, "uncached_reads"), 5);
	assert_int_equal(ival(root, "resident_reads"), 7);
	assert_int_equal(ival(root, "resident_spliced"), 2);
	assert_int_equal(ival(root, "revalidations"), 6);
	json_doc_free(doc);
	free(text);
}

/* The size rule for every readable name: the size answer is the value's
 * length plus 512, rounded up to 256; that size works; one byte less than
 * the value is ERANGE. */
static void check_size_rule(struct fixture *fx,
			    const struct afs_xattr_target *t, const char *name)
{
	ssize_t size = afs_xattr_ahead_get(fx->dp.a, t, name, NULL, 0), len;
	char *buf = malloc(AFS_XATTR_VALUE_MAX);

	assert_non_null(buf);
	len = afs_xattr_ahead_get(fx->dp.a, t, name, buf, (size_t)size);
	assert_true(len > 0);
	assert_int_equal(size, (len + AFS_XATTR_SLACK + AFS_XATTR_ROUND - 1) /
				       AFS_XATTR_ROUND * AFS_XATTR_ROUND);
	assert_int_equal(
		afs_xattr_ahead_get(fx->dp.a, t, name, buf, (size_t)len), len);
	assert_int_equal(
		afs_xattr_ahead_get(fx->dp.a, t, name, buf, (size_t)len - 1),
		-ERANGE);
	/* a buffer larger than any value is fine */
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, t, name, buf,
					     AFS_XATTR_VALUE_MAX),
			 len);
	free(buf);
}

static void test_size_rule(void **state)
{
	struct fixture *fx = *state;
	struct ra_state st;

	ra_state_init(&st);
	test_read(fx, &st, 0, 100);
	ra_state_destroy(&st);
	test_settle(fx->dp.fc->map, 2048);
	check_size_rule(fx, &fx->file, "user.aheadfs.stats");
	check_size_rule(fx, &fx->file, "user.aheadfs.map");
	check_size_rule(fx, &fx->file, "user.aheadfs.advice");
	check_size_rule(fx, &fx->root, "user.aheadfs.stats");
	check_size_rule(fx, &fx->root, "user.aheadfs.ra_max");
	check_size_rule(fx, &fx->root, "user.aheadfs.context_ra");
	check_size_rule(fx, &fx->root, "user.aheadfs.stream_table");
}

/* ------------------------------------------------------------------ */
/* Map                                                                  */

static void test_map_runs(void **state)
{
	struct fixture *fx = *state;
	ssize_t len;
	char *v;

	v = get_value(fx, &fx->file, "user.aheadfs.map", &len);
	assert_string_equal(v, "{\"file_pages\": 2048, \"cached_pages\": 0, "
			       "\"pages_per_cell\": 1, \"runs\": []}");
	free(v);
	insert_pages(fx, 0, 4);
	insert_pages(fx, 10, 1);
	insert_pages(fx, 100, 28);
	insert_pages(fx, 2047, 1);
	/* pages past EOF are not part of the map */
	insert_pages(fx, 3000, 2);
	v = get_value(fx, &fx->file, "user.aheadfs.map", &len);
	assert_string_equal(v, "{\"file_pages\": 2048, \"cached_pages\": 34, "
			       "\"pages_per_cell\": 1, \"runs\": [[0, 4], "
			       "[10, 1], [100, 28], [2047, 1]]}");
	assert_int_equal(len, strlen(v));
	free(v);
	/* history entries are not cached data */
	assert_int_equal(cache_page_drop_to_history(fx->dp.fc->map, 100, 127),
			 28);
	v = get_value(fx, &fx->file, "user.aheadfs.map", &len);
	assert_string_equal(v, "{\"file_pages\": 2048, \"cached_pages\": 6, "
			       "\"pages_per_cell\": 1, \"runs\": [[0, 4], "
			       "[10, 1], [2047, 1]]}");
	free(v);
}

/* The cell digit rule, written from the contract. */
static char expect_digit(uint64_t cached, uint64_t pages)
{
	uint64_t d;

	if (cached == 0)
		return '0';
	if (cached == pages)
		return '8';
	d = (8 * cached + pages - 1) / pages; /* ceil(8 x fraction) */
	return (char)('0' + (d < 1 ? 1 : d > 7 ? 7 : d));
}

/* Parse a cells-form map and check every digit against @cached (a page
 * bitmap of @npages). */
static void check_cells(const char *text, size_t len, uint64_t npages,
			const uint8_t *cached, uint64_t want_k)
{
	struct json_doc *doc = json_parse(text, len, NULL, NULL);
	const struct json *cells;
	uint64_t k, ncells, total = 0;

	assert_non_null(doc);
	assert_int_equal(ival(doc->root, "file_pages"), npages);
	k = (uint64_t)ival(doc->root, "pages_per_cell");
	if (want_k)
		assert_int_equal(k, want_k);
	assert_null(json_get(doc->root, "runs"));
	cells = json_get(doc->root, "cells");
	assert_non_null(cells);
	assert_int_equal(cells->type, JSON_STRING);
	ncells = (npages + k - 1) / k;
	assert_int_equal(strlen(cells->str), ncells);
	for (uint64_t c = 0; c < ncells; c++) {
		uint64_t lo = c * k, hi = lo + k < npages ? lo + k : npages;
		uint64_t n = 0;

		for (uint64_t p = lo; p < hi; p++)
			n += cached[p];
		total += n;
		if (cells->str[c] != expect_digit(n, hi - lo))
			fail_msg("cell %llu: '%c', want '%c' (%llu of %llu)",
				 (unsigned long long)c, cells->str[c],
				 expect_digit(n, hi - lo),
				 (unsigned long long)n,
				 (unsigned long long)(hi - lo));
	}
	assert_int_equal(ival(doc->root, "cached_pages"), total);
	json_doc_free(doc);
}

#define SPARSE_PAGES 40000

/* A 40000-page file for cache_every_other(). */
static int setup_sparse(void **state)
{
	return setup_size(state, SPARSE_PAGES * (uint64_t)PAGE);
}

/* Cache every other page of the first 24000: 12000 runs do not fit the
 * runs form.  Return: the bitmap of the cached pages (free it). */
static uint8_t *cache_every_other(struct fixture *fx)
{
	uint8_t *cached = calloc(SPARSE_PAGES, 1);

	assert_non_null(cached);
	for (uint64_t p = 0; p < 24000; p += 2) {
		insert_pages(fx, p, 1);
		cached[p] = 1;
	}
	return cached;
}

/* Cells at one page per cell (the file is below 64000 pages). */
static void test_map_cells_per_page(void **state)
{
	struct fixture *fx = *state;
	uint8_t *cached = cache_every_other(fx);
	ssize_t len;
	char *v;

	v = get_value(fx, &fx->file, "user.aheadfs.map", &len);
	check_cells(v, (size_t)len, SPARSE_PAGES, cached, 1);
	free(v);
	free(cached);
}

/* A value that outgrew the caller's buffer since its size query comes at a
 * coarser resolution; below AFS_XATTR_MAP_MIN_BUF it is ERANGE. */
static void test_map_scaled_to_buffer(void **state)
{
	struct fixture *fx = *state;
	uint8_t *cached = cache_every_other(fx);
	char *buf = malloc(AFS_XATTR_VALUE_MAX);
	ssize_t len;

	assert_non_null(buf);
	len = afs_xattr_ahead_get(fx->dp.a, &fx->file, "user.aheadfs.map", buf,
				  20000);
	assert_true(len > 0 && len <= 20000);
	check_cells(buf, (size_t)len, SPARSE_PAGES, cached, 3);
	len = afs_xattr_ahead_get(fx->dp.a, &fx->file, "user.aheadfs.map", buf,
				  AFS_XATTR_MAP_MIN_BUF);
	assert_true(len > 0 && len <= AFS_XATTR_MAP_MIN_BUF);
	check_cells(buf, (size_t)len, SPARSE_PAGES, cached, 0);
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, &fx->file,
					     "user.aheadfs.map", buf,
					     AFS_XATTR_MAP_MIN_BUF - 1),
			 -ERANGE);
	free(buf);
	free(cached);
}

/* A 200001-page file: 4 pages per cell (50001 cells, the last one page),
 * with every fraction 0..4 of 4 over the first 32000 pages. */
static int setup_large(void **state)
{
	return setup_size(state, 200001ull * PAGE);
}

static void test_map_cells_scaled(void **state)
{
	struct fixture *fx = *state;
	uint64_t npages = 200001;
	uint8_t *cached = calloc(npages, 1);
	ssize_t len;
	char *v;

	assert_non_null(cached);
	for (uint64_t p = 0; p < 32000; p++) {
		if (p % 4 < (p / 4) % 5) {
			insert_pages(fx, p, 1);
			cached[p] = 1;
		}
	}
	insert_pages(fx, 200000, 1); /* the last, one-page cell: 8 */
	cached[200000] = 1;
	v = get_value(fx, &fx->file, "user.aheadfs.map", &len);
	check_cells(v, (size_t)len, npages, cached, 4);
	assert_non_null(strstr(v, "\"cells\": \"02468"));
	assert_int_equal(v[len - 3], '8');
	free(v);
	free(cached);
}

/* ------------------------------------------------------------------ */
/* Advice                                                               */

static void expect_word(struct fixture *fx, const struct afs_xattr_target *t,
			const char *name, const char *want)
{
	ssize_t len;
	char *v = get_value(fx, t, name, &len);

	assert_string_equal(v, want);
	free(v);
}

static int set(struct fixture *fx, const struct afs_xattr_target *t,
	       const char *name, const char *value, uid_t caller)
{
	return afs_xattr_ahead_set(fx->dp.a, t, name, value, strlen(value), 0,
				   caller, OWNER);
}

static void test_advice(void **state)
{
	struct fixture *fx = *state;
	struct cache_mapping_stats ms;
	struct ra_file_stats rs;
	const char *adv = "user.aheadfs.advice";

	expect_word(fx, &fx->file, adv, "normal");
	assert_int_equal(set(fx, &fx->file, adv, "sequential\n", 1234), 0);
	expect_word(fx, &fx->file, adv, "sequential");
	ra_file_stats(fx->dp.fc->raf, &rs);
	assert_int_equal(rs.max_window, 512); /* doubled */
	assert_int_equal(set(fx, &fx->file, adv, "random", 0), 0);
	expect_word(fx, &fx->file, adv, "random");

	/* bad values: EINVAL, the advice stays */
	assert_int_equal(set(fx, &fx->file, adv, "bogus", 0), -EINVAL);
	assert_int_equal(set(fx, &fx->file, adv, "", 0), -EINVAL);
	assert_int_equal(set(fx, &fx->file, adv, "normal\n\n", 0), -EINVAL);
	assert_int_equal(set(fx, &fx->file, adv, "Normal", 0), -EINVAL);
	assert_int_equal(afs_xattr_ahead_set(fx->dp.a, &fx->file, adv,
					     "normal\0x", 8, 0, 0, OWNER),
			 -EINVAL);
	assert_int_equal(afs_xattr_ahead_set(fx->dp.a, &fx->file, adv, "normal",
					     6, XATTR_CREATE, 0, OWNER),
			 -EEXIST);
	assert_int_equal(afs_xattr_ahead_set(fx->dp.a, &fx->file, adv, "normal",
					     6, 0x40, 0, OWNER),
			 -EINVAL);
	expect_word(fx, &fx->file, adv, "random");
	assert_int_equal(afs_xattr_ahead_set(fx->dp.a, &fx->file, adv, "normal",
					     6, XATTR_REPLACE, 0, OWNER),
			 0);
	expect_word(fx, &fx->file, adv, "normal");

	/* willneed reads the file ahead, dontneed drops it; neither
	 * replaces the advice in force */
	assert_int_equal(set(fx, &fx->file, adv, "willneed", 0), 0);
	test_settle(fx->dp.fc->map, 2048);
	cache_mapping_stats(fx->dp.fc->map, &ms);
	assert_int_equal(ms.cached_pages, 2048);
	expect_word(fx, &fx->file, adv, "normal");
	assert_int_equal(set(fx, &fx->file, adv, "dontneed", 0), 0);
	cache_mapping_stats(fx->dp.fc->map, &ms);
	assert_int_equal(ms.cached_pages, 0);
	expect_word(fx, &fx->file, adv, "normal");
}

/* ------------------------------------------------------------------ */
/* Tunables                                                             */

static void expect_tuning(struct fixture *fx, uint64_t max, const char *ctx,
			  const char *table)
{
	char want[32];

	snprintf(want, sizeof(want), "%llu", (unsigned long long)max);
	expect_word(fx, &fx->root, "user.aheadfs.ra_max", want);
	expect_word(fx, &fx->root, "user.aheadfs.context_ra", ctx);
	expect_word(fx, &fx->root, "user.aheadfs.stream_table", table);
}

static void test_tunable_permission(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(set(fx, &fx->root, "user.aheadfs.ra_max", "2M", 1001),
			 -EPERM);
	assert_int_equal(
		set(fx, &fx->root, "user.aheadfs.context_ra", "off", 1001),
		-EPERM);
	assert_int_equal(
		set(fx, &fx->root, "user.aheadfs.stream_table", "off", 1001),
		-EPERM);
	/* no permission comes before the value's check */
	assert_int_equal(set(fx, &fx->root, "user.aheadfs.ra_max", "bad", 1001),
			 -EPERM);
	expect_tuning(fx, 1u << 20, "on", "on");
	/* the mount's owner, and root */
	assert_int_equal(set(fx, &fx->root, "user.aheadfs.ra_max", "2M", OWNER),
			 0);
	assert_int_equal(
		set(fx, &fx->root, "user.aheadfs.context_ra", "off", 0), 0);
	expect_tuning(fx, 2u << 20, "off", "on");
}

static void test_tunable_bad_values(void **state)
{
	struct fixture *fx = *state;
	static const char *const bad_max[] = {
		"",
		"123",
		"4095",
		"2G",
		"1025M",
		"1.5M",
		"-4096",
		"+4096",
		" 4096",
		"4096 ",
		"4096x",
		"4K\n\n",
		"1MiB ",
		"1Mi",
		"K",
		"99999999999999999999999999",
		"18446744073709551616",
		"4194304K",
	};
	static const char *const bad_ctx[] = {
		"", "yes", "ON", "conservative", "on\n\n", "off "};
	static const char *const bad_table[] = {"", "yes", "1", "true", "Off"};

	for (size_t i = 0; i < sizeof(bad_max) / sizeof(*bad_max); i++)
		if (set(fx, &fx->root, "user.aheadfs.ra_max", bad_max[i], 0) !=
		    -EINVAL)
			fail_msg("ra_max '%s' accepted", bad_max[i]);
	for (size_t i = 0; i < sizeof(bad_ctx) / sizeof(*bad_ctx); i++)
		assert_int_equal(set(fx, &fx->root, "user.aheadfs.context_ra",
				     bad_ctx[i], 0),
				 -EINVAL);
	for (size_t i = 0; i < sizeof(bad_table) / sizeof(*bad_table); i++)
		assert_int_equal(set(fx, &fx->root, "user.aheadfs.stream_table",
				     bad_table[i], 0),
				 -EINVAL);
	expect_tuning(fx, 1u << 20, "on", "on");
}

/* The size grammar of -o ra_max= (ra_parse_size()): binary suffixes, either
 * case, with an optional B or iB. */
static void test_tunable_size_grammar(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *w;
		uint64_t bytes;
	} good[] = {
		{"1MiB", 1u << 20}, {"2mib", 2u << 20}, {"4MB", 4u << 20},
		{"8192B", 8192},    {"1G", 1u << 30},	{"0", 0},
		{"12k\n", 12288},
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		char want[24];

		assert_int_equal(
			set(fx, &fx->root, "user.aheadfs.ra_max", good[i].w, 0),
			0);
		snprintf(want, sizeof(want), "%" PRIu64, good[i].bytes);
		expect_word(fx, &fx->root, "user.aheadfs.ra_max", want);
	}
}

static void test_tunable_in_force(void **state)
{
	struct fixture *fx = *state;
	struct ra_file_stats rs;
	struct ra_engine_stats es;
	struct json_doc *doc;
	struct ra_state st;
	char *text;

	assert_int_equal(set(fx, &fx->root, "user.aheadfs.ra_max", "64K\n", 0),
			 0);
	assert_int_equal(
		set(fx, &fx->root, "user.aheadfs.context_ra", "loose", 0), 0);
	assert_int_equal(
		set(fx, &fx->root, "user.aheadfs.stream_table", "off\n", 0), 0);
	expect_tuning(fx, 65536, "loose", "off");
	doc = get_json(fx, &fx->root, "user.aheadfs.stats", &text);
	assert_int_equal(ival(json_get(doc->root, "options"), "ra_max"), 65536);
	assert_string_equal(sval(json_get(doc->root, "options"), "context_ra"),
			    "loose");
	assert_string_equal(
		sval(json_get(doc->root, "options"), "stream_table"), "off");
	json_doc_free(doc);
	free(text);

	/* the open file's next decisions use them: windows of at most 16
	 * pages, and no stream table */
	ra_state_init(&st);
	for (uint64_t i = 0; i < 256; i += 4)
		test_read(fx, &st, i, 4);
	ra_state_destroy(&st);
	test_settle(fx->dp.fc->map, 2048);
	ra_file_stats(fx->dp.fc->raf, &rs);
	assert_int_equal(rs.max_window, 16);
	for (int k = RA_KIND_STREAM_SEQ; k <= RA_KIND_STREAM_ASYNC; k++)
		assert_int_equal(rs.c.decisions[k], 0);
	assert_true(rs.c.decisions[RA_KIND_ASYNC] > 0);
	ra_engine_stats(fx->dp.a->ra, &es);
	/* 256 pages in windows of at most 16: at least 16 backing reads */
	assert_true(es.backing_reads >= 16);
	doc = get_json(fx, &fx->file, "user.aheadfs.stats", &text);
	assert_int_equal(
		ival(json_get(doc->root, "readahead"), "max_window_pages"), 16);
	json_doc_free(doc);
	free(text);

	/* 0: automatic again (1 MiB on a device without a stripe) */
	assert_int_equal(set(fx, &fx->root, "user.aheadfs.ra_max", "0", 0), 0);
	ra_file_stats(fx->dp.fc->raf, &rs);
	assert_int_equal(rs.max_window, rs.stripe_pages ? rs.max_window : 256);
	expect_word(fx, &fx->root, "user.aheadfs.ra_max", "0");
	assert_int_equal(set(fx, &fx->root, "user.aheadfs.ra_max", "1G", 0), 0);
	ra_file_stats(fx->dp.fc->raf, &rs);
	assert_int_equal(rs.max_window, 262144);
	assert_int_equal(set(fx, &fx->root, "user.aheadfs.ra_max", "4k", 0), 0);
	ra_file_stats(fx->dp.fc->raf, &rs);
	assert_int_equal(rs.max_window, 1);
}

/* ------------------------------------------------------------------ */
/* Names by kind of file, and listing                                   */

static void test_names(void **state)
{
	struct fixture *fx = *state;
	char buf[64];

	assert_true(afs_xattr_ours("user.aheadfs.stats"));
	assert_true(afs_xattr_ours("user.aheadfs."));
	assert_true(afs_xattr_ours("user.aheadfs.bogus"));
	assert_false(afs_xattr_ours("user.aheadfs"));
	assert_false(afs_xattr_ours("user.aheadfsx.stats"));
	assert_false(afs_xattr_ours("trusted.aheadfs.stats"));
	assert_false(afs_xattr_ours("user.other"));

	/* names that do not exist on that kind of file */
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, &fx->dir,
					     "user.aheadfs.stats", NULL, 0),
			 -ENODATA);
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, &fx->root,
					     "user.aheadfs.map", NULL, 0),
			 -ENODATA);
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, &fx->root,
					     "user.aheadfs.advice", buf,
					     sizeof(buf)),
			 -ENODATA);
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, &fx->file,
					     "user.aheadfs.ra_max", NULL, 0),
			 -ENODATA);
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, &fx->file,
					     "user.aheadfs.bogus", NULL, 0),
			 -ENODATA);
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, &fx->file,
					     "user.aheadfs.", NULL, 0),
			 -ENODATA);
	/* a too-small buffer */
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, &fx->file,
					     "user.aheadfs.stats", buf,
					     sizeof(buf)),
			 -ERANGE);
	assert_int_equal(afs_xattr_ahead_get(fx->dp.a, &fx->root,
					     "user.aheadfs.context_ra", buf, 1),
			 -ERANGE);

	/* setting */
	assert_int_equal(set(fx, &fx->file, "user.aheadfs.stats", "x", 0),
			 -EPERM);
	assert_int_equal(set(fx, &fx->root, "user.aheadfs.stats", "x", 0),
			 -EPERM);
	assert_int_equal(set(fx, &fx->file, "user.aheadfs.map", "x", 0),
			 -EPERM);
	assert_int_equal(set(fx, &fx->dir, "user.aheadfs.advice", "random", 0),
			 -ENOTSUP);
	assert_int_equal(set(fx, &fx->root, "user.aheadfs.advice", "random", 0),
			 -ENOTSUP);
	assert_int_equal(set(fx, &fx->file, "user.aheadfs.ra_max", "4K", 0),
			 -ENOTSUP);
	assert_int_equal(set(fx, &fx->root, "user.aheadfs.bogus", "1", 0),
			 -ENOTSUP);
	assert_int_equal(afs_xattr_ahead_set(fx->dp.a, &fx->root,
					     "user.aheadfs.ra_max", "4K", 2,
					     XATTR_CREATE, 0, OWNER),
			 -EEXIST);

	/* removing */
	assert_int_equal(
		afs_xattr_ahead_remove(&fx->file, "user.aheadfs.stats"),
		-EPERM);
	assert_int_equal(
		afs_xattr_ahead_remove(&fx->file, "user.aheadfs.advice"),
		-EPERM);
	assert_int_equal(
		afs_xattr_ahead_remove(&fx->root, "user.aheadfs.ra_max"),
		-EPERM);
	assert_int_equal(afs_xattr_ahead_remove(&fx->root, "user.aheadfs.map"),
			 -ENODATA);
	assert_int_equal(afs_xattr_ahead_remove(&fx->dir, "user.aheadfs.stats"),
			 -ENODATA);
	assert_int_equal(afs_xattr_ahead_remove(&fx->file, "user.aheadfs.x"),
			 -ENODATA);
	expect_tuning(fx, 1u << 20, "on", "on");
}

static size_t filter(char *list, size_t len)
{
	return afs_xattr_ahead_filter_list(list, len);
}

static void test_filter_list(void **state)
{
	char l1[] = "user.a\0user.aheadfs.stats\0security.selinux\0";
	char l2[] = "user.aheadfs.stats\0user.aheadfs.map\0";
	char l3[] = "user.aheadfs\0user.aheadfsx\0user.aheadfs.\0u\0";
	char l4[] = "user.b\0user.aheadfs.advice"; /* last name unterminated */
	char l5[] = "user.c\0user.d"; /* unterminated, kept */
	char l6[] = "user.aheadfs.stats\0\0user.x\0"; /* an empty name */
	char empty[1] = "";

	assert_int_equal(filter(empty, 0), 0);
	assert_int_equal(filter(l1, sizeof(l1) - 1), 24);
	assert_memory_equal(l1, "user.a\0security.selinux\0", 24);
	assert_int_equal(filter(l2, sizeof(l2) - 1), 0);
	assert_int_equal(filter(l3, sizeof(l3) - 1), 13 + 14 + 2);
	assert_memory_equal(l3, "user.aheadfs\0user.aheadfsx\0u\0", 29);
	assert_int_equal(filter(l4, sizeof(l4) - 1), 7);
	assert_memory_equal(l4, "user.b\0", 7);
	assert_int_equal(filter(l5, sizeof(l5) - 1), 13);
	assert_memory_equal(l5, "user.c\0user.d", 13);
	assert_int_equal(filter(l6, sizeof(l6) - 1), 8);
	assert_memory_equal(l6, "\0user.x\0", 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_file_stats, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_file_stats_fresh, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_root_stats, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_size_rule, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_map_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_cells_per_page,
						setup_sparse, teardown),
		cmocka_unit_test_setup_teardown(test_map_scaled_to_buffer,
						setup_sparse, teardown),
		cmocka_unit_test_setup_teardown(test_map_cells_scaled,
						setup_large, teardown),
		cmocka_unit_test_setup_teardown(test_advice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tunable_permission, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tunable_bad_values, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tunable_size_grammar,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_tunable_in_force, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_names, setup, teardown),
		cmocka_unit_test(test_filter_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
