/* frame_pointer.c - the frame-pointer stepper: [rbp] holds the caller's
 * rbp, [rbp + 8] the return address. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "unwind/unwind_internal.h"

/* A frame not (or no longer) set up: the return address at rsp + skip,
 * and the caller's rbp in rbp (unset) or pushed at rsp (halfset). */
static enum stacksnap_end step_unset(struct stacksnap_unwinder *uw,
				     struct frame_state *st, uint64_t *cfa,
				     bool halfset)
{
	uint64_t rsp = st->regs.regs[STACKSNAP_REG_RSP], w[2];
	int err = mem_read(uw->mem, rsp, w, halfset ? 16 : 8);

	if (err)
		return mem_end(err);
	*cfa = rsp + (halfset ? 16 : 8);
	if (halfset) {
		st->regs.regs[STACKSNAP_REG_RBP] = w[0];
		st->regs.valid |= BIT(STACKSNAP_REG_RBP);
	}
	st->regs.regs[STACKSNAP_REG_RIP] = w[halfset ? 1 : 0];
	st->regs.regs[STACKSNAP_REG_RSP] = *cfa;
	st->regs.valid &= BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP) |
			  BIT(STACKSNAP_REG_RBP);
	st->regs.valid |= BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP);
	st->stepper = STACKSNAP_STEP_FP;
	st->trust = STACKSNAP_TRUST_FP;
	st->flags = 0;
	return STACKSNAP_END_NONE;
}

/* The classic chain: [rbp] = caller's rbp, [rbp + 8] = return address.
 * A function stopped before its prologue completed, or at its ret (only
 * an exact pc can be there: a call comes after the prologue), has not
 * set rbp up: the prologue helper says so. */
enum stacksnap_end step_fp(struct stacksnap_unwinder *uw, const struct as_map *m,
			   bool exact, struct frame_state *st, uint64_t *cfa)
{
	uint64_t rbp = st->regs.regs[STACKSNAP_REG_RBP], pair[2];
	int err;

	if (exact && m && m->mod) {
		enum prologue_kind kind;
		enum prologue_state state;

		if (!prologue__classify(uw->as->ctx, m->mod,
					st->regs.regs[STACKSNAP_REG_RIP] - m->bias,
					&kind, &state) &&
		    (state == PROLOGUE_UNSET || state == PROLOGUE_HALFSET))
			return step_unset(uw, st, cfa, state == PROLOGUE_HALFSET);
	}

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
