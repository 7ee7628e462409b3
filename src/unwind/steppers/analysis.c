/* analysis.c - the analysis stepper (StackwalkerAPI's AnalysisStepper): the
 * stack height at an address, found by a dataflow over the function's
 * machine code (decoded by Capstone) from its entry, for code with neither
 * CFI nor a frame pointer. Signal-unsafe (it allocates): the remote
 * unwinder's. */
#define _GNU_SOURCE
#include "unwind/steppers/capstone_dl.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/vec.h"
#include "symbolize/symbolize.h"
#include "unwind/unwind_internal.h"

#define AN_MAX_BYTES (256u << 10) /* larger functions are not analysed */
#define AN_MAX_VISITS (1u << 20)  /* instruction visits per function */
#define AN_CACHE_SLOTS 64	  /* functions kept per unwinder */

/* The state before one instruction. CFA - rsp = h when ST_RSP; CFA - rbp =
 * fp when fp != 0 (rbp is the frame pointer). The caller's rbp is in rbp
 * (RBP_SAME), saved at CFA - rbp_save (RBP_SAVED), or lost. A state with
 * neither ST_RSP nor fp is unknown (why says why). */
struct an_state {
	int32_t h, fp, rbp_save;
	uint8_t flags;	/* ST_* */
	uint8_t rbp;	/* RBP_* */
	uint8_t why;	/* enum analysis_why, for an unknown state */
};
#define ST_SEEN 1
#define ST_RSP 2
enum { RBP_SAME = 0, RBP_SAVED, RBP_LOST };

/* One decoded instruction and its in-state. Invariant in a finished
 * analysis: insns sorted by off, each decoded at off from the entry's
 * reachable paths. */
struct an_insn {
	uint32_t off;
	uint8_t size;
	uint8_t is_call;
	struct an_state in;
};

struct analysis_fn {
	uint64_t start, end;
	struct an_insn *insns;
	size_t n, cap;
	uint8_t why;	/* ANALYSIS_WHY_NONE, or why nothing is known */
};

/* rsp's height set to base + delta (base - delta with negate), where delta
 * is an immediate or displacement, any 64-bit value in hostile code: beyond
 * what a stack frame can be, rsp is unknown from here, and the arithmetic
 * never overflows. */
static void set_height(struct an_state *s, int32_t base, int64_t delta, bool negate)
{
	if (delta > -(1 << 24) && delta < (1 << 24)) {
		int64_t h = (int64_t)base + (negate ? -delta : delta);

		if (h > -(1 << 24) && h < (1 << 24)) {
			s->h = (int32_t)h;
			return;
		}
	}
	s->flags &= ~ST_RSP;
}

static bool is_reg(unsigned r, unsigned r64, unsigned r32, unsigned r16,
		   unsigned r8)
{
	return r == r64 || r == r32 || r == r16 || r == r8;
}
#define IS_RSP(r) is_reg(r, X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL)
#define IS_RBP(r) is_reg(r, X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL)

static void set_unknown(struct an_state *s, uint8_t why)
{
	s->flags &= ~ST_RSP;
	s->fp = 0;
	s->why = why;
}

/* A write to rbp that is not the frame's set-up: rbp is no longer the
 * frame pointer, and the caller's value is lost unless it was saved. */
static void clobber_rbp(struct an_state *s)
{
	s->fp = 0;
	if (s->rbp == RBP_SAME)
		s->rbp = RBP_LOST;
}

static bool known(const struct an_state *s)
{
	return (s->flags & ST_RSP) || s->fp;
}

/* The instruction's effect on s. Returns how control goes on: bit 0 falls
 * through, bit 1 jumps to *target (a direct jump in the function). */
