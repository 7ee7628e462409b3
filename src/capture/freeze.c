/* freeze.c - the ptrace freeze of a live capture: seize, interrupt,
 * collect the stops (registers read as each thread stops), rescan the
 * task list, and detach, with the calling thread SCHED_FIFO for the
 * window where permitted. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "base/clock.h"
#include "capture/capture_internal.h"

#define MAX_RESCANS 16	    /* task-list rescans before giving up on stability */
#define THAW_WAIT_MS 200u   /* on error paths, for seized threads to stop */

/* The stop status of a thread whose stop its registers told
 * (status_unread): a signal-delivery stop's signal is given back on
 * detach. Taken while other threads are still on their way to stop, it
 * is one system call a thread less in the detach phase, where each one
 * delays the threads detached after it (~1 us a thread). The status
 * stays unread when the kernel has none to give yet. */
static void take_unread(struct cap_thread *t)
{
	int status;
	pid_t r = waitpid(t->pub.tid, &status, __WALL | WNOHANG);

	if (r == 0)
		return;
	if (r == t->pub.tid && WIFSTOPPED(status) && status >> 16 != PTRACE_EVENT_STOP)
		t->pending_sig = WSTOPSIG(status);
	t->status_unread = false;
}

/* Detaches every seized thread that is stopped (a running tracee cannot
 * be detached; see capture__detach_late()). Threads that were running go first:
 * they are the ones with work to resume; sleepers only go back to sleep. */
static void detach_all_stopped(struct stacksnap_snapshot *s)
{
	for (size_t k = 0; k < 2 * s->n; k++) {
		struct cap_thread *t = &s->threads[k % s->n];

		if (!t->seized || !t->stopped || (k < s->n) != (t->pub.state == 'R'))
			continue;
		if (t->status_unread) {
			take_unread(t);
			t->status_unread = false;
		}
		ptrace(PTRACE_DETACH, t->pub.tid, NULL,
		       (void *)(long)t->pending_sig);
		t->seized = false;
	}
}

/* Seizes every known thread not yet seized. PTRACE_SEIZE does not stop a
 * thread, so this happens before the freeze. A thread that vanished is
 * marked gone; any other failure fails the capture. */
static int seize_new(struct stacksnap_snapshot *s, const struct log_sink *log)
{
	for (size_t i = 0; i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];

		if (t->seized || t->pub.error || t->pub.nonstop)
			continue;
		if (ptrace(PTRACE_SEIZE, t->pub.tid, NULL, NULL) != 0) {
			int err = -errno;
			long tracer;

			if (err == -ESRCH || (err == -EPERM &&
					      capture_thread_exiting(s->pid, t->pub.tid))) {
				t->pub.error = STACKSNAP_THREAD_GONE;
				continue;
			}
			/* One thread may be traced (strace -p TID) when the
			 * leader is not: say so rather than "not permitted". */
			tracer = capture_tracer_pid(s->pid, t->pub.tid);
			if (err == -EPERM && tracer > 0) {
				log_err(log, "pid %d: thread %d is already traced "
					     "by pid %ld (a debugger or strace?); "
					     "detach it first",
					s->pid, t->pub.tid, tracer);
				return -EBUSY;
			}
			return err;
		}
		t->seized = true;
	}
	return 0;
}

/* Asks every seized thread not yet asked to stop. */
static void interrupt_new(struct stacksnap_snapshot *s, uint64_t *freeze_start)
{
	for (size_t i = 0; i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];

		if (!t->seized || t->interrupted || t->pub.error)
			continue;
		if (!*freeze_start)
			*freeze_start = clock_monotonic_ns();
		t->interrupted = true;
		if (ptrace(PTRACE_INTERRUPT, t->pub.tid, NULL, NULL) != 0)
			t->pub.error = STACKSNAP_THREAD_GONE;
	}
}

/* Reads thread t's registers; false with errno set when it cannot (not
 * stopped: ESRCH). */
static bool try_regs(struct cap_thread *t)
{
	struct user_regs_struct u;
	struct iovec iov = { &u, sizeof(u) };

	if (ptrace(PTRACE_GETREGSET, t->pub.tid, (void *)NT_PRSTATUS, &iov) != 0)
		return false;
	stacksnap_regs__from_user_regs(&t->pub.regs, &u);
	t->pub.orig_rax = (int64_t)u.orig_rax;
	t->pub.have_orig_rax = true;
	t->fs_base = u.fs_base;
	t->have_regs = true;
	return true;
}

static void read_thread_regs(struct cap_thread *t)
{
	if (t->have_regs || try_regs(t))
		return;
	t->pub.error = errno == ESRCH ? STACKSNAP_THREAD_GONE
				      : STACKSNAP_THREAD_NO_REGS;
}

