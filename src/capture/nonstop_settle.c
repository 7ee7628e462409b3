/* nonstop_settle.c - threads read without a stop (the BPF task iterator,
 * bpf/nonstop.c): the first run taken, the runs that read again those
 * that ran until one is clean (settle), the estimate that gives up on a
 * target that will not settle, and the witness checks that prove every
 * read made while the others are stopped. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "base/vec.h"
#include "capture/capture_internal.h"

#define BUSY_MOVES 2	    /* runs that found a thread running (on a CPU,
			       or having run since its read) for it to be
			       interrupted when settle() ends unsettled */
#define SETTLE_ROUNDS 12    /* iterator runs, before any thread is stopped,
			       that read again the threads that ran ... */
#define SETTLE_NS 3000000u  /* ... for at most this long */
#define RESETTLE_ROUNDS 4   /* the same, once the freeze stopped the threads
			       not read (they wait during these runs) ... */
#define RESETTLE_NS 1000000u /* ... for at most this long */
/* When settle() ends without a clean run, the default capture estimates
 * how many of the threads still read non-stop each check round would find
 * to have run (give_up_unsettled()). From NONSTOP_GIVE_UP on, a round ends
 * clean with a chance of e^-2 (~14%): ~7 rounds are to be expected, each
 * holding the stopped threads, and past NONSTOP_MAX_ROUNDS every thread is
 * stopped anyway; so every thread is stopped at once instead
 * (docs/nonstop-capture.md, "Giving up": 512 sleepers on staggered 50 us
 * timers, rounds of 24-31 ms where stopping all took 8-12 ms). */
#define NONSTOP_GIVE_UP 2.0
#define STOP_COST_NS 20000u /* interrupt, stop and registers of one thread,
			       quiet (docs/nonstop-capture.md, "When it pays") */

static bool same_witness(const struct nonstop_witness *a,
			 const struct nonstop_witness *b)
{
	return a->nvcsw == b->nvcsw && a->nivcsw == b->nivcsw &&
	       a->runtime_ns == b->runtime_ns;
}

/* A thread read non-stop that may have run: its copy is dropped and it is
 * interrupted like a running one. ran: it was found to have run since its
 * read (counted in its moves and in the stats), not just stopped with the
 * rest. */
void capture__demote(struct stacksnap_snapshot *s, struct cap_thread *t, bool ran)
{
	t->pub.nonstop = false;
	s->stats.bytes_copied -= t->copy_len; /* dropped */
	for (unsigned k = 0; k < t->pub.nmore_stacks; k++)
		s->stats.bytes_copied -= t->pub.more_stacks[k].len;
	t->have_regs = false; /* read again once it is stopped */
	t->pub.stack = NULL;
	t->pub.stack_len = 0;
	t->pub.stack_base = 0;
	t->pub.nmore_stacks = 0;
	t->pub.nkernel_ips = 0;
	t->pub.waited_ns = 0;
	t->copy_start = t->copy_len = t->want_len = 0;
	s->ns_stats.read_nonstop--;
	if (ran) {
		t->moves++;
		s->ns_stats.witness_moved++;
	}
}

/* Demotes every thread read non-stop: every thread is to be stopped. */
void capture__demote_all(struct stacksnap_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].pub.nonstop)
			capture__demote(s, &s->threads[i], false);
}

/* Takes the iterator's copy of thread t (record r: COPIED): t is read
 * non-stop. False when its pages cannot be mapped: it stays to be
 * interrupted. */
static bool take_one(struct stacksnap_snapshot *s, struct cap_thread *t,
		     const struct nonstop_rec *r)
{
	const __u8 *stack = nonstop__pages(s->ns, r->first_page);

	if (!stack)
		return false;
	t->pub.nonstop = true;
	t->w = r->w1;
	for (int k = 0; k < NONSTOP_NREGS; k++)
		t->pub.regs.regs[k] = r->regs[k];
	t->pub.regs.valid = (1u << STACKSNAP_REG_COUNT) - 1;
	t->pub.orig_rax = (int64_t)r->orig_ax;
	t->pub.have_orig_rax = true;
	t->pub.nkernel_ips = r->nkstack < STACKSNAP_KERNEL_IPS ? r->nkstack
							       : STACKSNAP_KERNEL_IPS;
	for (unsigned k = 0; k < t->pub.nkernel_ips; k++)
		t->pub.kernel_ips[k] = r->kstack[k];
	t->pub.waited_ns = r->waited_ns;
	t->have_regs = true;
	t->copy_start = r->copy_start;
	t->copy_len = r->copy_len;
	t->want_len = r->flags & NONSTOP_TRUNCATED ? r->want_len : 0;
	t->stack_top = r->map_end;
	t->pub.stack = stack;
	t->pub.stack_len = r->copy_len;
	t->pub.stack_base = r->copy_start;
	s->stats.bytes_copied += r->copy_len;
	s->ns_stats.read_nonstop++;
	return true;
}