static unsigned transfer(const struct capstone_dl *C, csh cs,
			 const cs_insn *in, uint64_t start, uint64_t end,
			 struct an_state *s, uint64_t *target)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *op = x->operands;
	bool dst_rsp = x->op_count >= 1 && op[0].type == X86_OP_REG &&
		       IS_RSP(op[0].reg);
	bool dst_rbp = x->op_count >= 1 && op[0].type == X86_OP_REG &&
		       IS_RBP(op[0].reg);
	bool rsp = s->flags & ST_RSP;
	unsigned flow = 1;

	switch (in->id) {
	case X86_INS_PUSH:
	case X86_INS_PUSHFQ:
		if (rsp)
			s->h += 8;
		if (in->id == X86_INS_PUSH && op[0].type == X86_OP_REG &&
		    op[0].reg == X86_REG_RBP && s->rbp == RBP_SAME && rsp) {
			s->rbp = RBP_SAVED;
			s->rbp_save = s->h;
		}
		return 1;
	case X86_INS_POP:
	case X86_INS_POPFQ:
		if (in->id == X86_INS_POP && dst_rsp) {
			s->flags &= ~ST_RSP;
			break;
		}
		if (dst_rbp) {
			if (rsp && s->rbp == RBP_SAVED && s->rbp_save == s->h) {
				s->rbp = RBP_SAME;
				s->fp = 0;
			} else {
				clobber_rbp(s);
			}
		}
		if (rsp)
			s->h -= 8;
		break;
	case X86_INS_LEAVE:
		if (!s->fp) {
			s->flags &= ~ST_RSP;
			clobber_rbp(s);
			break;
		}
		s->h = s->fp;
		s->flags |= ST_RSP;
		if (s->rbp == RBP_SAVED && s->rbp_save == s->h)
			s->rbp = RBP_SAME;
		else
			s->rbp = RBP_LOST;
		s->fp = 0;
		s->h -= 8;
		break;
	case X86_INS_ENTER:
		if (!rsp || x->op_count < 2 || op[0].type != X86_OP_IMM ||
		    op[1].type != X86_OP_IMM || op[1].imm != 0) {
			s->flags &= ~ST_RSP;
			clobber_rbp(s);
			break;
		}
		s->h += 8;
		if (s->rbp == RBP_SAME) {
			s->rbp = RBP_SAVED;
			s->rbp_save = s->h;
		}
		s->fp = s->h;
		set_height(s, s->h, op[0].imm, false);
		break;
	case X86_INS_SUB:
	case X86_INS_ADD:
		if (!dst_rsp)
			goto generic;
		if (rsp && op[1].type == X86_OP_IMM && op[0].reg == X86_REG_RSP)
			set_height(s, s->h, op[1].imm, in->id == X86_INS_ADD);
		else
			s->flags &= ~ST_RSP;
		break;
	case X86_INS_LEA:
		if (!dst_rsp && !dst_rbp)
			goto generic;
		if (op[1].type == X86_OP_MEM && op[1].mem.index == X86_REG_INVALID &&
		    op[1].mem.segment == X86_REG_INVALID) {
			int32_t base_h = 0; /* CFA - base register */
			bool ok = false;

			if (op[1].mem.base == X86_REG_RSP && rsp) {
				base_h = s->h;
				ok = true;
			} else if (op[1].mem.base == X86_REG_RBP && s->fp) {
				base_h = s->fp;
				ok = true;
			}
			if (dst_rsp && op[0].reg == X86_REG_RSP) {
				if (ok) {
					s->flags |= ST_RSP;
					set_height(s, base_h, op[1].mem.disp, true);
				} else {
					s->flags &= ~ST_RSP;
				}
				break;
			}
			if (dst_rbp && op[0].reg == X86_REG_RBP && ok) {
				/* lea off(%rsp),%rbp: a frame pointer not at
				 * the saved rbp (clang's and gcc's -O0 do not,
				 * hand-written code does) */
				int64_t fp = (int64_t)base_h - op[1].mem.disp;

				if (s->rbp == RBP_SAME)
					s->rbp = RBP_LOST;
				if (fp > -(1 << 24) && fp < (1 << 24) && fp)
					s->fp = (int32_t)fp;
				else
					clobber_rbp(s);
				break;
			}
		}
		goto generic;
	case X86_INS_MOV:
		if (x->op_count == 2 && op[1].type == X86_OP_REG) {
			if (dst_rbp && op[0].reg == X86_REG_RBP &&
			    op[1].reg == X86_REG_RSP && rsp) {
				if (s->rbp == RBP_SAME)
					s->rbp = RBP_LOST;
				s->fp = s->h;
				break;
			}
			if (dst_rsp && op[0].reg == X86_REG_RSP &&
			    op[1].reg == X86_REG_RBP && s->fp) {
				s->h = s->fp;
				s->flags |= ST_RSP;
				break;
			}
		}
		goto generic;
	case X86_INS_CALL:
	case X86_INS_LCALL:
		return 1;
	case X86_INS_RET:
	case X86_INS_RETF:
	case X86_INS_HLT:
	case X86_INS_UD2:
	case X86_INS_INT3:
	case X86_INS_LJMP:
		return 0;
	case X86_INS_JMP:
		flow = 0;
		/* fall through */
	default:
		if (C->insn_group(cs, in, X86_GRP_JUMP)) {
			if (x->op_count == 1 && op[0].type == X86_OP_IMM &&
			    (uint64_t)op[0].imm >= start && (uint64_t)op[0].imm < end) {
				*target = (uint64_t)op[0].imm;
				flow |= 2;
			}
			return flow; /* indirect or out of the function: ends */
		}
		goto generic;
	}
	return flow;

