/* side_stack.c - the stacks the in-process walks run on: a fixed pool of
 * side stacks in the library's own zero-filled data, claimed lock-free,
 * so that a walk called on a small stack (a crash handler's 8 KiB
 * sigaltstack) puts on it only the entry's few words, whatever the walk
 * meets (the first read of /proc/self/maps, a lazy binding of a libc
 * function, the interpretation of .eh_frame). */
#include <stdatomic.h>
#include <stdint.h>

#include "inproc/inproc.h"

/* Pages of the pool that no walk used cost nothing (untouched .bss). */
static uint8_t side_stacks[INPROC_SIDE_STACKS][INPROC_SIDE_STACK_BYTES]
	__attribute__((aligned(64)));
/* Bit i set: side_stacks[i] is in use. Invariant: a walk sets its bit
 * (compare-and-swap) before it runs on the stack and clears it after. */
static _Atomic(uint32_t) side_used;

_Static_assert(INPROC_SIDE_STACKS <= 32, "side_used has 32 bits");

/* inproc_side_switch(fn, arg, top): calls fn(arg) with rsp = top and
 * returns its value. Its frame keeps the caller's rsp in rbp, with the
 * CFI of an ordinary rbp frame (CFA = rbp + 16), so that a walk from a
 * handler that interrupted fn crosses back to the caller's stack. */
__asm__(".text\n"
	".p2align 4\n"
	".type inproc_side_switch, @function\n"
	"inproc_side_switch:\n"
	".cfi_startproc\n"
	"\tpush %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"\tmov %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"\tmov %rdx, %rsp\n"
	"\tmov %rdi, %rax\n"
	"\tmov %rsi, %rdi\n"
	"\tcall *%rax\n"
	".globl inproc_side_return\n"
	".hidden inproc_side_return\n"
	"inproc_side_return:\n"
	"\tmov %rbp, %rsp\n"
	"\tpop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"\tret\n"
	".cfi_endproc\n"
	".size inproc_side_switch, .-inproc_side_switch\n");

int inproc_side_switch(int (*fn)(void *), void *arg, void *top);

int inproc_side_call(int (*fn)(void *), void *arg, int *ret)
{
	uint32_t used = atomic_load_explicit(&side_used, memory_order_relaxed);
	unsigned i;

	for (;;) {
		if (used == UINT32_MAX >> (32 - INPROC_SIDE_STACKS))
			return -1; /* every side stack in use */
		i = (unsigned)__builtin_ctz(~used);
		if (atomic_compare_exchange_weak_explicit(
			    &side_used, &used, used | 1u << i,
			    memory_order_acquire, memory_order_relaxed))
			break;
	}
	*ret = inproc_side_switch(fn, arg, side_stacks[i + 1]);
	atomic_fetch_and_explicit(&side_used, ~(1u << i), memory_order_release);
	return 0;
}

void inproc_side_range(uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)side_stacks[0];
	*hi = (uintptr_t)side_stacks[INPROC_SIDE_STACKS];
}
