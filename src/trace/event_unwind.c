/* event_unwind.c - an event's stack: the user-space walk of its copy,
 * the frames of the in-kernel walk (and a refresh of the mapping table
 * when that walk met code it did not know), and in both mode the two
 * compared and the hybrid walk. */
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "trace/trace_internal.h"

/* The library's end reason for an in-kernel walk's. */
enum stacksnap_end trace_kernel_end(unsigned kend)
{
	switch (kend) {
	case KU_END_COMPLETE: return STACKSNAP_END_COMPLETE;
	case KU_END_NO_PROC: case KU_END_NO_MAPPING: case KU_END_NOT_LOADED:
		return STACKSNAP_END_NO_MODULE;
	case KU_END_DWARF: case KU_END_BAD_CFI: return STACKSNAP_END_BAD_CFI;
	case KU_END_NO_CFI: return STACKSNAP_END_NO_CFI;
	case KU_END_LOOP: return STACKSNAP_END_LOOP;
	case KU_END_FRAME_LIMIT: return STACKSNAP_END_FRAME_LIMIT;
	case KU_END_BAD_PC: return STACKSNAP_END_BAD_PC;
	default: return STACKSNAP_END_BAD_MEMORY;
	}
}

static bool kernel_fallback(unsigned kend)
{
	return kend == KU_END_NO_PROC || kend == KU_END_NO_MAPPING ||
	       kend == KU_END_NOT_LOADED;
}

/* The in-kernel walk of record r: frames from its pcs (a pc marked exact
 * after frame 0 was interrupted by a signal, and the frame before it is
 * the trampoline), counters, and a refresh of the process's mapping
 * table when the walk met code it did not know (at most every 100 ms per
 * process: a burst of such events reads /proc once). */
void trace__kernel_event(struct stacksnap_trace *tr, const struct trace_rec *r,
			 size_t raw_off, struct stacksnap_trace_event *ev)
{
	const uint64_t *pcs = (const uint64_t *)((const uint8_t *)r + raw_off +
						  ((r->raw_len + 7u) & ~7u));
	int n = r->kframes;
	uint64_t now;

	ev->kernel_pcs = pcs;
	ev->kernel_nframes = n;
	ev->kernel_end = kunwind_end__str(r->kend);
	ev->first_difference = -1;
	for (int i = 0; i < n; i++) {
		bool exact = pcs[i] & KU_PC_EXACT;

		tr->kframes[i] = (struct stacksnap_frame){
			.pc = pcs[i] & ~KU_PC_EXACT,
			.stepper = i ? STACKSNAP_STEP_TABLE : STACKSNAP_STEP_START,
			.trust = i ? STACKSNAP_TRUST_CFI : STACKSNAP_TRUST_CONTEXT,
			.flags = i && exact ? STACKSNAP_FRAME_SIGNAL : 0,
		};
		if (i && exact)
			tr->kframes[i - 1].flags |= STACKSNAP_FRAME_SIGRETURN;
	}
	tr->st.kernel_walks++;
	tr->st.kernel_complete += r->kend == KU_END_COMPLETE;
	if (!kernel_fallback(r->kend) && r->kend != KU_END_BAD_PC)
		return;
	tr->st.kernel_fallback += kernel_fallback(r->kend);
	now = clock_monotonic_ns();
	if (tr->last_refresh_pid == ev->pid && now - tr->last_refresh_ns < 100000000u)
		return;
	tr->last_refresh_pid = ev->pid;
	tr->last_refresh_ns = now;
	/* With the kernel's records, procs already has the mappings as of
	 * this event: only the kernel's table is refreshed. */
	if (tr->sb || !stacksnap_procs__attach_pid(tr->procs, ev->pid)) {
		trace__kernel_maps(tr, ev->pid);
		trace__python_detect(tr, ev->pid);
	}
}

