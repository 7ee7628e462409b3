/* trace_ruby.c - Ruby frames in an event trace (and the BPF profile): a
 * traced process without a CPython is looked at for a Ruby VM whose
 * layout is known (as the dump does); the offsets its walk needs go into
 * the BPF map the programs read, which send each event's control frames
 * (iseq or C method entry, pc, flags) in the Python frames' slots; here
 * they are named (cached by address, each hit checked again: the process
 * runs on) and merged into the event's native frames as the dump merges
 * them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "mem/mem.h"
#include "runtime/ruby/ruby.h"
#include "trace/trace_internal.h"

/* One traced process's VM. Invariant: rt.layout != NULL, mem reads the
 * process; res caches names for the whole trace (frames handed out point
 * at them). */
struct trace_rb {
	pid_t pid;
	bool dead;		/* forgotten (an exec): kept for its names */
	struct rb_runtime rt;
	struct stacksnap_mem *mem;
	struct rb_resolver res;
};

struct trace_rubies {
	struct trace_rb **v;
	size_t n;
	struct rb_capture cap;	/* one event's frames */
};

static void rb_free(struct trace_rb *p)
{
	if (!p)
		return;
	rb_resolver__free(&p->res);
	stacksnap_mem__free(p->mem);
	free(p);
}

static struct trace_rb *rb_find(const struct stacksnap_trace *tr, pid_t pid)
{
	for (size_t i = 0; tr->rb_vms && i < tr->rb_vms->n; i++)
		if (!tr->rb_vms->v[i]->dead && tr->rb_vms->v[i]->pid == pid)
			return tr->rb_vms->v[i];
	return NULL;
}

void trace__ruby_free(struct stacksnap_trace *tr)
{
	if (!tr->rb_vms)
		return;
	for (size_t i = 0; i < tr->rb_vms->n; i++)
		rb_free(tr->rb_vms->v[i]);
	free(tr->rb_vms->v);
	rb_capture__free(&tr->rb_vms->cap);
	free(tr->rb_vms);
	tr->rb_vms = NULL;
}

void trace__ruby_forget(struct stacksnap_trace *tr, pid_t pid)
{
	struct trace_rb *p = rb_find(tr, pid);

	if (!p)
		return;
	p->dead = true;
	if (tr->bpf.proc)
		bpf_map_delete_elem(trace_programs__rb_procs_fd(&tr->bpf),
				    &(uint32_t){ (uint32_t)pid });
}

void trace__ruby_detect(struct stacksnap_trace *tr, pid_t pid)
{
	struct trace_rb *p;
	struct trace_rb_proc c;
	const struct rb_layout *l;
	void *grown;

	if (tr->o.no_runtime || !tr->bpf.proc || rb_find(tr, pid))
		return;
	if (!tr->rb_vms && !(tr->rb_vms = calloc(1, sizeof(*tr->rb_vms))))
		return;
	if (!(p = calloc(1, sizeof(*p))))
		return;
	p->pid = pid;
	if (!(p->mem = stacksnap_mem__new_pid(pid)) ||
	    rb_runtime__detect_pid(pid, p->mem, LOG(tr), &p->rt) || !p->rt.found) {
		rb_free(p);
		return;
	}
	if (!(l = p->rt.layout)) {
		if (!trace__runtime_said(tr, pid))
			log_warn(LOG(tr), "pid %d: %s", (int)pid, p->rt.note);
		rb_free(p);
		return;
	}
	c = (struct trace_rb_proc){
		.tls_modid = p->rt.tls_modid, .ec_tls_off = p->rt.ec_tls_off,
		.ec_vm_stack = l->ec_vm_stack, .ec_vm_stack_size = l->ec_vm_stack_size,
		.ec_cfp = l->ec_cfp, .cfp_size = l->cfp_size, .cfp_pc = l->cfp_pc,
		.cfp_iseq = l->cfp_iseq, .cfp_ep = l->cfp_ep,
		.ep_me_cref = l->ep_me_cref,
	};
	grown = realloc(tr->rb_vms->v, (tr->rb_vms->n + 1) * sizeof(*tr->rb_vms->v));
	if (!grown) {
		rb_free(p);
		return;
	}
	tr->rb_vms->v = grown;
	if (bpf_map_update_elem(trace_programs__rb_procs_fd(&tr->bpf),
				&(uint32_t){ (uint32_t)pid }, &c, BPF_ANY)) {
		log_warn(LOG(tr), "pid %d: cannot pass its Ruby layout to the "
			 "programs: %s", (int)pid, strerror(errno));
		rb_free(p);
		return;
	}
	rb_resolver__init(&p->res, &p->rt, p->mem);
	p->res.recheck = true;
	log_info(LOG(tr), "pid %d: %s (%s), its frames walked at each event",
		 (int)pid, p->rt.note, p->rt.path);
	tr->rb_vms->v[tr->rb_vms->n++] = p;
}

bool trace__ruby_event(struct stacksnap_trace *tr, const struct trace_rec *r,
		       const uint8_t *pyf, struct stacksnap_trace_event *ev)
{
	struct trace_rb *p = rb_find(tr, ev->pid);
	struct rb_capture *cap;
	struct rb_raw_thread t = { .tid = (uint64_t)ev->tid };
	struct rb_frame *named;
	size_t n = r->pyframes, nnamed, nr;

	if (!p)
		return false;
	cap = &tr->rb_vms->cap;
	if (!n || rb_capture__reserve(cap, 1, n))
		return true;
	for (size_t i = 0; i < n; i++) {
		struct trace_py_frame f;

		memcpy(&f, pyf + i * sizeof(f), sizeof(f));
		cap->frames[i] = (struct rb_raw_frame){
			.pc = f.instr, .iseq = f.code & ~7ull,
			.flags = (uint8_t)(f.code & 7),
		};
	}
	/* Ruby's backtrace leaves out the outermost control frame (a
	   thread's dummy frame): known only when the walk reached it. */
	if (r->pyend == TRACE_PY_COMPLETE)
		cap->frames[n - 1].flags &= (uint8_t)~(RB_FRAME_RUBY | RB_FRAME_CFUNC);
	cap->nframes = n;
	t.n = n;
	/* The target ran since the last event: no page of the last read
	   stands (the names do, each checked at its next use). */
	mem_invalidate(p->mem);
	if (rb_resolve__thread(&p->res, cap, &t, &named, &nnamed))
		return true;
	if (!trace__grow_rframes(tr, nnamed)) {
		free(named);
		return true;
	}
	nr = rb_merge(named, nnamed, ev->frames, ev->nframes > 0 ? (size_t)ev->nframes : 0,
		      p->rt.exec_start, p->rt.exec_end, tr->rframes, tr->cap_rframes);
	free(named);
	ev->rframes = tr->rframes;
	ev->nrframes = nr < tr->cap_rframes ? nr : tr->cap_rframes;
	ev->runtime_end = trace__py_end_str(r->pyend);
	return true;
}

bool trace__ruby_runs(pid_t pid)
{
	struct rb_runtime rt;
	struct stacksnap_mem *mem = stacksnap_mem__new_pid(pid);
	bool known;

	if (!mem)
		return false;
	known = !rb_runtime__detect_pid(pid, mem, NULL, &rt) && rt.found && rt.layout;
	stacksnap_mem__free(mem);
	return known;
}
