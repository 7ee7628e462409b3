/* go_pcsp.c - compiles Go pcsp tables into compact unwind rows.
 *
 * Go's frame-pointer convention on amd64 (Go 1.19, cmd/internal/obj/x86
 * preprocess): a function with a frame (and not NOFRAME, not a frameless
 * leaf) allocates it with SUBQ $N, SP and then stores the caller's BP in
 * its top word, MOVQ BP, N-8(SP); LEAQ N-8(SP), BP. With CFA = SP + N + 8
 * the saved BP is at CFA - 16 from the end of that MOVQ until the frame is
 * freed (the epilogue's MOVQ N-8(SP), BP restores the same value, so the
 * slot stays right until ADDQ $N, SP, after which the pcsp delta is 0
 * again). Go 1.21 and later push BP first (PUSHQ BP; MOVQ SP, BP), which
 * puts it at CFA - 16 as well. The pcsp table does not say where the store
 * is, so the instruction at the point where the delta first turns
 * positive is decoded: the rule applies when it is that store (or a PUSHQ
 * BP). Go's own .debug_frame describes only the CFA and the return
 * address (rbp is "same value" there); test_go_pcsp compares the two. */
#include "table/go_pcsp.h"
#include "table/table_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A pcsp table longer than this many entries for one function is
 * treated as malformed (the runtime's largest have a few thousand). */
#define GO_PCSP_MAX_ENTRIES (1u << 20)

struct builder {
	struct go_pcsp_rows *r;
	size_t cap;
};

static bool same_row(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->cfa_kind == b->cfa_kind && a->cfa_off == b->cfa_off &&
	       a->rbp_kind == b->rbp_kind && a->rbp_off == b->rbp_off &&
	       a->rbx_kind == b->rbx_kind && a->rbx_off == b->rbx_off;
}

/* Appends a row starting at start (>= the last start; an equal start
 * replaces the last row, an equal row extends it). */
static int emit(struct builder *b, uint64_t start, const struct unwind_row *row)
{
	struct go_pcsp_rows *r = b->r;

	if (r->n && r->start[r->n - 1] == start) {
		r->rows[r->n - 1] = *row;
		if (r->n > 1 && same_row(&r->rows[r->n - 2], row))
			r->n--;
		return 0;
	}
	if (r->n && same_row(&r->rows[r->n - 1], row))
		return 0;
	if (r->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		uint64_t *s = realloc(r->start, cap * sizeof(*s));
		struct unwind_row *rw;

		if (!s)
			return -ENOMEM;
		r->start = s;
		rw = realloc(r->rows, cap * sizeof(*rw));
		if (!rw)
			return -ENOMEM;
		r->rows = rw;
		b->cap = cap;
	}
	r->start[r->n] = start;
	r->rows[r->n] = *row;
	r->n++;
	return 0;
}

static bool uvarint(const uint8_t **pp, const uint8_t *end, uint32_t *v)
{
	const uint8_t *p = *pp;
	uint32_t x = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		if (p >= end)
			return false;
		x |= (uint32_t)(*p & 0x7f) << shift;
		if (!(*p++ & 0x80)) {
			*v = x;
			*pp = p;
			return true;
		}
	}
	return false;
}

void go_pcvalue_iter__init(struct go_pcvalue_iter *it, const uint8_t *p,
			   const uint8_t *end, uint64_t entry,
			   uint64_t func_end, unsigned quantum)
{
	memset(it, 0, sizeof(*it));
	it->pc = it->next_pc = entry;
	it->func_end = func_end;
	it->value = -1;
	it->first = true;
	it->quantum = (uint8_t)quantum;
	it->p = p && p < end ? p : NULL;
	it->end = it->p ? end : NULL;
}

bool go_pcvalue_iter__next(struct go_pcvalue_iter *it)
{
	uint32_t uvdelta, pcdelta;

	if (!it->p || it->p >= it->end || it->next_pc >= it->func_end) {
		it->p = NULL;
		return false;
	}
	/* A zero value delta ends the table, except as the first entry. */
	if (*it->p == 0 && !it->first) {
		it->p = NULL;
		return false;
	}
	if (!uvarint(&it->p, it->end, &uvdelta) ||
	    !uvarint(&it->p, it->end, &pcdelta) || pcdelta == 0) {
		it->bad = true;
		it->p = NULL;
		return false;
	}
	it->first = false;
	/* Wraps as Go's runtime does (int32 arithmetic), without the
	   undefined signed overflow. */
	it->value = (int32_t)((uint32_t)it->value +
			      (-(uvdelta & 1) ^ (uvdelta >> 1)));
	it->pc = it->next_pc;
	it->next_pc = it->pc + (uint64_t)pcdelta * it->quantum;
	if (it->next_pc > it->func_end)
		it->next_pc = it->func_end;
	return true;
}

/* Length of the instruction at p that saves BP for a frame of delta
 * bytes (MOVQ BP, delta-8(SP), or PUSHQ BP when delta is 8), else 0. */
static size_t bp_save_len(const uint8_t *p, size_t avail, int32_t delta)
{
	int32_t want = delta - 8;

	if (avail >= 1 && p[0] == 0x55 && delta == 8)
		return 1;
	if (avail >= 5 && p[0] == 0x48 && p[1] == 0x89 && p[2] == 0x6c &&
	    p[3] == 0x24 && (int8_t)p[4] == want)
		return 5;
	if (avail >= 8 && p[0] == 0x48 && p[1] == 0x89 && p[2] == 0xac &&
	    p[3] == 0x24) {
		int32_t d;

		memcpy(&d, p + 4, 4);
		if (d == want)
			return 8;
	}
	return 0;
}

