/* backtrace.c - the in-process backtrace: walks the calling thread's own
 * stack (or a signal handler's interrupted context) over the same compiled
 * unwind rows as the remote unwinder, or, for a module without a table,
 * over the rows it interprets from .eh_frame (found through
 * .eh_frame_hdr) and keeps in the module's row cache; without allocating,
 * locking or (once a thread's stack and the modules are known) system
 * calls, so that it is safe in a signal handler and reentrant. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/ucontext_regs.h"
#include "dwarf/cfi.h"
#include "inproc/inproc.h"
#include "stacksnap.h"
#include "table/unwind_table.h"

#define MAX_SIGNAL_FRAMES 64	/* nested signal frames crossed in one walk */
#define WALK_MODULES 4		/* modules remembered during one walk */
#define WALK_STACKS 2		/* stacks (thread stack, sigaltstack) */

#define BIT(r) (1u << (r))

/* A range of memory known to be readable: a stack mapping. */
struct stack_range {
	uintptr_t lo, hi;
};

/* The stacks this thread's walks have read, found once from
 * /proc/self/maps. Initial-exec TLS: no allocation, no lock on first
 * access from a signal handler. Invariant: a slot with hi != 0 names a
 * mapping that was readable when found; hi is cleared first and set last
 * (with signal fences) so that a handler interrupting an update sees
 * either a whole range or none. */
static __thread struct stack_range tls_stacks[WALK_STACKS]
	__attribute__((tls_model("initial-exec")));
static __thread unsigned tls_stack_victim
	__attribute__((tls_model("initial-exec")));

/* A module met during a walk, with its .eh_frame once looked for. */
struct walk_module {
	struct inproc_module m;
	struct cfi_input eh;
	int8_t eh_state;	/* 0: not looked for, 1: found, -1: none */
};

/* One walk's state: the current frame's registers (rip, rsp always
 * valid), and what it has found so far. Invariant: when exact is false
 * the pc is a return address (looked up at pc - 1). */
struct walk {
	struct stacksnap_regs regs;
	bool exact;
	unsigned nsignals;
	struct walk_module mods[WALK_MODULES];
	struct walk_module *last;	/* the previous frame's, or NULL */
	unsigned nmods, victim;
	struct stack_range stacks[WALK_STACKS];
	unsigned nstacks;
	uint64_t interpreted;
	/* Run on the caller's stack (no side stack was free): nothing that
	 * needs more than a few hundred bytes of it (reading
	 * /proc/self/maps, interpreting .eh_frame, mapping a row cache);
	 * the walk ends where it would need them. */
	bool in_place;
};

/* Parses one /proc/self/maps line "lo-hi rwxp ..." into a range when it
 * is readable and holds addr. */
static bool maps_line(const char *s, const char *e, uintptr_t addr,
		      struct stack_range *r)
{
	uintptr_t v[2] = { 0, 0 };
	int k = 0;

	for (; s < e && k < 2; s++) {
		char c = *s;

		if (c >= '0' && c <= '9')
			v[k] = v[k] << 4 | (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v[k] = v[k] << 4 | (uintptr_t)(c - 'a' + 10);
		else if (c == '-' || c == ' ')
			k++;
		else
			return false;
	}
	if (k < 2 || s >= e || *s != 'r' || addr < v[0] || addr >= v[1])
		return false;
	r->lo = v[0];
	r->hi = v[1];
	return true;
}

/* The mapping holding addr, read from /proc/self/maps with open/read/
 * close (async-signal-safe system calls) into a buffer on the stack. The
 * cold path: once per thread and stack. */
static bool find_stack_mapping(uintptr_t addr, struct stack_range *r)
{
	char buf[2048];
	size_t have = 0;
	bool found = false;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	while (!found) {
		ssize_t got = read(fd, buf + have, sizeof(buf) - have);
		size_t start = 0;

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		have += (size_t)got;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			if (maps_line(buf + start, buf + i, addr, r)) {
				found = true;
				break;
			}
			start = i + 1;
		}
		if (!start && have == sizeof(buf))
			start = have; /* a line longer than the buffer */
		memmove(buf, buf + start, have - start);
		have -= start;
	}
	close(fd);
	return found;
}

