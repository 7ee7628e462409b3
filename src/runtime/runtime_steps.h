/* runtime_steps.h - the steps a runtime's stepper took (struct
 * stacksnap_runtime_step, include/stacksnap.h: a JVM's compiled Java
 * frames), in the one order they are kept in (by (sp, pc): snapshot and
 * events files, docs/snapshot-format.md) and replayed from, so that a
 * saved walk steps through those frames as the capture's walk did. */
#ifndef SS_RUNTIME_RUNTIME_STEPS_H
#define SS_RUNTIME_RUNTIME_STEPS_H

#include <stdbool.h>
#include <stddef.h>

#include "stacksnap.h"

/* Orders two steps by (sp, pc) (a qsort comparison): 0 only for the same
 * key. Steps kept for a replay are sorted by it and unique. */
int runtime_step__cmp(const void *a, const void *b);

/* Sorts steps[0..n) by runtime_step__cmp and drops repeated keys (the
 * first kept): the order a replay searches. Returns how many are left. */
size_t runtime_steps__sort_unique(struct stacksnap_runtime_step *steps, size_t n);

/* The step of the frame at regs' (rip, rsp) among steps[0..n) (sorted by
 * runtime_step__cmp, unique), replayed: STACKSNAP_STEPPER_CALLER with
 * caller's rip, rsp and rbp set (nothing else known), or
 * STACKSNAP_STEPPER_NOT_MINE (no such step, or regs without rip and rsp).
 * exact_pc is the stepper's: regs' rip is not a return address (a
 * running thread's frame 0). skip_exact_pc: such a frame is never
 * replayed (a snapshot's replay leaves it to the other steppers, as it
 * has since its first format); else it is looked up like any other (a
 * trace event's steps are of that event's walk only, each taken). */
int runtime_steps__replay(const struct stacksnap_runtime_step *steps, size_t n,
			  const struct stacksnap_regs *regs, bool exact_pc,
			  bool skip_exact_pc, struct stacksnap_regs *caller);

#endif
