/* trace_java.c - Java frames in trace events: the followed process's
 * HotSpot JVM (the first followed process that has one), its compiled
 * frames stepped in the user-space walk of an event's stack copy and
 * every Java frame named from the JVM's own tables (stacksnap_jvm__*,
 * docs/jit.md). A command's JVM maps libjvm.so and fills its tables
 * after the exec: it is looked for again at its events for a while. */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "trace/trace_internal.h"

/* Invariant: jvm set once found; until then tries count the looks. */
struct trace_java {
	pid_t pid;
	struct stacksnap_jvm *jvm;
	unsigned tries;
	uint64_t last_ns;
	struct stacksnap_runtime_frame *rframes; /* cap of them */
	size_t cap;
	struct stacksnap_runtime_step *steps; /* the last event's, capsteps */
	size_t capsteps;
};

/* Looks at most every 20 ms, 250 times (5 s of a command's start). */
#define JAVA_LOOK_NS 20000000ull
#define JAVA_MAX_LOOKS 250

static void look(struct stacksnap_trace *tr, struct trace_java *tj)
{
	uint64_t now = clock_monotonic_ns();

	if (tj->jvm || tj->tries >= JAVA_MAX_LOOKS ||
	    (tj->tries && now - tj->last_ns < JAVA_LOOK_NS))
		return;
	tj->tries++;
	tj->last_ns = now;
	tj->jvm = stacksnap_jvm__open(tr->ctx, tj->pid,
				      stacksnap_procs__addrspace(tr->procs, tj->pid));
	if (tj->jvm)
		stacksnap_jvm__steppers(tj->jvm, tr->uw);
}

void trace__java_follow(struct stacksnap_trace *tr, pid_t tgid)
{
	if (tr->o.no_runtime || tr->java)
		return;
	if (!(tr->java = calloc(1, sizeof(*tr->java))))
		return;
	tr->java->pid = tgid;
	look(tr, tr->java);
}

void trace__java_before(struct stacksnap_trace *tr, pid_t pid)
{
	if (!tr->java)
		return;
	if (tr->java->pid == pid)
		look(tr, tr->java);
	/* Its stepper is for its own process's walks. */
	stacksnap_jvm__enable(tr->java->jvm, tr->java->pid == pid);
}

void trace__java_event(struct stacksnap_trace *tr, struct stacksnap_trace_event *ev)
{
	struct trace_java *tj = tr->java;
	size_t want;
	int n;

	if (!tj || !tj->jvm || ev->pid != tj->pid || ev->nframes <= 0)
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
	/* The walk's steps, for --save, before naming forgets them. */
	const struct stacksnap_runtime_step *steps;
	size_t nsteps = stacksnap_jvm__steps(tj->jvm, &steps);
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
	n = stacksnap_jvm__frames(tj->jvm, ev->frames, (size_t)ev->nframes,
				  tj->rframes, tj->cap);
	if (n <= 0)
		return;
	ev->rframes = tj->rframes;
	ev->nrframes = (size_t)n;
}

void trace__java_free(struct stacksnap_trace *tr)
{
	if (!tr->java)
		return;
	stacksnap_jvm__free(tr->java->jvm);
	free(tr->java->rframes);
	free(tr->java->steps);
	free(tr->java);
	tr->java = NULL;
}
