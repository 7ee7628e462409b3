/* java_writer.h - the JAVA section of a snapshot file: a JVM's named Java
 * frames and the stepper's steps (java_writer.c). */
#ifndef SS_SAVE_JAVA_WRITER_H
#define SS_SAVE_JAVA_WRITER_H

#include <stdbool.h>

#include "save/snapfile_writer.h"
#include "stacksnap.h"

/* Appends the section when the capture found a JVM (nothing otherwise):
 * each thread walked from its copy as `show` will walk it (max_frames,
 * stack_scan: the reader's unwind options) and its Java frames named.
 * Returns 0 or -ENOMEM. */
int java_writer__put(struct snapfile_writer *w, const struct stacksnap_snapshot *snap,
		     struct stacksnap_addrspace *as, unsigned max_frames,
		     bool stack_scan);

#endif
