/* runtime_capture.h - what a live capture holds of a language runtime,
 * for the snapshot writer (src/save/), which keeps the named frames in the
 * file: the process may be gone when the file is shown. */
#ifndef SS_CAPTURE_RUNTIME_CAPTURE_H
#define SS_CAPTURE_RUNTIME_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "runtime/java/hotspot_frames.h"
#include "runtime/python/python.h"
#include "runtime/ruby/ruby.h"
#include "stacksnap.h"

/* The interpreter the capture found and read frames of, or NULL. */
const struct py_runtime *capture__runtime_py(const struct stacksnap_snapshot *s);

/* Thread tid's named Python frames, innermost first, entry flags kept
 * (named now if they were not yet; the strings live as long as s).
 * Returns 0 (*n = 0: none), or -ENOMEM. */
int capture__runtime_thread(struct stacksnap_snapshot *s, pid_t tid,
			    const struct py_frame **frames, size_t *n,
			    const char **end, bool *holds_gil);

/* The Ruby VM the capture read control frames of, or NULL. */
const struct rb_runtime *capture__runtime_rb(const struct stacksnap_snapshot *s);

/* Thread tid's named Ruby frames, innermost first, all of them (the
 * merge's finish flags; shown or not), named now if not yet; the strings
 * live as long as s. Returns 0 (*n = 0: none), or -ENOMEM. */
int capture__runtime_rb_thread(struct stacksnap_snapshot *s, pid_t tid,
			       const struct rb_frame **frames, size_t *n,
			       const char **end);

/* The runtime the capture found whose frames are named from the native
 * frames (a JVM, V8): its description and *kind, or NULL (none). */
const char *capture__runtime_named(const struct stacksnap_snapshot *s,
				   enum stacksnap_runtime *kind);
/* The steps its steppers took in the walks of s so far, in the order
 * taken (duplicates possible); 0 without one or without steppers. */
size_t capture__runtime_named_steps(const struct stacksnap_snapshot *s,
				    const struct stacksnap_runtime_step **steps);

#endif