/* A stack range holding addr: from this thread's cache, else (unless
 * cached_only) looked up and cached. */
static bool stack_range_of(uintptr_t addr, struct stack_range *r,
			   bool cached_only)
{
	unsigned v;

	for (unsigned i = 0; i < WALK_STACKS; i++) {
		uintptr_t hi = tls_stacks[i].hi;

		atomic_signal_fence(memory_order_acquire);
		r->lo = tls_stacks[i].lo;
		atomic_signal_fence(memory_order_acquire);
		if (hi && tls_stacks[i].hi == hi && addr >= r->lo && addr < hi) {
			r->hi = hi;
			return true;
		}
	}
	if (cached_only || !find_stack_mapping(addr, r))
		return false;
	v = tls_stack_victim++ % WALK_STACKS;
	tls_stacks[v].hi = 0;
	atomic_signal_fence(memory_order_release);
	tls_stacks[v].lo = r->lo;
	atomic_signal_fence(memory_order_release);
	tls_stacks[v].hi = r->hi;
	return true;
}

/* The cold part of readable(): a stack this walk has not met yet (the
 * side stacks, where a walk interrupted by this one's signal runs, are
 * known without a look at /proc/self/maps). */
static bool readable_slow(struct walk *w, uintptr_t addr, size_t len)
{
	struct stack_range r;

	for (unsigned i = 1; i < w->nstacks; i++)
		if (addr >= w->stacks[i].lo && addr < w->stacks[i].hi &&
		    w->stacks[i].hi - addr >= len)
			return true;
	inproc_side_range(&r.lo, &r.hi);
	if ((addr < r.lo || addr >= r.hi) &&
	    !stack_range_of(addr, &r, w->in_place))
		return false;
	if (r.hi - addr < len)
		return false;
	if (w->nstacks < WALK_STACKS)
		w->stacks[w->nstacks++] = r;
	else
		w->stacks[1] = r;
	return true;
}

/* Whether [addr, addr + len) may be read: inside a stack known to this
 * walk, or one found now. A corrupt stack's wild pointers end the walk
 * here instead of faulting. */
static inline bool readable(struct walk *w, uintptr_t addr, size_t len)
{
	if (w->nstacks && addr >= w->stacks[0].lo &&
	    addr < w->stacks[0].hi && w->stacks[0].hi - addr >= len)
		return true;
	return readable_slow(w, addr, len);
}

/* Loads from the thread's own stack. Not instrumented: other frames'
 * slots may sit in AddressSanitizer's redzones. */
__attribute__((no_sanitize_address)) static uint64_t load_u64(uintptr_t a)
{
	uint64_t v;

	__builtin_memcpy(&v, (const void *)a, sizeof(v));
	return v;
}

__attribute__((no_sanitize_address)) static int walk_read(void *user,
							  uint64_t addr,
							  void *buf, size_t len)
{
	struct walk *w = user;
	const volatile uint8_t *src = (const uint8_t *)(uintptr_t)addr;
	uint8_t *dst = buf;

	if (!readable(w, (uintptr_t)addr, len))
		return -EFAULT;
	for (size_t i = 0; i < len; i++)
		dst[i] = src[i];
	return 0;
}

static struct walk_module *module_of_slow(struct walk *w, uintptr_t addr)
{
	struct walk_module *wm;

	for (unsigned i = 0; i < w->nmods; i++)
		if (addr - w->mods[i].m.start <
		    w->mods[i].m.end - w->mods[i].m.start)
			return w->last = &w->mods[i];
	if (w->nmods < WALK_MODULES)
		wm = &w->mods[w->nmods++];
	else
		wm = &w->mods[w->victim++ % WALK_MODULES];
	if (inproc_module_find(addr, &wm->m)) {
		wm->m.start = wm->m.end = 0; /* matches nothing */
		w->last = NULL;
		return NULL;
	}
	/* First met by any walk: a row cache for the rows interpreted from
	 * its .eh_frame (without one, every frame is interpreted). */
	if (!wm->m.row_cache && !wm->m.table && !w->in_place)
		inproc_module_publish_cache(&wm->m);
	wm->eh_state = 0;
	w->last = wm;
	return wm;
}

