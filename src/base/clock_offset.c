/* clock_offset.c - measuring CLOCK_REALTIME - CLOCK_MONOTONIC. */
#include "base/clock_offset.h"

#include <time.h>

int64_t clock_realtime_offset_ns(void)
{
	int64_t best = 0;
	uint64_t best_gap = UINT64_MAX;

	/* The reading whose two monotonic samples are closest bounds the
	 * realtime sample best. */
	for (int i = 0; i < 10; i++) {
		struct timespec m0, r, m1;
		uint64_t a, b, gap;
		int64_t rt;

		clock_gettime(CLOCK_MONOTONIC, &m0);
		clock_gettime(CLOCK_REALTIME, &r);
		clock_gettime(CLOCK_MONOTONIC, &m1);
		a = (uint64_t)m0.tv_sec * 1000000000u + (uint64_t)m0.tv_nsec;
		b = (uint64_t)m1.tv_sec * 1000000000u + (uint64_t)m1.tv_nsec;
		rt = (int64_t)r.tv_sec * 1000000000 + r.tv_nsec;
		gap = b - a;
		if (gap < best_gap) {
			best_gap = gap;
			best = rt - (int64_t)(a + gap / 2);
		}
	}
	return best;
}
