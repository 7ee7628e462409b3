/* runtime_capture.c - a language runtime's part of a live capture: the
 * interpreter found before the freeze, its threads' frame chains copied
 * during the freeze (after the registers and stacks of every round, so the
 * last round's copy is the one of the instant the capture stands for),
 * and, after the thaw, the frames named and merged into a thread's native
 * frames on request. The runtimes: CPython (src/runtime/python/), and a
 * HotSpot JVM (java_capture.c) and V8 (v8_capture.c): nothing copied in
 * the freeze; a process has one of the three). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/clock.h"
#include "base/opts.h"
#include "capture/capture_internal.h"
#include "capture/runtime_capture.h"
#include "mem/mem.h"
#include "runtime/python/python.h"
#include "runtime/ruby/ruby.h"

/* Invariant: py.found, or named found (and stack set) (and py zeroed: every Python path
 * sees an interpreter with no layout and nothing captured); mem reads the live process (the capture's reads
 * are in the freeze; the resolver's after it, of immutable objects).
 * resolved[i] (for capture thread i) is set once its frames are named. */
struct snap_runtime {
	struct py_runtime py;
	struct stacksnap_mem *mem;
	struct py_capture cap;
	bool captured;		/* cap holds a capture of the last round */
	struct py_resolver res;
	bool res_ready;
	uint64_t capture_ns;	/* of the last round */
	unsigned reads;
	struct py_frame **frames; /* per capture thread, lazily */
	size_t *nframes;
	const char **ends;
	bool *resolved;
	/* A runtime whose frames are named from the native frames instead
	   (a JVM, V8); stack reads the capture's stack copies for it. */
	struct named_runtime named;
	struct stacksnap_mem *stack;
	/* Or CRuby (rb.found; mem reads it): its threads' control frames
	   copied in the freeze, named per capture thread on request. */
	struct rb_runtime rb;
	struct rb_capture rbcap;
	bool rb_captured;
	struct rb_resolver rbres;
	bool rbres_ready;
	struct rb_frame **rbframes;	/* per capture thread, lazily */
	size_t *nrbframes;
};

/* CRuby in pid: true (rt->rb and rt->mem set) or false. With the address
 * space the caller read, a process without libruby costs no second read
 * of its maps, and an image open already is not opened again. */
static bool detect_ruby(struct snap_runtime *rt, pid_t pid,
			const struct stacksnap_addrspace *as,
			const struct log_sink *log)
{
	const struct as_map *lib = NULL;
	int err;

	for (size_t i = 0; as && i < as->n && !lib; i++)
		if (as->maps[i].path && rb_image_candidate(as->maps[i].path))
			lib = &as->maps[i];
	if (as && !lib)
		return false;
	if (!(rt->mem = stacksnap_mem__new_pid(pid)))
		return false;
	if (lib && lib->mod && !lib->pending && lib->mod->img)
		err = rb_runtime__detect_elf(lib->mod->img, lib->path, lib->bias,
					     rt->mem, &rt->rb);
	else
		err = rb_runtime__detect_pid(pid, rt->mem, log, &rt->rb);
	if (err || !rt->rb.found) {
		stacksnap_mem__free(rt->mem);
		rt->mem = NULL;
		return false;
	}
	log_info(log, "pid %d: %s (%s)", pid, rt->rb.note, rt->rb.path);
	rb_capture__reserve(&rt->rbcap, 64, 4096);
	return true;
}

/* The capture thread k's named Ruby frames, resolved once. */
static int ruby_frames(struct snap_runtime *rt, size_t k)
{
	size_t n = rt->rbcap.nthreads;

	if (!rt->rbframes) {
		rt->rbframes = calloc(n, sizeof(*rt->rbframes));
		rt->nrbframes = calloc(n, sizeof(*rt->nrbframes));
		if (!rt->rbframes || !rt->nrbframes)
			return -ENOMEM;
	}
	if (!rt->rbres_ready) {
		rb_resolver__init(&rt->rbres, &rt->rb, rt->mem);
		rt->rbres_ready = true;
	}
	if (rt->rbframes[k])
		return 0;
	return rb_resolve__thread(&rt->rbres, &rt->rbcap, &rt->rbcap.threads[k],
				  &rt->rbframes[k], &rt->nrbframes[k]);
}

