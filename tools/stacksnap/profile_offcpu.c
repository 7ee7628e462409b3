/* profile_offcpu.c - `stacksnap profile --off-cpu`: where threads wait.
 * The trace's eBPF capture sends a followed thread's user stack when it
 * leaves a CPU to wait (sched_switch) and a mark when it is woken
 * (sched_wakeup); the stack, unwound by the trace (stacksnap_procs), is
 * weighted by the nanoseconds between the two (the time blocked), and
 * aggregated like every profile. With -p PID, the threads already blocked
 * when the profile starts (no switch to come) are read once, without
 * stopping them, and their waits counted from the start. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_cmd.h"
#include "options.h"
#include "print.h"
#include "profile_empty.h"
#include "profile_offcpu.h"
#include "profile_out.h"
#include "monotonic.h"
#include "stop_signal.h"

/* A thread off the CPU: its stack at the switch, waiting for its wakeup.
 * Invariant: slots form an open-addressing table keyed by tid (cap a power
 * of two, n < cap / 2); a slot with tid keeps its frames buffer across
 * waits; waiting says whether off_ns and frames are a wait in progress.
 * wake_ns: the last wakeup that ended no wait (records of two CPUs may
 * arrive out of order: a wakeup just after the switch, before it). */
struct waiter {
	pid_t tid;
	bool waiting;
	uint64_t off_ns, wake_ns;
	struct stacksnap_frame *frames;
	size_t nframes, capframes;
	/* Its Python frames at the switch (strings: the trace's, which keeps
	 * them as long as it follows the process). */
	struct stacksnap_runtime_frame *rframes;
	size_t nrframes, caprframes;
	enum stacksnap_end end;
	struct stacksnap_addrspace *as;	/* the process's, at the switch */
	char comm[16];
};

struct offcpu {
	const struct offcpu_args *a;
	struct options print;		/* what symbolize_thread reads */
	struct stacksnap_stacks *stacks;
	struct waiter *slots;
	size_t n, cap;
	unsigned off_event;		/* index of "off-cpu" ("wakeup" + 1) */
	uint64_t switches, waits, wait_ns;
	uint64_t unended;	/* waits whose wakeup never came (lost record) */
	uint64_t blocked_at_start; /* -p: waits counted from the start */
	/* -p: the threads asleep before the profile started, with their
	 * context switches then (n_asleep entries); the address space their
	 * stacks were read in and the capture, kept until the end (waiter.as,
	 * and the strings of its runtime frames). */
	pid_t *asleep;
	uint64_t *asleep_switches;
	size_t n_asleep;
	struct stacksnap_addrspace *start_as;
	struct stacksnap_snapshot *start_snap;
	int error;
};

static struct waiter *waiter_of(struct offcpu *oc, pid_t tid, bool add)
{
	size_t i;

	if (add && (oc->n + 1) * 2 >= oc->cap) {
		size_t ncap = oc->cap ? oc->cap * 2 : 64;
		struct waiter *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return NULL;
		for (size_t k = 0; k < oc->cap; k++) {
			if (!oc->slots[k].tid)
				continue;
			for (i = (size_t)oc->slots[k].tid * 2654435761u & (ncap - 1); ns[i].tid;
			     i = (i + 1) & (ncap - 1))
				;
			ns[i] = oc->slots[k];
		}
		free(oc->slots);
		oc->slots = ns;
		oc->cap = ncap;
	}
	if (!oc->cap)
		return NULL;
	for (i = (size_t)tid * 2654435761u & (oc->cap - 1); oc->slots[i].tid;
	     i = (i + 1) & (oc->cap - 1))
		if (oc->slots[i].tid == tid)
			return &oc->slots[i];
	if (!add)
		return NULL;
	oc->slots[i].tid = tid;
	oc->n++;
	return &oc->slots[i];
}

/* Adds w's wait, ended at end_ns, to the profile (its stack symbolized
 * now, in as), under the thread's name then (comm; NULL: at the switch;
 * a thread named while it waited has its new name, as its next waits). */
static int add_wait(struct offcpu *oc, struct waiter *w, struct stacksnap_addrspace *as,
		    uint64_t end_ns, const char *comm)
{
	struct thread_result r = { .frames = w->frames, .nframes = (int)w->nframes,
				   .end = w->end, .rframes = w->rframes,
				   .nrframes = w->nrframes };
	int err = 0;

	w->waiting = false;
	if (end_ns <= w->off_ns)
		return 0;
	oc->waits++;
	oc->wait_ns += end_ns - w->off_ns;
	if (!as) /* the process is gone: no symbols, addresses only */
		r.nframes = 0;
	err = symbolize_thread(&oc->print, as, &r);
	if (!err)
		err = profile_out_add_thread(oc->stacks, as,
					     comm && *comm ? comm : w->comm[0] ? w->comm : "?",
					     &r, end_ns - w->off_ns);
	free(r.out);
	return err;
}

