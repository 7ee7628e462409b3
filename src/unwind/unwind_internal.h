/* unwind_internal.h - the unwinder's state shared by unwind.c (the walk,
 * its fast path and the stepper order) and the built-in steppers in
 * steppers/, each of which turns one frame's registers into its caller's. */
#ifndef SS_UNWIND_UNWIND_INTERNAL_H
#define SS_UNWIND_UNWIND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "addrspace/addrspace.h"
#include "mem/mem.h"
#include "stacksnap.h"
#include "table/unwind_table.h"

#define BIT(r) (1u << (r))
#define MAX_USER_STEPPERS 16

/* The fast path's row cache: direct-mapped, FAST_ROWS entries, each a
 * row copied out of a table with its key, the table's serial above the
 * row's offset from the table's lo (tables span at most 4 GiB). An entry
 * is stored only for a return address that the fast path found not a
 * signal trampoline, not a Go stack's bottom, with a row of kind RSP or
 * RBP: a hit skips those questions and the table's search. Empty
 * entries hold FAST_ROW_EMPTY (serial UINT32_MAX is never given). */
#define FAST_ROWS_BITS 11
#define FAST_ROWS (1u << FAST_ROWS_BITS)
#define FAST_ROW_EMPTY UINT64_MAX
struct fast_row {
	uint64_t key;
	struct unwind_row row;
};

/* One frame's state before it is emitted. */
struct frame_state {
	struct stacksnap_regs regs;
	uint8_t stepper, trust, flags, user_stepper;
};

/* Invariant: when have_cur, cur holds the next frame to emit; when not,
 * end says why the walk stopped. The unwinder looks one step ahead so
 * that each frame is emitted with its own CFA. */
struct stacksnap_unwinder {
	unsigned max_frames;
	bool stack_scan, no_fp, no_analysis;
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
	/* Steppers the user registered, sorted by priority, highest first;
	 * nuser_above_cfi of them come before the compiled table (the fast
	 * path is then off: they must see every frame). */
	struct user_stepper {
		char name[32];
		stacksnap_stepper_fn step;
		void *user;
		int priority;
		uint8_t trust;
		uint8_t id;	/* stacksnap_frame.user_stepper */
	} users[MAX_USER_STEPPERS];
	unsigned nusers, nuser_above_cfi;
	struct analysis_cache *analysis; /* steppers/analysis.c's, lazily */
	struct fast_row *fast_rows;	/* FAST_ROWS of them, with the first
					   fast walk; NULL before (or when
					   out of memory: not cached) */
	bool fast_rows_tried;
};

static inline enum stacksnap_end mem_end(int err)
{
	return err == -ENODATA ? STACKSNAP_END_STACK_COPY
			       : STACKSNAP_END_BAD_MEMORY;
}

/* The built-in steppers. Each turns st, a frame's state, into its
 * caller's in place and returns END_NONE; or returns why the walk ends,
 * leaving st undefined. *cfa receives the frame's canonical frame address. */

/* steppers/signal.c: the rt_sigreturn trampoline; registers from the
 * ucontext at rsp. */
enum stacksnap_end step_signal(struct stacksnap_unwinder *uw,
			       struct frame_state *st, uint64_t *cfa);
/* steppers/cfi.c: a compiled table row, or its DWARF for the rows that do
 * not fit the compact shape. */
enum stacksnap_end step_table(struct stacksnap_unwinder *uw,
			      const struct unwind_row *row,
			      struct frame_state *st, uint64_t *cfa);
enum stacksnap_end step_dwarf(struct stacksnap_unwinder *uw,
			      const struct unwind_table *table,
			      const struct unwind_row *row, uint64_t vaddr,
			      uint64_t bias, struct frame_state *st, uint64_t *cfa);
/* steppers/frame_pointer.c: the rbp chain; for an exact pc in a module,
 * with the prologue helper's view of how far the frame is set up. */
enum stacksnap_end step_fp(struct stacksnap_unwinder *uw, const struct as_map *m,
			   bool exact, struct frame_state *st, uint64_t *cfa);

/* steppers/prologue.c: FrameFuncHelper's classification of the function
 * holding a module's link-time address vaddr: its kind of frame, and the
 * state of the frame at vaddr (unset: return address at rsp, rbp still
 * the caller's; halfset: rbp pushed, return address at rsp + 8; set: the
 * rbp chain holds). Returns 0, or -1 when the function is unknown (no
 * symbol) or its code unreadable. */
