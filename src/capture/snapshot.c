/* snapshot.c - live capture: threads asleep in the kernel read without
 * stopping them (a BPF task iterator, bpf/nonstop.c), the others seized and
 * interrupted, registers read and stacks copied in one batched read,
 * detached; everything that can be read before the freeze (thread list,
 * names, states, stack mappings) is read before it, so the target is
 * stopped only for the ptrace round trips and the copy. The consistency
 * argument is in docs/nonstop-capture.md. */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/maps_line.h"
#include "base/opts.h"
#include "base/vec.h"
#include "bpf/nonstop.h"
#include "stacksnap.h"

#define DEFAULT_STACK_SIZE (256u << 10)
#define DEFAULT_STOP_TIMEOUT_MS 1000
#define RED_ZONE 128	    /* bytes below rsp a leaf function may use */
#define MAX_RESCANS 16	    /* task-list rescans before giving up on stability */
#define PREFAULT_PER_THREAD (64u << 10) /* typical stack in use, rounded up */
#define PREFAULT_MAX (16u << 20)
#define THAW_WAIT_MS 200u   /* on error paths, for seized threads to stop */
#define DENTS_SIZE (16u << 10) /* getdents64 buffer of the task scans */
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
#define BUSY_MOVES 2	    /* runs that found a thread running (on a CPU,
			       or having run since its read) for it to be
			       interrupted when settle() ends unsettled */
#define SETTLE_ROUNDS 12    /* iterator runs, before any thread is stopped,
			       that read again the threads that ran ... */
#define SETTLE_NS 3000000u  /* ... for at most this long */
/* Below this many threads asleep (S or D) at the scan, and with none in D,
 * the default capture stops every thread: loading the iterator costs the
 * tool ~55 ms and the target its wake-ups' share of it, more than the
 * freeze of a few sleepers (~15-30 us each) that it saves
 * (docs/nonstop-capture.md, "When it pays"). */
#define NONSTOP_MIN_ASLEEP 16
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

/* A writable mapping, to clamp stack copies to the stack they are on. */
struct rw_map {
	uint64_t start, end;
};

/* Per-thread capture state. Invariant: seized implies the thread must be
 * detached before the capture returns (or, with hold, before release). */
struct cap_thread {
	struct stacksnap_thread pub;
	bool seized, interrupted, stopped;
	bool have_regs;		/* registers read (as soon as it stopped) */
	uint64_t fs_base;	/* its thread pointer (0: unknown) */
	int pending_sig;	/* a signal whose delivery-stop we took for our
				   interrupt: given back on detach */
	bool status_unread;	/* found stopped by reading its registers: its
				   wait status (pending_sig) is taken at its
				   detach */
	uint64_t copy_start, copy_len;
	/* pub.nonstop: read by the iterator, never seized; w is the witness
	 * of that read, which every later check must find unchanged. */
	struct nonstop_witness w;
	uint64_t want_len;	/* bytes the clamp allows beyond one BPF copy */
	uint64_t stack_top;	/* read non-stop: where its stack ends */
	unsigned moves;		/* iterator runs that found it running or
				   having run since its read */
	bool seen;		/* in the current check's records */
};

struct stacksnap_snapshot {
	pid_t pid;
	struct cap_thread *threads;
	size_t n, cap;
	size_t *by_tid;	      /* indices of threads[0, nindexed) by tid */
	size_t nindexed;
	int task_fd;	      /* /proc/PID/task, open from the first scan */
	uint8_t *dents;	      /* its getdents64 buffer, DENTS_SIZE bytes */
	uint8_t *stack_bytes; /* one buffer for the threads' copies */
	size_t stack_cap;     /* bytes of stack_bytes already faulted in */
	size_t stack_off;     /* bytes of stack_bytes given to copies */
	/* Set during the freeze: the writable mappings and options that a
	 * copy needs, so wait_stops() can copy the stacks of threads that
	 * stopped while the others are still on their way (copy_early). */
	struct rw_map *maps;  /* owned; freed by the capture */
	size_t nmaps;
	bool maps_borrowed;   /* from opts.addrspace: reread once if short */
	const struct stacksnap_snapshot_opts *copy_opts;
	bool copy_early;
	bool copied_any;      /* the last copy_stacks() copied something */
	bool held;	      /* threads stopped until __release() */
	unsigned stop_timeout_ms;
	uint64_t freeze_start, t_copied; /* for the stats of a release */
	struct stacksnap_snapshot_stats stats;
	/* Non-stop path: the iterator (its mapped buffer holds the copies of
	 * threads read non-stop, so it lives as long as the snapshot) and
	 * buffers of later copy rounds and of stacks completed after the
	 * thaw. */
	struct nonstop *ns;
	uint8_t **extra;
	size_t nextra, extra_cap;
	struct stacksnap_nonstop_stats ns_stats;
	char ns_reason[192];
	/* The calling thread's scheduling before the freeze window, while it
	 * runs SCHED_FIFO (realtime); restored when the window closes. */
	bool realtime;
	/* settle() ended with a clean run: every thread was read non-stop
	 * and none ran until that run; no freeze and no check are needed
	 * unless the freeze's rescan finds a new thread. */
	bool settled;
	uint64_t run_ns_min;  /* the shortest settle run */
	int saved_policy;
	struct sched_param saved_param;
};

static int read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

