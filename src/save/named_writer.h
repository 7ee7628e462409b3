/* named_writer.h - the NAMED section of a snapshot file: a runtime's
 * frames named at capture (a JVM's, V8's) and its stepper's steps
 * (named_writer.c). */
#ifndef SS_SAVE_NAMED_WRITER_H
#define SS_SAVE_NAMED_WRITER_H

#include <stdbool.h>

#include "save/snapfile_writer.h"
#include "stacksnap.h"

/* Appends the section when the capture found a JVM or V8 (nothing
 * otherwise):
 * each thread walked from its copy as `show` will walk it (max_frames,
 * stack_scan: the reader's unwind options) and its runtime frames named.
 * Returns 0 or -ENOMEM. */
int named_writer__put(struct snapfile_writer *w, const struct stacksnap_snapshot *snap,
		     struct stacksnap_addrspace *as, unsigned max_frames,
		     bool stack_scan);

#endif
