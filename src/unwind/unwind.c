/* unwind.c - the unwinder: from one frame's registers to its caller's,
 * trying the steppers in order (signal frame, compiled table, code
 * analysis, frame pointer, stack scan), each frame tagged with the stepper that produced
 * it; every walk bounded by a frame limit and a stack-direction check. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "base/log.h"
#include "base/opts.h"
#include "unwind/unwind_internal.h"

#define DEFAULT_MAX_FRAMES 1024
#define MAX_SIGNAL_FRAMES 64   /* nested signal frames in one walk */


struct stacksnap_unwinder *
stacksnap_unwinder__new(const struct stacksnap_unwind_opts *opts)
{
	struct stacksnap_unwind_opts o;
	struct stacksnap_unwinder *uw;

	if (opts_in(&o, sizeof(o), opts, 0)) {
		errno = EINVAL;
		return NULL;
	}
	uw = calloc(1, sizeof(*uw));
	if (!uw) {
		errno = ENOMEM;
		return NULL;
	}
	uw->max_frames = o.max_frames ? o.max_frames : DEFAULT_MAX_FRAMES;
	uw->stack_scan = o.stack_scan;
	uw->no_fp = o.no_frame_pointer;
	uw->no_analysis = o.no_analysis;
	uw->end = STACKSNAP_END_NONE;
	return uw;
}

void stacksnap_unwinder__free(struct stacksnap_unwinder *uw)
{
	if (uw) {
		analysis__cache_free(uw->analysis);
		free(uw->fast_rows);
	}
	free(uw);
}

int stacksnap_unwinder__start(struct stacksnap_unwinder *uw,
			      struct stacksnap_addrspace *as,
			      const struct stacksnap_regs *regs,
			      struct stacksnap_mem *mem)
{
	if (!uw || !as || !regs || !mem)
		return fail(-EINVAL);
	if ((regs->valid & (BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP))) !=
	    (BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP)))
		return fail(-EINVAL);
	uw->as = as;
	uw->mem = mem;
	uw->cur.regs = *regs;
	uw->cur.stepper = STACKSNAP_STEP_START;
	uw->cur.trust = STACKSNAP_TRUST_CONTEXT;
	uw->cur.flags = 0;
	uw->have_cur = true;
	uw->cur_map = NULL;
	uw->nframes = 0;
	uw->nsignals = 0;
	uw->end = STACKSNAP_END_NONE;
	mem_invalidate(mem); /* a live target may have run since */
	return 0;
}

enum stacksnap_end stacksnap_unwinder__end(const struct stacksnap_unwinder *uw)
{
	return uw ? uw->end : STACKSNAP_END_NONE;
}

/* The checks after stepping into an interrupted frame. On sigaltstack the
 * interrupted stack may be anywhere, so the stack-direction rule does not
 * apply: only insist that something changed (nested signal frames are
 * bounded by MAX_SIGNAL_FRAMES). */
static enum stacksnap_end signal_done(struct stacksnap_unwinder *uw,
				      const struct frame_state *st, uint64_t sp,
				      uint64_t pc)
{
	if (++uw->nsignals > MAX_SIGNAL_FRAMES ||
	    (st->regs.regs[STACKSNAP_REG_RSP] == sp &&
	     st->regs.regs[STACKSNAP_REG_RIP] == pc))
		return STACKSNAP_END_LOOP;
	uw->cur_map = NULL; /* an exact pc: looked up anew */
	return STACKSNAP_END_NONE;
}

/* Is call (a return address less one) in a Go function at the bottom of
 * its stack (module__go_is_bottom: where the stack switched to g0, or a
 * goroutine's or thread's start; docs/go.md)? A module not Go costs one
 * look at its pclntab, once. */
static bool go_bottom(struct stacksnap_unwinder *uw, const struct as_map *m,
		      uint64_t call)
{
	return m->mod && !(m->mod->go_tried && !m->mod->go) &&
	       module__go_is_bottom(uw->as->ctx, m->mod, call - m->bias);
}

/* Turns uw->cur into its caller. Returns END_NONE on success, else why the
 * walk ends. Sets *sigreturn when cur is the signal trampoline. */
