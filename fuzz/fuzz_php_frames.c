/* fuzz_php_frames.c - libFuzzer target for the PHP frame reader over
 * corrupt memory: the input is the target's memory at BASE, read through
 * a copy source, with executor_globals at BASE (PHP 8.2's layout; the
 * VM stack page, the zend_execute_data chain, functions, class entries,
 * zend_strings and opcodes wherever the input's pointers say). Capture,
 * resolve and merge must stay within their bounds and never read outside
 * the input. Seeds: fuzz/corpus/fuzz_php_frames (the image of
 * tests/unit/test_php.c, written with PHP_SEED_OUT). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/php/php.h"
#include "stacksnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x100000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct php_runtime rt = { 0 };
	struct php_capture cap = { 0 };
	struct php_resolver res;
	struct stacksnap_mem *mem;

	rt.found = true;
	rt.layout = php_layout__find("8.2.36");
	rt.eg = BASE;
	rt.exec_start = 0x1000;
	rt.exec_end = 0x2000;
	mem = stacksnap_mem__new_copy(data, size, BASE);
	if (!mem)
		return 0;
	if (php_capture__take(&rt, mem, &cap) == 0) {
		struct stacksnap_frame native[4] = {
			{ .pc = 0x10 }, { .pc = 0x1001 }, { .pc = 0x20 },
			{ .pc = 0x1002 },
		};
		struct stacksnap_runtime_frame out[64];
		struct php_frame *fr;
		size_t n, m;

		if (cap.nframes > PHP_MAX_FRAMES)
			abort();
		php_resolver__init(&res, &rt, mem);
		if (php_resolve(&res, &cap, &fr, &n) == 0) {
			const uint64_t exec[1][2] = { { rt.exec_start, rt.exec_end } };

			m = php_merge(fr, n, native, 4, exec, 1, out, 64);
			if (m > n)
				abort();
			for (size_t k = 0; k < m && k < 64; k++)
				if (!out[k].function || out[k].native_index > 4 ||
				    (!out[k].file && out[k].line))
					abort();
			free(fr);
		}
		php_resolver__free(&res);
	}
	php_capture__free(&cap);
	stacksnap_mem__free(mem);
	return 0;
}
