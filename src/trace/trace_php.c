/* trace_php.c - PHP frames in an event trace (and the BPF profile): a
 * traced process without a CPython or Ruby VM is looked at for a Zend
 * engine whose layout is known (as the dump does); the offsets its walk
 * needs go into the BPF map the programs read (trace_php.bpf.h), which
 * send each event's chain of zend_execute_data (function, opline, the
 * ZEND_CALL_TOP flag) in the Python frames' slots; here they are named
 * (cached by function address, each hit checked again: the process runs
 * on) and merged into the event's native frames as the dump merges
 * them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "base/vec.h"
#include "mem/mem.h"
#include "runtime/php/php.h"
#include "trace/trace_internal.h"

#include "bpf/trace_php_record.h"

/* One traced process's engine. Invariant: unread, or rt.layout != NULL,
 * mem reads the process and res caches names for the whole trace (frames
 * handed out point at them). */
struct trace_php {
	pid_t pid;
	bool dead;		/* forgotten (an exec): kept for its names */
	bool unread;		/* an engine whose frames cannot be read (said
				   once): no layout, no resolver */
	struct php_runtime rt;
	struct stacksnap_mem *mem;
	struct php_resolver res;
};

struct trace_phps {
	struct trace_php **v;
	size_t n, cap;
	struct php_capture cap_frames;	/* one event's chain */
};

static void php_free(struct trace_php *p)
{
	if (!p)
		return;
	if (!p->unread)
		php_resolver__free(&p->res);
	stacksnap_mem__free(p->mem);
	free(p);
}

static struct trace_php *php_find(const struct stacksnap_trace *tr, pid_t pid)
{
	for (size_t i = 0; tr->php_vms && i < tr->php_vms->n; i++)
		if (!tr->php_vms->v[i]->dead && tr->php_vms->v[i]->pid == pid)
			return tr->php_vms->v[i];
	return NULL;
}

void trace__php_free(struct stacksnap_trace *tr)
{
	if (!tr->php_vms)
		return;
	for (size_t i = 0; i < tr->php_vms->n; i++)
		php_free(tr->php_vms->v[i]);
	free(tr->php_vms->v);
	php_capture__free(&tr->php_vms->cap_frames);
	free(tr->php_vms);
	tr->php_vms = NULL;
}

void trace__php_forget(struct stacksnap_trace *tr, pid_t pid)
{
	struct trace_php *p = php_find(tr, pid);

	if (!p)
		return;
	p->dead = true;
	if (tr->bpf.proc)
		bpf_map_delete_elem(trace_programs__php_procs_fd(&tr->bpf),
				    &(uint32_t){ (uint32_t)pid });
}

/* Whether the walk can read this layout's frames: pointer fields
 * 8-aligned, every field inside the span one read covers. */
static bool php_config_ok(const struct php_layout *l)
{
	return l->ex_size <= TRACE_PHP_SPAN && l->ex_func % 8 == 0 &&
	       l->ex_opline % 8 == 0 && l->ex_prev % 8 == 0 && l->ex_call_info % 4 == 0 &&
	       l->ex_func + 8 <= l->ex_size && l->ex_opline + 8 <= l->ex_size &&
	       l->ex_prev + 8 <= l->ex_size && l->ex_call_info + 4 <= l->ex_size;
}

void trace__php_detect(struct stacksnap_trace *tr, pid_t pid)
{
	struct trace_php *p, **slot;
	struct trace_php_proc c;
	const struct php_layout *l;

	if (tr->o.no_runtime || !tr->bpf.proc || php_find(tr, pid))
		return;
	if (!tr->php_vms && !(tr->php_vms = calloc(1, sizeof(*tr->php_vms))))
		return;
	if (!(p = calloc(1, sizeof(*p))))
		return;
	p->pid = pid;
	if (php_runtime__detect_pid(pid, LOG(tr), &p->rt) || !p->rt.found ||
	    !(p->mem = stacksnap_mem__new_pid(pid))) {
		php_free(p);
		return;
	}
	if (!(slot = VEC_PUSH(tr->php_vms->v, tr->php_vms->n, tr->php_vms->cap))) {
		php_free(p);
		return;
	}
	if (!(l = p->rt.layout) || !php_config_ok(l)) {
		/* Kept, so that the exec's retries do not say it again. */
		log_warn(LOG(tr), "pid %d: %s", (int)pid,
			 l ? "PHP frame layout the in-kernel walk cannot read, "
			     "native frames only" : p->rt.note);
		p->unread = true;
		*slot = p;
		return;
	}
	c = (struct trace_php_proc){
		.eg = p->rt.eg, .eg_current_execute_data = l->eg_current_execute_data,
		.ex_opline = l->ex_opline, .ex_func = l->ex_func,
		.ex_call_info = l->ex_call_info, .ex_prev = l->ex_prev,
		.ex_size = l->ex_size,
	};
	if (bpf_map_update_elem(trace_programs__php_procs_fd(&tr->bpf),
				&(uint32_t){ (uint32_t)pid }, &c, BPF_ANY)) {
		log_warn(LOG(tr), "pid %d: cannot pass its PHP layout to the "
			 "programs: %s", (int)pid, strerror(errno));
		tr->php_vms->n--;
		php_free(p);
		return;
	}
	php_resolver__init(&p->res, &p->rt, p->mem);
	p->res.recheck = true;
	log_info(LOG(tr), "pid %d: %s (%s), its frames walked at each event",
		 (int)pid, p->rt.note, p->rt.path);
	*slot = p;
}

bool trace__php_event(struct stacksnap_trace *tr, const struct trace_rec *r,
		      const uint8_t *pyf, struct stacksnap_trace_event *ev)
{
	struct trace_php *p = php_find(tr, ev->pid);
	struct php_capture *cap;
	struct php_frame *named;
	size_t n = r->pyframes, nnamed, nr;

	if (!p)
		return false;
	if (p->unread)
		return true;
	cap = &tr->php_vms->cap_frames;
	if (!n || php_capture__reserve(cap, n))
		return true;
	for (size_t i = 0; i < n; i++) {
		struct trace_py_frame f;

		memcpy(&f, pyf + i * sizeof(f), sizeof(f));
		cap->frames[i] = (struct php_raw_frame){
			.func = f.code & ~7ull, .opline = f.instr,
			.call_info = f.code & TRACE_PHP_TOP ? PHP_CALL_TOP : 0,
		};
	}
	cap->nframes = n;
	cap->end = NULL;
	/* The target ran since the last event: no page of the last read
	   stands (the names do, each checked at its next use). */
	mem_invalidate(p->mem);
	if (php_resolve(&p->res, cap, &named, &nnamed))
		return true;
	if (!trace__grow_rframes(tr, nnamed)) {
		free(named);
		return true;
	}
	const uint64_t exec[2][2] = {
		{ p->rt.exec_start, p->rt.exec_end }, { p->rt.cold[0], p->rt.cold[1] },
	};
	nr = php_merge(named, nnamed, ev->frames, ev->nframes > 0 ? (size_t)ev->nframes : 0,
		       exec, 2, tr->rframes, tr->cap_rframes);
	free(named);
	ev->rframes = tr->rframes;
	ev->nrframes = nr < tr->cap_rframes ? nr : tr->cap_rframes;
	ev->runtime_end = nr ? trace__py_end_str(r->pyend) : NULL;
	return true;
}

bool trace__php_runs(pid_t pid)
{
	struct php_runtime rt;

	return !php_runtime__detect_pid(pid, NULL, &rt) && rt.found && rt.layout;
}
