/* trace_python.c - Python frames in an event trace: each traced process
 * is looked at for a CPython the layout table knows (as the dump does);
 * the offsets its walk needs go into the BPF map the programs read, which
 * send each event's (code object, instruction) pairs; here they are named
 * (code objects cached by address, read from the live process) and merged
 * into the event's native frames as the dump merges them. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "base/vec.h"
#include "mem/mem.h"
#include "runtime/python/python.h"
#include "trace/trace_internal.h"

/* One traced process's interpreter. Invariant: rt.layout != NULL and mem
 * reads the process; res caches its code objects by address for the
 * whole trace (they do not change once made). */
struct trace_py {
	pid_t pid;
	struct py_runtime rt;
	struct stacksnap_mem *mem;
	struct py_resolver res;
};

static void py_free(struct trace_py *p)
{
	if (!p)
		return;
	py_resolver__free(&p->res);
	if (p->mem)
		stacksnap_mem__free(p->mem);
	free(p);
}

static struct trace_py **py_slot(struct stacksnap_trace *tr, pid_t pid)
{
	for (size_t i = 0; i < tr->npy; i++)
		if (tr->py[i] && tr->py[i]->pid == pid)
			return &tr->py[i];
	return NULL;
}

static void py_forget(struct stacksnap_trace *tr, pid_t pid)
{
	struct trace_py **s = py_slot(tr, pid);

	void *grown;

	if (!s)
		return;
	/* Kept until the trace is freed: frames handed out before (an
	 * off-CPU wait in progress) point at its names. */
	grown = realloc(tr->pydead, (tr->npydead + 1) * sizeof(*tr->pydead));
	if (grown) {
		tr->pydead = grown;
		tr->pydead[tr->npydead++] = *s;
	} else {
		py_free(*s);
	}
	*s = NULL;
	if (tr->bpf.proc)
		bpf_map_delete_elem(trace_programs__py_procs_fd(&tr->bpf),
				    &(uint32_t){ (uint32_t)pid });
}

void trace__python_free(struct stacksnap_trace *tr)
{
	for (size_t i = 0; i < tr->npy; i++)
		py_free(tr->py[i]);
	free(tr->py);
	for (size_t i = 0; i < tr->npydead; i++)
		py_free(tr->pydead[i]);
	free(tr->pydead);
	tr->pydead = NULL;
	tr->npydead = 0;
	free(tr->pyframes);
	free(tr->rframes);
	free(tr->pypend);
	tr->pypend = NULL;
	tr->npypend = 0;
	tr->py = NULL;
	tr->npy = 0;
	free(tr->rt_said);
	tr->rt_said = NULL;
	tr->nrt_said = tr->cap_rt_said = 0;
	trace__ruby_free(tr);
	trace__php_free(tr);
}

bool trace__runtime_said(struct stacksnap_trace *tr, pid_t pid)
{
	pid_t *slot;

	for (size_t i = 0; i < tr->nrt_said; i++)
		if (tr->rt_said[i] == pid)
			return true;
	if ((slot = VEC_PUSH(tr->rt_said, tr->nrt_said, tr->cap_rt_said)))
		*slot = pid;
	return false;
}

void trace__runtime_unsay(struct stacksnap_trace *tr, pid_t pid)
{
	for (size_t i = 0; i < tr->nrt_said; i++)
		if (tr->rt_said[i] == pid)
			tr->rt_said[i--] = tr->rt_said[--tr->nrt_said];
}

/* The walk's offsets from the layout: what the BPF side reads. */
static void py_config(const struct py_runtime *rt, struct trace_py_proc *c)
{
	const struct py_layout *l = rt->layout;

	memset(c, 0, sizeof(*c));
	c->interp_head = rt->runtime_addr + (uint64_t)l->rt_interpreters_head;
	c->interp_threads_head = l->interp_threads_head;
	c->ts_next = l->ts_next;
	c->ts_native_thread_id = l->ts_native_thread_id;
	c->ts_cframe = l->ts_cframe;
	c->cframe_current_frame = l->cframe_current_frame;
	c->ts_current_frame = l->ts_current_frame;
	c->frame_previous = l->frame_previous;
	c->frame_code = l->frame_code;
	c->frame_instr = l->frame_instr;
	c->frame_is_entry = l->frame_is_entry;
	c->frame_owner = l->frame_owner;
	c->ts_thread_id = l->ts_thread_id;
	c->pthread_tid = (int32_t)rt->pthread_tid;
	c->frame_lasti = l->frame_lasti;
	c->frame_span = 0;
	for (int i = 0; i < 6; i++) {
		int f[6] = { l->frame_previous, l->frame_code, l->frame_instr,
			     l->frame_is_entry, l->frame_owner, l->frame_lasti };
		int width = i < 3 ? 8 : i == 5 ? 4 : 1;

		if (f[i] >= 0 && (uint32_t)(f[i] + width) > c->frame_span)
			c->frame_span = (uint32_t)(f[i] + width);
	}
}

