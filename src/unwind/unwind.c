/* unwind.c - the unwinder: from one frame's registers to its caller's,
 * trying the steppers in order (signal frame, compiled table, frame
 * pointer, stack scan), each frame tagged with the stepper that produced
 * it; every walk bounded by a frame limit and a stack-direction check. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/user.h>
#include <ucontext.h>

#include "addrspace/addrspace.h"
#include "base/log.h"
#include "base/opts.h"
#include "mem/mem.h"
#include "stacksnap.h"
#include "table/unwind_table.h"

#define DEFAULT_MAX_FRAMES 1024
#define MAX_SIGNAL_FRAMES 64   /* nested signal frames in one walk */
#define SCAN_MAX_WORDS 1024    /* how far a stack scan looks, in words */

#define BIT(r) (1u << (r))


/* One frame's state before it is emitted. */
struct frame_state {
	struct stacksnap_regs regs;
	uint8_t stepper, trust, flags;
};

/* Invariant: when have_cur, cur holds the next frame to emit; when not,
 * end says why the walk stopped. The unwinder looks one step ahead so
 * that each frame is emitted with its own CFA. */
struct stacksnap_unwinder {
	unsigned max_frames;
	bool stack_scan, no_fp;
	struct stacksnap_addrspace *as;
	struct stacksnap_mem *mem;
	struct frame_state cur;
	bool have_cur;
	/* The mapping of cur's pc - 1, found when cur was checked; saves the
	 * next step a lookup. NULL when not known. */
	const struct as_map *cur_map;
	unsigned nframes;	/* frames emitted */
	unsigned nsignals;	/* signal frames crossed */
	enum stacksnap_end end;
};

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
	uw->end = STACKSNAP_END_NONE;
	return uw;
}

