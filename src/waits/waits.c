/* waits.c - the wait-for graph of one captured process: each thread's
 * system call and innermost frames handed to the sources in order, the
 * first that claims it names the holders, then the kernel stack and the
 * cycle search. Knows no source's facts (waits_internal.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "waits_internal.h"
#include "proc_lines.h"
#include "addrspace/module.h"
#include "base/opts.h"
#include "base/vec.h"

/* In the order they are asked: a runtime's lock before the futex it
 * sleeps on, a lock's futex before the catch-alls. */
static const struct wait_source_ops *const sources[] = {
	&wait_java_ops, &wait_python_ops, &wait_futex_ops, &wait_fds_ops, &wait_child_ops, &wait_flock_ops,
	&wait_sleep_ops,
};

static const char *const kind_names[] = {
	[STACKSNAP_WAIT_NONE] = "none", [STACKSNAP_WAIT_MUTEX] = "mutex",
	[STACKSNAP_WAIT_RWLOCK] = "rwlock", [STACKSNAP_WAIT_CONDVAR] = "condvar",
	[STACKSNAP_WAIT_SEMAPHORE] = "semaphore", [STACKSNAP_WAIT_FUTEX] = "futex",
	[STACKSNAP_WAIT_PIPE] = "pipe", [STACKSNAP_WAIT_SOCKET] = "socket",
	[STACKSNAP_WAIT_CHILD] = "child", [STACKSNAP_WAIT_FILE_LOCK] = "file-lock",
	[STACKSNAP_WAIT_POLL] = "poll", [STACKSNAP_WAIT_SLEEP] = "sleep",
	[STACKSNAP_WAIT_DISK] = "disk", [STACKSNAP_WAIT_OTHER] = "other",
	[STACKSNAP_WAIT_JOIN] = "join", [STACKSNAP_WAIT_PYTHON_LOCK] = "python-lock",
	[STACKSNAP_WAIT_GIL] = "gil", [STACKSNAP_WAIT_JAVA_MONITOR] = "java-monitor",
	[STACKSNAP_WAIT_JAVA_LOCK] = "java-lock",
};

const char *stacksnap_wait_kind__str(enum stacksnap_wait_kind kind)
{
	return (unsigned)kind < sizeof(kind_names) / sizeof(kind_names[0]) &&
	       kind_names[kind] ? kind_names[kind] : "other";
}

const char *waits__strf(struct stacksnap_waits *w, const char *fmt, ...)
{
	va_list ap;
	char *s, **slot;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s)
		return NULL;
	slot = VEC_PUSH(w->strs, w->nstrs, w->strs_cap);
	if (!slot) {
		free(s);
		return NULL;
	}
	*slot = s;
	return s;
}

int waits__add_owner(struct wait_thread *t, pid_t pid, pid_t tid)
{
	struct stacksnap_wait_owner *o;

	for (size_t i = 0; i < t->pub.nowners; i++)
		if (t->owners[i].pid == pid && t->owners[i].tid == tid)
			return 0;
	o = VEC_PUSH(t->owners, t->pub.nowners, t->owners_cap);
	if (!o)
		return -ENOMEM;
	o->pid = pid;
	o->tid = tid;
	t->pub.owners = t->owners;
	return 0;
}

/* The holder tid of a lock as another process or thread: an edge, or
 * why none (an owner that no longer exists). */
int waits__name_owner(struct stacksnap_waits *w, struct wait_thread *t, uint32_t tid)
{
	if (w->o.saved) {
		if (waits__find(w, (pid_t)tid))
			return waits__add_owner(t, w->pid, (pid_t)tid);
		t->pub.no_owner = waits__strf(w, "its owner, thread %u, is not among the "
					      "saved threads (it exited holding the "
					      "lock, or the memory was reused)", tid);
		return 0;
	}
	pid_t tgid = waits__tgid((pid_t)tid);

	if (!tgid) {
		t->pub.no_owner = waits__strf(w, "its owner, thread %u, no longer exists "
					      "(it exited holding the lock, or the "
					      "memory was reused)", tid);
		return 0;
	}
	return waits__add_owner(t, tgid, (pid_t)tid);
}

struct wait_thread *waits__find(struct stacksnap_waits *w, pid_t tid)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->threads[i].th->tid == tid)
			return &w->threads[i];
	return NULL;
}

int waits__read(struct stacksnap_waits *w, uint64_t addr, void *buf, size_t len)
{
	return w->mem ? stacksnap_mem__read(w->mem, addr, buf, len) : -EFAULT;
}