/* Whether the walk can read this layout's frames: pointer fields 8-aligned
 * and every field inside the span one read covers. */
static bool py_config_ok(const struct trace_py_proc *c)
{
	bool lasti = c->frame_lasti >= 0;	/* before 3.11 */

	return c->frame_span <= TRACE_PY_FRAME_SPAN &&
	       c->frame_previous % 8 == 0 && c->frame_code % 8 == 0 &&
	       c->frame_previous >= 0 && c->frame_code >= 0 &&
	       (lasti ? c->frame_lasti % 4 == 0 &&
			(c->ts_native_thread_id >= 0 ||
			 (c->ts_thread_id >= 0 && c->pthread_tid > 0))
		      : c->frame_instr % 8 == 0 && c->frame_instr >= 0 &&
			c->frame_owner >= 0);
}

void trace__python_detect(struct stacksnap_trace *tr, pid_t pid)
{
	struct trace_py *p, **slot;
	struct trace_py_proc c;

	if (tr->o.no_runtime || !tr->bpf.proc || py_slot(tr, pid))
		return;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->pid = pid;
	if (py_runtime__detect_pid(pid, LOG(tr), &p->rt) || !p->rt.found ||
	    !(p->mem = stacksnap_mem__new_pid(pid))) {
		py_free(p);
		trace__ruby_detect(tr, pid);	/* or a Ruby VM */
		trace__php_detect(tr, pid);	/* or a PHP engine */
		return;
	}
	py_runtime__read_layout(&p->rt, p->mem);
	if (!p->rt.layout) {
		if (!trace__runtime_said(tr, pid))
			log_warn(LOG(tr), "pid %d: %s", (int)pid, p->rt.note);
		py_free(p);
		return;
	}
	py_config(&p->rt, &c);
	if (!py_config_ok(&c)) {
		log_warn(LOG(tr), "pid %d: Python %u.%u: frame layout the in-kernel "
			 "walk cannot read, native frames only", (int)pid,
			 p->rt.major, p->rt.minor);
		py_free(p);
		return;
	}
	if (bpf_map_update_elem(trace_programs__py_procs_fd(&tr->bpf),
				&(uint32_t){ (uint32_t)pid }, &c, BPF_ANY)) {
		log_warn(LOG(tr), "pid %d: cannot pass its Python layout to the "
			 "programs: %s", (int)pid, strerror(errno));
		py_free(p);
		return;
	}
	py_resolver__init(&p->res, &p->rt, p->mem);
	p->res.keep_unknown = true;
	p->res.recheck = true;
	log_info(LOG(tr), "pid %d: Python %u.%u (%s), its frames walked at each event",
		 (int)pid, p->rt.major, p->rt.minor, p->rt.layout->name);
	slot = py_slot(tr, 0);
	if (!slot) {
		void *grown = realloc(tr->py, (tr->npy + 1) * sizeof(*tr->py));

		if (!grown) {
			py_free(p);
			return;
		}
		tr->py = grown;
		slot = &tr->py[tr->npy++];
	}
	*slot = p;
}

#define PENDING_EVERY_NS 20000000ull	/* 20 ms */
#define PENDING_FOR_NS 5000000000ull	/* 5 s after the exec */

static void pending_drop(struct stacksnap_trace *tr, size_t i)
{
	tr->pypend[i] = tr->pypend[--tr->npypend];
}

void trace__python_exec(struct stacksnap_trace *tr, pid_t pid)
{
	uint64_t now = clock_monotonic_ns();
	void *grown;

	py_forget(tr, pid);
	trace__runtime_unsay(tr, pid);
	trace__ruby_forget(tr, pid);
	trace__php_forget(tr, pid);
	trace__python_detect(tr, pid);
	for (size_t i = 0; i < tr->npypend; i++)
		if (tr->pypend[i].pid == pid)
			pending_drop(tr, i);
	if (tr->o.no_runtime || py_slot(tr, pid))
		return;
	grown = realloc(tr->pypend, (tr->npypend + 1) * sizeof(*tr->pypend));
	if (!grown)
		return;
	tr->pypend = grown;
	tr->pypend[tr->npypend++] = (struct trace_py_pending){ pid, now, now };
}

