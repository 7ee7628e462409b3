/* runtime_steps.c - a runtime stepper's recorded steps ordered by
 * (sp, pc) and replayed by a binary search (runtime_steps.h). */
#include "runtime/runtime_steps.h"

#include <stdlib.h>
#include <string.h>

int runtime_step__cmp(const void *a, const void *b)
{
	const struct stacksnap_runtime_step *x = a, *y = b;

	if (x->sp != y->sp)
		return x->sp < y->sp ? -1 : 1;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

size_t runtime_steps__sort_unique(struct stacksnap_runtime_step *steps, size_t n)
{
	size_t u = 0;

	qsort(steps, n, sizeof(*steps), runtime_step__cmp);
	for (size_t i = 0; i < n; i++)
		if (!u || runtime_step__cmp(&steps[u - 1], &steps[i]))
			steps[u++] = steps[i];
	return u;
}

int runtime_steps__replay(const struct stacksnap_runtime_step *steps, size_t n,
			  const struct stacksnap_regs *regs, bool exact_pc,
			  bool skip_exact_pc, struct stacksnap_regs *caller)
{
	const uint32_t need = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP;
	struct stacksnap_runtime_step key = { 0 };
	size_t lo = 0, hi = n;

	if ((exact_pc && skip_exact_pc) || (regs->valid & need) != need)
		return STACKSNAP_STEPPER_NOT_MINE;
	key.pc = regs->regs[STACKSNAP_REG_RIP];
	key.sp = regs->regs[STACKSNAP_REG_RSP];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct stacksnap_runtime_step *st = &steps[mid];
		int c = runtime_step__cmp(st, &key);

		if (!c) {
			memset(caller, 0, sizeof(*caller));
			caller->regs[STACKSNAP_REG_RIP] = st->caller_pc;
			caller->regs[STACKSNAP_REG_RSP] = st->caller_sp;
			caller->regs[STACKSNAP_REG_RBP] = st->caller_fp;
			caller->valid = need | 1u << STACKSNAP_REG_RBP;
			return STACKSNAP_STEPPER_CALLER;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return STACKSNAP_STEPPER_NOT_MINE;
}