bool waits__thread_exists(struct stacksnap_waits *w, pid_t tid)
{
	return w->o.saved ? waits__find(w, tid) != NULL : waits__tgid(tid) > 0;
}

/* Reads a small /proc file into buf (NUL-terminated). Bytes read, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -1;
	r = read(fd, buf, size - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = 0;
	return r;
}

pid_t waits__tgid(pid_t tid)
{
	char path[64], buf[1024];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (read_small(path, buf, sizeof(buf)) <= 0 || !(p = strstr(buf, "\nTgid:")))
		return 0;
	return (pid_t)strtol(p + 6, NULL, 10);
}

const char *waits__comm(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	r = read_small(path, buf, size);
	if (r <= 0) {
		snprintf(buf, size, "?");
		return buf;
	}
	if (buf[r - 1] == '\n')
		buf[r - 1] = 0;
	return buf;
}

int waits__frame_has(const struct wait_thread *t, const char *s)
{
	for (size_t i = 0; i < t->nfn; i++)
		if (t->fn[i] && strstr(t->fn[i], s))
			return 1;
	return 0;
}

struct stacksnap_waits *stacksnap_waits__new(struct stacksnap_ctx *ctx, pid_t pid,
					     struct stacksnap_addrspace *as,
					     const struct stacksnap_waits_opts *opts)
{
	struct stacksnap_waits *w = calloc(1, sizeof(*w));

	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts_in(&w->o, sizeof(w->o), opts, 0)) {
		free(w);
		errno = EINVAL;
		return NULL;
	}
	w->ctx = ctx;
	w->log = ctx ? &ctx->log : NULL;
	w->pid = pid;
	w->as = as;
	w->mem = w->o.mem;
	if (!w->mem && !w->o.saved) {
		w->mem = stacksnap_mem__new_pid(pid);
		w->own_mem = true;
		if (!w->mem) {
			free(w);
			return NULL;
		}
	}
	return w;
}

int stacksnap_waits__add_thread(struct stacksnap_waits *w,
				const struct stacksnap_thread *th,
				const struct stacksnap_frame *frames, size_t nframes)
{
	struct wait_thread *t = VEC_PUSH(w->threads, w->n, w->cap);

	if (!t)
		return fail(-ENOMEM);
	memset(t, 0, sizeof(*t));
	t->th = th;
	t->frames = frames;
	t->nframes = nframes;
	t->nr = -1;
	t->pub.kind = STACKSNAP_WAIT_NONE;
	t->pub.syscall = -1;
	t->pub.fd = -1;
	t->pub.frame = -1;
	return 0;
}

/* Names the innermost frames (the symbol tables only: no lines). */
static void name_frames(struct stacksnap_waits *w, struct wait_thread *t)
{
	for (size_t i = 0; i < t->nframes && i < WAIT_FRAMES; i++) {
		struct stacksnap_sym sym;

		memset(&sym, 0, sizeof(sym));
		if (w->as && stacksnap_addrspace__symbolize(w->as, t->frames[i].pc,
							    i > 0, 0, &sym, 1) >= 1) {
			t->fn[i] = sym.function;
			t->mod[i] = sym.module;
		}
		t->nfn = i + 1;
	}
}

/* The system call thread t is in, from /proc/PID/task/TID/syscall after
 * the thaw, for threads whose capture kept no orig_rax (one a caller
 * built): kept only when its sp and pc are the captured ones (the thread
 * has not left the call it was captured in since). */
static void read_syscall(struct stacksnap_waits *w, struct wait_thread *t)
{
	char path[96], buf[512];
	struct syscall_line sl;
	const struct stacksnap_regs *r = &t->th->regs;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)w->pid,
		 (int)t->th->tid);
	/* A thread the freeze interrupted restarts its call after the
	 * detach: until it ran, it is on its way back in ("running", or pc
	 * at the syscall instruction, 2 bytes before the captured one). */
	for (int tries = 0;; tries++) {
		if (read_small(path, buf, sizeof(buf)) <= 0)
			return;
		if (!syscall_line__parse(buf, &sl) && sl.sp == r->regs[STACKSNAP_REG_RSP] &&
		    (sl.pc == r->regs[STACKSNAP_REG_RIP] ||
		     sl.pc + 2 == r->regs[STACKSNAP_REG_RIP]))
			break;
		/* Only "running" is a thread on its way back in; anything
		 * else (another call, another place) is a thread that moved
		 * on. One still running after the tries whose registers say
		 * the capture interrupted its call (rax -EINTR, -ERESTART*)
		 * has not been given a CPU yet (a loaded machine): its call is
		 * named from its frames, as a restarted one is. */
		if (strncmp(buf, "running", 7)) {
			t->pub.detail = "left the system call it was captured in";
			return;
		}
		if (tries == 10) {
			int64_t ret = (int64_t)r->regs[STACKSNAP_REG_RAX];

			if (ret != -EINTR && !(ret >= -516 && ret <= -512))
				t->pub.detail = "left the system call it was captured in";
			return;
		}
		usleep(200);
	}
	t->nr = sl.nr;
}

