/* waits_writer.h - a snapshot file's WAITS section (waits_writer.c). */
#ifndef SS_SAVE_WAITS_WRITER_H
#define SS_SAVE_WAITS_WRITER_H

#include "save/snapfile_writer.h"
#include "stacksnap.h"

/* Appends the WAITS section of o's waits and deadlocks (nothing when o
 * has no waits). */
void waits_writer__put(struct snapfile_writer *w, const struct stacksnap_save_opts *o);

#endif
