/* tp.h - the LTTng-UST tracepoint of the lttng-backtrace example: an event
 * carrying where it was taken and two backtraces of that point, one from
 * stacksnap_backtrace and one from glibc's backtrace() (for comparison),
 * as sequences of hex addresses. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER stacksnap_example

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./tp.h"

#if !defined(STACKSNAP_EXAMPLE_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define STACKSNAP_EXAMPLE_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
	stacksnap_example, backtrace,
	LTTNG_UST_TP_ARGS(const char *, where, const uint64_t *, ips,
			  unsigned int, n, const uint64_t *, glibc_ips,
			  unsigned int, glibc_n),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_string(where, where)
		lttng_ust_field_sequence_hex(uint64_t, ips, ips, unsigned int, n)
		lttng_ust_field_sequence_hex(uint64_t, glibc_ips, glibc_ips,
					     unsigned int, glibc_n)
	)
)

#endif

#include <lttng/tracepoint-event.h>