/* State letter and the kernel-thread flag from /proc/PID/task/TID/stat. */
static char task_state(pid_t pid, pid_t tid, unsigned long *flags)
{
	char path[64], buf[1024], *p;
	unsigned long fl = 0;
	char st;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (read_small_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')'); /* comm may contain spaces and parens */
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &st, &fl) < 2)
		return 0;
	if (flags)
		*flags = fl;
	return st;
}

static void task_name(pid_t pid, pid_t tid, char name[16])
{
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	if (read_small_file(path, buf, sizeof(buf)) <= 0)
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	buf[15] = 0; /* comm is at most 15 characters */
	memcpy(name, buf, strlen(buf) + 1);
}

/* Whether a thread is gone or on its way out: the kernel refuses to
 * attach to an exiting task with EPERM, which is not a permission
 * problem. */
static bool thread_exiting(pid_t pid, pid_t tid)
{
	unsigned long flags = 0;
	char st = task_state(pid, tid, &flags);

	return !st || st == 'Z' || st == 'X' || (flags & 0x4 /* PF_EXITING */);
}

/* TracerPid of a thread, 0 when untraced, -1 when unknown. */
static long tracer_pid(pid_t pid, pid_t tid)
{
	char path[64], buf[4096], *tp;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if (read_small_file(path, buf, sizeof(buf)) < 0 ||
	    !(tp = strstr(buf, "TracerPid:")))
		return -1;
	return strtol(tp + 10, NULL, 10);
}

static int cmp_by_tid(const void *a, const void *b, void *arg)
{
	const struct cap_thread *v = arg;
	pid_t x = v[*(const size_t *)a].pub.tid, y = v[*(const size_t *)b].pub.tid;

	return (x > y) - (x < y);
}

/* Sorts the threads known so far by tid, for find_thread(): the iterator
 * runs look up every record, and at 513 threads a linear search per
 * record cost ~100 us a run. On -ENOMEM the index is only older. */
static void index_threads(struct stacksnap_snapshot *s)
{
	size_t *v;

	if (s->nindexed == s->n)
		return;
	v = realloc(s->by_tid, s->n * sizeof(*v));
	if (!v)
		return;
	s->by_tid = v;
	for (size_t i = 0; i < s->n; i++)
		v[i] = i;
	qsort_r(v, s->n, sizeof(*v), cmp_by_tid, s->threads);
	s->nindexed = s->n;
}

/* Threads [0, nindexed) by a binary search of the index, those added
 * since by a linear one. */
static struct cap_thread *find_thread(struct stacksnap_snapshot *s, pid_t tid)
{
	size_t lo = 0, hi = s->nindexed;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct cap_thread *t = &s->threads[s->by_tid[mid]];

		if (t->pub.tid == tid)
			return t;
		if (t->pub.tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = s->nindexed; i < s->n; i++)
		if (s->threads[i].pub.tid == tid)
			return &s->threads[i];
	return NULL;
}

static bool wanted(const struct stacksnap_snapshot_opts *o, pid_t tid)
{
	if (!o->tids)
		return true;
	for (size_t i = 0; i < o->ntids; i++)
		if (o->tids[i] == tid)
			return true;
	return false;
}

/* A new thread entry with its name and state; NULL on -ENOMEM. */
static struct cap_thread *add_thread(struct stacksnap_snapshot *s, pid_t tid)
{
	struct cap_thread *t = VEC_PUSH(s->threads, s->n, s->cap);

	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->pub.tid = tid;
	task_name(s->pid, tid, t->pub.name);
	t->pub.state = task_state(s->pid, tid, NULL);
	/* A leader that called pthread_exit() stays a zombie while the
	 * others run; it would never report a stop. */
	if (t->pub.state == 'Z' || t->pub.state == 'X')
		t->pub.error = STACKSNAP_THREAD_GONE;
	return t;
}

/* Adds threads of /proc/PID/task not yet known. Returns how many were new,
 * or -errno. The directory stays open and its buffer allocated for the
 * rescans inside the freeze: the first scan, before it, has the kernel
 * write the buffer once (see prefault_kernel(); at 65 threads, load ~70,
 * a rescan through opendir()'s fresh buffer took 230-320 us of the
 * window, this one 100-170 us: procfs builds an entry per thread). */
static int scan_tasks(struct stacksnap_snapshot *s,
		      const struct stacksnap_snapshot_opts *o)
{
	int added = 0;

	if (s->task_fd < 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task", s->pid);
		s->task_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (s->task_fd < 0)
			return -errno;
	}
	if (!s->dents && !(s->dents = malloc(DENTS_SIZE)))
		return -ENOMEM;
	if (lseek(s->task_fd, 0, SEEK_SET) < 0)
		return -errno;
	index_threads(s);
	for (;;) {
		ssize_t n = getdents64(s->task_fd, s->dents, DENTS_SIZE);

		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			const struct dirent64 *de = (const void *)(s->dents + off);
			pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
			struct cap_thread *t;

			off += de->d_reclen;
			if (tid <= 0 || !wanted(o, tid) || find_thread(s, tid))
				continue;
			t = add_thread(s, tid);
			if (!t)
				return -ENOMEM;
			added++;
		}
	}
	return added;
}

/* Detaches every seized thread that is stopped (a running tracee cannot
 * be detached; see detach_late()). Threads that were running go first:
 * they are the ones with work to resume; sleepers only go back to sleep. */