/* The interpreter among the modules of the address space the caller read
 * just before: no second read of the maps, and an image the context has
 * open already is not opened again. */
static int detect_in(pid_t pid, const struct stacksnap_addrspace *as,
		     const struct log_sink *log, struct py_runtime *rt)
{
	char link[64], exe[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	memset(rt, 0, sizeof(*rt));
	for (size_t i = 0; i < as->n; i++) {
		const struct as_map *m = &as->maps[i];
		char full[4096 + 32];

		if (!m->path || !py_image_candidate(m->path, exe))
			continue;
		if (m->mod && !m->pending && m->mod->img) {
			if (py_runtime__detect_elf(m->mod->img, m->path, m->bias, rt) == 0)
				return 0;
			continue;
		}
		snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, m->path);
		if (py_runtime__detect_image(full, m->start, m->offset, log, rt) == 0) {
			snprintf(rt->path, sizeof(rt->path), "%s", m->path);
			return 0;
		}
	}
	memset(rt, 0, sizeof(*rt));
	return 0;
}

/* The stack copies of this round: 3.11 keeps each eval loop's _PyCFrame
 * on the C stack. */
static const uint8_t *stack_bytes_at(void *user, uint64_t addr, size_t len)
{
	const struct stacksnap_snapshot *s = user;

	for (size_t i = 0; i < s->n; i++) {
		const struct stacksnap_thread *t = &s->threads[i].pub;

		if (t->stack && addr >= t->stack_base &&
		    addr - t->stack_base <= t->stack_len &&
		    len <= t->stack_len - (addr - t->stack_base))
			return t->stack + (addr - t->stack_base);
		/* A handler on an alternate stack: the thread's other
		   stacks, copied too (a JVM's interpreter frames there). */
		for (unsigned k = 0; k < t->nmore_stacks; k++) {
			const struct stacksnap_stack_range *m = &t->more_stacks[k];

			if (m->bytes && addr >= m->base && addr - m->base <= m->len &&
			    len <= m->len - (addr - m->base))
				return m->bytes + (addr - m->base);
		}
	}
	return NULL;
}

/* The stopped thread whose thread pointer (its struct pthread, what
 * CPython before 3.11 keeps as a thread's id) is pthread: its tid, or 0
 * (a thread read without stopping it has no thread pointer). */
static uint64_t tid_of_pthread(void *user, uint64_t pthread)
{
	const struct stacksnap_snapshot *s = user;

	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].fs_base == pthread)
			return (uint64_t)s->threads[i].pub.tid;
	return 0;
}

/* The capture's stack copies as a memory source, for the frame slots a
 * named runtime reads (a running thread's have changed since). */
static int read_stacks(void *user, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *p = stack_bytes_at(user, addr, len);

	if (!p)
		return -EFAULT;
	memcpy(buf, p, len);
	return 0;
}

void capture__runtime_detect(struct stacksnap_snapshot *s,
			     const struct stacksnap_snapshot_opts *o,
			     const struct log_sink *log)
{
	struct snap_runtime *rt;

	if (o->no_runtime)
		return;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return;
	/* V8 first: its image is known by name (node, libnode), and looking
	   for CPython's symbols in node's large symbol table costs a
	   dump ~200 ms. */
	if (capture__named_detect(&rt->named, &capture__v8_ops, s->pid,
				  o->addrspace, log))
		goto named;
	/* PHP by its image's name too (php*, libphp*): php_capture.c. */
	if (capture__named_detect(&rt->named, &capture__php_ops, s->pid,
				  o->addrspace, log))
		goto named;
	if ((o->addrspace ? detect_in(s->pid, o->addrspace, log, &rt->py)
			  : py_runtime__detect_pid(s->pid, log, &rt->py)) ||
	    !rt->py.found) {
		memset(&rt->py, 0, sizeof(rt->py));
		if (detect_ruby(rt, s->pid, o->addrspace, log)) {
			s->runtime = rt;
			return;
		}
		if (capture__named_detect(&rt->named, &capture__java_ops, s->pid,
					  o->addrspace, log))
			goto named;
		free(rt);
		return;
	}
	rt->mem = stacksnap_mem__new_pid(s->pid);
	if (!rt->mem) {
		free(rt);
		return;
	}
	py_runtime__read_layout(&rt->py, rt->mem);
	log_info(log, "pid %d: %s (%s)", s->pid, rt->py.note, rt->py.path);
	/* A first walk, before the freeze and not kept: where the thread
	   states are (the freeze reads them all in one batch when the
	   lists still link the same ones) and how much room the copies
	   take, reserved with margin so the freeze does not allocate. */
	if (rt->py.layout && py_capture__all(&rt->py, rt->mem, &rt->cap) == 0) {
		size_t chunks = 0;

		for (size_t i = 0; i < rt->cap.nthreads; i++)
			chunks += PY_MAX_CHUNK / 16;
		py_capture__reserve(&rt->cap, 2 * rt->cap.nthreads + 8,
				    2 * rt->cap.nframes + 256, chunks);
	}
	s->runtime = rt;
	return;
named:
	rt->stack = stacksnap_mem__new_callback(read_stacks, s);
	if (!rt->stack) {
		capture__named_free(&rt->named);
		free(rt);
		return;
	}
	s->runtime = rt;
}

