/* test_table_vs_libdw.c - differential test of the compiled unwind table
 * against libdw's dwarf_cfi_addrframe, address by address, on the system's
 * libc, ld.so and libstdc++ and on small programs this test builds. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "table/unwind_table.h"
#include "harness.h"

/* Under the sanitizers every address costs ~10x: compare a sample. */
#if defined(__SANITIZE_ADDRESS__)
#define SAMPLE_EVERY 17
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SAMPLE_EVERY 17
#endif
#endif
#ifndef SAMPLE_EVERY
#define SAMPLE_EVERY 1
#endif

#define NSTATES 3

/* ---- synthetic machine states ---------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* Memory is a pure function of the address, so both evaluators see the
 * same bytes whatever size they read. */
static uint8_t mem_byte(unsigned state, uint64_t addr)
{
	return (uint8_t)(mix((addr >> 3) * 31 + state) >> ((addr & 7) * 8));
}

static int mem_read(void *user, uint64_t addr, void *buf, size_t len)
{
	unsigned state = (unsigned)(uintptr_t)user;

	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = mem_byte(state, addr + i);
	return 0;
}

static uint64_t mem_u64(unsigned state, uint64_t addr)
{
	uint64_t v;

	mem_read((void *)(uintptr_t)state, addr, &v, 8);
	return v;
}

static void make_regs(unsigned state, uint64_t pc, struct stacksnap_regs *r)
{
	for (unsigned i = 0; i < STACKSNAP_REG_COUNT; i++)
		r->regs[i] = mix(state * 100 + i + 1);
	r->regs[STACKSNAP_REG_RSP] &= ~(uint64_t)0xf;
	r->regs[STACKSNAP_REG_RIP] = pc;
	r->valid = (1u << STACKSNAP_REG_COUNT) - 1;
}

/* ---- a small evaluator of libdw's decoded Dwarf_Op arrays ------------- *
 * Independent of src/dwarf: it works on libdw's decoding of the bytes. */

enum { LOC_MEMORY, LOC_VALUE, LOC_REGISTER };

