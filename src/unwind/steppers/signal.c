/* signal.c - the signal-frame stepper: at the rt_sigreturn trampoline the
 * kernel's ucontext is at rsp; every register comes from it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "base/ucontext_regs.h"
#include "unwind/unwind_internal.h"

/* The interrupted context from the ucontext the kernel pushed: when the
 * handler has returned into the trampoline, rsp points at the ucontext. */
enum stacksnap_end step_signal(struct stacksnap_unwinder *uw,
				      struct frame_state *st, uint64_t *cfa)
{
	uint64_t gregs[UCONTEXT_GREGS];
	uint64_t uc = st->regs.regs[STACKSNAP_REG_RSP];
	int err;

	err = mem_read(uw->mem, uc + offsetof(ucontext_t, uc_mcontext.gregs),
		       gregs, sizeof(gregs));
	if (err)
		return mem_end(err);
	ucontext_regs__set(gregs, &st->regs);
	st->stepper = STACKSNAP_STEP_SIGNAL;
	st->trust = STACKSNAP_TRUST_CFI;
	st->flags = STACKSNAP_FRAME_SIGNAL;
	*cfa = uc;
	return STACKSNAP_END_NONE;
}
