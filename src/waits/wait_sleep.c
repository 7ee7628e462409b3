/* wait_sleep.c - nanosleep/clock_nanosleep: when the sleep ends, from the
 * request the call was given (read from the target's memory). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "waits_internal.h"

static bool sleep_classify(struct stacksnap_waits *w, struct wait_thread *t)
{
	if (t->nr == NR_PAUSE || t->nr == NR_RT_SIGSUSPEND || t->nr == NR_RT_SIGTIMEDWAIT) {
		t->pub.kind = STACKSNAP_WAIT_SLEEP;
		t->pub.detail = "until a signal";
		t->pub.no_owner = "a signal wakes it";
		return true;
	}
	if (t->nr != NR_NANOSLEEP && t->nr != NR_CLOCK_NANOSLEEP &&
	    t->nr != NR_RESTART_SYSCALL)
		return false;
	t->pub.kind = STACKSNAP_WAIT_SLEEP;
	t->pub.no_owner = "a sleep has no owner: time wakes it";
	return true;
}

static int sleep_owners(struct stacksnap_waits *w, struct wait_thread *t)
{
	struct timespec req;
	uint64_t at;
	bool abs = false;

	if (t->pub.detail)
		return 0;
	/* A call the freeze interrupted was restarted by the kernel under
	 * another number, but the captured registers are the call's own:
	 * glibc's clock_nanosleep (sleep, nanosleep, usleep call it) is read
	 * with them. */
	if (t->nr == NR_RESTART_SYSCALL ||
	    (t->nr_guessed && !(t->fn[0] && strstr(t->fn[0], "nanosleep")))) {
		t->pub.detail = w->o.saved ? "the call's arguments were not saved"
			: "a timed wait the kernel restarted: its end is not known";
		return 0;
	}
	if (t->nr == NR_NANOSLEEP) {
		at = t->args[0];
	} else {
		abs = t->args[1] & 1; /* TIMER_ABSTIME */
		at = t->args[2];
	}
	if (waits__read(w, at, &req, sizeof(req)) || req.tv_nsec < 0 ||
	    req.tv_nsec >= 1000000000L) {
		t->pub.detail = w->o.saved ? "the call's arguments were not saved" : NULL;
		return 0;
	}
	if (abs) {
		struct timespec now;

		clock_gettime((clockid_t)t->args[0], &now);
		double left = (double)(req.tv_sec - now.tv_sec) +
			      (double)(req.tv_nsec - now.tv_nsec) / 1e9;
		t->pub.detail = waits__strf(w, "wakes in %.3f s (an absolute time)",
					    left);
	} else {
		t->pub.detail = waits__strf(w, "asked to sleep %.3f s",
					    (double)req.tv_sec + req.tv_nsec / 1e9);
	}
	return 0;
}

const struct wait_source_ops wait_sleep_ops = {
	.name = "sleeps",
	.classify = sleep_classify,
	.owners = sleep_owners,
};
