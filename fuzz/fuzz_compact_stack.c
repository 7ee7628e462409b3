/* fuzz_compact_stack.c - libFuzzer target for the expansion of stack
 * copies compacted in the kernel: the first two bytes give the copy's
 * length in words, the rest is the encoding. */
#include <stdint.h>
#include <stdlib.h>

#include "mem/compact_stack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[65536];
	size_t words;

	if (size < 2)
		return 0;
	words = (size_t)(data[0] | data[1] << 8) % (sizeof(out) / 8 + 1);
	compact_stack__expand(data + 2, size - 2, words * 8, out);
	return 0;
}
