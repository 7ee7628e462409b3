/* ring_reader.c - the trace's ring buffer drained: process records
 * (fork, exec, exit) kept in the process table, event records checked,
 * unwound and handed to the caller; the counters of both sides. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "trace/trace_internal.h"

static int on_event(struct stacksnap_trace *tr, const struct trace_rec *r, size_t len)
{
	struct stacksnap_trace_event ev;
	struct stacksnap_stack_range more; /* (ev.more_stacks: until fn returns) */
	size_t stack_off = sizeof(*r), raw_off;
	int n;

	size_t py_off;

	raw_off = stack_off + ((r->cap.data_len + 7u) & ~7u) + ((r->more_len + 7u) & ~7u);
	py_off = raw_off + ((r->raw_len + 7u) & ~7u) + r->kframes * 8ull +
		 (r->kflags & TRACE_KEND_STATE ? sizeof(struct ku_end_state) : 0);
	if (r->event >= tr->nevents || r->more_len > len || raw_off + r->raw_len > len ||
	    py_off + r->pyframes * sizeof(struct trace_py_frame) > len)
		return 0; /* not ours: ignore */
	memset(&ev, 0, sizeof(ev));
	ev.hybrid_nframes = -1;
	ev.event = r->event;
	ev.name = tr->events[r->event].name;
	ev.time_ns = r->time;
	ev.pid = (pid_t)r->pid;
	ev.tid = (pid_t)r->tid;
	ev.cpu = r->cpu;
	ev.comm = r->comm;
	ev.capture = &r->cap;
	ev.stack = (const uint8_t *)r + stack_off;
	ev.raw = r->raw_len ? (const uint8_t *)r + raw_off : NULL;
	ev.raw_len = r->raw_len;
	ev.record_len = len;
	if (tr->events[r->event].kind == EV_WAKEUP) {
		/* No stack: when and which thread only. */
		ev.end = STACKSNAP_END_NONE;
		ev.as = stacksnap_procs__addrspace(tr->procs, ev.pid);
		return tr->fn ? tr->fn(&ev, tr->fn_user) : 0;
	}
	/* -a: a process met first by an event (it ran before the trace). */
	if (tr->o.all_processes && !procs_alive(tr->procs, ev.pid))
		stacksnap_procs__attach_pid(tr->procs, ev.pid);
	if (r->kframes || (trace__unwind_mode(tr) & KU_MODE_KERNEL))
		trace__kernel_event(tr, r, raw_off, &ev);
	if (trace__unwind_mode(tr) & KU_MODE_COPY) {
		/* A handler on an alternate signal stack: its thread's normal
		 * stack, copied after the first. */
		more = (struct stacksnap_stack_range){
			(const uint8_t *)r + stack_off + ((r->cap.data_len + 7u) & ~7u),
			r->more_len, r->more_start };
		trace__named_before(tr, ev.pid);
		if (r->more_len) {
			procs_set_more(tr->procs, &more, 1);
			ev.more_stacks = &more;
			ev.nmore_stacks = 1;
		}
		n = trace__unwind_copy(tr, r, raw_off, &ev);
		if (r->more_len)
			procs_set_more(tr->procs, NULL, 0);
		ev.frames = tr->frames;
	} else {
		n = ev.kernel_nframes;
		ev.end = trace_kernel_end(r->kend);
		ev.frames = tr->kframes;
	}
	ev.nframes = n;
	ev.as = stacksnap_procs__addrspace(tr->procs, ev.pid);
	if (r->pyframes)
		trace__python_event(tr, r, (const uint8_t *)r + py_off, &ev);
	else if (tr->npypend)
		trace__python_pending(tr);
	/* The user-space walk's (a JVM's stepper walked it). */
	if (!ev.nrframes && (trace__unwind_mode(tr) & KU_MODE_COPY))
		trace__named_event(tr, &ev);
	tr->st.received++;
	tr->st.unwound += n > 0;
	tr->st.complete += ev.end == STACKSNAP_END_COMPLETE;
	return tr->fn ? tr->fn(&ev, tr->fn_user) : 0;
}

