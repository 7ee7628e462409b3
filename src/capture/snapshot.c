/* snapshot.c - live capture, its steps in order: threads asleep in the
 * kernel read without stopping them (a BPF task iterator, bpf/nonstop.c),
 * the others seized and interrupted, registers read and stacks copied in
 * one batched read, detached; everything that can be read before the
 * freeze (thread list, names, states, stack mappings) is read before it,
 * so the target is stopped only for the ptrace round trips and the copy.
 * The consistency argument is in docs/nonstop-capture.md; each step is a
 * sibling file (capture_internal.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addrspace/module.h" /* struct stacksnap_ctx */
#include "base/clock.h"
#include "base/mm_task.h"
#include "base/opts.h"
#include "capture/capture_internal.h"

#define DEFAULT_STOP_TIMEOUT_MS 1000
/* Final witness checks go on, each round interrupting only the threads
 * that ran since their read, until one finds nothing moved. After
 * NONSTOP_ROUNDS rounds with news, every thread that ran at any time
 * during the capture (moves > 0) is interrupted with them: on a
 * target whose threads keep waking (hundreds of periodic threads) each
 * round would otherwise catch a few more and hold the stopped ones a round
 * longer. After NONSTOP_MAX_ROUNDS, every thread still read non-stop is
 * interrupted (no check is needed then). Neither is a time budget: under
 * load one round takes milliseconds, and stopping every sleeper costs
 * more still. */
#define NONSTOP_ROUNDS 4
#define NONSTOP_MAX_ROUNDS 12
/* Below this many threads asleep (S or D) at the scan, and with none in D,
 * the default capture stops every thread: loading the iterator (~5 ms)
 * and its runs make the command 1.6-2.5x longer there, and what they save
 * (the freeze of a few sleepers, ~15-30 us each) stayed within the noise
 * of the stall measured (docs/nonstop-capture.md, "When it pays"). */
#define NONSTOP_MIN_ASLEEP 16

int stacksnap_snapshot__check(struct stacksnap_ctx *ctx, pid_t pid)
{
	if (pid <= 0)
		return fail(-EINVAL);
	int err = capture_check_target(pid, ctx ? &ctx->log : NULL);

	if (ctx)
		ctx->checked_pid = err ? 0 : pid;
	return err ? fail(err) : 0;
}

static size_t count_interrupted(const struct stacksnap_snapshot *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n; i++)
		k += s->threads[i].interrupted;
	return k;
}

/* The caller's options, defaults filled in; -EINVAL when they or pid are
 * not valid. */
static int take_opts(struct stacksnap_snapshot_opts *o,
		     const struct stacksnap_snapshot_opts *opts, pid_t pid)
{
	if (opts_in(o, sizeof(*o), opts, 0))
		return -EINVAL;
	/* By default a copy holds the whole stack in use (from sp to the top
	 * of its mapping or its thread pointer), as deep as the target's own
	 * limit lets it grow: a copy is the part in use only, so ordinary
	 * stacks cost what they did. */
	if (!o->stack_size && pid > 0)
		o->stack_size = capture_stack_limit(pid);
	if (!o->stop_timeout_ms)
		o->stop_timeout_ms = DEFAULT_STOP_TIMEOUT_MS;

	return pid > 0 ? 0 : -EINVAL;
}

/* Before the freeze: tasks, names, states and writable mappings. */
static int read_before_freeze(struct stacksnap_snapshot *s,
			      const struct stacksnap_snapshot_opts *o)
{
	int err = capture__scan_tasks(s, o);

	if (err >= 0)
		err = o->no_copy ? 0 : capture__rw_maps_of(s, o, &s->maps, &s->nmaps);
	if (err >= 0 && !o->no_copy)
		s->start_stack = capture_start_stack(s->pid);
	if (err < 0)
		return err == -ENOENT ? -ESRCH : err;
	return 0;
}

/* The buffer of the copies the freeze takes, faulted in before it (see
 * capture_prefault_kernel()): room for the usual stack of every thread
 * it may stop. Threads proven read by a clean settle run are not among
 * them: at 65 threads the prefault of all (4 MiB, ~2 ms) was a third of
 * what the non-stop path adds to the command, for copies never taken. */
