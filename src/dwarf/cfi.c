/* cfi.c - parsing of .eh_frame / .debug_frame CIEs and FDEs and the CFA
 * row interpreter, bounds-checked through struct cursor. */
#include <dwarf.h>
#include <errno.h>
#include <string.h>

#include "base/cursor.h"
#include "dwarf/cfi.h"

/* A cursor over the whole section (so cursor_offset() is a section offset,
 * which pc-relative pointers need) that cannot read past `end`. */
static void cursor_at(struct cursor *c, const struct cfi_input *in,
		      size_t off, size_t end)
{
	cursor_init(c, in->data, end);
	c->p = in->data + off;
}

static bool cie_id_is_cie(const struct cfi_input *in, uint64_t id, bool is64)
{
	if (in->is_eh_frame)
		return id == 0;
	return is64 ? id == UINT64_MAX : id == UINT32_MAX;
}

int cfi_entry_read(const struct cfi_input *in, size_t off,
		   struct cfi_entry *e)
{
	struct cursor c;
	uint64_t len, id;
	size_t id_off;

	if (off >= in->size)
		return 0;
	cursor_at(&c, in, off, in->size);
	e->off = off;
	e->is64 = false;
	len = cursor_u32(&c);
	if (c.bad)
		return -EINVAL;
	if (len == 0)
		return 0; /* zero terminator */
	if (len == 0xffffffff) {
		e->is64 = true;
		len = cursor_u64(&c);
	} else if (len >= 0xfffffff0) {
		return -EINVAL; /* reserved initial-length values */
	}
	if (c.bad || len > cursor_left(&c))
		return -EINVAL;
	e->next = cursor_offset(&c) + (size_t)len;
	c.end = in->data + e->next;
	id_off = cursor_offset(&c);
	id = e->is64 ? cursor_u64(&c) : cursor_u32(&c);
	if (c.bad)
		return -EINVAL;
	e->body = cursor_offset(&c);
	e->is_cie = cie_id_is_cie(in, id, e->is64);
	e->cie_off = 0;
	if (!e->is_cie) {
		if (in->is_eh_frame) {
			/* Self-relative: distance back from the id field. */
			if (id > id_off)
				return -EINVAL;
			e->cie_off = id_off - (size_t)id;
		} else {
			if (id >= in->size)
				return -EINVAL;
			e->cie_off = (size_t)id;
		}
	}
	return 1;
}

/* Reads a pointer in DW_EH_PE encoding enc. Indirect pointers cannot be
 * followed here (no memory), so they are only allowed where the value is
 * skipped (the personality routine). */
static int read_encoded(struct cursor *c, const struct cfi_input *in,
			uint8_t enc, uint8_t addr_size, bool allow_indirect,
			uint64_t *out)
{
	uint64_t field = in->vaddr + cursor_offset(c);
	uint64_t v;

	if (enc == DW_EH_PE_omit)
		return -EINVAL;
	if ((enc & 0x70) == DW_EH_PE_aligned) {
		size_t pad = (size_t)(-field & (addr_size - 1));

		if (!cursor_skip(c, pad))
			return -EINVAL;
		field += pad;
		enc = DW_EH_PE_absptr | (enc & DW_EH_PE_indirect);
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		v = addr_size == 4 ? cursor_u32(c) : cursor_u64(c);
		break;
	case DW_EH_PE_uleb128: v = cursor_uleb(c); break;
	case DW_EH_PE_udata2: v = cursor_u16(c); break;
	case DW_EH_PE_udata4: v = cursor_u32(c); break;
	case DW_EH_PE_udata8: v = cursor_u64(c); break;
	case DW_EH_PE_sleb128: v = (uint64_t)cursor_sleb(c); break;
	case DW_EH_PE_sdata2: v = (uint64_t)(int64_t)cursor_s16(c); break;
	case DW_EH_PE_sdata4: v = (uint64_t)(int64_t)cursor_s32(c); break;
	case DW_EH_PE_sdata8: v = (uint64_t)cursor_s64(c); break;
	default:
		return -EINVAL;
	}
	if (c->bad)
		return -EINVAL;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field;
		break;
	default:
		/* textrel/datarel/funcrel need bases a section alone does not
		 * have; x86_64 toolchains do not use them for FDE addresses. */
		return -EINVAL;
	}
	if ((enc & DW_EH_PE_indirect) && !allow_indirect)
		return -EINVAL;
	*out = v;
	return 0;
}

