/* v8_frames.h - one JavaScript frame of a V8 thread named from the heap
 * objects its frame slots point at: the JSFunction below the frame
 * pointer, its SharedFunctionInfo (name, script) and, in an interpreted
 * frame, the bytecode offset through the bytecode's source position table
 * and the script's line ends (the line). Every read goes through a memory
 * source and is bounded. */
#ifndef SS_RUNTIME_V8_FRAMES_H
#define SS_RUNTIME_V8_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/v8/v8_layout.h"
#include "stacksnap.h"

/* Bounds on what one frame may make the reader do. */
#define V8_MAX_NAME 256		/* bytes of a name kept */
#define V8_MAX_STRING_PARTS 64	/* cons/sliced/thin strings followed */
#define V8_MAX_POSITIONS (1u << 20) /* bytes of a source position table */
#define V8_MAX_LINES (1u << 22)	/* entries of a script's line ends */
#define V8_MAX_INLINED 32	/* functions listed inlined at one pc */
#define V8_MAX_SOURCE (1 << 24)	/* characters of a source counted for a
				   line */

/* A named frame. Invariant: function is a NUL-terminated name, never
 * empty ("<anonymous>" for a function without one); file is "" when the
 * function has no script with a name; line 0 when unknown. */
struct v8_frame {
	char function[V8_MAX_NAME];
	char file[V8_MAX_NAME * 2];
	unsigned line;
	bool interpreted;	/* its bytecode offset gave the line (else a
				   line is an optimized frame's, from its
				   code's positions) */
	bool inlined;		/* inlined into the frame after it */
};

/* Names the frame whose frame pointer is fp and whose code is at pc (the
 * pc to look up: a return address - 1, inside the call; 0 unknown): at
 * most max frames into out, innermost first: the functions an optimized
 * frame has inlined at pc (inlined set), then the frame's own function
 * (always there). Returns their count (>= 1), -ENOENT when its slots do
 * not hold a context and a JSFunction (not a JavaScript frame: native
 * code, a stub, an exit frame), -EFAULT when a read failed, -EINVAL for
 * max 0. */
int v8_frame__name(const struct v8_layout *l, struct stacksnap_mem *mem,
		   uint64_t fp, uint64_t pc, struct v8_frame *out, size_t max);

#endif