/* Takes the first iterator run: every thread it copied (asleep, off CPU,
 * witness unchanged across its copy) is read non-stop; the others stay to
 * be interrupted. */
static int take_nonstop(struct stacksnap_snapshot *s,
			const struct stacksnap_snapshot_opts *o,
			const struct nonstop_rec *r, size_t n)
{
	capture__index_threads(s);
	for (size_t i = 0; i < n; i++, r++) {
		pid_t tid = (pid_t)r->tid;
		struct cap_thread *t;

		if (!capture__wanted(o, tid))
			continue;
		t = capture__find_thread(s, tid);
		if (!t && !(t = capture__add_thread(s, tid)))
			return -ENOMEM;
		if (t->pub.error)
			continue;
		if (!(r->flags & NONSTOP_COPIED)) {
			t->moves += !!(r->flags & NONSTOP_ON_CPU) || !r->state;
			continue;
		}
		take_one(s, t, r); /* or it is interrupted */
	}
	return 0;
}

/* Stacks deeper than one BPF copy: the rest is read now, without
 * stopping the thread; the final witness check proves the bytes exact. */
static void extend_deep(struct stacksnap_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];
		uint8_t **slot, *buf;

		if (!t->pub.nonstop || !t->want_len)
			continue;
		slot = VEC_PUSH(s->extra, s->nextra, s->extra_cap);
		buf = slot ? malloc(t->want_len) : NULL;
		if (!buf) {
			if (slot)
				s->nextra--;
			capture__demote(s, t, false);
			continue;
		}
		*slot = buf;
		memcpy(buf, t->pub.stack, t->copy_len);
		struct iovec l = { buf + t->copy_len, t->want_len - t->copy_len };
		struct iovec rm = { (void *)(uintptr_t)(t->copy_start + t->copy_len),
				    t->want_len - t->copy_len };
		if (process_vm_readv(s->pid, &l, 1, &rm, 1, 0) != (ssize_t)l.iov_len) {
			capture__demote(s, t, false);
			continue;
		}
		s->stats.bytes_copied += l.iov_len;
		/* Read after settle()'s clean run: only the final check
		 * proves these bytes. */
		s->settled = false;
		t->copy_len = t->want_len;
		t->want_len = 0;
		t->pub.stack = buf;
		t->pub.stack_len = t->copy_len;
		s->ns_stats.extended++;
	}
}

/* Threads read non-stop on an alternate signal stack: their normal stack
 * is read now too, proven by the final witness check as extend_deep()'s
 * bytes are; a thread whose other stack cannot be read is interrupted. */
static void copy_more_nonstop(struct stacksnap_snapshot *s,
			      const struct stacksnap_snapshot_opts *o)
{
	for (size_t i = 0; i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];

		if (!t->pub.nonstop || t->pub.nmore_stacks)
			continue;
		if (capture__copy_more(s, o, t))
			capture__demote(s, t, false);
		else if (t->pub.nmore_stacks)
			s->settled = false;
	}
}

/* The final check: every thread read non-stop must show the witness of its
 * read and be off CPU. Those that do not are demoted. The run sees every
 * thread of the process, so it is also the rescan of the task list: a
 * thread we do not know (created by one that ran since its read, or by
 * one interrupted before it stopped) is added, to be interrupted by the
 * next round. Returns how many threads were demoted or added, or -errno
 * (then every one is demoted: nothing proves them). */
