/* runtime_reader.c - the RUNTIME section of a snapshot file
 * (docs/snapshot-format.md): each thread's language-runtime frames as named
 * when the file was written, read back and merged into the native frames
 * `show` unwinds from the saved stacks (stacksnap_saved__runtime_frames). */
#include "saved/readers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/module.h" /* struct stacksnap_ctx: its log */
#include "base/log.h"
#include "base/opts.h"
#include "elf/elf_image.h"
#include "runtime/php/php.h"
#include "runtime/python/python.h"
#include "runtime/ruby/ruby.h"
#include "saved/named_reader.h"
#include "snapfile/snapshot_file.h"

/* One saved thread's frames. Invariant: frames[0, n) have non-NULL
 * function, owned here, and file (NULL only for a PHP internal
 * function's frame). */
struct saved_rthread {
	pid_t tid;
	bool holds_gil;
	char *end;		/* NULL: the chain was whole */
	char *name;		/* the runtime's thread name, or NULL */
	struct py_frame *frames;
	struct rb_frame *rb;	/* a Ruby VM's: these instead of frames */
	size_t n;
};

struct saved_runtime {
	enum stacksnap_runtime kind;
	char *description;
	uint64_t eval_start, eval_end;
	struct saved_rthread *threads;
	size_t n;
	pid_t gil_holder;
	bool frames;		/* frames were read (not: layout unknown) */
	/* What the capture said (a RUNTIME section of version 2, or a core's
	 * memory): the counts, each with whether it is known; state and end
	 * owned here, NULL: none. */
	bool interpreters_known, capture_known;
	unsigned interpreters, capture_reads;
	uint64_t capture_ns;
	char *state, *end;
};

void runtime_reader__free(struct saved_runtime *rt)
{
	if (!rt)
		return;
	for (size_t i = 0; i < rt->n; i++) {
		for (size_t k = 0; k < rt->threads[i].n; k++) {
			if (rt->threads[i].rb) {
				free((char *)rt->threads[i].rb[k].function);
				free((char *)rt->threads[i].rb[k].file);
				continue;
			}
			free((char *)rt->threads[i].frames[k].function);
			free((char *)rt->threads[i].frames[k].file);
		}
		free(rt->threads[i].frames);
		free(rt->threads[i].rb);
		free(rt->threads[i].end);
		free(rt->threads[i].name);
	}
	free(rt->threads);
	free(rt->description);
	free(rt->state);
	free(rt->end);
	free(rt);
}

static int read_thread(struct saved_rthread *t, struct cursor *c, bool ruby,
		       bool *nomem)
{
	uint32_t nf;
	int err = 0;

	t->tid = (pid_t)cursor_u32(c);
	t->holds_gil = cursor_u8(c) != 0;
	t->end = readers__take_opt_str(c, nomem);
	nf = cursor_u32(c);
	if (*nomem)
		return -ENOMEM;
	if (ruby)
		t->rb = cursor_list_alloc(c, nf, SNAPFILE_MAX_RFRAMES, 14,
					  sizeof(*t->rb), &err);
	else
		t->frames = cursor_list_alloc(c, nf, SNAPFILE_MAX_RFRAMES, 14,
					      sizeof(*t->frames), &err);
	if (!t->frames && !t->rb)
		return err;
	for (uint32_t k = 0; k < nf; k++) {
		struct cursor fc;
		uint8_t flags;
		unsigned line;
		const char *function, *file;

		if (!cursor_record(c, &fc, NULL))
			return -EINVAL;
		flags = cursor_u8(&fc);
		line = cursor_u32(&fc);
		function = readers__take_str(&fc, '?', nomem);
		file = readers__take_str(&fc, '?', nomem);
		if (ruby)
			t->rb[t->n] = (struct rb_frame){
				.function = function, .file = file, .line = line,
				.finish = flags & SNAPFILE_RFRAME_ENTRY,
				.ruby = !(flags & SNAPFILE_RFRAME_HIDDEN),
				.cfunc = flags & SNAPFILE_RFRAME_CFUNC,
			};
		else
			t->frames[t->n] = (struct py_frame){
				.function = function, .file = file, .line = line,
				.entry = flags & SNAPFILE_RFRAME_ENTRY, .lasti = -2,
			};
		t->n++;	/* counted before the checks: freed with the rest */
		if (!function || !file)
			return *nomem ? -ENOMEM : -EINVAL;
	}
	/* Added fields: the thread name (files of before have none). */
	if (cursor_left(c) >= 4) {
		t->name = readers__take_opt_str(c, nomem);
		if (*nomem)
			return -ENOMEM;
	}
	return 0;
}