/* The module of addr: most frames are in the previous frame's. */
static inline struct walk_module *module_of(struct walk *w, uintptr_t addr)
{
	struct walk_module *wm = w->last;

	if (wm && addr - wm->m.start < wm->m.end - wm->m.start)
		return wm;
	return module_of_slow(w, addr);
}

/* rt_sigreturn trampolines without CFI: `mov $15,%rax; syscall`. */
__attribute__((no_sanitize_address)) static bool
is_sigreturn(const struct walk_module *wm, uintptr_t pc)
{
	static const uint8_t code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00,
					0x00, 0x00, 0x0f, 0x05 };

	if (!inproc_module_mapped(&wm->m, pc, sizeof(code), true))
		return false;
	for (size_t i = 0; i < sizeof(code); i++)
		if (((const volatile uint8_t *)pc)[i] != code[i])
			return false;
	return true;
}

/* Why a step ends the walk (any non-zero value). */
enum step_end {
	STEP_OK = 0,
	STEP_END,
};

/* Applies a caller's register set from DWARF evaluation. */
static enum step_end take_caller(struct walk *w,
				 const struct stacksnap_regs *caller,
				 uint64_t cfa, bool signal_frame)
{
	if (!(caller->valid & BIT(STACKSNAP_REG_RIP)))
		return STEP_END; /* return address undefined: the bottom */
	w->regs = *caller;
	w->regs.regs[STACKSNAP_REG_RSP] = cfa;
	w->regs.valid |= BIT(STACKSNAP_REG_RSP);
	w->exact = signal_frame;
	return STEP_OK;
}

/* A callee-saved register by its compact rule (as the remote unwinder's
 * saved_value: a slot below sp is an epilogue's, already restored). */
static inline __attribute__((always_inline)) bool saved_reg(struct walk *w, unsigned kind, int16_t off,
		      uint64_t cfa, unsigned reg, uint64_t *val,
		      uint32_t *valid)
{
	uint64_t a = cfa + (uint64_t)(int64_t)off;

	switch (kind) {
	case UT_RBP_SAME:
		*val = w->regs.regs[reg];
		*valid |= w->regs.valid & BIT(reg);
		return true;
	case UT_RBP_CFA_OFF:
		if (a < w->regs.regs[STACKSNAP_REG_RSP]) {
			*val = w->regs.regs[reg];
			*valid |= w->regs.valid & BIT(reg);
			return true;
		}
		if (!readable(w, a, 8))
			return false;
		*val = load_u64(a);
		*valid |= BIT(reg);
		return true;
	default:
		*val = 0;
		return true;
	}
}

static inline __attribute__((always_inline)) enum step_end step_row(struct walk *w, const struct walk_module *wm,
			      const struct unwind_row *row, uint64_t vaddr)
{
	uint64_t *r = w->regs.regs;
	uint64_t cfa, ra, rbp, rbx;
	uint32_t valid = BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP);

	switch (row->cfa_kind) {
	case UT_CFA_RSP:
		cfa = r[STACKSNAP_REG_RSP] + (uint64_t)(int64_t)row->cfa_off;
		break;
	case UT_CFA_RBP:
		if (!(w->regs.valid & BIT(STACKSNAP_REG_RBP)))
			return STEP_END;
		cfa = r[STACKSNAP_REG_RBP] + (uint64_t)(int64_t)row->cfa_off;
		break;
	case UT_CFA_PLT:
		cfa = r[STACKSNAP_REG_RSP] + 8 +
		      ((r[STACKSNAP_REG_RIP] & 15) >= 11 ? 8 : 0);
		break;
	case UT_CFA_DWARF: {
		struct stacksnap_regs caller;

		if (w->in_place ||
		    unwind_table__eval_dwarf(wm->m.table, row, vaddr,
					     wm->m.bias, &w->regs, walk_read, w,
					     &caller, &cfa))
			return STEP_END;
		return take_caller(w, &caller, cfa,
				   row->rbp_kind & UT_DWARF_SIGNAL_FRAME);
	}
	default: /* UNDEFINED_RA: the bottom of the stack */
		return STEP_END;
	}
	if (!readable(w, cfa - 8, 8))
		return STEP_END;
	ra = load_u64(cfa - 8);
	if (!saved_reg(w, row->rbp_kind, row->rbp_off, cfa, STACKSNAP_REG_RBP,
		       &rbp, &valid) ||
	    !saved_reg(w, row->rbx_kind, row->rbx_off, cfa, STACKSNAP_REG_RBX,
		       &rbx, &valid))
		return STEP_END;
	w->regs.valid = valid;
	r[STACKSNAP_REG_RBP] = rbp;
	r[STACKSNAP_REG_RBX] = rbx;
	r[STACKSNAP_REG_RSP] = cfa;
	r[STACKSNAP_REG_RIP] = ra;
	w->exact = false;
	return STEP_OK;
}

