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

#endif
