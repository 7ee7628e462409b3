/* session.c - an event trace's life: created with its options, started
 * (BPF rights checked, the in-kernel tables made, the programs loaded
 * and attached through bpf/trace_programs.h, the ring buffer mapped),
 * processes followed (filter, mappings, executable ranges), stopped and
 * freed. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/maps_line.h"
#include "base/opts.h"
#include "bpf/bpf_env.h"
#include "trace/trace_internal.h"

struct stacksnap_trace *stacksnap_trace__new(struct stacksnap_ctx *ctx,
					     const struct stacksnap_trace_opts *opts)
{
	struct stacksnap_trace *tr;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	tr = calloc(1, sizeof(*tr));
	if (!tr) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts_in(&tr->o, sizeof(tr->o), opts, offsetof(struct stacksnap_trace_opts, pid_hint))) {
		free(tr);
		errno = EINVAL;
		return NULL;
	}
	tr->ctx = ctx;
	if (!tr->o.stack_size)
		tr->o.stack_size = 16384;
	if (!tr->o.ring_size)
		tr->o.ring_size = 1u << 24;
	if (!tr->o.max_frames)
		tr->o.max_frames = 256;
	if (tr->o.unwind > STACKSNAP_TRACE_UNWIND_BOTH) {
		log_err(LOG(tr), "unwind mode %u unknown (user, kernel or both)",
			tr->o.unwind);
		free(tr);
		errno = EINVAL;
		return NULL;
	}
	if (tr->o.stack_size > TRACE_STACK_MAX ||
	    (tr->o.ring_size & (tr->o.ring_size - 1)) || tr->o.ring_size < 4096) {
		log_err(LOG(tr), "stack size %zu (at most %u) or ring buffer size %zu "
			"(a power of two, at least 4096) out of range",
			tr->o.stack_size, TRACE_STACK_MAX, tr->o.ring_size);
		free(tr);
		errno = EINVAL;
		return NULL;
	}
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = tr->o.max_frames);
	tr->procs = stacksnap_procs__new(ctx, NULL);
	tr->uw = stacksnap_unwinder__new(&uo);
	tr->frames = calloc(tr->o.max_frames, sizeof(*tr->frames));
	tr->kframes = calloc(KU_MAX_FRAMES, sizeof(*tr->kframes));
	tr->hframes = calloc(KU_MAX_FRAMES, sizeof(*tr->hframes));
	if (!tr->procs || !tr->uw || !tr->frames || !tr->kframes || !tr->hframes) {
		stacksnap_trace__free(tr);
		errno = ENOMEM;
		return NULL;
	}
	return tr;
}

uint32_t trace__unwind_mode(const struct stacksnap_trace *tr)
{
	return tr->o.unwind == STACKSNAP_TRACE_UNWIND_KERNEL ? KU_MODE_KERNEL
	     : tr->o.unwind == STACKSNAP_TRACE_UNWIND_BOTH ? KU_MODE_BOTH
							    : KU_MODE_COPY;
}

/* Writes pid's mapping table for the in-kernel walk (unwind KERNEL/BOTH).
 * The kernel walks events still to come: with the kernel's records,
 * procs holds the mappings as of the events read so far, so the table
 * comes from the maps as they are now (ld.so has mapped more since the
 * exec), from procs when they cannot be read. */
void trace__kernel_maps(struct stacksnap_trace *tr, pid_t pid)
{
	struct stacksnap_addrspace *as, *now;

	if (!tr->kt)
		return;
	/* A process gone raises no more events: nothing to write (and no
	 * error to log for its maps). */
	if (tr->sb && kill(pid, 0) && errno == ESRCH)
		return;
	if (tr->sb && (now = stacksnap_addrspace__from_pid(tr->ctx, pid))) {
		ktable__set_process(tr->kt, pid, now);
		stacksnap_addrspace__free(now);
		return;
	}
	if ((as = stacksnap_procs__addrspace(tr->procs, pid)))
		ktable__set_process(tr->kt, pid, as);
}

/* Attaches every event's program, in the order they were added. */
static int attach_events(struct stacksnap_trace *tr, int ncpu)
{
	for (size_t i = 0; i < tr->nevents; i++) {
		struct trace_event_spec *e = &tr->events[i];
		int err;

		err = e->kind == EV_TRACEPOINT
			? trace_programs__attach_tracepoint(&tr->bpf, e->target, e->name,
							    TRACE_COOKIE(i, e->raw_len),
							    LOG(tr))
		    : e->kind == EV_SAMPLE
			? trace_programs__attach_sampling(&tr->bpf, e->hz,
							  TRACE_COOKIE(i, 0), ncpu,
							  LOG(tr))
		    : e->kind == EV_OFF_CPU ? trace_programs__attach_offcpu(&tr->bpf, LOG(tr))
		    : e->kind == EV_WAKEUP ? 0
		    : trace_programs__attach_uprobe(&tr->bpf, e->target, e->func_off,
						    e->kind == EV_URETPROBE, e->name,
						    TRACE_COOKIE(i, 0), LOG(tr));
		if (err)
			return err;
	}
	return 0;
}

