/* compile.c - compiles DWARF CFI into the sorted-rows-plus-block-index
 * unwind table: each FDE's program run to rows, the rows that fit the
 * fixed shape kept as such (the rest point back to their FDE), earlier
 * inputs winning where inputs overlap. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/radix_sort.h"
#include "base/vec.h"
#include "dwarf/cfi.h"
#include "table/table_internal.h"

/* log2 of the bytes of address range one block index entry covers
 * (at least). */
#define UT_BLOCK_SHIFT 8

/* The lazy-binding PLT's CFA: rsp + 8, plus 8 more once past the push in
 * the second half of each 16-byte entry (rip & 15 >= 11). */
static const uint8_t plt_expr[] = {
	0x77, 0x08,	/* DW_OP_breg7 (rsp) 8 */
	0x80, 0x00,	/* DW_OP_breg16 (rip) 0 */
	0x3f,		/* DW_OP_lit15 */
	0x1a,		/* DW_OP_and */
	0x3b,		/* DW_OP_lit11 */
	0x2a,		/* DW_OP_ge */
	0x33,		/* DW_OP_lit3 */
	0x24,		/* DW_OP_shl */
	0x22,		/* DW_OP_plus */
};

/* A callee-saved register's rule as a fixed row has it; false when the
 * rule does not fit (saved in a register, by expression, far away). */
static bool saved_reg(const struct cfi_rule *r, unsigned *kind, int16_t *off)
{
	*off = 0;
	switch (r->kind) {
	case CFI_RULE_UNSET:
	case CFI_RULE_SAME:
		*kind = UT_RBP_SAME;
		return true;
	case CFI_RULE_UNDEFINED:
		*kind = UT_RBP_UNDEFINED;
		return true;
	case CFI_RULE_OFFSET:
		if (r->off < INT16_MIN || r->off > INT16_MAX)
			return false;
		*kind = UT_RBP_CFA_OFF;
		*off = (int16_t)r->off;
		return true;
	default:
		return false;
	}
}

bool unwind_table__fixed_row(const struct cfi_cie *cie, const struct cfi_row *r,
			     struct unwind_row *out)
{
	const struct cfi_rule *ra = &r->rules[cie->ra_reg];
	const struct cfi_rule *bp = &r->rules[STACKSNAP_REG_RBP];
	const struct cfi_rule *bx = &r->rules[STACKSNAP_REG_RBX];
	const struct cfi_rule *sp = &r->rules[STACKSNAP_REG_RSP];

	memset(out, 0, sizeof(*out));
	if (cie->signal_frame || cie->ra_reg != STACKSNAP_REG_RIP)
		return false;
	if (ra->kind == CFI_RULE_UNDEFINED) {
		out->cfa_kind = UT_CFA_UNDEFINED_RA;
		return true;
	}
	if (ra->kind != CFI_RULE_OFFSET || ra->off != -8)
		return false;
	/* Fixed rows take the caller's rsp to be the CFA. */
	if (sp->kind != CFI_RULE_UNSET && sp->kind != CFI_RULE_SAME &&
	    !(sp->kind == CFI_RULE_VAL_OFFSET && sp->off == 0))
		return false;
	if (sp->kind == CFI_RULE_SAME)
		return false;
	switch (r->cfa_kind) {
	case CFI_CFA_REG_OFF:
		if (r->cfa_off < INT16_MIN || r->cfa_off > INT16_MAX)
			return false;
		if (r->cfa_reg == STACKSNAP_REG_RSP)
			out->cfa_kind = UT_CFA_RSP;
		else if (r->cfa_reg == STACKSNAP_REG_RBP)
			out->cfa_kind = UT_CFA_RBP;
		else
			return false;
		out->cfa_off = (int16_t)r->cfa_off;
		break;
	case CFI_CFA_EXPR:
		if (r->cfa_expr_len != sizeof(plt_expr) ||
		    memcmp(r->cfa_expr, plt_expr, sizeof(plt_expr)))
			return false;
		out->cfa_kind = UT_CFA_PLT;
		break;
	default:
		return false;
	}
	unsigned kind;
	int16_t off;
	if (!saved_reg(bp, &kind, &off))
		return false;
	out->rbp_kind = kind & 0xf;
	out->rbp_off = off;
	if (!saved_reg(bx, &kind, &off))
		return false;
	out->rbx_kind = kind & 0xf;
	out->rbx_off = off;
	return true;
}

static bool row_eq(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off &&
	       a->rbx_off == b->rbx_off && a->cfa_kind == b->cfa_kind &&
	       a->rbp_kind == b->rbp_kind && a->rbx_kind == b->rbx_kind;
}