static int eval_ops(const Dwarf_Op *ops, size_t nops, unsigned state,
		    const struct stacksnap_regs *regs, uint64_t cfa,
		    int *kind, uint64_t *out)
{
	uint64_t st[64];
	size_t n = 0, steps = 0;

	*kind = LOC_MEMORY;
	for (size_t i = 0; i < nops; i++) {
		const Dwarf_Op *o = &ops[i];
		uint8_t a = o->atom;
		uint64_t x, y;

		if (++steps > 1000 || n >= 60)
			return -1;
		if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			st[n++] = a - DW_OP_lit0;
			continue;
		}
		if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
			if (a - DW_OP_breg0 >= STACKSNAP_REG_COUNT)
				return -1;
			st[n++] = regs->regs[a - DW_OP_breg0] + o->number;
			continue;
		}
		if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
			if (a - DW_OP_reg0 >= STACKSNAP_REG_COUNT)
				return -1;
			*kind = LOC_REGISTER;
			*out = regs->regs[a - DW_OP_reg0];
			return 0;
		}
		switch (a) {
		case DW_OP_regx:
			if (o->number >= STACKSNAP_REG_COUNT)
				return -1;
			*kind = LOC_REGISTER;
			*out = regs->regs[o->number];
			return 0;
		case DW_OP_bregx:
			if (o->number >= STACKSNAP_REG_COUNT)
				return -1;
			st[n++] = regs->regs[o->number] + o->number2;
			break;
		case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u:
		case DW_OP_const2s: case DW_OP_const4u: case DW_OP_const4s:
		case DW_OP_const8u: case DW_OP_const8s: case DW_OP_constu:
		case DW_OP_consts:
			st[n++] = o->number;
			break;
		case DW_OP_call_frame_cfa:
			st[n++] = cfa;
			break;
		case DW_OP_stack_value:
			*kind = LOC_VALUE;
			break;
		case DW_OP_nop:
			break;
		case DW_OP_dup: if (n < 1) return -1; st[n] = st[n - 1]; n++; break;
		case DW_OP_drop: if (n < 1) return -1; n--; break;
		case DW_OP_over: if (n < 2) return -1; st[n] = st[n - 2]; n++; break;
		case DW_OP_pick:
			if (o->number >= n) return -1;
			st[n] = st[n - 1 - o->number]; n++;
			break;
		case DW_OP_swap:
			if (n < 2) return -1;
			x = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = x;
			break;
		case DW_OP_rot:
			if (n < 3) return -1;
			x = st[n - 1]; st[n - 1] = st[n - 2];
			st[n - 2] = st[n - 3]; st[n - 3] = x;
			break;
		case DW_OP_deref:
			if (n < 1) return -1;
			st[n - 1] = mem_u64(state, st[n - 1]);
			break;
		case DW_OP_deref_size:
			if (n < 1 || o->number < 1 || o->number > 8) return -1;
			x = 0;
			mem_read((void *)(uintptr_t)state, st[n - 1], &x,
				 o->number);
			st[n - 1] = x;
			break;
		case DW_OP_plus_uconst:
			if (n < 1) return -1;
			st[n - 1] += o->number;
			break;
		case DW_OP_neg: if (n < 1) return -1; st[n - 1] = -st[n - 1]; break;
		case DW_OP_not: if (n < 1) return -1; st[n - 1] = ~st[n - 1]; break;
		case DW_OP_plus: case DW_OP_minus: case DW_OP_and:
		case DW_OP_or: case DW_OP_xor: case DW_OP_mul:
		case DW_OP_shl: case DW_OP_shr: case DW_OP_ge: case DW_OP_gt:
		case DW_OP_le: case DW_OP_lt: case DW_OP_eq: case DW_OP_ne:
			if (n < 2) return -1;
			y = st[--n];
			x = st[n - 1];
			switch (a) {
			case DW_OP_plus: x += y; break;
			case DW_OP_minus: x -= y; break;
			case DW_OP_and: x &= y; break;
			case DW_OP_or: x |= y; break;
			case DW_OP_xor: x ^= y; break;
			case DW_OP_mul: x *= y; break;
			case DW_OP_shl: x = y >= 64 ? 0 : x << y; break;
			case DW_OP_shr: x = y >= 64 ? 0 : x >> y; break;
			case DW_OP_ge: x = (int64_t)x >= (int64_t)y; break;
			case DW_OP_gt: x = (int64_t)x > (int64_t)y; break;
			case DW_OP_le: x = (int64_t)x <= (int64_t)y; break;
			case DW_OP_lt: x = (int64_t)x < (int64_t)y; break;
			case DW_OP_eq: x = x == y; break;
			case DW_OP_ne: x = x != y; break;
			}
			st[n - 1] = x;
			break;
		default:
			return -1; /* not needed by the CFI seen so far */
		}
	}
	if (n == 0)
		return -1;
	*out = st[n - 1];
	return 0;
}

/* The value of a register in the caller according to libdw's rule.
 * Returns 0 (*defined tells undefined apart), or -1 when the rule uses
 * something eval_ops does not handle. */
static int libdw_reg(Dwarf_Frame *frame, int regno, unsigned state,
		     const struct stacksnap_regs *regs, uint64_t cfa,
		     bool *defined, bool *same, uint64_t *val)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int kind;
	uint64_t v;

	*defined = false;
	*same = false;
	if (dwarf_frame_register(frame, regno, mem, &ops, &nops) != 0)
		return -1;
	if (nops == 0) {
		if (ops == NULL) { /* same value */
			*defined = true;
			*same = true;
			*val = regs->regs[regno];
		}
		return 0;
	}
	if (eval_ops(ops, nops, state, regs, cfa, &kind, &v))
		return -1;
	*defined = true;
	*val = kind == LOC_MEMORY ? mem_u64(state, v) : v;
	return 0;
}

/* ---- comparison ------------------------------------------------------- */

/* Per-file tallies. Every address compared lands in exactly one of
 * agreed, disagreed or one of the counted exceptions. */
struct tally {
	size_t compared, agreed, disagreed;
	size_t unsupported; /* libdw rule uses an op eval_ops lacks */
	/* rbx with no rule in the CFI: libdw's built-in x86-64 defaults
	 * (elfutils 0.188) give DWARF register 0 (rax) "same value" and 3
	 * (rbx) "undefined", the other way round from the psABI, where rbx
	 * is callee-saved and so unchanged unless a rule says otherwise; we
	 * keep it unchanged. An explicit DW_CFA_undefined for rbx is
	 * UT_RBP_UNDEFINED in our row (test_cfi checks that mapping). */
	size_t rbx_abi_default;
	size_t dwarf_rows;  /* compared through unwind_table__eval_dwarf */
	size_t shown;	    /* disagreements printed */
};

