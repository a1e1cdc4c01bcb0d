/* state.h - the warm restart's state file (-o warm_state=PATH): which
 * ranges of which backing files were in aheadfs's cache, by identity.
 *
 * Owns: the file format -- its encoder and its parser -- and nothing else
 * (no I/O: warm.c reads and writes the bytes).  The parser takes untrusted
 * input: every length and count is checked against what is left, against
 * the limits below and against the file's own size before it is used; a
 * malformed, truncated or hostile file is refused with one line saying why
 * and nothing of it is kept.  tests/fuzz/fuzz_warm.c fuzzes it.
 *
 * Format, version 1, every integer little-endian:
 *
 *   header (40 bytes)
 *     magic     8  "AHFSWARM"
 *     version   u32  1
 *     hdr_len   u32  40
 *     nfiles    u64  file records that follow
 *     body_len  u64  bytes after the header (the file is exactly
 *                    hdr_len + body_len bytes)
 *     checksum  u64  FNV-1a 64 of the header's first 32 bytes, then of
 *                    the body
 *   nfiles records, each
 *     dev u64, ino u64, gen u32, nranges u32, size u64,
 *     mtime_sec i64, mtime_nsec u32, ctime_nsec u32, ctime_sec i64,
 *     reserved u64 (0)                                        (64 bytes)
 *     nranges x {first u64, count u64}: pages of 4 KiB, count >= 1,
 *     ascending, not overlapping, within the file's size
 *
 * Concurrency: none; pure functions on the caller's buffers.
 */
#ifndef AFS_WARM_STATE_H
#define AFS_WARM_STATE_H

#include <stddef.h>
#include <stdint.h>

#define AFS_WARM_MAGIC "AHFSWARM"
#define AFS_WARM_VERSION 1u
#define AFS_WARM_HDR_LEN 40u
#define AFS_WARM_REC_LEN 64u
#define AFS_WARM_RANGE_LEN 16u
/* Limits the parser enforces (and the writer keeps to). */
#define AFS_WARM_MAX_BYTES (64u << 20) /* the whole state file */
#define AFS_WARM_MAX_FILES (1u << 20)
#define AFS_WARM_MAX_RANGES (1u << 16) /* per file */
/* The largest page index + 1 a range may reach (2^52: cache/'s limit). */
#define AFS_WARM_PAGE_LIMIT (UINT64_C(1) << 52)

struct afs_warm_range {
	uint64_t first, count; /* pages */
};

/* One file of the map: the identity its ranges were cached under. */
struct afs_warm_file {
	uint64_t dev, ino;
	uint32_t gen;
	uint64_t size;
	int64_t mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
	uint32_t nranges;
	const struct afs_warm_range *ranges; /* into the map's array */
};

/* A parsed state file. */
struct afs_warm_map {
	size_t nfiles;
	struct afs_warm_file *files;
	struct afs_warm_range *ranges; /* every file's, in order */
	uint64_t pages; /* the ranges' pages, summed */
};

/* The encoder's growing buffer; zero-initialise, then afs_warm_enc_*(). */
struct afs_warm_enc {
	uint8_t *buf;
	size_t len, cap;
	uint64_t nfiles;
	int err; /* sticky: -ENOMEM, -E2BIG past the limits */
};

/** afs_warm_enc_file() - Append @f with @f->nranges ranges (valid ones:
 * afs_warm_parse()'s rules).  Context: pure; allocates. */
void afs_warm_enc_file(struct afs_warm_enc *e, const struct afs_warm_file *f);

/**
 * afs_warm_enc_finish() - Write the header (the buffer's first 40 bytes)
 * over the records appended so far.
 * Return: 0 and the file's bytes in e->buf (e->len of them; free() it),
 * or the sticky error (the buffer is freed).
 */
int afs_warm_enc_finish(struct afs_warm_enc *e);

/**
 * afs_warm_parse() - Parse and check @len bytes of a state file.
 * @err: One line on failure (why, and where).
 * Return: 0 and *@out (afs_warm_map_free()), -EINVAL for a malformed file
 * (nothing kept), -ENOMEM.
 */
int afs_warm_parse(const uint8_t *data, size_t len, struct afs_warm_map *out,
		   char *err, size_t errlen);

/**
 * afs_warm_checksum() - The checksum field a state file of @len bytes
 * (@len >= AFS_WARM_HDR_LEN) must carry: the fuzz target patches it in so
 * that mutations reach the records.  Context: pure.
 */
uint64_t afs_warm_checksum(const uint8_t *data, size_t len);

/** afs_warm_map_free() - Free what afs_warm_parse() filled. */
void afs_warm_map_free(struct afs_warm_map *m);

#endif /* AFS_WARM_STATE_H */
