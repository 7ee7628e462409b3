/* cxx_exception.h - a C++ exception in flight, read from the target's
 * memory as gdb's `catch throw` shows it: the Itanium C++ ABI's
 * __cxa_exception header sits right before the thrown object, its
 * _Unwind_Exception last, whose exception_class says "GNUCC++\0". */
#ifndef SS_RUNTIME_CXX_EXCEPTION_H
#define SS_RUNTIME_CXX_EXCEPTION_H

#include <stddef.h>
#include <stdint.h>

#include "stacksnap.h"

/* Reads len bytes of the target at addr into buf: 0, or -errno. */
typedef int (*cxx_read_fn)(void *user, uint64_t addr, void *buf, size_t len);

/* Looks through the stack words of stack[0..len) (copied at base) in
 * [lo, hi) for a pointer to a primary exception's unwind header (what
 * __cxa_throw passes on, and keeps while std::terminate runs), and fills
 * out: the thrown object, its type (demangled) and, for std::runtime_error
 * and std::logic_error and the classes derived from them singly, the
 * message what() returns. Every read is bounded; a chain that does not
 * check out gives no message. Returns 0, or -ENOENT when none is found. */
int cxx_exception_find(cxx_read_fn read, void *user, const uint8_t *stack,
		       size_t len, uint64_t base, uint64_t lo, uint64_t hi,
		       struct stacksnap_cxx_exception *out);

#endif
