/* trace_hold.h - a command run by `trace -- CMD` held at its exit (each of
 * its processes and threads, through ptrace's exit stop) until the trace
 * has read the events it raised, while its mappings still exist. */
#ifndef STACKSNAP_TOOL_TRACE_HOLD_H
#define STACKSNAP_TOOL_TRACE_HOLD_H

#include <stdbool.h>
#include <sys/types.h>

/* Called at an exit stop: reads every event the ring buffer holds. */
typedef void (*trace_hold_drain_fn)(void *arg);

/* Attaches to child (started, not run yet) so that it and every process
 * and thread it creates stop at their exit. Returns 0, or -errno (then
 * nothing is held: the trace goes on as without). */
int trace_hold__attach(pid_t child);

/* Answers every stop waiting (non-blocking; blocking: until child has
 * exited): an exit stop after drain(arg), signals given back, group stops
 * kept. Returns true, with *status set, once child has exited. */
bool trace_hold__poll(pid_t child, bool block, int *status,
		      trace_hold_drain_fn drain, void *arg);

#endif
