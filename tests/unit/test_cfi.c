/* test_cfi.c - the CFI parser, row interpreter, expression evaluator and
 * table compiler on hand-assembled .eh_frame / .debug_frame bytes. */
#include <dwarf.h>
#include <errno.h>
#include <stdint.h>

#include "dwarf/cfi.h"
#include "dwarf/dwarf_expr.h"
#include "table/unwind_table.h"
#include "harness.h"

/* ---- assembling CFI --------------------------------------------------- */

#define SEC_VADDR 0x1000u /* where the test section pretends to live */

struct asmbuf {
	uint8_t b[1024];
	size_t n;
};

static void put(struct asmbuf *a, const void *p, size_t n)
{
	if (n)
		memcpy(a->b + a->n, p, n);
	a->n += n;
}

static void u8(struct asmbuf *a, uint8_t v) { put(a, &v, 1); }
static void u32(struct asmbuf *a, uint32_t v) { put(a, &v, 4); }
static void u64(struct asmbuf *a, uint64_t v) { put(a, &v, 8); }

static void uleb(struct asmbuf *a, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		u8(a, b | (v ? 0x80 : 0));
	} while (v);
}

static void sleb(struct asmbuf *a, int64_t v)
{
	for (;;) {
		uint8_t b = v & 0x7f;

		v >>= 7;
		if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
			u8(a, b);
			return;
		}
		u8(a, b | 0x80);
	}
}

/* Patches the 32-bit length of the entry starting at `at`, padding the
 * entry with DW_CFA_nop to a multiple of 8 as real producers do. */
static void close_entry(struct asmbuf *a, size_t at)
{
	uint32_t len;

	while ((a->n - at) % 8)
		u8(a, DW_CFA_nop);
	len = (uint32_t)(a->n - at - 4);
	memcpy(a->b + at, &len, 4);
}

/* An .eh_frame CIE "zR" (FDE addresses pcrel|sdata4), code_align 1,
 * data_align -8, RA column 16, with initial instructions
 * def_cfa rsp+8, offset(RA) cfa-8, plus `extra`. */