int trace_on_record(void *ctx, void *data, size_t len)
{
	struct stacksnap_trace *tr = ctx;
	const struct trace_rec *r = data;
	int rc = 0;

	if (len < sizeof(*r))
		return 0;
	tr->st.bytes += len;
	/* The process's mappings as they were when the record was made. */
	trace_sideband__apply(tr, r->time);
	switch (r->kind) {
	case TRACE_REC_EVENT:
		rc = on_event(tr, r, len);
		break;
	case TRACE_REC_FORK:
		stacksnap_procs__fork(tr->procs, (pid_t)r->ppid, (pid_t)r->ptid,
				      (pid_t)r->pid, (pid_t)r->tid);
		if (r->pid != r->ppid) {
			trace__kernel_maps(tr, (pid_t)r->pid);
			trace__exec_ranges_update(tr, (pid_t)r->pid);
		}
		break;
	case TRACE_REC_EXEC:
		/* The new image's mappings: with the kernel's records, those
		 * applied up to now (the exec's own: the executable, ld.so,
		 * the vDSO); else those there now (ld.so maps the libraries
		 * later; a miss re-reads them). */
		if (!tr->sb) {
			stacksnap_procs__comm(tr->procs, (pid_t)r->pid, (pid_t)r->tid,
					      r->comm, true);
			stacksnap_procs__attach_pid(tr->procs, (pid_t)r->pid);
		}
		/* A new image: an interpreter in it is found now (an
		 * executable that holds it: Debian's python3.X); one in a
		 * libpython ld.so has not mapped yet is not. */
		trace__python_exec(tr, (pid_t)r->pid);
		/* After: loading the tables of the new image takes a while. */
		trace__kernel_maps(tr, (pid_t)r->pid);
		/* Not yet: ld.so has not mapped the libraries. The first
		 * event (sent as it is) sets them. */
		if (tr->o.compact)
			bpf_map_delete_elem(trace_programs__exec_ranges_fd(&tr->bpf),
					    &(uint32_t){ r->pid });
		break;
	case TRACE_REC_EXIT:
		stacksnap_procs__exit(tr->procs, (pid_t)r->pid, (pid_t)r->tid);
		break;
	}
	if (rc)
		tr->fn_rc = rc;
	return rc;
}

int stacksnap_trace__poll(struct stacksnap_trace *tr, int timeout_ms,
			  stacksnap_trace_fn fn, void *user)
{
	uint64_t before, drain_ns;
	int r;

	if (!tr || !tr->rb)
		return fail(-EINVAL);
	before = tr->st.received;
	if (tr->npypend)
		trace__python_pending(tr);
	tr->fn = fn;
	tr->fn_user = user;
	tr->fn_rc = 0;
	drain_ns = clock_monotonic_ns();
	/* The programs wake the reader in batches (an eighth of the ring, or
	 * 2 ms after the last wakeup): the events a quiet spell left below
	 * the mark woke nobody, and libbpf's poll reads only the rings its
	 * epoll woke for. So every poll that waited reads what is there. */
	r = timeout_ms ? ring_buffer__poll(tr->rb, timeout_ms) : 0;
	if (r >= 0 && !tr->fn_rc) {
		int r2 = ring_buffer__consume(tr->rb);

		r = r2 < 0 ? r2 : r + r2;
	}
	tr->fn = NULL;
	/* Not when the callback stopped the drain (older events wait), nor
	 * when the poll failed (interrupted: the ring was not read). */
	if (!tr->fn_rc && r >= 0)
		trace_sideband__settle(tr, drain_ns);
	if (tr->fn_rc)
		return tr->fn_rc;
	if (r < 0)
		return fail(r);
	return (int)(tr->st.received - before);
}

void stacksnap_trace__stats(const struct stacksnap_trace *tr,
			    struct stacksnap_trace_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!tr)
		return;
	*st = tr->st;
	st->rereads = procs_rereads(tr->procs);
	if (tr->kt) {
		struct ktable_stats ks;

		ktable__stats(tr->kt, &ks);
		st->table_bytes = ks.table_bytes + ks.fixed_bytes;
	}
	if (tr->bpf.proc) {
		int ncpu = libbpf_num_possible_cpus();
		uint64_t *vals = calloc((size_t)(ncpu > 0 ? ncpu : 1), sizeof(uint64_t));

		for (uint32_t k = 0; vals && k < TRACE_STAT_NR; k++) {
			uint64_t sum = 0;

			if (bpf_map_lookup_elem(trace_programs__stats_fd(&tr->bpf), &k, vals))
				continue;
			for (int c = 0; c < ncpu; c++)
				sum += vals[c];
			if (k == TRACE_STAT_EMITTED)
				st->captured = sum;
			else if (k == TRACE_STAT_LOST)
				st->lost = sum;
			else if (k == TRACE_STAT_SHORT)
				st->short_stacks = sum;
		}
		free(vals);
	}
}

int stacksnap_trace__lost_by_cpu(const struct stacksnap_trace *tr, uint64_t *lost,
				 size_t max)
{
	uint32_t k = TRACE_STAT_LOST;
	uint64_t *vals;
	int ncpu;

	if (!tr || !tr->bpf.proc)
		return -EINVAL;
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	/* The counter is per CPU: each program counts its drops where it ran. */
	if (bpf_map_lookup_elem(trace_programs__stats_fd(&tr->bpf), &k, vals)) {
		int err = -errno;

		free(vals);
		return err;
	}
	for (size_t c = 0; c < max && c < (size_t)ncpu; c++)
		lost[c] = vals[c];
	free(vals);
	return ncpu;
}