void stacksnap_unwinder__free(struct stacksnap_unwinder *uw)
{
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

static enum stacksnap_end mem_end(int err)
{
	return err == -ENODATA ? STACKSNAP_END_STACK_COPY
			       : STACKSNAP_END_BAD_MEMORY;
}

/* The steppers below turn st, a frame's state, into its caller's state
 * in place, and return END_NONE; or return why the walk ends, leaving st
 * undefined. *cfa receives the frame's canonical frame address. */

/* The interrupted context from the ucontext the kernel pushed: when the
 * handler has returned into the trampoline, rsp points at the ucontext. */
static enum stacksnap_end step_signal(struct stacksnap_unwinder *uw,
				      struct frame_state *st, uint64_t *cfa)
{
	/* Kernel order of mcontext gregs for the registers we track. */
	static const struct {
		uint8_t greg, dwarf;
	} map[] = {
		{ REG_R8, STACKSNAP_REG_R8 },	{ REG_R9, STACKSNAP_REG_R9 },
		{ REG_R10, STACKSNAP_REG_R10 }, { REG_R11, STACKSNAP_REG_R11 },
		{ REG_R12, STACKSNAP_REG_R12 }, { REG_R13, STACKSNAP_REG_R13 },
		{ REG_R14, STACKSNAP_REG_R14 }, { REG_R15, STACKSNAP_REG_R15 },
		{ REG_RDI, STACKSNAP_REG_RDI }, { REG_RSI, STACKSNAP_REG_RSI },
		{ REG_RBP, STACKSNAP_REG_RBP }, { REG_RBX, STACKSNAP_REG_RBX },
		{ REG_RDX, STACKSNAP_REG_RDX }, { REG_RAX, STACKSNAP_REG_RAX },
		{ REG_RCX, STACKSNAP_REG_RCX }, { REG_RSP, STACKSNAP_REG_RSP },
		{ REG_RIP, STACKSNAP_REG_RIP },
	};
	uint64_t gregs[REG_RIP + 1];
	uint64_t uc = st->regs.regs[STACKSNAP_REG_RSP];
	int err;

	err = mem_read(uw->mem, uc + offsetof(ucontext_t, uc_mcontext.gregs),
		       gregs, sizeof(gregs));
	if (err)
		return mem_end(err);
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		st->regs.regs[map[i].dwarf] = gregs[map[i].greg];
	st->regs.valid = (1u << STACKSNAP_REG_COUNT) - 1;
	st->stepper = STACKSNAP_STEP_SIGNAL;
	st->trust = STACKSNAP_TRUST_CFI;
	st->flags = STACKSNAP_FRAME_SIGNAL;
	*cfa = uc;
	return STACKSNAP_END_NONE;
}

/* A row that does not fit the compact shape: evaluate its DWARF. */
static enum stacksnap_end step_dwarf(struct stacksnap_unwinder *uw,
				     const struct unwind_table *table,
				     const struct unwind_row *row,
				     uint64_t vaddr, uint64_t bias,
				     struct frame_state *st, uint64_t *cfa)
{
	struct stacksnap_regs caller;
	int err;

	err = unwind_table__eval_dwarf(table, row, vaddr, bias, &st->regs,
				       mem_read_cb, uw->mem, &caller, cfa);
	if (err == -ENODATA)
		return STACKSNAP_END_STACK_COPY;
	if (err == -EFAULT)
		return STACKSNAP_END_BAD_MEMORY;
	if (err)
		return STACKSNAP_END_BAD_CFI;
	if (!(caller.valid & BIT(STACKSNAP_REG_RIP)))
		return STACKSNAP_END_COMPLETE; /* return address undefined */
	st->regs = caller;
	st->regs.regs[STACKSNAP_REG_RSP] = *cfa;
	st->regs.valid |= BIT(STACKSNAP_REG_RSP);
	st->stepper = STACKSNAP_STEP_DWARF;
	st->trust = STACKSNAP_TRUST_CFI;
	/* A signal frame described by CFI (an 'S' CIE) rather than found by
	 * its trampoline code: the caller was interrupted, not calling. */
	st->flags = row->rbp_kind & UT_DWARF_SIGNAL_FRAME ? STACKSNAP_FRAME_SIGNAL : 0;
	return STACKSNAP_END_NONE;
}

/* The caller's value of callee-saved register reg by its compact rule,
 * setting its bit in *valid when known. */
static int saved_value(struct stacksnap_unwinder *uw, unsigned kind, int16_t off,
		       uint64_t cfa, const struct stacksnap_regs *cur, unsigned reg,
		       uint64_t *val, uint32_t *valid)
{
	switch (kind) {
	case UT_RBP_SAME:
		*val = cur->regs[reg];
		*valid |= cur->valid & BIT(reg);
		return 0;
	case UT_RBP_CFA_OFF:
		/* A save slot below sp is in an epilogue after its pop: CFI
		 * does not say "restored" there, but the register already
		 * holds the caller's value, and the slot may be outside a
		 * copied stack (which starts at sp) or overwritten. */
		if (cfa + off < cur->regs[STACKSNAP_REG_RSP]) {
			*val = cur->regs[reg];
			*valid |= cur->valid & BIT(reg);
			return 0;
		}
		*valid |= BIT(reg);
		return mem_read_u64(uw->mem, cfa + off, val);
	default:
		*val = 0;
		return 0;
	}
}

static enum stacksnap_end step_table(struct stacksnap_unwinder *uw,
				     const struct unwind_row *row,
				     struct frame_state *st, uint64_t *cfa)
{
	uint64_t *r = st->regs.regs;
	uint64_t ra, rbp, rbx;
	uint32_t valid = BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP);
	int err;

	switch (row->cfa_kind) {
	case UT_CFA_RSP:
		*cfa = r[STACKSNAP_REG_RSP] + row->cfa_off;
		break;
	case UT_CFA_RBP:
		if (!(st->regs.valid & BIT(STACKSNAP_REG_RBP)))
			return STACKSNAP_END_BAD_CFI;
		*cfa = r[STACKSNAP_REG_RBP] + row->cfa_off;
		break;
	case UT_CFA_PLT:
		*cfa = r[STACKSNAP_REG_RSP] + 8 +
		       ((r[STACKSNAP_REG_RIP] & 15) >= 11 ? 8 : 0);
		break;
	case UT_CFA_UNDEFINED_RA:
		return STACKSNAP_END_COMPLETE;
	default:
		return STACKSNAP_END_NO_CFI;
	}
	err = mem_read_u64(uw->mem, *cfa - 8, &ra);
	if (err)
		return mem_end(err);
	err = saved_value(uw, row->rbp_kind, row->rbp_off, *cfa, &st->regs,
			  STACKSNAP_REG_RBP, &rbp, &valid);
	if (!err)
		err = saved_value(uw, row->rbx_kind, row->rbx_off, *cfa, &st->regs,
				  STACKSNAP_REG_RBX, &rbx, &valid);
	if (err)
		return mem_end(err);
	/* Registers the compact row does not describe are unknown in the
	 * caller; rsp, rip, rbp and rbx are carried. */
	st->regs.valid = valid;
	r[STACKSNAP_REG_RBP] = rbp;
	r[STACKSNAP_REG_RBX] = rbx;
	r[STACKSNAP_REG_RSP] = *cfa;
	r[STACKSNAP_REG_RIP] = ra;
	st->stepper = row->cfa_kind == UT_CFA_PLT ? STACKSNAP_STEP_PLT
						  : STACKSNAP_STEP_TABLE;
	st->trust = STACKSNAP_TRUST_CFI;
	st->flags = 0;
	return STACKSNAP_END_NONE;
}

