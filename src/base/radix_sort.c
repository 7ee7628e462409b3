/* radix_sort.c - a stable LSD radix sort of records by a 64-bit key. */
#include "base/radix_sort.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t key_of(const unsigned char *rec, size_t key_off)
{
	uint64_t k;

	memcpy(&k, rec + key_off, sizeof(k));
	return k;
}

int radix_sort_u64(void *base, size_t n, size_t size, size_t key_off)
{
	unsigned char *from = base, *to, *tmp;
	uint64_t max = 0;

	if (n < 2)
		return 0;
	if (size && n > SIZE_MAX / size)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t k = key_of(from + i * size, key_off);

		if (k > max)
			max = k;
	}
	if (!(tmp = malloc(n * size)))
		return -ENOMEM;
	to = tmp;
	for (unsigned shift = 0; shift < 64 && (max >> shift); shift += 8) {
		size_t count[257] = { 0 };

		for (size_t i = 0; i < n; i++)
			count[((key_of(from + i * size, key_off) >> shift) & 0xff) + 1]++;
		if (count[1] == n) /* every key has 0 in this byte */
			continue;
		for (unsigned d = 1; d <= 256; d++)
			count[d] += count[d - 1];
		for (size_t i = 0; i < n; i++) {
			const unsigned char *r = from + i * size;

			memcpy(to + count[(key_of(r, key_off) >> shift) & 0xff]++ * size, r, size);
		}
		unsigned char *x = from;
		from = to;
		to = x;
	}
	if (from != (unsigned char *)base)
		memcpy(base, from, n * size);
	free(tmp);
	return 0;
}