static enum stacksnap_end step(struct stacksnap_unwinder *uw, uint64_t *cfa,
			       bool *sigreturn)
{
	struct frame_state *st = &uw->cur;
	uint64_t pc = st->regs.regs[STACKSNAP_REG_RIP];
	uint64_t sp = st->regs.regs[STACKSNAP_REG_RSP];
	/* A return address points after the call, possibly past the end of
	 * the caller's function: look up the call itself. Frame 0 and frames
	 * interrupted by a signal have an exact pc. */
	bool exact = uw->nframes == 0 || (st->flags & STACKSNAP_FRAME_SIGNAL);
	uint64_t lookup = exact ? pc : pc - 1;
	const struct as_map *m = !exact && uw->cur_map
					 ? uw->cur_map
					 : addrspace__find(uw->as, lookup);
	enum stacksnap_end end = m ? STACKSNAP_END_NO_CFI : STACKSNAP_END_NO_MODULE;
	enum stacksnap_end uend;
	const struct unwind_table *t = NULL;

/* The user's steppers with priority in [lo, hi), between the built-ins. */
#define TRY_USERS(lo, hi)                                                      \
	do {                                                                   \
		if (uw->nusers &&                                              \
		    (uend = step_users(uw, st, cfa, exact, lo, hi)) !=         \
			    STACKSNAP_END_NO_CFI) {                            \
			end = uend;                                            \
			goto check;                                            \
		}                                                              \
	} while (0)

	TRY_USERS(STACKSNAP_PRIO_SIGNAL + 1, INT_MAX);
	if (m && m->mod) {
		t = module__table(uw->as->ctx, m->mod);
		if (module__is_sigreturn(m->mod, pc - m->bias)) {
			*sigreturn = true;
			end = step_signal(uw, st, cfa);
			if (end != STACKSNAP_END_NONE)
				return end;
			return signal_done(uw, st, sp, pc);
		}
		if (!exact && go_bottom(uw, m, lookup))
			return STACKSNAP_END_COMPLETE;
	}
	TRY_USERS(STACKSNAP_PRIO_CFI + 1, STACKSNAP_PRIO_SIGNAL + 1);
	if (m && m->mod) {
		const struct unwind_row *row;

		row = t ? unwind_table__lookup(t, lookup - m->bias) : NULL;
		if (!row) { /* maybe in the debug file's .debug_frame */
			t = module__debug_table(uw->as->ctx, m->mod);
			row = t ? unwind_table__lookup(t, lookup - m->bias) : NULL;
		}
		if (row && row->cfa_kind == UT_CFA_DWARF) {
			end = step_dwarf(uw, t, row, lookup - m->bias, m->bias,
					 st, cfa);
			*sigreturn = end == STACKSNAP_END_NONE &&
				     (st->flags & STACKSNAP_FRAME_SIGNAL);
			if (*sigreturn)
				return signal_done(uw, st, sp, pc);
			goto check;
		}
		if (row && row->cfa_kind != UT_CFA_NONE) {
			end = step_table(uw, row, st, cfa);
			goto check;
		}
	}
	TRY_USERS(STACKSNAP_PRIO_ANALYSIS + 1, STACKSNAP_PRIO_CFI + 1);
	if (!uw->no_analysis &&
	    (uend = step_analysis(uw, m, exact, st, cfa)) != STACKSNAP_END_NO_CFI) {
		end = uend;
		goto check;
	}
	TRY_USERS(STACKSNAP_PRIO_FP + 1, STACKSNAP_PRIO_ANALYSIS + 1);
	if (!uw->no_fp) {
		end = step_fp(uw, m, exact, st, cfa);
		if (end == STACKSNAP_END_NONE)
			goto check;
	}
	TRY_USERS(STACKSNAP_PRIO_SCAN + 1, STACKSNAP_PRIO_FP + 1);
	if (uw->stack_scan) {
		end = step_scan(uw, exact, st, cfa);
		if (end == STACKSNAP_END_NONE)
			goto check;
	}
	TRY_USERS(INT_MIN, STACKSNAP_PRIO_SCAN + 1);
#undef TRY_USERS
check:
	/* Nothing took a pc outside every mapping: say so, whichever
	 * stepper was last to decline (stale maps are not missing CFI). */
	if (end == STACKSNAP_END_NO_CFI && !m)
		return STACKSNAP_END_NO_MODULE;
	if (end != STACKSNAP_END_NONE)
		return end;
	pc = st->regs.regs[STACKSNAP_REG_RIP];
	if (pc == 0)
		return STACKSNAP_END_COMPLETE; /* the outermost frame's marker */
	if (st->regs.regs[STACKSNAP_REG_RSP] <= sp)
		return STACKSNAP_END_LOOP;
	m = addrspace__find(uw->as, pc - 1);
	if (!m || !(m->prot & PROT_EXEC))
		return STACKSNAP_END_BAD_PC;
	uw->cur_map = m;
	return STACKSNAP_END_NONE;
}