static int compile_func(struct builder *b, const struct go_pcsp_func *f,
			unsigned quantum, const struct log_sink *log)
{
	struct go_pcvalue_iter it;
	uint64_t pc = f->entry, bp_from = UINT64_MAX;
	bool seen_frame = false;
	struct go_pcsp_rows *r = b->r;

	go_pcvalue_iter__init(&it, f->pcsp, f->pcsp ? f->pcsp + f->pcsp_max
						    : NULL,
			      f->entry, f->end, quantum);
	for (uint32_t k = 0; k < GO_PCSP_MAX_ENTRIES &&
	     go_pcvalue_iter__next(&it); k++) {
		int32_t value = it.value;
		uint64_t next = it.next_pc;
		struct unwind_row row = { 0 };
		int64_t cfa;
		int err;

		pc = it.pc;
		cfa = (int64_t)value + 8;
		if (value < 0 || cfa > INT16_MAX) {
			/* No row: an unwinder stops here rather than guess. */
			r->big_frames += value >= 0;
			row.cfa_kind = UT_CFA_NONE;
			err = emit(b, pc, &row);
			if (err < 0)
				return err;
			pc = next;
			continue;
		}
		row.cfa_kind = UT_CFA_RSP;
		row.cfa_off = (int16_t)cfa;
		if (value > 0 && !seen_frame) {
			size_t len = 0;

			seen_frame = true;
			if (f->code)
				len = bp_save_len(f->code + (pc - f->entry),
						  f->end - pc, value);
			if (len) {
				bp_from = pc + len;
				r->bp_funcs++;
				/* The store itself: rbp not saved yet. */
				err = emit(b, pc, &row);
				if (err < 0)
					return err;
				if (bp_from < next) {
					row.rbp_kind = UT_RBP_CFA_OFF;
					row.rbp_off = -16;
					err = emit(b, bp_from, &row);
					if (err < 0)
						return err;
				}
				pc = next;
				continue;
			}
		}
		if (value > 0 && pc >= bp_from) {
			row.rbp_kind = UT_RBP_CFA_OFF;
			row.rbp_off = -16;
		}
		err = emit(b, pc, &row);
		if (err < 0)
			return err;
		pc = next;
	}
	if (it.bad) {
		r->bad_tables++;
		log_debug(log, "go pcsp: malformed table of the function at "
			  "%#llx", (unsigned long long)f->entry);
	}
	if (pc < f->end) {
		/* Bytes the table does not reach (padding, a bad table). */
		struct unwind_row none = { 0 };

		return emit(b, pc, &none);
	}
	return 0;
}

int go_pcsp__compile(const struct go_pcsp_func *funcs, size_t n,
		     unsigned quantum, const struct log_sink *log,
		     struct go_pcsp_rows *out)
{
	struct builder b = { out, 0 };
	uint64_t last_end = 0;

	memset(out, 0, sizeof(*out));
	if (quantum == 0)
		return fail(-EINVAL);
	for (size_t i = 0; i < n; i++) {
		const struct go_pcsp_func *f = &funcs[i];
		int err;

		if (f->end <= f->entry || f->entry < last_end) {
			log_warn(log, "go pcsp: function %zu at %#llx out of "
				 "order", i, (unsigned long long)f->entry);
			go_pcsp__free(out);
			return fail(-EINVAL);
		}
		if (out->n && f->entry > last_end) {
			struct unwind_row none = { 0 };

			err = emit(&b, last_end, &none);
			if (err < 0)
				goto nomem;
		}
		err = compile_func(&b, f, quantum, log);
		if (err < 0)
			goto nomem;
		out->funcs++;
		last_end = f->end;
	}
	out->hi = last_end;
	return 0;
nomem:
	go_pcsp__free(out);
	return fail(-ENOMEM);
}

const struct unwind_row *go_pcsp__lookup(const struct go_pcsp_rows *r,
					 uint64_t vaddr)
{
	size_t lo = 0, hi = r->n;

	if (!r->n || vaddr < r->start[0] || vaddr >= r->hi)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->start[mid] <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return r->rows[lo].cfa_kind == UT_CFA_NONE ? NULL : &r->rows[lo];
}

void go_pcsp__free(struct go_pcsp_rows *r)
{
	free(r->start);
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

int go_pcsp__table(const struct go_pcsp_rows *r, struct unwind_table **out)
{
	struct unwind_table *t;
	struct frag *frags;
	size_t n = 0;
	int err;

	*out = NULL;
	frags = malloc(sizeof(*frags) * (r->n ? r->n : 1));
	if (!frags)
		return fail(-ENOMEM);
	for (size_t i = 0; i < r->n; i++) {
		uint64_t end = i + 1 < r->n ? r->start[i + 1] : r->hi;

		if (r->rows[i].cfa_kind == UT_CFA_NONE || end <= r->start[i])
			continue;
		frags[n++] = (struct frag){ r->start[i], end, r->rows[i] };
	}
	if (!n) {
		free(frags);
		return -ENOENT;
	}
	if (frags[n - 1].end - frags[0].start > UINT32_MAX) {
		free(frags);
		return fail(-E2BIG);
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		free(frags);
		return fail(-ENOMEM);
	}
	t->serial = unwind_table__new_serial();
	err = ut_build(t, frags, n);
	free(frags);
	if (err < 0) {
		unwind_table__free(t);
		return fail(err);
	}
	*out = t;
	return 0;
}
