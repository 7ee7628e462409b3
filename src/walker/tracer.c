/* tracer.c - the walker's tracer thread: owns every ptrace call, resumes
 * each stop nobody asked to keep the moment it is seen, carries out the
 * caller's one request at a time (attach, pause, resume, capture, detach)
 * and queues the events it sees. */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/sched_fifo.h"
#include "base/ucontext_regs.h"
#include "base/vec.h"
#include "mem/mem.h"
#include "walker/walker.h"

/* The doorbell: a tiny child process the tracer thread traces. Every stop
 * of a tracee wakes the tracer's blocking waitpid(), so a signal sent to
 * the doorbell wakes it too, without a handler in the caller's process or
 * a polling loop: SIGUSR2 from a caller with a request, SIGUSR1 from the
 * doorbell itself every TICK_MS (timeouts and the maps poll). */
#define TICK_MS 20u
#define SIG_TICK SIGUSR1
#define SIG_RING SIGUSR2
#define RED_ZONE 128

/* Not PTRACE_O_TRACEEXIT: its stop comes before the exiting thread wakes
 * its joiner, so every pthread_join() would wait for the tracer to run
 * (on a loaded machine, for milliseconds); the exit status comes in the
 * thread's wait status anyway. */
static const int seize_options = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
				 PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;

/* The doorbell's body: raw system calls only (a child of a multi-threaded
 * process, made without fork()'s atfork handlers, and under sanitizers
 * without their interceptors). */
static __attribute__((noreturn)) void bell_main(pid_t parent)
{
	/* The kernel's struct sigaction: handler, flags, restorer, mask. */
	struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; }
		ign = { SIG_IGN, 0, NULL, 0 };
	uint64_t none = 0;
	struct timespec tick = { 0, TICK_MS * 1000000L };
	pid_t self = (pid_t)syscall(SYS_getpid);

	/* Hold none of the caller's files (a pipe kept open would keep its
	 * reader from seeing EOF). */
	syscall(SYS_close_range, 0u, ~0u, 0u);
	syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if ((pid_t)syscall(SYS_getppid) != parent)
		syscall(SYS_exit_group, 0);
	/* Ignored: harmless before the tracer seizes us; a traced process
	 * still stops for an ignored signal, which is all the bell is for. */
	syscall(SYS_rt_sigaction, SIG_TICK, &ign, NULL, 8);
	syscall(SYS_rt_sigaction, SIG_RING, &ign, NULL, 8);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
	for (;;) {
		syscall(SYS_nanosleep, &tick, NULL);
		syscall(SYS_kill, self, SIG_TICK);
	}
}

static int bell_start(struct stacksnap_walker *w)
{
	pid_t parent = getpid(), pid;
	int status;

	pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);
	if (pid < 0)
		return -errno;
	if (pid == 0)
		bell_main(parent);
	if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)(long)PTRACE_O_EXITKILL) != 0) {
		int err = -errno;

		kill(pid, SIGKILL);
		waitpid(pid, &status, __WALL);
		return err;
	}
	w->bell = pid;
	return 0;
}

void tracer_ring(struct stacksnap_walker *w)
{
	kill(w->bell, SIG_RING);
}

/* ---- threads ---- */

static struct wthread *find_thread(struct stacksnap_target *t, pid_t tid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->threads[i].tid == tid)
			return &t->threads[i];
	return NULL;
}

static struct stacksnap_target *find_owner(struct stacksnap_walker *w, pid_t tid,
					   struct wthread **th)
{
	for (struct stacksnap_target *t = w->targets; t; t = t->next)
		if ((*th = find_thread(t, tid)))
			return t;
	return NULL;
}

static void queue(struct stacksnap_walker *w, struct stacksnap_target *t,
		  enum stacksnap_event_type type, pid_t tid, int signo,
		  pid_t child, int status)
{
	struct stacksnap_event ev = { .type = type, .target = t, .pid = t->pid,
				      .tid = tid, .signo = signo, .child = child,
				      .status = status };

	walker_queue(w, &ev, NULL);
}

static bool request_counts(struct stacksnap_walker *w, struct stacksnap_target *t)
{
	return w->req && w->req->started && !w->req->done && w->req->t == t;
}