static void report(struct tally *ty, uint64_t a, const char *what)
{
	ty->disagreed++;
	if (ty->shown++ < 10)
		fprintf(stderr, "    %#llx: %s\n", (unsigned long long)a, what);
}

/* The lazy tables of compare_section: every address compared is also
 * looked up in them, and their row must be the whole table's (the same
 * fixed row, or a DWARF row of the same FDE, which eval_dwarf then runs
 * through the lazy table too). */
struct lazy_check {
	struct unwind_table *t[3];
	size_t n;
	size_t differ, shown;
};
static struct lazy_check *lazy_now;

static bool same_row(const struct unwind_table *a, const struct unwind_row *x,
		     const struct unwind_table *b, const struct unwind_row *y)
{
	if (!x || !y)
		return x == y;
	if (x->cfa_kind != y->cfa_kind)
		return false;
	if (x->cfa_kind == UT_CFA_DWARF)
		return x->rbp_kind == y->rbp_kind &&
		       a->fdes[unwind_row__fde_index(x)].off ==
			       b->fdes[unwind_row__fde_index(y)].off;
	return !memcmp(x, y, sizeof(*x));
}

static void compare_lazy(const struct unwind_table *t,
			 const struct unwind_row *row, uint64_t a)
{
	for (size_t i = 0; lazy_now && i < lazy_now->n; i++) {
		const struct unwind_table *z = lazy_now->t[i];
		const struct unwind_row *zr = unwind_table__lookup(z, a);

		if (same_row(t, row, z, zr) && zr && zr->cfa_kind == UT_CFA_DWARF) {
			struct stacksnap_regs regs, c1, c2;
			uint64_t cfa1 = 0, cfa2 = 0;
			int e1, e2;

			make_regs(0, a, &regs);
			e1 = unwind_table__eval_dwarf(t, row, a, 0, &regs, mem_read,
						      NULL, &c1, &cfa1);
			e2 = unwind_table__eval_dwarf(z, zr, a, 0, &regs, mem_read,
						      NULL, &c2, &cfa2);
			if (e1 == e2 && (e1 || (cfa1 == cfa2 &&
						!memcmp(&c1, &c2, sizeof(c1)))))
				continue;
		} else if (same_row(t, row, z, zr)) {
			continue;
		}
		lazy_now->differ++;
		if (lazy_now->shown++ < 10)
			fprintf(stderr, "    %#llx: lazy table (%s) row differs "
				"from the whole table's\n", (unsigned long long)a,
				i == 2 ? "FDE index, stays lazy"
				: i ? "compiles whole after 32 fills"
				    : "stays lazy");
	}
}