/* The system call thread t was in at the capture, from the registers the
 * capture kept (no /proc read): orig_rax, when rax says the call had not
 * returned — -ENOSYS, asleep in it (the non-stop iterator's saved
 * registers); -EINTR or -ERESTART* (512-516), the freeze interrupted it.
 * A call that had returned, or no call outside D state (a thread that
 * left its wait before the freeze stopped it), waits for nothing; D state
 * without a call (a page fault) is the disk wait it is. */
static void captured_syscall(struct stacksnap_waits *w, struct wait_thread *t)
{
	const struct stacksnap_thread *th = t->th;
	int64_t ret = (int64_t)th->regs.regs[STACKSNAP_REG_RAX];
	bool in_call = ret == -ENOSYS || ret == -EINTR || (ret >= -516 && ret <= -512);

	if (th->orig_rax < 0) {
		if (th->state != 'D')
			t->pub.detail = "not in a system call at the capture (it ran since "
					"its state was read)";
		return;
	}
	if (!in_call) {
		t->pub.detail = waits__strf(w, "its system call %" PRId64 " had returned "
					    "at the capture (it was woken)", th->orig_rax);
		return;
	}
	t->nr = (long)th->orig_rax;
}

/* The wait a saved capture (or a restarted call, whose number the kernel
 * replaced) most likely is, from the frames: only the kinds whose facts
 * the frames carry. */
static void nr_from_frames(struct wait_thread *t)
{
	/* Innermost frame first: poll's wrapper before a caller's name. */
	static const struct {
		const char *fn;
		long nr;
	} by_frame[] = {
		{ "futex", NR_FUTEX }, { "lll_lock_wait", NR_FUTEX },
		{ "clock_nanosleep", NR_CLOCK_NANOSLEEP }, { "nanosleep", NR_NANOSLEEP },
		{ "epoll_wait", NR_EPOLL_WAIT }, { "epoll_pwait", NR_EPOLL_PWAIT },
		{ "ppoll", NR_PPOLL }, { "poll", NR_POLL },
		{ "pselect", NR_PSELECT6 }, { "select", NR_SELECT },
	};

	for (size_t f = 0; f < 2 && f < t->nfn; f++)
		for (size_t i = 0; t->fn[f] && i < sizeof(by_frame) / sizeof(by_frame[0]); i++)
			if (strstr(t->fn[f], by_frame[i].fn)) {
				t->nr = by_frame[i].nr;
				t->nr_guessed = true;
				return;
			}
}

/* The frame that waits: the first outside the module of frame 0 (libc's
 * wait functions), else frame 0. */
static int waiting_frame(const struct wait_thread *t)
{
	for (size_t i = 1; i < t->nfn; i++)
		if (t->mod[i] && t->mod[0] && strcmp(t->mod[i], t->mod[0]))
			return (int)i;
	return t->nframes ? 0 : -1;
}

/* Keeps frames[0, n) (strings kept by w) as t's kernel frames. */
static int keep_kernel_frames(struct stacksnap_waits *w, struct wait_thread *t,
			      const char **frames, size_t n)
{
	char **keep;

	if (!n) {
		free(frames);
		return 0;
	}
	/* The array itself is kept with the strings. */
	if (!(keep = VEC_PUSH(w->strs, w->nstrs, w->strs_cap))) {
		free(frames);
		return -ENOMEM;
	}
	*keep = (char *)frames;
	t->pub.kernel_frames = frames;
	t->pub.nkernel_frames = n;
	return 0;
}

/* /proc/PID/task/TID/stack (root only): the kernel's frames, named by the
 * kernel ("futex_wait_queue+0x60/0x90"). */
static int kernel_stack(struct stacksnap_waits *w, struct wait_thread *t)
{
	char path[96], buf[4096], *line, *save = NULL;
	const char **frames = NULL;
	size_t n = 0, cap = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)w->pid,
		 (int)t->th->tid);
	/* A thread the freeze stopped may not have run since its detach
	 * (ptrace_stop on top): given a few moments, else left out. */
	for (int tries = 0;; tries++) {
		if (read_small(path, buf, sizeof(buf)) <= 0)
			return 0;
		if (!strstr(buf, "ptrace_stop") && !strstr(buf, "do_signal_stop"))
			break;
		if (tries == 10)
			return 0;
		usleep(200);
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *name = strchr(line, ']');
		const char **slot;

		name = name ? name + 1 : line;
		while (*name == ' ')
			name++;
		if (!*name)
			continue;
		slot = VEC_PUSH(frames, n, cap);
		if (!slot || !(*slot = waits__strf(w, "%s", name))) {
			free(frames);
			return -ENOMEM;
		}
	}
	return keep_kernel_frames(w, t, frames, n);
}

