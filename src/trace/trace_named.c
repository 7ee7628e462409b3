/* trace_named.c - Java and JavaScript frames in trace events: the
 * followed process's JVM or V8 (the first followed process that has
 * one), its compiled Java frames stepped in the user-space walk of an
 * event's stack copy and every frame named from the runtime's own
 * tables (stacksnap_vm__*, docs/jit.md), frame slots from the copy. A
 * command's runtime maps its image and fills its tables after the exec:
 * it is looked for again at its events for a while. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "trace/trace_internal.h"

/* Invariant: vm set once found; until then tries count the looks. */
struct trace_named {
	pid_t pid;
	struct stacksnap_vm *vm;
	unsigned tries;
	uint64_t last_ns;
	struct stacksnap_runtime_frame *rframes; /* cap of them */
	size_t cap;
	struct stacksnap_runtime_step *steps; /* the last event's, capsteps */
	size_t capsteps;
};

/* Looks at most every 20 ms, 250 times (5 s of a command's start). */
#define NAMED_LOOK_NS 20000000ull
#define NAMED_MAX_LOOKS 250

static void look(struct stacksnap_trace *tr, struct trace_named *tj)
{
	uint64_t now = clock_monotonic_ns();

	if (tj->vm || tj->tries >= NAMED_MAX_LOOKS ||
	    (tj->tries && now - tj->last_ns < NAMED_LOOK_NS))
		return;
	tj->tries++;
	tj->last_ns = now;
	tj->vm = stacksnap_vm__open(tr->ctx, tj->pid,
				      stacksnap_procs__addrspace(tr->procs, tj->pid));
	if (tj->vm)
		stacksnap_vm__steppers(tj->vm, tr->uw);
}

void trace__named_follow(struct stacksnap_trace *tr, pid_t tgid)
{
	if (tr->o.no_runtime || tr->named)
		return;
	if (!(tr->named = calloc(1, sizeof(*tr->named))))
		return;
	tr->named->pid = tgid;
	look(tr, tr->named);
}

void trace__named_before(struct stacksnap_trace *tr, pid_t pid)
{
	if (!tr->named)
		return;
	if (tr->named->pid == pid)
		look(tr, tr->named);
	/* Its stepper is for its own process's walks. */
	stacksnap_vm__enable(tr->named->vm, tr->named->pid == pid);
}

void trace__named_event(struct stacksnap_trace *tr, struct stacksnap_trace_event *ev)
{
	struct trace_named *tj = tr->named;
	const void *stack = NULL;
	size_t want, len = 0;
	uint64_t base = 0;
	bool compact;
	int n;

	if (!tj || !tj->vm || ev->pid != tj->pid || ev->nframes <= 0)
		return;
	/* Methods inlined at a call give a native frame several. */
	want = 4 * (size_t)ev->nframes + 64;
	if (want > tj->cap) {
		void *grown = realloc(tj->rframes, want * sizeof(*tj->rframes));

		if (!grown)
			return;
		tj->rframes = grown;
		tj->cap = want;
	}
	/* A compacted copy is not one range: slots then read live. */
	compact = ev->capture && (ev->capture->flags & STACKSNAP_CAPTURE_COMPACT);
	if (ev->capture && ev->stack && !compact) {
		stack = ev->stack;
		len = ev->capture->data_len < ev->capture->stack_len
			? ev->capture->data_len : ev->capture->stack_len;
		base = ev->capture->stack_start;
	}
	/* The walk's steps, for --save, before naming forgets them. */
	const struct stacksnap_runtime_step *steps;
	size_t nsteps = stacksnap_vm__steps(tj->vm, &steps);
	if (nsteps > tj->capsteps) {
		void *grown = realloc(tj->steps, nsteps * sizeof(*tj->steps));

		if (grown) {
			tj->steps = grown;
			tj->capsteps = nsteps;
		}
	}
	if (nsteps && nsteps <= tj->capsteps) {
		memcpy(tj->steps, steps, nsteps * sizeof(*steps));
		ev->rsteps = tj->steps;
		ev->nrsteps = nsteps;
	}
	n = stacksnap_vm__frames(tj->vm, stack, len, base, ev->frames,
				 (size_t)ev->nframes, tj->rframes, tj->cap);
	if (n <= 0)
		return;
	ev->rframes = tj->rframes;
	ev->nrframes = (size_t)n;
}

void trace__named_free(struct stacksnap_trace *tr)
{
	if (!tr->named)
		return;
	stacksnap_vm__free(tr->named->vm);
	free(tr->named->rframes);
	free(tr->named->steps);
	free(tr->named);
	tr->named = NULL;
}