int capture__check_witnesses(struct stacksnap_snapshot *s,
			   const struct stacksnap_snapshot_opts *o)
{
	const struct nonstop_rec *r;
	size_t n = 0;
	int moved = 0, err;
	uint64_t t0 = clock_monotonic_ns();

	err = nonstop__run(s->ns, NONSTOP_RUN_WITNESS, &r, &n);
	s->ns_stats.rounds++;
	capture__index_threads(s);
	for (size_t i = 0; i < s->n; i++)
		s->threads[i].seen = false;
	for (size_t j = 0; !err && j < n; j++) {
		pid_t tid = (pid_t)r[j].tid;
		struct cap_thread *t = capture__find_thread(s, tid);

		if (!t) {
			if (!capture__wanted(o, tid))
				continue;
			if (!capture__add_thread(s, tid)) {
				err = -ENOMEM;
				break;
			}
			moved++;
			continue;
		}
		t->seen = true;
		if (t->pub.nonstop &&
		    ((r[j].flags & (NONSTOP_ON_CPU | NONSTOP_EXITING)) ||
		     !same_witness(&r[j].w1, &t->w))) {
			capture__demote(s, t, true);
			moved++;
		}
	}
	/* Read non-stop and missing from the run (gone), or no run. */
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].pub.nonstop && (err || !s->threads[i].seen)) {
			capture__demote(s, &s->threads[i], true);
			moved++;
		}
	s->ns_stats.check_ns += clock_monotonic_ns() - t0;
	return err ? err : moved;
}

/* After settle() ended without a clean run, on the default path: whether
 * the check rounds after the freeze can be expected to end (see
 * NONSTOP_GIVE_UP). The threads read non-stop, busy ones aside (the
 * freeze stops them anyway), ran at a rate `rate` since the first run
 * began; a check round is a witness run (~ the shortest settle run) plus
 * the freeze of the threads the previous round found, so in the steady
 * state a round finds E = rate * run / (1 - rate * STOP_COST) threads that
 * ran (rounds never end when rate * STOP_COST >= 1: the next thread runs
 * before the last one's stop is taken). If E is too high, every thread is
 * demoted, the iterator closed and ns_reason says why: the capture is an
 * all-threads freeze. t0 is the start of the first iterator run. */
struct unsettled {
	unsigned read, ran;	/* threads read non-stop (not busy), their moves */
	uint64_t span;		/* since the first run began */
	double rate, expect;	/* moves per ns; E */
};

static struct unsettled estimate_unsettled(const struct stacksnap_snapshot *s,
					   uint64_t t0)
{
	struct unsettled u = { .span = clock_monotonic_ns() - t0 };

	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].pub.nonstop && s->threads[i].moves < BUSY_MOVES) {
			u.read++;
			u.ran += s->threads[i].moves;
		}
	if (!u.read || !u.span || !s->run_ns_min)
		return u;
	u.rate = (double)u.ran / (double)u.span;
	u.expect = u.rate * STOP_COST_NS >= 1.0
			   ? 1e9
			   : u.rate * (double)s->run_ns_min /
				     (1.0 - u.rate * STOP_COST_NS);
	return u;
}

static void give_up_unsettled(struct stacksnap_snapshot *s,
			      uint64_t t0, const struct log_sink *log)
{
	struct unsettled u = estimate_unsettled(s, t0);

	if (!u.read)
		return;
	log_info(log, "pid %d: not settled: %u of %u threads read ran in %.2f ms, "
		       "a check run ~%.1f us: ~%.2f expected to run during each "
		       "check round", s->pid, u.ran, u.read, u.span / 1e6,
		 s->run_ns_min / 1e3, u.expect);
	if (u.expect < NONSTOP_GIVE_UP)
		return;
	snprintf(s->ns_reason, sizeof(s->ns_reason),
		 "non-stop reads would not settle: the threads read ran %.1f "
		 "times a ms (%u in %.1f ms), a witness check takes %.0f us: "
		 "each check round would find ~%.1f that ran (gives up from %.0f)",
		 u.rate * 1e6, u.ran, u.span / 1e6, s->run_ns_min / 1e3,
		 u.expect > 99 ? 99.0 : u.expect, NONSTOP_GIVE_UP);
	log_info(log, "pid %d: %s; stopping every thread", s->pid, s->ns_reason);
	capture__demote_all(s);
	s->ns_stats.nonstop = false;
}