/* The thread stopped or left: the request in flight stops waiting for it. */
static void stop_seen(struct stacksnap_walker *w, struct stacksnap_target *t,
		      struct wthread *th)
{
	if (th->want_stop) {
		th->want_stop = false;
		if (request_counts(w, t) && w->req->pending)
			w->req->pending--;
	}
}

static struct wthread *add_thread(struct stacksnap_walker *w,
				  struct stacksnap_target *t, pid_t tid)
{
	struct wthread *th = VEC_PUSH(t->threads, t->n, t->cap);

	if (!th)
		return NULL;
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->user_paused = t->paused_all;
	/* Born during a capture or a pause-all: held like the others. A new
	 * thread reports an initial stop by itself. */
	if ((t->capturing || t->paused_all) && request_counts(w, t)) {
		th->hold = t->capturing;
		th->want_stop = true;
		w->req->pending++;
	} else if (t->capturing) {
		th->hold = true;
	}
	return th;
}

static void remove_thread(struct stacksnap_walker *w, struct stacksnap_target *t,
			  struct wthread *th)
{
	stop_seen(w, t, th);
	*th = t->threads[--t->n];
}

/* Lets a stopped thread go on, unless something holds it: the signal it
 * stopped with is delivered, a job-control stop stays in effect. */
static void resume_thread(struct wthread *th)
{
	int err;

	if (!th->stopped || th->hold || th->user_paused)
		return;
	if (th->pending_sig)
		err = ptrace(PTRACE_CONT, th->tid, NULL, (void *)(long)th->pending_sig);
	else if (th->group_stop && th->stop_event == PTRACE_EVENT_STOP)
		err = ptrace(PTRACE_LISTEN, th->tid, NULL, NULL);
	else
		err = ptrace(PTRACE_CONT, th->tid, NULL, NULL);
	/* ESRCH: killed meanwhile; its exit status is on its way. */
	(void)err;
	th->stopped = false;
	th->interrupted = false;
	th->pending_sig = 0;
}

/* Asks a thread to stop and stay stopped for the request in flight. */
static void hold_thread(struct stacksnap_walker *w, struct wthread *th, bool hold)
{
	th->hold = hold;
	if (th->stopped)
		return;
	if (!th->interrupted && ptrace(PTRACE_INTERRUPT, th->tid, NULL, NULL) == 0)
		th->interrupted = true;
	if (!th->want_stop) {
		th->want_stop = true;
		w->req->pending++;
	}
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* The thread group of tid, from /proc (0 when gone). */
static pid_t tgid_of(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	pid_t tgid = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f))
		if ((p = strstr(buf, "Tgid:")) == buf) {
			tgid = (pid_t)strtol(buf + 5, NULL, 10);
			break;
		}
	fclose(f);
	return tgid;
}

static void on_exec(struct stacksnap_walker *w, struct stacksnap_target *t,
		    struct wthread *leader)
{
	pid_t keep = leader->tid;

	/* Every other thread is gone; the one that ran execve() now has the
	 * process id. */
	for (size_t i = 0; i < t->n;)
		if (t->threads[i].tid != keep)
			remove_thread(w, t, &t->threads[i]);
		else
			i++;
	t->maps_gen++;
	queue(w, t, STACKSNAP_EVENT_EXEC, keep, 0, 0, 0);
}

static void remember_gone(struct stacksnap_walker *w, pid_t tid, int status,
			  bool known)
{
	if (w->ngone == sizeof(w->gone) / sizeof(w->gone[0]))
		memmove(w->gone, w->gone + 1, --w->ngone * sizeof(w->gone[0]));
	w->gone[w->ngone].tid = tid;
	w->gone[w->ngone].status = status;
	w->gone[w->ngone++].known = known;
}

/* A clone event for a thread that has already come and gone: its events
 * if nobody knew it. */
static bool born_gone(struct stacksnap_walker *w, struct stacksnap_target *t,
		      pid_t tid)
{
	for (unsigned i = 0; i < w->ngone; i++)
		if (w->gone[i].tid == tid) {
			if (!w->gone[i].known) {
				queue(w, t, STACKSNAP_EVENT_THREAD_CREATE, tid, 0, 0, 0);
				queue(w, t, STACKSNAP_EVENT_THREAD_EXIT, tid, 0, 0,
				      w->gone[i].status);
			}
			w->gone[i] = w->gone[--w->ngone];
			return true;
		}
	return false;
}