int cfi_cie_parse(const struct cfi_input *in, size_t off, struct cfi_cie *cie)
{
	struct cfi_entry e;
	struct cursor c;
	const char *aug;
	uint64_t ra;

	if (cfi_entry_read(in, off, &e) != 1 || !e.is_cie)
		return -EINVAL;
	cursor_at(&c, in, e.body, e.next);
	memset(cie, 0, sizeof(*cie));
	cie->version = cursor_u8(&c);
	if (cie->version != 1 && cie->version != 3 && cie->version != 4)
		return -EINVAL;
	aug = cursor_cstr(&c);
	if (!aug)
		return -EINVAL;
	cie->addr_size = 8;
	if (cie->version >= 4) {
		cie->addr_size = cursor_u8(&c);
		if (cursor_u8(&c) != 0 || (cie->addr_size != 4 &&
					   cie->addr_size != 8))
			return -EINVAL; /* segment selectors: not on x86_64 */
	}
	cie->code_align = cursor_uleb(&c);
	cie->data_align = cursor_sleb(&c);
	ra = cie->version == 1 ? cursor_u8(&c) : cursor_uleb(&c);
	if (c.bad || ra >= CFI_NREGS)
		return -EINVAL;
	cie->ra_reg = (uint32_t)ra;
	cie->fde_enc = DW_EH_PE_absptr;

	if (aug[0] == 'z') {
		uint64_t aug_len = cursor_uleb(&c);
		struct cursor a;

		if (c.bad || aug_len > cursor_left(&c))
			return -EINVAL;
		a = c;
		a.end = c.p + aug_len;
		cursor_skip(&c, (size_t)aug_len);
		cie->aug_data = true;
		for (const char *p = aug + 1; *p; p++) {
			uint64_t ignored;

			if (*p == 'R') {
				cie->fde_enc = cursor_u8(&a);
			} else if (*p == 'L') {
				cursor_u8(&a);
			} else if (*p == 'P') {
				uint8_t enc = cursor_u8(&a);

				if (read_encoded(&a, in, enc, cie->addr_size,
						 true, &ignored))
					return -EINVAL;
			} else if (*p == 'S') {
				cie->signal_frame = true;
			} else {
				/* Unknown letters ('B', 'G', ...): 'z' lets
				 * us skip their data, and they do not change
				 * the meaning of the CFA program on x86_64. */
				break;
			}
		}
		if (a.bad)
			return -EINVAL;
	} else if (aug[0] != 0) {
		/* Without 'z' the data of an unknown augmentation cannot
		 * be skipped, so nothing after it can be parsed. */
		return -EINVAL;
	}
	if (c.bad)
		return -EINVAL;
	cie->insns = c.p;
	cie->insns_len = cursor_left(&c);
	return 0;
}

int cfi_fde_parse(const struct cfi_input *in, const struct cfi_entry *e,
		  const struct cfi_cie *cie, struct cfi_fde *fde)
{
	struct cursor c;
	uint64_t range;
	uint8_t enc = in->is_eh_frame ? cie->fde_enc : DW_EH_PE_absptr;

	if (e->is_cie)
		return -EINVAL;
	cursor_at(&c, in, e->body, e->next);
	if (read_encoded(&c, in, enc, cie->addr_size, false, &fde->pc_begin))
		return -EINVAL;
	/* The range is a length: the format of the encoding without its
	 * application (pcrel etc.). */
	if (read_encoded(&c, in, enc & 0x0f, cie->addr_size, false, &range))
		return -EINVAL;
	if (cie->aug_data) {
		uint64_t aug_len = cursor_uleb(&c);

		if (c.bad || !cursor_skip(&c, (size_t)aug_len))
			return -EINVAL;
	}
	if (cie->addr_size == 4) {
		fde->pc_begin &= 0xffffffff;
		range &= 0xffffffff;
	}
	fde->pc_end = fde->pc_begin + range;
	if (fde->pc_end < fde->pc_begin)
		fde->pc_end = UINT64_MAX;
	fde->insns = c.p;
	fde->insns_len = cursor_left(&c);
	fde->off = e->off;
	fde->cie_off = e->cie_off;
	return 0;
}