/* Looks for the module's .eh_frame once per walk: true when found. */
static bool have_eh_frame(struct walk_module *wm)
{
	if (!wm->eh_state)
		wm->eh_state = inproc_module_eh_frame(&wm->m, &wm->eh) ? -1 : 1;
	return wm->eh_state > 0;
}

static bool fast_encode(const struct unwind_row *row, uint32_t *out);
static void fast_decode(uint32_t f, struct unwind_row *row);

/* An interpreted row in the row cache's fast form, when it has one: the
 * table compiler's fixed row (unwind_table__fixed_row), then
 * fast_encode's conditions, so that the row is the one a table would give.
 * The fast form has no PLT expression and no register marked undefined. */
static bool fast_from_cfi(const struct cfi_cie *cie, const struct cfi_row *r,
			  uint32_t *out)
{
	struct unwind_row row;

	if (!unwind_table__fixed_row(cie, r, &row))
		return false;
	if (row.cfa_kind == UT_CFA_UNDEFINED_RA) {
		*out = INPROC_FAST_END;
		return true;
	}
	if ((row.cfa_kind != UT_CFA_RSP && row.cfa_kind != UT_CFA_RBP) ||
	    row.rbp_kind == UT_RBP_UNDEFINED || row.rbx_kind == UT_RBP_UNDEFINED)
		return false;
	return fast_encode(&row, out);
}

/* A module without a table, with a row cache: the row for the pc addr
 * (run-time) from the cache, else interpreted from its FDE (found through
 * .eh_frame_hdr) and cached, in *buf. NULL when the row has no fast form
 * or no FDE covers addr: step_interpret then applies the FDE's rules
 * themselves. Allocation-free: the interpreter keeps its state on the
 * stack. */
static const struct unwind_row *interp_row(struct walk *w,
					   struct walk_module *wm,
					   uintptr_t addr,
					   struct unwind_row *buf)
{
	uint64_t rel = addr - wm->m.start, e, vaddr = addr - wm->m.bias;
	_Atomic(uint64_t) *slot;
	struct cfi_cie cie;
	struct cfi_fde fde;
	struct cfi_row r;
	size_t off;
	uint32_t f;

	if (!wm->m.row_cache || rel >= UINT32_MAX)
		return NULL;
	slot = &wm->m.row_cache[(addr + 1) & (INPROC_ROW_CACHE - 1)];
	e = atomic_load_explicit(slot, memory_order_relaxed);
	if (e >> 32 == rel + 1) {
		fast_decode((uint32_t)e, buf);
		return buf;
	}
	if (w->in_place || !have_eh_frame(wm) ||
	    inproc_hdr_search(&wm->m, &wm->eh, addr, &off) ||
	    cfi_fde_at(&wm->eh, off, &cie, &fde) || vaddr < fde.pc_begin ||
	    vaddr >= fde.pc_end ||
	    cfi_run(&wm->eh, &cie, &fde, vaddr, NULL, NULL, &r) ||
	    !fast_from_cfi(&cie, &r, &f))
		return NULL;
	w->interpreted++;
	atomic_store_explicit(slot, (rel + 1) << 32 | f, memory_order_relaxed);
	fast_decode(f, buf);
	return buf;
}

/* No table for this module yet: find the FDE through .eh_frame_hdr and
 * interpret it for this one address. 1 when no FDE covers it. */