static size_t eh_cie(struct asmbuf *a, const char *aug, const uint8_t *extra,
		     size_t nextra)
{
	size_t at = a->n;

	u32(a, 0);
	u32(a, 0); /* CIE id */
	u8(a, 1);
	put(a, aug, strlen(aug) + 1);
	uleb(a, 1);
	sleb(a, -8);
	u8(a, 16);
	if (aug[0] == 'z') {
		struct asmbuf d = { .n = 0 };

		for (const char *p = aug + 1; *p; p++) {
			if (*p == 'R') {
				u8(&d, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
			} else if (*p == 'P') {
				u8(&d, DW_EH_PE_udata8);
				u64(&d, 0x12345678);
			} else if (*p == 'L') {
				u8(&d, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
			}
		}
		uleb(a, d.n);
		put(a, d.b, d.n);
	}
	u8(a, DW_CFA_def_cfa);
	uleb(a, 7);
	uleb(a, 8);
	u8(a, DW_CFA_offset | 16);
	uleb(a, 1);
	put(a, extra, nextra);
	close_entry(a, at);
	return at;
}

static size_t eh_fde(struct asmbuf *a, size_t cie, uint64_t begin,
		     uint32_t range, const uint8_t *insns, size_t n, bool lsda)
{
	size_t at = a->n;

	u32(a, 0);
	u32(a, (uint32_t)(a->n - cie));
	u32(a, (uint32_t)(begin - (SEC_VADDR + a->n)));
	u32(a, range);
	uleb(a, lsda ? 4 : 0);
	if (lsda)
		u32(a, 0);
	put(a, insns, n);
	close_entry(a, at);
	return at;
}

static struct cfi_input eh_input(const struct asmbuf *a)
{
	return (struct cfi_input){ .data = a->b, .size = a->n,
				   .vaddr = SEC_VADDR, .is_eh_frame = 1 };
}

static struct unwind_table *compile1(const struct asmbuf *a)
{
	struct cfi_input in = eh_input(a);
	struct unwind_table *t = NULL;

	CHECK(unwind_table__compile(&in, 1, NULL, &t) == 0);
	return t;
}

static bool row_is(const struct unwind_row *r, int kind, int off,
		   int rbp_kind, int rbp_off)
{
	return r && r->cfa_kind == kind && r->cfa_off == off &&
	       r->rbp_kind == rbp_kind && r->rbp_off == rbp_off;
}

/* The typical prologue: push rbp; mov rsp,rbp; ...; leave; ret. */
static const uint8_t prologue[] = {
	DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16,
	DW_CFA_offset | 6, 2,
	DW_CFA_advance_loc | 3, DW_CFA_def_cfa_register, 6,
	DW_CFA_advance_loc2, 0x10, 0x00, DW_CFA_def_cfa, 7, 8,
};

static void fixed_rows(void)
{
	struct asmbuf a = { .n = 0 };
	struct unwind_table *t;
	struct unwind_table_stats st;
	uint64_t lo, hi;
	size_t cie = eh_cie(&a, "zR", NULL, 0);

	eh_fde(&a, cie, 0x4000, 0x40, prologue, sizeof(prologue), false);
	t = compile1(&a);
	if (!t)
		return;
	unwind_table__range(t, &lo, &hi);
	CHECK_EQ_U64(lo, 0x4000);
	CHECK_EQ_U64(hi, 0x4040);
	CHECK(unwind_table__lookup(t, 0x3fff) == NULL);
	CHECK(unwind_table__lookup(t, 0x4040) == NULL);
	CHECK(row_is(unwind_table__lookup(t, 0x4000), UT_CFA_RSP, 8,
		     UT_RBP_SAME, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x4001), UT_CFA_RSP, 16,
		     UT_RBP_CFA_OFF, -16));
	CHECK(row_is(unwind_table__lookup(t, 0x4004), UT_CFA_RBP, 16,
		     UT_RBP_CFA_OFF, -16));
	CHECK(row_is(unwind_table__lookup(t, 0x4013), UT_CFA_RBP, 16,
		     UT_RBP_CFA_OFF, -16));
	/* def_cfa rsp+8 keeps the rbp rule: a different row. */
	CHECK(row_is(unwind_table__lookup(t, 0x4014), UT_CFA_RSP, 8,
		     UT_RBP_CFA_OFF, -16));
	CHECK(row_is(unwind_table__lookup(t, 0x403f), UT_CFA_RSP, 8,
		     UT_RBP_CFA_OFF, -16));
	unwind_table__stats(t, &st);
	CHECK(st.rows == 4);
	CHECK(st.dwarf_rows == 0);
	unwind_table__free(t);
}

static void gaps_merges_and_overlap(void)
{
	struct asmbuf a = { .n = 0 }, b = { .n = 0 };
	struct cfi_input in[2];
	struct unwind_table *t = NULL;
	struct unwind_table_stats st;
	static const uint8_t off16[] = { DW_CFA_def_cfa_offset, 16 };
	size_t cie = eh_cie(&a, "zR", NULL, 0);

	/* Two adjacent FDEs with the same row merge; a gap gets NONE. */
	eh_fde(&a, cie, 0x4000, 0x10, NULL, 0, false);
	eh_fde(&a, cie, 0x4010, 0x10, NULL, 0, false);
	eh_fde(&a, cie, 0x4100, 0x10, off16, sizeof(off16), false);
	/* Overlaps the first FDE, in the same input: the first keeps what
	 * it covers, this one gets the rest of its range, up to where the
	 * next FDE's range begins to be free. */
	eh_fde(&a, cie, 0x4008, 0x10, off16, sizeof(off16), false);
	u32(&a, 0); /* terminator: what follows is never read */
	u32(&a, 0xdeadbeef);
	/* A second input overlapping the first loses where they overlap. */
	cie = eh_cie(&b, "zR", off16, sizeof(off16));
	eh_fde(&b, cie, 0x3ff0, 0x20, NULL, 0, false);
	eh_fde(&b, cie, 0x4110, 0x10, NULL, 0, false);
	in[0] = eh_input(&a);
	in[1] = eh_input(&b);
	CHECK(unwind_table__compile(in, 2, NULL, &t) == 0);
	if (!t)
		return;
	CHECK(row_is(unwind_table__lookup(t, 0x3ff0), UT_CFA_RSP, 16, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x3fff), UT_CFA_RSP, 16, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x4000), UT_CFA_RSP, 8, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x400f), UT_CFA_RSP, 8, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x4010), UT_CFA_RSP, 16, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x4018), UT_CFA_RSP, 8, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x401f), UT_CFA_RSP, 8, 0, 0));
	CHECK(unwind_table__lookup(t, 0x4020) == NULL);
	CHECK(unwind_table__lookup(t, 0x40ff) == NULL);
	CHECK(row_is(unwind_table__lookup(t, 0x4100), UT_CFA_RSP, 16, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x411f), UT_CFA_RSP, 16, 0, 0));
	CHECK(unwind_table__lookup(t, 0x4120) == NULL);
	unwind_table__stats(t, &st);
	/* rsp16, rsp8, rsp16, rsp8, none, rsp16 */
	CHECKF(st.rows == 6, "%zu", st.rows);
	unwind_table__free(t);
}

