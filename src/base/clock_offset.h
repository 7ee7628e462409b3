/* clock_offset.h - CLOCK_REALTIME - CLOCK_MONOTONIC, measured: what turns
 * the monotonic times of trace events into wall-clock times (kept in
 * events files, written as a CTF clock's offset). */
#ifndef SS_BASE_CLOCK_OFFSET_H
#define SS_BASE_CLOCK_OFFSET_H

#include <stdint.h>

/* CLOCK_REALTIME - CLOCK_MONOTONIC now (ns), from the closest of a few
 * paired readings (as lttng-modules measures its clock offset). */
int64_t clock_realtime_offset_ns(void);

#endif