static int step_interpret(struct walk *w, struct walk_module *wm,
			  uintptr_t addr)
{
	struct stacksnap_regs caller;
	uint64_t cfa;
	size_t off;
	bool sig = false;
	int err;

	if (w->in_place)
		return -1;
	if (!have_eh_frame(wm) ||
	    inproc_hdr_search(&wm->m, &wm->eh, addr, &off))
		return 1;
	err = unwind_table__eval_fde(&wm->eh, off, addr - wm->m.bias,
				     wm->m.bias, &w->regs, walk_read, w,
				     &caller, &cfa, &sig);
	if (err == -ENOENT)
		return 1;
	w->interpreted++;
	if (err)
		return -1;
	return take_caller(w, &caller, cfa, sig) == STEP_OK ? 0 : -1;
}

/* The interrupted context saved by the kernel at rsp, in a trampoline
 * that has no CFI. */
static enum step_end step_sigreturn(struct walk *w)
{
	uintptr_t g = (uintptr_t)w->regs.regs[STACKSNAP_REG_RSP] +
		      offsetof(ucontext_t, uc_mcontext.gregs);
	greg_t gregs[NGREG];

	if (walk_read(w, g, gregs, sizeof(gregs)))
		return STEP_END;
	ucontext_regs__set((const uint64_t *)gregs, &w->regs);
	w->exact = true;
	return STEP_OK;
}

/* A compact row in the row cache's fast form (inproc.h), or false when
 * it has no such form. */
static bool fast_encode(const struct unwind_row *row, uint32_t *out)
{
	uint32_t f = (uint16_t)row->cfa_off;
	const struct {
		unsigned kind;
		int16_t off;
		uint32_t saved;
		unsigned slot, bits;
	} reg[2] = {
		{ row->rbp_kind, row->rbp_off, INPROC_FAST_RBP_SAVED,
		  INPROC_FAST_RBP_SLOT, 7 },
		{ row->rbx_kind, row->rbx_off, INPROC_FAST_RBX_SAVED,
		  INPROC_FAST_RBX_SLOT, 6 },
	};

	if (row->cfa_kind == UT_CFA_UNDEFINED_RA) {
		*out = INPROC_FAST_END;
		return true;
	}
	if (row->cfa_kind == UT_CFA_RBP)
		f |= INPROC_FAST_RBP_BASE;
	else if (row->cfa_kind != UT_CFA_RSP || !row->cfa_off)
		return false; /* CFA = rsp + 0 is the end's form */
	for (int i = 0; i < 2; i++) {
		int32_t slot = -(int32_t)reg[i].off / 8;

		if (reg[i].kind == UT_RBP_SAME)
			continue; /* the offset is not used */
		if (reg[i].kind != UT_RBP_CFA_OFF || reg[i].off % 8 ||
		    slot < 1 || slot >= (1 << reg[i].bits))
			return false;
		f |= reg[i].saved | (uint32_t)slot << reg[i].slot;
	}
	*out = f;
	return true;
}

/* The row fast_encode encoded (the same row for every use the walk makes
 * of it: offsets of rules that do not use them are 0). */
static void fast_decode(uint32_t f, struct unwind_row *row)
{
	if (f == INPROC_FAST_END) {
		memset(row, 0, sizeof(*row));
		row->cfa_kind = UT_CFA_UNDEFINED_RA;
		return;
	}
	row->cfa_off = (int16_t)(uint16_t)f;
	row->cfa_kind = f & INPROC_FAST_RBP_BASE ? UT_CFA_RBP : UT_CFA_RSP;
	row->rbp_kind = f & INPROC_FAST_RBP_SAVED ? UT_RBP_CFA_OFF : UT_RBP_SAME;
	row->rbx_kind = f & INPROC_FAST_RBX_SAVED ? UT_RBP_CFA_OFF : UT_RBP_SAME;
	row->rbp_off = f & INPROC_FAST_RBP_SAVED
			       ? (int16_t)-(int16_t)((f >> INPROC_FAST_RBP_SLOT & 127) * 8)
			       : 0;
	row->rbx_off = f & INPROC_FAST_RBX_SAVED
			       ? (int16_t)-(int16_t)((f >> INPROC_FAST_RBX_SLOT & 63) * 8)
			       : 0;
}

/* unwind_table__lookup through the module's row cache, for the pc addr
 * (run-time): the row copied into *buf, or NULL. Fills the cache. */
static const struct unwind_row *
cached_lookup(const struct inproc_module *m, uintptr_t addr,
	      struct unwind_row *buf)
{
	uint64_t rel = addr - m->start, e;
	const struct unwind_row *row;
	_Atomic(uint64_t) *slot = NULL;
	uint32_t f;