/* Version 2's tail, after the threads: what the capture said. */
static int read_counts(struct stacksnap_saved *s, struct saved_runtime *rt,
		       struct cursor *c, size_t base)
{
	bool nomem = false;

	rt->frames = cursor_u8(c) != 0;
	rt->interpreters = cursor_u32(c);
	rt->capture_ns = cursor_u64(c);
	rt->capture_reads = cursor_u32(c);
	rt->state = readers__take_opt_str(c, &nomem);
	rt->end = readers__take_opt_str(c, &nomem);
	if (nomem)
		return -ENOMEM;
	if (c->bad) {
		SAVED_BAD(s, base + cursor_offset(c), "runtime section: its counts truncated");
		return -EINVAL;
	}
	rt->interpreters_known = rt->capture_known = true;
	return 0;
}

int runtime_reader__read_section(struct stacksnap_saved *s, struct cursor *c,
				 size_t base, uint16_t ver)
{
	struct saved_runtime *rt;
	bool nomem = false;
	uint32_t n;
	int err = 0;

	if (s->runtime) {
		SAVED_BAD(s, base, "a second runtime section");
		return -EINVAL;
	}
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	s->runtime = rt;
	rt->kind = cursor_u8(c);
	rt->description = readers__take_str(c, '?', &nomem);
	rt->eval_start = cursor_u64(c);
	rt->eval_end = cursor_u64(c);
	n = cursor_u32(c);
	if (nomem)
		return -ENOMEM;
	/* A thread takes at least its record's length. */
	if (c->bad || (rt->kind != STACKSNAP_RUNTIME_PYTHON &&
		       rt->kind != STACKSNAP_RUNTIME_RUBY) || !rt->description ||
	    !(rt->threads = cursor_list_alloc(c, n, UINT32_MAX, 4, sizeof(*rt->threads),
					      &err))) {
		if (err == -ENOMEM)
			return err;
		SAVED_BAD(s, base + cursor_offset(c), "runtime section: %s",
			  c->bad ? "truncated" : "bad header");
		return -EINVAL;
	}
	rt->frames = true;
	for (uint32_t i = 0; i < n && !err; i++) {
		struct cursor tc;
		size_t at;

		if (!cursor_record(c, &tc, &at)) {
			SAVED_BAD(s, base + at, "runtime section: thread %u truncated", i);
			return -EINVAL;
		}
		err = read_thread(&rt->threads[rt->n++], &tc,
				  rt->kind == STACKSNAP_RUNTIME_RUBY, &nomem);
		if (err == -EINVAL)
			SAVED_BAD(s, base + at, "runtime section: thread %u: "
				  "corrupt frame record", i);
		if (!err && rt->threads[rt->n - 1].holds_gil)
			rt->gil_holder = rt->threads[rt->n - 1].tid;
	}
	if (!err && ver >= SNAPFILE_RUNTIME_COUNTS)
		err = read_counts(s, rt, c, base);
	return err;
}

int stacksnap_saved__runtime(const struct stacksnap_saved *s,
			     struct stacksnap_runtime_info *out)
{
	struct stacksnap_runtime_info info = { .sz = sizeof(info) };

	if (!s || !out)
		return fail(-EINVAL);
	if (s->named) {
		info.description = named_reader__description(s->named, &info.runtime);
		info.frames = true;
	} else if (s->runtime) {
		info.runtime = s->runtime->kind;
		info.description = s->runtime->description;
		info.frames = s->runtime->frames;
		info.gil_holder = s->runtime->gil_holder;
		info.interpreters = s->runtime->interpreters;
		info.interpreters_unknown = !s->runtime->interpreters_known;
		info.capture_ns = s->runtime->capture_ns;
		info.capture_reads = s->runtime->capture_reads;
		info.capture_unknown = !s->runtime->capture_known;
		info.state = s->runtime->state;
		info.end = s->runtime->end;
	}
	if (opts_out(out, &info, sizeof(info),
		     offsetof(struct stacksnap_runtime_info, frames)))
		return fail(-EINVAL);
	return 0;
}