void capture__runtime_take(struct stacksnap_snapshot *s)
{
	struct snap_runtime *rt = s->runtime;
	uint64_t t0;

	if (rt && rt->named.ops) {
		if (rt->named.ops->take)
			rt->named.ops->take(rt->named.rt);
		return;
	}
	if (rt && rt->rb.layout) {
		t0 = clock_monotonic_ns();
		mem_invalidate(rt->mem);
		rb_capture__clear(&rt->rbcap);
		rt->rb_captured = true;
		/* Threads read without stopping them have no thread pointer:
		   the VM's thread list gives theirs. */
		rt->rbcap.nlisted = 0;
		for (size_t i = 0; i < s->n; i++)
			if (!s->threads[i].fs_base) {
				rb_capture__list(&rt->rb, rt->mem, &rt->rbcap);
				break;
			}
		/* 64 threads a batch: each level of their reads one
		   system call. */
		for (size_t i = 0; i < s->n; i += 64) {
			struct rb_listed who[64];
			size_t k = 0;

			for (; k < 64 && i + k < s->n; k++) {
				who[k].tid = (uint64_t)s->threads[i + k].pub.tid;
				who[k].tp = s->threads[i + k].fs_base;
				if (!who[k].tp)
					who[k].tp = rb_capture__listed_tp(&rt->rbcap,
									  who[k].tid);
			}
			if (rb_capture__threads(&rt->rb, rt->mem, who, k, &rt->rbcap))
				rt->rb_captured = false;
		}
		rt->capture_ns = clock_monotonic_ns() - t0;
		rt->reads = rt->rbcap.reads;
		return;
	}
	if (!rt || !rt->py.layout)
		return;
	rt->cap.local = stack_bytes_at;
	rt->cap.tid_of = tid_of_pthread;
	rt->cap.local_user = s;
	t0 = clock_monotonic_ns();
	rt->captured = py_capture__all(&rt->py, rt->mem, &rt->cap) == 0;
	rt->capture_ns = clock_monotonic_ns() - t0;
	rt->reads = rt->cap.reads;
}

void capture__runtime_free(struct stacksnap_snapshot *s)
{
	struct snap_runtime *rt = s->runtime;

	if (!rt)
		return;
	if (rt->frames)
		for (size_t i = 0; i < rt->cap.nthreads; i++)
			free(rt->frames[i]);
	free(rt->frames);
	free(rt->nframes);
	free(rt->ends);
	free(rt->resolved);
	if (rt->res_ready)
		py_resolver__free(&rt->res);
	if (rt->rbframes)
		for (size_t i = 0; i < rt->rbcap.nthreads; i++)
			free(rt->rbframes[i]);
	free(rt->rbframes);
	free(rt->nrbframes);
	if (rt->rbres_ready)
		rb_resolver__free(&rt->rbres);
	rb_capture__free(&rt->rbcap);
	py_capture__free(&rt->cap);
	stacksnap_mem__free(rt->mem);
	capture__named_free(&rt->named);
	stacksnap_mem__free(rt->stack);
	free(rt);
	s->runtime = NULL;
}

int stacksnap_snapshot__runtime(const struct stacksnap_snapshot *s,
				struct stacksnap_runtime_info *out)
{
	struct stacksnap_runtime_info info = { .sz = sizeof(info) };
	const struct snap_runtime *rt;

