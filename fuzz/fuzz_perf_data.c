/* fuzz_perf_data.c - libFuzzer target for the perf.data reader: open the
 * bytes, read every event, feed them to a process table and unwind each
 * sample against it, as `stacksnap perf-script` does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stacksnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct stacksnap_ctx *ctx;
	static struct stacksnap_unwinder *uw;
	struct stacksnap_frame frames[64];
	struct stacksnap_perf_event ev;
	uint64_t *copy;

	if (!ctx) {
		ctx = stacksnap_ctx__new(NULL);
		STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = 64);
		uw = stacksnap_unwinder__new(&uo);
	}
	/* The reader wants 8-byte aligned bytes (records are u64 arrays). */
	copy = malloc(size + 8);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	for (int order = 0; order < 2; order++) {
		STACKSNAP_OPTS(stacksnap_perf_data_opts, po, .file_order = order);
		struct stacksnap_perf_data *pd =
			stacksnap_perf_data__open_mem(ctx, copy, size, &po);
		struct stacksnap_procs *procs = stacksnap_procs__new(ctx, NULL);
		int n = 0;

		while (pd && procs && n++ < 4096 &&
		       stacksnap_perf_data__next(pd, &ev) > 0) {
			if (ev.type != STACKSNAP_PERF_SAMPLE) {
				/* Mappings name files: keep the fuzzer off the
				 * filesystem, but exercise the table. */
				if (ev.type == STACKSNAP_PERF_MMAP)
					ev.map.path = NULL;
				stacksnap_procs__apply_perf_event(procs, &ev);
				continue;
			}
			if (!ev.regs_abi || !ev.regs)
				continue;
			STACKSNAP_OPTS(stacksnap_sample, s, .pid = ev.pid, .tid = ev.tid,
				       .perf_regs_mask = ev.regs_mask,
				       .perf_regs = ev.regs, .stack = ev.stack,
				       .stack_len = ev.stack_len);
			enum stacksnap_end end;
			stacksnap_procs__unwind_sample(procs, uw, &s, frames, 64, &end);
			for (uint64_t i = 0; i < ev.callchain_nr; i++)
				(void)ev.callchain[i];
		}
		stacksnap_procs__free(procs);
		stacksnap_perf_data__free(pd);
	}
	free(copy);
	return 0;
}
