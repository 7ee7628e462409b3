/* clock.h - the monotonic clock in nanoseconds, for timings and the ages
 * of things (one definition instead of one per file). */
#ifndef SS_BASE_CLOCK_H
#define SS_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
