/* frame_pointer.c - the frame-pointer stepper: [rbp] holds the caller's
 * rbp, [rbp + 8] the return address. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "unwind/unwind_internal.h"

/* The classic chain: [rbp] = caller's rbp, [rbp + 8] = return address. */
enum stacksnap_end step_fp(struct stacksnap_unwinder *uw,
				  struct frame_state *st, uint64_t *cfa)
{
	uint64_t rbp = st->regs.regs[STACKSNAP_REG_RBP], pair[2];
	int err;

	if (!(st->regs.valid & BIT(STACKSNAP_REG_RBP)) || (rbp & 7) ||
	    rbp < st->regs.regs[STACKSNAP_REG_RSP])
		return STACKSNAP_END_NO_CFI;
	err = mem_read(uw->mem, rbp, pair, sizeof(pair));
	if (err)
		return mem_end(err);
	*cfa = rbp + 16;
	st->regs.valid = BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP) |
			 BIT(STACKSNAP_REG_RBP);
	st->regs.regs[STACKSNAP_REG_RBP] = pair[0];
	st->regs.regs[STACKSNAP_REG_RIP] = pair[1];
	st->regs.regs[STACKSNAP_REG_RSP] = *cfa;
	st->stepper = STACKSNAP_STEP_FP;
	st->trust = STACKSNAP_TRUST_FP;
	st->flags = 0;
	return STACKSNAP_END_NONE;
}
