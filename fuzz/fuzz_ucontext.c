/* fuzz_ucontext.c - libFuzzer target for the search of a stack copy for
 * the signal frame that moved a thread onto its alternate signal stack
 * (base/ucontext_regs.h: the copied stack's words are the target's, outside
 * bytes): the input's first 16 bytes are the copy's address and the
 * thread's sp, the rest the copy; any input is searched without reading
 * past it, and an interrupted sp found lies off the alternate stack that
 * the frame naming it holds. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/ucontext_regs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t base, sp, rsp;
	uint8_t *copy;
	size_t len;

	if (size < 16)
		return 0;
	memcpy(&base, data, 8);
	memcpy(&sp, data + 8, 8);
	len = size - 16;
	/* Its own allocation, exactly len bytes: a read past it is ASan's. */
	copy = malloc(len ? len : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 16, len);
	rsp = ucontext__altstack_interrupted_sp(copy, len, base, sp);
	if (rsp) {
		/* Some 16-aligned frame of the copy holds it, off its stack. */
		const size_t rsp_at = 8 + offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]);
		int found = 0;

		/* Frames start 8 past a 16-byte boundary of the target's
		 * addresses: at offsets of either parity of 8 in the copy,
		 * as base lies (stepping from offset 8 looked only at those
		 * of a base on a 16-byte boundary). */
		for (size_t off = (size_t)((8 - base % 16 + 16) % 16);
		     off + rsp_at + 8 <= len && !found; off += 16) {
			uint64_t v, ss_sp, ss_size;

			memcpy(&v, copy + off + rsp_at, 8);
			memcpy(&ss_sp, copy + off + 8 + offsetof(ucontext_t, uc_stack.ss_sp), 8);
			memcpy(&ss_size, copy + off + 8 + offsetof(ucontext_t, uc_stack.ss_size), 8);
			found = v == rsp && (rsp < ss_sp || rsp - ss_sp >= ss_size);
		}
		if (!found)
			abort();
	}
	free(copy);
	return 0;
}