static int on_event(const struct stacksnap_trace_event *ev, void *user)
{
	struct offcpu *oc = user;
	struct waiter *w;

	if (ev->event == oc->off_event) {
		oc->switches++;
		if (!(w = waiter_of(oc, ev->tid, true)))
			goto nomem;
		oc->unended += w->waiting;
		if (w->capframes < (size_t)ev->nframes) {
			void *f = realloc(w->frames, (size_t)ev->nframes * sizeof(*w->frames));

			if (!f)
				goto nomem;
			w->frames = f;
			w->capframes = (size_t)ev->nframes;
		}
		memcpy(w->frames, ev->frames, (size_t)ev->nframes * sizeof(*w->frames));
		w->nframes = (size_t)ev->nframes;
		if (w->caprframes < ev->nrframes) {
			void *f = realloc(w->rframes, ev->nrframes * sizeof(*w->rframes));

			if (!f)
				goto nomem;
			w->rframes = f;
			w->caprframes = ev->nrframes;
		}
		if (ev->nrframes)
			memcpy(w->rframes, ev->rframes, ev->nrframes * sizeof(*w->rframes));
		w->nrframes = ev->nrframes;
		w->end = ev->end;
		w->as = ev->as;
		w->off_ns = ev->time_ns;
		w->waiting = true;
		snprintf(w->comm, sizeof(w->comm), "%s", ev->comm);
		if (w->wake_ns > w->off_ns && add_wait(oc, w, ev->as, w->wake_ns, NULL))
			goto nomem; /* its wakeup came first */
		return 0;
	}
	/* wakeup: the end of the thread's wait, when one began while followed. */
	if (!(w = waiter_of(oc, ev->tid, true)))
		goto nomem;
	if (!w->waiting)
		w->wake_ns = ev->time_ns;
	else if (add_wait(oc, w, ev->as, ev->time_ns, ev->comm))
		goto nomem;
	return 0;
nomem:
	oc->error = ENOMEM;
	return -ENOMEM;
}


/* Context switches of tid so far (voluntary and not), from
 * /proc/PID/task/TID/status; UINT64_MAX when unreadable (gone). */
static uint64_t switches_of(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	uint64_t n = 0;
	unsigned found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (!(f = fopen(path, "re")))
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1) {
			n += v;
			found++;
		}
	}
	fclose(f);
	return found == 2 ? n : UINT64_MAX;
}

/* Before the process is followed: its threads asleep (S, D, or T: stopped) and their
 * switch counts. A thread whose count is the same once its stack is read
 * (asleep, not run meanwhile) has been in that one wait since before the
 * profile began: no switch event of it will come. Returns 0 or -ENOMEM. */
static int note_asleep(struct offcpu *oc, pid_t pid)
{
	char path[64], buf[512], *p;
	struct dirent *de;
	size_t cap = 0;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return 0; /* gone: said when followed */
	while (!err && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		FILE *f;

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
		if (!(f = fopen(path, "re")))
			continue;
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		if (!p || (p[2] != 'S' && p[2] != 'D' && p[2] != 'T'))
			continue;
		if (oc->n_asleep == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			pid_t *t = realloc(oc->asleep, ncap * sizeof(*t));
			uint64_t *c = t ? realloc(oc->asleep_switches, ncap * sizeof(*c)) : NULL;

			if (t)
				oc->asleep = t;
			if (!c) {
				err = -ENOMEM;
				break;
			}
			oc->asleep_switches = c;
			cap = ncap;
		}
		oc->asleep[oc->n_asleep] = tid;
		oc->asleep_switches[oc->n_asleep++] = switches_of(pid, tid);
	}
	closedir(d);
	return err;
}

/* Once followed: the stacks of the threads note_asleep found, read
 * without stopping them (the non-stop capture: a thread that runs is not
 * read so), each a wait in progress since start_ns when the thread did
 * not switch since it was noted. A capture that fails loses only those
 * waits (said with -v). Returns 0 or -ENOMEM. */
