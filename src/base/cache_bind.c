/* cache_bind.c - cache entries bound to the files they were made from:
 * identity records and BLAKE2b-256 (RFC 7693) digests. */
#include "base/cache_bind.h"

#include <string.h>

#include "base/checksum.h"

static const uint64_t iv[8] = {
	0x6a09e667f3bcc908ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull,
	0xa54ff53a5f1d36f1ull, 0x510e527fade682d1ull, 0x9b05688c2b3e6c1full,
	0x1f83d9abfb41bd6bull, 0x5be0cd19137e2179ull,
};

/* Rounds 10 and 11 use rows 0 and 1 again. */
static const uint8_t sigma[10][16] = {
	{ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
	{ 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3 },
	{ 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4 },
	{ 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8 },
	{ 9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13 },
	{ 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9 },
	{ 12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11 },
	{ 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10 },
	{ 6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5 },
	{ 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0 },
};

static inline uint64_t rotr64(uint64_t x, unsigned n)
{
	return x >> n | x << (64 - n);
}

#define G(a, b, c, d, x, y) do {			\
		a = a + b + (x);			\
		d = rotr64(d ^ a, 32);			\
		c = c + d;				\
		b = rotr64(b ^ c, 24);			\
		a = a + b + (y);			\
		d = rotr64(d ^ a, 16);			\
		c = c + d;				\
		b = rotr64(b ^ c, 63);			\
	} while (0)

static void compress(uint64_t h[8], const uint8_t block[128], uint64_t t,
		     bool last)
{
	uint64_t v[16], m[16];

	for (int i = 0; i < 16; i++)
		m[i] = le64(block + 8 * i);
	for (int i = 0; i < 8; i++) {
		v[i] = h[i];
		v[i + 8] = iv[i];
	}
	v[12] ^= t; /* the high word of the 128-bit count: 0 below 2^64 bytes */
	if (last)
		v[14] = ~v[14];
#pragma GCC unroll 12
	for (int r = 0; r < 12; r++) {
		const uint8_t *s = sigma[r % 10];

		G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
		G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
		G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
		G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
		G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
		G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
		G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
		G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
	}
	for (int i = 0; i < 8; i++)
		h[i] ^= v[i] ^ v[i + 8];
}

void blake2b_256(const uint8_t *p, size_t len, uint8_t out[32])
{
	uint64_t h[8];
	uint8_t last[128] = { 0 };
	size_t done = 0;

	memcpy(h, iv, sizeof(h));
	h[0] ^= 0x01010000u ^ 32u; /* no key, 32-byte digest */
	for (; len - done > 128; done += 128)
		compress(h, p + done, done + 128, false);
	if (len > done)
		memcpy(last, p + done, len - done);
	compress(h, last, len, true);
	for (int i = 0; i < 4; i++)
		put_le64(out + 8 * i, h[i]);
}

enum { R_DEV = 0, R_INO = 8, R_SIZE = 16, R_MTIME = 24, R_CTIME = 32,
       R_DIGEST = 40 };
_Static_assert(R_DIGEST + 32 == CACHE_BIND_SIZE, "record layout");

void cache_bind__put(uint8_t rec[CACHE_BIND_SIZE], const struct cache_source *s)
{
	put_le64(rec + R_DEV, s->dev);
	put_le64(rec + R_INO, s->ino);
	put_le64(rec + R_SIZE, s->size);
	put_le64(rec + R_MTIME, s->mtime_ns);
	put_le64(rec + R_CTIME, s->ctime_ns);
	blake2b_256(s->bytes, s->len, rec + R_DIGEST);
}

enum cache_bind_match cache_bind__check(const uint8_t rec[CACHE_BIND_SIZE],
					const struct cache_source *s)
{
	uint8_t d[32];

	/* The change time cannot be set by a file's owner, and a file's
	 * identity is only ever its own: a file with these five values has
	 * the bytes the entry was made from (or was written in place by
	 * someone who may write the module itself). */
	if (s->ino && le64(rec + R_DEV) == s->dev && le64(rec + R_INO) == s->ino &&
	    le64(rec + R_SIZE) == s->size && le64(rec + R_MTIME) == s->mtime_ns &&
	    le64(rec + R_CTIME) == s->ctime_ns)
		return CACHE_BIND_SAME_FILE;
	blake2b_256(s->bytes, s->len, d);
	return memcmp(d, rec + R_DIGEST, 32) ? CACHE_BIND_OTHER
					     : CACHE_BIND_SAME_BYTES;
}