static void compare_one(const struct unwind_table *t, Dwarf_CFI *cfi,
			uint64_t a, struct tally *ty)
{
	const struct unwind_row *row = unwind_table__lookup(t, a);
	Dwarf_Frame *frame = NULL;

	compare_lazy(t, row, a);
	int ra;
	bool signal = false;

	ty->compared++;
	if (dwarf_cfi_addrframe(cfi, a, &frame) != 0) {
		if (row)
			report(ty, a, "libdw has no frame, table has a row");
		else
			ty->agreed++;
		return;
	}
	if (!row) {
		report(ty, a, "libdw has a frame, table has none");
		free(frame);
		return;
	}
	ra = dwarf_frame_info(frame, NULL, NULL, &signal);
	if (row->cfa_kind == UT_CFA_DWARF)
		ty->dwarf_rows++;
	for (unsigned s = 0; s < NSTATES; s++) {
		struct stacksnap_regs regs, caller;
		Dwarf_Op *ops;
		size_t nops;
		int kind;
		uint64_t cfa = 0, my_cfa = 0, ra_val = 0, bp_val = 0, bx_val = 0;
		bool ra_def, bp_def, bx_def, same;
		char msg[160];

		make_regs(s, a, &regs);
		if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops == 0 ||
		    eval_ops(ops, nops, s, &regs, 0, &kind, &cfa) ||
		    libdw_reg(frame, ra, s, &regs, cfa, &ra_def, &same,
			      &ra_val) ||
		    libdw_reg(frame, STACKSNAP_REG_RBP, s, &regs, cfa, &bp_def,
			      &same, &bp_val) ||
		    libdw_reg(frame, STACKSNAP_REG_RBX, s, &regs, cfa, &bx_def,
			      &same, &bx_val)) {
			/* The outermost frame may leave the CFA undefined. */
			if (row->cfa_kind == UT_CFA_UNDEFINED_RA &&
			    libdw_reg(frame, ra, s, &regs, 0, &ra_def, &same,
				      &ra_val) == 0 && !ra_def)
				continue;
			ty->unsupported++;
			free(frame);
			return;
		}
		memset(&caller, 0, sizeof(caller));
		switch (row->cfa_kind) {
		case UT_CFA_RSP:
		case UT_CFA_RBP:
		case UT_CFA_PLT:
			my_cfa = row->cfa_kind == UT_CFA_RSP
				? regs.regs[STACKSNAP_REG_RSP] + row->cfa_off
				: row->cfa_kind == UT_CFA_RBP
				? regs.regs[STACKSNAP_REG_RBP] + row->cfa_off
				: regs.regs[STACKSNAP_REG_RSP] + 8 +
					  ((a & 15) >= 11 ? 8 : 0);
			caller.regs[STACKSNAP_REG_RIP] = mem_u64(s, my_cfa - 8);
			caller.valid = 1u << STACKSNAP_REG_RIP;
			if (row->rbp_kind == UT_RBP_SAME) {
				caller.regs[STACKSNAP_REG_RBP] =
					regs.regs[STACKSNAP_REG_RBP];
				caller.valid |= 1u << STACKSNAP_REG_RBP;
			} else if (row->rbp_kind == UT_RBP_CFA_OFF) {
				caller.regs[STACKSNAP_REG_RBP] =
					mem_u64(s, my_cfa + row->rbp_off);
				caller.valid |= 1u << STACKSNAP_REG_RBP;
			}
			if (row->rbx_kind == UT_RBP_SAME) {
				caller.regs[STACKSNAP_REG_RBX] =
					regs.regs[STACKSNAP_REG_RBX];
				caller.valid |= 1u << STACKSNAP_REG_RBX;
			} else if (row->rbx_kind == UT_RBP_CFA_OFF) {
				caller.regs[STACKSNAP_REG_RBX] =
					mem_u64(s, my_cfa + row->rbx_off);
				caller.valid |= 1u << STACKSNAP_REG_RBX;
			}
			break;
		case UT_CFA_UNDEFINED_RA:
			if (ra_def)
				report(ty, a, "table: RA undefined, libdw not");
			else
				continue;
			free(frame);
			return;
		case UT_CFA_DWARF:
			if (unwind_table__eval_dwarf(t, row, a, 0, &regs,
						     mem_read,
						     (void *)(uintptr_t)s,
						     &caller, &my_cfa)) {
				report(ty, a, "eval_dwarf failed");
				free(frame);
				return;
			}
			break;
		default:
			report(ty, a, "bad row kind");
			free(frame);
			return;
		}
		msg[0] = 0;
		if (!ra_def) {
			if (caller.valid & (1u << STACKSNAP_REG_RIP))
				snprintf(msg, sizeof(msg), "RA undefined in "
					 "libdw, kind %u", row->cfa_kind);
		} else if (my_cfa != cfa) {
			snprintf(msg, sizeof(msg), "CFA %#llx != libdw %#llx "
				 "(kind %u off %d)", (unsigned long long)my_cfa,
				 (unsigned long long)cfa, row->cfa_kind,
				 row->cfa_off);
		} else if (!(caller.valid & (1u << STACKSNAP_REG_RIP)) ||
			   caller.regs[STACKSNAP_REG_RIP] != ra_val) {
			snprintf(msg, sizeof(msg), "RA differs (kind %u)",
				 row->cfa_kind);
		} else if (bp_def != !!(caller.valid & (1u << STACKSNAP_REG_RBP)) ||
			   (bp_def && caller.regs[STACKSNAP_REG_RBP] != bp_val)) {
			snprintf(msg, sizeof(msg), "rbp differs (kind %u rbp "
				 "kind %u)", row->cfa_kind, row->rbp_kind);
		} else if (row->cfa_kind != UT_CFA_DWARF && !bx_def &&
			   row->rbx_kind == UT_RBP_SAME) {
			ty->rbx_abi_default++;
		} else if (row->cfa_kind != UT_CFA_DWARF &&
			   (bx_def != !!(caller.valid & (1u << STACKSNAP_REG_RBX)) ||
			    (bx_def && caller.regs[STACKSNAP_REG_RBX] != bx_val))) {
			snprintf(msg, sizeof(msg), "rbx differs (kind %u rbx "
				 "kind %u)", row->cfa_kind, row->rbx_kind);
		} else if (row->cfa_kind == UT_CFA_DWARF) {
			/* Every other register libdw gives an explicit rule
			 * for must come out the same. Where libdw says
			 * undefined we do not compare: that is also its ABI
			 * default for call-clobbered registers, which our
			 * evaluator leaves as "same value". */
			for (int r = 0; r < 16 && !msg[0]; r++) {
				bool def;
				uint64_t v;

				if (r == STACKSNAP_REG_RSP || r == ra)
					continue;
				if (libdw_reg(frame, r, s, &regs, cfa, &def,
					      &same, &v)) {
					snprintf(msg, sizeof(msg), "r%d rule "
						 "unsupported", r);
				} else if (def && (!(caller.valid & (1u << r)) ||
						   caller.regs[r] != v)) {
					snprintf(msg, sizeof(msg), "r%d differs",
						 r);
				}
			}
		}
		if (msg[0]) {
			report(ty, a, msg);
			free(frame);
			return;
		}
	}
	ty->agreed++;
	free(frame);
}

