/* named_writer.c - the NAMED section of a snapshot file
 * (docs/snapshot-format.md): the frames of a runtime named from native
 * frames (a JVM's Java frames, V8's JavaScript frames), named at capture
 * time (code, methods and functions change and vanish with the process),
 * each keyed by the native frame it replaces, and the steps the
 * runtime's stepper took (the hotspot stepper, through compiled Java
 * frames), which `show` replays to walk the saved stacks as the capture
 * did. */
#include "save/named_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/runtime_capture.h"
#include "runtime/runtime_steps.h"
#include "snapfile/snapshot_file.h"

static void put_str(struct byte_buf *b, const char *s)
{
	size_t len = s ? strlen(s) : 0;

	byte_buf__u32(b, (uint32_t)len);
	byte_buf__put(b, s ? s : "", len);
}

/* One thread: walked from its copy with the runtime's steppers (the
 * walk `show` will repeat), its native frames named as the runtime's. */
static int put_thread(struct byte_buf *b, struct stacksnap_snapshot *snap,
		      struct stacksnap_addrspace *as, size_t i,
		      struct stacksnap_unwinder *uw, struct stacksnap_mem *mem,
		      struct stacksnap_frame *frames, unsigned max_frames)
{
	const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, i);
	struct stacksnap_runtime_frame *rf = NULL;
	const char *name = stacksnap_snapshot__runtime_thread_name(snap, i);
	size_t rec = b->n, nr = 0;
	enum stacksnap_end end;
	int n = 0, k;

	if (!th->error && th->stack) {
		stacksnap_mem__set_copy(mem, th->stack, th->stack_len, th->stack_base);
		stacksnap_mem__set_more(mem, th->more_stacks, th->nmore_stacks);
		n = stacksnap_unwind(uw, as, &th->regs, mem, frames, max_frames, &end);
		if (n < 0)
			n = 0;
	}
	k = n ? stacksnap_snapshot__runtime_frames(snap, i, frames, (size_t)n,
						  NULL, 0, NULL) : 0;
	if (k > 0) {
		if (!(rf = calloc((size_t)k, sizeof(*rf))))
			return -ENOMEM;
		k = stacksnap_snapshot__runtime_frames(snap, i, frames, (size_t)n,
						       rf, (size_t)k, NULL);
	}
	nr = k > 0 ? (size_t)k : 0;
	if (nr > SNAPFILE_MAX_RFRAMES)
		nr = SNAPFILE_MAX_RFRAMES;
	byte_buf__u32(b, 0); /* record length */
	byte_buf__u32(b, (uint32_t)th->tid);
	put_str(b, name);
	byte_buf__u32(b, (uint32_t)nr);
	for (size_t m = 0; m < nr; m++) {
		const struct stacksnap_frame *nf = &frames[rf[m].native_index < (uint32_t)n
							    ? rf[m].native_index : 0];
		size_t frec = b->n;

		byte_buf__u32(b, 0);
		byte_buf__u8(b, (rf[m].flags & STACKSNAP_RFRAME_INLINED
				 ? SNAPFILE_NFRAME_INLINED : 0) |
				(rf[m].flags & STACKSNAP_RFRAME_VM ? SNAPFILE_NFRAME_VM : 0));
		byte_buf__u32(b, rf[m].line);
		/* The key `show` finds the native frame by. */
		byte_buf__u64(b, nf->pc);
		byte_buf__u64(b, nf->sp);
		byte_buf__u64(b, rf[m].pc);
		put_str(b, rf[m].function);
		put_str(b, rf[m].file);
		byte_buf__patch_u32(b, frec, (uint32_t)(b->n - frec - 4));
	}
	byte_buf__patch_u32(b, rec, (uint32_t)(b->n - rec - 4));
	free(rf);
	return 0;
}

/* The steps, sorted by (sp, pc) and unique (the reader searches them). */
static int put_steps(struct byte_buf *b, const struct stacksnap_snapshot *snap)
{
	const struct stacksnap_runtime_step *log;
	size_t n = capture__runtime_named_steps(snap, &log), u;
	struct stacksnap_runtime_step *st;

	if (n > SNAPFILE_MAX_NAMED_STEPS)
		n = SNAPFILE_MAX_NAMED_STEPS;
	st = malloc((n ? n : 1) * sizeof(*st));
	if (!st)
		return -ENOMEM;
	if (n)
		memcpy(st, log, n * sizeof(*st));
	u = runtime_steps__sort_unique(st, n);
	byte_buf__u32(b, (uint32_t)u);
	for (size_t i = 0; i < u; i++) {
		byte_buf__u64(b, st[i].pc);
		byte_buf__u64(b, st[i].sp);
		byte_buf__u64(b, st[i].caller_pc);
		byte_buf__u64(b, st[i].caller_sp);
		byte_buf__u64(b, st[i].caller_fp);
	}
	free(st);
	return 0;
}

int named_writer__put(struct snapfile_writer *w, const struct stacksnap_snapshot *snap,
		     struct stacksnap_addrspace *as, unsigned max_frames,
		     bool stack_scan)
{
	/* Naming fills the capture's caches: logically const. */
	struct stacksnap_snapshot *s = (struct stacksnap_snapshot *)snap;
	enum stacksnap_runtime kind = STACKSNAP_RUNTIME_NATIVE;
	const char *desc = capture__runtime_named(snap, &kind);
	size_t n = stacksnap_snapshot__thread_count(snap);
	struct stacksnap_unwinder *uw;
	struct stacksnap_mem *mem;
	struct stacksnap_frame *frames;
	int err = 0;

	if (!desc)
		return 0;
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = max_frames,
		       .stack_scan = stack_scan);
	uw = stacksnap_unwinder__new(&uo);
	mem = stacksnap_mem__new_copy(NULL, 0, 0);
	frames = calloc(max_frames, sizeof(*frames));
	if (!uw || !mem || !frames) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = stacksnap_snapshot__runtime_steppers(s, uw)) < 0)
		goto out;
	err = 0;
	snapfile_writer__begin_section(w, SNAPFILE_SEC_NAMED, 1, 0);
	put_str(&w->buf, desc);
	byte_buf__u32(&w->buf, (uint32_t)kind);
	byte_buf__u32(&w->buf, (uint32_t)n);
	for (size_t i = 0; i < n && !err; i++)
		err = put_thread(&w->buf, s, as, i, uw, mem, frames, max_frames);
	/* After the walks above: their steps are among those kept. */
	if (!err)
		err = put_steps(&w->buf, snap);
	if (!err)
		snapfile_writer__end_section(w);
out:
	free(frames);
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
	return err;
}