int cfi_fde_at(const struct cfi_input *in, size_t off, struct cfi_cie *cie,
	       struct cfi_fde *fde)
{
	struct cfi_entry e;

	if (cfi_entry_read(in, off, &e) != 1 || e.is_cie)
		return -EINVAL;
	if (cfi_cie_parse(in, e.cie_off, cie))
		return -EINVAL;
	return cfi_fde_parse(in, &e, cie, fde);
}

/* Everything the interpreter carries between instructions. */
struct cfi_state {
	struct cfi_row row;
	const struct cfi_row *initial;	/* after the CIE; NULL inside it */
	struct cfi_row saved[CFI_STATE_DEPTH];
	unsigned nsaved;
	uint64_t loc;
	unsigned insns;			/* executed so far */
};

static struct cfi_rule *rule_for(struct cfi_state *s, uint64_t reg,
				 struct cfi_rule *scratch)
{
	/* Rules for registers we do not track land in scratch. */
	return reg < CFI_NREGS ? &s->row.rules[reg] : scratch;
}

static int64_t scaled(uint64_t v, int64_t factor)
{
	return (int64_t)(v * (uint64_t)factor); /* wraps, never UB */
}

static int read_block(struct cursor *c, const uint8_t **p, uint32_t *len)
{
	uint64_t n = cursor_uleb(c);

	if (c->bad || n > cursor_left(c) || n > UINT32_MAX)
		return -EINVAL;
	*p = c->p;
	*len = (uint32_t)n;
	cursor_skip(c, (size_t)n);
	return 0;
}

/* Interprets one program (the CIE's when fde is NULL). Returns 0, 1 when
 * the run reached the row covering pc (no emit), a callback's non-zero
 * value, or -EINVAL. */
