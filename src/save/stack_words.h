/* stack_words.h - which words and registers of a thread's stack copy a
 * compact encoding keeps: every pointer (POINTERS), or only those the
 * unwinder reads on its walk (EXACT, a walk of the copy). The one file of
 * save/ that runs the unwinder: the encoders receive plain bitmaps. */
#ifndef SS_SAVE_STACK_WORDS_H
#define SS_SAVE_STACK_WORDS_H

#include <stdbool.h>
#include <stdint.h>

#include "stacksnap.h"

/* The choice for one encoding. Invariant: uw and frames (max_frames
 * entries) are set when enc is EXACT, else NULL. */
struct stack_words {
	enum stacksnap_stack_encoding enc;
	struct stacksnap_unwinder *uw;
	struct stacksnap_frame *frames;
	unsigned max_frames;
};

/* enc is not DEFAULT; max_frames and stack_scan configure EXACT's walk.
 * Returns 0 or -ENOMEM. */
int stack_words__init(struct stack_words *sw, enum stacksnap_stack_encoding enc,
		      unsigned max_frames, bool stack_scan);
void stack_words__free(struct stack_words *sw);

/* Sets *keep to a calloc'ed bitmap (compact_stack.h) of the words of th's
 * copy to keep, or NULL when every word is kept (FULL) or there is no
 * copy. The caller frees it. Returns 0 or -ENOMEM. */
int stack_words__choose(struct stack_words *sw, struct stacksnap_addrspace *as,
			const struct stacksnap_thread *th, uint64_t **keep);

/* th's registers as a compact encoding keeps them: rip, rsp, and the
 * others only when they point into code or th's stack. */
void stack_words__filter_regs(struct stacksnap_addrspace *as,
			      const struct stacksnap_thread *th, struct stacksnap_regs *r);

#endif