	if (!s || !out)
		return fail(-EINVAL);
	rt = s->runtime;
	if (rt && rt->named.ops) {
		info.runtime = rt->named.ops->kind;
		info.description = rt->named.ops->description(rt->named.rt);
		info.frames = !rt->named.ops->has_frames ||
			      rt->named.ops->has_frames(rt->named.rt);
	} else if (rt && rt->rb.found) {
		info.runtime = STACKSNAP_RUNTIME_RUBY;
		info.description = rt->rb.note;
		info.frames = rt->rb_captured;
		info.capture_ns = rt->capture_ns;
		info.capture_reads = rt->reads;
	} else if (rt) {
		info.runtime = STACKSNAP_RUNTIME_PYTHON;
		info.description = rt->py.note;
		info.frames = rt->captured;
		info.capture_ns = rt->capture_ns;
		info.capture_reads = rt->reads;
		if (rt->captured) {
			info.state = rt->cap.state;
			info.end = rt->cap.end;
			info.interpreters = rt->cap.ninterps;
			for (size_t i = 0; i < rt->cap.nthreads; i++)
				if (rt->cap.threads[i].holds_gil)
					info.gil_holder = (pid_t)rt->cap.threads[i].native_tid;
		}
	}
	if (opts_out(out, &info, sizeof(info),
		     offsetof(struct stacksnap_runtime_info, frames)))
		return fail(-EINVAL);
	return 0;
}

/* The named frames of the kernel thread of capture thread k (the first
 * with its tid: all its thread states, one per interpreter it entered),
 * resolved once. */
static int resolved_frames(struct snap_runtime *rt, size_t k)
{
	size_t n = rt->cap.nthreads;

	if (!rt->frames) {
		rt->frames = calloc(n, sizeof(*rt->frames));
		rt->nframes = calloc(n, sizeof(*rt->nframes));
		rt->ends = calloc(n, sizeof(*rt->ends));
		rt->resolved = calloc(n, sizeof(*rt->resolved));
		if (!rt->frames || !rt->nframes || !rt->ends || !rt->resolved)
			return -ENOMEM;
	}
	if (!rt->res_ready) {
		py_resolver__init(&rt->res, &rt->py, rt->mem);
		rt->res_ready = true;
	}
	if (rt->resolved[k])
		return 0;
	bool gil;
	int err = py_resolve__tid(&rt->res, &rt->cap, rt->cap.threads[k].native_tid,
				  &rt->frames[k], &rt->nframes[k], &rt->ends[k],
				  &gil);
	if (err)
		return err;
	rt->resolved[k] = true;
	return 0;
}

int stacksnap_snapshot__runtime_steppers(struct stacksnap_snapshot *s,
					 struct stacksnap_unwinder *uw)
{
	if (!s || !uw)
		return fail(-EINVAL);
	if (!s->runtime)
		return 0;
	return capture__named_steppers(&s->runtime->named, uw);
}

int stacksnap_snapshot__runtime_frames(struct stacksnap_snapshot *s, size_t i,
				       const struct stacksnap_frame *native,
				       size_t nnative,
				       struct stacksnap_runtime_frame *out,
				       size_t max, const char **end)
{
	struct snap_runtime *rt;
	const struct py_raw_thread *t;
	size_t k;
	int err;

	if (end)
		*end = NULL;
	if (!s || i >= s->n || (max && !out) || (nnative && !native))
		return fail(-EINVAL);
	rt = s->runtime;
	if (rt && rt->named.ops) {
		err = capture__named_frames(&rt->named, s->n, i, rt->stack, native,
					    nnative, out, max);
		return err < 0 ? fail(err) : err;
	}
	if (rt && rt->rb_captured) {
		const struct rb_raw_thread *rbt =
			rb_capture__find(&rt->rbcap, (uint64_t)s->threads[i].pub.tid);

		if (!rbt)
			return 0;
		k = (size_t)(rbt - rt->rbcap.threads);
		if ((err = ruby_frames(rt, k)))
			return fail(err);
		if (end)
			*end = rbt->end;
		return (int)rb_merge(rt->rbframes[k], rt->nrbframes[k], native, nnative,
				     rt->rb.exec_start, rt->rb.exec_end, out, max);
	}
	if (!rt || !rt->captured)
		return 0;
	t = py_capture__thread(&rt->cap, (uint64_t)s->threads[i].pub.tid);
	if (!t)
		return 0;
	k = (size_t)(t - rt->cap.threads);
	err = resolved_frames(rt, k);
	if (err)
		return fail(err);
	if (end)
		*end = rt->ends[k];
	return (int)py_merge(rt->frames[k], rt->nframes[k], native, nnative,
			     rt->py.eval_start, rt->py.eval_end, out, max);
}