/* Takes one wait status of one of our threads, polling them by tid in
 * the order they were interrupted: the first ones have stopped by the time
 * the last interrupt is sent, so this is one system call per thread, and a
 * wait by tid never reaps a child of the caller's. *cursor keeps the place
 * between calls. Returns the thread, or NULL after a round without news:
 * a whole one when `full`, else one that gives up after STOP_POLL_MISSES
 * threads still on their way. A round of every pending thread cost a
 * system call (two with the exit check) per thread still on its way, and
 * threads stop about in the order they were interrupted (512 threads
 * stopping one by one on one CPU: rounds of hundreds of calls, most of
 * the tool's time in the stop phase); the full rounds catch the threads
 * that stop out of order. With regs, a thread whose registers cannot be
 * read yet is asked for an exit status (waitpid) only in a full round: a
 * stop of any kind lets its registers be read, so the wait finds only a
 * thread that exited. */
#define COPY_BATCH 32 /* threads stopped and not copied yet (wait_stops) */
#define STOP_POLL_MISSES 8
#define STOP_POLL_FULL_EVERY 8 /* rounds without news */

static struct cap_thread *next_status(struct stacksnap_snapshot *s,
				      size_t *cursor, int *status, bool regs,
				      bool full)
{
	size_t misses = 0;

	for (size_t k = 0; k < s->n; k++) {
		struct cap_thread *t = &s->threads[*cursor];

		*cursor = (*cursor + 1) % s->n;
		if (!t->interrupted || t->stopped || t->pub.error)
			continue;
		/* A tracee's registers can be read only once it is stopped:
		 * a read that works is the news of its stop, in one system
		 * call instead of waitpid() and then the read (64 spinners on
		 * one CPU: every thread has stopped by the time it is asked,
		 * and the window was ~11 us a thread). */
		if (regs && try_regs(t)) {
			*status = -1;
			return t;
		}
		if (!(regs && !full && errno == ESRCH)) {
			pid_t r = waitpid(t->pub.tid, status, __WALL | WNOHANG);

			if (r == t->pub.tid)
				return t;
			if (r < 0 && errno == ECHILD) { /* gone without a status */
				t->pub.error = STACKSNAP_THREAD_GONE;
				t->seized = false;
			}
		}
		if (!full && ++misses == STOP_POLL_MISSES)
			break;
	}
	return NULL;
}

/* On a loaded machine the freeze stretched whenever the tool was
 * preempted inside it (2.7-5.9 ms for a 2-thread target, nice -20 or
 * not). Where permitted (root, CAP_SYS_NICE or an RLIMIT_RTPRIO), the
 * calling thread runs SCHED_FIFO, above every normal task, from the first
 * interrupt to the last detach, and goes back to its policy at once. The
 * window is bounded by the stop timeout, and while waiting for stops the
 * thread sleeps instead of yielding (a yield under SCHED_FIFO would keep
 * the threads it waits for off its CPU). */
void capture__realtime_enter(struct stacksnap_snapshot *s)
{
	sched_fifo_enter(&s->realtime);
}

static bool cancelled(const volatile sig_atomic_t *cancel)
{
	return cancel && *cancel;
}

/* Collects stops until every interrupted thread reported, the deadline,
 * or a cancel. Between empty polls the CPU is yielded (the stopping
 * threads may need it, and a sleep would cost the timer slack, ~50 us,
 * each time). A signal-delivery stop is as good as our interrupt's stop;
 * its signal is given back on detach. */