static int prefault_copies(struct stacksnap_snapshot *s,
			   const struct stacksnap_snapshot_opts *o)
{
	size_t stopped = 0;

	for (size_t i = 0; i < s->n; i++)
		stopped += !(s->settled && s->threads[i].pub.nonstop);
	size_t prefault = stopped * (o->stack_size < PREFAULT_PER_THREAD
					     ? o->stack_size : PREFAULT_PER_THREAD);
	if (prefault > PREFAULT_MAX)
		prefault = PREFAULT_MAX;
	if (o->no_copy)
		prefault = 0;
	s->stack_bytes = malloc(prefault ? prefault : 1);
	if (!s->stack_bytes)
		return -ENOMEM;
	capture_prefault_kernel(s->stack_bytes, prefault);
	s->stack_cap = prefault;
	return 0;
}

/* The non-stop reads, or ns_reason says why every thread is stopped. */
static void choose_path(struct stacksnap_snapshot *s,
			const struct stacksnap_snapshot_opts *o,
			const struct log_sink *log)
{
	unsigned asleep = 0, in_d = 0;

	for (size_t i = 0; i < s->n; i++) {
		asleep += s->threads[i].pub.state == 'S' || s->threads[i].pub.state == 'D';
		in_d += s->threads[i].pub.state == 'D';
	}
	if (o->freeze_all)
		snprintf(s->ns_reason, sizeof(s->ns_reason), "--freeze-all asked for");
	else if (s->go && !o->nonstop)
		snprintf(s->ns_reason, sizeof(s->ns_reason),
			 "a Go program: its goroutines are read with every "
			 "thread stopped (--nonstop reads them without)");
	else if (o->hold || o->no_copy)
		snprintf(s->ns_reason, sizeof(s->ns_reason),
			 "threads held for a live unwind are all stopped");
	else if (!o->nonstop && asleep < NONSTOP_MIN_ASLEEP && !in_d)
		snprintf(s->ns_reason, sizeof(s->ns_reason),
			 "%u threads asleep: the non-stop path pays from %u "
			 "(--nonstop forces it)", asleep, NONSTOP_MIN_ASLEEP);
	else
		capture__start_nonstop(s, o, log);
}

/* One round of the freeze: the threads not read non-stop (all of them
 * without the iterator) stopped, their registers read and their stacks
 * copied, each phase timed in the stats. *interrupted: the round
 * interrupted a thread. */
static int freeze_round(struct stacksnap_snapshot *s,
			const struct stacksnap_snapshot_opts *o, uint64_t deadline,
			unsigned round, bool *interrupted,
			const struct log_sink *log)
{
	uint64_t t_begin = clock_monotonic_ns();
	size_t interrupted_before = count_interrupted(s);
	int err;

	/* From the second round on, a check follows whenever a thread is
	 * still read non-stop. */
	err = capture__freeze_rest(s, o, deadline,
				   !round || !s->ns || !s->ns_stats.read_nonstop, log);
	*interrupted = count_interrupted(s) != interrupted_before;
	if (err)
		return err;
	uint64_t t_stopped = clock_monotonic_ns();
	capture__read_regs(s);
	uint64_t t_regs = clock_monotonic_ns();
	if (!o->no_copy)
		err = capture__copy_stacks(s);
	s->t_copied = clock_monotonic_ns();
	if (s->freeze_start)
		s->stats.stop_ns += t_stopped - (round ? t_begin : s->freeze_start);
	s->stats.regs_ns += t_regs - t_stopped;
	s->stats.copy_ns += s->t_copied - t_regs;
	return err;
}

/* The freeze, then, while the threads are stopped, the check that every
 * thread read non-stop has not run since it was read; those that ran are
 * interrupted too, and checked again, a few rounds at most. o is kept in
 * s->copy_opts until finish(). */
