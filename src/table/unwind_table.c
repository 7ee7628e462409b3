/* unwind_table.c - compiles DWARF CFI into the sorted-rows-plus-block-index
 * unwind table, looks rows up, and evaluates the rows that stayed DWARF. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/clock.h"
#include "base/radix_sort.h"
#include "base/vec.h"
#include "dwarf/cfi.h"
#include "dwarf/dwarf_expr.h"
#include "table/unwind_table.h"

/* log2 of the bytes of address range one block index entry covers
 * (at least). */
#define UT_BLOCK_SHIFT 8

/* An FDE found while scanning, before any program runs. */
struct fde_ref {
	uint64_t begin, end;
	uint32_t off;
	uint32_t input;
};

/* A piece of the table in the making: [start, end) with one row. */
struct frag {
	uint64_t start, end;
	struct unwind_row row;
};

/* An address range already claimed by an earlier input. */
struct range {
	uint64_t begin, end;
};

/* State shared by the row callback while one FDE runs. */
struct compile {
	const struct log_sink *log;
	struct frag *frags;
	size_t nfrags, capfrags;
	struct ut_fde *fdes;
	size_t nfdes, capfdes;
	const struct cfi_cie *cie;
	uint32_t input, fde_off;
	int32_t fde_index;		/* -1 until a DWARF row needs it */
	const struct range *clip;	/* allowed ranges for this FDE */
	size_t nclip;
	size_t frag_floor;		/* first fragment of this FDE */
};

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

