/* trace_go.h - the goroutine each traced event's thread ran, for a Go
 * program (trace_go.c): its id, read live at the event's report. */
#ifndef STACKSNAP_TOOL_TRACE_GO_H
#define STACKSNAP_TOOL_TRACE_GO_H

#include <stdint.h>
#include <sys/types.h>

#include "stacksnap.h"

/* Per process: its goroutine reader, or none (not a Go program). */
struct trace_go {
	struct { pid_t pid; struct stacksnap_goroutines *g; } *v;
	size_t n, cap;
};

/* The goid thread regs ran in process pid, 0 when none is known (not a
 * Go program, not in Go code, gone). The first event of a process opens
 * its executable once. */
int64_t trace_go_goid(struct trace_go *tg, pid_t pid, const uint64_t *regs);
void trace_go_free(struct trace_go *tg);

#endif