static void on_stop(struct stacksnap_walker *w, struct stacksnap_target *t,
		    struct wthread *th, int status)
{
	int sig = WSTOPSIG(status), event = status >> 16;
	unsigned long msg = 0;
	pid_t tid = th->tid;

	th->stopped = true;
	th->interrupted = false;
	th->stop_event = event;
	th->pending_sig = 0;
	switch (event) {
	case 0: /* signal-delivery stop: passed on unchanged */
		if (sig == SIGCONT)
			for (size_t i = 0; i < t->n; i++)
				t->threads[i].group_stop = false;
		th->pending_sig = sig;
		queue(w, t, STACKSNAP_EVENT_SIGNAL, tid, sig, 0, 0);
		break;
	case PTRACE_EVENT_STOP:
		/* The stop signal while a job-control stop is in effect,
		 * SIGTRAP otherwise (our interrupt, a new thread's first
		 * stop, or news for a listening thread). */
		th->group_stop = is_stop_signal(sig);
		break;
	case PTRACE_EVENT_CLONE:
		if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) != 0 ||
		    find_thread(t, (pid_t)msg))
			break;
		if (born_gone(w, t, (pid_t)msg))
			break;
		if (add_thread(w, t, (pid_t)msg)) {
			th = find_thread(t, tid); /* the vector may have moved */
			queue(w, t, STACKSNAP_EVENT_THREAD_CREATE, (pid_t)msg, 0, 0, 0);
		}
		break;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0)
			queue(w, t, STACKSNAP_EVENT_FORK, tid, 0, (pid_t)msg, 0);
		break;
	case PTRACE_EVENT_EXEC:
		on_exec(w, t, th);
		th = find_thread(t, tid);
		break;
	}
	stop_seen(w, t, th);
	resume_thread(th);
}

static void on_gone(struct stacksnap_walker *w, struct stacksnap_target *t,
		    struct wthread *th, int status)
{
	pid_t tid = th->tid;

	if (tid != t->pid) {
		remove_thread(w, t, th);
		remember_gone(w, tid, status, true);
		queue(w, t, STACKSNAP_EVENT_THREAD_EXIT, tid, 0, 0, status);
		return;
	}
	/* The leader's end is reported once the whole group is dead. */
	while (t->n)
		remove_thread(w, t, &t->threads[0]);
	t->terminated = true;
	t->exit_status = status;
	queue(w, t, STACKSNAP_EVENT_EXIT, tid, 0, 0, status);
}

/* A status of a thread we do not know: a new thread whose creator's
 * event has not come yet, a fork child (followed by the kernel because
 * the parent is traced: let go), or a thread of a target detached while
 * it was not stopped. */
static void on_stranger(struct stacksnap_walker *w, pid_t tid, int status)
{
	struct stacksnap_target *t;
	pid_t tgid;

	if (!WIFSTOPPED(status)) {
		/* For its creator's clone event (a fork child's end, say,
		 * matches none and is forgotten in time). */
		remember_gone(w, tid, status, false);
		return;
	}
	tgid = tgid_of(tid);
	for (t = w->targets; t; t = t->next)
		if (t->pid == tgid && !t->terminated)
			break;
	if (t) {
		struct wthread *th = add_thread(w, t, tid);

		if (th) {
			queue(w, t, STACKSNAP_EVENT_THREAD_CREATE, tid, 0, 0, 0);
			on_stop(w, t, th, status);
			return;
		}
	}
	ptrace(PTRACE_DETACH, tid, NULL,
	       (void *)(long)((status >> 16) == 0 ? WSTOPSIG(status) : 0));
}

/* ---- requests ---- */

/* Seizes every task of the target, rescanning until a scan finds none new
 * (a thread created by one not yet seized is found by the next scan;
 * those created by seized ones come as events). */
static int seize_all(struct stacksnap_walker *w, struct stacksnap_target *t)
{
	for (int round = 0; round < 64; round++) {
		char path[64];
		struct dirent *de;
		int added = 0;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
		d = opendir(path);
		if (!d)
			return round ? 0 : -ESRCH;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);

			if (tid <= 0 || find_thread(t, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)seize_options)) {
				int err = -errno;

				if (err == -ESRCH)
					continue;
				/* Already ours: auto-attached as it was born. */
				if (err == -EPERM && tgid_of(tid) == t->pid) {
					char st[64], buf[2048], *tp;
					FILE *f;
					long tracer = -1;

					snprintf(st, sizeof(st), "/proc/%d/status", tid);
					if ((f = fopen(st, "re"))) {
						size_t n = fread(buf, 1, sizeof(buf) - 1, f);
						buf[n] = 0;
						fclose(f);
						if ((tp = strstr(buf, "TracerPid:")))
							tracer = strtol(tp + 10, NULL, 10);
					}
					if (tracer == w->tracer_tid)
						goto add;
				}
				closedir(d);
				return err;
			}