int stacksnap_unwinder__next(struct stacksnap_unwinder *uw,
			     struct stacksnap_frame *frame)
{
	bool sigreturn = false;
	uint64_t cfa = 0;

	if (!uw || !frame)
		return fail(-EINVAL);
	if (!uw->have_cur) /* ended, or never started */
		return uw->end == STACKSNAP_END_NONE ? fail(-EINVAL) : 0;
	if (uw->nframes >= uw->max_frames) {
		uw->have_cur = false;
		uw->end = STACKSNAP_END_FRAME_LIMIT;
		return 0;
	}
	frame->pc = uw->cur.regs.regs[STACKSNAP_REG_RIP];
	frame->sp = uw->cur.regs.regs[STACKSNAP_REG_RSP];
	frame->stepper = uw->cur.stepper;
	frame->trust = uw->cur.trust;
	frame->flags = uw->cur.flags;
	frame->user_stepper = uw->cur.stepper == STACKSNAP_STEP_USER
				      ? uw->cur.user_stepper : 0;
	uw->end = step(uw, &cfa, &sigreturn);
	frame->cfa = uw->end == STACKSNAP_END_NONE ? cfa : 0;
	if (sigreturn)
		frame->flags |= STACKSNAP_FRAME_SIGRETURN;
	uw->nframes++;
	if (uw->end != STACKSNAP_END_NONE)
		uw->have_cur = false;
	return 1;
}

/* saved_value()'s common cases, for walk_fast: the register unchanged, or
 * read from its save slot inside the copy. false: not a common case (the
 * general path takes the frame). */
static inline __attribute__((always_inline)) bool
fast_saved(const uint8_t *bytes, uint64_t base, uint64_t len, unsigned kind,
	   int16_t off, uint64_t cfa, uint64_t sp, uint64_t *val, bool *ok)
{
	if (kind == UT_RBP_CFA_OFF) {
		uint64_t at = cfa + off;

		if (at < sp || at - base > len - 8)
			return false;
		memcpy(val, bytes + (at - base), 8);
		*ok = true;
		return true;
	}
	return kind == UT_RBP_SAME;
}

/* The fast path's row cache (unwind_internal.h), made with the first fast
 * walk; NULL when it cannot be had (the walk looks rows up each time). */
static struct fast_row *fast_rows(struct stacksnap_unwinder *uw)
{
	if (!uw->fast_rows_tried) {
		uw->fast_rows_tried = true;
		uw->fast_rows = malloc(FAST_ROWS * sizeof(*uw->fast_rows));
		if (uw->fast_rows)
			memset(uw->fast_rows, 0xff, FAST_ROWS * sizeof(*uw->fast_rows));
	}
	return uw->fast_rows;
}

static inline size_t fast_row_slot(uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - FAST_ROWS_BITS));
}

/* A table's part of the fast path, kept in locals: its range and the
 * high half of its row cache keys (0: rows not cached). */
struct fast_table {
	const struct unwind_table *t;
	uint64_t lo, span, key_hi;
};

static inline void fast_table_set(struct fast_table *ft, const struct unwind_table *t,
				  const struct fast_row *cache)
{
	ft->t = t;
	ft->lo = t->lo;
	ft->span = t->hi - t->lo;
	ft->key_hi = cache && t->serial ? (uint64_t)t->serial << 32 : 0;
}

/* The row for the return address pc - 1 at link-time vaddr of m, when
 * the fast path can take it: not a signal trampoline, not a Go stack's
 * bottom, a row of kind RSP or RBP. NULL: the general path takes the
 * frame. The row is good until the next call. */
static inline __attribute__((always_inline)) const struct unwind_row *
fast_row(struct stacksnap_unwinder *uw, struct fast_row *cache,
	 const struct as_map *m, const struct fast_table *ft, uint64_t pc,
	 uint64_t vaddr)
{
	const struct unwind_row *row;
	uint64_t off = vaddr - ft->lo, key = ft->key_hi | off;
	struct fast_row *e = NULL;

	if (off >= ft->span)
		return NULL; /* no row there */
	if (ft->key_hi) {
		e = &cache[fast_row_slot(key)];
		if (e->key == key)
			return &e->row;
	}
	if (m->mod->sig_check && module__is_sigreturn(m->mod, pc - m->bias))
		return NULL;
	if (go_bottom(uw, m, pc - 1))
		return NULL; /* the general path ends the walk there */
	row = unwind_table__lookup(ft->t, vaddr);
	if (!row || (row->cfa_kind != UT_CFA_RSP && row->cfa_kind != UT_CFA_RBP))
		return NULL;
	if (!e)
		return row;
	e->key = key;
	e->row = *row;
	return &e->row;
}

