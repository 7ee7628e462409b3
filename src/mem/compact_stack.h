/* compact_stack.h - expanding stack copies compacted in the kernel. */
#ifndef SS_MEM_COMPACT_STACK_H
#define SS_MEM_COMPACT_STACK_H

#include <stddef.h>
#include <stdint.h>

/* What a word left out reads as: not an address (non-canonical), so a
 * walk that needs it ends with "return address is not code" (and the
 * tracer re-reads the process's mappings: the word may point into a
 * library mapped since the kernel's ranges were set), never with a false
 * bottom of stack as a zero would. */
#define COMPACT_STACK_DROPPED 0xdeadbeefdeadbeefull

/* Expands the encoding enc[0..enc_len) of a stack_len-byte copy (a
 * multiple of 8) into out (stack_len bytes): 0, or -EINVAL when the
 * encoding is malformed (a mask naming words past the copy, bytes
 * missing or left over). */
int compact_stack__expand(const void *enc, size_t enc_len, size_t stack_len,
			  uint8_t *out);

#endif
