/* state.c - the warm restart's state file format; see state.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/warm/state.h"

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= FNV_PRIME;
	}
	return h;
}

static uint64_t checksum(const uint8_t *hdr, const uint8_t *body, size_t n)
{
	return fnv1a(fnv1a(FNV_OFFSET, hdr, 32), body, n);
}

uint64_t afs_warm_checksum(const uint8_t *data, size_t len)
{
	return checksum(data, data + AFS_WARM_HDR_LEN, len - AFS_WARM_HDR_LEN);
}

static void put_le(uint8_t *p, uint64_t v, unsigned int bytes)
{
	for (unsigned int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Room for @n more bytes at the end of @e's buffer, or NULL (sticky). */
static uint8_t *enc_room(struct afs_warm_enc *e, size_t n)
{
	uint8_t *p;

	if (e->err)
		return NULL;
	if (e->len + n > AFS_WARM_MAX_BYTES) {
		e->err = -E2BIG;
		return NULL;
	}
	if (e->len + n > e->cap) {
		size_t cap = e->cap ? e->cap : 4096;

		while (cap < e->len + n)
			cap *= 2;
		p = realloc(e->buf, cap);
		if (!p) {
			e->err = -ENOMEM;
			return NULL;
		}
		e->buf = p;
		e->cap = cap;
	}
	p = e->buf + e->len;
	e->len += n;
	return p;
}

void afs_warm_enc_file(struct afs_warm_enc *e, const struct afs_warm_file *f)
{
	uint8_t *p;

	if (!e->len && !enc_room(e, AFS_WARM_HDR_LEN))
		return;
	if (e->nfiles >= AFS_WARM_MAX_FILES ||
	    f->nranges > AFS_WARM_MAX_RANGES) {
		e->err = e->err ? e->err : -E2BIG;
		return;
	}
	p = enc_room(e, AFS_WARM_REC_LEN +
				(size_t)f->nranges * AFS_WARM_RANGE_LEN);
	if (!p)
		return;
	put_le(p + 0, f->dev, 8);
	put_le(p + 8, f->ino, 8);
	put_le(p + 16, f->gen, 4);
	put_le(p + 20, f->nranges, 4);
	put_le(p + 24, f->size, 8);
	put_le(p + 32, (uint64_t)f->mtime_sec, 8);
	put_le(p + 40, f->mtime_nsec, 4);
	put_le(p + 44, f->ctime_nsec, 4);
	put_le(p + 48, (uint64_t)f->ctime_sec, 8);
	put_le(p + 56, 0, 8);
	p += AFS_WARM_REC_LEN;
	for (uint32_t i = 0; i < f->nranges; i++, p += AFS_WARM_RANGE_LEN) {
		put_le(p, f->ranges[i].first, 8);
		put_le(p + 8, f->ranges[i].count, 8);
	}
	e->nfiles++;
}

int afs_warm_enc_finish(struct afs_warm_enc *e)
{
	uint8_t *h;

	if (!e->len)
		enc_room(e, AFS_WARM_HDR_LEN);
	if (e->err) {
		free(e->buf);
		e->buf = NULL;
		e->len = e->cap = 0;
		return e->err;
	}
	h = e->buf;
	memcpy(h, AFS_WARM_MAGIC, 8);
	put_le(h + 8, AFS_WARM_VERSION, 4);
	put_le(h + 12, AFS_WARM_HDR_LEN, 4);
	put_le(h + 16, e->nfiles, 8);
	put_le(h + 24, e->len - AFS_WARM_HDR_LEN, 8);
	put_le(h + 32,
	       checksum(h, h + AFS_WARM_HDR_LEN, e->len - AFS_WARM_HDR_LEN), 8);
	return 0;
}

