/* compact_stack.h - compact encodings of a copied stack: which 8-byte words
 * of the copy to keep (a bitmap, chosen by a policy), and the run-length
 * stream that stores the kept words and only the lengths of the zeroed runs,
 * preserving every kept word's offset. Reusable by every capture path (live
 * snapshots, eBPF events) that wants to keep stacks small and secret-free.
 * docs/snapshot-format.md describes the stream. */
#ifndef SS_SNAPFILE_COMPACT_STACK_H
#define SS_SNAPFILE_COMPACT_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cursor.h"
#include "stacksnap.h"

/* A growable byte buffer for writers of explicit little-endian formats.
 * Invariant: n <= cap; once failed is set (out of memory) the contents are
 * incomplete and further puts do nothing. */
struct byte_buf {
	uint8_t *p;
	size_t n, cap;
	bool failed;
};

void byte_buf__put(struct byte_buf *b, const void *bytes, size_t len);
void byte_buf__u8(struct byte_buf *b, uint8_t v);
void byte_buf__u16(struct byte_buf *b, uint16_t v);
void byte_buf__u32(struct byte_buf *b, uint32_t v);
void byte_buf__u64(struct byte_buf *b, uint64_t v);
void byte_buf__uleb(struct byte_buf *b, uint64_t v);
/* Overwrites 4 or 8 bytes at off (a length written after its contents). */
void byte_buf__patch_u32(struct byte_buf *b, size_t off, uint32_t v);
void byte_buf__patch_u64(struct byte_buf *b, size_t off, uint64_t v);
void byte_buf__free(struct byte_buf *b);

/* The bitmap of a copy of len bytes: one bit per 8-byte word from the
 * copy's start (a tail of fewer than 8 bytes is never kept). */
static inline size_t compact_stack__words(size_t len)
{
	return len / 8;
}
static inline size_t compact_stack__bitmap_u64s(size_t len)
{
	return (compact_stack__words(len) + 63) / 64;
}
static inline void compact_stack__keep(uint64_t *keep, size_t word)
{
	keep[word / 64] |= 1ull << (word % 64);
}
static inline bool compact_stack__kept(const uint64_t *keep, size_t word)
{
	return keep[word / 64] >> (word % 64) & 1;
}

/* Does v look like a pointer worth keeping: into an executable mapping of
 * as, or into [stack_lo, stack_hi) (the thread's stack)? */
bool compact_stack__is_pointer(struct stacksnap_addrspace *as, uint64_t v,
			       uint64_t stack_lo, uint64_t stack_hi);

/* Pointer-preserving policy: marks in keep every word of the copy (at
 * base, len bytes) that is_pointer() accepts, the stack being the copy. */
void compact_stack__mark_pointers(struct stacksnap_addrspace *as,
				  const uint8_t *stack, size_t len,
				  uint64_t base, uint64_t *keep);

/* Marks the words overlapping [addr, addr + n) (clipped to the copy). */
void compact_stack__mark_range(uint64_t *keep, uint64_t base, size_t len,
			       uint64_t addr, size_t n);

/* Appends the run-length stream of the kept words of stack (len bytes
 * copied from address base) to out: pairs (ULEB128 zeroed words, ULEB128
 * kept words, the kept words) until every word is accounted for. keep
 * NULL keeps every word. With delta, each kept word is a ULEB128 of its
 * zigzag delta from its own address or from the previous kept word (2-4
 * bytes for a return address instead of 8); without, its 8 bytes. */
void compact_stack__encode(const uint8_t *stack, size_t len, uint64_t base,
			   const uint64_t *keep, bool delta, struct byte_buf *out);

/* Decodes a stream written by encode (same base and delta) into out (len
 * bytes, which the caller has zeroed: calloc'ed memory is, and pages a
 * large stack never keeps are then not even touched) from the cursor,
 * which must hold exactly the stream. Returns 0, or -EINVAL with *bad_off
 * set to the cursor offset of the problem (runs past len, truncated
 * words, bad word tags, bytes left over). */
int compact_stack__decode(struct cursor *c, uint8_t *out, size_t len,
			  uint64_t base, bool delta, size_t *bad_off);

#endif