/* ---- files ------------------------------------------------------------ */

/* A section's bytes and address, found with libelf. */
static bool find_section(Elf *elf, const char *name, struct cfi_input *in)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name))
			continue;
		d = elf_rawdata(scn, NULL);
		if (!d || !d->d_buf)
			return false;
		in->data = d->d_buf;
		in->size = d->d_size;
		in->vaddr = sh.sh_addr;
		in->is_eh_frame = !strcmp(name, ".eh_frame");
		return true;
	}
	return false;
}

static uint64_t symbol_addr(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, want))
				return sym.st_value;
		}
	}
	return 0;
}

/* Compares one CFI section of one file; returns false if it is absent. */
static bool compare_section(const char *path, Elf *elf, const char *secname,
			    Dwarf_CFI *cfi, unsigned step)
{
	struct cfi_input in;
	struct unwind_table *t = NULL;
	struct unwind_table_stats st;
	struct tally ty = { 0 };
	uint64_t lo, hi;

	if (!find_section(elf, secname, &in))
		return false;
	CHECKF(cfi != NULL, "%s: libdw has no CFI for %s", path, secname);
	if (!cfi)
		return true;
	CHECK(unwind_table__compile(&in, 1, NULL, &t) == 0);
	if (!t)
		return true;
	unwind_table__range(t, &lo, &hi);
	unwind_table__stats(t, &st);
	CHECKF(hi > lo, "%s %s: empty table", path, secname);
	/* Also through lazy tables: one kept lazy whatever it compiles,
	 * one that compiles itself whole after 32 fills (both first filled
	 * at scattered addresses, so regions are compiled out of order);
	 * .eh_frame's found through .eh_frame_hdr, .debug_frame's through
	 * the FDE index made in one pass; and .eh_frame's once more through
	 * the FDE index, kept lazy. */
	struct lazy_check lz = { .n = 0 };
	struct cfi_input hdr;
	bool eh = in.is_eh_frame && find_section(elf, ".eh_frame_hdr", &hdr);
	if (eh || !in.is_eh_frame) {
		for (size_t i = 0; i < 3; i++) {
			if (i == 2 && !eh)
				break;
			if (eh && i < 2)
				CHECK(unwind_table__open_lazy(&in, hdr.data, hdr.size,
							      hdr.vaddr, NULL,
							      &lz.t[i]) == 0);
			else
				CHECKF(unwind_table__open_lazy_index(&in, NULL,
								     &lz.t[i]) == 0,
				       "%s %s: no lazy table through an FDE index",
				       path, secname);
			if (!lz.t[i])
				break;
			lz.n++;
			unwind_table__set_max_fills(lz.t[i], i == 1 ? 32 : SIZE_MAX);
			for (uint64_t k = 1; k <= 300 && hi > lo; k++)
				unwind_table__lookup(lz.t[i],
						     lo + (k * 0x9e3779b97f4a7c15ull) % (hi - lo));
		}
		CHECKF(lz.n == (eh ? 3u : 2u), "%s %s: lazy tables not made",
		       path, secname);
	}
	lazy_now = &lz;
	/* Just outside the table, libdw must have nothing either. */
	if (lo)
		compare_one(t, cfi, lo - 1, &ty);
	compare_one(t, cfi, hi, &ty);
	for (uint64_t a = lo; a < hi; a += step)
		compare_one(t, cfi, a, &ty);
	printf("  %-44s %-12s compared %8zu agreed %8zu (dwarf rows %zu, "
	       "exceptions: unsupported-op %zu; rbx unchanged where libdw's "
	       "ABI default says undefined: %zu state checks) rows %zu\n",
	       path, secname, ty.compared, ty.agreed, ty.dwarf_rows,
	       ty.unsupported, ty.rbx_abi_default, st.rows);
	CHECKF(ty.disagreed == 0, "%s %s: %zu addresses disagree", path,
	       secname, ty.disagreed);
	/* No op outside eval_ops's set is expected in real CFI. */
	CHECKF(ty.unsupported == 0, "%s %s: %zu addresses use ops the test "
	       "cannot evaluate", path, secname, ty.unsupported);
	CHECK(ty.agreed + ty.disagreed + ty.unsupported == ty.compared);
	lazy_now = NULL;
	if (lz.n) {
		printf("  %-44s %-12s lazy: %zu fills (kept lazy%s), rows "
		       "differing from the whole table's: %zu\n", path, secname,
		       unwind_table__lazy_fills(lz.t[0]),
		       eh ? ", .eh_frame_hdr" : ", FDE index", lz.differ);
		CHECKF(lz.differ == 0, "%s: %zu lazy lookups differ from the "
		       "whole table", path, lz.differ);
		CHECK(unwind_table__is_lazy(lz.t[0]));
		CHECK(unwind_table__is_lazy(lz.t[1]) ==
		      (unwind_table__lazy_fills(lz.t[0]) < 32));
		/* Completed, the lazy table is the whole table. */
		for (size_t i = 0; i < lz.n; i += 2) {
			CHECK(unwind_table__is_lazy(lz.t[i]));
			CHECK(unwind_table__complete(lz.t[i]) == 0);
			CHECK(!unwind_table__is_lazy(lz.t[i]) &&
			      lz.t[i]->nrows == t->nrows &&
			      !memcmp(lz.t[i]->rows, t->rows, t->nrows * sizeof(*t->rows)) &&
			      !memcmp(lz.t[i]->starts, t->starts, t->nrows * sizeof(*t->starts)));
		}
	}
	for (size_t i = 0; i < lz.n; i++)
		unwind_table__free(lz.t[i]);
	unwind_table__free(t);
	return true;
}

