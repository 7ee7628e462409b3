/* signal.c - the signal-frame stepper: at the rt_sigreturn trampoline the
 * kernel's ucontext is at rsp; every register comes from it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "unwind/unwind_internal.h"

/* The interrupted context from the ucontext the kernel pushed: when the
 * handler has returned into the trampoline, rsp points at the ucontext. */
enum stacksnap_end step_signal(struct stacksnap_unwinder *uw,
				      struct frame_state *st, uint64_t *cfa)
{
	/* Kernel order of mcontext gregs for the registers we track. */
	static const struct {
		uint8_t greg, dwarf;
	} map[] = {
		{ REG_R8, STACKSNAP_REG_R8 },	{ REG_R9, STACKSNAP_REG_R9 },
		{ REG_R10, STACKSNAP_REG_R10 }, { REG_R11, STACKSNAP_REG_R11 },
		{ REG_R12, STACKSNAP_REG_R12 }, { REG_R13, STACKSNAP_REG_R13 },
		{ REG_R14, STACKSNAP_REG_R14 }, { REG_R15, STACKSNAP_REG_R15 },
		{ REG_RDI, STACKSNAP_REG_RDI }, { REG_RSI, STACKSNAP_REG_RSI },
		{ REG_RBP, STACKSNAP_REG_RBP }, { REG_RBX, STACKSNAP_REG_RBX },
		{ REG_RDX, STACKSNAP_REG_RDX }, { REG_RAX, STACKSNAP_REG_RAX },
		{ REG_RCX, STACKSNAP_REG_RCX }, { REG_RSP, STACKSNAP_REG_RSP },
		{ REG_RIP, STACKSNAP_REG_RIP },
	};
	uint64_t gregs[REG_RIP + 1];
	uint64_t uc = st->regs.regs[STACKSNAP_REG_RSP];
	int err;

	err = mem_read(uw->mem, uc + offsetof(ucontext_t, uc_mcontext.gregs),
		       gregs, sizeof(gregs));
	if (err)
		return mem_end(err);
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		st->regs.regs[map[i].dwarf] = gregs[map[i].greg];
	st->regs.valid = (1u << STACKSNAP_REG_COUNT) - 1;
	st->stepper = STACKSNAP_STEP_SIGNAL;
	st->trust = STACKSNAP_TRUST_CFI;
	st->flags = STACKSNAP_FRAME_SIGNAL;
	*cfa = uc;
	return STACKSNAP_END_NONE;
}