static int push_frag(struct compile *cc, uint64_t start, uint64_t end,
		     const struct unwind_row *row)
{
	struct frag *f;

	if (cc->nfrags > cc->frag_floor) {
		f = &cc->frags[cc->nfrags - 1];
		if (f->end == start && row_eq(&f->row, row)) {
			f->end = end;
			return 0;
		}
	}
	f = VEC_PUSH(cc->frags, cc->nfrags, cc->capfrags);
	if (!f)
		return -ENOMEM;
	f->start = start;
	f->end = end;
	f->row = *row;
	return 0;
}

int ut_on_row(void *user, uint64_t start, uint64_t end,
	      const struct cfi_row *r)
{
	struct compile *cc = user;
	struct unwind_row row;

	if (!unwind_table__fixed_row(cc->cie, r, &row)) {
		if (cc->fde_index < 0) {
			struct ut_fde *f = VEC_PUSH(cc->fdes, cc->nfdes,
						    cc->capfdes);
			if (!f)
				return -ENOMEM;
			f->off = cc->fde_off;
			f->input = cc->input;
			cc->fde_index = (int32_t)(cc->nfdes - 1);
		}
		memset(&row, 0, sizeof(row));
		row.cfa_kind = UT_CFA_DWARF;
		row.rbp_off = (int16_t)(uint16_t)((uint32_t)cc->fde_index & 0xffff);
		row.rbx_off = (int16_t)(uint16_t)((uint32_t)cc->fde_index >> 16);
		if (cc->cie->signal_frame)
			row.rbp_kind = UT_DWARF_SIGNAL_FRAME;
	}
	for (size_t i = 0; i < cc->nclip; i++) {
		uint64_t b = start > cc->clip[i].begin ? start : cc->clip[i].begin;
		uint64_t e = end < cc->clip[i].end ? end : cc->clip[i].end;
		int err;

		if (b < e && (err = push_frag(cc, b, e, &row)))
			return err;
	}
	return 0;
}