/* BOTH mode: the in-kernel frames against the user-space walk of the
 * copy (n frames in tr->frames). */
static void compare_walks(struct stacksnap_trace *tr,
			  struct stacksnap_trace_event *ev, int n, unsigned kend)
{
	int k = ev->kernel_nframes, m = k < n ? k : n, a;

	ev->first_difference = -1;
	for (int i = 0; i < m && ev->first_difference < 0; i++)
		if (tr->kframes[i].pc != tr->frames[i].pc)
			ev->first_difference = i;
	a = ev->first_difference >= 0 ? STACKSNAP_TRACE_AGREE_DIFFER
	  : kernel_fallback(kend) ? STACKSNAP_TRACE_AGREE_FALLBACK
	  : k == n ? STACKSNAP_TRACE_AGREE_SAME
	  : k < n ? STACKSNAP_TRACE_AGREE_KERNEL_PREFIX
		  : STACKSNAP_TRACE_AGREE_USER_PREFIX;
	ev->agreement = a;
	tr->st.agreement[a]++;
}

/* BOTH mode: where the kernel stopped at something user space can go
 * past, the hybrid walk (the kernel's frames, then the copy's walk from
 * the stop registers the record carries). */
static void hybrid_walk(struct stacksnap_trace *tr, const struct trace_rec *r,
			size_t raw_off, struct stacksnap_trace_event *ev)
{
	const uint8_t *p = (const uint8_t *)r + raw_off + ((r->raw_len + 7u) & ~7u) +
			   r->kframes * 8ull;
	struct ku_end_state es;
	int k = ev->kernel_nframes - 1, c;

	ev->hybrid_nframes = -1;
	if (!(r->kflags & TRACE_KEND_STATE) || k < 0 || !ktable__can_continue(r->kend) ||
	    (r->cap.flags & STACKSNAP_CAPTURE_COMPACT)) /* (a compacted copy: not yet) */
		return;
	memcpy(&es, p, sizeof(es));
	c = ktable__continue_walk(tr->procs, tr->uw, ev->pid, ev->tid, &es, ev->stack,
				  r->cap.data_len, r->cap.stack_start, tr->hframes + k,
				  KU_MAX_FRAMES - (size_t)k, &ev->hybrid_end);
	if (c <= 0)
		return;
	memcpy(tr->hframes, tr->kframes, (size_t)k * sizeof(*tr->hframes));
	tr->hframes[k].flags |= tr->kframes[k].flags;
	ev->hybrid_frames = tr->hframes;
	ev->hybrid_nframes = k + c;
}

int trace__unwind_copy(struct stacksnap_trace *tr, const struct trace_rec *r,
		       size_t raw_off, struct stacksnap_trace_event *ev)
{
	uint64_t rereads = procs_rereads(tr->procs);
	int n;

	n = stacksnap_procs__unwind_capture(tr->procs, tr->uw, ev->pid, &r->cap,
					    ev->stack, tr->frames,
					    tr->o.max_frames, &ev->end);
	if (procs_rereads(tr->procs) != rereads) {
		trace__exec_ranges_update(tr, ev->pid); /* a library mapped since */
		trace__python_detect(tr, ev->pid);	/* a libpython, perhaps */
	}
	else if (tr->o.compact && !(r->cap.flags & STACKSNAP_CAPTURE_COMPACT)) {
		struct stacksnap_exec_ranges er;

		if (bpf_map_lookup_elem(trace_programs__exec_ranges_fd(&tr->bpf),
					&(uint32_t){ r->pid }, &er))
			trace__exec_ranges_update(tr, ev->pid);
	}
	if (n < 0) {
		n = 0;
		ev->end = STACKSNAP_END_BAD_MEMORY;
	}
	if (trace__unwind_mode(tr) == KU_MODE_BOTH) {
		compare_walks(tr, ev, n, r->kend);
		hybrid_walk(tr, r, raw_off, ev);
	}
	return n;
}