/* Which sections compare_file should find. */
enum { WANT_EH = 1, WANT_DEBUG = 2 };

static void compare_file(const char *path, int want, unsigned step)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Dwarf *dbg;

	CHECKF(fd >= 0, "%s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	CHECK(elf != NULL);
	if (!elf) {
		close(fd);
		return;
	}
	if (want & WANT_EH) {
		/* This CFI is ours to end; the .debug_frame one belongs to
		 * its Dwarf. */
		Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);

		CHECKF(compare_section(path, elf, ".eh_frame", cfi, step),
		       "%s: no .eh_frame", path);
		if (cfi)
			dwarf_cfi_end(cfi);
	}
	if (want & WANT_DEBUG) {
		dbg = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		CHECKF(dbg != NULL, "%s: no DWARF", path);
		CHECKF(compare_section(path, elf, ".debug_frame",
				       dbg ? dwarf_getcfi(dbg) : NULL, step),
		       "%s: no .debug_frame", path);
		if (dbg)
			dwarf_end(dbg);
	}
	elf_end(elf);
	close(fd);
}

static void libc(void)
{
	elf_version(EV_CURRENT);
	compare_file("/lib/x86_64-linux-gnu/libc.so.6", WANT_EH, SAMPLE_EVERY);
}

static void ld_so(void)
{
	elf_version(EV_CURRENT);
	compare_file("/lib64/ld-linux-x86-64.so.2", WANT_EH, SAMPLE_EVERY);
}