/* A settle map entry for thread t: read it again if it moved (it is read
 * non-stop), or read it (it is not). */
static void settle_entry(const struct cap_thread *t, __u32 *tid,
			 struct nonstop_settle *v)
{
	*tid = (__u32)t->pub.tid;
	memset(v, 0, sizeof(*v));
	if (t->pub.nonstop) {
		v->w = t->w;
		v->what = NONSTOP_SETTLE_CHECK;
	} else {
		v->what = NONSTOP_SETTLE_READ;
	}
}

/* Before anything is stopped: threads the first run could not read (on a
 * CPU) and threads read that ran since (their witness moved) are read
 * again, non-stop, by runs that copy only them and check the witnesses of
 * the others. A thread found to have run is read again by the run that
 * finds it (the settle map holds the witness of its last read), so a run
 * after it can be clean: on a target where some thread wakes every 50 us
 * and a run comes every ~30 us, needing a run to read what the run before
 * found and a further one to find nothing (60 us without a wake-up) never
 * settled (the stall target's 64 sleepers: 0 of 65 read in most captures).
 * It ends with a *clean* run (it read nothing, found every thread read
 * unchanged and no thread we do not know): that run is a witness check of
 * every thread, so the snapshot is consistent at its start with nothing
 * stopped at all (s->settled); or after SETTLE_ROUNDS runs or SETTLE_NS,
 * and what is left is interrupted by the freeze, whose witness check
 * proves every read (a thread read again counts as read when it was last
 * read). */
static void settle(struct stacksnap_snapshot *s,
		   const struct stacksnap_snapshot_opts *o,
		   unsigned rounds, uint64_t budget_ns, const struct log_sink *log)
{
	size_t cap = s->n ? s->n : 1;
	__u32 *tids = malloc(cap * sizeof(*tids));
	struct nonstop_settle *vals = malloc(cap * sizeof(*vals));
	uint64_t end = clock_monotonic_ns() + budget_ns;
	size_t nset = 0;

	s->settled = false;
	/* Every thread ours to read: read it, or check it. */
	for (size_t i = 0; tids && vals && i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];

		/* Seized threads are stopped: read under ptrace. */
		if (!t->pub.error && !t->seized && capture__wanted(o, t->pub.tid))
			settle_entry(t, &tids[nset], &vals[nset]), nset++;
	}
	for (unsigned k = 0; tids && vals && k < rounds &&
			     clock_monotonic_ns() < end; k++) {
		const struct nonstop_rec *r;
		size_t n = 0;
		int err;
		uint64_t t_run = clock_monotonic_ns();

		err = nonstop__settle(s->ns, tids, vals, nset);
		if (!err)
			err = nonstop__run(s->ns, NONSTOP_RUN_SETTLE, &r, &n);
		t_run = clock_monotonic_ns() - t_run;
		if (!s->run_ns_min || t_run < s->run_ns_min)
			s->run_ns_min = t_run;
		if (err) {
			log_debug(log, "pid %d: a settle run failed: %s", s->pid,
				  strerror(-err));
			break;
		}
		s->ns_stats.rounds++;
		bool clean = true;
		size_t unchanged = 0, read = 0;
		nset = 0; /* the entries to change before the next run */
		capture__index_threads(s);
		for (size_t j = 0; j < n; j++) {
			struct cap_thread *t = capture__find_thread(s, (pid_t)r[j].tid);

			if (!t && capture__wanted(o, (pid_t)r[j].tid))
				clean = false; /* new: the freeze's rescan takes it */
			if (!t || t->pub.error || t->seized)
				continue;
			if (t->pub.nonstop && (r[j].flags & NONSTOP_UNCHANGED) &&
			    !(r[j].flags & (NONSTOP_ON_CPU | NONSTOP_EXITING)) &&
			    same_witness(&r[j].w1, &t->w)) {
				unchanged++;
				continue;
			}
			if (t->pub.nonstop) {
				/* It ran since its read (or the program
				 * did not check it): the read is dropped. */
				capture__demote(s, t, true);
				clean = false;
			} else if (!(r[j].flags & NONSTOP_COPIED)) {
				t->moves++; /* asked for, not read */
				continue;
			}
			if ((r[j].flags & NONSTOP_COPIED) && take_one(s, t, &r[j]))
				s->ns_stats.reread++;
			clean = false; /* read after the run began, or not read */
			if (nset < cap && capture__wanted(o, t->pub.tid))
				settle_entry(t, &tids[nset], &vals[nset]), nset++;
		}
		/* Every thread known must have been in the run: one missing
		 * exited (the freeze finds it gone) or is not ours to read. */
		for (size_t i = 0; clean && i < s->n; i++) {
			read += s->threads[i].pub.nonstop;
			if (!s->threads[i].pub.nonstop && !s->threads[i].pub.error &&
			    !s->threads[i].seized && capture__wanted(o, s->threads[i].pub.tid))
				clean = false;
		}
		if (read != unchanged)
			clean = false; /* a thread read is missing from the run */
		if (clean) {
			s->settled = true;
			break;
		}
	}
	/* Not settled: busy threads (found running again and again: a 50 us
	 * timer, a spinner) are interrupted with the threads not read, even
	 * when their last read stands: the check after the freeze would
	 * almost surely find them running again, and each round it takes to
	 * catch them holds the stopped threads longer. */
	for (size_t i = 0; !s->settled && i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];

		if (t->pub.nonstop && t->moves >= BUSY_MOVES)
			capture__demote(s, t, false);
	}
	free(tids);
	free(vals);
}

