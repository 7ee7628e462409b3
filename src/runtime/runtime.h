/* runtime.h - what every language runtime (Python, the JVM, JavaScript
 * engines, Go) shares: the kinds, and the frame a runtime turns native
 * frames into. A runtime plugs into the one pipeline at two points and never
 * brings its own unwinder: during the freeze it copies what can change (a
 * thread's interpreter frame chain, the goroutine list); after the thaw it
 * names what cannot (code objects, methods, strings) and expands or replaces
 * native frames (docs/ARCHITECTURE.md, "Runtime frames"). */
#ifndef SS_RUNTIME_RUNTIME_H
#define SS_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "stacksnap.h"

/* The kinds are the public enum stacksnap_runtime. */
enum runtime_kind {
	RUNTIME_NATIVE = STACKSNAP_RUNTIME_NATIVE,
	RUNTIME_PYTHON = STACKSNAP_RUNTIME_PYTHON,
	RUNTIME_JAVA = STACKSNAP_RUNTIME_JAVA,
	RUNTIME_JS = STACKSNAP_RUNTIME_JS,
	RUNTIME_GO = STACKSNAP_RUNTIME_GO,
	RUNTIME_JIT = STACKSNAP_RUNTIME_JIT,
	RUNTIME_RUBY = STACKSNAP_RUNTIME_RUBY,
	RUNTIME_PHP = STACKSNAP_RUNTIME_PHP,
};

/* The name used in text output ("[py]") and JSON ("python"). */
const char *runtime_kind__tag(enum runtime_kind kind);
const char *runtime_kind__json(enum runtime_kind kind);

#define RUNTIME_FRAME_INLINED	0x1	/* inlined into the frame after it */

/* One runtime frame. Invariant: function is never NULL (a frame that cannot
 * be named is not produced: the native frame stays); strings are owned by
 * whatever produced the frame and live as long as it. */
struct runtime_frame {
	uint8_t kind;		/* enum runtime_kind */
	uint8_t flags;		/* RUNTIME_FRAME_* */
	uint32_t native_index;	/* the native frame this one replaces or
				   expands (frames of one native frame are
				   consecutive, innermost first) */
	const char *function;	/* qualified name */
	const char *file;	/* may be NULL */
	unsigned line;		/* 0: unknown */
	uint64_t pc;		/* 0 for interpreted frames */
};

#endif