/* The kernel stack the non-stop iterator read with the thread's user
 * registers (stacksnap_thread.kernel_ips: the same walk as
 * /proc/PID/task/TID/stack, at the capture's instant, at no cost), named
 * from kallsyms ("futex_wait_queue+0x60"; an address kallsyms does not
 * name as "0x..."). 1 when taken, 0 when there are no symbols (then
 * /proc is read), or -ENOMEM. */
static int kernel_stack_ips(struct stacksnap_waits *w, struct wait_thread *t)
{
	const struct stacksnap_thread *th = t->th;
	const char **frames;

	if (!w->ksyms_tried) {
		w->ksyms_tried = true;
		w->ksyms = stacksnap_kallsyms__load(w->ctx ? w->ctx->cache_dir : NULL,
						    NULL, w->ctx ? w->ctx->log.fn : NULL,
						    w->ctx ? w->ctx->log.user : NULL);
	}
	if (!w->ksyms)
		return 0;
	if (!(frames = calloc(th->nkernel_ips, sizeof(*frames))))
		return -ENOMEM;
	for (unsigned i = 0; i < th->nkernel_ips; i++) {
		uint64_t off = 0;
		const char *name = stacksnap_kallsyms__lookup(w->ksyms, th->kernel_ips[i], &off);

		frames[i] = name ? waits__strf(w, "%s+0x%" PRIx64, name, off)
				 : waits__strf(w, "0x%" PRIx64, th->kernel_ips[i]);
		if (!frames[i]) {
			free(frames);
			return -ENOMEM;
		}
	}
	return keep_kernel_frames(w, t, frames, th->nkernel_ips) < 0 ? -ENOMEM : 1;
}

/* Whether the kernel's frames say more than the wait does: a thread in
 * D state, a system call no source knows, a file or socket (a network
 * file system, a driver). A lock's, a sleep's or a child's kernel stack is
 * always the same few frames, and each read costs ~100 us. */
static bool wants_kernel_stack(const struct wait_thread *t)
{
	switch (t->pub.kind) {
	case STACKSNAP_WAIT_NONE:
	case STACKSNAP_WAIT_MUTEX:
	case STACKSNAP_WAIT_RWLOCK:
	case STACKSNAP_WAIT_CONDVAR:
	case STACKSNAP_WAIT_SEMAPHORE:
	case STACKSNAP_WAIT_FUTEX:
	case STACKSNAP_WAIT_JOIN:
	case STACKSNAP_WAIT_SLEEP:
	case STACKSNAP_WAIT_CHILD:
	case STACKSNAP_WAIT_POLL:
	case STACKSNAP_WAIT_PYTHON_LOCK:
	case STACKSNAP_WAIT_GIL:
	case STACKSNAP_WAIT_JAVA_MONITOR:
	case STACKSNAP_WAIT_JAVA_LOCK:
		return t->th->state == 'D';
	default:
		return true;
	}
}