static void libstdcxx(void)
{
	static const char *const paths[] = {
		"/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/usr/lib64/libstdc++.so.6",
	};

	elf_version(EV_CURRENT);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (access(paths[i], R_OK) == 0) {
			compare_file(paths[i], WANT_EH, SAMPLE_EVERY);
			return;
		}
	}
	CHECKF(0, "no libstdc++.so.6 found");
}

static const char c_src[] =
	"#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
	"#include <alloca.h>\n"
	"struct node { struct node *next; int v; };\n"
	"static int __attribute__((noinline)) depth(int n, char *buf) {\n"
	"  char *p = alloca(n + 16); memset(p, n, n + 16);\n"
	"  if (n <= 0) return p[0] + buf[0];\n"
	"  return depth(n - 1, p) + p[n];\n}\n"
	"static double __attribute__((noinline)) sum(int n, double *v) {\n"
	"  double s = 0; for (int i = 0; i < n; i++) s += v[i] * i;\n"
	"  return s;\n}\n"
	"int __attribute__((noinline)) aligned(int n) {\n"
	"  int __attribute__((aligned(64))) big[64];\n"
	"  for (int i = 0; i < 64; i++) big[i] = i * n;\n"
	"  return big[n & 63];\n}\n"
	"int main(int argc, char **argv) {\n"
	"  struct node *h = NULL; double v[8] = { 1, 2, 3 };\n"
	"  for (int i = 0; i < argc * 10; i++) {\n"
	"    struct node *n = malloc(sizeof(*n)); n->next = h; n->v = i;\n"
	"    h = n; }\n"
	"  printf(\"%d %f %d\\n\", depth(argc * 3, argv[0]), sum(argc, v),\n"
	"         aligned(argc));\n"
	"  while (h) { struct node *n = h->next; free(h); h = n; }\n"
	"  return 0;\n}\n";

static const char cxx_src[] =
	"#include <cstdio>\n#include <functional>\n#include <map>\n"
	"#include <memory>\n#include <stdexcept>\n#include <string>\n"
	"#include <vector>\n"
	"struct Shape { virtual ~Shape() {} virtual double area() const = 0; };\n"
	"struct Sq : Shape { double s; explicit Sq(double x) : s(x) {}\n"
	"  double area() const override {\n"
	"    if (s < 0) throw std::invalid_argument(\"negative\");\n"
	"    return s * s; } };\n"
	"template <class F> static int apply(int n, F f) {\n"
	"  int r = 0; for (int i = 0; i < n; i++) r += f(i); return r; }\n"
	"static int thrower(int n) {\n"
	"  std::vector<std::unique_ptr<Shape>> v;\n"
	"  for (int i = -1; i < n; i++) v.emplace_back(new Sq(i));\n"
	"  double t = 0;\n"
	"  for (auto &s : v) { try { t += s->area(); }\n"
	"    catch (const std::exception &e) { t -= 1; } }\n"
	"  return (int)t; }\n"
	"int main(int argc, char **argv) {\n"
	"  std::map<std::string, std::function<int(int)>> m;\n"
	"  int k = argc;\n"
	"  m[\"sq\"] = [k](int x) { return x * x + k; };\n"
	"  m[\"th\"] = [](int x) { return thrower(x); };\n"
	"  int r = apply(argc + 3, [&](int i) { return m[\"sq\"](i); });\n"
	"  try { if (argc > 5) throw std::runtime_error(argv[1]);\n"
	"    r += m[\"th\"](argc + 2); }\n"
	"  catch (const std::runtime_error &e) { std::puts(e.what()); }\n"
	"  std::printf(\"%d\\n\", r);\n  return 0; }\n";

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

/* The programs built for the test: each is compared on its .eh_frame
 * (and, for the last two, .debug_frame only). */
