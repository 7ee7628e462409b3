/* walker.c - the attached walker's caller side: starting the tracer
 * thread, handing it one request at a time, delivering queued events,
 * and walking threads from the copies a capture leaves. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "addrspace/module.h"
#include "base/clock.h"
#include "base/maps_line.h"
#include "base/opts.h"
#include "base/vec.h"
#include "capture/capture_internal.h"
#include "walker/walker.h"

#define DEFAULT_MAPS_POLL_MS 100
#define DEFAULT_STOP_TIMEOUT_MS 1000
#define DEFAULT_STACK_SIZE (256u << 10)
#define DEFAULT_MAX_FRAMES 1024
#define PREFAULT_PER_THREAD (64u << 10) /* typical stack in use, rounded up */
#define PREFAULT_MAX (16u << 20)

void walker_queue(struct stacksnap_walker *w, const struct stacksnap_event *ev,
		  const char *path)
{
	struct wevent *e = VEC_PUSH(w->events, w->nevents, w->capevents);
	uint64_t one = 1;

	if (!e) {
		log_warn(w->log, "walker: out of memory; an event was dropped");
		return;
	}
	e->ev = *ev;
	e->ev.time_ns = clock_monotonic_ns();
	e->path = path ? strdup(path) : NULL;
	e->ev.path = e->path;
	(void)!write(w->efd, &one, sizeof(one));
	pthread_cond_broadcast(&w->cond);
}

void walker_free_xmaps(struct xmap *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(x[i].path);
	free(x);
}

int walker_read_maps(pid_t pid, struct xmap **x, size_t *nx, size_t *capx,
		     struct rwmap **rw, size_t *nrw, size_t *caprw)
{
	char path[64], line[4096 + 128];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;

		if (!strchr(line, '\n') && !feof(f)) { /* a longer line: skip it */
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (maps_line__parse(line, &ml))
			continue;
		uint64_t a = ml.start, b = ml.end;
		const char *p = ml.path ? ml.path : "";
		if (rw && (ml.prot & PROT_WRITE)) {
			struct rwmap *m = VEC_PUSH(*rw, *nrw, *caprw);
			if (!m) {
				err = -ENOMEM;
				break;
			}
			m->start = a;
			m->end = b;
		}
		if (x && (ml.prot & PROT_EXEC) && p[0] == '/') {
			struct xmap *m = VEC_PUSH(*x, *nx, *capx);
			if (!m || !(m->path = strdup(p))) {
				if (m)
					(*nx)--;
				err = -ENOMEM;
				break;
			}
			m->start = a;
			m->end = b;
			m->inode = ml.inode;
		}
	}
	fclose(f);
	return err;
}

/* ---- requests ---- */

/* Hands r to the tracer thread and waits until it is done (api held). */
static int submit(struct stacksnap_walker *w, struct request *r)
{
	pthread_mutex_lock(&w->lock);
	if (w->tracer_done) {
		pthread_mutex_unlock(&w->lock);
		return -ECANCELED;
	}
	w->req = r;
	tracer_ring(w);
	while (!r->done)
		pthread_cond_wait(&w->cond, &w->lock);
	w->req = NULL;
	pthread_mutex_unlock(&w->lock);
	return r->result;
}