static int bad(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void afs_warm_map_free(struct afs_warm_map *m)
{
	free(m->files);
	free(m->ranges);
	memset(m, 0, sizeof(*m));
}

/* Pages of a file of @size bytes. */
static uint64_t pages_of(uint64_t size)
{
	return size / 4096 + (size % 4096 != 0);
}

/* The records of @body (@n bytes, checksum already checked), first pass:
 * check everything and count the ranges; second pass (@m's arrays
 * allocated): fill them. */
static int walk(const uint8_t *body, size_t n, uint64_t nfiles,
		struct afs_warm_map *m, uint64_t *nranges_out, char *err,
		size_t errlen)
{
	size_t off = 0;
	uint64_t total = 0;

	for (uint64_t i = 0; i < nfiles; i++) {
		const uint8_t *r = body + off;
		struct afs_warm_file f;
		uint64_t mt, ct, reserved, prev_end = 0, fpages;

		if (n - off < AFS_WARM_REC_LEN)
			return bad(err, errlen,
				   "file record %llu is truncated (offset "
				   "%zu)",
				   (unsigned long long)i,
				   off + AFS_WARM_HDR_LEN);
		f.dev = get_le(r, 8);
		f.ino = get_le(r + 8, 8);
		f.gen = (uint32_t)get_le(r + 16, 4);
		f.nranges = (uint32_t)get_le(r + 20, 4);
		f.size = get_le(r + 24, 8);
		mt = get_le(r + 32, 8);
		f.mtime_nsec = (uint32_t)get_le(r + 40, 4);
		f.ctime_nsec = (uint32_t)get_le(r + 44, 4);
		ct = get_le(r + 48, 8);
		reserved = get_le(r + 56, 8);
		memcpy(&f.mtime_sec, &mt, 8);
		memcpy(&f.ctime_sec, &ct, 8);
		off += AFS_WARM_REC_LEN;
		if (reserved || f.mtime_nsec >= 1000000000u ||
		    f.ctime_nsec >= 1000000000u)
			return bad(err, errlen,
				   "file record %llu: bad timestamps or "
				   "reserved field",
				   (unsigned long long)i);
		if (f.nranges > AFS_WARM_MAX_RANGES ||
		    f.nranges > (n - off) / AFS_WARM_RANGE_LEN)
			return bad(err, errlen,
				   "file record %llu: %u ranges do not fit "
				   "the file (or exceed %u)",
				   (unsigned long long)i, f.nranges,
				   AFS_WARM_MAX_RANGES);
		fpages = pages_of(f.size);
		if (fpages > AFS_WARM_PAGE_LIMIT)
			return bad(err, errlen,
				   "file record %llu: size %llu too large",
				   (unsigned long long)i,
				   (unsigned long long)f.size);
		for (uint32_t k = 0; k < f.nranges; k++) {
			const uint8_t *q = body + off;
			uint64_t first = get_le(q, 8), count = get_le(q + 8, 8);

			off += AFS_WARM_RANGE_LEN;
			if (!count || first < prev_end || first >= fpages ||
			    count > fpages - first)
				return bad(err, errlen,
					   "file record %llu: range %u "
					   "[%llu, +%llu) is empty, out of "
					   "order or past the file's %llu "
					   "pages",
					   (unsigned long long)i, k,
					   (unsigned long long)first,
					   (unsigned long long)count,
					   (unsigned long long)fpages);
			prev_end = first + count;
			if (m) {
				m->ranges[total + k].first = first;
				m->ranges[total + k].count = count;
				m->pages += count;
			}
		}
		if (m) {
			f.ranges = m->ranges + total;
			m->files[i] = f;
		}
		total += f.nranges;
	}
	if (off != n)
		return bad(err, errlen,
			   "%zu bytes of garbage after the last record",
			   n - off);
	*nranges_out = total;
	return 0;
}

int afs_warm_parse(const uint8_t *data, size_t len, struct afs_warm_map *out,
		   char *err, size_t errlen)
{
	uint64_t version, hdr_len, nfiles, body_len, sum, nranges;
	struct afs_warm_map m = {0};
	int rc;

	memset(out, 0, sizeof(*out));
	if (len < AFS_WARM_HDR_LEN)
		return bad(err, errlen, "truncated: %zu bytes, no header", len);
	if (memcmp(data, AFS_WARM_MAGIC, 8))
		return bad(err, errlen, "not a state file (bad magic)");
	version = get_le(data + 8, 4);
	hdr_len = get_le(data + 12, 4);
	nfiles = get_le(data + 16, 8);
	body_len = get_le(data + 24, 8);
	sum = get_le(data + 32, 8);
	if (version != AFS_WARM_VERSION)
		return bad(err, errlen, "version %llu, this aheadfs reads %u",
			   (unsigned long long)version, AFS_WARM_VERSION);
	if (hdr_len != AFS_WARM_HDR_LEN)
		return bad(err, errlen, "bad header length %llu",
			   (unsigned long long)hdr_len);
	if (len > AFS_WARM_MAX_BYTES)
		return bad(err, errlen, "%zu bytes, more than the %u allowed",
			   len, AFS_WARM_MAX_BYTES);
	if (body_len != len - AFS_WARM_HDR_LEN)
		return bad(err, errlen,
			   "truncated or padded: the header says %llu bytes "
			   "follow, %zu do",
			   (unsigned long long)body_len,
			   len - AFS_WARM_HDR_LEN);
	if (checksum(data, data + AFS_WARM_HDR_LEN, body_len) != sum)
		return bad(err, errlen, "checksum mismatch (corrupted)");
	if (nfiles > AFS_WARM_MAX_FILES || nfiles > body_len / AFS_WARM_REC_LEN)
		return bad(err, errlen, "%llu file records cannot fit",
			   (unsigned long long)nfiles);
	rc = walk(data + AFS_WARM_HDR_LEN, body_len, nfiles, NULL, &nranges,
		  err, errlen);
	if (rc)
		return rc;
	m.nfiles = nfiles;
	m.files = calloc(nfiles ? nfiles : 1, sizeof(*m.files));
	m.ranges = calloc(nranges ? nranges : 1, sizeof(*m.ranges));
	if (!m.files || !m.ranges) {
		afs_warm_map_free(&m);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = walk(data + AFS_WARM_HDR_LEN, body_len, nfiles, &m, &nranges, err,
		  errlen);
	if (rc) {
		afs_warm_map_free(&m);
		return rc;
	}
	*out = m;
	return 0;
}
