/* stack_words.c - the choice of the words a compact encoding keeps of a
 * stack copy: the pointers policy, and the exact policy that walks the
 * copy with the unwinder and keeps the pointers it read (stack_words.h). */
#include "save/stack_words.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "snapfile/compact_stack.h"

int stack_words__init(struct stack_words *sw, enum stacksnap_stack_encoding enc,
		      unsigned max_frames, bool stack_scan)
{
	*sw = (struct stack_words){ .enc = enc, .max_frames = max_frames };
	if (enc != STACKSNAP_ENCODING_EXACT)
		return 0;
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = max_frames,
		       .stack_scan = stack_scan);
	sw->uw = stacksnap_unwinder__new(&uo);
	sw->frames = calloc(max_frames, sizeof(*sw->frames));
	if (!sw->uw || !sw->frames) {
		stack_words__free(sw);
		return -ENOMEM;
	}
	return 0;
}

void stack_words__free(struct stack_words *sw)
{
	stacksnap_unwinder__free(sw->uw);
	free(sw->frames);
	sw->uw = NULL;
	sw->frames = NULL;
}

/* The memory source of the exact encoding's walk: the copy, with every
 * word read marked when it looks like a pointer. A word the unwinder read
 * that is not one is a callee-saved register's spill holding data (where
 * spilled secrets live); restored as 0 it changes no walk, as only a
 * pointer into the stack or code can be used as a CFA, frame pointer or
 * return address (cli_saved checks the walks are identical). */
struct read_record {
	struct stacksnap_addrspace *as;
	const uint8_t *bytes;
	size_t len;
	uint64_t base;
	uint64_t *keep;
};

static void mark_if_pointer(struct stacksnap_addrspace *as, const uint8_t *bytes,
			    size_t len, uint64_t base, uint64_t *keep, uint64_t a)
{
	uint64_t v;

	if (a < base || a - base + 8 > len)
		return;
	memcpy(&v, bytes + (a - base), 8);
	if (compact_stack__is_pointer(as, v, base, base + len))
		compact_stack__mark_range(keep, base, len, a, 8);
}

static int record_read(void *user, uint64_t addr, void *buf, size_t n)
{
	struct read_record *r = user;

	if (addr < r->base || addr - r->base > r->len || n > r->len - (addr - r->base))
		return -ENODATA; /* as a copy source answers: stack copy too small */
	memcpy(buf, r->bytes + (addr - r->base), n);
	for (uint64_t a = r->base + ((addr - r->base) & ~7ull); a < addr + n; a += 8)
		mark_if_pointer(r->as, r->bytes, r->len, r->base, r->keep, a);
	return 0;
}

/* Marks what the exact encoding keeps of thread th (see the header). */
static int mark_exact(struct stacksnap_addrspace *as, struct stacksnap_unwinder *uw,
		      struct stacksnap_frame *frames, size_t max,
		      const struct stacksnap_thread *th, uint64_t *keep)
{
	struct read_record rec = { as, th->stack, th->stack_len, th->stack_base, keep };
	struct stacksnap_mem *mem = stacksnap_mem__new_callback(record_read, &rec);
	enum stacksnap_end end;
	uint64_t lo, hi;
	int n;

	if (!mem)
		return -ENOMEM;
	n = stacksnap_unwind(uw, as, &th->regs, mem, frames, max, &end);
	stacksnap_mem__free(mem);
	if (n <= 0)
		return 0;
	lo = frames[0].sp;
	hi = lo;
	for (int i = 0; i < n; i++) {
		if (frames[i].sp > hi)
			hi = frames[i].sp;
		if (frames[i].cfa > hi)
			hi = frames[i].cfa;
	}
	/* On the copy's word grid, from the first frame's sp to the last CFA. */
	if (lo < th->stack_base)
		lo = th->stack_base;
	lo = th->stack_base + ((lo - th->stack_base) & ~7ull);
	for (uint64_t a = lo; a < hi; a += 8)
		mark_if_pointer(as, th->stack, th->stack_len, th->stack_base, keep, a);
	return 0;
}

/* Registers under a compact encoding: rip and rsp, and the others only
 * when they point into code or the stack (a register may hold a secret). */
void stack_words__filter_regs(struct stacksnap_addrspace *as,
			      const struct stacksnap_thread *th, struct stacksnap_regs *r)
{
	*r = th->regs;
	for (int i = 0; i < STACKSNAP_REG_COUNT; i++)
		if (i != STACKSNAP_REG_RIP && i != STACKSNAP_REG_RSP &&
		    !compact_stack__is_pointer(as, r->regs[i], th->stack_base,
					       th->stack_base + th->stack_len))
			r->regs[i] = 0;
}

int stack_words__choose(struct stack_words *sw, struct stacksnap_addrspace *as,
			const struct stacksnap_thread *th, uint64_t **keep)
{
	size_t stack_len = th->stack ? th->stack_len : 0;
	uint64_t *k;
	int err = 0;

	*keep = NULL;
	if (!stack_len || sw->enc == STACKSNAP_ENCODING_FULL)
		return 0;
	k = calloc(compact_stack__bitmap_u64s(stack_len) + 1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	if (sw->enc == STACKSNAP_ENCODING_POINTERS)
		compact_stack__mark_pointers(as, th->stack, stack_len, th->stack_base, k);
	else
		err = mark_exact(as, sw->uw, sw->frames, sw->max_frames, th, k);
	if (err) {
		free(k);
		return err;
	}
	/* A signal frame on an alternate stack holds the interrupted rsp
	 * (and often rbp), pointers into the thread's other stack: kept, or
	 * the walk could not cross to it. */
	for (unsigned m = 0; m < th->nmore_stacks; m++) {
		const struct stacksnap_stack_range *r = &th->more_stacks[m];

		for (size_t i = 0; i < compact_stack__words(stack_len); i++) {
			uint64_t v;

			memcpy(&v, th->stack + 8 * i, 8);
			if (v >= r->base && v - r->base < r->len)
				compact_stack__keep(k, i);
		}
	}
	*keep = k;
	return 0;
}