static void detach_all_stopped(struct stacksnap_snapshot *s)
{
	for (size_t k = 0; k < 2 * s->n; k++) {
		struct cap_thread *t = &s->threads[k % s->n];

		if (!t->seized || !t->stopped || (k < s->n) != (t->pub.state == 'R'))
			continue;
		if (t->status_unread) {
			int status;

			if (waitpid(t->pub.tid, &status, __WALL | WNOHANG) == t->pub.tid &&
			    WIFSTOPPED(status) && status >> 16 != PTRACE_EVENT_STOP)
				t->pending_sig = WSTOPSIG(status);
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
					      thread_exiting(s->pid, t->pub.tid))) {
				t->pub.error = STACKSNAP_THREAD_GONE;
				continue;
			}
			/* One thread may be traced (strace -p TID) when the
			 * leader is not: say so rather than "not permitted". */
			tracer = tracer_pid(s->pid, t->pub.tid);
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

/* Takes one wait status of one of our threads, polling them by tid in
 * the order they were interrupted: the first ones have stopped by the time
 * the last interrupt is sent, so this is one system call per thread, and a
 * wait by tid never reaps a child of the caller's. *cursor keeps the place
 * between calls. Returns the thread, or NULL after a whole round without
 * news. */
static bool try_regs(struct cap_thread *t);

static struct cap_thread *next_status(struct stacksnap_snapshot *s,
				      size_t *cursor, int *status, bool regs)
{
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
		pid_t r = waitpid(t->pub.tid, status, __WALL | WNOHANG);
		if (r == t->pub.tid)
			return t;
		if (r < 0 && errno == ECHILD) { /* gone without a status */
			t->pub.error = STACKSNAP_THREAD_GONE;
			t->seized = false;
		}
	}
	return NULL;
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

/* On a loaded machine the freeze stretched whenever the tool was
 * preempted inside it (2.7-5.9 ms for a 2-thread target, nice -20 or
 * not). Where permitted (root, CAP_SYS_NICE or an RLIMIT_RTPRIO), the
 * calling thread runs SCHED_FIFO, above every normal task, from the first
 * interrupt to the last detach, and goes back to its policy at once. The
 * window is bounded by the stop timeout, and while waiting for stops the
 * thread sleeps instead of yielding (a yield under SCHED_FIFO would keep
 * the threads it waits for off its CPU). */
static void realtime_enter(struct stacksnap_snapshot *s)
{
	struct sched_param p = { .sched_priority = 1 };

	if (s->realtime)
		return;
	s->saved_policy = sched_getscheduler(0);
	if (s->saved_policy < 0 || sched_getparam(0, &s->saved_param) ||
	    (s->saved_policy & ~SCHED_RESET_ON_FORK) != SCHED_OTHER)
		return; /* already realtime, or batch/idle by choice */
	s->realtime = sched_setscheduler(0, SCHED_FIFO, &p) == 0;
}

static void realtime_leave(struct stacksnap_snapshot *s)
{
	if (!s->realtime)
		return;
	sched_setscheduler(0, s->saved_policy, &s->saved_param);
	s->realtime = false;
}

static bool cancelled(const volatile sig_atomic_t *cancel)
{
	return cancel && *cancel;
}

static int reread_maps(struct stacksnap_snapshot *s);

/* Where thread t's copy starts and how long it is (t->copy_start,
 * copy_len): from rsp minus the red zone to the end of its mapping or its
 * thread pointer, at most stack_size. False, with the thread's error set,
 * when rsp is in no writable mapping (after reading the maps afresh, when
 * they were borrowed from the caller's address space). */

static bool copy_range(struct stacksnap_snapshot *s, struct cap_thread *t)
{
	uint64_t sp = t->pub.regs.regs[STACKSNAP_REG_RSP];
	uint64_t lo = sp >= RED_ZONE ? sp - RED_ZONE : 0, hi = 0;

	for (size_t k = 0; k < s->nmaps; k++)
		if (sp >= s->maps[k].start && sp < s->maps[k].end) {
			if (lo < s->maps[k].start)
				lo = s->maps[k].start;
			hi = s->maps[k].end;
			break;
		}
	if (!hi && s->maps_borrowed && reread_maps(s) == 0)
		return copy_range(s, t);
	if (!hi) {
		t->pub.error = STACKSNAP_THREAD_NO_STACK;
		return false;
	}
	/* glibc puts a thread's descriptor at its thread pointer, at the top
	 * of its stack mapping, above the outermost frame: the unwinder never
	 * reads it. */
	if (t->fs_base > sp && t->fs_base < hi)
		hi = t->fs_base;
	if (hi - lo > s->copy_opts->stack_size)
		hi = lo + s->copy_opts->stack_size;
	t->copy_start = lo;
	t->copy_len = hi - lo;
	return true;
}

static void copy_done(struct stacksnap_snapshot *s, struct cap_thread *t,
		      uint8_t *at)
{
	t->pub.stack = at;
	t->pub.stack_len = t->copy_len;
	t->pub.stack_base = t->copy_start;
	s->stats.bytes_copied += t->copy_len;
}

static int copy_stacks(struct stacksnap_snapshot *s);

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

	size_t pending = 0, cursor = 0;
	unsigned idle = 0;

	for (size_t i = 0; i < s->n; i++)
		pending += s->threads[i].interrupted && !s->threads[i].stopped &&
			   !s->threads[i].pub.error;
	while (pending && !cancelled(cancel)) {
		int status;
		struct cap_thread *t = next_status(s, &cursor, &status, regs);

		if (!t) {
			pending = 0;
			for (size_t i = 0; i < s->n; i++)
				pending += s->threads[i].interrupted &&
					   !s->threads[i].stopped &&
					   !s->threads[i].pub.error;
			if (!pending)
				break; /* the rest are gone */
			if (clock_monotonic_ns() >= deadline)
				break;
			/* Nothing stopped since the last look: copy the threads
			 * that did, in one call, while the others are on their
			 * way (copying each at its stop would cost one call
			 * per thread, and when stops come faster than they are
			 * taken it would only lengthen the window). */
			if (regs && s->copy_early && copy_stacks(s) == 0 &&
			    s->copied_any) {
				idle = 0;
				continue;
			}
			if (s->realtime) {
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
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].interrupted && !s->threads[i].stopped &&
		    !s->threads[i].pub.error)
			s->threads[i].pub.error = STACKSNAP_THREAD_NOT_STOPPED;
}

static int read_rw_maps(pid_t pid, struct rw_map **out, size_t *nout);

/* The writable mappings: those opts.addrspace read (the caller's own
 * read of the same process a moment ago), else /proc/PID/maps read now. */
static int rw_maps_of(struct stacksnap_snapshot *s,
		      const struct stacksnap_snapshot_opts *o,
		      struct rw_map **out, size_t *nout)
{
	const struct as_rw_range *r;
	size_t n = o->addrspace && o->addrspace->pid == s->pid
		? addrspace__writable(o->addrspace, &r) : 0;

	if (!n)
		return read_rw_maps(s->pid, out, nout);
	if (!(*out = malloc(n * sizeof(**out))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		(*out)[i] = (struct rw_map){ r[i].start, r[i].end };
	*nout = n;
	s->maps_borrowed = true;
	return 0;
}

/* A stack pointer in none of the borrowed mappings: a thread created
 * since they were read. Read them afresh, once. */
static int reread_maps(struct stacksnap_snapshot *s)
{
	struct rw_map *maps;
	size_t n;
	int err;

	s->maps_borrowed = false;
	if ((err = read_rw_maps(s->pid, &maps, &n)))
		return err;
	free(s->maps);
	s->maps = maps;
	s->nmaps = n;
	return 0;
}

static int read_rw_maps(pid_t pid, struct rw_map **out, size_t *nout)
{
	char path[64], line[512];
	struct rw_map *v = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;

		if (!strchr(line, '\n') && !feof(f)) { /* long path: skip rest */
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			line[sizeof(line) - 2] = '\0'; /* the path cut, not the numbers */
		}
		if (maps_line__parse(line, &ml) || !(ml.prot & PROT_WRITE))
			continue;
		uint64_t a = ml.start, b = ml.end;
		struct rw_map *m = VEC_PUSH(v, n, cap);
		if (!m) {
			fclose(f);
			free(v);
			return -ENOMEM;
		}
		m->start = a;
		m->end = b;
	}
	fclose(f);
	*out = v;
	*nout = n;
	return 0;
}

/* Copies the stack of every stopped thread not copied yet (copy_now()):
 * one process_vm_readv for all of them (in batches of IOV_MAX), or
 * /proc/PID/mem reads. */
static int copy_stacks(struct stacksnap_snapshot *s)
{
	const struct stacksnap_snapshot_opts *o = s->copy_opts;
	size_t total = 0, off = 0;
	struct iovec *local, *remote;
	uint8_t *buf;
	size_t *which, niov = 0;
	int err = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];

		if (!t->stopped || t->pub.error || t->pub.stack || !t->have_regs)
			continue;
		if (copy_range(s, t))
			total += t->copy_len;
	}
	s->copied_any = total != 0;
	if (!total)
		return 0;
	/* The buffer was faulted in before the freeze; page faults on a
	 * fresh one would be paid inside it. Copies already taken keep
	 * their bytes: the rest goes after them, or into a buffer of its
	 * own. */
	if (total > s->stack_cap - s->stack_off) {
		uint8_t **slot = VEC_PUSH(s->extra, s->nextra, s->extra_cap);

		buf = slot ? malloc(total) : NULL;
		if (!buf) {
			if (slot)
				s->nextra--;
			return -ENOMEM;
		}
		*slot = buf;
	} else {
		buf = s->stack_bytes + s->stack_off;
		s->stack_off += total;
	}
	local = calloc(s->n + 1, sizeof(*local));
	remote = calloc(s->n + 1, sizeof(*remote));
	which = calloc(s->n + 1, sizeof(*which));
	if (!local || !remote || !which) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];

		if (!t->copy_len || t->pub.stack || !t->stopped || t->pub.error ||
		    !t->have_regs)
			continue;
		local[niov] = (struct iovec){ buf + off, t->copy_len };
		remote[niov] = (struct iovec){ (void *)(uintptr_t)t->copy_start,
					       t->copy_len };
		which[niov++] = i;
		off += t->copy_len;
	}
	if (o->proc_mem) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/mem", s->pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		for (size_t k = 0; k < niov; k++) {
			ssize_t r = fd < 0 ? -1
					   : pread(fd, local[k].iov_base,
						   local[k].iov_len,
						   (off_t)(uintptr_t)remote[k].iov_base);
			if (r != (ssize_t)local[k].iov_len)
				s->threads[which[k]].pub.error =
					STACKSNAP_THREAD_NO_STACK;
		}
		if (fd >= 0)
			close(fd);
	} else {
		for (size_t k = 0; k < niov; k += IOV_MAX) {
			size_t cnt = niov - k < IOV_MAX ? niov - k : IOV_MAX;
			ssize_t r = process_vm_readv(s->pid, local + k, cnt,
						     remote + k, cnt, 0);
			size_t want = 0;

			for (size_t j = k; j < k + cnt; j++)
				want += local[j].iov_len;
			if (r == (ssize_t)want)
				continue;
			/* A partial read stops at the first failing range:
			 * redo them one by one to know which. */
			for (size_t j = k; j < k + cnt; j++)
				if (process_vm_readv(s->pid, &local[j], 1,
						     &remote[j], 1, 0) !=
				    (ssize_t)local[j].iov_len)
					s->threads[which[j]].pub.error =
						STACKSNAP_THREAD_NO_STACK;
		}
	}
	for (size_t k = 0; k < niov; k++) {
		struct cap_thread *t = &s->threads[which[k]];

		if (!t->pub.error)
			copy_done(s, t, local[k].iov_base);
	}
