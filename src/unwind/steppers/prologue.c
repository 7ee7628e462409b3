/* prologue.c - the frame-pointer stepper's helper (StackwalkerAPI's
 * FrameFuncHelper): classifies a function's frame by decoding its first
 * instructions (push %rbp; mov %rsp,%rbp, after an optional endbr64) and
 * says how far the frame is set up at a given address, so that a function
 * stopped before or inside its prologue, or at its ret, unwinds right. */
#define _GNU_SOURCE
#include <string.h>

#include "symbolize/symbolize.h"
#include "unwind/unwind_internal.h"

#define PROLOGUE_BYTES 24
#define MOV_SEARCH 12 /* bytes after the push where the mov may be */

int prologue__classify(struct stacksnap_ctx *ctx, struct module *mod,
		       uint64_t vaddr, enum prologue_kind *kind,
		       enum prologue_state *state)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint8_t c[PROLOGUE_BYTES], at;
	uint64_t start = 0, off;
	unsigned i = 0, push_end = 0, mov_end = 0;
	struct symtab *st = module__symtab(ctx, mod);

	*kind = PROLOGUE_UNKNOWN;
	*state = PROLOGUE_SET;
	if (!st || !symtab__lookup(st, vaddr, 1, &start) || vaddr < start ||
	    module__read_code(mod, start, c, sizeof(c)) ||
	    module__read_code(mod, vaddr, &at, 1))
		return -1;
	off = vaddr - start;
	if (!memcmp(c, endbr64, sizeof(endbr64)))
		i = sizeof(endbr64);
	if (c[i] == 0x55) { /* push %rbp */
		push_end = i + 1;
		/* mov %rsp,%rbp in either encoding, right after the push or a
		 * few bytes later (gcc -O2 schedules argument set-up between;
		 * such instructions do not move rsp). */
		for (unsigned k = push_end; !mov_end && k + 3 <= push_end + MOV_SEARCH; k++)
			if (c[k] == 0x48 && ((c[k + 1] == 0x89 && c[k + 2] == 0xe5) ||
					     (c[k + 1] == 0x8b && c[k + 2] == 0xec)))
				mov_end = k + 3;
		*kind = mov_end ? PROLOGUE_STANDARD : PROLOGUE_SAVEFP_ONLY;
	} else {
		*kind = PROLOGUE_NO_FRAME;
	}
	/* At a ret, whatever the function did is undone: the return address
	 * is at rsp. */
	if (at == 0xc3 || off < (push_end ? push_end : i + 1))
		*state = PROLOGUE_UNSET;
	else if (push_end && (off < mov_end || (!mov_end && off == push_end)))
		*state = PROLOGUE_HALFSET;
	else if (*kind == PROLOGUE_NO_FRAME)
		*state = PROLOGUE_UNKNOWN_STATE;
	return 0;
}