const char *stacksnap_snapshot__runtime_thread_name(struct stacksnap_snapshot *s,
						   size_t i)
{
	struct snap_runtime *rt;
	const struct py_raw_thread *t;

	if (!s || i >= s->n || !(rt = s->runtime))
		return NULL;
	if (rt->named.ops)
		return rt->named.ops->thread_name
			? rt->named.ops->thread_name(rt->named.rt, s->threads[i].pub.tid)
			: NULL;
	if (!rt->captured)
		return NULL;
	t = py_capture__thread(&rt->cap, (uint64_t)s->threads[i].pub.tid);
	if (!t)
		return NULL;
	if (!rt->res_ready) {
		py_resolver__init(&rt->res, &rt->py, rt->mem);
		rt->res_ready = true;
	}
	return py_resolve__tid_name(&rt->res, &rt->cap, t->native_tid);
}

const char *capture__runtime_named(const struct stacksnap_snapshot *s,
				   enum stacksnap_runtime *kind)
{
	const struct named_runtime *nr = s && s->runtime ? &s->runtime->named : NULL;

	if (!nr || !nr->ops)
		return NULL;
	*kind = nr->ops->kind;
	return nr->ops->description(nr->rt);
}

size_t capture__runtime_named_steps(const struct stacksnap_snapshot *s,
				    const struct stacksnap_runtime_step **steps)
{
	const struct named_runtime *nr = s && s->runtime ? &s->runtime->named : NULL;

	*steps = NULL;
	if (!nr || !nr->ops || !nr->ops->steps)
		return 0;
	return nr->ops->steps(nr->rt, steps);
}

const struct py_runtime *capture__runtime_py(const struct stacksnap_snapshot *s)
{
	return s && s->runtime && s->runtime->captured ? &s->runtime->py : NULL;
}

int capture__runtime_thread(struct stacksnap_snapshot *s, pid_t tid,
			    const struct py_frame **frames, size_t *n,
			    const char **end, bool *holds_gil)
{
	struct snap_runtime *rt = s ? s->runtime : NULL;
	const struct py_raw_thread *t;
	size_t k;
	int err;

	*frames = NULL;
	*n = 0;
	*end = NULL;
	*holds_gil = false;
	if (!rt || !rt->captured)
		return 0;
	t = py_capture__thread(&rt->cap, (uint64_t)tid);
	if (!t)
		return 0;
	k = (size_t)(t - rt->cap.threads);
	err = resolved_frames(rt, k);
	if (err)
		return err;
	*frames = rt->frames[k];
	*n = rt->nframes[k];
	*end = rt->ends[k];
	for (size_t i = 0; i < rt->cap.nthreads; i++)
		*holds_gil |= rt->cap.threads[i].native_tid == (uint64_t)tid &&
			      rt->cap.threads[i].holds_gil;
	return 0;
}

const struct rb_runtime *capture__runtime_rb(const struct stacksnap_snapshot *s)
{
	return s && s->runtime && s->runtime->rb_captured ? &s->runtime->rb : NULL;
}

int capture__runtime_rb_thread(struct stacksnap_snapshot *s, pid_t tid,
			       const struct rb_frame **frames, size_t *n,
			       const char **end)
{
	struct snap_runtime *rt = s ? s->runtime : NULL;
	const struct rb_raw_thread *t;
	size_t k;
	int err;

	*frames = NULL;
	*n = 0;
	*end = NULL;
	if (!rt || !rt->rb_captured ||
	    !(t = rb_capture__find(&rt->rbcap, (uint64_t)tid)))
		return 0;
	k = (size_t)(t - rt->rbcap.threads);
	if ((err = ruby_frames(rt, k)))
		return err;
	*frames = rt->rbframes[k];
	*n = rt->nrbframes[k];
	*end = t->end;
	return 0;
}
