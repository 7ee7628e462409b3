/* ucontext_regs.h - the registers a signal frame's mcontext holds, in the
 * kernel's gregs order, as a stacksnap register set, and the search of a
 * stack copy for the signal frame that moved a thread onto its alternate
 * signal stack. Header-only and allocation-free: the remote signal
 * stepper, the in-process backtrace (which runs in signal handlers) and
 * the stack copies of the capture and the walker share it. */
#ifndef SS_BASE_UCONTEXT_REGS_H
#define SS_BASE_UCONTEXT_REGS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
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

/* The kernel's MINSIGSTKSZ (x86): sigaltstack() refuses smaller. */
#define UCONTEXT_MINSIGSTKSZ 2048

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1u << 31) /* linux/signal.h, not in glibc's headers */
#endif

/* The interrupted rsp of the signal frame that moved a thread onto the
 * alternate signal stack holding its sp, found in its copy bytes[0..len)
 * at base; 0 when there is none. The kernel's rt_sigframe starts 8 bytes
 * past a 16-byte boundary with the return address (sa_restorer), then the
 * ucontext, whose uc_stack is the thread's sigaltstack setting at
 * delivery: a frame on that stack whose interrupted rsp lies outside it
 * is the one that switched stacks (nested handlers' frames interrupt the
 * alternate stack itself). The outermost such frame is taken. An
 * alternate stack may share its mapping with other data (the kernel
 * merges adjacent anonymous mappings: an mmap()ed alternate stack in a
 * JVM, seen), which the search also crosses: zeros and a pointer there
 * read as "no flags, no link, an alternate stack at 0 of a pointer's
 * size" (the walk then went on from a wrong "interrupted rsp"). A frame
 * must also hold what only the kernel writes
 * there: an alternate stack sigaltstack() accepted (not at 0, at least
 * MINSIGSTKSZ), and mcontext's fpregs pointing at the FPU state the kernel
 * put above the frame, on that stack (16-byte aligned: fxsave's
 * alignment, xsave's is 64). */
static inline uint64_t ucontext__altstack_interrupted_sp(const uint8_t *bytes,
							 size_t len, uint64_t base,
							 uint64_t sp)
{
	const size_t uc_off = 8,
		     need = uc_off + offsetof(ucontext_t, uc_mcontext.fpregs) + 8;
	size_t off;

	if (len < need + 16 || base + len < base)
		return 0;
	off = (size_t)(((base + len - need) & ~(uint64_t)15) + 8 - base);
	if (off > len - need)
		off -= 16;
	for (;; off -= 16) {
		const uint8_t *f = bytes + off + uc_off;
		uint64_t p = base + off, uc_flags, uc_link, ss_sp, ss_size, rsp, rip,
			 fpregs;
		int32_t ss_flags;

		memcpy(&uc_flags, f + offsetof(ucontext_t, uc_flags), 8);
		memcpy(&uc_link, f + offsetof(ucontext_t, uc_link), 8);
		memcpy(&ss_sp, f + offsetof(ucontext_t, uc_stack.ss_sp), 8);
		memcpy(&ss_flags, f + offsetof(ucontext_t, uc_stack.ss_flags), 4);
		memcpy(&ss_size, f + offsetof(ucontext_t, uc_stack.ss_size), 8);
		memcpy(&fpregs, f + offsetof(ucontext_t, uc_mcontext.fpregs), 8);
		/* The kernel's words: uc_flags of UC_FP_XSTATE,
		 * UC_SIGCONTEXT_SS, UC_STRICT_RESTORE_SS; no uc_link; the
		 * sigaltstack flags (SS_AUTODISARM at most); the alternate
		 * stack holding this frame and sp, inside the copied mapping
		 * (other data in the same mapping must not pass for a frame). */
		if (!(uc_flags & ~(uint64_t)7) && !uc_link &&
		    !((uint32_t)ss_flags & ~(uint32_t)SS_AUTODISARM) &&
		    ss_sp <= p && p - ss_sp < ss_size && sp >= ss_sp &&
		    sp - ss_sp < ss_size && ss_size <= base + len - ss_sp &&
		    ss_sp && ss_size >= UCONTEXT_MINSIGSTKSZ && fpregs > p &&
		    fpregs - ss_sp < ss_size && !(fpregs & 15)) {
			memcpy(&rsp, f + offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]), 8);
			memcpy(&rip, f + offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]), 8);
			if (rip && rsp && (rsp < ss_sp || rsp - ss_sp >= ss_size))
				return rsp;
		}
		if (off < 16)
			return 0;
	}
}

#endif