static int add_asleep(struct offcpu *oc, pid_t pid, uint64_t start_ns)
{
	const struct offcpu_args *a = oc->a;
	struct stacksnap_snapshot *snap;
	struct stacksnap_unwinder *uw;
	struct stacksnap_mem *mem;
	int err = 0;

	if (!oc->n_asleep)
		return 0;
	oc->start_as = stacksnap_addrspace__from_pid(a->ctx, pid);
	if (!oc->start_as)
		return errno == ENOMEM ? -ENOMEM : 0;
	STACKSNAP_OPTS(stacksnap_snapshot_opts, so, .tids = oc->asleep, .ntids = oc->n_asleep,
		       .nonstop = true, .addrspace = oc->start_as);
	snap = oc->start_snap = stacksnap_snapshot__capture(a->ctx, pid, &so);
	if (!snap)
		return errno == ENOMEM ? -ENOMEM : 0;
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = a->max_stack);
	uw = stacksnap_unwinder__new(&uo);
	mem = stacksnap_mem__new_copy(NULL, 0, 0);
	if (!uw || !mem)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < stacksnap_snapshot__thread_count(snap); i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, i);
		struct thread_result r = { .thread = th };
		struct waiter *w;
		size_t k;

		for (k = 0; k < oc->n_asleep && oc->asleep[k] != th->tid; k++)
			;
		if (th->error || !th->nonstop || k == oc->n_asleep ||
		    oc->asleep_switches[k] == UINT64_MAX ||
		    switches_of(pid, th->tid) != oc->asleep_switches[k])
			continue; /* it ran since: its waits are seen switch by switch */
		stacksnap_mem__set_copy(mem, th->stack, th->stack ? th->stack_len : 0,
					th->stack_base);
		stacksnap_mem__set_more(mem, th->more_stacks, th->nmore_stacks);
		if ((err = unwind_thread(&r, uw, oc->start_as, mem,
					 a->max_stack ? a->max_stack : 127)))
			break;
		/* Its Python frames, merged as the trace merges an event's. */
		int nr = r.nframes > 0 ? stacksnap_snapshot__runtime_frames(
				snap, i, r.frames, (size_t)r.nframes, NULL, 0, NULL) : 0;

		if (!(w = waiter_of(oc, th->tid, true))) {
			err = -ENOMEM;
		} else if (r.nframes > 0) {
			free(w->frames);
			w->frames = r.frames;
			r.frames = NULL;
			w->nframes = w->capframes = (size_t)r.nframes;
			w->nrframes = 0;
			if (nr > 0 && (w->rframes = calloc((size_t)nr, sizeof(*w->rframes)))) {
				w->caprframes = (size_t)nr;
				nr = stacksnap_snapshot__runtime_frames(snap, i, w->frames,
									w->nframes, w->rframes,
									(size_t)nr, NULL);
				w->nrframes = nr > 0 ? (size_t)nr : 0;
			}
			w->end = r.end;
			w->as = oc->start_as;
			w->off_ns = start_ns;
			w->waiting = true;
			snprintf(w->comm, sizeof(w->comm), "%s", th->name);
			oc->blocked_at_start++;
		}
		free(r.frames);
	}
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
	return err;
}

static int exit_for(int err)
{
	switch (err) {
	case -EPERM: case -EACCES: return EXIT_NOT_PERMITTED;
	case -ESRCH: case -ENOENT: return EXIT_NO_PROCESS;
	}
	return EXIT_ERROR;
}