/* The common case of a walk, kept in locals: a return address whose row
 * is CFA = rsp|rbp + offset, a copied stack holding every word read, and a
 * caller in a module whose table is ready. Emits frames exactly as
 * stacksnap_unwinder__next would, and stops, leaving uw->cur as the next
 * frame to emit, at the first thing it does not handle; the general
 * stepper takes it from there. The copy's bounds, the current mapping's
 * and its table are kept in locals (the frames written could alias them
 * for the compiler); a return address into the same mapping needs no
 * search; rows come from the row cache when it has them. */
static size_t walk_fast(struct stacksnap_unwinder *uw,
			struct stacksnap_frame *frames, size_t max)
{
	const struct stacksnap_mem *mem = uw->mem;
	const uint8_t *bytes = mem->bytes;
	const uint64_t base = mem->base, len = mem->len;
	struct fast_row *cache = fast_rows(uw);
	const struct as_map *m = uw->cur_map;
	struct fast_table ft;
	uint64_t m_start = m->start, m_span = m->end - m->start, bias = m->bias;
	struct frame_state *st = &uw->cur;
	uint64_t pc = st->regs.regs[STACKSNAP_REG_RIP];
	uint64_t sp = st->regs.regs[STACKSNAP_REG_RSP];
	uint64_t rbp = st->regs.regs[STACKSNAP_REG_RBP];
	uint64_t rbx = st->regs.regs[STACKSNAP_REG_RBX];
	bool rbp_ok = st->regs.valid & BIT(STACKSNAP_REG_RBP);
	bool rbx_ok = st->regs.valid & BIT(STACKSNAP_REG_RBX);
	uint8_t stepper = st->stepper, trust = st->trust;
	size_t n = 0;

	if (max > uw->max_frames - uw->nframes)
		max = uw->max_frames - uw->nframes;
	if (len < 8)
		max = 0; /* no return address can be read */
	fast_table_set(&ft, m->mod->table, cache);
	while (n < max) {
		const struct unwind_row *row;
		uint64_t cfa, ra;

		row = fast_row(uw, cache, m, &ft, pc, pc - 1 - bias);
		if (!row)
			break;
		if (row->cfa_kind == UT_CFA_RSP)
			cfa = sp + row->cfa_off;
		else if (rbp_ok)
			cfa = rbp + row->cfa_off;
		else
			break;
		if (cfa <= sp || cfa - 8 - base > len - 8)
			break;
		memcpy(&ra, bytes + (cfa - 8 - base), 8);
		if (ra == 0)
			break; /* the bottom: let the general path end it */
		const struct as_map *next = m;
		if (ra - 1 - m_start >= m_span) {
			next = addrspace__find(uw->as, ra - 1);
			if (!next || !(next->prot & PROT_EXEC) || !next->mod ||
			    !next->mod->table)
				break;
		}
		uint64_t caller_rbp = rbp, caller_rbx = rbx;
		bool caller_rbp_ok = rbp_ok, caller_rbx_ok = rbx_ok;
		if (!fast_saved(bytes, base, len, row->rbp_kind, row->rbp_off,
				cfa, sp, &caller_rbp, &caller_rbp_ok) ||
		    !fast_saved(bytes, base, len, row->rbx_kind, row->rbx_off,
				cfa, sp, &caller_rbx, &caller_rbx_ok))
			break;
		frames[n++] = (struct stacksnap_frame){ .pc = pc, .sp = sp,
							.cfa = cfa,
							.stepper = stepper,
							.trust = trust };
		pc = ra;
		sp = cfa;
		rbp = caller_rbp;
		rbp_ok = caller_rbp_ok;
		rbx = caller_rbx;
		rbx_ok = caller_rbx_ok;
		stepper = STACKSNAP_STEP_TABLE;
		trust = STACKSNAP_TRUST_CFI;
		if (next != m) {
			m = next;
			fast_table_set(&ft, next->mod->table, cache);
			m_start = m->start;
			m_span = m->end - m->start;
			bias = m->bias;
		}
	}
	if (n) {
		st->regs.regs[STACKSNAP_REG_RIP] = pc;
		st->regs.regs[STACKSNAP_REG_RSP] = sp;
		st->regs.regs[STACKSNAP_REG_RBP] = rbp;
		st->regs.regs[STACKSNAP_REG_RBX] = rbx;
		st->regs.valid = BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP) |
				 (rbp_ok ? BIT(STACKSNAP_REG_RBP) : 0) |
				 (rbx_ok ? BIT(STACKSNAP_REG_RBX) : 0);
		st->stepper = stepper;
		st->trust = trust;
		st->flags = 0;
		uw->cur_map = m;
		uw->nframes += (unsigned)n;
	}
	return n;
}

