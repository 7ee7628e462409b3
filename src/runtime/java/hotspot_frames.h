/* hotspot_frames.h - one native frame of a HotSpot JVM's thread named as
 * the Java frame it is (a compiled method, an interpreted method and its
 * line, a native method's wrapper, a stub or adapter), from the code
 * cache and method metadata (hotspot_code.h). */
#ifndef SS_RUNTIME_JAVA_HOTSPOT_FRAMES_H
#define SS_RUNTIME_JAVA_HOTSPOT_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/java/hotspot_code.h"

/* What a native frame is in Java terms. */
enum hotspot_frame_kind {
	HOTSPOT_FRAME_COMPILED,		/* an nmethod: function is its method */
	HOTSPOT_FRAME_INTERPRETED,	/* the interpreter: method (and line) */
	HOTSPOT_FRAME_NATIVE_WRAPPER,	/* a native method's compiled wrapper */
	HOTSPOT_FRAME_STUB,		/* a stub or adapter: function is the
					   blob's name ("StubRoutines (1)") */
};

/* A named Java frame. Invariant: function is NUL-terminated and
 * non-empty; file is "" when unknown; line 0 when unknown. */
struct hotspot_frame {
	enum hotspot_frame_kind kind;
	char function[512];	/* "pkg.Class.method", or the blob's name */
	char file[256];		/* the class's source file ("Deep.java") */
	unsigned line;		/* interpreted frames: of the bytecode index */
	/* The Method* checked after it was named (hotspot_code.h): OLD
	   and STALE are said in function, not hidden. */
	enum hotspot_method_state state;
	uint64_t blob;		/* the code blob (its header) */
};

/* Names the frame whose lookup pc is pc (a return address minus one for
 * a caller frame) and whose frame pointer (rbp, pointing at the saved
 * rbp) is fp (0: unknown; an interpreter frame then names no method),
 * an interpreter frame's slots (Method*, bcp) read from slots (the
 * captured stack; NULL: the process).
 * Returns 0, -ENOENT (pc is not in the code cache: not Java code), or
 * -EFAULT/-EPROTO (the cache or the metadata did not read). */
int hotspot_frame__name(struct hotspot_code *hc, struct stacksnap_mem *slots,
			uint64_t pc, uint64_t fp, struct hotspot_frame *out);

/* Names method at bci (-1: none, no line) into out's function, file and
 * line (kind and blob left as they are). Returns 0 or -errno. */
int hotspot_frame__method(struct hotspot_code *hc, uint64_t method, int bci,
			  struct hotspot_frame *out);

#endif