/* Runs the single FDE of a to address pc and returns its row. */
static int row_at(const struct asmbuf *a, size_t fde_off, uint64_t pc,
		  struct cfi_row *row)
{
	struct cfi_input in = eh_input(a);
	struct cfi_cie cie;
	struct cfi_fde fde;

	if (cfi_fde_at(&in, fde_off, &cie, &fde))
		return -EINVAL;
	return cfi_run(&in, &cie, &fde, pc, NULL, NULL, row);
}

static void every_rule_kind(void)
{
	static const uint8_t prog[] = {
		DW_CFA_offset_extended_sf, 3, 0x7e,	    /* rbx cfa+16 */
		DW_CFA_GNU_negative_offset_extended, 12, 3, /* r12 cfa+24 */
		DW_CFA_val_offset, 13, 1,		    /* r13 = cfa-8 */
		DW_CFA_val_offset_sf, 14, 2,		    /* r14 = cfa-16 */
		DW_CFA_register, 15, 0,			    /* r15 in rax */
		DW_CFA_undefined, 1,
		DW_CFA_same_value, 2,
		DW_CFA_offset_extended, 4, 4,		    /* rsi cfa-32 */
		DW_CFA_expression, 5, 2, DW_OP_breg7, 0x10,
		DW_CFA_val_expression, 8, 3, DW_OP_lit5, DW_OP_lit3,
		DW_OP_mul,
		DW_CFA_offset | 40, 1,			    /* xmm: dropped */
		DW_CFA_GNU_args_size, 24,
		DW_CFA_advance_loc1, 0x20,
		DW_CFA_restore_extended, 3,
		DW_CFA_restore | 16,
		DW_CFA_advance_loc4, 0x10, 0, 0, 0,
		DW_CFA_def_cfa_sf, 6, 0x7e,		    /* rbp+16 */
		DW_CFA_advance_loc | 2,
		DW_CFA_def_cfa_offset_sf, 0x7c,		    /* rbp+32 */
	};
	struct asmbuf a = { .n = 0 };
	struct cfi_row r;
	size_t cie = eh_cie(&a, "zR", NULL, 0);
	size_t fde = eh_fde(&a, cie, 0x4000, 0x100, prog, sizeof(prog), true);

	CHECK(row_at(&a, fde, 0x4000, &r) == 0);
	CHECK(r.cfa_kind == CFI_CFA_REG_OFF && r.cfa_reg == 7 &&
	      r.cfa_off == 8);
	CHECK(r.rules[3].kind == CFI_RULE_OFFSET && r.rules[3].off == 16);
	CHECK(r.rules[12].kind == CFI_RULE_OFFSET && r.rules[12].off == 24);
	CHECK(r.rules[13].kind == CFI_RULE_VAL_OFFSET && r.rules[13].off == -8);
	CHECK(r.rules[14].kind == CFI_RULE_VAL_OFFSET &&
	      r.rules[14].off == -16);
	CHECK(r.rules[15].kind == CFI_RULE_REGISTER && r.rules[15].reg == 0);
	CHECK(r.rules[1].kind == CFI_RULE_UNDEFINED);
	CHECK(r.rules[2].kind == CFI_RULE_SAME);
	CHECK(r.rules[4].kind == CFI_RULE_OFFSET && r.rules[4].off == -32);
	CHECK(r.rules[5].kind == CFI_RULE_EXPR && r.rules[5].expr_len == 2);
	CHECK(r.rules[8].kind == CFI_RULE_VAL_EXPR && r.rules[8].expr_len == 3);
	CHECK(r.rules[16].kind == CFI_RULE_OFFSET && r.rules[16].off == -8);
	CHECK(r.args_size == 24);

	CHECK(row_at(&a, fde, 0x4020, &r) == 0);
	CHECK(r.rules[3].kind == CFI_RULE_UNSET); /* restored to the CIE's */
	CHECK(r.rules[16].kind == CFI_RULE_OFFSET && r.rules[16].off == -8);
	CHECK(r.rules[12].kind == CFI_RULE_OFFSET);
	CHECK(r.cfa_reg == 7);
	CHECK(row_at(&a, fde, 0x4030, &r) == 0);
	CHECK(r.cfa_reg == 6 && r.cfa_off == 16);
	CHECK(row_at(&a, fde, 0x40ff, &r) == 0);
	CHECK(r.cfa_reg == 6 && r.cfa_off == 32);
	CHECK(row_at(&a, fde, 0x4100, &r) == -EINVAL); /* outside */
}