	if (m->row_cache && rel < UINT32_MAX) {
		slot = &m->row_cache[(addr + 1) & (INPROC_ROW_CACHE - 1)];
		e = atomic_load_explicit(slot, memory_order_relaxed);
		if (e >> 32 == rel + 1) {
			fast_decode((uint32_t)e, buf);
			return buf;
		}
	}
	row = unwind_table__lookup(m->table, addr - m->bias);
	if (!row)
		return NULL;
	*buf = *row;
	if (slot && fast_encode(buf, &f))
		atomic_store_explicit(slot, (rel + 1) << 32 | f,
				      memory_order_relaxed);
	return buf;
}

/* From the current frame to its caller. */
static enum step_end step(struct walk *w)
{
	uint64_t pc = w->regs.regs[STACKSNAP_REG_RIP];
	uint64_t sp = w->regs.regs[STACKSNAP_REG_RSP];
	uintptr_t addr = w->exact ? pc : pc - 1;
	struct walk_module *wm = module_of(w, addr);
	const struct unwind_row *row;
	struct unwind_row rowbuf;
	enum step_end e;
	bool was_signal;
	int rc;

	if (!wm)
		return STEP_END;
	if (wm->m.table) {
		row = cached_lookup(&wm->m, addr, &rowbuf);
		if (row) {
			was_signal = row->cfa_kind == UT_CFA_DWARF &&
				     (row->rbp_kind & UT_DWARF_SIGNAL_FRAME);
			e = step_row(w, wm, row, addr - wm->m.bias);
			goto check;
		}
	} else if (wm->m.hdr) {
		row = interp_row(w, wm, addr, &rowbuf);
		if (row) {
			was_signal = false; /* signal frames have no fast form */
			e = step_row(w, wm, row, addr - wm->m.bias);
			goto check;
		}
		rc = step_interpret(w, wm, addr);
		if (rc < 0)
			return STEP_END;
		if (rc == 0) {
			was_signal = w->exact;
			e = STEP_OK;
			goto check;
		}
	}
	if (!is_sigreturn(wm, pc))
		return STEP_END; /* no CFI: no guess */
	e = step_sigreturn(w);
	was_signal = true;
check:
	if (e != STEP_OK || !w->regs.regs[STACKSNAP_REG_RIP])
		return STEP_END;
	/* The stack grows down: a caller's sp is above. Signal frames may
	 * switch stacks (sigaltstack), and so may a walk's switch to its
	 * side stack (a walk this signal interrupted), a bounded number of
	 * times. */
	if (was_signal) {
		if (++w->nsignals > MAX_SIGNAL_FRAMES)
			return STEP_END;
	} else if (w->regs.regs[STACKSNAP_REG_RSP] <= sp) {
		if (pc != (uintptr_t)inproc_side_return ||
		    ++w->nsignals > MAX_SIGNAL_FRAMES)
			return STEP_END;
	}
	return STEP_OK;
}

/* The common frame, with the state in locals: a return address in a
 * module whose row for it is in the row cache (fast form), rbp and rbx
 * known, every read inside the current stack, above sp. Emits frames into
 * ips from n on and returns the new count; stops (leaving w at the last
 * frame emitted) at anything else, for the general step, which produces
 * the same result (the same rules as step_row). Its critical path is the
 * load of the return address -> cache word (index = its low bits; one
 * load gives tag and row) -> CFA -> the next load; the module's constants
 * and the stack's top stay in registers. */