/* Loads the iterator and takes its first run. Failing that, every thread
 * is interrupted; ns_reason says why. */
void capture__start_nonstop(struct stacksnap_snapshot *s,
			  const struct stacksnap_snapshot_opts *o,
			  const struct log_sink *log)
{
	const struct nonstop_rec *r;
	size_t n, pages, per = o->stack_size < PREFAULT_PER_THREAD
				       ? o->stack_size : PREFAULT_PER_THREAD;
	uint64_t t0;
	int err;

	/* Room for the usual stack of every thread and one deep one; a
	 * thread that finds the buffer full is interrupted. */
	pages = (s->n * per + (o->stack_size < NONSTOP_MAX_PAGES * NONSTOP_PAGE
				       ? o->stack_size
				       : NONSTOP_MAX_PAGES * NONSTOP_PAGE)) /
		NONSTOP_PAGE + 2 * s->n + 1;
	if (pages > (PREFAULT_MAX + NONSTOP_MAX_PAGES * NONSTOP_PAGE) / NONSTOP_PAGE)
		pages = (PREFAULT_MAX + NONSTOP_MAX_PAGES * NONSTOP_PAGE) / NONSTOP_PAGE;
	t0 = clock_monotonic_ns();
	err = nonstop__open(&s->ns, s->pid, s->n, o->stack_size, pages, log,
			    s->ns_reason, sizeof(s->ns_reason));
	if (err) {
		s->ns_stats.load_ns = clock_monotonic_ns() - t0;
		return;
	}
	/* Outside any window: nothing is stopped yet. */
	err = nonstop__warm(s->ns);
	if (err)
		log_debug(log, "pid %d: the warm-up run failed: %s", s->pid,
			  strerror(-err));
	s->ns_stats.load_ns = clock_monotonic_ns() - t0;
	/* Not SCHED_FIFO for the runs (it was tried): the tool may share a
	 * CPU with the target's threads, and a realtime tool running up to
	 * SETTLE_NS of runs would keep them from waking on time; nothing of
	 * the target is stopped yet, so a preempted run only costs reads. */
	t0 = clock_monotonic_ns();
	err = nonstop__run(s->ns, NONSTOP_RUN_COPY, &r, &n);
	if (!err)
		err = take_nonstop(s, o, r, n);
	if (!err)
		settle(s, o, SETTLE_ROUNDS, SETTLE_NS, log);
	s->ns_stats.iter_ns = clock_monotonic_ns() - t0;
	if (err) {
		snprintf(s->ns_reason, sizeof(s->ns_reason),
			 "the task iterator failed: %s", strerror(-err));
		log_info(log, "pid %d: %s; stopping every thread", s->pid,
			 s->ns_reason);
		capture__demote_all(s);
		s->ns_stats.witness_moved = 0;
		nonstop__close(s->ns);
		s->ns = NULL;
		return;
	}
	s->ns_stats.nonstop = true;
	/* --nonstop keeps to the non-stop path whatever the estimate. */
	if (!s->settled && !o->nonstop)
		give_up_unsettled(s, t0, log);
	if (!s->ns_stats.nonstop) {
		nonstop__close(s->ns);
		s->ns = NULL;
		return;
	}
	extend_deep(s);
	copy_more_nonstop(s, o);
}