out:
	free(local);
	free(remote);
	free(which);
	return err;
}

/* Faults in buf by having the kernel write it (a read of /dev/zero),
 * not by a write of ours: on the virtual machines measured (shadow page
 * tables, and the kernel runs on page tables of its own), the kernel's
 * first write to each page of a buffer costs ~5-20 us even after the
 * process wrote it, the next ones nothing. The copy phase of the freeze
 * writes the buffer from the kernel (process_vm_readv): without this,
 * 64 threads' stacks (~400 KiB) took ~1 ms to copy instead of ~0.1 ms. */
static void prefault_kernel(uint8_t *buf, size_t len)
{
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	size_t done = 0;

	while (fd >= 0 && done < len) {
		ssize_t r = read(fd, buf + done, len - done);

		if (r <= 0)
			break;
		done += (size_t)r;
	}
	if (fd >= 0)
		close(fd);
	memset(buf + done, 0, len - done);
}

/* Says why pid cannot be captured, or 0. */
static int check_target(pid_t pid, const struct log_sink *log)
{
	char path[64], buf[4096];
	unsigned long flags = 0;
	char *tp, *th;
	char st;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (read_small_file(path, buf, sizeof(buf)) < 0) {
		log_err(log, "pid %d: no such process", pid);
		return -ESRCH;
	}
	st = task_state(pid, pid, &flags);
	th = strstr(buf, "Threads:");
	/* A leader that called pthread_exit() is a zombie too, but the
	 * process lives while it has other threads. */
	if ((st == 'Z' || st == 'X') && (!th || strtol(th + 8, NULL, 10) <= 1)) {
		log_err(log, "pid %d: the process is a zombie (it exited; its "
			     "parent has not reaped it)", pid);
		return -ECHILD;
	}
	if (flags & 0x00200000 /* PF_KTHREAD */) {
		log_err(log, "pid %d: a kernel thread has no user stack", pid);
		return -EINVAL;
	}
	tp = strstr(buf, "TracerPid:");
	if (tp && strtol(tp + 10, NULL, 10) != 0) {
		log_err(log, "pid %d: already traced by pid %ld (a debugger or "
			     "strace?); detach it first",
			pid, strtol(tp + 10, NULL, 10));
		return -EBUSY;
	}
	return 0;
}

