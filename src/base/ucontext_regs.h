/* ucontext_regs.h - the registers a signal frame's mcontext holds, in the
 * kernel's gregs order, as a stacksnap register set. Header-only and
 * allocation-free: the remote signal stepper and the in-process backtrace
 * (which runs in signal handlers) share it. */
#ifndef SS_BASE_UCONTEXT_REGS_H
#define SS_BASE_UCONTEXT_REGS_H

#include <stdint.h>
#include <sys/ucontext.h>

#include "stacksnap.h"

/* Words of gregs that ucontext_regs__set reads. */
#define UCONTEXT_GREGS (REG_RIP + 1)

/* Sets every register of r from gregs (UCONTEXT_GREGS words). */
static inline void ucontext_regs__set(const uint64_t *gregs, struct stacksnap_regs *r)
{
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

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		r->regs[map[i].dwarf] = gregs[map[i].greg];
	r->valid = (1u << STACKSNAP_REG_COUNT) - 1;
}

#endif