int stacksnap_trace__start(struct stacksnap_trace *tr)
{
	struct bpf_env env;
	struct trace_program_needs needs = { .off_event = -1, .wake_event = -1 };
	int ncpu, err;

	if (!tr || tr->bpf.proc || !tr->nevents)
		return fail(-EINVAL);
	err = bpf_env__prepare(&env, LOG(tr));
	if (err)
		return err;
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return fail(-ENOTSUP);
	for (size_t i = 0; i < tr->nevents; i++) {
		needs.tracepoint |= tr->events[i].kind == EV_TRACEPOINT;
		needs.uprobe |= tr->events[i].kind == EV_UPROBE ||
				tr->events[i].kind == EV_URETPROBE;
		needs.sample |= tr->events[i].kind == EV_SAMPLE;
		if (tr->events[i].kind == EV_OFF_CPU)
			needs.off_event = (int)i;
		if (tr->events[i].kind == EV_WAKEUP)
			needs.wake_event = (int)i;
	}
	if (tr->o.unwind != STACKSNAP_TRACE_UNWIND_USER && !tr->kt) {
		tr->kt = ktable__new(tr->ctx);
		if (!tr->kt)
			return fail(-errno);
	}
	struct trace_program_config c = {
		.stack_size = (uint32_t)tr->o.stack_size,
		.filter_tid = tr->o.by_tid,
		.inherit = !tr->o.no_inherit,
		.all_processes = tr->o.all_processes,
		.unwind_mode = trace__unwind_mode(tr),
		.compact = tr->o.compact,
		.python = !tr->o.no_runtime,
		.ring_size = (uint32_t)tr->o.ring_size,
		.ncpu = ncpu,
	};
	if ((err = trace_programs__load(&tr->bpf, &c, &needs, tr->kt, LOG(tr))))
		return fail(err);
	if ((err = trace_programs__attach_proc(&tr->bpf, tr->o.compact, LOG(tr))))
		return fail(err);
	/* Before the events: every mapping made from their first one on is
	 * recorded. */
	tr->sb = trace_sideband__open(tr);
	procs_set_from_records(tr->procs, tr->sb != NULL);
	if ((err = attach_events(tr, ncpu))) {
		stacksnap_trace__stop(tr);
		return fail(err);
	}
	tr->rb = ring_buffer__new(trace_programs__events_fd(&tr->bpf), trace_on_record,
				  tr, NULL);
	if (!tr->rb) {
		err = -errno;
		stacksnap_trace__stop(tr);
		log_err(LOG(tr), "cannot map the ring buffer: %s", strerror(-err));
		return fail(err);
	}
	return 0;
}

int stacksnap_exec_ranges__from_pid(struct stacksnap_exec_ranges *r, pid_t pid)
{
	char path[64], line[512];
	FILE *f;

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "re")))
		return fail(-ESRCH);
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;

		/* A fragment of a long line is no line: skipped. */
		if (maps_line__parse(line, &ml) || !(ml.prot & PROT_EXEC))
			continue;
		uint64_t a = ml.start, b = ml.end;
		/* /proc lists mappings in address order: sorted already. */
		if (r->n && r->end[r->n - 1] == a) {
			r->end[r->n - 1] = b;
			continue;
		}
		if (r->n == STACKSNAP_EXEC_RANGES) {
			fclose(f);
			return fail(-E2BIG);
		}
		r->start[r->n] = a;
		r->end[r->n++] = b;
	}
	fclose(f);
	return 0;
}

/* pid's executable ranges into the map the compaction reads (with compact
 * only). Without them (gone, too many ranges) its stacks go as they are. */
void trace__exec_ranges_update(struct stacksnap_trace *tr, pid_t pid)
{
	struct stacksnap_exec_ranges r;
	uint32_t key = (uint32_t)pid;
	int fd;

	if (!tr->o.compact || !tr->bpf.proc)
		return;
	fd = trace_programs__exec_ranges_fd(&tr->bpf);
	if (stacksnap_exec_ranges__from_pid(&r, pid))
		bpf_map_delete_elem(fd, &key);
	else
		bpf_map_update_elem(fd, &key, &r, BPF_ANY);
}

int stacksnap_trace__follow(struct stacksnap_trace *tr, pid_t pid)
{
	uint32_t key = (uint32_t)pid, one = 1;
	char path[64];
	pid_t tgid = pid;
	int err;

	if (!tr || !tr->bpf.proc || pid <= 0)
		return fail(-EINVAL);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f) {
		log_err(LOG(tr), "pid %d: no such process", (int)pid);
		return fail(-ESRCH);
	}
	char line[128];
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	/* The records before now are older than the maps read below. */
	trace_sideband__apply(tr, clock_monotonic_ns());
	if (bpf_map_update_elem(trace_programs__traced_fd(&tr->bpf), &key, &one, BPF_ANY)) {
		err = -errno;
		log_err(LOG(tr), "pid %d: cannot add it to the filter: %s", (int)pid,
			strerror(-err));
		return fail(err);
	}
	err = stacksnap_procs__attach_pid(tr->procs, tgid);
	trace__exec_ranges_update(tr, tgid);
	if (err) {
		log_err(LOG(tr), "pid %d: cannot read its mappings: %s", (int)pid,
			strerror(-err));
		return fail(err);
	}
	trace__kernel_maps(tr, tgid);
	trace__python_detect(tr, tgid);
	trace__named_follow(tr, tgid);
	return 0;
}

void stacksnap_trace__stop(struct stacksnap_trace *tr)
{
	if (!tr)
		return;
	trace_programs__detach(&tr->bpf);
}

void stacksnap_trace__free(struct stacksnap_trace *tr)
{
	if (!tr)
		return;
	stacksnap_trace__stop(tr);
	ring_buffer__free(tr->rb);
	trace_programs__destroy(&tr->bpf);
	for (size_t i = 0; i < tr->nevents; i++) {
		free(tr->events[i].name);
		free(tr->events[i].target);
		free(tr->events[i].func);
	}
	free(tr->events);
	free(tr->frames);
	free(tr->kframes);
	free(tr->hframes);
	trace__python_free(tr);
	trace__named_free(tr);
	trace_sideband__free(tr->sb);
	ktable__free(tr->kt);
	stacksnap_unwinder__free(tr->uw);
	stacksnap_procs__free(tr->procs);
	free(tr);
}