struct stacksnap_walker *stacksnap_walker__new(struct stacksnap_ctx *ctx,
					       const struct stacksnap_walker_opts *opts)
{
	struct stacksnap_walker_opts o;
	struct stacksnap_walker *w;
	sigset_t all, old;
	int err;

	if (!ctx || opts_in(&o, sizeof(o), opts, 0)) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->ctx = ctx;
	w->log = &ctx->log;
	w->maps_poll_ms = o.maps_poll_ms ? o.maps_poll_ms : DEFAULT_MAPS_POLL_MS;
	w->stop_timeout_ms = o.stop_timeout_ms ? o.stop_timeout_ms
					       : DEFAULT_STOP_TIMEOUT_MS;
	w->stack_size = o.stack_size ? o.stack_size : DEFAULT_STACK_SIZE;
	w->max_frames = o.max_frames ? o.max_frames : DEFAULT_MAX_FRAMES;
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		err = errno;
		free(w);
		errno = err;
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->api, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->tracer_err = 1; /* not started yet */
	/* The tracer thread takes none of the caller's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&w->thread, NULL, tracer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(w->efd);
		free(w);
		errno = err;
		return NULL;
	}
	pthread_mutex_lock(&w->lock);
	while (w->tracer_err == 1)
		pthread_cond_wait(&w->cond, &w->lock);
	err = w->tracer_err;
	pthread_mutex_unlock(&w->lock);
	if (err) {
		log_err(w->log, "walker: cannot start its tracer: %s", strerror(-err));
		pthread_join(w->thread, NULL);
		close(w->efd);
		free(w);
		errno = -err;
		return NULL;
	}
	return w;
}

static void target_free(struct stacksnap_target *t)
{
	walker_free_xmaps(t->xmaps, t->nx);
	free(t->threads);
	free(t->caps);
	free(t->stack_bytes);
	free(t->frames);
	free(t->py);
	stacksnap_mem__free(t->py_mem);
	free(t->rb);
	stacksnap_mem__free(t->rb_mem);
	rb_capture__free(&t->rb_cap);
	py_capture__free(&t->py_cap);
	capture__named_free(&t->named);
	free(t->rframes);
	stacksnap_addrspace__free(t->as);
	free(t);
}

/* Room for n runtime frames in t->rframes: false when out of memory. */
static bool grow_rframes(struct stacksnap_target *t, size_t n)
{
	void *p;

	if (n <= t->cap_rframes)
		return true;
	if (!(p = realloc(t->rframes, n * sizeof(*t->rframes))))
		return false;
	t->rframes = p;
	t->cap_rframes = n;
	return true;
}

/* A Ruby VM with a known layout: true (t->rb set), or false. */
static bool find_ruby(struct stacksnap_target *t)
{
	struct rb_runtime *rb = calloc(1, sizeof(*rb));

	if (!rb || !(t->rb_mem = stacksnap_mem__new_pid(t->pid)) ||
	    rb_runtime__detect_pid(t->pid, t->rb_mem, t->w->log, rb) || !rb->found) {
		free(rb);
		stacksnap_mem__free(t->rb_mem);
		t->rb_mem = NULL;
		return false;
	}
	log_info(t->w->log, "pid %d: %s (%s)", t->pid, rb->note, rb->path);
	if (!rb->layout) {
		free(rb);
		stacksnap_mem__free(t->rb_mem);
		t->rb_mem = NULL;
		return true;
	}
	/* Room for the captures, so that the stop does not allocate. */
	rb_capture__reserve(&t->rb_cap, 64, 4096);
	t->rb = rb;
	return true;
}

/* Thread tid's Ruby frames of the last capture, merged into its n native
 * frames (t->frames): into t->rframes. */
static size_t ruby_frames(struct stacksnap_target *t, struct rb_resolver *res,
			  pid_t tid, size_t n)
{
	const struct rb_raw_thread *rt;
	struct rb_frame *f;
	size_t nf, nr;

	if (!t->rb || !t->rb_ok ||
	    !(rt = rb_capture__find(&t->rb_cap, (uint64_t)tid)) ||
	    rb_resolve__thread(res, &t->rb_cap, rt, &f, &nf))
		return 0;
	if (!grow_rframes(t, nf)) {
		free(f);
		return 0;
	}
	nr = rb_merge(f, nf, t->frames, n, t->rb->exec_start, t->rb->exec_end,
		      t->rframes, t->cap_rframes);
	free(f);
	return nr < t->cap_rframes ? nr : t->cap_rframes;
}

/* Looks once for a runtime: V8, a Python interpreter (a first walk of
 * its frame chains, outside any stop, tells the captures where the
 * thread states are), else a JVM. */
static void find_runtime(struct stacksnap_target *t)
{
	struct py_runtime *py;

	t->py_tried = true;
	/* V8 first, by its image's name: CPython's symbols are not looked
	   for in node's large symbol table. */
	if (capture__named_detect(&t->named, &capture__v8_ops, t->pid, t->as,
				  t->w->log))
		return;
	py = calloc(1, sizeof(*py));
	if (!py || py_runtime__detect_pid(t->pid, t->w->log, py) || !py->found ||
	    !(t->py_mem = stacksnap_mem__new_pid(t->pid))) {
		free(py);
		if (find_ruby(t))
			return;
		/* A process runs Python, Ruby or a JVM. */
		capture__named_detect(&t->named, &capture__java_ops, t->pid, t->as,
				      t->w->log);
		return;
	}
	py_runtime__read_layout(py, t->py_mem);
	if (!py->layout) {
		log_info(t->w->log, "pid %d: %s", t->pid, py->note);
		free(py);
		return;
	}
	if (py_capture__all(py, t->py_mem, &t->py_cap) == 0)
		py_capture__reserve(&t->py_cap, 2 * t->py_cap.nthreads + 8,
				    2 * t->py_cap.nframes + 256,
				    (t->py_cap.nthreads + 8) * (PY_MAX_CHUNK / 16));
	t->py = py;
}

/* Thread tid's Python frames of the last capture, merged into its n
 * native frames (t->frames): into t->rframes. */
static size_t python_frames(struct stacksnap_target *t, struct py_resolver *res,
			    pid_t tid, size_t n)
{
	struct py_frame *f;
	const char *end;
	size_t nf, nr;
	bool gil;

	if (!t->py || !t->py_ok ||
	    py_resolve__tid(res, &t->py_cap, (uint64_t)tid, &f, &nf, &end, &gil))
		return 0;
	if (!grow_rframes(t, nf)) {
		free(f);
		return 0;
	}
	nr = py_merge(f, nf, t->frames, n, t->py->eval_start, t->py->eval_end,
		      t->rframes, t->cap_rframes);
	free(f);
	return nr < t->cap_rframes ? nr : t->cap_rframes;
}

/* Thread i's (of n captured) frames of a JVM or V8, each replacing its
 * native frame, named from the walk's stack copy (mem) and the live
 * process: into t->rframes. */
static size_t named_frames(struct stacksnap_target *t, size_t i, size_t ncaps,
			   struct stacksnap_mem *mem, size_t n)
{
	int k;

	if (!t->named.ops || !n)
		return 0;
	k = capture__named_frames(&t->named, ncaps, i, mem, t->frames, n, NULL, 0);
	if (k <= 0 || !grow_rframes(t, (size_t)k))
		return 0;
	k = capture__named_frames(&t->named, ncaps, i, mem, t->frames, n,
				  t->rframes, t->cap_rframes);
	return k > 0 ? (size_t)k : 0;
}

void stacksnap_walker__free(struct stacksnap_walker *w)
{
	if (!w)
		return;
	while (w->targets)
		stacksnap_target__detach(w->targets);
	pthread_mutex_lock(&w->lock);
	w->quit = true;
	if (!w->tracer_done)
		tracer_ring(w);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	for (size_t i = 0; i < w->nevents; i++)
		free(w->events[i].path);
	free(w->events);
	close(w->efd);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->api);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int stacksnap_walker__fd(const struct stacksnap_walker *w)
{
	return w ? w->efd : fail(-EINVAL);
}

/* Brings the target's address space up to the code mappings the tracer
 * last saw (api held): modules that stay are kept by identity. */
static void sync_addrspace(struct stacksnap_target *t)
{
	uint64_t gen;

	pthread_mutex_lock(&t->w->lock);
	gen = t->maps_gen;
	pthread_mutex_unlock(&t->w->lock);
	if (gen != t->as_gen && !t->terminated &&
	    stacksnap_addrspace__refresh(t->as) == 0)
		t->as_gen = gen;
}

int stacksnap_walker__handle_events(struct stacksnap_walker *w, bool block,
				    stacksnap_event_fn cb, void *user)
{
	struct wevent *ev;
	size_t n, done = 0;
	uint64_t cnt;

	if (!w || !cb)
		return fail(-EINVAL);
	pthread_mutex_lock(&w->api);
	pthread_mutex_lock(&w->lock);
	while (block && !w->nevents && w->targets && !w->tracer_done)
		pthread_cond_wait(&w->cond, &w->lock);
	(void)!read(w->efd, &cnt, sizeof(cnt));
	ev = w->events;
	n = w->nevents;
	w->events = NULL;
	w->nevents = w->capevents = 0;
	pthread_mutex_unlock(&w->lock);
	for (struct stacksnap_target *t = w->targets; t; t = t->next)
		sync_addrspace(t);
	while (done < n) {
		int stop = cb(user, &ev[done].ev);

		free(ev[done++].path);
		if (stop)
			break;
	}
	if (done < n) { /* put back what the callback did not take */
		pthread_mutex_lock(&w->lock);
		for (size_t i = done; i < n; i++) {
			walker_queue(w, &ev[i].ev, ev[i].path);
			free(ev[i].path);
		}
		pthread_mutex_unlock(&w->lock);
	}
	free(ev);
	pthread_mutex_unlock(&w->api);
	return (int)done;
}

/* ---- targets ---- */

struct stacksnap_target *stacksnap_walker__attach(struct stacksnap_walker *w,
						  pid_t pid)
{
	struct request r = { .kind = REQ_ATTACH };
	struct stacksnap_target *t;
	int err;

	if (!w || pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	err = stacksnap_snapshot__check(w->ctx, pid);
	if (err)
		return NULL; /* errno set, logged */
	t = calloc(1, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->w = w;
	t->pid = pid;
	t->frames = calloc(w->max_frames, sizeof(*t->frames));
	t->as = stacksnap_addrspace__from_pid(w->ctx, pid);
	err = !t->frames ? -ENOMEM : !t->as ? -errno : 0;
	if (!err)
		err = walker_read_maps(pid, &t->xmaps, &t->nx, &t->capx, NULL, NULL,
				       NULL);
	if (err) {
		target_free(t);
		errno = -err;
		return NULL;
	}
	pthread_mutex_lock(&w->api);
	r.t = t;
	err = submit(w, &r);
	if (err) {
		/* Let go whatever was seized before the failure. */
		struct request d = { .kind = REQ_DETACH, .t = t };

		submit(w, &d);
		pthread_mutex_unlock(&w->api);
		char why[320];

		if (err == -EPERM)
			log_err(w->log, "pid %d: ptrace not permitted (%s)", pid,
				stacksnap_why_not_permitted(STACKSNAP_REFUSED_PTRACE, pid,
							    why, sizeof(why)));
		else
			log_err(w->log, "pid %d: cannot attach: %s", pid,
				strerror(-err));
		target_free(t);
		errno = -err;
		return NULL;
	}
	pthread_mutex_unlock(&w->api);
	return t;
}

int stacksnap_target__detach(struct stacksnap_target *t)
{
	struct request r = { .kind = REQ_DETACH, .t = t };
	struct stacksnap_walker *w;
	int err;

	if (!t)
		return fail(-EINVAL);
	w = t->w;
	pthread_mutex_lock(&w->api);
	err = submit(w, &r);
	if (err == -ECANCELED) { /* no tracer: unlink by hand */
		pthread_mutex_lock(&w->lock);
		for (struct stacksnap_target **pp = &w->targets; *pp; pp = &(*pp)->next)
			if (*pp == t) {
				*pp = t->next;
				break;
			}
		pthread_mutex_unlock(&w->lock);
	}
	pthread_mutex_unlock(&w->api);
	target_free(t);
	return err && err != -ECANCELED ? fail(err) : 0;
}

pid_t stacksnap_target__pid(const struct stacksnap_target *t)
{
	return t ? t->pid : 0;
}

bool stacksnap_target__is_terminated(const struct stacksnap_target *t)
{
	bool dead;

	if (!t)
		return false;
	pthread_mutex_lock(&t->w->lock);
	dead = t->terminated;
	pthread_mutex_unlock(&t->w->lock);
	return dead;
}

static int pause_resume(struct stacksnap_target *t, pid_t tid,
			enum request_kind kind)
{
	struct request r = { .kind = kind, .t = t, .tid = tid };
	int err;

	if (!t || tid < 0)
		return fail(-EINVAL);
	pthread_mutex_lock(&t->w->api);
	err = stacksnap_target__is_terminated(t) ? -ESRCH : submit(t->w, &r);
	pthread_mutex_unlock(&t->w->api);
	return err ? fail(err) : 0;
}

int stacksnap_target__pause(struct stacksnap_target *t, pid_t tid)
{
	return pause_resume(t, tid, REQ_PAUSE);
}

int stacksnap_target__resume(struct stacksnap_target *t, pid_t tid)
{
	return pause_resume(t, tid, REQ_RESUME);
}

int stacksnap_target__threads(struct stacksnap_target *t, pid_t *tids, size_t max)
{
	size_t n;

	if (!t || (!tids && max))
		return fail(-EINVAL);
	pthread_mutex_lock(&t->w->lock);
	n = t->n;
	for (size_t i = 0; i < n && i < max; i++)
		tids[i] = t->threads[i].tid;
	pthread_mutex_unlock(&t->w->lock);
	return (int)n;
}

struct stacksnap_addrspace *stacksnap_target__addrspace(struct stacksnap_target *t)
{
	if (!t) {
		errno = EINVAL;
		return NULL;
	}
	return t->as;
}

/* Unwinds one captured thread from its copy. A walk that ends outside
 * every known mapping may have met a library loaded since the last poll:
 * the mappings are read again once and the copy walked again. */
static int unwind_capture(struct stacksnap_target *t, const struct wcapture *c,
			  struct stacksnap_unwinder *uw, struct stacksnap_mem *mem,
			  bool *refreshed, enum stacksnap_end *end)
{
	struct stacksnap_stack_range more = { t->stack_bytes + c->more_off,
					      c->more_len, c->more_base };
	int n;

	stacksnap_mem__set_copy(mem, t->stack_bytes + c->off, c->len, c->base);
	stacksnap_mem__set_more(mem, &more, c->more_len ? 1 : 0);
	n = stacksnap_unwind(uw, t->as, &c->regs, mem, t->frames, t->w->max_frames,
			     end);
	if (n >= 0 && !*refreshed &&
	    (*end == STACKSNAP_END_NO_MODULE || *end == STACKSNAP_END_BAD_PC)) {
		*refreshed = true;
		if (stacksnap_addrspace__refresh(t->as) == 0)
			n = stacksnap_unwind(uw, t->as, &c->regs, mem, t->frames,
					     t->w->max_frames, end);
	}
	stacksnap_mem__set_more(mem, NULL, 0); /* more dies here */
	return n;
}

/* Grows the stack buffer to what the threads typically use. */
static int prefault(struct stacksnap_target *t)
{
	size_t per = t->w->stack_size < PREFAULT_PER_THREAD ? t->w->stack_size
							    : PREFAULT_PER_THREAD;
	size_t want;
	uint8_t *nb;

	pthread_mutex_lock(&t->w->lock);
	want = (t->n + 1) * per;
	pthread_mutex_unlock(&t->w->lock);
	if (want > PREFAULT_MAX)
		want = PREFAULT_MAX;
	if (want <= t->stack_cap)
		return 0;
	nb = realloc(t->stack_bytes, want);
	if (!nb)
		return -ENOMEM;
	memset(nb + t->stack_cap, 0, want - t->stack_cap);
	t->stack_bytes = nb;
	t->stack_cap = want;
	return 0;
}

int stacksnap_target__walk(struct stacksnap_target *t, const pid_t *tids,
			   size_t ntids, struct stacksnap_unwinder *uw,
			   stacksnap_walk_fn cb, void *user,
			   struct stacksnap_walk_stats *stats)
{
	struct request r = { .kind = REQ_CAPTURE, .t = t, .tids = ntids ? tids : NULL,
			     .ntids = ntids };
	struct stacksnap_walk_stats st = { .sz = sizeof(st) };
	struct rwmap *rw = NULL;
	size_t nrw = 0, caprw = 0;
	struct stacksnap_mem *mem;
	uint64_t t0 = clock_monotonic_ns();
	bool refreshed = false;
	int err, handed = 0;

	if (!t || !uw || !cb || (ntids && !tids))
		return fail(-EINVAL);
	if (stats && opts_out(stats, &st, sizeof(st), sizeof(size_t)))
		return fail(-EINVAL);
	if (stacksnap_target__is_terminated(t))
		return fail(-ESRCH);
	mem = stacksnap_mem__new_copy(NULL, 0, 0);
	if (!mem)
		return fail(-ENOMEM);
	pthread_mutex_lock(&t->w->api);
	sync_addrspace(t);
	if (!t->py_tried)
		find_runtime(t);
	/* Once per unwinder: a JVM's compiled frames keep no frame pointer. */
	if (t->named.ops && t->named_uw != uw) {
		capture__named_steppers(&t->named, uw);
		t->named_uw = uw;
	}
	capture__named_forget(&t->named, NAMED_FORGET_ALL);
	/* Outside the freeze: the stacks' mappings, to clamp each copy, and
	 * a copy buffer faulted in (page faults inside it would be paid by
	 * the target). */
	err = walker_read_maps(t->pid, NULL, NULL, NULL, &rw, &nrw, &caprw);
	if (!err)
		err = prefault(t);
	if (!err) {
		r.rw = rw;
		r.nrw = nrw;
		err = submit(t->w, &r);
	}
	if (err)
		goto out;
	st.stopped_ns = r.t_end - r.t_start;
	st.bytes_copied = r.bytes_copied;
	/* Code objects named once per walk (an address may hold another
	   code object by the next one). */
	struct py_resolver res;
	if (t->py)
		py_resolver__init(&res, t->py, t->py_mem);
	/* Ruby's iseqs too: one may be freed and its address reused. */
	struct rb_resolver rbres;
	if (t->rb)
		rb_resolver__init(&rbres, t->rb, t->rb_mem);
	for (size_t i = 0; i < t->ncaps; i++) {
		const struct wcapture *c = &t->caps[i];
		struct stacksnap_walked_thread wt = { .tid = c->tid, .error = c->error,
						      .paused = c->paused,
						      .regs = &c->regs };
		int n = 0;

		if (!c->error) {
			st.threads++;
			n = unwind_capture(t, c, uw, mem, &refreshed, &wt.end);
			if (n < 0) {
				wt.end = STACKSNAP_END_BAD_CFI;
				n = 0;
			}
			wt.frames = t->frames;
			wt.nframes = (size_t)n;
			if (t->named.ops) {
				/* Frame slots on the thread's other stack (a
				   handler on an alternate one) read too. */
				struct stacksnap_stack_range more = {
					t->stack_bytes + c->more_off, c->more_len,
					c->more_base };

				stacksnap_mem__set_more(mem, &more, c->more_len ? 1 : 0);
				wt.nrframes = named_frames(t, i, t->ncaps, mem, (size_t)n);
				stacksnap_mem__set_more(mem, NULL, 0);
			} else if (t->rb) {
				wt.nrframes = ruby_frames(t, &rbres, c->tid, (size_t)n);
			} else {
				wt.nrframes = python_frames(t, &res, c->tid, (size_t)n);
			}
			wt.rframes = wt.nrframes ? t->rframes : NULL;
			if (t->named.ops) {
				wt.rname = t->named.ops->thread_name
					? t->named.ops->thread_name(t->named.rt, c->tid) : NULL;
				wt.rname_runtime = t->named.ops->kind;
			} else if (t->py && t->py_ok) {
				wt.rname = py_resolve__tid_name(&res, &t->py_cap,
								(uint64_t)c->tid);
				wt.rname_runtime = STACKSNAP_RUNTIME_PYTHON;
			}
		}
		handed++;
		if (cb(user, &wt))
			break;
	}
	if (t->py)
		py_resolver__free(&res);
	if (t->rb)
		rb_resolver__free(&rbres);
out:
	pthread_mutex_unlock(&t->w->api);
	free(rw);
	stacksnap_mem__free(mem);
	if (err)
		return fail(err);
	st.walk_ns = clock_monotonic_ns() - t0;
	if (stats)
		opts_out(stats, &st, sizeof(st), sizeof(size_t));
	return handed;
}
