/* checksum.h - the 64-bit checksum of the cache file formats
 * (docs/table-cache-format.md describes it; the symbol cache uses it too). */
#ifndef SS_BASE_CHECKSUM_H
#define SS_BASE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* Four independent multiply-xor lanes over 8-byte little-endian words,
 * the tail bytes folded into lane 0, then a final mix with len. Detects
 * truncation and corruption; trust comes from the ownership rules. */
uint64_t checksum64(const uint8_t *p, size_t len);

static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

#endif
