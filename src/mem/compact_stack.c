/* compact_stack.c - expanding a stack copy compacted in the kernel
 * (stacksnap.bpf.h's stacksnap_compact): per block of 64 words, a mask of
 * the words kept, then those words. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "mem/compact_stack.h"

int compact_stack__expand(const void *enc, size_t enc_len, size_t stack_len,
			  uint8_t *out)
{
	const uint8_t *p = enc, *end = p + enc_len;
	size_t words = stack_len / 8;

	if (stack_len % 8)
		return -EINVAL;
	for (size_t i = 0; i < words; i++)
		memcpy(out + i * 8, &(uint64_t){ COMPACT_STACK_DROPPED }, 8);
	for (size_t b = 0; b * 64 < words; b++) {
		uint64_t mask;

		if ((size_t)(end - p) < 8)
			return -EINVAL;
		memcpy(&mask, p, 8);
		p += 8;
		for (unsigned j = 0; j < 64 && mask; j++, mask >>= 1) {
			if (!(mask & 1))
				continue;
			if (b * 64 + j >= words || (size_t)(end - p) < 8)
				return -EINVAL;
			memcpy(out + (b * 64 + j) * 8, p, 8);
			p += 8;
		}
	}
	return p == end ? 0 : -EINVAL;
}
