/* wanderer.c - the stack-scan stepper (StepperWanderer): the first word up
 * the stack that is a return address, i.e. points just after a call that
 * could have entered the current function, directly or by a tail call. */
#define _GNU_SOURCE
#include "unwind/steppers/capstone_dl.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "symbolize/symbolize.h"
#include "unwind/unwind_internal.h"

#define SCAN_MAX_WORDS 1024 /* how far a stack scan looks, in words */
#define TAIL_MAX_BYTES 4096 /* how much of a callee is searched for a tail call */

enum call_kind { NOT_A_CALL = 0, INDIRECT_CALL, DIRECT_CALL };

/* Reads code at a: from the module's file, else from memory. */
static int read_code(struct stacksnap_unwinder *uw, const struct as_map *m,
		     uint64_t a, void *buf, size_t len)
{
	return m->mod ? module__read_code(m->mod, a - m->bias, buf, len)
		      : mem_read(uw->mem, a, buf, len);
}

/* Does the code just before ret look like a call instruction? A direct
 * call's target goes to *target. */
static enum call_kind follows_call(struct stacksnap_unwinder *uw,
				   const struct as_map *m, uint64_t ret,
				   uint64_t *target)
{
	uint8_t c[8];
	int err;

	if (ret - m->start < sizeof(c))
		return NOT_A_CALL;
	err = read_code(uw, m, ret - sizeof(c), c, sizeof(c));
	if (err)
		return NOT_A_CALL;
	/* c[7] is the byte before ret. call rel32: e8 + 4 bytes. */
	if (c[3] == 0xe8) {
		int32_t rel;

		memcpy(&rel, c + 4, sizeof(rel));
		*target = ret + (uint64_t)(int64_t)rel;
		return DIRECT_CALL;
	}
	/* call r/m64 (ff /2), by length: 2 (ff d0+r / ff 10+r), 3 (ff 50+r
	 * disp8, ff 14 sib), 6 (ff 15 rip+disp32, ff 90+r disp32), 7 (ff 94
	 * sib disp32); a REX prefix before ff does not change the check. */
	if ((c[6] == 0xff && ((c[7] & 0xf8) == 0xd0 || (c[7] & 0xf8) == 0x10)) ||
	    (c[5] == 0xff && ((c[6] & 0xf8) == 0x50 || c[6] == 0x14)) ||
	    (c[2] == 0xff && (c[3] == 0x15 || (c[3] & 0xf8) == 0x90)) ||
	    (c[1] == 0xff && c[2] == 0x94))
		return INDIRECT_CALL;
	return NOT_A_CALL;
}

/* The start of the function holding a, from its module's symbols; 0 when
 * unknown. */
static uint64_t function_of(struct stacksnap_unwinder *uw, uint64_t a)
{
	const struct as_map *m = addrspace__find(uw->as, a);
	struct symtab *st;
	uint64_t start = 0;

	if (!m || !m->mod || !(st = module__symtab(uw->as->ctx, m->mod)) ||
	    !symtab__lookup(st, a - m->bias, 1, &start))
		return 0;
	return start + m->bias;
}

/* Where a call to target lands: through a PLT stub (jmp *slot(%rip),
 * after endbr64 or bnd) to what its slot holds; 0 for a stub whose slot
 * cannot be read (a stack copy without the rest of memory). */
static uint64_t through_plt(struct stacksnap_unwinder *uw, uint64_t target)
{
	const struct as_map *m = addrspace__find(uw->as, target);
	uint8_t c[12];
	unsigned i = 0;
	int32_t disp;
	uint64_t dest;

	if (!m || read_code(uw, m, target, c, sizeof(c)))
		return target;
	if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
		i = 4;
	if (c[i] == 0xf2)
		i++;
	if (c[i] != 0xff || c[i + 1] != 0x25)
		return target;
	memcpy(&disp, c + i + 2, sizeof(disp));
	if (mem_read(uw->mem, target + i + 6 + (uint64_t)(int64_t)disp, &dest,
		     sizeof(dest)))
		return 0;
	return dest;
}

/* Does the function starting at fn (a runtime address) jump to cur, i.e.
 * can it have tail-called it: a direct jmp or jcc, through the PLT, to
 * cur? Its code is decoded by Capstone from its symbol's range (the first
 * TAIL_MAX_BYTES of it). */