/* Maps a DWARF row to a fixed row; returns false when it must stay DWARF. */
static bool fixed_row(const struct cfi_cie *cie, const struct cfi_row *r,
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

static int on_row(void *user, uint64_t start, uint64_t end,
		  const struct cfi_row *r)
{
	struct compile *cc = user;
	struct unwind_row row;

	if (!fixed_row(cc->cie, r, &row)) {
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

static int cmp_fde_ref(const void *a, const void *b)
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
static int scan_fdes(const struct cfi_input *inputs, size_t ninputs,
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

static int build(struct unwind_table *t, struct frag *frags, size_t nfrags)
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
	if (ninputs) {
		t->inputs = malloc(sizeof(*inputs) * ninputs);
		if (!t->inputs) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(t->inputs, inputs, sizeof(*inputs) * ninputs);
	}
	t->ninputs = ninputs;
	err = scan_fdes(inputs, ninputs, log, &refs, &nrefs);
	if (err)
		goto out;
	for (size_t i = 1; i < nrefs; i++) {
		if (cmp_fde_ref(&refs[i - 1], &refs[i]) > 0) {
			qsort(refs, nrefs, sizeof(*refs), cmp_fde_ref);
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
			err = -EINVAL; /* scan_fdes parsed it: cannot fail */
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

		err = cfi_run(&inputs[r->input], &cie, &fde, 0, on_row, &cc,
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
		err = build(t, cc.frags, cc.nfrags);
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

/* ---- lazy tables ---- */

/* A lazy table's state. Invariants: frags[] covers [t->lo, t->hi) without
 * gaps or overlaps, sorted; a LAZY fragment is a union of whole regions,
 * region i being [loc(i), loc(i + 1)) (the last up to t->hi); t's rows
 * are built from frags[]. */
struct ut_lazy {
	const struct log_sink *log;
	const uint8_t *entries;	/* the header's table: (loc, fde) sdata4 pairs */
	struct fde_ref *refs;	/* or our own index (sorted by begin), for CFI
				   without a header table (.debug_frame) */
	size_t nentries;
	uint64_t hdr_vaddr;	/* entries are relative to it (datarel) */
	struct frag *frags;
	size_t nfrags, capfrags;
	size_t capfdes;
	size_t nfills;
	size_t max_fills;	/* then compile whole */
};

static int32_t le32s(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
			 (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static uint64_t lazy_loc(const struct ut_lazy *z, size_t i)
{
	if (z->refs)
		return z->refs[i].begin;
	return z->hdr_vaddr + (uint64_t)(int64_t)le32s(z->entries + 8 * i);
}

static uint64_t lazy_fde_vaddr(const struct ut_lazy *z, size_t i)
{
	return z->hdr_vaddr + (uint64_t)(int64_t)le32s(z->entries + 8 * i + 4);
}

/* The FDE of header entry i, or -EINVAL when it does not parse. */
static int lazy_fde(const struct unwind_table *t, size_t i, uint32_t *off,
		    struct cfi_cie *cie, struct cfi_fde *fde)
{
	const struct cfi_input *in = &t->inputs[0];
	uint64_t a;

	if (t->lazy->refs) {
		*off = t->lazy->refs[i].off;
		return cfi_fde_at(in, *off, cie, fde) ? -EINVAL : 0;
	}
	a = lazy_fde_vaddr(t->lazy, i);
	if (a < in->vaddr || a - in->vaddr >= in->size)
		return -EINVAL;
	*off = (uint32_t)(a - in->vaddr);
	return cfi_fde_at(in, *off, cie, fde) ? -EINVAL : 0;
}

/* Rebuilds rows, starts and block index from the fragments; the table is
 * unchanged on failure. */
static int lazy_rebuild(struct unwind_table *t)
{
	struct unwind_table nt = *t;
	int err = build(&nt, t->lazy->frags, t->lazy->nfrags);

	if (err) {
		free(nt.starts);
		free(nt.rows);
		free(nt.block);
		return err;
	}
	free(t->starts);
	free(t->rows);
	free(t->block);
	*t = nt;
	return 0;
}

static void lazy_free(struct ut_lazy *z)
{
	if (z) {
		free(z->frags);
		free(z->refs);
		free(z);
	}
}

static int lazy_start(struct unwind_table *t, uint64_t lo, uint64_t hi,
		      struct unwind_table **out);

/* A lazy table over one input, its state not filled in yet; NULL when
 * out of memory. */
static struct unwind_table *lazy_new(const struct cfi_input *in,
				     const struct log_sink *log)
{
	struct unwind_table *t = calloc(1, sizeof(*t));
	struct ut_lazy *z = calloc(1, sizeof(*z));

	if (!t || !z || !(t->inputs = malloc(sizeof(*t->inputs)))) {
		free(t);
		free(z);
		return NULL;
	}
	t->inputs[0] = *in;
	t->ninputs = 1;
	t->lazy = z;
	z->log = log;
	z->max_fills = UT_LAZY_MAX_FILLS;
	return t;
}

int unwind_table__open_lazy(const struct cfi_input *eh_frame,
			    const uint8_t *hdr, size_t hdr_size,
			    uint64_t hdr_vaddr, const struct log_sink *log,
			    struct unwind_table **out)
{
	struct unwind_table *t;
	struct ut_lazy *z;
	uint32_t count;
	uint64_t hi;

	*out = NULL;
	/* version 1; eh_frame_ptr 4 bytes; fde_count udata4; the table
	 * datarel sdata4, which every linker writes. */
	if (!hdr || hdr_size < 12 || hdr[0] != 1 || hdr[3] != 0x3b ||
	    hdr[2] != 0x03 || ((hdr[1] & 0x0f) != 0x03 && (hdr[1] & 0x0f) != 0x0b) ||
	    !eh_frame->is_eh_frame || eh_frame->size > UINT32_MAX)
		return -ENOTSUP;
	count = (uint32_t)le32s(hdr + 8);
	if (!count || count > (hdr_size - 12) / 8)
		return -ENOTSUP;
	if (!(t = lazy_new(eh_frame, log)))
		return fail(-ENOMEM);
	z = t->lazy;
	z->entries = hdr + 12;
	z->nentries = count;
	z->hdr_vaddr = hdr_vaddr;
	/* The range ends after the last FDE (an address past every FDE has
	 * no row: the same NULL lookup either way). */
	{
		struct cfi_cie cie;
		struct cfi_fde fde;
		uint32_t off;

		hi = lazy_loc(z, count - 1) + 1;
		if (!lazy_fde(t, count - 1, &off, &cie, &fde) && fde.pc_end > hi)
			hi = fde.pc_end;
	}
	return lazy_start(t, lazy_loc(z, 0), hi, out);
}

/* The first state of a lazy table over [lo, hi): one LAZY row. Frees t
 * on failure. */
static int lazy_start(struct unwind_table *t, uint64_t lo, uint64_t hi,
		      struct unwind_table **out)
{
	struct ut_lazy *z = t->lazy;

	if (hi <= lo || hi - lo > UINT32_MAX) {
		unwind_table__free(t);
		return -ENOTSUP;
	}
	struct frag *f = VEC_PUSH(z->frags, z->nfrags, z->capfrags);
	int err = f ? 0 : -ENOMEM;
	if (f) {
		*f = (struct frag){ .start = lo, .end = hi };
		f->row.cfa_kind = UT_CFA_LAZY;
		err = lazy_rebuild(t);
	}
	if (err) {
		unwind_table__free(t);
		return fail(err);
	}
	*out = t;
	return 0;
}

int unwind_table__open_lazy_index(const struct cfi_input *in,
				  const struct log_sink *log,
				  struct unwind_table **out)
{
	struct unwind_table *t;
	struct ut_lazy *z;
	struct fde_ref *refs = NULL;
	size_t nrefs = 0;
	uint64_t hi = 0;
	int err;

	*out = NULL;
	if (in->size > UINT32_MAX)
		return -ENOTSUP;
	/* One pass over the entries' headers (no CFA program runs), the
	 * pass the whole compile makes first: the same FDEs, in the same
	 * order. */
	err = scan_fdes(in, 1, log, &refs, &nrefs);
	if (err)
		return fail(err);
	if (!nrefs) {
		free(refs);
		return -ENOTSUP;
	}
	for (size_t i = 1; i < nrefs; i++) {
		if (cmp_fde_ref(&refs[i - 1], &refs[i]) > 0) {
			qsort(refs, nrefs, sizeof(*refs), cmp_fde_ref);
			break;
		}
	}
	/* A fill gives region i to FDE i alone: right when no FDE overlaps
	 * one that starts later (the whole compile gives overlapped ranges
	 * to the FDE that starts first, which a fill looking at its
	 * neighbour only could miss). Overlapping FDEs: compile whole. */
	for (size_t i = 0; i < nrefs; i++) {
		if (refs[i].begin < hi) {
			free(refs);
			return -ENOTSUP;
		}
		hi = refs[i].end;
	}
	if (!(t = lazy_new(in, log))) {
		free(refs);
		return fail(-ENOMEM);
	}
	z = t->lazy;
	z->refs = refs;
	z->nentries = nrefs;
	return lazy_start(t, refs[0].begin, hi, out);
}

bool unwind_table__is_lazy(const struct unwind_table *t)
{
	return t->lazy != NULL;
}

void unwind_table__set_max_fills(struct unwind_table *t, size_t n)
{
	if (t->lazy)
		t->lazy->max_fills = n;
}

size_t unwind_table__lazy_fills(const struct unwind_table *t)
{
	return t->lazy ? t->lazy->nfills : 0;
}

static void unchecked_free(struct ut_unchecked *u)
{
	if (u) {
		free(u->checked);
		free(u->name);
		free(u);
	}
}

/* Frees what t's arrays and state hold (not t itself, nor t->inputs). */
static void release_rows(struct unwind_table *t)
{
	lazy_free(t->lazy);
	unchecked_free(t->unchecked);
	if (t->map) {
		if (t->map_len)
			munmap(t->map, t->map_len);
		return;
	}
	free(t->starts);
	free(t->rows);
	free(t->block);
	free(t->fdes);
}

/* Replaces t's rows by a whole compile of its inputs; t is unchanged on
 * failure. */
static int compile_in_place(struct unwind_table *t, const struct log_sink *log,
			    bool rewrite)
{
	struct unwind_table *w;
	int err = unwind_table__compile(t->inputs, t->ninputs, log, &w);

	if (err)
		return err;
	release_rows(t);
	free(t->inputs);
	*t = *w;
	t->rewrite = rewrite;
	free(w);
	return 0;
}

int unwind_table__defer_checks(struct unwind_table *t, unsigned chunk_shift,
			       int (*check)(const struct unwind_table *, size_t,
					    void *, const char **),
			       void *user, const struct log_sink *log,
			       char *name)
{
	struct ut_unchecked *u = calloc(1, sizeof(*u));
	uint64_t span = t->hi - t->lo;

	if (!u || t->hi <= t->lo || t->lazy || chunk_shift > 63) {
		free(u);
		free(name);
		return u ? -EINVAL : -ENOMEM;
	}
	u->nchunks = (size_t)((span - 1) >> chunk_shift) + 1;
	u->checked = calloc((u->nchunks + 63) / 64, sizeof(*u->checked));
	if (!u->checked) {
		free(u);
		free(name);
		return -ENOMEM;
	}
	u->chunk_shift = chunk_shift;
	u->check = check;
	u->user = user;
	u->log = log;
	u->name = name;
	t->unchecked = u;
	return 0;
}

/* Checks chunk c of t; once every chunk passed, t is an ordinary table. */
static int check_chunk(struct unwind_table *t, size_t c, const char **why)
{
	struct ut_unchecked *u = t->unchecked;
	int err;

	if ((u->checked[c / 64] >> (c % 64)) & 1)
		return 0;
	const char *w = NULL;

	err = u->check(t, c, u->user, &w);
	if (err) {
		if (why)
			*why = w;
		return err;
	}
	u->checked[c / 64] |= 1ull << (c % 64);
	if (++u->nchecked == u->nchunks) {
		unchecked_free(u);
		t->unchecked = NULL;
	}
	return 0;
}

int unwind_table__check_all(struct unwind_table *t, const char **why)
{
	for (size_t c = 0; t->unchecked && c < t->unchecked->nchunks; c++)
		if (check_chunk(t, c, why))
			return -EINVAL;
	return 0;
}

/* A chunk of a table from the cache failed its check: the file is not
 * trusted any further, the table is compiled from the module's CFI. */
static int checks_failed(struct unwind_table *t, const char *why)
{
	struct ut_unchecked *u = t->unchecked;

	log_info(u->log, "%s: table cache file not valid (%s); ignored and "
		 "rewritten", u->name ? u->name : "unwind table",
		 why ? why : "?");
	return compile_in_place(t, u->log, true);
}

int unwind_table__complete(struct unwind_table *t)
{
	const char *why = NULL;

	if (t->unchecked && unwind_table__check_all(t, &why))
		return checks_failed(t, why);
	if (!t->lazy)
		return 0;
	return compile_in_place(t, t->lazy->log, false);
}

/* Header entry whose region holds vaddr: the last with loc <= vaddr. */
static size_t lazy_entry(const struct ut_lazy *z, uint64_t vaddr)
{
	size_t lo = 0, hi = z->nentries;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (lazy_loc(z, mid) <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_frag_addr(const void *key, const void *elem)
{
	uint64_t a = *(const uint64_t *)key;
	const struct frag *f = elem;

	return a < f->start ? -1 : a >= f->end;
}

/* Compiles region i (holding vaddr) into the fragments. -ENOTSUP: the
 * CFI there is not what the lazy path handles (compile whole). */
static int lazy_fill_region(struct unwind_table *t, uint64_t vaddr)
{
	struct ut_lazy *z = t->lazy;
	size_t i = lazy_entry(z, vaddr);
	uint64_t b = lazy_loc(z, i);
	uint64_t e = i + 1 < z->nentries ? lazy_loc(z, i + 1) : t->hi;
	struct cfi_cie cie;
	struct cfi_fde fde;
	uint32_t off;
	struct frag *slot;
	struct frag *mine = NULL;
	size_t nmine = 0, capmine = 0;
	int err = 0;

	if (vaddr < b || vaddr >= e || e > t->hi)
		return -ENOTSUP; /* the header table is out of order */
	slot = bsearch(&vaddr, z->frags, z->nfrags, sizeof(*z->frags),
		       cmp_frag_addr);
	if (!slot || slot->row.cfa_kind != UT_CFA_LAZY || b < slot->start ||
	    e > slot->end)
		return -ENOTSUP;
	/* The whole compile gives an FDE what it covers unless an FDE that
	 * starts earlier covers it first: with the neighbours ordered and
	 * not overlapping, region i is FDE i's alone. */
	if (i > 0) {
		struct cfi_cie pcie;
		struct cfi_fde pfde;
		uint32_t poff;

		if (lazy_loc(z, i - 1) >= b)
			return -ENOTSUP;
		if (!lazy_fde(t, i - 1, &poff, &pcie, &pfde) &&
		    pfde.pc_begin != pfde.pc_end && pfde.pc_end > b)
			return -ENOTSUP;
	}
	uint64_t cov_end = b; /* what FDE i's rows cover */
	if (!lazy_fde(t, i, &off, &cie, &fde) && fde.pc_begin != fde.pc_end) {
		struct range clip;
		struct compile cc = { .log = z->log };

		if (fde.pc_begin != b || fde.pc_end > e)
			return -ENOTSUP;
		clip = (struct range){ b, fde.pc_end };
		cc.frags = NULL;
		cc.fdes = t->fdes;
		cc.nfdes = t->nfdes;
		cc.capfdes = z->capfdes;
		cc.clip = &clip;
		cc.nclip = 1;
		cc.cie = &cie;
		cc.input = 0;
		cc.fde_off = off;
		cc.fde_index = -1;
		err = cfi_run(&t->inputs[0], &cie, &fde, 0, on_row, &cc, NULL);
		t->fdes = cc.fdes;
		z->capfdes = cc.capfdes;
		if (err == -ENOMEM) {
			free(cc.frags);
			return err;
		}
		if (err) {
			log_warn(z->log, ".eh_frame: FDE at %#x (pc %#llx..%#llx): "
				 "bad CFA program; ignored", off,
				 (unsigned long long)fde.pc_begin,
				 (unsigned long long)fde.pc_end);
			free(cc.frags);
		} else {
			t->nfdes = cc.nfdes;
			mine = cc.frags;
			nmine = cc.nfrags;
			capmine = cc.capfrags;
			cov_end = fde.pc_end;
		}
		err = 0;
	}
	/* The rest of the region has no CFI. */
	if (cov_end < e) {
		struct frag *g = VEC_PUSH(mine, nmine, capmine);

		if (!g) {
			free(mine);
			return -ENOMEM;
		}
		*g = (struct frag){ .start = cov_end, .end = e };
	}
	/* Splice: [slot->start, b) LAZY, mine, [e, slot->end) LAZY. */
	size_t at = (size_t)(slot - z->frags);
	struct frag old = *slot;
	size_t extra = nmine - 1 + (old.start < b) + (e < old.end);

	if (vec_reserve((void **)&z->frags, &z->capfrags, z->nfrags + extra,
			sizeof(*z->frags))) {
		free(mine);
		return -ENOMEM;
	}
	memmove(z->frags + at + 1 + extra, z->frags + at + 1,
		(z->nfrags - at - 1) * sizeof(*z->frags));
	size_t k = at;
	if (old.start < b) {
		z->frags[k] = old;
		z->frags[k++].end = b;
	}
	memcpy(z->frags + k, mine, nmine * sizeof(*mine));
	k += nmine;
	if (e < old.end) {
		z->frags[k] = old;
		z->frags[k].start = e;
	}
	z->nfrags += extra;
	free(mine);
	z->nfills++;
	return lazy_rebuild(t);
}

static const struct unwind_row *fill(const struct unwind_table *ct, uint64_t vaddr);

/* The slow path of a lookup, timed: what a walk spends making its table
 * (lazy fills, the completion after them, a cached table's chunk
 * checks), for --stats. */
const struct unwind_row *unwind_table__fill(const struct unwind_table *ct,
					    uint64_t vaddr)
{
	uint64_t t0 = clock_monotonic_ns();
	const struct unwind_row *r = fill(ct, vaddr);

	((struct unwind_table *)ct)->fill_ns += clock_monotonic_ns() - t0;
	return r;
}

static const struct unwind_row *fill(const struct unwind_table *ct, uint64_t vaddr)
{
	/* Logically const: the rows are those of the whole compile. */
	struct unwind_table *t = (struct unwind_table *)ct;
	int err = -ENOTSUP;

	if (t->unchecked) {
		const char *why = NULL;

		if (vaddr < t->lo || vaddr >= t->hi)
			return NULL;
		if (check_chunk(t, (size_t)((vaddr - t->lo) >>
					    t->unchecked->chunk_shift), &why) &&
		    checks_failed(t, why))
			return NULL; /* out of memory: no row, this time */
		/* Checked (or compiled) now: no recursion. */
		return unwind_table__lookup(t, vaddr);
	}
	if (!t->lazy)
		return NULL;
	if (t->lazy->nfills < t->lazy->max_fills)
		err = lazy_fill_region(t, vaddr);
	if (err == -ENOTSUP || (!err && t->lazy->nfills >= t->lazy->max_fills))
		err = unwind_table__complete(t);
	if (err) {
		/* Out of memory: no row, this time. */
		return NULL;
	}
	if (t->lazy) {
		/* The region is compiled now: look again (no LAZY row left
		 * at vaddr, so no recursion). */
		const struct unwind_row *r = unwind_table__lookup(t, vaddr);

		return r && r->cfa_kind == UT_CFA_LAZY ? NULL : r;
	}
	return unwind_table__lookup(t, vaddr);
}

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	release_rows(t);
	free(t->inputs);
	free(t);
}

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

void unwind_table__range(const struct unwind_table *t, uint64_t *lo,
			 uint64_t *hi)
{
	*lo = t->lo;
	*hi = t->hi;
}

void unwind_table__stats(const struct unwind_table *t,
			 struct unwind_table_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->rows = t->nrows;
	for (size_t i = 0; i < t->nrows; i++)
		st->dwarf_rows += t->rows[i].cfa_kind == UT_CFA_DWARF;
	st->fdes = t->nfdes;
	st->bytes = sizeof(*t) + t->nrows * (sizeof(*t->starts) +
					     sizeof(*t->rows)) +
		    (t->nblocks + 1) * sizeof(*t->block) +
		    t->nfdes * sizeof(*t->fdes) +
		    t->ninputs * sizeof(*t->inputs);
}