static void remember_restore(void)
{
	static const uint8_t prog[] = {
		DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16,
		DW_CFA_offset | 3, 2,
		DW_CFA_remember_state,
		DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 8,
		DW_CFA_restore | 3,
		DW_CFA_advance_loc | 1, DW_CFA_restore_state,
	};
	static const uint8_t underflow[] = {
		DW_CFA_advance_loc | 1, DW_CFA_restore_state,
	};
	struct asmbuf a = { .n = 0 };
	struct asmbuf deep = { .n = 0 };
	struct cfi_row r;
	size_t cie = eh_cie(&a, "zR", NULL, 0);
	size_t fde = eh_fde(&a, cie, 0x4000, 0x10, prog, sizeof(prog), false);
	size_t bad = eh_fde(&a, cie, 0x5000, 0x10, underflow,
			    sizeof(underflow), false);
	uint8_t many[40];

	CHECK(row_at(&a, fde, 0x4002, &r) == 0);
	CHECK(r.cfa_off == 8 && r.rules[3].kind == CFI_RULE_UNSET);
	CHECK(row_at(&a, fde, 0x4003, &r) == 0);
	CHECK(r.cfa_off == 16 && r.rules[3].kind == CFI_RULE_OFFSET &&
	      r.rules[3].off == -16);
	CHECK(row_at(&a, bad, 0x5000, &r) == 0); /* before the bad op */
	CHECK(row_at(&a, bad, 0x5001, &r) == -EINVAL);

	/* Deeper than CFI_STATE_DEPTH: the FDE is rejected. */
	memset(many, DW_CFA_remember_state, sizeof(many));
	cie = eh_cie(&deep, "zR", NULL, 0);
	fde = eh_fde(&deep, cie, 0x4000, 0x10, many, sizeof(many), false);
	CHECK(row_at(&deep, fde, 0x4000, &r) == -EINVAL);
	{
		struct unwind_table *t = compile1(&deep);

		CHECK(t && unwind_table__lookup(t, 0x4000) == NULL);
		unwind_table__free(t);
	}
}

static int fake_read(void *user, uint64_t addr, void *buf, size_t len)
{
	if (addr < 0x7000 || addr + len > 0x8000)
		return -EFAULT;
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = (uint8_t)(addr + i);
	return 0;
}

static uint64_t fake_u64(uint64_t addr)
{
	uint64_t v;

	fake_read(NULL, addr, &v, 8);
	return v;
}