const char *stacksnap_saved__runtime_thread_name(const struct stacksnap_saved *s,
						size_t i)
{
	if (s && i < s->n && s->named)
		return named_reader__thread_name(s->named, s->threads[i].tid);
	if (!s || i >= s->n || !s->runtime)
		return NULL;
	for (size_t k = 0; k < s->runtime->n; k++)
		if (s->runtime->threads[k].tid == s->threads[i].tid)
			return s->runtime->threads[k].name;
	return NULL;
}

int stacksnap_saved__runtime_frames(const struct stacksnap_saved *s, size_t i,
				    const struct stacksnap_frame *native,
				    size_t nnative,
				    struct stacksnap_runtime_frame *out,
				    size_t max, const char **end)
{
	const struct saved_runtime *rt;

	if (end)
		*end = NULL;
	if (!s || i >= s->n || (max && !out) || (nnative && !native))
		return fail(-EINVAL);
	if (s->named)
		return named_reader__frames(s->named, s->threads[i].tid, native,
					   nnative, out, max);
	rt = s->runtime;
	for (size_t k = 0; rt && k < rt->n; k++) {
		const struct saved_rthread *t = &rt->threads[k];

		if (t->tid != s->threads[i].tid)
			continue;
		if (end)
			*end = t->end;
		if (t->rb)
			return (int)rb_merge(t->rb, t->n, native, nnative,
					     rt->eval_start, rt->eval_end, out, max);
		size_t n = py_merge(t->frames, t->n, native, nnative,
				    rt->eval_start, rt->eval_end, out, max);

		/* A core's PHP frames are kept as Python's are. */
		for (size_t m = 0; m < n && m < max; m++)
			out[m].runtime = rt->kind;
		return (int)n;
	}
	return 0;
}

int stacksnap_saved__runtime_steppers(const struct stacksnap_saved *s,
				      struct stacksnap_unwinder *uw)
{
	if (!s || !uw)
		return fail(-EINVAL);
	if (s->ops == &events_reader_ops)
		return events_reader__steppers(s, uw);
	return s->named ? named_reader__steppers(s->named, uw) : 0;
}

/* Reads the Python frames of a core dump from its memory: the capture
 * and the naming of a live dump, over the dumped bytes (the kernel dumps
 * written private mappings, which hold _PyRuntime, the heap and the data
 * stacks; what is missing ends a thread's frames with a reason). path is
 * the interpreter's image, mapped at start from file offset offset.
 * Returns 0 (no interpreter: nothing kept), or -ENOMEM. */
int runtime_reader__from_core(struct stacksnap_saved *s, const char *path,
			      uint64_t start, uint64_t offset)
{
	struct py_runtime *py = calloc(1, sizeof(*py));
	struct py_capture cap = { 0 };
	struct py_resolver res;
	struct saved_runtime *rt = NULL;
	int err = 0;

	if (!py)
		return -ENOMEM;
	if (s->runtime || !s->mem ||
	    py_runtime__detect_image(path, start, offset, &s->ctx->log, py) ||
	    !py->found)
		goto out;
	py_runtime__read_layout(py, s->mem);
	log_info(&s->ctx->log, "%s: %s (%s)", s->path ? s->path : "core",
		 py->note, path);
	rt = calloc(1, sizeof(*rt));
	if (!rt) {
		err = -ENOMEM;
		goto out;
	}
	rt->kind = STACKSNAP_RUNTIME_PYTHON;
	rt->description = strdup(py->note);
	rt->eval_start = py->eval_start;
	rt->eval_end = py->eval_end;
	if (!rt->description) {
		err = -ENOMEM;
		goto out;
	}
	if (!py->layout || py_capture__all(py, s->mem, &cap))
		goto keep;	/* the description says why: no frames */
	rt->threads = calloc(cap.nthreads ? cap.nthreads : 1, sizeof(*rt->threads));
	if (!rt->threads) {
		err = -ENOMEM;
		goto out;
	}
	rt->frames = true;
	/* What the core's memory says of the interpreters; the capture's
	   time and reads are not a core's to say. */
	rt->interpreters = cap.ninterps;
	rt->interpreters_known = true;
	if ((cap.state && !(rt->state = strdup(cap.state))) ||
	    (cap.end && !(rt->end = strdup(cap.end)))) {
		err = -ENOMEM;
		goto out;
	}
	py_resolver__init(&res, py, s->mem);
	for (size_t i = 0; i < cap.nthreads && !err; i++) {
		const struct py_raw_thread *t = &cap.threads[i];
		struct saved_rthread *st;
		struct py_frame *f;
		const char *end;
		bool seen = false, gil;
		size_t n;

		/* One entry per kernel thread: all its thread states. */
		for (size_t k = 0; k < i; k++)
			seen |= cap.threads[k].native_tid == t->native_tid;
		if (seen)
			continue;
		st = &rt->threads[rt->n++];
		st->tid = (pid_t)t->native_tid;
		err = py_resolve__tid(&res, &cap, t->native_tid, &f, &n, &end, &gil);
		if (err)
			break;
		st->holds_gil = gil;
		if (gil)
			rt->gil_holder = st->tid;
		st->end = end ? strdup(end) : NULL;
		const char *nm = py_resolve__tid_name(&res, &cap, t->native_tid);
		st->name = nm ? strdup(nm) : NULL;
		st->frames = f;
		/* The resolver's strings go with it: copies kept. */
		for (size_t k = 0; k < n; k++) {
			f[k].function = strdup(f[k].function);
			f[k].file = strdup(f[k].file);
			st->n++;
			if (!f[k].function || !f[k].file)
				err = -ENOMEM;
		}
	}
	py_resolver__free(&res);
keep:
	if (!err) {
		s->runtime = rt;
		rt = NULL;
	}
out:
	runtime_reader__free(rt);
	py_capture__free(&cap);
	free(py);
	return err;
}

