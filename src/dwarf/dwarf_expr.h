/* dwarf_expr.h - a bounded evaluator for the DWARF expressions found in
 * call frame information (DW_CFA_def_cfa_expression, DW_CFA_expression,
 * DW_CFA_val_expression). */
#ifndef SS_DWARF_DWARF_EXPR_H
#define SS_DWARF_DWARF_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacksnap.h"

#define DWARF_EXPR_STACK 64	/* values on the evaluation stack */
#define DWARF_EXPR_STEPS 1000	/* operations executed (bra/skip loop) */

/* What an expression may look at. Invariant: regs is not NULL; a register
 * whose valid bit is clear cannot be used (evaluation fails). */
struct dwarf_expr_env {
	const struct stacksnap_regs *regs; /* run-time values */
	stacksnap_read_fn read;		   /* NULL: no memory */
	void *user;
	uint64_t bias;			   /* added to DW_OP_addr */
	uint64_t cfa;			   /* for DW_OP_call_frame_cfa */
	bool have_cfa;
};

/* Evaluates expr with `push` (if push_one) on the stack first, as
 * DW_CFA_expression requires for the CFA. Returns 0 and the top of the
 * stack in *out, -EFAULT when a memory read failed, or -EINVAL for a
 * malformed or unsupported expression or one over the limits. */
int dwarf_expr_eval(const uint8_t *expr, size_t len,
		    const struct dwarf_expr_env *env, bool push_one,
		    uint64_t push, uint64_t *out);

#endif