/* The classic chain: [rbp] = caller's rbp, [rbp + 8] = return address. */
static enum stacksnap_end step_fp(struct stacksnap_unwinder *uw,
				  struct frame_state *st, uint64_t *cfa)
{
	uint64_t rbp = st->regs.regs[STACKSNAP_REG_RBP], pair[2];
	int err;

	if (!(st->regs.valid & BIT(STACKSNAP_REG_RBP)) || (rbp & 7) ||
	    rbp < st->regs.regs[STACKSNAP_REG_RSP])
		return STACKSNAP_END_NO_CFI;
	err = mem_read(uw->mem, rbp, pair, sizeof(pair));
	if (err)
		return mem_end(err);
	*cfa = rbp + 16;
	st->regs.valid = BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP) |
			 BIT(STACKSNAP_REG_RBP);
	st->regs.regs[STACKSNAP_REG_RBP] = pair[0];
	st->regs.regs[STACKSNAP_REG_RIP] = pair[1];
	st->regs.regs[STACKSNAP_REG_RSP] = *cfa;
	st->stepper = STACKSNAP_STEP_FP;
	st->trust = STACKSNAP_TRUST_FP;
	st->flags = 0;
	return STACKSNAP_END_NONE;
}

/* Does the code just before ret look like a call instruction? */
static bool follows_call(struct stacksnap_unwinder *uw, const struct as_map *m,
			 uint64_t ret)
{
	uint8_t c[8];
	int err;

	if (ret - m->start < sizeof(c))
		return false;
	if (m->mod)
		err = module__read_code(m->mod, ret - m->bias - sizeof(c), c,
					sizeof(c));
	else
		err = mem_read(uw->mem, ret - sizeof(c), c, sizeof(c));
	if (err)
		return false;
	/* c[7] is the byte before ret. call rel32: e8 + 4 bytes. */
	if (c[3] == 0xe8)
		return true;
	/* call r/m64 (ff /2), by length: 2 (ff d0+r / ff 10+r), 3 (ff 50+r
	 * disp8, ff 14 sib), 6 (ff 15 rip+disp32, ff 90+r disp32), 7 (ff 94
	 * sib disp32); a REX prefix before ff does not change the check. */
	if (c[6] == 0xff && ((c[7] & 0xf8) == 0xd0 || (c[7] & 0xf8) == 0x10))
		return true;
	if (c[5] == 0xff && ((c[6] & 0xf8) == 0x50 || c[6] == 0x14))
		return true;
	if (c[2] == 0xff && (c[3] == 0x15 || (c[3] & 0xf8) == 0x90))
		return true;
	return c[1] == 0xff && c[2] == 0x94;
}

