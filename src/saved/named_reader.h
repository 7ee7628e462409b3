/* named_reader.h - a snapshot file's NAMED section read back
 * (named_reader.c): a runtime's frames named at capture time (Java,
 * JavaScript) and the steps that walked compiled Java frames. */
#ifndef SS_SAVED_NAMED_READER_H
#define SS_SAVED_NAMED_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/cursor.h"
#include "saved/saved.h"

struct saved_named;

/* Reads the section (payload in c, at file offset base; has_kind: a
 * NAMED section, else an older file's JAVA section) into s->named.
 * Returns 0, -EINVAL (logged with the offset) or -ENOMEM. */
int named_reader__read_section(struct stacksnap_saved *s, struct cursor *c,
			       size_t base, bool has_kind);
void named_reader__free(struct saved_named *j);
/* Its description; *kind: the runtime (JAVA or JS). */
const char *named_reader__description(const struct saved_named *j,
				      enum stacksnap_runtime *kind);
/* The thread's java.lang.Thread name as saved, or NULL. */
const char *named_reader__thread_name(const struct saved_named *j, pid_t tid);
/* Thread tid's runtime frames against the native frames unwound from its
 * saved stack: at most max into out; returns how many there are. */
int named_reader__frames(const struct saved_named *j, pid_t tid,
			const struct stacksnap_frame *native, size_t nnative,
			struct stacksnap_runtime_frame *out, size_t max);
/* Registers with uw a stepper replaying the saved steps. Returns 1, 0
 * (no steps) or -errno. */
int named_reader__steppers(const struct saved_named *j, struct stacksnap_unwinder *uw);

#endif