__attribute__((no_sanitize_address)) static int
fast_frames(struct walk *w, void **ips, int n, int max)
{
	uint64_t *r = w->regs.regs;
	uint64_t pc = r[STACKSNAP_REG_RIP], sp = r[STACKSNAP_REG_RSP];
	uint64_t bp = r[STACKSNAP_REG_RBP], bx = r[STACKSNAP_REG_RBX];
	const uint32_t need = BIT(STACKSNAP_REG_RBP) | BIT(STACKSNAP_REG_RBX);
	const struct walk_module *wm = w->last;
	const _Atomic(uint64_t) *cache;
	uint64_t start, span, hi8;
	void **out = ips + n, **end = ips + max;

	if (w->exact || (w->regs.valid & need) != need ||
	    (!w->nstacks && !readable_slow(w, sp, 8)) ||
	    sp < w->stacks[0].lo || sp >= w->stacks[0].hi)
		return n;
	if (!wm || pc - 1 - wm->m.start >= wm->m.end - wm->m.start)
		wm = module_of_slow(w, pc - 1);
	if (!wm || !wm->m.row_cache)
		return n;
	cache = wm->m.row_cache;
	start = wm->m.start;
	span = wm->m.end - wm->m.start;
	hi8 = w->stacks[0].hi - 8;
	while (out < end) {
		/* the tag: pc - 1 - start + 1 */
		uint64_t tag = pc - start, e, cfa, ra, a, nbp = bp, nbx = bx;
		uint32_t f;

		if (tag - 1 >= span) { /* into another module (main -> libc) */
			wm = module_of_slow(w, pc - 1);
			if (!wm || !wm->m.row_cache)
				break;
			cache = wm->m.row_cache;
			start = wm->m.start;
			span = wm->m.end - wm->m.start;
			tag = pc - start;
		}
		e = atomic_load_explicit(&cache[pc & (INPROC_ROW_CACHE - 1)],
					 memory_order_relaxed);
		if (e >> 32 != tag)
			break;
		f = (uint32_t)e;
		cfa = (f & INPROC_FAST_RBP_BASE ? bp : sp) +
		      (uint64_t)(int64_t)(int16_t)f;
		/* sp <= cfa - 8 <= hi - 8 (a CFA below 8 wraps above hi) */
		if (cfa - 8 < sp || cfa - 8 > hi8)
			break;
		ra = load_u64(cfa - 8);
		if (!ra)
			break;
		if (f & INPROC_FAST_RBP_SAVED) {
			/* slot >= 1: a <= cfa - 8 <= hi - 8; a slot below sp is
			 * an epilogue's, already restored */
			a = cfa - (f >> (INPROC_FAST_RBP_SLOT - 3) & (127 << 3));
			if (a >= sp)
				nbp = load_u64(a);
		}
		if (f & INPROC_FAST_RBX_SAVED) {
			a = cfa - (f >> (INPROC_FAST_RBX_SLOT - 3) & (63 << 3));
			if (a >= sp)
				nbx = load_u64(a);
		}
		pc = ra;
		sp = cfa;
		bp = nbp;
		bx = nbx;
		*out++ = (void *)(uintptr_t)pc;
	}
	if (out != ips + n) {
		r[STACKSNAP_REG_RIP] = pc;
		r[STACKSNAP_REG_RSP] = sp;
		r[STACKSNAP_REG_RBP] = bp;
		r[STACKSNAP_REG_RBX] = bx;
	}
	return (int)(out - ips);
}

static int walk(struct walk *w, void **ips, int max)
{
	int n = 0;

	ips[n++] = (void *)(uintptr_t)w->regs.regs[STACKSNAP_REG_RIP];
	while (n < max) {
		n = fast_frames(w, ips, n, max);
		if (n == max || step(w) != STEP_OK)
			break;
		ips[n++] = (void *)(uintptr_t)w->regs.regs[STACKSNAP_REG_RIP];
	}
	if (w->interpreted)
		atomic_fetch_add_explicit(&inproc_interpreted_frames,
					  w->interpreted, memory_order_relaxed);
	return n;
}

/* A walk to run on a side stack: everything its state needs. */
struct walk_call {
	const struct stacksnap_regs *regs;
	bool exact;
	bool in_place;
	void **ips;
	int max;
};

/* Runs a walk from c->regs, with errno kept as the caller had it (on
 * the side stack: the first use of errno may bind __errno_location). */
static int walk_from(void *arg)
{
	const struct walk_call *c = arg;
	int saved_errno = errno, n;
	struct walk w;

	w.regs = *c->regs;
	w.nmods = w.victim = w.nstacks = w.nsignals = 0;
	w.last = NULL;
	w.interpreted = 0;
	w.exact = c->exact;
	w.in_place = c->in_place;
	n = walk(&w, c->ips, c->max);
	errno = saved_errno;
	return n;
}

/* The caller's stack is an alternate signal stack with less than this
 * left: the walk runs on a side stack. */
