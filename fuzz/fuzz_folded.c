/* fuzz_folded.c - libFuzzer target for the folded-stack reader
 * (stacksnap_stacks__add_folded, what `stacksnap diff` reads) and every
 * writer over what it read, as a differential flame graph against itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "stacksnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stacksnap_stacks *st = stacksnap_stacks__new(NULL);
	FILE *null = fopen("/dev/null", "w");

	if (st && null && stacksnap_stacks__add_folded(st, NULL, (const char *)data, size) >= 0) {
		STACKSNAP_OPTS(stacksnap_stacks_write_opts, wo, .base = st);

		for (int f = STACKSNAP_FORMAT_FOLDED; f <= STACKSNAP_FORMAT_SVG; f++)
			stacksnap_stacks__write(st, null, (enum stacksnap_stacks_format)f, NULL);
		stacksnap_stacks__write(st, null, STACKSNAP_FORMAT_SVG, &wo);
	}
	if (null)
		fclose(null);
	stacksnap_stacks__free(st);
	return 0;
}