generic: {
	/* Anything else that writes rsp or rbp: rsp untracked, rbp no
	 * longer the frame pointer. */
	cs_regs rd, wr;
	uint8_t nrd, nwr;

	if (C->regs_access(cs, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return flow;
	for (unsigned i = 0; i < nwr; i++) {
		if (IS_RSP(wr[i]))
			s->flags &= ~ST_RSP;
		else if (IS_RBP(wr[i]))
			clobber_rbp(s);
	}
	return flow;
}
}

/* Joins in into *at (a block's in-state). Returns true when *at changed. */
static bool join(struct an_state *at, const struct an_state *in)
{
	struct an_state old = *at;

	if (!(at->flags & ST_SEEN)) {
		*at = *in;
		at->flags |= ST_SEEN;
		return true;
	}
	if (!known(at))
		return false; /* unknown absorbs */
	if (!known(in) || (at->flags & ST_RSP) != (in->flags & ST_RSP) ||
	    ((at->flags & ST_RSP) && at->h != in->h) || at->fp != in->fp) {
		set_unknown(at, known(in) ? ANALYSIS_WHY_JOIN : in->why);
		return true;
	}
	if (at->rbp != in->rbp ||
	    (at->rbp == RBP_SAVED && at->rbp_save != in->rbp_save))
		at->rbp = RBP_LOST;
	return memcmp(&old, at, sizeof(old)) != 0;
}

static int cmp_insn(const void *a, const void *b)
{
	const struct an_insn *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

void analysis__fn_free(struct analysis_fn *fn)
{
	if (!fn)
		return;
	free(fn->insns);
	free(fn);
}

int analysis__function(const uint8_t *code, uint64_t start, uint64_t end,
		       struct analysis_fn **out)
{
	size_t len = end - start, nwork = 0, capwork = 0;
	struct analysis_fn *fn;
	int32_t *index = NULL; /* byte offset -> insns index + 1 */
	uint32_t *work = NULL;
	unsigned visits = 0;
	cs_insn *in = NULL;
	csh cs = 0;
	int err = 0;
	const struct capstone_dl *C = capstone_dl();

	*out = NULL;
	fn = calloc(1, sizeof(*fn));
	if (!fn)
		return fail(-ENOMEM);
	fn->start = start;
	fn->end = end;
	if (end <= start || len > AN_MAX_BYTES) {
		fn->why = ANALYSIS_WHY_TOO_BIG;
		*out = fn;
		return 0;
	}
	if (!C) {
		/* no decoder installed: nothing can be analysed */
		fn->why = ANALYSIS_WHY_NO_DECODER;
		*out = fn;
		return 0;
	}
	if (C->open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
		free(fn);
		return fail(-ENOMEM);
	}
	C->option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	in = C->malloc(cs);
	index = calloc(len, sizeof(*index));
	if (!in || !index) {
		err = -ENOMEM;
		goto out;
	}

	/* The entry: CFA = rsp + 8, rbp the caller's. */
	struct an_state entry = { .h = 8, .flags = ST_RSP | ST_SEEN };
	uint32_t *w = VEC_PUSH(work, nwork, capwork);
	if (!w) {
		err = -ENOMEM;
		goto out;
	}
	*w = 0;
	struct an_insn *first = VEC_PUSH(fn->insns, fn->n, fn->cap);
	if (!first) {
		err = -ENOMEM;
		goto out;
	}
	memset(first, 0, sizeof(*first));
	first->in = entry;
	first->size = 0; /* not decoded yet */
	index[0] = 1;

	while (nwork) {
		uint32_t off = work[--nwork];
		size_t k = (size_t)index[off] - 1;
		struct an_state s;
		const uint8_t *p = code + off;
		size_t left = len - off;
		uint64_t addr = start + off, target = 0;
		unsigned flow;

		if (++visits > AN_MAX_VISITS) {
			fn->why = ANALYSIS_WHY_TOO_BIG;
			break;
		}
		if (!C->disasm_iter(cs, &p, &left, &addr, in)) {
			/* undecodable: the state there stays, nothing after */
			fn->insns[k].size = 0;
			set_unknown(&fn->insns[k].in, ANALYSIS_WHY_DECODE);
			continue;
		}
		fn->insns[k].size = (uint8_t)in->size;
		fn->insns[k].is_call = in->id == X86_INS_CALL;
		s = fn->insns[k].in;
		if (known(&s))
			flow = transfer(C, cs, in, start, end, &s, &target);
		else
			flow = in->id == X86_INS_RET || in->id == X86_INS_HLT ||
					       in->id == X86_INS_UD2
				       ? 0
				       : transfer(C, cs, in, start, end,
						  &(struct an_state){ .h = 8 },
						  &target);
		if (known(&fn->insns[k].in) && !known(&s))
			s.why = ANALYSIS_WHY_UNTRACKED;
		for (unsigned e = 0; e < 2; e++) {
			uint64_t next = e == 0 ? start + off + in->size : target;
			uint32_t noff;
			struct an_insn *ni;

			if (!(flow & (1u << e)) || next >= end)
				continue;
			noff = (uint32_t)(next - start);
			if (!index[noff]) {
				ni = VEC_PUSH(fn->insns, fn->n, fn->cap);
				if (!ni) {
					err = -ENOMEM;
					goto out;
				}
				memset(ni, 0, sizeof(*ni));
				ni->off = noff;
				index[noff] = (int32_t)fn->n;
			}
			ni = &fn->insns[index[noff] - 1];
			if (!known(&s) && (ni->in.flags & ST_SEEN) && !known(&ni->in))
				continue; /* unknown reaching unknown: nothing new */
			if (join(&ni->in, &s)) {
				w = VEC_PUSH(work, nwork, capwork);
				if (!w) {
					err = -ENOMEM;
					goto out;
				}
				*w = noff;
			}
		}
	}
	qsort(fn->insns, fn->n, sizeof(*fn->insns), cmp_insn);
out:
	free(work);
	free(index);
	if (in)
		C->free(in, 1);
	C->close(&cs);
	if (err) {
		analysis__fn_free(fn);
		return fail(err);
	}
	*out = fn;
	return 0;
}

int analysis__query(const struct analysis_fn *fn, uint64_t addr, bool exact,
		    struct analysis_result *r)
{
	uint64_t a = exact ? addr : addr - 1;
	size_t lo = 0, hi = fn->n;
	const struct an_insn *in;

	memset(r, 0, sizeof(*r));
	if (fn->why) {
		r->why = fn->why;
		return -1;
	}
	if (a < fn->start || a >= fn->end) {
		r->why = ANALYSIS_WHY_UNREACHED;
		return -1;
	}
	while (lo < hi) { /* the last instruction at or before a */
		size_t mid = lo + (hi - lo) / 2;

		if (fn->start + fn->insns[mid].off <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo) {
		r->why = ANALYSIS_WHY_UNREACHED;
		return -1;
	}
	in = &fn->insns[lo - 1];
	if (exact ? fn->start + in->off != a
		  : !in->is_call || fn->start + in->off + in->size != addr) {
		r->why = fn->start + in->off + in->size > a ? ANALYSIS_WHY_NOT_CALL
							     : ANALYSIS_WHY_UNREACHED;
		if (exact)
			r->why = ANALYSIS_WHY_UNREACHED;
		return -1;
	}
	if (!known(&in->in)) {
		r->why = in->in.why ? in->in.why : ANALYSIS_WHY_UNTRACKED;
		return -1;
	}
	r->rsp_ok = in->in.flags & ST_RSP;
	r->cfa_rsp = in->in.h;
	r->cfa_rbp = in->in.fp;
	r->rbp = in->in.rbp == RBP_SAME	   ? ANALYSIS_RBP_SAME
		 : in->in.rbp == RBP_SAVED ? ANALYSIS_RBP_SAVED
					   : ANALYSIS_RBP_LOST;
	r->rbp_off = -in->in.rbp_save;
	return 0;
}

const char *analysis_why__str(enum analysis_why why)
{
	static const char *const s[] = {
		[ANALYSIS_WHY_NONE] = "none",
		[ANALYSIS_WHY_NO_SYMBOL] = "function without a symbol",
		[ANALYSIS_WHY_TOO_BIG] = "function too big",
		[ANALYSIS_WHY_NO_CODE] = "code unreadable",
		[ANALYSIS_WHY_UNREACHED] = "not reached from the entry (indirect jump target, or not code)",
		[ANALYSIS_WHY_JOIN] = "heights disagree at a join",
		[ANALYSIS_WHY_UNTRACKED] = "rsp changed in a way not tracked",
		[ANALYSIS_WHY_DECODE] = "undecodable instruction",
		[ANALYSIS_WHY_NO_DECODER] = "libcapstone.so.4 not loadable (install libcapstone4)",
		[ANALYSIS_WHY_NOT_CALL] = "return address not after a call",
		[ANALYSIS_WHY_COLD] = "cold part of a function (entered by a jump)",
	};
	return (unsigned)why < sizeof(s) / sizeof(s[0]) && s[why] ? s[why]
								  : "unknown";
}

/* ---- the stepper ---- */

bool analysis__is_cold(const char *name)
{
	/* gcc's hot/cold split (foo.cold, foo.cold.3): the part is entered
	 * by a jump from its parent, at the parent's height, not called. */
	return strstr(name, ".cold") != NULL;
}

/* A direct-mapped cache of analysed functions, keyed by module and
 * function start (the module is kept by the context while the address
 * space maps it). */
struct analysis_cache {
	struct an_slot {
		const struct module *mod;
		struct analysis_fn *fn;
	} slots[AN_CACHE_SLOTS];
};

void analysis__cache_free(struct analysis_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < AN_CACHE_SLOTS; i++)
		analysis__fn_free(c->slots[i].fn);
	free(c);
}

/* The analysis of the function holding the module's address vaddr, from
 * the cache or made now; NULL with *why when there is none. */
static const struct analysis_fn *function_at(struct stacksnap_unwinder *uw,
					     struct module *mod, uint64_t vaddr,
					     uint8_t *why)
{
	struct symtab *st = module__symtab(uw->as->ctx, mod);
	uint64_t start, end;
	struct an_slot *slot;
	uint8_t *code;
	int err;

	const char *name;

	if (!st || !(name = symtab__lookup_range(st, vaddr, &start, &end)) ||
	    vaddr >= end) {
		*why = ANALYSIS_WHY_NO_SYMBOL;
		return NULL;
	}
	if (analysis__is_cold(name)) {
		*why = ANALYSIS_WHY_COLD;
		return NULL;
	}
	if (!uw->analysis && !(uw->analysis = calloc(1, sizeof(*uw->analysis)))) {
		*why = ANALYSIS_WHY_NO_CODE;
		return NULL;
	}
	slot = &uw->analysis->slots[((uintptr_t)mod >> 4 ^ start) % AN_CACHE_SLOTS];
	if (slot->fn && slot->mod == mod && slot->fn->start == start &&
	    slot->fn->end == end)
		return slot->fn;
	if (end - start > AN_MAX_BYTES) {
		*why = ANALYSIS_WHY_TOO_BIG;
		return NULL;
	}
	code = malloc(end - start);
	if (!code || module__read_code(mod, start, code, end - start)) {
		free(code);
		*why = ANALYSIS_WHY_NO_CODE;
		return NULL;
	}
	analysis__fn_free(slot->fn);
	slot->fn = NULL;
	err = analysis__function(code, start, end, &slot->fn);
	free(code);
	if (err) {
		*why = ANALYSIS_WHY_NO_CODE;
		return NULL;
	}
	slot->mod = mod;
	return slot->fn;
}

enum stacksnap_end step_analysis(struct stacksnap_unwinder *uw,
				 const struct as_map *m, bool exact,
				 struct frame_state *st, uint64_t *cfa)
{
	uint64_t pc = st->regs.regs[STACKSNAP_REG_RIP], w[2];
	const struct analysis_fn *fn;
	struct analysis_result r;
	uint8_t why;
	int err;

	if (!m || !m->mod || !(m->prot & PROT_EXEC))
		return STACKSNAP_END_NO_CFI;
	fn = function_at(uw, m->mod, (exact ? pc : pc - 1) - m->bias, &why);
	if (!fn)
		return STACKSNAP_END_NO_CFI;
	/* The program's entry point (_start) is the outermost frame: the
	 * kernel entered it with no return address (its CFI, when present,
	 * says "return address undefined"). */
	if (m->mod->img->e_entry && fn->start == m->mod->img->e_entry)
		return STACKSNAP_END_COMPLETE;
	if (analysis__query(fn, pc - m->bias, exact, &r))
		return STACKSNAP_END_NO_CFI;
	if (r.rsp_ok)
		*cfa = st->regs.regs[STACKSNAP_REG_RSP] + (uint64_t)(int64_t)r.cfa_rsp;
	else if (st->regs.valid & BIT(STACKSNAP_REG_RBP))
		*cfa = st->regs.regs[STACKSNAP_REG_RBP] + (uint64_t)(int64_t)r.cfa_rbp;
	else
		return STACKSNAP_END_NO_CFI;
	err = mem_read(uw->mem, *cfa - 8, &w[0], 8);
	if (err)
		return mem_end(err);
	if (r.rbp == ANALYSIS_RBP_SAVED) {
		err = mem_read(uw->mem, *cfa + (uint64_t)(int64_t)r.rbp_off, &w[1], 8);
		if (err)
			return mem_end(err);
		st->regs.regs[STACKSNAP_REG_RBP] = w[1];
		st->regs.valid |= BIT(STACKSNAP_REG_RBP);
	} else if (r.rbp == ANALYSIS_RBP_LOST) {
		st->regs.valid &= ~BIT(STACKSNAP_REG_RBP);
	}
	/* Only rbp is tracked among the callee-saved registers. */
	st->regs.valid &= BIT(STACKSNAP_REG_RBP);
	st->regs.valid |= BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP);
	st->regs.regs[STACKSNAP_REG_RIP] = w[0];
	st->regs.regs[STACKSNAP_REG_RSP] = *cfa;
	st->stepper = STACKSNAP_STEP_ANALYSIS;
	st->trust = STACKSNAP_TRUST_CFI;
	st->flags = 0;
	return STACKSNAP_END_NONE;
}