static int eval(const uint8_t *e, size_t n, uint64_t *out)
{
	struct stacksnap_regs regs = { .valid = 0xffff };
	struct dwarf_expr_env env = { .regs = &regs, .read = fake_read,
				      .cfa = 0x7100, .have_cfa = true };

	for (int i = 0; i < 16; i++)
		regs.regs[i] = 0x7000 + i * 0x10;
	return dwarf_expr_eval(e, n, &env, false, 0, out);
}

static void expressions(void)
{
	uint64_t v = 0;
	static const uint8_t arith[] = {
		DW_OP_lit7, DW_OP_const1s, 0xfe, DW_OP_mul,   /* -14 */
		DW_OP_abs, DW_OP_const2u, 0x00, 0x01, DW_OP_plus, /* 270 */
		DW_OP_lit4, DW_OP_mod, DW_OP_lit5, DW_OP_shl, /* 64 */
		DW_OP_constu, 0x80, 0x01, DW_OP_or,	      /* 192 */
		DW_OP_consts, 0x7f, DW_OP_lit3, DW_OP_rot,    /* 3 192 -1 */
		DW_OP_minus, DW_OP_swap, DW_OP_drop,	      /* 193 */
		DW_OP_dup, DW_OP_pick, 1, DW_OP_eq, DW_OP_plus, /* 194 */
		DW_OP_lit2, DW_OP_shr, DW_OP_neg, DW_OP_lit1, DW_OP_shra, /* -24 */
		DW_OP_lit5, DW_OP_over, DW_OP_over, DW_OP_lt, /* -24 5 1 */
		DW_OP_plus, DW_OP_plus,			      /* -18 */
	};
	static const uint8_t mem[] = { DW_OP_breg7, 0x10, DW_OP_deref };
	static const uint8_t mem2[] = { DW_OP_bregx, 6, 0x01,
					DW_OP_deref_size, 2 };
	static const uint8_t loop[] = { DW_OP_lit1, DW_OP_skip, 0xfd, 0xff };
	static const uint8_t branch[] = {
		DW_OP_lit0, DW_OP_bra, 2, 0, DW_OP_lit9, DW_OP_lit9,
		DW_OP_call_frame_cfa, DW_OP_plus_uconst, 8,
	};
	static const uint8_t bad_read[] = { DW_OP_lit1, DW_OP_deref };
	static const uint8_t div0[] = { DW_OP_lit1, DW_OP_lit0, DW_OP_div };
	static const uint8_t under[] = { DW_OP_plus };
	static const uint8_t trunc[] = { DW_OP_const4u, 1, 2 };
	static const uint8_t skip_out[] = { DW_OP_skip, 0x10, 0 };
	uint8_t deep[70];

	CHECK(eval(arith, sizeof(arith), &v) == 0);
	CHECKF((int64_t)v == -18, "%lld", (long long)v);
	CHECK(eval(mem, sizeof(mem), &v) == 0);
	CHECK_EQ_U64(v, fake_u64(0x7080));
	CHECK(eval(mem2, sizeof(mem2), &v) == 0);
	CHECK_EQ_U64(v, 0x6261);
	CHECK(eval(branch, sizeof(branch), &v) == 0);
	CHECK_EQ_U64(v, 0x7108); /* the lit0 stays below */
	CHECK(eval(loop, sizeof(loop), &v) == -EINVAL); /* step limit */
	CHECK(eval(bad_read, sizeof(bad_read), &v) == -EFAULT);
	CHECK(eval(div0, sizeof(div0), &v) == -EINVAL);
	CHECK(eval(under, sizeof(under), &v) == -EINVAL);
	CHECK(eval(trunc, sizeof(trunc), &v) == -EINVAL);
	CHECK(eval(skip_out, sizeof(skip_out), &v) == -EINVAL);
	memset(deep, DW_OP_lit1, sizeof(deep));
	CHECK(eval(deep, 64, &v) == 0);
	CHECK(eval(deep, sizeof(deep), &v) == -EINVAL); /* stack limit */
}