static void wait_stops(struct stacksnap_snapshot *s,
		       const volatile sig_atomic_t *cancel, uint64_t deadline,
		       bool regs)
{
	struct timespec rt_nap = { 0, 20000 }; /* no timer slack under FIFO */

	size_t pending = 0, cursor = 0, unread_cursor = 0, uncopied = 0;
	unsigned idle = 0, empty_rounds = 0;

	for (size_t i = 0; i < s->n; i++)
		pending += s->threads[i].interrupted && !s->threads[i].stopped &&
			   !s->threads[i].pub.error;
	while (pending && !cancelled(cancel)) {
		int status;
		struct cap_thread *t = next_status(
			s, &cursor, &status, regs,
			!regs || empty_rounds % STOP_POLL_FULL_EVERY ==
					 STOP_POLL_FULL_EVERY - 1);

		if (!t) {
			size_t first = s->n;

			empty_rounds++;
			pending = 0;
			for (size_t i = 0; i < s->n; i++)
				if (s->threads[i].interrupted &&
				    !s->threads[i].stopped &&
				    !s->threads[i].pub.error) {
					pending++;
					if (first == s->n)
						first = i;
				}
			if (!pending)
				break; /* the rest are gone */
			cursor = first; /* the next round from the first on its way */
			if (clock_monotonic_ns() >= deadline)
				break;
			/* Nothing stopped since the last look: copy the threads
			 * that did, in one call, while the others are on their
			 * way (copying each at its stop would cost one call
			 * per thread, and when stops come faster than they are
			 * taken it would only lengthen the window). */
			bool took = regs && s->copy_early &&
				    capture__copy_stacks(s) == 0 && s->copied_any;
			/* And the stop statuses the registers stood for. */
			for (; unread_cursor < s->n; unread_cursor++) {
				struct cap_thread *u = &s->threads[unread_cursor];

				if (u->interrupted && !u->stopped && !u->pub.error)
					break; /* on its way: its turn later */
				if (u->stopped && u->status_unread) {
					take_unread(u);
					took = true;
				}
			}
			if (took) {
				idle = 0;
				continue;
			}
			if (s->realtime.on) {
				nanosleep(&rt_nap, NULL);
			} else if (++idle < 1000) {
				sched_yield();
			} else {
				struct timespec ts = { 0, 50000 };
				nanosleep(&ts, NULL);
			}
			continue;
		}
		idle = 0;
		if (t->stopped || t->pub.error)
			continue;
		if (status == -1) { /* registers read: stopped */
			t->stopped = true;
			t->status_unread = true;
		} else if (WIFSTOPPED(status)) {
			t->stopped = true;
			if (status >> 16 != PTRACE_EVENT_STOP)
				t->pending_sig = WSTOPSIG(status);
			/* While the others are still on their way to stop. */
			if (regs)
				read_thread_regs(t);
		} else { /* exited or killed while we waited */
			t->pub.error = STACKSNAP_THREAD_GONE;
			t->seized = false;
		}
		pending--;
		/* A batch stopped: copied now, while the others are on their
		 * way, not only in rounds without news (512 sleepers on one
		 * CPU stop every ~10 us, so such rounds were few and ~1-1.7
		 * ms of copying, ~3.4 MB, was left for after the last stop,
		 * inside the window). One call a batch, not one a thread. */
		if (t->stopped && regs && s->copy_early && pending &&
		    ++uncopied == COPY_BATCH) {
			capture__copy_stacks(s);
			uncopied = 0;
		}
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].interrupted && !s->threads[i].stopped &&
		    !s->threads[i].pub.error)
			s->threads[i].pub.error = STACKSNAP_THREAD_NOT_STOPPED;
}

void capture__read_regs(struct stacksnap_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].stopped && !s->threads[i].pub.error)
			read_thread_regs(&s->threads[i]);
}

/* Threads that did not stop in time are still seized with a stop
 * pending, and only a stopped tracee can be detached: any that stopped
 * since are let go here. One still running stops when it leaves its
 * uninterruptible wait, and is let go by the kernel when the caller's
 * thread exits at the latest. */
void capture__detach_late(struct stacksnap_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];
		int status;

		if (!t->seized || t->stopped)
			continue;
		if (waitpid(t->pub.tid, &status, __WALL | WNOHANG) != t->pub.tid)
			continue;
		if (WIFSTOPPED(status))
			ptrace(PTRACE_DETACH, t->pub.tid, NULL,
			       (void *)(long)(status >> 16 == PTRACE_EVENT_STOP
						      ? 0 : WSTOPSIG(status)));
		t->seized = false;
	}
}

/* Detaches everything and completes the freeze statistics. Only a
 * stopped tracee can be detached, and one seized but running would stop
 * at its next signal: on error paths, threads seized but not yet stopped
 * are stopped first (briefly: a cancel asks for a quick exit). */
void capture__thaw(struct stacksnap_snapshot *s)
{
	uint64_t t_end, timeout = s->stop_timeout_ms < THAW_WAIT_MS
					  ? s->stop_timeout_ms : THAW_WAIT_MS;

	interrupt_new(s, &s->freeze_start);
	wait_stops(s, NULL, clock_monotonic_ns() + timeout * 1000000u, false);
	detach_all_stopped(s);
	t_end = clock_monotonic_ns();
	sched_fifo_leave(&s->realtime);
	capture__detach_late(s);
	s->stats.freeze_ns = s->freeze_start ? t_end - s->freeze_start : 0;
	s->stats.detach_ns = s->t_copied ? t_end - s->t_copied : 0;
	s->held = false;
}

/* The freeze of every thread not read non-stop: seize, interrupt, collect
 * the stops, rescan the task list until a rescan adds nothing (a stopped
 * thread creates none; one read non-stop that ran and created one is
 * caught by the witness check that follows). Without `rescan`, a witness
 * check follows, whose run sees every thread: it is the rescan (at 513
 * threads under load, a procfs rescan took ~600 us of every round). */
int capture__freeze_rest(struct stacksnap_snapshot *s,
		       const struct stacksnap_snapshot_opts *o, uint64_t deadline,
		       bool rescan, const struct log_sink *log)
{
	int err = seize_new(s, log), added;

	while (!err) {
		interrupt_new(s, &s->freeze_start);
		wait_stops(s, o->cancel, deadline, true);
		if (cancelled(o->cancel))
			return -EINTR;
		if (!rescan || s->stats.rescans == MAX_RESCANS)
			break;
		added = capture__scan_tasks(s, o);
		if (added <= 0) {
			if (added == -ENOENT)
				err = -ESRCH; /* the process is gone */
			else if (added < 0)
				err = added;
			break;
		}
		s->stats.rescans++;
		err = seize_new(s, log);
	}
	return err;
}
