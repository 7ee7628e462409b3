/* jit_range.h - the lookup the JIT symbol files share: among entries
 * sorted by start, the one covering a pc that was written last (code
 * regions are reused: a later load over an earlier one wins). The entries
 * are painted once, after each read, into stretches of addresses each
 * held by its newest covering entry, so that a lookup is one binary
 * search however the ranges nest (a scan back over the last few entries
 * missed a large range with more than a few smaller ones inside it:
 * fuzz_jitdump found it). */
#ifndef SS_SYMBOLIZE_JIT_RANGE_H
#define SS_SYMBOLIZE_JIT_RANGE_H

#include <stddef.h>
#include <stdint.h>

/* One stretch [start, end) whose newest covering entry is entries[idx]. */
struct jit_range_seg {
	uint64_t start, end;
	size_t idx;
};

/* Invariant: segs[0..n) sorted by start, disjoint, non-empty. */
struct jit_range_index {
	struct jit_range_seg *segs;
	size_t n;
};

/* (Re)builds ix from entries: n records of stride bytes, each starting
 * with uint64_t start, end ([start, end); empty ranges hold nothing),
 * sorted by start, with a uint32_t write order at seq_off. Returns 0, or
 * -ENOMEM (ix unchanged). */
int jit_range__index(struct jit_range_index *ix, const void *entries,
		     size_t n, size_t stride, size_t seq_off);

/* The index of the newest entry covering pc, or -1. */
ptrdiff_t jit_range__find(const struct jit_range_index *ix, uint64_t pc);

void jit_range__index_free(struct jit_range_index *ix);

#endif