static void plt_and_dwarf_rows(void)
{
	static const uint8_t plt[] = {
		DW_CFA_def_cfa_offset, 16, DW_CFA_advance_loc | 6,
		DW_CFA_def_cfa_offset, 24, DW_CFA_advance_loc | 10,
		DW_CFA_def_cfa_expression, 11, DW_OP_breg7, 8, DW_OP_breg16, 0,
		DW_OP_lit15, DW_OP_and, DW_OP_lit11, DW_OP_ge, DW_OP_lit3,
		DW_OP_shl, DW_OP_plus,
	};
	/* Same with lit10: not the rule UT_CFA_PLT encodes. */
	static const uint8_t plt10[] = {
		DW_CFA_def_cfa_expression, 11, DW_OP_breg7, 8, DW_OP_breg16, 0,
		DW_OP_lit15, DW_OP_and, DW_OP_lit10, DW_OP_ge, DW_OP_lit3,
		DW_OP_shl, DW_OP_plus,
	};
	/* rbx holds the CFA, rbp saved via an expression. */
	static const uint8_t odd[] = {
		DW_CFA_def_cfa, 3, 32,
		DW_CFA_expression, 6, 2, DW_OP_breg7, 8,
		DW_CFA_register, 12, 13,
	};
	struct asmbuf a = { .n = 0 }, s = { .n = 0 };
	struct unwind_table *t;
	const struct unwind_row *r;
	struct stacksnap_regs regs = { .valid = (1u << 17) - 1 }, caller;
	uint64_t cfa = 0;
	size_t cie = eh_cie(&a, "zR", NULL, 0);

	eh_fde(&a, cie, 0x4000, 0x40, plt, sizeof(plt), false);
	eh_fde(&a, cie, 0x5000, 0x40, plt10, sizeof(plt10), false);
	eh_fde(&a, cie, 0x6000, 0x10, odd, sizeof(odd), false);
	t = compile1(&a);
	if (!t)
		return;
	CHECK(row_is(unwind_table__lookup(t, 0x4005), UT_CFA_RSP, 16, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x4006), UT_CFA_RSP, 24, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x4010), UT_CFA_PLT, 0, 0, 0));
	r = unwind_table__lookup(t, 0x5000);
	CHECK(r && r->cfa_kind == UT_CFA_DWARF);
	for (int i = 0; i < 17; i++)
		regs.regs[i] = 0x7000 + i * 0x20;
	regs.regs[STACKSNAP_REG_RIP] = 0x500a; /* (rip & 15) >= 10 */
	CHECK(unwind_table__eval_dwarf(t, r, 0x500a, 0, &regs, fake_read,
				       NULL, &caller, &cfa) == 0);
	CHECK_EQ_U64(cfa, regs.regs[7] + 16);
	CHECK_EQ_U64(caller.regs[16], fake_u64(cfa - 8));
	CHECK_EQ_U64(caller.regs[7], cfa);
	CHECK(caller.valid & (1u << 16));

	r = unwind_table__lookup(t, 0x6004);
	CHECK(r && r->cfa_kind == UT_CFA_DWARF);
	CHECK(unwind_table__eval_dwarf(t, r, 0x6004, 0, &regs, fake_read,
				       NULL, &caller, &cfa) == 0);
	CHECK_EQ_U64(cfa, regs.regs[3] + 32);
	CHECK_EQ_U64(caller.regs[6], fake_u64(regs.regs[7] + 8));
	CHECK_EQ_U64(caller.regs[12], regs.regs[13]);
	CHECK_EQ_U64(caller.regs[3], regs.regs[3]); /* unset: same value */
	/* CFA from a register the caller does not know: not usable. */
	regs.valid &= ~(1u << 3);
	CHECK(unwind_table__eval_dwarf(t, r, 0x6004, 0, &regs, fake_read,
				       NULL, &caller, &cfa) == -EINVAL);
	regs.valid |= 1u << 3;
	/* The return address in unreadable memory. */
	regs.regs[3] = 0x100;
	CHECK(unwind_table__eval_dwarf(t, r, 0x6004, 0, &regs, fake_read,
				       NULL, &caller, &cfa) == -EFAULT);
	CHECK(unwind_table__eval_dwarf(t, unwind_table__lookup(t, 0x4006),
				       0x4006, 0, &regs, fake_read, NULL,
				       &caller, &cfa) == -EINVAL);
	unwind_table__free(t);

	/* A signal frame CIE ('S') always stays DWARF. */
	cie = eh_cie(&s, "zRS", NULL, 0);
	eh_fde(&s, cie, 0x4000, 0x10, NULL, 0, false);
	t = compile1(&s);
	r = t ? unwind_table__lookup(t, 0x4000) : NULL;
	CHECK(r && r->cfa_kind == UT_CFA_DWARF);
	unwind_table__free(t);
}

