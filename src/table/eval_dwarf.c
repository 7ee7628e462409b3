/* eval_dwarf.c - evaluates the rows that stayed DWARF: runs the FDE's
 * program up to the address and applies every register rule, bounded in
 * steps and expression stack. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "dwarf/cfi.h"
#include "dwarf/dwarf_expr.h"
#include "table/unwind_table.h"

/* One register's caller value from its rule. Returns 0 with *valid set
 * or cleared, or -EFAULT when the value is needed from memory that could
 * not be read. */
static int apply_rule(const struct cfi_rule *r, unsigned reg,
		      const struct dwarf_expr_env *env, uint64_t cfa,
		      uint64_t *val, bool *valid)
{
	const struct stacksnap_regs *regs = env->regs;
	uint64_t addr, v;
	int err;

	*valid = false;
	switch (r->kind) {
	case CFI_RULE_UNSET:
	case CFI_RULE_SAME:
		if (reg == STACKSNAP_REG_RSP && r->kind == CFI_RULE_UNSET) {
			*val = cfa; /* the x86_64 convention */
			*valid = true;
		} else if (regs->valid & (1u << reg)) {
			*val = regs->regs[reg];
			*valid = true;
		}
		return 0;
	case CFI_RULE_UNDEFINED:
		return 0;
	case CFI_RULE_OFFSET:
		addr = cfa + (uint64_t)r->off;
		break;
	case CFI_RULE_VAL_OFFSET:
		*val = cfa + (uint64_t)r->off;
		*valid = true;
		return 0;
	case CFI_RULE_REGISTER:
		if (r->reg < STACKSNAP_REG_COUNT &&
		    (regs->valid & (1u << r->reg))) {
			*val = regs->regs[r->reg];
			*valid = true;
		}
		return 0;
	case CFI_RULE_EXPR:
	case CFI_RULE_VAL_EXPR:
		err = dwarf_expr_eval(r->expr, r->expr_len, env, true, cfa, &v);
		if (err)
			return err;
		if (r->kind == CFI_RULE_VAL_EXPR) {
			*val = v;
			*valid = true;
			return 0;
		}
		addr = v;
		break;
	default:
		return -EINVAL;
	}
	{
		uint8_t buf[8];

		if (!env->read || env->read(env->user, addr, buf, 8))
			return -EFAULT;
		memcpy(val, buf, 8);
		*valid = true;
	}
	return 0;
}

/* The body of unwind_table__eval_dwarf, on one FDE of one input; the
 * FDE must cover vaddr. */
static int eval_fde(const struct cfi_input *in, size_t fde_off,
		    uint64_t vaddr, uint64_t bias,
		    const struct stacksnap_regs *regs, stacksnap_read_fn read,
		    void *user, struct stacksnap_regs *caller, uint64_t *cfa,
		    bool *signal_frame)
{
	struct cfi_cie cie;
	struct cfi_fde fde;
	struct cfi_row r;
	struct dwarf_expr_env env = {
		.regs = regs, .read = read, .user = user, .bias = bias,
	};
	uint64_t c;
	int err;

	if (cfi_fde_at(in, fde_off, &cie, &fde))
		return fail(-EINVAL);
	if (vaddr < fde.pc_begin || vaddr >= fde.pc_end)
		return fail(-ENOENT);
	if (cfi_run(in, &cie, &fde, vaddr, NULL, NULL, &r))
		return fail(-EINVAL);
	if (signal_frame)
		*signal_frame = cie.signal_frame;
	switch (r.cfa_kind) {
	case CFI_CFA_REG_OFF:
		if (r.cfa_reg >= STACKSNAP_REG_COUNT ||
		    !(regs->valid & (1u << r.cfa_reg)))
			return fail(-EINVAL);
		c = regs->regs[r.cfa_reg] + (uint64_t)r.cfa_off;
		break;
	case CFI_CFA_EXPR:
		err = dwarf_expr_eval(r.cfa_expr, r.cfa_expr_len, &env, false,
				      0, &c);
		if (err)
			return fail(err);
		break;
	default:
		return fail(-EINVAL);
	}
	env.cfa = c;
	env.have_cfa = true;
	memset(caller, 0, sizeof(*caller));
	for (unsigned reg = 0; reg < STACKSNAP_REG_COUNT; reg++) {
		const struct cfi_rule *rule = &r.rules[reg];
		struct cfi_rule unset = { .kind = CFI_RULE_UNSET };
		bool valid;
		uint64_t v;

		if (reg == STACKSNAP_REG_RIP) {
			rule = &r.rules[cie.ra_reg];
			/* No rule for the return address is no return
			 * address, not "same value": that would loop. */
			if (rule->kind == CFI_RULE_UNSET)
				continue;
		}
		else if (reg == cie.ra_reg)
			rule = &unset; /* the column holds the return address */
		err = apply_rule(rule, reg == STACKSNAP_REG_RIP ? cie.ra_reg
								: reg,
				 &env, c, &v, &valid);
		if (err) {
			/* Only the return address is essential; another
			 * register that cannot be recovered is just not
			 * valid in the caller. */
			if (reg == STACKSNAP_REG_RIP)
				return fail(err);
			continue;
		}
		if (valid) {
			caller->regs[reg] = v;
			caller->valid |= 1u << reg;
		}
	}
	*cfa = c;
	return 0;
}

int unwind_table__eval_dwarf(const struct unwind_table *t,
			     const struct unwind_row *row, uint64_t vaddr,
			     uint64_t bias, const struct stacksnap_regs *regs,
			     stacksnap_read_fn read, void *user,
			     struct stacksnap_regs *caller, uint64_t *cfa)
{
	const struct ut_fde *f;
	int err;

	if (!row || row->cfa_kind != UT_CFA_DWARF ||
	    unwind_row__fde_index(row) >= t->nfdes)
		return fail(-EINVAL);
	f = &t->fdes[unwind_row__fde_index(row)];
	err = eval_fde(&t->inputs[f->input], f->off, vaddr, bias, regs, read,
		       user, caller, cfa, NULL);
	/* The table's row says the FDE covers vaddr: a mismatch is bad CFI. */
	return err == -ENOENT ? fail(-EINVAL) : err;
}

int unwind_table__eval_fde(const struct cfi_input *in, size_t fde_off,
			   uint64_t vaddr, uint64_t bias,
			   const struct stacksnap_regs *regs,
			   stacksnap_read_fn read, void *user,
			   struct stacksnap_regs *caller, uint64_t *cfa,
			   bool *signal_frame)
{
	return eval_fde(in, fde_off, vaddr, bias, regs, read, user, caller,
			cfa, signal_frame);
}
