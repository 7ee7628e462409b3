/* named_reader.c - the NAMED section of a snapshot file
 * (docs/snapshot-format.md): a runtime's frames (a JVM's Java frames,
 * V8's JavaScript frames; older files' JAVA section: Java only) as named
 * when the file was written, each found again at the native frame it
 * replaced (by that frame's pc and sp), and the steps the capture's walk
 * took through compiled Java frames, replayed by a stepper so that `show`
 * walks the saved stacks as the capture did. */
#include "saved/named_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/module.h" /* struct stacksnap_ctx: its log */
#include "base/log.h"
#include "runtime/runtime_steps.h"
#include "saved/readers.h"
#include "snapfile/snapshot_file.h"

/* One saved frame. Invariant: function non-NULL, file NULL or
 * non-empty, both owned. */
struct saved_jframe {
	uint64_t native_pc, native_sp; /* the native frame it replaces */
	uint64_t pc;
	uint32_t line;
	uint8_t flags;		/* SNAPFILE_JFRAME_* */
	char *function, *file;
};

struct saved_jthread {
	pid_t tid;
	char *name;		/* the java.lang.Thread's name, or NULL */
	struct saved_jframe *frames;
	size_t n;
};

/* Invariant: steps sorted by (sp, pc), unique; kind a runtime that
 * names native frames (JAVA, JS or PHP). */
struct saved_named {
	char *description;
	enum stacksnap_runtime kind;
	struct saved_jthread *threads;
	size_t n;
	struct stacksnap_runtime_step *steps;
	size_t nsteps;
};

void named_reader__free(struct saved_named *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++) {
		for (size_t k = 0; k < j->threads[i].n; k++) {
			free(j->threads[i].frames[k].function);
			free(j->threads[i].frames[k].file);
		}
		free(j->threads[i].frames);
		free(j->threads[i].name);
	}
	free(j->threads);
	free(j->steps);
	free(j->description);
	free(j);
}

static int read_thread(struct saved_jthread *t, struct cursor *c, bool *nomem)
{
	uint32_t nf;
	int err = 0;

	t->tid = (pid_t)cursor_u32(c);
	t->name = readers__take_opt_str(c, nomem);
	nf = cursor_u32(c);
	if (*nomem)
		return -ENOMEM;
	/* A frame takes at least 4 + 1 + 4 + 24 + 4 + 4 bytes. */
	t->frames = cursor_list_alloc(c, nf, SNAPFILE_MAX_RFRAMES, 41, sizeof(*t->frames),
				      &err);
	if (!t->frames)
		return err;
	for (uint32_t k = 0; k < nf; k++) {
		struct saved_jframe *f = &t->frames[t->n];
		struct cursor fc;

		if (!cursor_record(c, &fc, NULL))
			return -EINVAL;
		f->flags = cursor_u8(&fc);
		f->line = cursor_u32(&fc);
		f->native_pc = cursor_u64(&fc);
		f->native_sp = cursor_u64(&fc);
		f->pc = cursor_u64(&fc);
		f->function = readers__take_str(&fc, '?', nomem);
		f->file = readers__take_opt_str(&fc, nomem);
		t->n++; /* counted before the checks: freed with the rest */
		if (*nomem)
			return -ENOMEM;
		if (fc.bad || !f->function || !f->function[0])
			return -EINVAL;
	}
	return 0;
}

static int read_steps(struct saved_named *j, struct cursor *c)
{
	uint32_t n = cursor_u32(c);
	int err = 0;

	j->steps = cursor_list_alloc(c, n, SNAPFILE_MAX_NAMED_STEPS, 40, sizeof(*j->steps),
				     &err);
	if (!j->steps)
		return err;
	if (!readers__take_steps(c, j->steps, n))
		return -EINVAL;
	j->nsteps = n;
	return 0;
}