/* Can walk_fast take the current frame? A return address (not frame 0,
 * not interrupted), a copied stack, a known mapping with a table. */
static bool fast_ok(const struct stacksnap_unwinder *uw)
{
	return uw->nframes > 0 && !(uw->cur.flags & STACKSNAP_FRAME_SIGNAL) &&
	       !uw->nuser_above_cfi &&
	       uw->mem->bytes && uw->cur_map && uw->cur_map->mod &&
	       uw->cur_map->mod->table;
}

int stacksnap_unwind(struct stacksnap_unwinder *uw,
		     struct stacksnap_addrspace *as,
		     const struct stacksnap_regs *regs,
		     struct stacksnap_mem *mem, struct stacksnap_frame *frames,
		     size_t max, enum stacksnap_end *end)
{
	size_t n = 0;
	int err = 0;

	if (!frames && max)
		return fail(-EINVAL);
	err = stacksnap_unwinder__start(uw, as, regs, mem);
	if (err)
		return err;
	while (n < max && uw->have_cur) {
		if (fast_ok(uw))
			n += walk_fast(uw, frames + n, max - n);
		if (n == max)
			break;
		err = stacksnap_unwinder__next(uw, &frames[n]);
		if (err <= 0)
			break;
		n++;
	}
	if (err < 0)
		return err;
	if (n == max && uw->have_cur) {
		uw->have_cur = false;
		uw->end = STACKSNAP_END_FRAME_LIMIT;
	}
	if (end)
		*end = uw->end;
	return (int)n;
}

/* ---- names ---- */

bool stacksnap_frame__is_return(const struct stacksnap_frame *frame)
{
	return frame && frame->stepper != STACKSNAP_STEP_START &&
	       !(frame->flags & (STACKSNAP_FRAME_SIGNAL | STACKSNAP_FRAME_SIGRETURN));
}

const char *stacksnap_end__str(enum stacksnap_end end)
{
	static const char *const s[] = {
		[STACKSNAP_END_NONE] = "none",
		[STACKSNAP_END_COMPLETE] = "complete",
		[STACKSNAP_END_NO_MODULE] = "pc outside any mapping",
		[STACKSNAP_END_NO_CFI] = "no unwind information",
		[STACKSNAP_END_BAD_MEMORY] = "stack memory unreadable",
		[STACKSNAP_END_STACK_COPY] = "stack copy too small",
		[STACKSNAP_END_FRAME_LIMIT] = "frame limit reached",
		[STACKSNAP_END_LOOP] = "stack pointer did not move up (loop)",
		[STACKSNAP_END_BAD_CFI] = "unusable unwind information",
		[STACKSNAP_END_BAD_PC] = "return address is not code",
		[STACKSNAP_END_NO_MEMORY] = "out of memory",
	};
	return (unsigned)end < sizeof(s) / sizeof(s[0]) && s[end] ? s[end]
								  : "unknown";
}

const char *stacksnap_stepper__str(enum stacksnap_stepper st)
{
	static const char *const s[] = {
		[STACKSNAP_STEP_START] = "context", [STACKSNAP_STEP_TABLE] = "cfi",
		[STACKSNAP_STEP_DWARF] = "dwarf",   [STACKSNAP_STEP_PLT] = "plt",
		[STACKSNAP_STEP_SIGNAL] = "signal", [STACKSNAP_STEP_FP] = "fp",
		[STACKSNAP_STEP_SCAN] = "scan",	    [STACKSNAP_STEP_USER] = "user",
		[STACKSNAP_STEP_ANALYSIS] = "analysis",
	};
	return (unsigned)st < sizeof(s) / sizeof(s[0]) ? s[st] : "unknown";
}

const char *stacksnap_trust__str(enum stacksnap_trust t)
{
	static const char *const s[] = {
		[STACKSNAP_TRUST_CONTEXT] = "context",
		[STACKSNAP_TRUST_CFI] = "cfi",
		[STACKSNAP_TRUST_FP] = "fp",
		[STACKSNAP_TRUST_SCAN] = "scan",
	};
	return (unsigned)t < sizeof(s) / sizeof(s[0]) ? s[t] : "unknown";
}
