/* cfi.c - the compiled-CFI stepper: a compact table row (CFA = rsp|rbp +
 * offset, rbp and rbx restored), or the DWARF of a row that does not fit. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "base/log.h"
#include "unwind/unwind_internal.h"

/* A row that does not fit the compact shape: evaluate its DWARF. */
enum stacksnap_end step_dwarf(struct stacksnap_unwinder *uw,
				     const struct unwind_table *table,
				     const struct unwind_row *row,
				     uint64_t vaddr, uint64_t bias,
				     struct frame_state *st, uint64_t *cfa)
{
	struct stacksnap_regs caller;
	int err;

	err = unwind_table__eval_dwarf(table, row, vaddr, bias, &st->regs,
				       mem_read_cb, uw->mem, &caller, cfa);
	if (err == -ENODATA)
		return STACKSNAP_END_STACK_COPY;
	if (err == -EFAULT)
		return STACKSNAP_END_BAD_MEMORY;
	if (err)
		return STACKSNAP_END_BAD_CFI;
	if (!(caller.valid & BIT(STACKSNAP_REG_RIP)))
		return STACKSNAP_END_COMPLETE; /* return address undefined */
	st->regs = caller;
	st->regs.regs[STACKSNAP_REG_RSP] = *cfa;
	st->regs.valid |= BIT(STACKSNAP_REG_RSP);
	st->stepper = STACKSNAP_STEP_DWARF;
	st->trust = STACKSNAP_TRUST_CFI;
	/* A signal frame described by CFI (an 'S' CIE) rather than found by
	 * its trampoline code: the caller was interrupted, not calling. */
	st->flags = row->rbp_kind & UT_DWARF_SIGNAL_FRAME ? STACKSNAP_FRAME_SIGNAL : 0;
	return STACKSNAP_END_NONE;
}

/* The caller's value of callee-saved register reg by its compact rule,
 * setting its bit in *valid when known. */
static int saved_value(struct stacksnap_unwinder *uw, unsigned kind, int16_t off,
		       uint64_t cfa, const struct stacksnap_regs *cur, unsigned reg,
		       uint64_t *val, uint32_t *valid)
{
	switch (kind) {
	case UT_RBP_SAME:
		*val = cur->regs[reg];
		*valid |= cur->valid & BIT(reg);
		return 0;
	case UT_RBP_CFA_OFF:
		/* A save slot below sp is in an epilogue after its pop: CFI
		 * does not say "restored" there, but the register already
		 * holds the caller's value, and the slot may be outside a
		 * copied stack (which starts at sp) or overwritten. */
		if (cfa + off < cur->regs[STACKSNAP_REG_RSP]) {
			*val = cur->regs[reg];
			*valid |= cur->valid & BIT(reg);
			return 0;
		}
		*valid |= BIT(reg);
		return mem_read_u64(uw->mem, cfa + off, val);
	default:
		*val = 0;
		return 0;
	}
}

enum stacksnap_end step_table(struct stacksnap_unwinder *uw,
				     const struct unwind_row *row,
				     struct frame_state *st, uint64_t *cfa)
{
	uint64_t *r = st->regs.regs;
	uint64_t ra, rbp, rbx;
	uint32_t valid = BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP);
	int err;

	switch (row->cfa_kind) {
	case UT_CFA_RSP:
		*cfa = r[STACKSNAP_REG_RSP] + row->cfa_off;
		break;
	case UT_CFA_RBP:
		if (!(st->regs.valid & BIT(STACKSNAP_REG_RBP)))
			return STACKSNAP_END_BAD_CFI;
		*cfa = r[STACKSNAP_REG_RBP] + row->cfa_off;
		break;
	case UT_CFA_PLT:
		*cfa = r[STACKSNAP_REG_RSP] + 8 +
		       ((r[STACKSNAP_REG_RIP] & 15) >= 11 ? 8 : 0);
		break;
	case UT_CFA_UNDEFINED_RA:
		return STACKSNAP_END_COMPLETE;
	default:
		return STACKSNAP_END_NO_CFI;
	}
	err = mem_read_u64(uw->mem, *cfa - 8, &ra);
	if (err)
		return mem_end(err);
	err = saved_value(uw, row->rbp_kind, row->rbp_off, *cfa, &st->regs,
			  STACKSNAP_REG_RBP, &rbp, &valid);
	if (!err)
		err = saved_value(uw, row->rbx_kind, row->rbx_off, *cfa, &st->regs,
				  STACKSNAP_REG_RBX, &rbx, &valid);
	if (err)
		return mem_end(err);
	/* Registers the compact row does not describe are unknown in the
	 * caller; rsp, rip, rbp and rbx are carried. */
	st->regs.valid = valid;
	r[STACKSNAP_REG_RBP] = rbp;
	r[STACKSNAP_REG_RBX] = rbx;
	r[STACKSNAP_REG_RSP] = *cfa;
	r[STACKSNAP_REG_RIP] = ra;
	st->stepper = row->cfa_kind == UT_CFA_PLT ? STACKSNAP_STEP_PLT
						  : STACKSNAP_STEP_TABLE;
	st->trust = STACKSNAP_TRUST_CFI;
	st->flags = 0;
	return STACKSNAP_END_NONE;
}
