/* lazy.c - lazy unwind tables: opened over .eh_frame_hdr's search table
 * or an FDE index made in one pass, one header region compiled when a
 * lookup first lands in it, the rows always those of the whole compile. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "dwarf/cfi.h"
#include "table/table_internal.h"

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
	int err = ut_build(&nt, t->lazy->frags, t->lazy->nfrags);

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

void ut_lazy_free(struct ut_lazy *z)
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
	t->serial = unwind_table__new_serial();
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
	err = ut_scan_fdes(in, 1, log, &refs, &nrefs);
	if (err)
		return fail(err);
	if (!nrefs) {
		free(refs);
		return -ENOTSUP;
	}
	for (size_t i = 1; i < nrefs; i++) {
		if (ut_cmp_fde_ref(&refs[i - 1], &refs[i]) > 0) {
			qsort(refs, nrefs, sizeof(*refs), ut_cmp_fde_ref);
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
int ut_lazy_fill(struct unwind_table *t, uint64_t vaddr)
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
		err = cfi_run(&t->inputs[0], &cie, &fde, 0, ut_on_row, &cc, NULL);
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