static int run_program(struct cfi_state *s, const struct cfi_input *in,
		       const struct cfi_cie *cie, const struct cfi_fde *fde,
		       const uint8_t *insns, size_t len, uint64_t pc,
		       cfi_row_fn emit, void *user)
{
	struct cursor c;
	struct cfi_rule scratch;

	cursor_init(&c, insns, len);
	/* Set_loc reads encoded pointers, which may be pc-relative: give the
	 * cursor the section as its start. */
	c.start = in->data;
	while (cursor_left(&c) && !c.bad) {
		uint8_t op = cursor_u8(&c);
		uint64_t reg = 0, newloc = s->loc, u;
		struct cfi_rule *r;
		int err;

		if (++s->insns > CFI_MAX_INSNS)
			return -EINVAL;
		switch (op >> 6) {
		case 1:
			newloc = s->loc + (op & 0x3f) * cie->code_align;
			goto advance;
		case 2:
			r = rule_for(s, op & 0x3f, &scratch);
			u = cursor_uleb(&c);
			*r = (struct cfi_rule){ .kind = CFI_RULE_OFFSET,
						.off = scaled(u, cie->data_align) };
			continue;
		case 3:
			reg = op & 0x3f;
			goto restore;
		}
		switch (op) {
		case DW_CFA_nop:
			break;
		case DW_CFA_set_loc:
			if (read_encoded(&c, in, in->is_eh_frame ? cie->fde_enc :
					 DW_EH_PE_absptr, cie->addr_size, false,
					 &newloc))
				return -EINVAL;
			goto advance;
		case DW_CFA_advance_loc1:
			newloc = s->loc + cursor_u8(&c) * cie->code_align;
			goto advance;
		case DW_CFA_advance_loc2:
			newloc = s->loc + cursor_u16(&c) * cie->code_align;
			goto advance;
		case DW_CFA_advance_loc4:
			newloc = s->loc + cursor_u32(&c) * cie->code_align;
			goto advance;
		case DW_CFA_MIPS_advance_loc8:
			newloc = s->loc + cursor_u64(&c) * cie->code_align;
			goto advance;
		case DW_CFA_offset_extended:
			reg = cursor_uleb(&c);
			u = cursor_uleb(&c);
			*rule_for(s, reg, &scratch) = (struct cfi_rule){
				.kind = CFI_RULE_OFFSET,
				.off = scaled(u, cie->data_align) };
			break;
		case DW_CFA_offset_extended_sf:
			reg = cursor_uleb(&c);
			u = (uint64_t)cursor_sleb(&c);
			*rule_for(s, reg, &scratch) = (struct cfi_rule){
				.kind = CFI_RULE_OFFSET,
				.off = scaled(u, cie->data_align) };
			break;
		case DW_CFA_GNU_negative_offset_extended:
			reg = cursor_uleb(&c);
			u = cursor_uleb(&c);
			*rule_for(s, reg, &scratch) = (struct cfi_rule){
				.kind = CFI_RULE_OFFSET,
				.off = scaled(0 - u, cie->data_align) };
			break;
		case DW_CFA_val_offset:
			reg = cursor_uleb(&c);
			u = cursor_uleb(&c);
			*rule_for(s, reg, &scratch) = (struct cfi_rule){
				.kind = CFI_RULE_VAL_OFFSET,
				.off = scaled(u, cie->data_align) };
			break;
		case DW_CFA_val_offset_sf:
			reg = cursor_uleb(&c);
			u = (uint64_t)cursor_sleb(&c);
			*rule_for(s, reg, &scratch) = (struct cfi_rule){
				.kind = CFI_RULE_VAL_OFFSET,
				.off = scaled(u, cie->data_align) };
			break;
		case DW_CFA_restore_extended:
			reg = cursor_uleb(&c);
			goto restore;
		case DW_CFA_undefined:
			reg = cursor_uleb(&c);
			*rule_for(s, reg, &scratch) =
				(struct cfi_rule){ .kind = CFI_RULE_UNDEFINED };
			break;
		case DW_CFA_same_value:
			reg = cursor_uleb(&c);
			*rule_for(s, reg, &scratch) =
				(struct cfi_rule){ .kind = CFI_RULE_SAME };
			break;
		case DW_CFA_register:
			reg = cursor_uleb(&c);
			u = cursor_uleb(&c);
			*rule_for(s, reg, &scratch) = (struct cfi_rule){
				.kind = CFI_RULE_REGISTER,
				.reg = u > UINT32_MAX ? UINT32_MAX
						      : (uint32_t)u };
			break;
		case DW_CFA_remember_state:
			if (s->nsaved >= CFI_STATE_DEPTH)
				return -EINVAL;
			s->saved[s->nsaved++] = s->row;
			break;
		case DW_CFA_restore_state:
			if (s->nsaved == 0)
				return -EINVAL;
			/* The args size is not part of the saved state. */
			u = s->row.args_size;
			s->row = s->saved[--s->nsaved];
			s->row.args_size = u;
			break;
		case DW_CFA_def_cfa:
			reg = cursor_uleb(&c);
			u = cursor_uleb(&c);
			s->row.cfa_kind = CFI_CFA_REG_OFF;
			s->row.cfa_reg = reg > UINT32_MAX ? UINT32_MAX
							  : (uint32_t)reg;
			s->row.cfa_off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_sf:
			reg = cursor_uleb(&c);
			u = (uint64_t)cursor_sleb(&c);
			s->row.cfa_kind = CFI_CFA_REG_OFF;
			s->row.cfa_reg = reg > UINT32_MAX ? UINT32_MAX
							  : (uint32_t)reg;
			s->row.cfa_off = scaled(u, cie->data_align);
			break;
		case DW_CFA_def_cfa_register:
			reg = cursor_uleb(&c);
			if (s->row.cfa_kind != CFI_CFA_REG_OFF)
				return -EINVAL;
			s->row.cfa_reg = reg > UINT32_MAX ? UINT32_MAX
							  : (uint32_t)reg;
			break;
		case DW_CFA_def_cfa_offset:
			u = cursor_uleb(&c);
			if (s->row.cfa_kind != CFI_CFA_REG_OFF)
				return -EINVAL;
			s->row.cfa_off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_offset_sf:
			u = (uint64_t)cursor_sleb(&c);
			if (s->row.cfa_kind != CFI_CFA_REG_OFF)
				return -EINVAL;
			s->row.cfa_off = scaled(u, cie->data_align);
			break;
		case DW_CFA_def_cfa_expression:
			if (read_block(&c, &s->row.cfa_expr,
				       &s->row.cfa_expr_len))
				return -EINVAL;
			s->row.cfa_kind = CFI_CFA_EXPR;
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			reg = cursor_uleb(&c);
			r = rule_for(s, reg, &scratch);
			if (read_block(&c, &r->expr, &r->expr_len))
				return -EINVAL;
			r->kind = op == DW_CFA_expression ? CFI_RULE_EXPR
							  : CFI_RULE_VAL_EXPR;
			r->off = 0;
			r->reg = 0;
			break;
		case DW_CFA_GNU_args_size:
			s->row.args_size = cursor_uleb(&c);
			break;
		default:
			return -EINVAL; /* includes GNU_window_save (SPARC) */
		}
		continue;
restore:
		if (reg < CFI_NREGS)
			s->row.rules[reg] = s->initial
				? s->initial->rules[reg]
				: (struct cfi_rule){ .kind = CFI_RULE_UNSET };
		continue;
advance:
		if (c.bad)
			return -EINVAL;
		if (!fde)
			return -EINVAL; /* a CIE has no location */
		if (newloc < s->loc)
			return -EINVAL; /* rows must not go backwards */
		if (newloc > fde->pc_end)
			newloc = fde->pc_end;
		if (newloc == s->loc)
			continue;
		if (emit) {
			err = emit(user, s->loc, newloc, &s->row);
			if (err)
				return err;
		} else if (pc < newloc) {
			return 1;
		}
		s->loc = newloc;
		if (s->loc == fde->pc_end)
			return emit ? 0 : -EINVAL;
	}
	return c.bad ? -EINVAL : 0;
}

