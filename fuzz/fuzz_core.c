/* fuzz_core.c - libFuzzer target for the ELF core reader: program headers,
 * notes (NT_PRSTATUS, NT_PRPSINFO, NT_AUXV, NT_FILE), build-ids read from
 * the dumped memory, then every thread unwound as `stacksnap --core` does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "saved/readers.h"
#include "stacksnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fresh context per input, no cache carried over; a sysroot and debug
 * directories that do not exist keep module lookups off the filesystem
 * (the engine's ELF and CFI readers have their own fuzz targets). */
static struct stacksnap_ctx *fuzz_ctx(void)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, co, .debug_dirs = "/nonexistent",
		       .sysroot = "/nonexistent");

	return stacksnap_ctx__new(&co);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct stacksnap_unwinder *uw;
	struct stacksnap_frame frames[64];
	enum stacksnap_end end;
	struct stacksnap_ctx *ctx;
	struct stacksnap_saved *s;
	struct stacksnap_mem *mem;

	if (!uw) {
		STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = 64);
		uw = stacksnap_unwinder__new(&uo);
	}
	ctx = fuzz_ctx();
	if (!ctx)
		return 0;
	s = core_reader__open_mem(ctx, data, size);
	mem = stacksnap_mem__new_copy(NULL, 0, 0);
	if (s && mem && stacksnap_saved__memory(s))
		stacksnap_mem__set_fallback(mem, stacksnap_saved__memory(s));
	for (size_t i = 0; s && mem && i < stacksnap_saved__thread_count(s); i++) {
		const struct stacksnap_thread *th = stacksnap_saved__thread(s, i);

		stacksnap_mem__set_copy(mem, th->stack, th->stack ? th->stack_len : 0,
					th->stack_base);
		stacksnap_unwind(uw, stacksnap_saved__addrspace(s), &th->regs, mem,
				 frames, 64, &end);
	}
	stacksnap_mem__free(mem);
	stacksnap_saved__free(s);
	stacksnap_ctx__free(ctx);
	return 0;
}