/* After the first freeze round, with every thread not read non-stop
 * stopped: settle runs again (the stopped threads are not in them). A
 * clean one proves the snapshot at its start: every stopped thread
 * stopped before it and stays stopped until the detach, every thread read
 * non-stop was last read before it and found unchanged by it (threads
 * read again by these runs included). So the threads found to have run
 * since their read are read again without a stop, instead of being
 * interrupted round after round while more of them wake (the stall
 * target's 64 sleepers after a settle that ran out of time under load:
 * rounds that ended with all 65 stopped). Returns true when settled:
 * no check is needed. */
bool capture__resettle(struct stacksnap_snapshot *s,
		       const struct stacksnap_snapshot_opts *o,
		       const struct log_sink *log)
{
	uint64_t t0 = clock_monotonic_ns();

	settle(s, o, RESETTLE_ROUNDS, RESETTLE_NS, log);
	/* Deep stacks and other stacks of the threads read again, as after
	 * the first settle; bytes read after a clean run make it unsettled
	 * (the check of the next round proves them). */
	extend_deep(s);
	copy_more_nonstop(s, o);
	/* A thread dropped by them (its other stack unreadable) is neither
	 * read nor stopped yet: the next round interrupts it. */
	for (size_t i = 0; i < s->n; i++) {
		const struct cap_thread *t = &s->threads[i];

		if (!t->pub.nonstop && !t->seized && !t->pub.error &&
		    capture__wanted(o, t->pub.tid))
			s->settled = false;
	}
	s->ns_stats.check_ns += clock_monotonic_ns() - t0;
	return s->settled;
}

int stacksnap_snapshot__extend(struct stacksnap_snapshot *s, size_t i,
				size_t len)
{
	const struct nonstop_rec *r;
	struct cap_thread *t;
	uint8_t **slot, *buf;
	size_t n;
	int err;

	if (!s || i >= s->n || !s->ns || !s->threads[i].pub.nonstop ||
	    s->threads[i].pub.error)
		return fail(-EINVAL);
	t = &s->threads[i];
	if (len > t->stack_top - t->copy_start)
		len = t->stack_top - t->copy_start;
	if (len <= t->copy_len)
		return 0;
	slot = VEC_PUSH(s->extra, s->nextra, s->extra_cap);
	buf = slot ? malloc(len) : NULL;
	if (!buf) {
		if (slot)
			s->nextra--;
		return fail(-ENOMEM);
	}
	*slot = buf;
	memcpy(buf, t->pub.stack, t->copy_len);
	struct iovec l = { buf + t->copy_len, len - t->copy_len };
	struct iovec rm = { (void *)(uintptr_t)(t->copy_start + t->copy_len),
			    len - t->copy_len };
	if (process_vm_readv(s->pid, &l, 1, &rm, 1, 0) != (ssize_t)l.iov_len)
		return fail(errno == ESRCH ? -ESRCH : -EFAULT);
	/* The new bytes are the thread's at the snapshot's instant only if
	 * it has not run since: the witness of its first read must stand. */
	err = nonstop__run(s->ns, NONSTOP_RUN_WITNESS, &r, &n);
	if (err)
		return fail(err);
	for (size_t k = 0; k < n; k++)
		if ((pid_t)r[k].tid == t->pub.tid) {
			if ((r[k].flags & (NONSTOP_ON_CPU | NONSTOP_EXITING)) ||
			    !same_witness(&r[k].w1, &t->w))
				break;
			t->copy_len = len;
			t->pub.stack = buf;
			t->pub.stack_len = len;
			s->stats.bytes_copied += l.iov_len;
			s->ns_stats.extended++;
			return 0;
		}
	return fail(-ESTALE);
}