int profile_offcpu_run(const struct offcpu_args *a)
{
	struct offcpu oc = { .a = a };
	struct stacksnap_trace *tr = NULL;
	struct stacksnap_trace_stats st;
	FILE *out = NULL;
	/* -- CMD: child is -1 once reaped; pgrp, its process group, is
	 * ended at the end whatever happened (child_cmd.h). */
	pid_t child = -1, pgrp = -1, target = a->pid;
	int rc = EXIT_ERROR, r, child_status = 0, go_fd = -1, err_fd = -1;
	uint64_t t0, end_ns, start_ns;
	struct cpu_use cpu = { 0 };	/* -p's at the start: why no waits */

	oc.print.no_demangle = a->no_demangle;
	STACKSNAP_OPTS(stacksnap_stacks_opts, sopts, .sample_type = "off_cpu",
		       .sample_unit = "nanoseconds",
		       .time_ns = (uint64_t)time(NULL) * 1000000000ull);
	oc.stacks = stacksnap_stacks__new(&sopts);
	if (!oc.stacks) {
		fprintf(stderr, "stacksnap: out of memory\n");
		goto out;
	}
	if (!(out = profile_out_open(a->out, "stacksnap profile")))
		goto out;
	STACKSNAP_OPTS(stacksnap_trace_opts, topts, .stack_size = a->stack_size,
		       .max_frames = a->max_stack, .pid_hint = a->pid);
	tr = stacksnap_trace__new(a->ctx, &topts);
	if (!tr)
		goto out; /* the log said why */
	r = stacksnap_trace__add_off_cpu(tr);
	if (r < 0) {
		rc = exit_for(r);
		goto out;
	}
	oc.off_event = 0; /* the first events added: off-cpu, then wakeup */
	if (a->cmd) {
		child = child_cmd_spawn(a->cmd, &go_fd, &err_fd);
		if (child < 0) {
			fprintf(stderr, "stacksnap profile: cannot start '%s': %s\n",
				a->cmd[0], strerror(errno));
			rc = EXIT_CANNOT_RUN;
			goto out;
		}
		pgrp = child;
		target = child;
	}
	stop_signal_catch();
	if (a->pid && note_asleep(&oc, a->pid)) {
		fprintf(stderr, "stacksnap: out of memory\n");
		goto out;
	}
	if ((r = stacksnap_trace__start(tr))) {
		rc = exit_for(r); /* the log said why */
		goto out;
	}
	start_ns = monotonic_ns(); /* -p's waits begun before count from here */
	if ((r = stacksnap_trace__follow(tr, target))) {
		rc = exit_for(r); /* the log said why */
		goto out;
	}
	if (a->pid && add_asleep(&oc, a->pid, start_ns)) {
		fprintf(stderr, "stacksnap: out of memory\n");
		goto out;
	}
	/* let CMD exec, followed from its first instruction */
	if (go_fd >= 0 &&
	    (rc = child_cmd_release("stacksnap profile", a->cmd, &go_fd, err_fd)))
		goto out;
	t0 = monotonic_ns();
	cpu_use_begin(&cpu, a->pid);
	rc = EXIT_OK;
	while (!stop_signal && !oc.error) {
		r = stacksnap_trace__poll(tr, 100, on_event, &oc);
		if (r < 0 && r != -EINTR && !oc.error) {
			fprintf(stderr, "stacksnap profile: reading events: %s\n", strerror(-r));
			rc = EXIT_ERROR;
			break;
		}
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
			child = -1;
			break;
		}
		if (a->pid && kill(a->pid, 0) && errno == ESRCH)
			break;
		if (a->duration > 0 && monotonic_ns() - t0 >= (uint64_t)(a->duration * 1e9))
			break;
	}
	end_ns = monotonic_ns();
	stacksnap_trace__stop(tr);
	while (!oc.error && stacksnap_trace__poll(tr, 0, on_event, &oc) > 0)
		;
	/* Threads still waiting when the profile ended: their wait so far. */
	for (size_t i = 0; i < oc.cap && !oc.error; i++)
		if (oc.slots[i].tid && oc.slots[i].waiting &&
		    add_wait(&oc, &oc.slots[i], oc.slots[i].as, end_ns, NULL))
			oc.error = ENOMEM;
	if (oc.error) {
		fprintf(stderr, "stacksnap profile: %s\n", strerror(oc.error));
		rc = EXIT_ERROR;
	}
	if (rc == EXIT_OK) {
		const char *title = a->cmd ? a->cmd[0] : "stacksnap profile --off-cpu";

		rc = profile_out_write(a->out, "stacksnap profile", out, oc.stacks, title);
		out = NULL; /* closed */
		if (!stacksnap_stacks__distinct(oc.stacks))
			profile_say_no_waits(&cpu, a->cmd);
	}
	stacksnap_trace__stats(tr, &st);
	if (a->stats)
		fprintf(stderr, "profile --off-cpu: %" PRIu64 " switches, %" PRIu64
			" waits (%" PRIu64 " begun before the start), %.3f s waited, %zu "
			"distinct stacks, %" PRIu64 " events lost, %" PRIu64 " waits without "
			"their wakeup\n", oc.switches, oc.waits, oc.blocked_at_start,
			(double)oc.wait_ns / 1e9, stacksnap_stacks__distinct(oc.stacks),
			st.lost, oc.unended);
	if (st.lost)
		fprintf(stderr, "stacksnap profile: %" PRIu64 " switches lost (ring "
			"buffer full; a smaller --stack-size helps)\n", st.lost);
	if (stop_signal && stop_signal != SIGINT)
		rc = EXIT_SIGNAL_BASE + stop_signal;
out:
	if (go_fd >= 0)
		close(go_fd); /* a held command that never ran exits */
	if (err_fd >= 0)
		close(err_fd);
	/* The profile is over: whatever is left of CMD's group is ended. */
	child_cmd_end(pgrp, child <= 0, stop_signal, &child_status);
	profile_out_abandon(a->out, out); /* not written: a failed run */
	stacksnap_trace__free(tr);
	for (size_t i = 0; i < oc.cap; i++) {
		free(oc.slots[i].frames);
		free(oc.slots[i].rframes);
	}
	free(oc.slots);
	free(oc.asleep);
	free(oc.asleep_switches);
	stacksnap_snapshot__free(oc.start_snap);
	stacksnap_addrspace__free(oc.start_as);
	stacksnap_stacks__free(oc.stacks);
	return rc;
}