static int freeze_and_check(struct stacksnap_snapshot *s,
			    const struct stacksnap_snapshot_opts *o,
			    const struct log_sink *log)
{
	uint64_t deadline = clock_monotonic_ns() + (uint64_t)o->stop_timeout_ms * 1000000u;

	s->copy_opts = o;
	s->copy_early = !o->no_copy;
	if (!o->no_realtime && !o->hold)
		capture__realtime_enter(s);
	for (unsigned round = 0;; round++) {
		bool interrupted;
		int err = freeze_round(s, o, deadline, round, &interrupted, log);

		if (err)
			return err;
		/* Before the witness check: a round whose check finds a
		   thread moved is followed by another, which copies again. */
		capture__runtime_take(s);
		if (!s->ns || !s->ns_stats.read_nonstop)
			return 0;
		if (!round && s->settled && !interrupted)
			return 0; /* proven by settle()'s clean run */
		/* The threads that ran since their read, read again with the
		 * rest stopped: a clean run proves them all. */
		if (!round) {
			if (capture__resettle(s, o, log))
				return 0;
			/* Not clean: the threads it found running are to be
			 * interrupted, and the next round's check proves the
			 * rest (it is not moves that call for that round:
			 * the threads demoted here no longer count as read). */
			continue;
		}
		if (round + 1 == NONSTOP_MAX_ROUNDS) {
			/* Still moving: stop the rest as well; no check is
			 * needed once every thread is stopped. */
			log_info(log, "pid %d: threads read non-stop keep "
				      "running; stopping the %u left", s->pid,
				 s->ns_stats.read_nonstop);
			capture__demote_all(s);
			continue;
		}
		int moved = capture__check_witnesses(s, o);
		if (moved < 0) {
			log_info(log, "pid %d: the witness check failed (%s); "
				      "stopping every thread", s->pid, strerror(-moved));
			continue; /* all demoted */
		}
		/* Those that ran, and only those, are interrupted by the
		 * next round: reading them again non-stop here (as settle()
		 * does before the freeze) kept the stopped threads waiting
		 * longer than the freeze of the few that moved takes. Each
		 * round with news interrupts one thread at least, so the
		 * rounds end; the budget bounds their time. */
		if (!moved)
			return 0;
		if (round + 1 == NONSTOP_ROUNDS)
			for (size_t i = 0; i < s->n; i++)
				if (s->threads[i].pub.nonstop && s->threads[i].moves)
					capture__demote(s, &s->threads[i], false);
	}
}

/* After the last round: the threads let go (unless held), the mappings
 * dropped (the copies are taken) and the stats completed. */
static void finish(struct stacksnap_snapshot *s,
		   const struct stacksnap_snapshot_opts *o, uint64_t t0)
{
	s->t_copied = clock_monotonic_ns(); /* the detach phase starts after the checks */
	s->held = o->hold;
	s->copy_early = false; /* maps and o live no longer */
	s->copy_opts = NULL;
	if (!s->held)
		capture__thaw(s);
	free(s->maps);
	s->maps = NULL;
	s->nmaps = 0;
	s->stats.threads = (unsigned)s->n;
	s->stats.capture_ns = clock_monotonic_ns() - t0;
	for (size_t i = 0; i < s->n; i++)
		s->ns_stats.interrupted += s->threads[i].interrupted;
}

/* Threads that did not stop are reported in the snapshot; only when every
 * thread exited is the process gone. */
static bool all_gone(const struct stacksnap_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].pub.error != STACKSNAP_THREAD_GONE &&
		    s->threads[i].pub.error != STACKSNAP_THREAD_EXITED)
			return false;
	return true;
}

static void log_failure(const struct log_sink *log, pid_t pid, int err)
{
	char why[320];

	if (err == -EPERM)
		log_err(log, "pid %d: ptrace not permitted (%s)", pid,
			stacksnap_why_not_permitted(STACKSNAP_REFUSED_PTRACE, pid, why,
						    sizeof(why)));
	else if (err == -ESRCH)
		log_err(log, "pid %d: the process exited during the capture",
			pid);
	else if (err == -EINTR)
		log_info(log, "pid %d: capture cancelled; every thread detached",
			 pid);
	else if (err != -EBUSY)
		log_err(log, "pid %d: capture failed: %s", pid, strerror(-err));
}

