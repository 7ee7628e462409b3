/* php_capture.c - a PHP process's part of a live capture, through the
 * named runtimes' table of operations: the engine found in the PHP binary
 * before the freeze; in the freeze, the chain of zend_execute_data copied
 * (php_capture__take); after the thaw, the chain named once and merged
 * into the native frames of each thread that runs execute_ex (a non-ZTS
 * engine runs PHP on one thread: the others have no such frame). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/log.h"
#include "capture/capture_internal.h"
#include "mem/mem.h"
#include "runtime/php/php.h"

/* Invariant: rt.found; mem reads the live process. frames (nframes) are
 * the chain of the last take, named once (named) until the next. */
struct snap_php {
	struct php_runtime rt;
	struct stacksnap_mem *mem;
	struct php_capture cap;
	bool taken;
	struct php_resolver res;
	bool res_ready;
	struct php_frame *frames;
	size_t nframes;
	bool named;
	pid_t pid;
	const struct log_sink *log;	/* the caller's, outlives v */
};

static void php_free(void *p)
{
	struct snap_php *v = p;

	if (!v)
		return;
	free(v->frames);
	if (v->res_ready)
		php_resolver__free(&v->res);
	php_capture__free(&v->cap);
	stacksnap_mem__free(v->mem);
	free(v);
}

/* The engine among the mappings the caller read (an image open already
 * is not opened again), else from /proc/PID/maps. */
static int find_engine(pid_t pid, const struct stacksnap_addrspace *as,
		       const struct log_sink *log, struct php_runtime *rt)
{
	bool seen = false;

	if (!as)
		return php_runtime__detect_pid(pid, log, rt);
	for (size_t i = 0; i < as->n; i++) {
		const struct as_map *m = &as->maps[i];

		if (!m->path || !php_image_candidate(m->path))
			continue;
		seen = true;
		if (m->mod && !m->pending && m->mod->img &&
		    php_runtime__detect_elf(m->mod->img, m->path, m->bias, rt) == 0)
			return 0;
	}
	return seen ? php_runtime__detect_pid(pid, log, rt) : -ENOENT;
}

static void *php_detect(pid_t pid, const struct stacksnap_addrspace *as,
			const struct log_sink *log)
{
	struct snap_php *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	if (find_engine(pid, as, log, &v->rt) || !v->rt.found ||
	    !(v->mem = stacksnap_mem__new_pid(pid)) ||
	    (v->rt.layout && php_capture__reserve(&v->cap, PHP_MAX_FRAMES))) {
		php_free(v);
		return NULL;
	}
	log_info(log, "pid %d: %s (%s)", (int)pid, v->rt.note, v->rt.path);
	v->pid = pid;
	v->log = log;
	return v;
}

static const char *php_description(const void *p)
{
	return ((const struct snap_php *)p)->rt.note;
}

static bool php_has_frames(const void *p)
{
	return ((const struct snap_php *)p)->rt.layout != NULL;
}

static void drop_names(struct snap_php *v)
{
	free(v->frames);
	v->frames = NULL;
	v->nframes = 0;
	v->named = false;
}

static void php_take(void *p)
{
	struct snap_php *v = p;

	if (!v->rt.layout)
		return;
	drop_names(v);
	mem_invalidate(v->mem);
	v->taken = php_capture__take(&v->rt, v->mem, &v->cap) == 0;
}

static int php_frames(void *p, size_t nthreads, size_t i, struct stacksnap_mem *stack,
		      const struct stacksnap_frame *native, size_t nnative,
		      struct stacksnap_runtime_frame *out, size_t max)
{
	struct snap_php *v = p;
	int err;

	(void)nthreads;
	(void)i;
	(void)stack;
	if (!v->taken)
		return 0;
	if (!v->named) {
		if (!v->res_ready) {
			php_resolver__init(&v->res, &v->rt, v->mem);
			v->res_ready = true;
		}
		if ((err = php_resolve(&v->res, &v->cap, &v->frames, &v->nframes)))
			return err;
		v->named = true;
		if (v->cap.end)
			log_warn(v->log, "pid %d: PHP frames cut after %zu: %s",
				 (int)v->pid, v->nframes, v->cap.end);
	}
	const uint64_t exec[2][2] = {
		{ v->rt.exec_start, v->rt.exec_end }, { v->rt.cold[0], v->rt.cold[1] },
	};

	return (int)php_merge(v->frames, v->nframes, native, nnative, exec, 2,
			      out, max);
}

static void php_forget(void *p, unsigned what)
{
	struct snap_php *v = p;

	if (what & NAMED_FORGET_FRAMES)
		drop_names(v);
}

/* PHP's frames are read in the freeze, not named from native frames'
 * slots: no stepper, no steps, no thread names. */
const struct named_runtime_ops capture__php_ops = {
	.kind = STACKSNAP_RUNTIME_PHP,
	.detect = php_detect,
	.free = php_free,
	.description = php_description,
	.has_frames = php_has_frames,
	.take = php_take,
	.frames = php_frames,
	.forget = php_forget,
};