int ut_cmp_fde_ref(const void *a, const void *b)
{
	const struct fde_ref *x = a, *y = b;

	if (x->input != y->input)
		return x->input < y->input ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_frag(const void *a, const void *b)
{
	const struct frag *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Collects every usable FDE of every input. */
int ut_scan_fdes(const struct cfi_input *inputs, size_t ninputs,
		 const struct log_sink *log, struct fde_ref **out,
		 size_t *nout)
{
	struct fde_ref *refs = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < ninputs; i++) {
		const struct cfi_input *in = &inputs[i];
		size_t off = 0, cached_cie = SIZE_MAX, bad = 0;
		struct cfi_cie cie;
		int cie_err = 0;

		if (in->size > UINT32_MAX) {
			log_warn(log, "CFI section of %zu bytes is too large; "
				 "ignored", in->size);
			continue;
		}
		for (;;) {
			struct cfi_entry e;
			struct cfi_fde fde;
			struct fde_ref *r;
			int rc = cfi_entry_read(in, off, &e);

			if (rc == 0)
				break;
			if (rc < 0) {
				log_warn(log, "%s: malformed entry at offset "
					 "%#zx; rest of section ignored",
					 in->is_eh_frame ? ".eh_frame"
							 : ".debug_frame", off);
				break;
			}
			off = e.next;
			if (e.is_cie)
				continue;
			if (e.cie_off != cached_cie) {
				cached_cie = e.cie_off;
				cie_err = cfi_cie_parse(in, e.cie_off, &cie);
			}
			if (cie_err || cfi_fde_parse(in, &e, &cie, &fde)) {
				bad++;
				continue;
			}
			if (fde.pc_begin == fde.pc_end)
				continue;
			r = VEC_PUSH(refs, n, cap);
			if (!r) {
				free(refs);
				return -ENOMEM;
			}
			r->begin = fde.pc_begin;
			r->end = fde.pc_end;
			r->off = (uint32_t)e.off;
			r->input = (uint32_t)i;
		}
		if (bad)
			log_warn(log, "%s: %zu malformed CIEs/FDEs skipped",
				 in->is_eh_frame ? ".eh_frame" : ".debug_frame",
				 bad);
	}
	*out = refs;
	*nout = n;
	return 0;
}

/* Subtracts the ranges claimed by earlier inputs (sorted, disjoint) from
 * [b, e), writing what is left to out (at most nclaimed + 1 ranges). */
static size_t unclaimed(const struct range *claimed, size_t nclaimed,
			uint64_t b, uint64_t e, struct range *out)
{
	size_t lo = 0, hi = nclaimed, n = 0;

	/* First claimed range that ends after b. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (claimed[mid].end <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < nclaimed && b < e; i++) {
		if (claimed[i].begin >= e)
			break;
		if (claimed[i].begin > b)
			out[n++] = (struct range){ b, claimed[i].begin };
		if (claimed[i].end > b)
			b = claimed[i].end;
	}
	if (b < e)
		out[n++] = (struct range){ b, e };
	return n;
}

/* Adds the ranges of frags to claimed and keeps claimed sorted and
 * disjoint. */
static int claim(struct range **claimed, size_t *n, size_t *cap,
		 const struct frag *frags, size_t nfrags)
{
	size_t m = 0;

	if (!nfrags)
		return 0;
	if (vec_reserve((void **)claimed, cap, *n + nfrags, sizeof(**claimed)))
		return -ENOMEM;
	for (size_t k = 0; k < nfrags; k++)
		(*claimed)[(*n)++] = (struct range){ frags[k].start,
						     frags[k].end };
	qsort(*claimed, *n, sizeof(**claimed), cmp_range);
	for (size_t k = 0; k < *n; k++) {
		struct range *c = &(*claimed)[k];

		if (m && c->begin <= (*claimed)[m - 1].end) {
			if (c->end > (*claimed)[m - 1].end)
				(*claimed)[m - 1].end = c->end;
		} else {
			(*claimed)[m++] = *c;
		}
	}
	*n = m;
	return 0;
}

int ut_build(struct unwind_table *t, struct frag *frags, size_t nfrags)
{
	size_t n = 0;
	uint64_t span;

	t->lo = frags[0].start;
	t->hi = frags[nfrags - 1].end;
	span = t->hi - t->lo;
	/* Each fragment can need a gap row before it. */
	t->starts = malloc(sizeof(*t->starts) * (2 * nfrags));
	t->rows = malloc(sizeof(*t->rows) * (2 * nfrags));
	/* One entry per 256 bytes, unless hostile or sparse CFI would make
	 * the index much larger than the rows it indexes. */
	t->block_shift = UT_BLOCK_SHIFT;
	while ((span >> t->block_shift) > 4 * nfrags + 4096)
		t->block_shift++;
	t->nblocks = (size_t)(span >> t->block_shift) + 1;
	t->block = malloc(sizeof(*t->block) * (t->nblocks + 1));
	if (!t->starts || !t->rows || !t->block)
		return -ENOMEM;
	for (size_t i = 0; i < nfrags; i++) {
		const struct frag *f = &frags[i];
		uint64_t prev_end = i ? frags[i - 1].end : f->start;

		if (f->start > prev_end) {
			struct unwind_row none = { 0 };

			if (n && row_eq(&t->rows[n - 1], &none)) {
				/* already a gap row */
			} else {
				t->starts[n] = (uint32_t)(prev_end - t->lo);
				t->rows[n++] = none;
			}
		}
		if (n && row_eq(&t->rows[n - 1], &f->row))
			continue;
		t->starts[n] = (uint32_t)(f->start - t->lo);
		t->rows[n++] = f->row;
	}
	t->nrows = n;
	for (size_t b = 0, r = 0; b <= t->nblocks; b++) {
		uint64_t a = (uint64_t)b << t->block_shift;

		while (r + 1 < n && t->starts[r + 1] <= a)
			r++;
		t->block[b] = (uint32_t)r;
	}
	/* Give back the slack of the worst-case allocation. */
	uint32_t *s2 = realloc(t->starts, sizeof(*t->starts) * n);
	struct unwind_row *r2 = realloc(t->rows, sizeof(*t->rows) * n);
	if (s2)
		t->starts = s2;
	if (r2)
		t->rows = r2;
	return 0;
}

int unwind_table__compile(const struct cfi_input *inputs, size_t ninputs,
			  const struct log_sink *log, struct unwind_table **out)
{
	struct unwind_table *t;
	struct fde_ref *refs = NULL;
	struct range *claimed = NULL, *clip = NULL;
	size_t nrefs = 0, nclaimed = 0, capclaimed = 0, capclip = 0;
	size_t dropped = 0;
	uint64_t top = 0;
	struct compile cc = { .log = log };
	int err;

	*out = NULL;
	if (ninputs > UINT32_MAX)
		return fail(-EINVAL);
	t = calloc(1, sizeof(*t));
	if (!t)
		return fail(-ENOMEM);
	t->serial = unwind_table__new_serial();
	if (ninputs) {
		t->inputs = malloc(sizeof(*inputs) * ninputs);
		if (!t->inputs) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(t->inputs, inputs, sizeof(*inputs) * ninputs);
	}
	t->ninputs = ninputs;
	err = ut_scan_fdes(inputs, ninputs, log, &refs, &nrefs);
	if (err)
		goto out;
	for (size_t i = 1; i < nrefs; i++) {
		if (ut_cmp_fde_ref(&refs[i - 1], &refs[i]) > 0) {
			qsort(refs, nrefs, sizeof(*refs), ut_cmp_fde_ref);
			break;
		}
	}
	/* The table addresses rows with 32-bit offsets: keep the FDEs that
	 * fit in 4 GiB below the highest end (stray FDEs of discarded code
	 * at address 0 are what usually falls out). */
	for (size_t i = 0; i < nrefs; i++)
		if (refs[i].end > top)
			top = refs[i].end;
	uint64_t covered = 0;	/* end of what this input covers so far */
	size_t input_frags = 0;	/* first fragment of the current input */

	for (size_t i = 0; i <= nrefs; i++) {
		struct fde_ref *r = i < nrefs ? &refs[i] : NULL;
		struct cfi_cie cie;
		struct cfi_fde fde;

		if (!r || (i > 0 && r->input != refs[i - 1].input)) {
			/* Input done: its ranges are claimed for the FDEs
			 * of later inputs, if any follow. */
			if (r && cc.nfrags > input_frags)
				err = claim(&claimed, &nclaimed, &capclaimed,
					    cc.frags + input_frags,
					    cc.nfrags - input_frags);
			if (err)
				goto out;
			if (!r)
				break;
			input_frags = cc.nfrags;
			covered = 0;
		}
		if (top > UINT32_MAX && r->begin < top - UINT32_MAX) {
			dropped++;
			continue;
		}
		if (cfi_fde_at(&inputs[r->input], r->off, &cie, &fde)) {
			err = -EINVAL; /* ut_scan_fdes parsed it: cannot fail */
			goto out;
		}
		if (vec_reserve((void **)&clip, &capclip, nclaimed + 2,
				sizeof(*clip))) {
			err = -ENOMEM;
			goto out;
		}
		/* Within one input the FDE that starts first keeps what it
		 * covers; earlier inputs keep theirs. */
		cc.nclip = unclaimed(claimed, nclaimed,
				     r->begin > covered ? r->begin : covered,
				     r->end, clip);
		if (!cc.nclip)
			continue;
		cc.clip = clip;
		cc.cie = &cie;
		cc.input = r->input;
		cc.fde_off = r->off;
		cc.fde_index = -1;
		cc.frag_floor = cc.nfrags;
		size_t fdes_before = cc.nfdes;

		err = cfi_run(&inputs[r->input], &cie, &fde, 0, ut_on_row, &cc,
			      NULL);
		if (err == -ENOMEM)
			goto out;
		if (err) {
			/* A broken program: none of its rows are trusted. */
			log_warn(log, "%s: FDE at %#x (pc %#llx..%#llx): bad "
				 "CFA program; ignored",
				 inputs[r->input].is_eh_frame ? ".eh_frame"
							      : ".debug_frame",
				 r->off, (unsigned long long)r->begin,
				 (unsigned long long)r->end);
			cc.nfrags = cc.frag_floor;
			cc.nfdes = fdes_before;
			err = 0;
			continue;
		}
		if (r->end > covered)
			covered = r->end;
	}
	if (dropped)
		log_warn(log, "%zu FDEs more than 4 GiB below the highest "
			 "address ignored", dropped);
	for (size_t i = 1; i < cc.nfrags; i++) {
		if (cc.frags[i - 1].start > cc.frags[i].start) {
			/* Stable, as the merge sort of glibc's qsort. */
			if (radix_sort_u64(cc.frags, cc.nfrags, sizeof(*cc.frags),
					   offsetof(struct frag, start)))
				qsort(cc.frags, cc.nfrags, sizeof(*cc.frags), cmp_frag);
			break;
		}
	}
	if (cc.nfrags) {
		err = ut_build(t, cc.frags, cc.nfrags);
		if (err)
			goto out;
	}
	t->fdes = cc.fdes;
	t->nfdes = cc.nfdes;
	cc.fdes = NULL;
out:
	free(refs);
	free(claimed);
	free(clip);
	free(cc.frags);
	free(cc.fdes);
	if (err) {
		unwind_table__free(t);
		return fail(err);
	}
	*out = t;
	return 0;
}