add:
			if (!add_thread(w, t, tid)) {
				closedir(d);
				return -ENOMEM;
			}
			added++;
		}
		closedir(d);
		if (!added)
			return 0;
	}
	return 0;
}

static void start_request(struct stacksnap_walker *w, struct request *r)
{
	struct stacksnap_target *t = r->t;

	r->started = true;
	r->pending = 0;
	r->t_start = clock_monotonic_ns();
	r->deadline = r->t_start + (uint64_t)w->stop_timeout_ms * 1000000u;
	switch (r->kind) {
	case REQ_ATTACH:
		t->next = w->targets;
		w->targets = t;
		r->result = seize_all(w, t);
		break;
	case REQ_PAUSE:
		if (!r->tid)
			t->paused_all = true;
		for (size_t i = 0; i < t->n; i++) {
			struct wthread *th = &t->threads[i];

			if (r->tid && th->tid != r->tid)
				continue;
			th->user_paused = true;
			hold_thread(w, th, th->hold);
		}
		if (r->tid && !find_thread(t, r->tid))
			r->result = -ESRCH;
		break;
	case REQ_RESUME:
		if (!r->tid)
			t->paused_all = false;
		if (r->tid && !find_thread(t, r->tid))
			r->result = -ESRCH;
		for (size_t i = 0; i < t->n; i++) {
			struct wthread *th = &t->threads[i];

			if (r->tid && th->tid != r->tid)
				continue;
			th->user_paused = false;
			resume_thread(th);
		}
		break;
	case REQ_CAPTURE:
		/* A capture's stop lasts as long as this thread takes to see
		 * the threads stop, copy and resume them: on a loaded machine
		 * each wait for a CPU stretched it (watch saw single samples
		 * of 50-500 ms, a third of a run). As the snapshot's freeze,
		 * it runs SCHED_FIFO until the last resume where permitted;
		 * it sleeps in waitpid meanwhile, keeping no one off a CPU. */
		sched_fifo_enter(&w->realtime);
		t->capturing = !r->tids;
		t->ncaps = 0;
		for (size_t i = 0; i < t->n; i++) {
			struct wthread *th = &t->threads[i];
			bool sel = !r->tids;

			for (size_t k = 0; !sel && k < r->ntids; k++)
				sel = r->tids[k] == th->tid;
			if (sel)
				hold_thread(w, th, true);
		}
		break;
	case REQ_DETACH:
		t->paused_all = false;
		for (size_t i = 0; i < t->n; i++) {
			t->threads[i].user_paused = false;
			hold_thread(w, &t->threads[i], true);
		}
		break;
	}
}

static const struct rwmap *rw_for(const struct request *r, uint64_t sp)
{
	for (size_t k = 0; k < r->nrw; k++)
		if (sp >= r->rw[k].start && sp < r->rw[k].end)
			return &r->rw[k];
	return NULL;
}

/* The capture's stack copies: 3.11 keeps each eval loop's _PyCFrame on
 * the C stack. */
static const uint8_t *stack_copy_at(void *user, uint64_t addr, size_t len)
{
	const struct stacksnap_target *t = user;

	for (size_t k = 0; k < t->ncaps; k++) {
		const struct wcapture *c = &t->caps[k];

		if (!c->error && c->len && addr >= c->base &&
		    addr - c->base <= c->len && len <= c->len - (addr - c->base))
			return t->stack_bytes + c->off + (addr - c->base);
	}
	return NULL;
}

/* Capture c (copied, its thread still stopped) running a signal handler
 * on an alternate signal stack: its normal stack, from the interrupted
 * rsp, is copied after the stacks (*total bytes of the buffer used), so
 * the walk goes on past the signal frame. Without it (not found, not
 * readable) the walk ends there, as before. */