struct stacksnap_snapshot *
stacksnap_snapshot__capture(struct stacksnap_ctx *ctx, pid_t pid,
			    const struct stacksnap_snapshot_opts *opts)
{
	struct stacksnap_snapshot_opts o = { 0 };
	const struct log_sink *log = ctx ? &ctx->log : NULL;
	struct stacksnap_snapshot *s;
	uint64_t t0 = clock_monotonic_ns();
	int err = take_opts(&o, opts, pid);

	/* A process the caller's check passed that is now gone or a zombie
	 * exited during the caller's capture: said so, not "no such
	 * process" (which reads as a wrong pid). */
	if (!err && ctx && ctx->checked_pid == pid) {
		err = capture_check_target(pid, NULL);
		if (err == -ESRCH || err == -ECHILD) {
			log_err(log, "pid %d: the process exited during the capture",
				pid);
			err = -ESRCH;
		} else if (err) {
			err = capture_check_target(pid, log);
		}
	} else if (!err) {
		err = capture_check_target(pid, log);
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->pid = pid;
	s->mm_pid = mm_task_of(pid);
	s->task_fd = -1;
	s->stop_timeout_ms = o.stop_timeout_ms;
	err = read_before_freeze(s, &o);
	if (err)
		goto fail_detach;
	if (o.goroutines && !o.ntids)
		capture__go_prepare(s, ctx);
	else if (o.goroutines)
		log_info(log, "pid %d: goroutines are listed only with every "
			 "thread (not with a thread list)", pid);
	/* A Go program: its list is read with every thread stopped, unless
	 * non-stop was asked for (what changes under the read is marked):
	 * choose_path says so. */
	capture__runtime_detect(s, &o, log);
	choose_path(s, &o, log);
	err = prefault_copies(s, &o);
	if (!err)
		err = freeze_and_check(s, &o, log);
	if (err)
		goto fail_detach;
	if (s->go)
		capture__go_read(s, log); /* every thread stopped, or non-stop */
	finish(s, &o, t0);
	capture__go_after_thaw(s);	/* (held: still stopped, read now) */
	if (!all_gone(s))
		return s;
	err = -ESRCH;
	log_err(log, "pid %d: the process exited during the capture", pid);
	goto fail;
fail_detach:
	capture__thaw(s);
	log_failure(log, pid, err);
fail:
	stacksnap_snapshot__free(s);
	errno = -err;
	return NULL;
}

int stacksnap_snapshot__release(struct stacksnap_snapshot *s)
{
	if (!s || !s->held)
		return fail(-EINVAL);
	capture__thaw(s);
	return 0;
}

size_t stacksnap_snapshot__thread_count(const struct stacksnap_snapshot *s)
{
	return s ? s->n : 0;
}

const struct stacksnap_thread *
stacksnap_snapshot__thread(const struct stacksnap_snapshot *s, size_t i)
{
	return s && i < s->n ? &s->threads[i].pub : NULL;
}

void stacksnap_snapshot__stats(const struct stacksnap_snapshot *s,
			       struct stacksnap_snapshot_stats *st)
{
	if (s && st)
		*st = s->stats;
}

void stacksnap_snapshot__free(struct stacksnap_snapshot *s)
{
	if (!s)
		return;
	if (s->held)
		capture__thaw(s);
	capture__detach_late(s);
	capture__go_free(s);
	nonstop__close(s->ns);
	capture__runtime_free(s);
	for (size_t i = 0; i < s->nextra; i++)
		free(s->extra[i]);
	free(s->extra);
	free(s->stack_bytes);
	free(s->threads);
	free(s->by_tid);
	free(s->dents);
	free(s->maps);
	if (s->task_fd >= 0)
		close(s->task_fd);
	free(s);
}

int stacksnap_snapshot__nonstop_stats(const struct stacksnap_snapshot *s,
				      struct stacksnap_nonstop_stats *st)
{
	struct stacksnap_nonstop_stats out;

	if (!s || !st)
		return fail(-EINVAL);
	out = s->ns_stats;
	out.sz = sizeof(out);
	out.reason = s->ns_stats.nonstop ? "" : s->ns_reason;
	if (opts_out(st, &out, sizeof(out),
		     offsetof(struct stacksnap_nonstop_stats, reason)))
		return fail(-EINVAL);
	return 0;
}
