/* py_merge.c - merges a thread's Python frames into its native frames:
 * each C-level call of the evaluation loop runs the Python frames up to
 * and including an entry frame, so each native frame of the loop is
 * replaced by those frames, in order. */
#include "runtime/python/python.h"

#include <string.h>

static void put(struct stacksnap_runtime_frame *out, size_t max, size_t n,
		const struct py_frame *f, size_t native_index)
{
	if (n >= max)
		return;
	memset(&out[n], 0, sizeof(out[n]));
	out[n].sz = sizeof(out[n]);
	out[n].runtime = STACKSNAP_RUNTIME_PYTHON;
	out[n].native_index = (uint32_t)native_index;
	out[n].function = f->function;
	out[n].file = f->file;
	out[n].line = f->line;
}

size_t py_merge(const struct py_frame *pf, size_t npf,
		const struct stacksnap_frame *native, size_t nnative,
		uint64_t eval_start, uint64_t eval_end,
		struct stacksnap_runtime_frame *out, size_t max)
{
	size_t p = 0, n = 0;

	for (size_t k = 0; k < nnative && p < npf; k++) {
		uint64_t pc = native[k].pc;

		if (!eval_start || pc < eval_start || pc > eval_end)
			continue;
		do
			put(out, max, n++, &pf[p], k);
		while (!pf[p++].entry && p < npf);
	}
	for (; p < npf; p++)
		put(out, max, n++, &pf[p], nnative);
	return n;
}