static void copy_more(struct stacksnap_walker *w, struct request *r,
		      struct wcapture *c, size_t *total)
{
	struct stacksnap_target *t = r->t;
	uint64_t rsp, lo, hi;
	const struct rwmap *m;

	c->more_len = 0;
	if (c->error || !c->len || !c->scan_alt ||
	    !(rsp = ucontext__altstack_interrupted_sp(
		      t->stack_bytes + c->off, c->len, c->base,
		      c->regs.regs[STACKSNAP_REG_RSP])) ||
	    !(m = rw_for(r, rsp)))
		return;
	lo = rsp >= m->start + RED_ZONE ? rsp - RED_ZONE : m->start;
	hi = m->end - lo > w->stack_size ? lo + w->stack_size : m->end;
	if (*total + (hi - lo) > t->stack_cap) {
		uint8_t *nb = realloc(t->stack_bytes, *total + (hi - lo));

		if (!nb)
			return;
		t->stack_bytes = nb;
		t->stack_cap = *total + (hi - lo);
	}
	struct iovec l = { t->stack_bytes + *total, hi - lo };
	struct iovec rm = { (void *)(uintptr_t)lo, hi - lo };
	if (process_vm_readv(t->pid, &l, 1, &rm, 1, 0) != (ssize_t)(hi - lo))
		return;
	c->more_base = lo;
	c->more_off = *total;
	c->more_len = hi - lo;
	*total += hi - lo;
	r->bytes_copied += hi - lo;
}

/* Registers and one batched stack copy of every held, stopped thread,
 * then lets them go. Threads that did not stop in time are reported. */
static int finish_capture(struct stacksnap_walker *w, struct request *r)
{
	struct stacksnap_target *t = r->t;
	size_t total = 0, niov = 0;
	struct iovec *local, *remote;
	int err = 0;

	for (size_t i = 0; i < t->n; i++) {
		struct wthread *th = &t->threads[i];
		struct wcapture *c;

		if (!th->hold)
			continue;
		c = VEC_PUSH(t->caps, t->ncaps, t->capcaps);
		if (!c) {
			err = -ENOMEM;
			break;
		}
		memset(c, 0, sizeof(*c));
		c->tid = th->tid;
		c->paused = th->user_paused;
		if (!th->stopped) {
			c->error = STACKSNAP_THREAD_NOT_STOPPED;
			continue;
		}
		struct user_regs_struct u;
		struct iovec iov = { &u, sizeof(u) };
		if (ptrace(PTRACE_GETREGSET, th->tid, (void *)NT_PRSTATUS, &iov)) {
			c->error = errno == ESRCH ? STACKSNAP_THREAD_GONE
						  : STACKSNAP_THREAD_NO_REGS;
			continue;
		}
		stacksnap_regs__from_user_regs(&c->regs, &u);
		c->fs_base = u.fs_base;
		uint64_t sp = u.rsp, lo = sp >= RED_ZONE ? sp - RED_ZONE : 0;
		const struct rwmap *m = rw_for(r, sp);
		if (!m) {
			c->error = STACKSNAP_THREAD_NO_STACK;
			continue;
		}
		if (lo < m->start)
			lo = m->start;
		uint64_t hi = m->end - lo > w->stack_size ? lo + w->stack_size : m->end;
		c->base = lo;
		c->len = hi - lo;
		c->off = total;
		total += c->len;
		/* A glibc thread's own stack ends at its thread pointer; the
		 * main thread, one thread, is always searched. */
		c->scan_alt = th->tid == t->pid || u.fs_base < lo || u.fs_base >= hi;
	}
	if (total > t->stack_cap) {
		uint8_t *nb = realloc(t->stack_bytes, total);

		if (nb) {
			t->stack_bytes = nb;
			t->stack_cap = total;
		} else {
			err = -ENOMEM;
		}
	}
	local = calloc(t->ncaps + 1, sizeof(*local));
	remote = calloc(t->ncaps + 1, sizeof(*remote));
	if (!err && local && remote) {
		for (size_t k = 0; k < t->ncaps; k++) {
			struct wcapture *c = &t->caps[k];

			if (c->error || !c->len)
				continue;
			local[niov] = (struct iovec){ t->stack_bytes + c->off, c->len };
			remote[niov++] = (struct iovec){ (void *)(uintptr_t)c->base,
							 c->len };
		}
		for (size_t k = 0; k < niov; k += IOV_MAX) {
			size_t cnt = niov - k < IOV_MAX ? niov - k : IOV_MAX, want = 0;

			for (size_t j = k; j < k + cnt; j++)
				want += local[j].iov_len;
			if (process_vm_readv(t->pid, local + k, cnt, remote + k, cnt,
					     0) == (ssize_t)want)
				continue;
			for (size_t j = k; j < k + cnt; j++)
				if (process_vm_readv(t->pid, &local[j], 1, &remote[j], 1,
						     0) != (ssize_t)local[j].iov_len)
					for (size_t c = 0; c < t->ncaps; c++)
						if (t->stack_bytes + t->caps[c].off ==
						    local[j].iov_base && t->caps[c].len)
							t->caps[c].error =
								STACKSNAP_THREAD_NO_STACK;
		}
		for (size_t k = 0; k < t->ncaps; k++)
			if (!t->caps[k].error)
				r->bytes_copied += t->caps[k].len;
		for (size_t k = 0; k < t->ncaps; k++)
			copy_more(w, r, &t->caps[k], &total);
	} else if (!err) {
		err = -ENOMEM;
	}
	free(local);
	free(remote);
	/* The Python frame chains, in the same instant. */
	if (t->py) {
		t->py_cap.local = stack_copy_at;
		t->py_cap.local_user = t;
		t->py_ok = py_capture__all(t->py, t->py_mem, &t->py_cap) == 0;
	}
	/* Or Ruby's control frames: each stopped thread's, through its
	   thread pointer. */
	if (t->rb) {
		mem_invalidate(t->rb_mem);
		rb_capture__clear(&t->rb_cap);
		t->rb_ok = true;
		for (size_t k = 0; k < t->ncaps; k += 64) {
			struct rb_listed who[64];
			size_t m = 0;

			for (size_t j = k; j < t->ncaps && j < k + 64; j++)
				if (!t->caps[j].error)
					who[m++] = (struct rb_listed){
						(uint64_t)t->caps[j].tid, t->caps[j].fs_base };
			if (rb_capture__threads(t->rb, t->rb_mem, who, m, &t->rb_cap))
				t->rb_ok = false;
		}
	}
	t->capturing = false;
	for (size_t i = 0; i < t->n; i++) {
		struct wthread *th = &t->threads[i];

		th->hold = false;
		th->want_stop = false;
		resume_thread(th);
	}
	return err;
}

