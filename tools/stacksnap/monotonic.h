/* monotonic.h - the CLI's monotonic clock in nanoseconds, for durations,
 * progress lines and --stats timings (tools/ sees only include/, so it
 * keeps its own instead of the library's src/base/clock.h). */
#ifndef STACKSNAP_TOOL_MONOTONIC_H
#define STACKSNAP_TOOL_MONOTONIC_H

#include <stdint.h>
#include <time.h>

static inline uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