int stacksnap_snapshot__check(struct stacksnap_ctx *ctx, pid_t pid)
{
	if (pid <= 0)
		return fail(-EINVAL);
	int err = check_target(pid, ctx ? &ctx->log : NULL);
	return err ? fail(err) : 0;
}

static void read_regs(struct stacksnap_snapshot *s)
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
static void detach_late(struct stacksnap_snapshot *s)
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
static void thaw(struct stacksnap_snapshot *s)
{
	uint64_t t_end, timeout = s->stop_timeout_ms < THAW_WAIT_MS
					  ? s->stop_timeout_ms : THAW_WAIT_MS;

	interrupt_new(s, &s->freeze_start);
	wait_stops(s, NULL, clock_monotonic_ns() + timeout * 1000000u, false);
	detach_all_stopped(s);
	t_end = clock_monotonic_ns();
	realtime_leave(s);
	detach_late(s);
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
static int freeze_rest(struct stacksnap_snapshot *s,
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
		added = scan_tasks(s, o);
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
static void demote(struct stacksnap_snapshot *s, struct cap_thread *t, bool ran)
{
	t->pub.nonstop = false;
	s->stats.bytes_copied -= t->copy_len; /* dropped */
	t->have_regs = false; /* read again once it is stopped */
	t->pub.stack = NULL;
	t->pub.stack_len = 0;
	t->pub.stack_base = 0;
	t->copy_start = t->copy_len = t->want_len = 0;
	s->ns_stats.read_nonstop--;
	if (ran) {
		t->moves++;
		s->ns_stats.witness_moved++;
	}
}

/* Demotes every thread read non-stop: every thread is to be stopped. */
static void demote_all(struct stacksnap_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].pub.nonstop)
			demote(s, &s->threads[i], false);
}

/* Takes the iterator's copy of thread t (record r: COPIED): t is read
 * non-stop. */
