/* regs.c - register sets from the layouts they arrive in: ptrace's
 * user_regs_struct (live threads, core files) and a perf sample's register
 * mask and values. Kept in base/ because layers from addrspace (perf
 * samples) up to capture and walker (ptrace) convert registers; the
 * signal frame's layout is base/ucontext_regs.h. */
#include <string.h>
#include <sys/user.h>

#include "stacksnap.h"

void stacksnap_regs__from_user_regs(struct stacksnap_regs *regs,
				    const struct user_regs_struct *u)
{
	uint64_t *r = regs->regs;

	r[STACKSNAP_REG_RAX] = u->rax;
	r[STACKSNAP_REG_RDX] = u->rdx;
	r[STACKSNAP_REG_RCX] = u->rcx;
	r[STACKSNAP_REG_RBX] = u->rbx;
	r[STACKSNAP_REG_RSI] = u->rsi;
	r[STACKSNAP_REG_RDI] = u->rdi;
	r[STACKSNAP_REG_RBP] = u->rbp;
	r[STACKSNAP_REG_RSP] = u->rsp;
	r[STACKSNAP_REG_R8] = u->r8;
	r[STACKSNAP_REG_R9] = u->r9;
	r[STACKSNAP_REG_R10] = u->r10;
	r[STACKSNAP_REG_R11] = u->r11;
	r[STACKSNAP_REG_R12] = u->r12;
	r[STACKSNAP_REG_R13] = u->r13;
	r[STACKSNAP_REG_R14] = u->r14;
	r[STACKSNAP_REG_R15] = u->r15;
	r[STACKSNAP_REG_RIP] = u->rip;
	regs->valid = (1u << STACKSNAP_REG_COUNT) - 1;
}

void stacksnap_regs__from_perf(struct stacksnap_regs *regs, uint64_t mask,
			       const uint64_t *vals)
{
	/* perf's x86_64 register numbering (PERF_REG_X86_*) to DWARF's;
	 * -1 for flags and segment registers. */
	static const int8_t perf_to_dwarf[24] = {
		STACKSNAP_REG_RAX, STACKSNAP_REG_RBX, STACKSNAP_REG_RCX,
		STACKSNAP_REG_RDX, STACKSNAP_REG_RSI, STACKSNAP_REG_RDI,
		STACKSNAP_REG_RBP, STACKSNAP_REG_RSP, STACKSNAP_REG_RIP,
		-1, -1, -1, -1, -1, -1, -1,
		STACKSNAP_REG_R8,  STACKSNAP_REG_R9,  STACKSNAP_REG_R10,
		STACKSNAP_REG_R11, STACKSNAP_REG_R12, STACKSNAP_REG_R13,
		STACKSNAP_REG_R14, STACKSNAP_REG_R15,
	};
	unsigned k = 0;

	memset(regs, 0, sizeof(*regs));
	/* Only the set bits (a replay converts every sample's registers):
	 * vals[k] is the value of the k-th bit set. */
	for (uint64_t m = mask; m; m &= m - 1, k++) {
		unsigned bit = (unsigned)__builtin_ctzll(m);

		if (bit < 24 && perf_to_dwarf[bit] >= 0) {
			regs->regs[perf_to_dwarf[bit]] = vals[k];
			regs->valid |= (1u << perf_to_dwarf[bit]);
		}
	}
}