static void undefined_ra_and_rbp(void)
{
	static const uint8_t prog[] = {
		DW_CFA_undefined, 6, DW_CFA_advance_loc | 4,
		DW_CFA_undefined, 16,
	};
	struct asmbuf a = { .n = 0 };
	struct unwind_table *t;
	size_t cie = eh_cie(&a, "zPLR", NULL, 0);

	eh_fde(&a, cie, 0x4000, 0x10, prog, sizeof(prog), true);
	t = compile1(&a);
	if (!t)
		return;
	CHECK(row_is(unwind_table__lookup(t, 0x4000), UT_CFA_RSP, 8,
		     UT_RBP_UNDEFINED, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x4004), UT_CFA_UNDEFINED_RA, 0,
		     0, 0));
	unwind_table__free(t);
}

/* .debug_frame: CIE id all ones, CIE pointer an offset; versions 3 and 4;
 * a 64-bit DWARF FDE; absolute 8-byte addresses. */
static void debug_frame_formats(void)
{
	struct asmbuf a = { .n = 0 };
	struct cfi_input in;
	struct unwind_table *t = NULL;
	size_t cie3, cie4, at;

	cie3 = a.n;
	u32(&a, 0);
	u32(&a, 0xffffffff);
	u8(&a, 3);
	u8(&a, 0);	/* no augmentation */
	uleb(&a, 1);
	sleb(&a, -8);
	uleb(&a, 16);
	u8(&a, DW_CFA_def_cfa); uleb(&a, 7); uleb(&a, 8);
	u8(&a, DW_CFA_offset | 16); uleb(&a, 1);
	close_entry(&a, cie3);

	at = a.n;	/* 32-bit FDE */
	u32(&a, 0);
	u32(&a, (uint32_t)cie3);
	u64(&a, 0x4000);
	u64(&a, 0x20);
	u8(&a, DW_CFA_advance_loc | 4);
	u8(&a, DW_CFA_def_cfa_offset); uleb(&a, 32);
	close_entry(&a, at);

	cie4 = a.n;	/* 64-bit CIE, version 4 */
	u32(&a, 0xffffffff);
	u64(&a, 0);
	u64(&a, UINT64_MAX);
	u8(&a, 4);
	u8(&a, 0);
	u8(&a, 8);	/* address size */
	u8(&a, 0);	/* segment selector size */
	uleb(&a, 1);
	sleb(&a, -8);
	uleb(&a, 16);
	u8(&a, DW_CFA_def_cfa); uleb(&a, 6); uleb(&a, 16);
	u8(&a, DW_CFA_offset | 16); uleb(&a, 1);
	while ((a.n - cie4) % 8)
		u8(&a, 0);
	{
		uint64_t len = a.n - cie4 - 12;

		memcpy(a.b + cie4 + 4, &len, 8);
	}
	at = a.n;	/* 64-bit FDE */
	u32(&a, 0xffffffff);
	u64(&a, 0);
	u64(&a, cie4);
	u64(&a, 0x5000);
	u64(&a, 0x10);
	while ((a.n - at) % 8)
		u8(&a, 0);
	{
		uint64_t len = a.n - at - 12;

		memcpy(a.b + at + 4, &len, 8);
	}
	in = (struct cfi_input){ .data = a.b, .size = a.n, .vaddr = 0,
				 .is_eh_frame = 0 };
	CHECK(unwind_table__compile(&in, 1, NULL, &t) == 0);
	if (!t)
		return;
	CHECK(row_is(unwind_table__lookup(t, 0x4003), UT_CFA_RSP, 8, 0, 0));
	CHECK(row_is(unwind_table__lookup(t, 0x4004), UT_CFA_RSP, 32, 0, 0));
	CHECK(unwind_table__lookup(t, 0x4020) == NULL);
	CHECK(row_is(unwind_table__lookup(t, 0x5000), UT_CFA_RBP, 16, 0, 0));
	unwind_table__free(t);
	/* The same bytes read as .eh_frame make no sense: nothing usable,
	 * but no crash either. */
	in.is_eh_frame = 1;
	CHECK(unwind_table__compile(&in, 1, NULL, &t) == 0);
	unwind_table__free(t);
}