int named_reader__read_section(struct stacksnap_saved *s, struct cursor *c,
			       size_t base, bool has_kind)
{
	struct saved_named *j;
	bool nomem = false;
	uint32_t n;
	int err = 0;

	if (s->named) {
		SAVED_BAD(s, base, "a second named-frames section");
		return -EINVAL;
	}
	if (!(j = calloc(1, sizeof(*j))))
		return -ENOMEM;
	s->named = j;
	j->description = readers__take_str(c, '?', &nomem);
	j->kind = has_kind ? (enum stacksnap_runtime)cursor_u32(c)
			   : STACKSNAP_RUNTIME_JAVA;
	n = cursor_u32(c);
	if (nomem)
		return -ENOMEM;
	/* A thread takes at least its record's length. */
	if (c->bad || !j->description ||
	    (j->kind != STACKSNAP_RUNTIME_JAVA && j->kind != STACKSNAP_RUNTIME_JS &&
	     j->kind != STACKSNAP_RUNTIME_PHP) ||
	    !(j->threads = cursor_list_alloc(c, n, UINT32_MAX, 4, sizeof(*j->threads),
					     &err))) {
		if (err == -ENOMEM)
			return err;
		SAVED_BAD(s, base + cursor_offset(c), "named-frames section: %s",
			  c->bad ? "truncated" : "bad header");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n && !err; i++) {
		struct cursor tc;
		size_t at;

		if (!cursor_record(c, &tc, &at)) {
			SAVED_BAD(s, base + at, "named-frames section: thread %u truncated", i);
			return -EINVAL;
		}
		err = read_thread(&j->threads[j->n++], &tc, &nomem);
		if (err == -EINVAL)
			SAVED_BAD(s, base + at, "named-frames section: thread %u: "
				  "corrupt frame record", i);
	}
	if (!err && (err = read_steps(j, c)) == -EINVAL)
		SAVED_BAD(s, base + cursor_offset(c), "named-frames section: corrupt steps");
	return err;
}

const char *named_reader__description(const struct saved_named *j,
				      enum stacksnap_runtime *kind)
{
	*kind = j->kind;
	return j->description;
}

const char *named_reader__thread_name(const struct saved_named *j, pid_t tid)
{
	for (size_t k = 0; k < j->n; k++)
		if (j->threads[k].tid == tid)
			return j->threads[k].name;
	return NULL;
}

/* Each native frame whose (pc, sp) a saved frame names is replaced by
 * the saved frames of it (consecutive: the methods inlined there, then
 * the method); native frames the saved walk had and this one has not
 * leave their Java frames out. */
int named_reader__frames(const struct saved_named *j, pid_t tid,
			const struct stacksnap_frame *native, size_t nnative,
			struct stacksnap_runtime_frame *out, size_t max)
{
	const struct saved_jthread *t = NULL;
	size_t n = 0, m = 0;

	for (size_t k = 0; k < j->n && !t; k++)
		if (j->threads[k].tid == tid)
			t = &j->threads[k];
	if (!t)
		return 0;
	/* Both lists run innermost first: one pass. */
	for (size_t k = 0; k < nnative && m < t->n; k++) {
		size_t from = m;

		while (from < t->n && (t->frames[from].native_pc != native[k].pc ||
				       t->frames[from].native_sp != native[k].sp) &&
		       t->frames[from].native_sp <= native[k].sp)
			from++;
		if (from == t->n || t->frames[from].native_pc != native[k].pc ||
		    t->frames[from].native_sp != native[k].sp)
			continue;
		for (m = from; m < t->n && t->frames[m].native_pc == native[k].pc &&
			       t->frames[m].native_sp == native[k].sp; m++, n++) {
			const struct saved_jframe *f = &t->frames[m];

			if (n >= max)
				continue;
			out[n] = (struct stacksnap_runtime_frame){
				.sz = sizeof(out[n]),
				.runtime = j->kind,
				.native_index = (uint32_t)k,
				.flags = (f->flags & SNAPFILE_NFRAME_INLINED
					  ? STACKSNAP_RFRAME_INLINED : 0) |
					 (f->flags & SNAPFILE_NFRAME_VM
					  ? STACKSNAP_RFRAME_VM : 0),
				.function = f->function,
				.file = f->file,
				.line = f->line,
				.pc = f->pc,
			};
		}
	}
	return (int)n;
}

/* The capture's step of the frame at (rip, rsp), replayed, a frame 0's
 * (exact pc) too: the capture's stepper steps a running thread's
 * compiled frame 0 (past its frame-complete point), which no other
 * stepper walks (compiled Java code has no CFI and no frame pointer). */
static int replay_step(void *user, const struct stacksnap_regs *regs,
		       bool exact_pc, struct stacksnap_mem *mem,
		       struct stacksnap_regs *caller)
{
	const struct saved_named *j = user;

	(void)mem;
	return runtime_steps__replay(j->steps, j->nsteps, regs, exact_pc, false, caller);
}

int named_reader__steppers(const struct saved_named *j, struct stacksnap_unwinder *uw)
{
	/* As the capture's hotspot stepper: after CFI, before the analysis
	   and frame-pointer steppers. */
	STACKSNAP_OPTS(stacksnap_stepper_opts, o, .name = "hotspot",
		       .step = replay_step, .user = (void *)j,
		       .priority = STACKSNAP_PRIO_ANALYSIS + 30,
		       .trust = STACKSNAP_TRUST_CFI);
	int id;

	if (!j->nsteps)
		return 0;
	id = stacksnap_unwinder__add_stepper(uw, &o);
	return id < 0 ? id : 1;
}