static void take_one(struct stacksnap_snapshot *s, struct cap_thread *t,
		     const struct nonstop_rec *r)
{
	t->pub.nonstop = true;
	t->w = r->w1;
	for (int k = 0; k < NONSTOP_NREGS; k++)
		t->pub.regs.regs[k] = r->regs[k];
	t->pub.regs.valid = (1u << STACKSNAP_REG_COUNT) - 1;
	t->have_regs = true;
	t->copy_start = r->copy_start;
	t->copy_len = r->copy_len;
	t->want_len = r->flags & NONSTOP_TRUNCATED ? r->want_len : 0;
	t->stack_top = r->map_end;
	t->pub.stack = nonstop__pages(s->ns, r->first_page);
	t->pub.stack_len = r->copy_len;
	t->pub.stack_base = r->copy_start;
	s->stats.bytes_copied += r->copy_len;
	s->ns_stats.read_nonstop++;
}

/* Takes the first iterator run: every thread it copied (asleep, off CPU,
 * witness unchanged across its copy) is read non-stop; the others stay to
 * be interrupted. */
static int take_nonstop(struct stacksnap_snapshot *s,
			const struct stacksnap_snapshot_opts *o,
			const struct nonstop_rec *r, size_t n)
{
	index_threads(s);
	for (size_t i = 0; i < n; i++, r++) {
		pid_t tid = (pid_t)r->tid;
		struct cap_thread *t;

		if (!wanted(o, tid))
			continue;
		t = find_thread(s, tid);
		if (!t && !(t = add_thread(s, tid)))
			return -ENOMEM;
		if (t->pub.error)
			continue;
		if (!(r->flags & NONSTOP_COPIED)) {
			t->moves += !!(r->flags & NONSTOP_ON_CPU) || !r->state;
			continue;
		}
		take_one(s, t, r);
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
			demote(s, t, false);
			continue;
		}
		*slot = buf;
		memcpy(buf, t->pub.stack, t->copy_len);
		struct iovec l = { buf + t->copy_len, t->want_len - t->copy_len };
		struct iovec rm = { (void *)(uintptr_t)(t->copy_start + t->copy_len),
				    t->want_len - t->copy_len };
		if (process_vm_readv(s->pid, &l, 1, &rm, 1, 0) != (ssize_t)l.iov_len) {
			demote(s, t, false);
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

/* The final check: every thread read non-stop must show the witness of its
 * read and be off CPU. Those that do not are demoted. The run sees every
 * thread of the process, so it is also the rescan of the task list: a
 * thread we do not know (created by one that ran since its read, or by
 * one interrupted before it stopped) is added, to be interrupted by the
 * next round. Returns how many threads were demoted or added, or -errno
 * (then every one is demoted: nothing proves them). */
static int check_witnesses(struct stacksnap_snapshot *s,
			   const struct stacksnap_snapshot_opts *o)
{
	const struct nonstop_rec *r;
	size_t n = 0;
	int moved = 0, err;
	uint64_t t0 = clock_monotonic_ns();

	err = nonstop__run(s->ns, NONSTOP_RUN_WITNESS, &r, &n);
	s->ns_stats.rounds++;
	index_threads(s);
	for (size_t i = 0; i < s->n; i++)
		s->threads[i].seen = false;
	for (size_t j = 0; !err && j < n; j++) {
		pid_t tid = (pid_t)r[j].tid;
		struct cap_thread *t = find_thread(s, tid);

		if (!t) {
			if (!wanted(o, tid))
				continue;
			if (!add_thread(s, tid)) {
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
			demote(s, t, true);
			moved++;
		}
	}
	/* Read non-stop and missing from the run (gone), or no run. */
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].pub.nonstop && (err || !s->threads[i].seen)) {
			demote(s, &s->threads[i], true);
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
	demote_all(s);
	s->ns_stats.nonstop = false;
}

/* Before anything is stopped: threads the first run could not read (on a
 * CPU) and threads read that ran since (their witness moved) are read
 * again, non-stop, by runs that copy only them and check the witnesses of
 * the others. Each run reads fewer threads, so it is shorter and fewer
 * wake up during it. It ends with a *clean* run (it read nothing, found
 * every thread read unchanged and no thread we do not know): that run is a
 * witness check of every thread, so the snapshot is consistent at its
 * start with nothing stopped at all (s->settled); or after SETTLE_ROUNDS
 * runs or SETTLE_NS, and what is left is interrupted by the freeze, whose
 * witness check proves every read (a thread read again counts as read
 * when it was last read). */
static void settle(struct stacksnap_snapshot *s,
		   const struct stacksnap_snapshot_opts *o,
		   uint64_t budget_ns, const struct log_sink *log)
{
	__u32 *tids = malloc((s->n ? s->n : 1) * sizeof(*tids));
	uint64_t end = clock_monotonic_ns() + budget_ns;

	s->settled = false;
	for (unsigned k = 0; tids && k < SETTLE_ROUNDS && clock_monotonic_ns() < end; k++) {
		const struct nonstop_rec *r;
		size_t n = 0, want = 0;
		int err;

		for (size_t i = 0; i < s->n; i++) {
			struct cap_thread *t = &s->threads[i];

			/* Seized threads are stopped: read under ptrace. */
			if (!t->pub.nonstop && !t->pub.error && !t->seized &&
			    wanted(o, t->pub.tid))
				tids[want++] = (__u32)t->pub.tid;
		}
		uint64_t t_run = clock_monotonic_ns();

		err = nonstop__retry(s->ns, tids, want);
		if (!err)
			err = nonstop__run(s->ns, NONSTOP_RUN_RETRY, &r, &n);
		t_run = clock_monotonic_ns() - t_run;
		if (!s->run_ns_min || t_run < s->run_ns_min)
			s->run_ns_min = t_run;
		if (err) {
			log_debug(log, "pid %d: a settle run failed: %s", s->pid,
				  strerror(-err));
			break;
		}
		s->ns_stats.rounds++;
		bool clean = !want;
		size_t unchanged = 0, read = 0;
		index_threads(s);
		for (size_t j = 0; j < n; j++) {
			struct cap_thread *t = find_thread(s, (pid_t)r[j].tid);

			if (!t && wanted(o, (pid_t)r[j].tid))
				clean = false; /* new: the freeze's rescan takes it */
			if (!t || t->pub.error || t->seized)
				continue;
			if (t->pub.nonstop) {
				if ((r[j].flags & (NONSTOP_ON_CPU | NONSTOP_EXITING)) ||
				    !same_witness(&r[j].w1, &t->w)) {
					demote(s, t, true);
					clean = false;
				} else {
					unchanged++;
				}
			} else if (r[j].flags & NONSTOP_COPIED) {
				take_one(s, t, &r[j]);
				s->ns_stats.reread++;
			} else {
				t->moves++; /* asked for, not read */
			}
		}
		/* Every thread known must have been in the run: one missing
		 * exited (the freeze finds it gone) or is not ours to read. */
		for (size_t i = 0; clean && i < s->n; i++) {
			read += s->threads[i].pub.nonstop;
			if (!s->threads[i].pub.nonstop && !s->threads[i].pub.error &&
			    !s->threads[i].seized && wanted(o, s->threads[i].pub.tid))
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
			demote(s, t, false);
	}
	free(tids);
}

static size_t count_interrupted(const struct stacksnap_snapshot *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n; i++)
		k += s->threads[i].interrupted;
	return k;
}

/* Loads the iterator and takes its first run. Failing that, every thread
 * is interrupted; ns_reason says why. */
static void start_nonstop(struct stacksnap_snapshot *s,
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
	err = nonstop__open(&s->ns, s->pid, s->n, o->stack_size, pages, log,
			    s->ns_reason, sizeof(s->ns_reason));
	if (err)
		return;
	/* Outside any window: nothing is stopped yet. */
	err = nonstop__warm(s->ns);
	if (err)
		log_debug(log, "pid %d: the warm-up run failed: %s", s->pid,
			  strerror(-err));
	/* Not SCHED_FIFO for the runs (it was tried): the tool may share a
	 * CPU with the target's threads, and a realtime tool running up to
	 * SETTLE_NS of runs would keep them from waking on time; nothing of
	 * the target is stopped yet, so a preempted run only costs reads. */
	t0 = clock_monotonic_ns();
	err = nonstop__run(s->ns, NONSTOP_RUN_COPY, &r, &n);
	if (!err)
		err = take_nonstop(s, o, r, n);
	if (!err)
		settle(s, o, SETTLE_NS, log);
	s->ns_stats.iter_ns = clock_monotonic_ns() - t0;
	if (err) {
		snprintf(s->ns_reason, sizeof(s->ns_reason),
			 "the task iterator failed: %s", strerror(-err));
		log_info(log, "pid %d: %s; stopping every thread", s->pid,
			 s->ns_reason);
		demote_all(s);
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
}

struct stacksnap_snapshot *
stacksnap_snapshot__capture(struct stacksnap_ctx *ctx, pid_t pid,
			    const struct stacksnap_snapshot_opts *opts)
{
	struct stacksnap_snapshot_opts o = { 0 };
	const struct log_sink *log = ctx ? &ctx->log : NULL;
	struct stacksnap_snapshot *s;
	uint64_t t0 = clock_monotonic_ns();
	int err;

	if (opts_in(&o, sizeof(o), opts, 0)) {
		errno = EINVAL;
		return NULL;
	}
	if (!o.stack_size)
		o.stack_size = DEFAULT_STACK_SIZE;
	if (!o.stop_timeout_ms)
		o.stop_timeout_ms = DEFAULT_STOP_TIMEOUT_MS;
	if (pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	err = check_target(pid, log);
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
	s->task_fd = -1;
	s->stop_timeout_ms = o.stop_timeout_ms;
	/* Before the freeze: tasks, names, states and writable mappings. */
	err = scan_tasks(s, &o);
	if (err >= 0)
		err = o.no_copy ? 0 : rw_maps_of(s, &o, &s->maps, &s->nmaps);
	if (err < 0) {
		if (err == -ENOENT)
			err = -ESRCH;
		goto fail_detach;
	}
	size_t prefault = s->n * (o.stack_size < PREFAULT_PER_THREAD ? o.stack_size
								     : PREFAULT_PER_THREAD);
	if (prefault > PREFAULT_MAX)
		prefault = PREFAULT_MAX;
	if (o.no_copy)
		prefault = 0;
	s->stack_bytes = malloc(prefault ? prefault : 1);
	if (!s->stack_bytes) {
		err = -ENOMEM;
		goto fail_detach;
	}
	prefault_kernel(s->stack_bytes, prefault);
	s->stack_cap = prefault;
	unsigned asleep = 0, in_d = 0;
	for (size_t i = 0; i < s->n; i++) {
		asleep += s->threads[i].pub.state == 'S' || s->threads[i].pub.state == 'D';
		in_d += s->threads[i].pub.state == 'D';
	}
	if (o.freeze_all)
		snprintf(s->ns_reason, sizeof(s->ns_reason), "--freeze-all asked for");
	else if (o.hold || o.no_copy)
		snprintf(s->ns_reason, sizeof(s->ns_reason),
			 "threads held for a live unwind are all stopped");
	else if (!o.nonstop && asleep < NONSTOP_MIN_ASLEEP && !in_d)
		snprintf(s->ns_reason, sizeof(s->ns_reason),
			 "%u threads asleep: the non-stop path pays from %u "
			 "(--nonstop forces it)", asleep, NONSTOP_MIN_ASLEEP);
	else
		start_nonstop(s, &o, log);
	/* The freeze of the threads not read non-stop (all of them without
	 * the iterator), then, while they are stopped, the check that every
	 * thread read non-stop has not run since it was read; those that ran
	 * are interrupted too, and checked again, a few rounds at most. */
	uint64_t deadline = clock_monotonic_ns() + (uint64_t)o.stop_timeout_ms * 1000000u;
	s->copy_opts = &o;
	s->copy_early = !o.no_copy;
	if (!o.no_realtime && !o.hold)
		realtime_enter(s);
	for (unsigned round = 0;; round++) {
		uint64_t t_begin = clock_monotonic_ns();
		size_t interrupted_before = count_interrupted(s), interrupted_now;

		/* From the second round on, a check follows whenever a
		 * thread is still read non-stop. */
		err = freeze_rest(s, &o, deadline,
				  !round || !s->ns || !s->ns_stats.read_nonstop, log);
		interrupted_now = count_interrupted(s);
		if (err)
			goto fail_detach;
		uint64_t t_stopped = clock_monotonic_ns();
		read_regs(s);
		uint64_t t_regs = clock_monotonic_ns();
		if (!o.no_copy)
			err = copy_stacks(s);
		s->t_copied = clock_monotonic_ns();
		if (s->freeze_start)
			s->stats.stop_ns += t_stopped - (round ? t_begin : s->freeze_start);
		s->stats.regs_ns += t_regs - t_stopped;
		s->stats.copy_ns += s->t_copied - t_regs;
		if (err)
			goto fail_detach;
		if (!s->ns || !s->ns_stats.read_nonstop)
			break;
		if (!round && s->settled && interrupted_now == interrupted_before)
			break; /* proven by settle()'s clean run */
		if (round + 1 == NONSTOP_MAX_ROUNDS) {
			/* Still moving: stop the rest as well; no check is
			 * needed once every thread is stopped. */
			log_info(log, "pid %d: threads read non-stop keep "
				      "running; stopping the %u left", pid,
				 s->ns_stats.read_nonstop);
			demote_all(s);
			continue;
		}
		int moved = check_witnesses(s, &o);
		if (moved < 0) {
			log_info(log, "pid %d: the witness check failed (%s); "
				      "stopping every thread", pid, strerror(-moved));
			continue; /* all demoted */
		}
		/* Those that ran, and only those, are interrupted by the
		 * next round: reading them again non-stop here (as settle()
		 * does before the freeze) kept the stopped threads waiting
		 * longer than the freeze of the few that moved takes. Each
		 * round with news interrupts one thread at least, so the
		 * rounds end; the budget bounds their time. */
		if (!moved)
			break;
		if (round + 1 == NONSTOP_ROUNDS)
			for (size_t i = 0; i < s->n; i++)
				if (s->threads[i].pub.nonstop && s->threads[i].moves)
					demote(s, &s->threads[i], false);
	}
	s->t_copied = clock_monotonic_ns(); /* the detach phase starts after the checks */
	s->held = o.hold;
	s->copy_early = false; /* maps and o live no longer */
	s->copy_opts = NULL;
	if (!s->held)
		thaw(s);
	free(s->maps); /* the copies are taken */
	s->maps = NULL;
	s->nmaps = 0;
	s->stats.threads = (unsigned)s->n;
	s->stats.capture_ns = clock_monotonic_ns() - t0;
	for (size_t i = 0; i < s->n; i++)
		s->ns_stats.interrupted += s->threads[i].interrupted;
	/* Threads that did not stop are reported in the snapshot; only when
	 * every thread exited is the process gone. */
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].pub.error != STACKSNAP_THREAD_GONE)
			return s;
	err = -ESRCH;
	log_err(log, "pid %d: the process exited during the capture", pid);
	goto fail;
fail_detach:
	thaw(s);
	if (err == -EPERM)
		log_err(log, "pid %d: ptrace not permitted (run as root or as "
			     "the process owner, or set "
			     "kernel.yama.ptrace_scope=0)", pid);
	else if (err == -ESRCH)
		log_err(log, "pid %d: the process exited during the capture",
			pid);
	else if (err == -EINTR)
		log_info(log, "pid %d: capture cancelled; every thread detached",
			 pid);
	else if (err != -EBUSY)
		log_err(log, "pid %d: capture failed: %s", pid, strerror(-err));
fail:
	stacksnap_snapshot__free(s);
	errno = -err;
	return NULL;
}

int stacksnap_snapshot__release(struct stacksnap_snapshot *s)
{
	if (!s || !s->held)
		return fail(-EINVAL);
	thaw(s);
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
		thaw(s);
	detach_late(s);
	nonstop__close(s->ns);
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
