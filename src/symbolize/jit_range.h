/* jit_range.h - the lookup the JIT symbol files share: among entries
 * sorted by start, the one covering a pc that was written last (code
 * regions are reused: a later load over an earlier one wins). */
#ifndef SS_SYMBOLIZE_JIT_RANGE_H
#define SS_SYMBOLIZE_JIT_RANGE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* How many entries starting at or below a pc are looked at: overlapping
 * regions are rare and short-lived, so the newest covering entry is
 * among the last few that start before the pc. */
#define JIT_RANGE_SCAN_BACK 16

/* entries: n records of stride bytes, each starting with uint64_t start,
 * end ([start, end)), sorted by start, with a uint32_t write order at
 * seq_off. Returns the index of the newest record covering pc, or -1. */
static inline ptrdiff_t jit_range__newest(const void *entries, size_t n, size_t stride,
					  size_t seq_off, uint64_t pc)
{
	const unsigned char *b = entries;
	size_t lo = 0, hi = n, stop;
	ptrdiff_t best = -1;
	uint32_t best_seq = 0;

	while (lo < hi) { /* the last record with start <= pc */
		size_t mid = lo + (hi - lo) / 2;
		uint64_t start;

		memcpy(&start, b + mid * stride, sizeof(start));
		if (start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	stop = lo > JIT_RANGE_SCAN_BACK ? lo - JIT_RANGE_SCAN_BACK : 0;
	for (size_t i = lo; i > stop; i--) {
		const unsigned char *r = b + (i - 1) * stride;
		uint64_t end;
		uint32_t seq;

		memcpy(&end, r + sizeof(uint64_t), sizeof(end));
		memcpy(&seq, r + seq_off, sizeof(seq));
		if (pc < end && (best < 0 || seq > best_seq)) {
			best = (ptrdiff_t)(i - 1);
			best_seq = seq;
		}
	}
	return best;
}

#endif
