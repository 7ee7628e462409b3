/* fuzz_analysis.c - libFuzzer target for the analysis stepper's dataflow
 * (it decodes the machine code of the target's files: outside bytes): any
 * bytes are analysed as a function within the bounds, and every query,
 * exact or as a return address, at every offset answers or says why not. */
#include <stdint.h>
#include <stdlib.h>

#include "unwind/unwind_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct analysis_fn *fn;
	struct analysis_result r;

	if (!size || analysis__function(data, 0x1000, 0x1000 + size, &fn))
		return 0;
	for (size_t off = 0; off <= size; off++)
		for (int exact = 0; exact < 2; exact++)
			if (analysis__query(fn, 0x1000 + off, exact, &r) &&
			    (r.why == ANALYSIS_WHY_NONE || r.why >= ANALYSIS_WHY_COUNT))
				abort();
	analysis__fn_free(fn);
	return 0;
}