#define SMALL_STACK (24 * 1024)

/* rt_sigprocmask without the libc wrapper: no lazy binding of it on a
 * small stack. */
static long raw_sigmask(int how, const uint64_t *set, uint64_t *old)
{
	long ret;
	register long r10 __asm__("r10") = 8;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(14L /* __NR_rt_sigprocmask */), "D"((long)how),
			   "S"(set), "d"(old), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Runs a walk from regs. On a small alternate signal stack (the
 * handler's ucontext gives its bounds) the walk runs on a side stack, so
 * that the caller's stack holds only these frames, with signals blocked
 * meanwhile: the kernel would deliver a nested SA_ONSTACK signal at the
 * top of the alternate stack, over the handler's frames, since the
 * thread's sp is no longer on it. Anywhere else it runs in place.
 * exact: the first pc is exact, not a return address. */
static int run_walk(const struct stacksnap_regs *regs, bool exact,
		    const stack_t *alt, void **ips, int max)
{
	struct walk_call c = { regs, exact, false, ips, max };
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	uint64_t all = ~(uint64_t)0, old;
	bool masked;
	int n;

	if (!alt || (alt->ss_flags & SS_DISABLE) ||
	    sp - (uintptr_t)alt->ss_sp >= alt->ss_size ||
	    sp - (uintptr_t)alt->ss_sp >= SMALL_STACK)
		return walk_from(&c);
	masked = raw_sigmask(SIG_SETMASK, &all, &old) == 0;
	if (!masked || inproc_side_call(walk_from, &c, &n)) {
		c.in_place = true;
		n = walk_from(&c);
	}
	if (masked)
		raw_sigmask(SIG_SETMASK, &old, NULL);
	return n;
}

/* Called by the stacksnap_backtrace entry below with the caller's state
 * at its call: where the return address is, and rbp and rbx. */
__attribute__((visibility("hidden"), used)) int
inproc_backtrace_from(void **ips, int max, const uint64_t *ra_slot,
		      uint64_t rbp, uint64_t rbx);

int inproc_backtrace_from(void **ips, int max, const uint64_t *ra_slot,
			  uint64_t rbp, uint64_t rbx)
{
	struct stacksnap_regs regs;

	if (!ips || max < 0) {
		errno = EINVAL;
		return -EINVAL;
	}
	if (!max)
		return 0;
	regs.regs[STACKSNAP_REG_RIP] = *ra_slot;
	regs.regs[STACKSNAP_REG_RSP] = (uint64_t)(uintptr_t)(ra_slot + 1);
	regs.regs[STACKSNAP_REG_RBP] = rbp;
	regs.regs[STACKSNAP_REG_RBX] = rbx;
	regs.valid = BIT(STACKSNAP_REG_RIP) | BIT(STACKSNAP_REG_RSP) |
		     BIT(STACKSNAP_REG_RBP) | BIT(STACKSNAP_REG_RBX);
	return run_walk(&regs, false, NULL, ips, max);
}

/* stacksnap_backtrace(ips, max): captures the caller's rsp (pointing at
 * the return address), rbp and rbx before any prologue can change them,
 * and tail-calls the walk. Its CFI is the default (CFA = rsp + 8). */
__asm__(".text\n"
	".globl stacksnap_backtrace\n"
	".type stacksnap_backtrace, @function\n"
	".p2align 4\n"
	"stacksnap_backtrace:\n"
	".cfi_startproc\n"
	"\tmov %rsp, %rdx\n"
	"\tmov %rbp, %rcx\n"
	"\tmov %rbx, %r8\n"
	"\tjmp inproc_backtrace_from\n"
	".cfi_endproc\n"
	".size stacksnap_backtrace, .-stacksnap_backtrace\n");

int stacksnap_backtrace_ucontext(const void *ucontext, void **ips, int max)
{
	const ucontext_t *uc = ucontext;
	struct stacksnap_regs regs;

	if (!uc || !ips || max < 0) {
		errno = EINVAL;
		return -EINVAL;
	}
	if (!max)
		return 0;
	ucontext_regs__set((const uint64_t *)uc->uc_mcontext.gregs, &regs);
	return run_walk(&regs, true, &uc->uc_stack, ips, max); /* the interrupted pc is exact */
}