int runtime_reader__php_from_core(struct stacksnap_saved *s, const char *path,
				  uint64_t start, uint64_t offset, pid_t tid)
{
	struct php_runtime php;
	struct php_capture cap = { 0 };
	struct php_resolver res;
	struct php_frame *f = NULL;
	struct saved_runtime *rt = NULL;
	struct saved_rthread *st;
	struct elf_image *img;
	uint64_t bias;
	size_t n = 0;
	int err = 0;

	if (s->runtime || !s->mem || elf_image__open(path, &s->ctx->log, &img))
		return 0;
	if (elf_image__load_bias(img, start, offset, 0, &bias) ||
	    php_runtime__detect_elf(img, path, bias, &php) || !php.found) {
		elf_image__free(img);
		return 0;
	}
	elf_image__free(img);
	log_info(&s->ctx->log, "%s: %s (%s)", s->path ? s->path : "core", php.note, path);
	if (!(rt = calloc(1, sizeof(*rt))) || !(rt->description = strdup(php.note)) ||
	    !(rt->threads = calloc(1, sizeof(*rt->threads)))) {
		err = -ENOMEM;
		goto out;
	}
	rt->kind = STACKSNAP_RUNTIME_PHP;
	rt->eval_start = php.exec_start;
	rt->eval_end = php.exec_end;
	if (!php.layout)
		goto keep;	/* the description says why: no frames */
	rt->frames = true;
	if ((err = php_capture__take(&php, s->mem, &cap)))
		goto out;
	if (cap.end && !(rt->end = strdup(cap.end))) {
		err = -ENOMEM;
		goto out;
	}
	php_resolver__init(&res, &php, s->mem);
	err = php_resolve(&res, &cap, &f, &n);
	st = &rt->threads[rt->n++];
	st->tid = tid;
	if (!err && n && !(st->frames = calloc(n, sizeof(*st->frames))))
		err = -ENOMEM;
	/* The resolver's strings go with it: copies kept. */
	for (size_t k = 0; k < n && !err; k++) {
		struct py_frame *pf = &st->frames[st->n++];

		pf->function = strdup(f[k].function);
		pf->file = f[k].file ? strdup(f[k].file) : NULL;
		/* php_merge's rule: an innermost user frame's line may be
		   stale in memory. */
		pf->line = k == 0 && f[k].file ? 0 : f[k].line;
		pf->entry = f[k].top;
		if (!pf->function || (f[k].file && !pf->file))
			err = -ENOMEM;
	}
	free(f);
	php_resolver__free(&res);
	if (err)
		goto out;
keep:
	s->runtime = rt;
	rt = NULL;
out:
	runtime_reader__free(rt);
	php_capture__free(&cap);
	return err;
}