static void finish_detach(struct stacksnap_walker *w, struct request *r)
{
	struct stacksnap_target *t = r->t, **pp;
	unsigned left = 0;

	for (size_t i = 0; i < t->n; i++) {
		struct wthread *th = &t->threads[i];

		/* One still running is let go when its stop comes (as a
		 * stranger), or by the kernel when this thread exits. */
		if (!th->stopped) {
			left++;
			continue;
		}
		ptrace(PTRACE_DETACH, th->tid, NULL, (void *)(long)th->pending_sig);
	}
	if (left)
		log_warn(w->log, "pid %d: %u thread(s) did not stop within %u ms "
				 "(uninterruptible sleep?); they are let go when they do",
			 t->pid, left, w->stop_timeout_ms);
	t->n = 0;
	for (pp = &w->targets; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->detached = true;
	/* Events of the target not yet delivered would name a freed handle. */
	size_t k = 0;
	for (size_t i = 0; i < w->nevents; i++) {
		if (w->events[i].ev.target == t)
			free(w->events[i].path);
		else
			w->events[k++] = w->events[i];
	}
	w->nevents = k;
}

/* Completes the request in flight once nothing it waits for is pending,
 * or at its deadline. */
static void progress_request(struct stacksnap_walker *w, struct request *r)
{
	struct stacksnap_target *t = r->t;
	bool late = clock_monotonic_ns() >= r->deadline;

	if (r->pending && !late && !t->terminated)
		return;
	switch (r->kind) {
	case REQ_PAUSE:
		if (r->pending && !t->terminated)
			r->result = -ETIMEDOUT;
		break;
	case REQ_CAPTURE:
		r->result = finish_capture(w, r);
		sched_fifo_leave(&w->realtime);
		break;
	case REQ_DETACH:
		finish_detach(w, r);
		break;
	default:
		break;
	}
	for (size_t i = 0; i < t->n; i++)
		t->threads[i].want_stop = false;
	r->pending = 0;
	r->t_end = clock_monotonic_ns();
	r->done = true;
	pthread_cond_broadcast(&w->cond);
}

/* ---- code mappings ---- */

static bool xmap_same(const struct xmap *a, const struct xmap *b)
{
	return a->start == b->start && a->end == b->end && a->inode == b->inode &&
	       !strcmp(a->path, b->path);
}

static void queue_lib(struct stacksnap_walker *w, struct stacksnap_target *t,
		      enum stacksnap_event_type type, const struct xmap *x)
{
	struct stacksnap_event ev = { .type = type, .target = t, .pid = t->pid,
				      .tid = t->pid, .start = x->start, .end = x->end };

	walker_queue(w, &ev, x->path);
}

/* Compares the code mappings with the last poll's (both sorted by start)
 * and queues a load or unload for each difference. */
static void poll_maps(struct stacksnap_walker *w, struct stacksnap_target *t)
{
	struct xmap *x = NULL;
	size_t nx = 0, capx = 0, i = 0, k = 0;
	bool changed = false;

	if (walker_read_maps(t->pid, &x, &nx, &capx, NULL, NULL, NULL))
		return;
	while (i < t->nx || k < nx) {
		if (i < t->nx && k < nx && xmap_same(&t->xmaps[i], &x[k])) {
			i++, k++;
		} else if (k == nx || (i < t->nx && t->xmaps[i].start <= x[k].start)) {
			queue_lib(w, t, STACKSNAP_EVENT_LIBRARY_UNLOAD, &t->xmaps[i++]);
			changed = true;
		} else {
			queue_lib(w, t, STACKSNAP_EVENT_LIBRARY_LOAD, &x[k++]);
			changed = true;
		}
	}
	if (changed)
		t->maps_gen++;
	walker_free_xmaps(t->xmaps, t->nx);
	t->xmaps = x;
	t->nx = nx;
	t->capx = capx;
}

/* ---- the loop ---- */

static void on_bell(struct stacksnap_walker *w, int status, unsigned *ticks)
{
	if (!WIFSTOPPED(status))
		return; /* killed: the loop ends */
	if ((status >> 16) == 0 && WSTOPSIG(status) == SIG_TICK) {
		unsigned every = w->maps_poll_ms / TICK_MS ? w->maps_poll_ms / TICK_MS : 1;

		if (++*ticks % every == 0)
			for (struct stacksnap_target *t = w->targets; t; t = t->next)
				if (!t->terminated)
					poll_maps(w, t);
	}
	ptrace(PTRACE_CONT, w->bell, NULL, NULL); /* the signal suppressed */
}

void *tracer_main(void *arg)
{
	struct stacksnap_walker *w = arg;
	unsigned ticks = 0;
	int err, status;

	w->tracer_tid = (pid_t)syscall(SYS_gettid);
	err = bell_start(w);
	pthread_mutex_lock(&w->lock);
	w->tracer_err = err;
	pthread_cond_broadcast(&w->cond);
	while (!err) {
		struct request *r = w->req;

		if (r && !r->started)
			start_request(w, r);
		if (r && r->started && !r->done)
			progress_request(w, r);
		if (w->quit && !w->req)
			break;
		pthread_mutex_unlock(&w->lock);
		pid_t pid = waitpid(-1, &status, __WALL | __WNOTHREAD);
		pthread_mutex_lock(&w->lock);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			log_err(w->log, "walker: waitpid: %s", strerror(errno));
			break;
		}
		if (pid == w->bell) {
			on_bell(w, status, &ticks);
			if (!WIFSTOPPED(status)) {
				log_err(w->log, "walker: its doorbell process died");
				w->bell = 0;
				break;
			}
			continue;
		}
		struct wthread *th;
		struct stacksnap_target *t = find_owner(w, pid, &th);
		if (!t)
			on_stranger(w, pid, status);
		else if (WIFSTOPPED(status))
			on_stop(w, t, th, status);
		else
			on_gone(w, t, th, status);
	}
	w->tracer_done = true;
	if (w->req && !w->req->done) {
		w->req->result = -ECANCELED;
		w->req->done = true;
	}
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (w->bell > 0) {
		kill(w->bell, SIGKILL);
		waitpid(w->bell, &status, __WALL);
	}
	return NULL;
}
