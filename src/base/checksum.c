/* checksum.c - the cache files' 64-bit checksum. */
#include "base/checksum.h"

uint64_t checksum64(const uint8_t *p, size_t len)
{
	uint64_t h[4] = { 0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull,
			  0x94d049bb133111ebull, 0x2545f4914f6cdd1dull };
	size_t i = 0;

	for (; i + 32 <= len; i += 32)
		for (int k = 0; k < 4; k++)
			h[k] = (h[k] ^ le64(p + i + 8 * k)) * 0x100000001b3ull;
	for (; i < len; i++)
		h[0] = (h[0] ^ p[i]) * 0x100000001b3ull;
	uint64_t x = h[0] ^ (h[1] << 1 | h[1] >> 63) ^ (h[2] << 2 | h[2] >> 62) ^
		     (h[3] << 3 | h[3] >> 61) ^ len;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return x;
}