static void truncated_and_garbage(void)
{
	struct asmbuf a = { .n = 0 };
	struct cfi_input in;
	uint8_t junk[512];
	uint64_t x = 88172645463325252ull;
	size_t cie = eh_cie(&a, "zR", NULL, 0);

	eh_fde(&a, cie, 0x4000, 0x40, prologue, sizeof(prologue), false);
	eh_fde(&a, cie, 0x5000, 0x40, prologue, sizeof(prologue), false);
	/* Every truncation compiles cleanly; FDEs cut short are dropped. */
	for (size_t n = 0; n <= a.n; n++) {
		struct unwind_table *t = NULL;

		in = eh_input(&a);
		in.size = n;
		CHECK(unwind_table__compile(&in, 1, NULL, &t) == 0);
		if (t && n < a.n)
			CHECK(unwind_table__lookup(t, 0x5000) == NULL);
		unwind_table__free(t);
	}
	/* Random bytes, and random bytes behind a valid CIE. */
	for (int round = 0; round < 200; round++) {
		struct unwind_table *t = NULL;

		for (size_t i = 0; i < sizeof(junk); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			junk[i] = (uint8_t)x;
		}
		if (round & 1)
			memcpy(junk, a.b, 40);
		in = (struct cfi_input){ .data = junk, .size = sizeof(junk),
					 .vaddr = SEC_VADDR,
					 .is_eh_frame = round & 2 };
		CHECK(unwind_table__compile(&in, 1, NULL, &t) == 0);
		if (t)
			unwind_table__lookup(t, 0x4000);
		unwind_table__free(t);
	}
}

static void leb_overflow_rejected(void)
{
	static const uint8_t prog[] = {
		DW_CFA_def_cfa_offset, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0x7f,
	};
	static const uint8_t huge_off[] = {
		DW_CFA_def_cfa_offset, 0x80, 0x80, 0x80, 0x80, 0x10,
	};
	struct asmbuf a = { .n = 0 };
	struct unwind_table *t;
	struct cfi_row r;
	size_t cie = eh_cie(&a, "zR", NULL, 0);
	size_t fde = eh_fde(&a, cie, 0x4000, 0x10, prog, sizeof(prog), false);

	eh_fde(&a, cie, 0x5000, 0x10, huge_off, sizeof(huge_off), false);
	CHECK(row_at(&a, fde, 0x4000, &r) == -EINVAL);
	t = compile1(&a);
	if (!t)
		return;
	CHECK(unwind_table__lookup(t, 0x4000) == NULL);
	/* 2^32 does not fit a row's offset: the row stays DWARF. */
	CHECK(unwind_table__lookup(t, 0x5000) &&
	      unwind_table__lookup(t, 0x5000)->cfa_kind == UT_CFA_DWARF);
	unwind_table__free(t);
}

TEST_MAIN("cfi", TEST(fixed_rows), TEST(gaps_merges_and_overlap),
	  TEST(every_rule_kind), TEST(remember_restore), TEST(expressions),
	  TEST(plt_and_dwarf_rows), TEST(undefined_ra_and_rbp),
	  TEST(debug_frame_formats), TEST(truncated_and_garbage),
	  TEST(leb_overflow_rejected))
