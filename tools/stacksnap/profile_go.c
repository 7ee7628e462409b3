/* profile_go.c - `stacksnap profile --goroutines`: a Go program's
 * goroutines counted per stack as Go's runtime/pprof "goroutine" profile
 * counts them (system goroutines left out, inlined calls as frames), the
 * state and wait reason as pprof labels; one count now, or one every 1/F
 * seconds over --duration, each read during a freeze of the program. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "monotonic.h"
#include "options.h"
#include "profile_go.h"
#include "stop_signal.h"
#include "subcommands.h"

/* As the runtime's isSystemGoroutine (traceback.go) decides, from the
 * stack: a goroutine whose start function (the outermost frame under
 * runtime.goexit) is in the runtime, runtime.main aside. A walk that did
 * not reach the start says nothing: the goroutine is counted. */
static bool is_system(const struct stacksnap_goroutine *g)
{
	const char *start = NULL;

	if (g->end || !g->nframes)
		return false;
	for (size_t i = g->nframes; i-- > 0;) {
		const char *fn = g->frames[i].function;

		if (strcmp(fn, "runtime.goexit") == 0)
			continue;
		start = fn;
		break;
	}
	return start && strncmp(start, "runtime.", 8) == 0 &&
	       strcmp(start, "runtime.main") != 0;
}

/* The runtime's state name (the "status" label): the dump's status is
 * the wait reason of a waiting goroutine. */
static const char *state_name(const struct stacksnap_goroutine *g)
{
	return g->wait_reason ? "waiting" : g->status;
}

int profile_go_add(struct stacksnap_stacks *st,
		   const struct stacksnap_goroutine *gs, size_t n,
		   size_t *added)
{
	*added = 0;
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_goroutine *g = &gs[i];
		struct stacksnap_stack_frame *fr;
		size_t k = 0;
		int err;

		if (is_system(g))
			continue;
		fr = calloc(g->nframes + g->nlabels + 3, sizeof(*fr));
		if (!fr)
			return -ENOMEM;
		for (size_t j = 0; j < g->nframes; j++) {
			const struct stacksnap_runtime_frame *f = &g->frames[j];

			/* Left out of Go's profiles (traceback.go). */
			if (f->flags & STACKSNAP_RFRAME_WRAPPER)
				continue;
			fr[k++] = (struct stacksnap_stack_frame){
				.name = f->function, .file = f->file,
				.line = (int)f->line, .addr = f->pc,
				.inlined = f->flags & STACKSNAP_RFRAME_INLINED,
				.kind = STACKSNAP_KIND_USER };
		}
		if (g->end)
			fr[k++] = (struct stacksnap_stack_frame){
				.name = "[truncated]",
				.kind = STACKSNAP_KIND_UNKNOWN };
		/* The program's own labels (pprof.Do), as Go's profile
		 * carries them. */
		for (size_t j = 0; j < g->nlabels; j++)
			fr[k++] = (struct stacksnap_stack_frame){
				.name = g->labels[2 * j],
				.file = g->labels[2 * j + 1],
				.kind = STACKSNAP_KIND_LABEL };
		/* Outermost first in folded lines: status, then reason. */
		if (g->wait_reason)
			fr[k++] = (struct stacksnap_stack_frame){
				.name = "wait_reason", .file = g->wait_reason,
				.kind = STACKSNAP_KIND_LABEL };
		fr[k++] = (struct stacksnap_stack_frame){
			.name = "status", .file = state_name(g),
			.kind = STACKSNAP_KIND_LABEL };
		err = stacksnap_stacks__add(st, fr, k, 1);
		free(fr);
		if (err)
			return err;
		++*added;
	}
	return 0;
}

/* One count: the program frozen, its goroutines read and walked. */
static int sample_once(const struct goroutine_profile_args *a,
		       struct stacksnap_stacks *st, size_t *counted,
		       uint64_t *freeze_ns)
{
	STACKSNAP_OPTS(stacksnap_snapshot_opts, sopts, .goroutines = true);
	struct stacksnap_snapshot *snap =
		stacksnap_snapshot__capture(a->ctx, a->pid, &sopts);
	struct stacksnap_snapshot_stats ss;
	size_t n;
	int err;

	if (!snap)
		return -errno;
	stacksnap_snapshot__stats(snap, &ss);
	*freeze_ns += ss.freeze_ns;
	n = stacksnap_snapshot__goroutine_count(snap);
	err = n ? profile_go_add(st, stacksnap_snapshot__goroutine(snap, 0),
				 n, counted)
		: -ENOENT;
	stacksnap_snapshot__free(snap);
	return err;
}

int profile_goroutines_run(const struct goroutine_profile_args *a)
{
	const char *prefix = "stacksnap profile";
	uint64_t period = 1000000000ull / (a->freq ? a->freq : 1);
	uint64_t t0 = monotonic_ns(), next = t0, freeze_ns = 0, samples = 0;
	size_t counted = 0, total = 0;
	int rc = EXIT_OK, err = 0;
	FILE *out;

	if ((rc = cli_check_target(a->pid, false)))
		return rc;
	/* As Go names them: one goroutine counted a sample. */
	STACKSNAP_OPTS(stacksnap_stacks_opts, sopts, .sample_type = "goroutine",
		       .sample_unit = "count",
		       .period_ns = a->duration > 0 ? period : 0,
		       .period_type = "wall",
		       .time_ns = (uint64_t)time(NULL) * 1000000000ull);
	struct stacksnap_stacks *st = stacksnap_stacks__new(&sopts);

	if (!st) {
		fprintf(stderr, "stacksnap: out of memory\n");
		return EXIT_ERROR;
	}
	if (!(out = profile_out_open(a->out, prefix))) {
		stacksnap_stacks__free(st);
		return EXIT_ERROR;
	}
	stop_signal_catch();
	for (;;) {
		err = sample_once(a, st, &counted, &freeze_ns);
		if (err == -ENOENT && !samples) {
			fprintf(stderr, "%s: pid %d: no goroutines (not a Go "
				"program, or its goroutine list could not be "
				"read: -v says why)\n", prefix, (int)a->pid);
			rc = EXIT_ERROR;
			break;
		}
		if (err == -ESRCH || err == -ENOENT) {
			err = 0; /* ended meanwhile: the counts so far */
			break;
		}
		if (err) {
			fprintf(stderr, "%s: pid %d: %s\n", prefix, (int)a->pid,
				strerror(-err));
			rc = err == -EPERM ? EXIT_NOT_PERMITTED : EXIT_ERROR;
			break;
		}
		samples++;
		total += counted;
		if (a->duration <= 0 || stop_signal)
			break;
		next += period;
		uint64_t now = monotonic_ns();

		if ((double)(now - t0) / 1e9 >= a->duration)
			break;
		if (next > now) {
			struct timespec ts = { (time_t)((next - now) / 1000000000u),
					       (long)((next - now) % 1000000000u) };

			nanosleep(&ts, NULL);
		} else {
			next = now; /* slower than -F: as fast as it goes */
		}
		if (stop_signal)
			break;
	}
	if (rc == EXIT_OK)
		rc = profile_out_write(a->out, prefix, out, st, "goroutine");
	else
		profile_out_abandon(a->out, out);
	if (a->stats)
		fprintf(stderr, "profile: %" PRIu64 " counts, %zu goroutines "
			"counted, %zu distinct stacks, %.3f ms frozen\n",
			samples, total, stacksnap_stacks__distinct(st),
			freeze_ns / 1e6);
	stacksnap_stacks__free(st);
	return rc;
}