int cfi_run(const struct cfi_input *in, const struct cfi_cie *cie,
	    const struct cfi_fde *fde, uint64_t pc, cfi_row_fn emit,
	    void *user, struct cfi_row *row)
{
	/* The remember stack is ~10 KB: fine on a thread stack, and it keeps
	 * the interpreter free of allocation. */
	struct cfi_state s;
	struct cfi_row initial;
	int err;

	if (!emit && (pc < fde->pc_begin || pc >= fde->pc_end))
		return -EINVAL;
	memset(&s.row, 0, sizeof(s.row));
	s.initial = NULL;
	s.nsaved = 0;
	s.insns = 0;
	s.loc = fde->pc_begin;
	err = run_program(&s, in, cie, NULL, cie->insns, cie->insns_len, pc,
			  NULL, NULL);
	if (err)
		return -EINVAL;
	initial = s.row;
	s.initial = &initial;
	s.nsaved = 0; /* the FDE cannot restore a state the CIE saved */
	err = run_program(&s, in, cie, fde, fde->insns, fde->insns_len, pc,
			  emit, user);
	if (err < 0)
		return err;
	if (emit) {
		if (err)
			return err;
		if (s.loc < fde->pc_end)
			return emit(user, s.loc, fde->pc_end, &s.row);
		return 0;
	}
	if (row)
		*row = s.row;
	return 0;
}