static bool tail_calls(struct stacksnap_unwinder *uw, uint64_t fn, uint64_t cur)
{
	const struct as_map *m = addrspace__find(uw->as, fn);
	struct symtab *st;
	uint64_t start, end, addr;
	const uint8_t *p;
	uint8_t *code;
	size_t len;
	bool found = false;
	cs_insn *in;
	csh cs;
	const struct capstone_dl *C = capstone_dl();

	if (!C || !m || !m->mod || !(st = module__symtab(uw->as->ctx, m->mod)) ||
	    !symtab__lookup_range(st, fn - m->bias, &start, &end) ||
	    start != fn - m->bias || end <= start)
		return false;
	len = end - start < TAIL_MAX_BYTES ? end - start : TAIL_MAX_BYTES;
	code = malloc(len);
	if (!code || module__read_code(m->mod, start, code, len)) {
		free(code);
		return false;
	}
	if (C->open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		free(code);
		return false;
	}
	C->option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	in = C->malloc(cs);
	p = code;
	addr = fn;
	while (in && !found && C->disasm_iter(cs, &p, &len, &addr, in)) {
		const cs_x86 *x = &in->detail->x86;
		uint64_t t;

		if (!C->insn_group(cs, in, X86_GRP_JUMP) || x->op_count != 1 ||
		    x->operands[0].type != X86_OP_IMM)
			continue;
		t = (uint64_t)x->operands[0].imm;
		if (t >= fn && t < fn + (end - start))
			continue; /* a jump inside the function */
		t = through_plt(uw, t);
		found = t && (t == cur || function_of(uw, t) == cur);
	}
	if (in)
		C->free(in, 1);
	C->close(&cs);
	free(code);
	return found;
}

/* StepperWanderer's check: a candidate return address is kept when the
 * call before it could have entered the current function (cur, 0 when
 * unknown): an indirect call (its target is not known), or a direct one,
 * through the PLT, to cur or to a function that tail-calls cur (cur was
 * reached by a jump from the function the call entered: its caller as
 * the stack shows it). */
static bool calls_current(struct stacksnap_unwinder *uw, const struct as_map *m,
			  uint64_t ret, uint64_t cur)
{
	uint64_t target = 0, dest;

	switch (follows_call(uw, m, ret, &target)) {
	case NOT_A_CALL:
		return false;
	case INDIRECT_CALL:
		return true;
	case DIRECT_CALL:
		break;
	}
	if (!cur || !(dest = through_plt(uw, target)))
		return true; /* nothing to check against */
	if (dest == cur || function_of(uw, dest) == cur)
		return true;
	return tail_calls(uw, function_of(uw, dest), cur);
}

/* Looks up the stack for a word that is a plausible return address. A
 * guess: frames found this way are marked low trust. */
enum stacksnap_end step_scan(struct stacksnap_unwinder *uw, bool exact,
			     struct frame_state *st, uint64_t *cfa)
{
	uint64_t sp = st->regs.regs[STACKSNAP_REG_RSP], words[64];
	uint64_t cur = function_of(uw, st->regs.regs[STACKSNAP_REG_RIP] - !exact);

	for (unsigned base = 0; base < SCAN_MAX_WORDS; base += 64) {
		uint64_t at = sp + base * 8;

		if (mem_read(uw->mem, at, words, sizeof(words)))
			return STACKSNAP_END_NO_CFI;
		for (unsigned i = 0; i < 64; i++) {
			const struct as_map *m = addrspace__find(uw->as, words[i]);

			if (!m || !(m->prot & PROT_EXEC) ||
			    !calls_current(uw, m, words[i], cur))
				continue;
			*cfa = at + i * 8 + 8;
			st->regs.valid = BIT(STACKSNAP_REG_RIP) |
					 BIT(STACKSNAP_REG_RSP);
			st->regs.regs[STACKSNAP_REG_RIP] = words[i];
			st->regs.regs[STACKSNAP_REG_RSP] = *cfa;
			st->stepper = STACKSNAP_STEP_SCAN;
			st->trust = STACKSNAP_TRUST_SCAN;
			st->flags = 0;
			return STACKSNAP_END_NONE;
		}
	}
	return STACKSNAP_END_NO_CFI;
}
