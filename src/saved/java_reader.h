/* java_reader.h - a snapshot file's JAVA section read back
 * (java_reader.c): the Java frames named at capture time and the steps
 * that walked compiled Java frames. */
#ifndef SS_SAVED_JAVA_READER_H
#define SS_SAVED_JAVA_READER_H

#include <stddef.h>
#include <sys/types.h>

#include "base/cursor.h"
#include "saved/saved.h"

struct saved_java;

/* Reads the section (payload in c, at file offset base) into s->java.
 * Returns 0, -EINVAL (logged with the offset) or -ENOMEM. */
int java_reader__read_section(struct stacksnap_saved *s, struct cursor *c,
			      size_t base);
void java_reader__free(struct saved_java *j);
const char *java_reader__description(const struct saved_java *j);
/* The thread's java.lang.Thread name as saved, or NULL. */
const char *java_reader__thread_name(const struct saved_java *j, pid_t tid);
/* Thread tid's Java frames against the native frames unwound from its
 * saved stack: at most max into out; returns how many there are. */
int java_reader__frames(const struct saved_java *j, pid_t tid,
			const struct stacksnap_frame *native, size_t nnative,
			struct stacksnap_runtime_frame *out, size_t max);
/* Registers with uw a stepper replaying the saved steps. Returns 1, 0
 * (no steps) or -errno. */
int java_reader__steppers(const struct saved_java *j, struct stacksnap_unwinder *uw);

#endif
