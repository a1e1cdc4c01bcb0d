/* pattern.h - the seeded byte pattern of the integration test programs.
 *
 * The 8-byte little-endian word at byte offset 8*w of a file with seed S
 * is mix(w ^ S), so any byte of any file can be checked without a copy of
 * the file, and a stale page (another seed, another offset) is seen.
 */
#ifndef AFS_TEST_PATTERN_H
#define AFS_TEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t afs_mix(uint64_t x)
{
	/* splitmix64 finalizer */
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

static inline uint8_t afs_pattern_byte(uint64_t seed, uint64_t off)
{
	return (uint8_t)(afs_mix((off / 8) ^ seed) >> (8 * (off % 8)));
}

/* @buf = the pattern of @seed over [@off, @off + @len). */
static inline void afs_pattern(uint8_t *buf, uint64_t seed, uint64_t off,
			       size_t len)
{
	size_t i = 0;

	for (; i < len && (off + i) % 8; i++)
		buf[i] = afs_pattern_byte(seed, off + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t v = afs_mix(((off + i) / 8) ^ seed);

		for (int b = 0; b < 8; b++)
			buf[i + b] = (uint8_t)(v >> (8 * b));
	}
	for (; i < len; i++)
		buf[i] = afs_pattern_byte(seed, off + i);
}

/* The index in @buf of the first byte that is not @seed's pattern at
 * @off + index, or -1 when all @len are. */
static inline long afs_pattern_mismatch(const uint8_t *buf, uint64_t seed,
					uint64_t off, size_t len)
{
	uint8_t want[4096];

	for (size_t done = 0; done < len;) {
		size_t n =
			len - done < sizeof(want) ? len - done : sizeof(want);

		afs_pattern(want, seed, off + done, n);
		if (memcmp(want, buf + done, n))
			for (size_t i = 0; i < n; i++)
				if (want[i] != buf[done + i])
					return (long)(done + i);
		done += n;
	}
	return -1;
}

#endif /* AFS_TEST_PATTERN_H */