void trace__python_pending(struct stacksnap_trace *tr)
{
	uint64_t now = clock_monotonic_ns();

	for (size_t i = 0; i < tr->npypend;) {
		struct trace_py_pending *p = &tr->pypend[i];

		if (now - p->last_ns < PENDING_EVERY_NS) {
			i++;
			continue;
		}
		p->last_ns = now;
		trace__python_detect(tr, p->pid);
		if (py_slot(tr, p->pid) || now - p->since_ns > PENDING_FOR_NS ||
		    kill(p->pid, 0))
			pending_drop(tr, i);
		else
			i++;
	}
}

const char *trace__py_end_str(unsigned end)
{
	switch (end) {
	case TRACE_PY_FRAME_LIMIT: return "frame limit of the in-kernel walk";
	case TRACE_PY_BAD_MEMORY: return "unreadable frame";
	default: return NULL;
	}
}

bool trace__grow_rframes(struct stacksnap_trace *tr, size_t n)
{
	return vec_reserve((void **)&tr->rframes, &tr->cap_rframes, n,
			   sizeof(*tr->rframes)) == 0;
}

void trace__python_event(struct stacksnap_trace *tr, const struct trace_rec *r,
			 const uint8_t *pyf, struct stacksnap_trace_event *ev)
{
	struct trace_py **slot = py_slot(tr, ev->pid);
	struct trace_py *p = slot ? *slot : NULL;
	struct py_capture cap;
	struct py_raw_thread t;
	struct py_frame *named;
	const char *end;
	size_t n = r->pyframes, nnamed, nr;

	if (!p) {
		if (!trace__ruby_event(tr, r, pyf, ev))
			trace__php_event(tr, r, pyf, ev);
		return;
	}
	if (!n)
		return;
	if (n > tr->cap_pyframes) {
		void *grown = realloc(tr->pyframes, n * sizeof(*tr->pyframes));

		if (!grown)
			return;
		tr->pyframes = grown;
		tr->cap_pyframes = n;
	}
	for (size_t i = 0; i < n; i++) {
		struct trace_py_frame f;

		memcpy(&f, pyf + i * sizeof(f), sizeof(f));
		tr->pyframes[i] = (struct py_raw_frame){
			.code = TRACE_PY_CODE(f.code),
			.instr = f.instr,
			.owner = (uint8_t)TRACE_PY_OWNER(f.code),
			.is_entry = (f.code & TRACE_PY_ENTRY) != 0,
		};
	}
	memset(&cap, 0, sizeof(cap));
	cap.frames = tr->pyframes;
	cap.nframes = n;
	memset(&t, 0, sizeof(t));
	t.native_tid = (uint64_t)ev->tid;
	t.nframes = n;
	/* The target ran since the last event: no page of the last read
	 * stands (code objects do, cached by address). */
	mem_invalidate(p->mem);
	if (py_resolve__thread(&p->res, &cap, &t, &named, &nnamed, &end))
		return;
	if (!trace__grow_rframes(tr, nnamed)) {
		free(named);
		return;
	}
	nr = py_merge(named, nnamed, ev->frames, ev->nframes > 0 ? (size_t)ev->nframes : 0,
		      p->rt.eval_start, p->rt.eval_end, tr->rframes, tr->cap_rframes);
	free(named);
	ev->rframes = tr->rframes;
	ev->nrframes = nr < tr->cap_rframes ? nr : tr->cap_rframes;
	ev->runtime_end = end ? end : trace__py_end_str(r->pyend);
	tr->st.python += ev->nrframes > 0;
}

int stacksnap_trace__runtime_of(pid_t pid)
{
	struct py_runtime rt;
	struct stacksnap_mem *mem;
	int err;

	if (pid <= 0)
		return -EINVAL;
	memset(&rt, 0, sizeof(rt));
	if ((err = py_runtime__detect_pid(pid, NULL, &rt)))
		return err;
	if (!rt.found)
		return trace__ruby_runs(pid) ? STACKSNAP_RUNTIME_RUBY
		       : trace__php_runs(pid) ? STACKSNAP_RUNTIME_PHP
					      : STACKSNAP_RUNTIME_NATIVE;
	if (!(mem = stacksnap_mem__new_pid(pid)))
		return -errno;
	py_runtime__read_layout(&rt, mem);
	stacksnap_mem__free(mem);
	return rt.layout ? STACKSNAP_RUNTIME_PYTHON : STACKSNAP_RUNTIME_NATIVE;
}