enum prologue_kind {
	PROLOGUE_UNKNOWN = 0,
	PROLOGUE_NO_FRAME,	/* no push %rbp first */
	PROLOGUE_STANDARD,	/* push %rbp; mov %rsp,%rbp */
	PROLOGUE_SAVEFP_ONLY,	/* push %rbp, no mov */
};
enum prologue_state {
	PROLOGUE_SET = 0,
	PROLOGUE_UNSET,
	PROLOGUE_HALFSET,
	PROLOGUE_UNKNOWN_STATE,	/* inside a frameless function's body */
};
int prologue__classify(struct stacksnap_ctx *ctx, struct module *mod,
		       uint64_t vaddr, enum prologue_kind *kind,
		       enum prologue_state *state);
/* steppers/wanderer.c: a word up the stack that is a return address
 * after a call that could have entered the current function. */
enum stacksnap_end step_scan(struct stacksnap_unwinder *uw, bool exact,
			     struct frame_state *st, uint64_t *cfa);
/* steppers/user.c: the user's steppers with priority in [lo, hi): END_NONE
 * when one stepped, END_NO_CFI when none claimed the frame, else why the
 * walk ends. */
enum stacksnap_end step_users(struct stacksnap_unwinder *uw,
			      struct frame_state *st, uint64_t *cfa, bool exact,
			      int lo, int hi);

/* steppers/analysis.c: the stack height at an address by a dataflow over
 * the function's machine code from its entry (Capstone decodes it). */
enum analysis_why {		/* why the analysis knows nothing at an address */
	ANALYSIS_WHY_NONE = 0,
	ANALYSIS_WHY_NO_SYMBOL,	/* no symbol covers the address */
	ANALYSIS_WHY_TOO_BIG,	/* function beyond the bounded work */
	ANALYSIS_WHY_NO_CODE,	/* its bytes could not be read */
	ANALYSIS_WHY_UNREACHED,	/* no path from the entry (indirect jump) */
	ANALYSIS_WHY_JOIN,	/* heights disagree where paths join */
	ANALYSIS_WHY_UNTRACKED,	/* rsp changed in a way not followed */
	ANALYSIS_WHY_DECODE,	/* Capstone could not decode */
	ANALYSIS_WHY_NOT_CALL,	/* a return address not right after a call */
	ANALYSIS_WHY_COLD,	/* a function's cold part, entered by a jump */
	ANALYSIS_WHY_NO_DECODER, /* libcapstone could not be loaded */
	ANALYSIS_WHY_COUNT,
};
enum { ANALYSIS_RBP_SAME = 0, ANALYSIS_RBP_SAVED, ANALYSIS_RBP_LOST };
/* What the analysis says at one address: CFA = rsp + cfa_rsp when rsp_ok,
 * CFA = rbp + cfa_rbp when cfa_rbp != 0 (both may hold); the return
 * address at CFA - 8; the caller's rbp in rbp, at CFA + rbp_off, or lost. */
struct analysis_result {
	bool rsp_ok;
	int32_t cfa_rsp, cfa_rbp, rbp_off;
	uint8_t rbp;	/* ANALYSIS_RBP_* */
	uint8_t why;	/* enum analysis_why, when the query fails */
};
struct analysis_fn;
struct analysis_cache;
/* Analyses the function whose code is code[0 .. end - start), entered at
 * start (link-time addresses). A function beyond the bounds is analysed
 * to "unknown everywhere". Returns 0 and *out, or -errno. */
int analysis__function(const uint8_t *code, uint64_t start, uint64_t end,
		       struct analysis_fn **out);
/* The CFA at addr: exact, an instruction's address; else a return address
 * (the call before it is looked at). Returns 0, or -1 with r->why. */
int analysis__query(const struct analysis_fn *fn, uint64_t addr, bool exact,
		    struct analysis_result *r);
void analysis__fn_free(struct analysis_fn *fn);
void analysis__cache_free(struct analysis_cache *c);
const char *analysis_why__str(enum analysis_why why);
/* Is the symbol name a function's cold part (not analysable from its
 * start: it is jumped to, at its parent's height)? */
bool analysis__is_cold(const char *name);
/* The stepper: the function from the module's symbols, analysed once per
 * unwinder (a small cache). */
enum stacksnap_end step_analysis(struct stacksnap_unwinder *uw,
				 const struct as_map *m, bool exact,
				 struct frame_state *st, uint64_t *cfa);

#endif