/* The Ruby frames of one thread of a core, named and kept (copies of
 * the resolver's strings). */
static int keep_rb_thread(struct saved_rthread *st, struct rb_resolver *res,
			  const struct rb_capture *cap, const struct rb_raw_thread *t)
{
	struct rb_frame *f;
	size_t n;
	int err = rb_resolve__thread(res, cap, t, &f, &n);

	if (err)
		return err;
	st->tid = (pid_t)t->tid;
	st->rb = f ? f : calloc(1, sizeof(*f));
	if (!st->rb || (t->end && !(st->end = strdup(t->end))))
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		f[k].function = strdup(f[k].function);
		f[k].file = strdup(f[k].file);
		st->n++;
		if (!f[k].function || !f[k].file)
			return -ENOMEM;
	}
	return 0;
}

/* A core's memory, and where the core has no bytes (a read-only mapping
 * of a file, which a core leaves out) libruby's image: Ruby's static
 * Strings ("<main>", method names) point into its .rodata. */
struct core_and_image {
	struct stacksnap_mem *core;
	const struct elf_image *img;
	uint64_t bias;
};

static int read_core_or_image(void *user, uint64_t addr, void *buf, size_t len)
{
	const struct core_and_image *ci = user;
	const uint8_t *b;

	if (!stacksnap_mem__read(ci->core, addr, buf, len))
		return 0;
	if (addr < ci->bias ||
	    elf_image__vaddr_bytes(ci->img, addr - ci->bias, len, &b) || !b)
		return -EFAULT;
	memcpy(buf, b, len);
	return 0;
}

int runtime_reader__rb_from_core(struct stacksnap_saved *s, const char *path,
				 uint64_t start, uint64_t offset)
{
	struct rb_runtime rb;
	struct rb_capture cap = { 0 };
	struct rb_resolver res;
	struct saved_runtime *rt = NULL;
	struct elf_image *img;
	struct core_and_image ci = { .core = s->mem };
	struct stacksnap_mem *mem = NULL;
	int err;

	if (s->runtime || !s->mem || elf_image__open(path, &s->ctx->log, &img))
		return 0;
	ci.img = img;
	err = elf_image__load_bias(img, start, offset, 0, &ci.bias);
	if (!err && !(mem = stacksnap_mem__new_callback(read_core_or_image, &ci)))
		err = -ENOMEM;
	if (!err)
		err = rb_runtime__detect_elf(img, path, ci.bias, mem, &rb);
	if (err || !rb.found) {
		stacksnap_mem__free(mem);
		elf_image__free(img);
		return err == -ENOMEM ? err : 0;
	}
	log_info(&s->ctx->log, "%s: %s (%s)", s->path ? s->path : "core",
		 rb.note, path);
	if (!(rt = calloc(1, sizeof(*rt))) || !(rt->description = strdup(rb.note)) ||
	    !(rt->threads = calloc(s->n ? s->n : 1, sizeof(*rt->threads)))) {
		err = -ENOMEM;
		goto out;
	}
	rt->kind = STACKSNAP_RUNTIME_RUBY;
	rt->eval_start = rb.exec_start;
	rt->eval_end = rb.exec_end;
	/* A core has no live thread pointer to ask: the VM's thread list
	   gives each thread's (as for threads read without stopping). */
	if (rb.layout && !(err = rb_capture__list(&rb, mem, &cap))) {
		rt->frames = true;
		for (size_t i = 0; i < s->n && !err; i++) {
			struct rb_listed who = { .tid = (uint64_t)s->threads[i].tid };

			who.tp = rb_capture__listed_tp(&cap, who.tid);
			err = rb_capture__threads(&rb, mem, &who, 1, &cap);
		}
		rb_resolver__init(&res, &rb, mem);
		for (size_t i = 0; i < cap.nthreads && !err; i++)
			err = keep_rb_thread(&rt->threads[rt->n++], &res, &cap,
					     &cap.threads[i]);
		rb_resolver__free(&res);
	}
	if (!err) {
		s->runtime = rt;
		rt = NULL;
	}
out:
	runtime_reader__free(rt);
	rb_capture__free(&cap);
	stacksnap_mem__free(mem);
	elf_image__free(img);
	return err;
}