/* Looks up the stack for a word that is a plausible return address. A
 * guess: frames found this way are marked low trust. */
static enum stacksnap_end step_scan(struct stacksnap_unwinder *uw,
				    struct frame_state *st, uint64_t *cfa)
{
	uint64_t sp = st->regs.regs[STACKSNAP_REG_RSP], words[64];

	for (unsigned base = 0; base < SCAN_MAX_WORDS; base += 64) {
		uint64_t at = sp + base * 8;

		if (mem_read(uw->mem, at, words, sizeof(words)))
			return STACKSNAP_END_NO_CFI;
		for (unsigned i = 0; i < 64; i++) {
			const struct as_map *m = addrspace__find(uw->as, words[i]);

			if (!m || !(m->prot & PROT_EXEC) ||
			    !follows_call(uw, m, words[i]))
				continue;
			*cfa = at + i * 8 + 8;
			st->regs.valid = BIT(STACKSNAP_REG_RIP) |
					 BIT(STACKSNAP_REG_RSP);
			st->regs.regs[STACKSNAP_REG_RIP] = words[i];
			st->regs.regs[STACKSNAP_REG_RSP] = *cfa;
			st->stepper = STACKSNAP_STEP_SCAN;
			st->trust = STACKSNAP_TRUST_SCAN;
			st->flags = 0;
			return STACKSNAP_END_NONE;
		}
	}
	return STACKSNAP_END_NO_CFI;
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

