/* profile_go.h - `stacksnap profile --goroutines` (profile_go.c): a Go
 * program's goroutine profile, counted as Go's runtime/pprof "goroutine"
 * profile counts them, called by cmd_profile.c with what its command
 * line said. */
#ifndef STACKSNAP_TOOL_PROFILE_GO_H
#define STACKSNAP_TOOL_PROFILE_GO_H

#include <stdbool.h>
#include <sys/types.h>

#include "profile_out.h"
#include "stacksnap.h"

struct goroutine_profile_args {
	struct stacksnap_ctx *ctx;
	pid_t pid;			/* -p */
	unsigned freq;			/* -F: samples a second with duration */
	double duration;		/* seconds; 0: one count, now */
	bool stats;
	const struct profile_out *out;
};

/* Counts the goroutines of a->pid per stack: once (the goroutines now, as
 * Go's goroutine profile), or, with a duration, every 1/freq s until it
 * ends, the process ends or a stop signal; writes the profile. Returns an
 * exit status. */
int profile_goroutines_run(const struct goroutine_profile_args *a);

/* Adds gs[0..n) to st as Go's goroutine profile counts them: system
 * goroutines (started in the runtime, runtime.main aside) and wrapper
 * frames (STACKSNAP_RFRAME_WRAPPER) left out, a sample each with, as
 * labels, the program's own (pprof.Do), "wait_reason" (when waiting) and
 * "status" (the runtime's state name: waiting, runnable, running,
 * syscall...); a "[truncated]" frame above a walk that ended early.
 * *added: the goroutines counted. Returns 0 or -errno. The one count of
 * goroutines: profile, watch --goroutines and the dump's and show's
 * profile outputs (profile_out_threads) all use it. */
int profile_go_add(struct stacksnap_stacks *st,
		   const struct stacksnap_goroutine *gs, size_t n,
		   size_t *added);

#endif
