/* trace_print.h - printing trace events, shared by `stacksnap trace` and
 * `stacksnap show` on an events file, so both print the same lines. */
#ifndef STACKSNAP_TOOL_TRACE_PRINT_H
#define STACKSNAP_TOOL_TRACE_PRINT_H

#include <stdbool.h>
#include <stdio.h>

#include "options.h"
#include "stacksnap.h"

/* Where and how events are printed. counts non-NULL: --count/--folded/
 * --format, each event's stack is counted (an event a sample, the event's
 * name as the root frame) instead of printed; the owner frees it. */
struct trace_printer {
	const struct options *print;	/* frame printing options */
	FILE *out;
	bool json;
	unsigned unwind;	/* STACKSNAP_TRACE_UNWIND_* (--json's "kernel") */
	struct stacksnap_stacks *counts;
	struct trace_memo *memo;	/* stacks seen, by pcs (trace_printer_free) */
};

/* What one event line shows: a live event or a saved one. */
struct trace_line {
	const char *name;
	uint64_t time_ns;
	const char *comm;
	pid_t pid, tid;
	unsigned cpu;
	const struct stacksnap_trace_field *fields;
	int nfields;
	uint32_t stack_bytes;
	const struct stacksnap_frame *frames;
	int nframes;
	enum stacksnap_end end;
	struct stacksnap_addrspace *as;
	/* --unwind=kernel|both: the in-kernel walk --json shows (its end
	 * reason, NULL when unknown: no "kernel" object; its pcs, bit 63 on
	 * exact ones), and for a live event (NULL for a saved one, whose file
	 * keeps neither) the comparison with the copy's walk and the hybrid. */
	const char *kernel_end;
	const uint64_t *kernel_pcs;
	int kernel_nframes;
	const struct stacksnap_trace_event *live;
	/* Python frames merged into frames (native_index), NULL/0: none;
	 * printed as --runtime (print->runtime) says. */
	const struct stacksnap_runtime_frame *rframes;
	size_t nrframes;
	const char *runtime_end;
	int64_t goid;	/* the Go goroutine the thread ran, 0: none known */
};

/* Symbolizes and prints (or counts) one event. Returns 0 or -ENOMEM. */
int trace_print_event(struct trace_printer *t, const struct trace_line *ev);
/* The counted stacks: folded lines (--folded), or (--count) most frequent
 * first, "COUNT FIRST" then the other frames, innermost first, indented.
 * Returns 0 or -ENOMEM. */
int trace_print_counts(struct trace_printer *t, bool folded);
/* The same, its failure said: "WHO: out of memory", or "WHO: writing PATH:
 * why" with the write's own cause (ENOSPC; PATH NULL: standard output),
 * the stream's error then cleared so that closing it does not say it
 * again as EIO. Returns 0 or EXIT_ERROR. */
int trace_print_counts_said(struct trace_printer *t, bool folded, const char *who,
			    const char *path);
/* Frees what the printer keeps besides counts (its owner frees those). */
void trace_printer_free(struct trace_printer *t);

#endif