	if (m && m->mod) {
		const struct unwind_table *t = module__table(uw->as->ctx, m->mod);
		const struct unwind_row *row;

		if (module__is_sigreturn(m->mod, pc - m->bias)) {
			*sigreturn = true;
			end = step_signal(uw, st, cfa);
			if (end != STACKSNAP_END_NONE)
				return end;
			return signal_done(uw, st, sp, pc);
		}
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
	if (!uw->no_fp) {
		end = step_fp(uw, st, cfa);
		if (end == STACKSNAP_END_NONE)
			goto check;
	}
	if (uw->stack_scan)
		end = step_scan(uw, st, cfa);
check:
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
	if (!uw->have_cur)
		return 0;
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
fast_saved(const struct stacksnap_mem *mem, unsigned kind, int16_t off,
	   uint64_t cfa, uint64_t sp, uint64_t *val, bool *ok)
{
	if (kind == UT_RBP_CFA_OFF) {
		uint64_t at = cfa + off;

		if (at < sp || at - mem->base > mem->len - 8)
			return false;
		memcpy(val, mem->bytes + (at - mem->base), 8);
		*ok = true;
		return true;
	}
	return kind == UT_RBP_SAME;
}

/* The common case of a walk, kept in locals: a return address whose row
 * is CFA = rsp|rbp + offset, a copied stack holding every word read, and a
 * caller in a module whose table is ready. Emits frames exactly as
 * stacksnap_unwinder__next would, and stops, leaving uw->cur as the next
 * frame to emit, at the first thing it does not handle; the general
 * stepper takes it from there. */
static size_t walk_fast(struct stacksnap_unwinder *uw,
			struct stacksnap_frame *frames, size_t max)
{
	const struct stacksnap_mem *mem = uw->mem;
	const struct as_map *m = uw->cur_map;
	const struct unwind_table *t = m->mod->table;
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
	while (n < max) {
		const struct unwind_row *row;
		uint64_t cfa, ra;

		if (m->mod->sig_check && module__is_sigreturn(m->mod, pc - m->bias))
			break;
		row = unwind_table__lookup(t, pc - 1 - m->bias);
		if (!row)
			break;
		if (row->cfa_kind == UT_CFA_RSP)
			cfa = sp + row->cfa_off;
		else if (row->cfa_kind == UT_CFA_RBP && rbp_ok)
			cfa = rbp + row->cfa_off;
		else
			break;
		if (cfa <= sp || cfa - 8 - mem->base > mem->len - 8 ||
		    mem->len < 8)
			break;
		memcpy(&ra, mem->bytes + (cfa - 8 - mem->base), 8);
		if (ra == 0)
			break; /* the bottom: let the general path end it */
		const struct as_map *next = addrspace__find(uw->as, ra - 1);
		if (!next || !(next->prot & PROT_EXEC) || !next->mod ||
		    !next->mod->table)
			break;
		uint64_t caller_rbp = rbp, caller_rbx = rbx;
		bool caller_rbp_ok = rbp_ok, caller_rbx_ok = rbx_ok;
		if (!fast_saved(mem, row->rbp_kind, row->rbp_off, cfa, sp,
				&caller_rbp, &caller_rbp_ok) ||
		    !fast_saved(mem, row->rbx_kind, row->rbx_off, cfa, sp,
				&caller_rbx, &caller_rbx_ok))
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
		m = next;
		t = next->mod->table;
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

/* ---- register sets ---- */

void stacksnap_regs__from_user_regs(struct stacksnap_regs *regs,
				    const struct user_regs_struct *u)
{
	uint64_t *r = regs->regs;

	r[STACKSNAP_REG_RAX] = u->rax;
	r[STACKSNAP_REG_RDX] = u->rdx;
	r[STACKSNAP_REG_RCX] = u->rcx;
	r[STACKSNAP_REG_RBX] = u->rbx;
	r[STACKSNAP_REG_RSI] = u->rsi;
	r[STACKSNAP_REG_RDI] = u->rdi;
	r[STACKSNAP_REG_RBP] = u->rbp;
	r[STACKSNAP_REG_RSP] = u->rsp;
	r[STACKSNAP_REG_R8] = u->r8;
	r[STACKSNAP_REG_R9] = u->r9;
	r[STACKSNAP_REG_R10] = u->r10;
	r[STACKSNAP_REG_R11] = u->r11;
	r[STACKSNAP_REG_R12] = u->r12;
	r[STACKSNAP_REG_R13] = u->r13;
	r[STACKSNAP_REG_R14] = u->r14;
	r[STACKSNAP_REG_R15] = u->r15;
	r[STACKSNAP_REG_RIP] = u->rip;
	regs->valid = (1u << STACKSNAP_REG_COUNT) - 1;
}

void stacksnap_regs__from_perf(struct stacksnap_regs *regs, uint64_t mask,
			       const uint64_t *vals)
{
	/* perf's x86_64 register numbering (PERF_REG_X86_*) to DWARF's;
	 * -1 for flags and segment registers. */
	static const int8_t perf_to_dwarf[24] = {
		STACKSNAP_REG_RAX, STACKSNAP_REG_RBX, STACKSNAP_REG_RCX,
		STACKSNAP_REG_RDX, STACKSNAP_REG_RSI, STACKSNAP_REG_RDI,
		STACKSNAP_REG_RBP, STACKSNAP_REG_RSP, STACKSNAP_REG_RIP,
		-1, -1, -1, -1, -1, -1, -1,
		STACKSNAP_REG_R8,  STACKSNAP_REG_R9,  STACKSNAP_REG_R10,
		STACKSNAP_REG_R11, STACKSNAP_REG_R12, STACKSNAP_REG_R13,
		STACKSNAP_REG_R14, STACKSNAP_REG_R15,
	};
	unsigned k = 0;

	memset(regs, 0, sizeof(*regs));
	for (unsigned bit = 0; bit < 64; bit++) {
		if (!(mask & (1ull << bit)))
			continue;
		if (bit < 24 && perf_to_dwarf[bit] >= 0) {
			regs->regs[perf_to_dwarf[bit]] = vals[k];
			regs->valid |= BIT(perf_to_dwarf[bit]);
		}
		k++;
	}
}

/* ---- names ---- */

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
		[STACKSNAP_STEP_SCAN] = "scan",
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