static const struct build {
	const char *name, *compiler, *src, *flags;
} builds[] = {
	{ "c_gcc_O0", "gcc", "p.c", "-O0" },
	{ "c_gcc_O2", "gcc", "p.c", "-O2" },
	{ "c_gcc_O2_fp", "gcc", "p.c", "-O2 -fno-omit-frame-pointer" },
	{ "c_gcc_O0_fp", "gcc", "p.c", "-O0 -fno-omit-frame-pointer" },
	{ "c_clang_O0", "clang", "p.c", "-O0" },
	{ "c_clang_O2", "clang", "p.c", "-O2" },
	{ "c_clang_O2_fp", "clang", "p.c", "-O2 -fno-omit-frame-pointer" },
	{ "c_clang_O0_fp", "clang", "p.c", "-O0 -fno-omit-frame-pointer" },
	{ "cxx_gcc_O0", "g++", "p.cc", "-O0" },
	{ "cxx_gcc_O2", "g++", "p.cc", "-O2" },
	{ "cxx_gcc_O2_fp", "g++", "p.cc", "-O2 -fno-omit-frame-pointer" },
	{ "cxx_gcc_O0_fp", "g++", "p.cc", "-O0 -fno-omit-frame-pointer" },
	{ "cxx_clang_O0", "clang++", "p.cc", "-O0" },
	{ "cxx_clang_O2", "clang++", "p.cc", "-O2" },
	{ "cxx_clang_O2_fp", "clang++", "p.cc", "-O2 -fno-omit-frame-pointer" },
	{ "cxx_clang_O0_fp", "clang++", "p.cc", "-O0 -fno-omit-frame-pointer" },
	{ "c_gcc_debug_frame", "gcc", "p.c",
	  "-O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables" },
	{ "c_clang_debug_frame", "clang", "p.c",
	  "-O0 -g -fno-asynchronous-unwind-tables -fno-unwind-tables" },
};

static void built_programs(void)
{
	char dir[] = "/tmp/stacksnap-cfi-XXXXXX", path[512], cmd[8192];
	size_t len = 0;

	elf_version(EV_CURRENT);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/p.c", dir);
	CHECK(write_file(path, c_src));
	snprintf(path, sizeof(path), "%s/p.cc", dir);
	CHECK(write_file(path, cxx_src));
	/* Build them all in parallel: one shell, background jobs. */
	len += snprintf(cmd + len, sizeof(cmd) - len, "cd %s && (", dir);
	for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++)
		len += snprintf(cmd + len, sizeof(cmd) - len,
				"%s %s -o %s %s 2>%s.err & ",
				builds[i].compiler, builds[i].flags,
				builds[i].name, builds[i].src, builds[i].name);
	snprintf(cmd + len, sizeof(cmd) - len, "wait)");
	CHECKF(system(cmd) == 0, "%s", cmd);
	for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		const struct build *b = &builds[i];
		bool debug_only = strstr(b->name, "debug_frame") != NULL;

		snprintf(path, sizeof(path), "%s/%s", dir, b->name);
		CHECKF(access(path, R_OK) == 0, "%s did not build (%s %s)",
		       b->name, b->compiler, b->flags);
		if (access(path, R_OK))
			continue;
		compare_file(path, debug_only ? WANT_EH | WANT_DEBUG : WANT_EH,
			     1);
		if (debug_only) {
			/* Its own functions must be in .debug_frame only:
			 * .eh_frame holds just the C runtime's FDEs. */
			int fd = open(path, O_RDONLY);
			Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
			struct cfi_input in;
			struct unwind_table *t = NULL;
			uint64_t main_addr = symbol_addr(elf, "main");

			CHECK(main_addr != 0);
			if (find_section(elf, ".eh_frame", &in) &&
			    unwind_table__compile(&in, 1, NULL, &t) == 0) {
				CHECKF(!unwind_table__lookup(t, main_addr),
				       "%s: main has an .eh_frame FDE", path);
				unwind_table__free(t);
			}
			CHECK(find_section(elf, ".debug_frame", &in));
			elf_end(elf);
			close(fd);
		}
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

TEST_MAIN("table_vs_libdw", TEST(libc), TEST(ld_so), TEST(libstdcxx),
	  TEST(built_programs))