static int resolve_thread(struct stacksnap_waits *w, struct wait_thread *t)
{
	const struct stacksnap_thread *th = t->th;
	const struct stacksnap_regs *r = &th->regs;
	static const int argreg[6] = { STACKSNAP_REG_RDI, STACKSNAP_REG_RSI,
				       STACKSNAP_REG_RDX, STACKSNAP_REG_R10,
				       STACKSNAP_REG_R8, STACKSNAP_REG_R9 };
	int err;

	/* A saved capture (a core) may not say the state: its frames will. */
	if (th->error || (th->state != 'S' && th->state != 'D' &&
			  !(w->o.saved && !th->state)))
		return 0;
	for (int i = 0; i < 6; i++)
		t->args[i] = r->regs[argreg[i]];
	name_frames(w, t);
	if (th->have_orig_rax)
		captured_syscall(w, t);
	else if (!w->o.saved)
		read_syscall(w, t);
	if (t->nr < 0 && t->pub.detail)
		return 0; /* it moved on: nothing it waits for now */
	if (t->nr < 0 || t->nr == NR_RESTART_SYSCALL)
		nr_from_frames(t);
	t->pub.syscall = t->nr;
	t->pub.frame = waiting_frame(t);
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
		if (w->o.locks_only && !sources[i]->lock)
			continue;
		if (!sources[i]->classify(w, t))
			continue;
		if (sources[i]->owners && (err = sources[i]->owners(w, t)) < 0)
			return err;
		break;
	}
	if (t->pub.kind == STACKSNAP_WAIT_NONE)
		t->pub.kind = th->state == 'D' ? STACKSNAP_WAIT_DISK
			: t->nr >= 0 || w->o.saved ? STACKSNAP_WAIT_OTHER
			: STACKSNAP_WAIT_NONE;
	if (t->pub.kind == STACKSNAP_WAIT_OTHER && w->o.saved && t->nr < 0) {
		t->pub.detail = "not known";
		t->pub.no_owner = "a saved capture keeps no system call number and no "
				  "file descriptors: only locks are read from it";
	}
	if (t->pub.kind == STACKSNAP_WAIT_OTHER && !t->pub.detail)
		t->pub.detail = waits__strf(w, "in system call %ld", t->nr);
	if (th->nonstop)
		t->pub.waited_ns = th->waited_ns;
	if (w->o.saved || w->o.no_kernel_stacks)
		return 0;
	/* Read non-stop: the iterator's copy, for every thread asleep. */
	if (th->nonstop && th->nkernel_ips && (err = kernel_stack_ips(w, t)) != 0)
		return err < 0 ? err : 0;
	if (wants_kernel_stack(t) && (err = kernel_stack(w, t)) < 0)
		return err;
	return 0;
}

/* The waits a snapshot file kept (opts.kept): each thread's as the dump
 * that saved it found them, and its deadlocks; nothing read. */
static int take_kept(struct stacksnap_waits *w, const struct stacksnap_wait_owner *members,
		     const size_t *start, size_t ncycles)
{
	size_t nmembers = ncycles ? start[ncycles] : 0;

	for (size_t i = 0; i < w->n; i++) {
		const struct stacksnap_wait *k = stacksnap_saved__wait(w->o.kept,
								       w->threads[i].th->tid);

		if (k)
			w->threads[i].pub = *k;
	}
	w->members = malloc((nmembers ? nmembers : 1) * sizeof(*w->members));
	w->start = malloc((ncycles + 1) * sizeof(*w->start));
	if (!w->members || !w->start)
		return -ENOMEM;
	if (nmembers)
		memcpy(w->members, members, nmembers * sizeof(*members));
	w->start[0] = 0;
	if (ncycles)
		memcpy(w->start, start, (ncycles + 1) * sizeof(*start));
	w->ncycles = ncycles;
	return 0;
}

int stacksnap_waits__resolve(struct stacksnap_waits *w)
{
	const struct stacksnap_wait_owner *members;
	const size_t *start;
	size_t ncycles;
	int err;

	if (w->o.kept && !stacksnap_saved__deadlocks(w->o.kept, &members, &start, &ncycles))
		return (err = take_kept(w, members, start, ncycles)) < 0 ? fail(err) : 0;

	for (size_t i = 0; i < w->n; i++)
		if ((err = resolve_thread(w, &w->threads[i])) < 0)
			return fail(err);
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (sources[i]->after && (err = sources[i]->after(w)) < 0)
			return fail(err);
	if ((err = waits_graph__cycles(w)) < 0)
		return fail(err);
	return 0;
}

const struct stacksnap_wait *stacksnap_waits__thread(const struct stacksnap_waits *w,
						     pid_t tid)
{
	for (size_t i = 0; w && i < w->n; i++)
		if (w->threads[i].th->tid == tid)
			return &w->threads[i].pub;
	return NULL;
}

size_t stacksnap_waits__deadlock_count(const struct stacksnap_waits *w)
{
	return w ? w->ncycles : 0;
}

int stacksnap_waits__deadlock(const struct stacksnap_waits *w, size_t i,
			      const struct stacksnap_wait_owner **members, size_t *n)
{
	if (!w || i >= w->ncycles)
		return fail(-EINVAL);
	*members = w->members + w->start[i];
	*n = w->start[i + 1] - w->start[i];
	return 0;
}

void stacksnap_waits__free(struct stacksnap_waits *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		free(w->threads[i].owners);
	for (size_t i = 0; i < w->nstrs; i++)
		free(w->strs[i]);
	free(w->strs);
	free(w->threads);
	free(w->members);
	free(w->start);
	if (w->own_mem)
		stacksnap_mem__free(w->mem);
	stacksnap_kallsyms__free(w->ksyms);
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (sources[i]->free)
			sources[i]->free(w);
	waits__data_symbol_free(w);
	free(w);
}
