/* snapshot_writer.c - writes a live capture to a stacksnap snapshot file
 * (stacksnap_snapshot__save): the PROCESS, MAPPINGS, IMAGE and THREADS
 * sections of docs/snapshot-format.md. The words of each stack it keeps
 * are chosen by stack_words.c; this file only encodes them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/boot_id.h"
#include "base/clock_offset.h"
#include "base/log.h"
#include "base/opts.h"
#include "base/vec.h"
#include "capture/runtime_capture.h"
#include "save/named_writer.h"
#include "save/snapfile_writer.h"
#include "save/stack_words.h"
#include "save/waits_writer.h"
#include "snapfile/snapshot_file.h"
#include "symbolize/jit_symbols.h"

/* Measured in BENCHMARKS.md ("Snapshot file sizes"). */
#define DEFAULT_ENCODING STACKSNAP_ENCODING_POINTERS

/* ------------------------------------------------------------------ */
/* Saving a live capture */

static void put_str(struct byte_buf *b, const char *s, size_t len)
{
	byte_buf__u32(b, (uint32_t)len);
	byte_buf__put(b, s, len);
}

static void put_process(struct snapfile_writer *w, const struct stacksnap_snapshot *snap,
			pid_t pid, enum stacksnap_stack_encoding enc)
{
	struct stacksnap_snapshot_stats st;
	struct timespec ts;
	struct utsname u;
	char cmd[4096], host[256], boot_id[37];
	const char *ver = stacksnap_version();

	stacksnap_snapshot__stats(snap, &st);
	clock_gettime(CLOCK_REALTIME, &ts);
	if (uname(&u))
		u.release[0] = 0;
	snapfile__read_cmdline(pid, cmd, sizeof(cmd));
	snapfile_writer__begin_section(w, SNAPFILE_SEC_PROCESS, 1, 0);
	byte_buf__u32(&w->buf, (uint32_t)pid);
	byte_buf__u64(&w->buf, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
	byte_buf__u64(&w->buf, st.freeze_ns);
	byte_buf__u64(&w->buf, st.bytes_copied);
	byte_buf__u8(&w->buf, (uint8_t)enc);
	put_str(&w->buf, cmd, strlen(cmd));
	put_str(&w->buf, u.release, strlen(u.release));
	put_str(&w->buf, ver, strlen(ver));
	/* The fields an events file appends, in its order (one reader for
	 * both), so that `show` can say where the capture was taken: no
	 * trace (max frames and unwind mode 0), then the clock, the boot id
	 * and the host name. Readers before them stop at the version. */
	if (gethostname(host, sizeof(host)))
		host[0] = 0;
	host[sizeof(host) - 1] = 0;
	boot_id_read(boot_id);
	byte_buf__u32(&w->buf, 0);
	byte_buf__u8(&w->buf, 0);
	byte_buf__u64(&w->buf, (uint64_t)clock_realtime_offset_ns());
	put_str(&w->buf, boot_id, strlen(boot_id));
	put_str(&w->buf, host, strlen(host));
	snapfile_writer__end_section(w);
}

static void put_mappings(struct snapfile_writer *w, struct stacksnap_addrspace *as)
{
	unsigned nimages;

	snapfile_writer__begin_section(w, SNAPFILE_SEC_MAPPINGS, 1, 0);
	nimages = snapfile__put_mapping_records(&w->buf, as);
	snapfile_writer__end_section(w);
	for (size_t i = 0; nimages && i < as->n; i++)
		if (as->maps[i].mod && as->maps[i].mod->is_vdso)
			snapfile__put_image(w, &as->maps[i], 0);
}

/* One thread's record: its registers (filtered under a compact
 * encoding) and the stack words sw chose. */
static int put_thread(struct snapfile_writer *w, const struct stacksnap_thread *th,
		      struct stacksnap_addrspace *as, struct stack_words *sw)
{
	size_t rec = w->buf.n, nl = strnlen(th->name, sizeof(th->name)), enc_at;
	struct stacksnap_regs regs = th->regs;
	uint64_t *keep;
	int err;

	if (sw->enc != STACKSNAP_ENCODING_FULL)
		stack_words__filter_regs(as, th, &regs);
	byte_buf__u32(&w->buf, 0); /* record length */
	byte_buf__u32(&w->buf, (uint32_t)th->tid);
	byte_buf__u8(&w->buf, (uint8_t)th->state);
	byte_buf__u8(&w->buf, (uint8_t)th->error);
	byte_buf__u8(&w->buf, (uint8_t)nl);
	byte_buf__put(&w->buf, th->name, nl);
	byte_buf__u32(&w->buf, regs.valid);
	for (int r = 0; r < STACKSNAP_REG_COUNT; r++)
		byte_buf__u64(&w->buf, regs.regs[r]);
	byte_buf__u64(&w->buf, th->stack_base);
	byte_buf__u64(&w->buf, th->stack ? th->stack_len : 0);
	enc_at = w->buf.n;
	byte_buf__u64(&w->buf, 0); /* encoded length */
	err = stack_words__choose(sw, as, th, &keep);
	if (err)
		return err;
	snapfile__put_stack(&w->buf, th, keep);
	free(keep);
	byte_buf__patch_u64(&w->buf, enc_at, w->buf.n - enc_at - 8);
	/* Appended to the record (older readers stop before it): the
	 * thread's other stacks (its normal stack below a handler on an
	 * alternate signal stack), each kept by the pointers policy under a
	 * compact encoding, as exact's walk of the first stack never
	 * reaches them. */
	struct stack_words pw = { .enc = sw->enc == STACKSNAP_ENCODING_FULL
						 ? STACKSNAP_ENCODING_FULL
						 : STACKSNAP_ENCODING_POINTERS };
	byte_buf__u8(&w->buf, (uint8_t)(th->stack ? th->nmore_stacks : 0));
	for (unsigned k = 0; th->stack && k < th->nmore_stacks; k++) {
		const struct stacksnap_stack_range *m = &th->more_stacks[k];
		struct stacksnap_thread part = { .stack = m->bytes, .stack_len = m->len,
						 .stack_base = m->base };

		byte_buf__u64(&w->buf, m->base);
		byte_buf__u64(&w->buf, m->len);
		enc_at = w->buf.n;
		byte_buf__u64(&w->buf, 0);
		if ((err = stack_words__choose(&pw, as, &part, &keep)))
			return err;
		snapfile__put_stack(&w->buf, &part, keep);
		free(keep);
		byte_buf__patch_u64(&w->buf, enc_at, w->buf.n - enc_at - 8);
	}
	byte_buf__patch_u32(&w->buf, rec, (uint32_t)(w->buf.n - rec - 4));
	return 0;
}

static int put_threads(struct snapfile_writer *w, const struct stacksnap_snapshot *snap,
		       struct stacksnap_addrspace *as, const struct stacksnap_save_opts *o,
		       enum stacksnap_stack_encoding enc)
{
	size_t n = stacksnap_snapshot__thread_count(snap);
	struct stack_words sw;
	int err;

	err = stack_words__init(&sw, enc, o->max_frames ? o->max_frames : 1024,
				o->stack_scan);
	if (err)
		return err;
	/* The exact encoding keeps the words its walk reads: a JVM's
	   compiled frames are walked as the dump walks them (the stepper
	   only reads; the snapshot is what it was). */
	if (sw.uw)
		stacksnap_snapshot__runtime_steppers((struct stacksnap_snapshot *)snap,
						     sw.uw);
	/* Version 2: each record ends with the thread's other stacks. */
	snapfile_writer__begin_section(w, SNAPFILE_SEC_THREADS, 2, 0);
	byte_buf__u8(&w->buf, (uint8_t)enc);
	byte_buf__u32(&w->buf, (uint32_t)n);
	for (size_t i = 0; i < n && !err; i++)
		err = put_thread(w, stacksnap_snapshot__thread(snap, i), as, &sw);
	if (!err)
		snapfile_writer__end_section(w);
	stack_words__free(&sw);
	return err;
}

/* JIT code ranges named so far, and the anonymous code they may lie in. */
struct jit_found {
	struct jit_symbol *syms;
	size_t n, cap;
	const struct as_map **anon;
	size_t nanon, anon_cap;
};

static bool in_anon_code(const struct jit_found *f, uint64_t pc)
{
	for (size_t i = 0; i < f->nanon; i++)
		if (pc - f->anon[i]->start < f->anon[i]->end - f->anon[i]->start)
			return true;
	return false;
}

static void note_jit_pc(struct jit_found *f, struct jit_symbols *js,
			uint64_t pc)
{
	struct jit_symbol sym, *slot;

	if (!in_anon_code(f, pc) || !jit_symbols__lookup(js, pc, &sym))
		return;
	for (size_t i = 0; i < f->n; i++)
		if (f->syms[i].start == sym.start)
			return;
	if ((slot = VEC_PUSH(f->syms, f->n, f->cap)))
		*slot = sym;
}

/* The names of the JIT code the saved stacks may be in: a live process's
 * perf map and jitdump change and vanish with it, so `show` reads them
 * from the file. Kept: the entries covering each thread's pc and each
 * stack word (return addresses among them) in anonymous executable
 * memory - a few, not the whole map. No section when none. */
static void put_jit_symbols(struct snapfile_writer *w,
			    const struct stacksnap_snapshot *snap,
			    struct stacksnap_addrspace *as)
{
	size_t nthreads = stacksnap_snapshot__thread_count(snap);
	struct jit_found f = { 0 };
	struct jit_symbols *js;

	for (size_t i = 0; i < as->n; i++) {
		const struct as_map *m = &as->maps[i];
		const struct as_map **slot;

		if (m->mod || m->path || !(m->prot & PROT_EXEC))
			continue;
		if (!(slot = VEC_PUSH(f.anon, f.nanon, f.anon_cap)))
			goto out;
		*slot = m;
	}
	if (!f.nanon || !(js = addrspace__jit(as)))
		goto out;
	for (size_t t = 0; t < nthreads; t++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, t);

		if (th->regs.valid & (1u << STACKSNAP_REG_RIP))
			note_jit_pc(&f, js, th->regs.regs[STACKSNAP_REG_RIP]);
		for (size_t off = 0; th->stack && off + 8 <= th->stack_len; off += 8) {
			uint64_t word;

			memcpy(&word, th->stack + off, 8);
			note_jit_pc(&f, js, word - 1); /* inside the call */
		}
	}
	if (!f.n)
		goto out;
	snapfile_writer__begin_section(w, SNAPFILE_SEC_JIT_SYMBOLS, 1, 0);
	byte_buf__u32(&w->buf, (uint32_t)f.n);
	for (size_t i = 0; i < f.n; i++) {
		size_t len = strlen(f.syms[i].name);

		if (len > SNAPFILE_MAX_JIT_NAME)
			len = SNAPFILE_MAX_JIT_NAME;
		byte_buf__u64(&w->buf, f.syms[i].start);
		byte_buf__u64(&w->buf, f.syms[i].end);
		byte_buf__u16(&w->buf, (uint16_t)len);
		byte_buf__put(&w->buf, f.syms[i].name, len);
	}
	snapfile_writer__end_section(w);
out:
	free(f.syms);
	free(f.anon);
}

/* A string that may be absent: written empty (read back as NULL). */
static void put_opt_str(struct byte_buf *b, const char *s)
{
	put_str(b, s ? s : "", s ? strlen(s) : 0);
}

/* A Go program's goroutines as the capture read them: an optional
 * section (older readers skip it). Version 2 (SNAPFILE_GOROUTINES_LABELS)
 * appends, after every goroutine's record, each one's profiler labels:
 * version 1 readers stop reading before them. */
static void put_goroutines(struct snapfile_writer *w,
			   const struct stacksnap_snapshot *snap)
{
	size_t n = stacksnap_snapshot__goroutine_count(snap);

	if (!n)
		return;
	snapfile_writer__begin_section(w, SNAPFILE_SEC_GOROUTINES,
				      SNAPFILE_GOROUTINES_LABELS, 0);
	byte_buf__u32(&w->buf, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_goroutine *g =
			stacksnap_snapshot__goroutine(snap, i);

		byte_buf__u64(&w->buf, (uint64_t)g->goid);
		put_opt_str(&w->buf, g->status);
		put_opt_str(&w->buf, g->wait_reason);
		byte_buf__u64(&w->buf, (uint64_t)g->wait_ns);
		byte_buf__u32(&w->buf, (uint32_t)g->thread);
		put_opt_str(&w->buf, g->created_by);
		put_opt_str(&w->buf, g->created_file);
		byte_buf__u32(&w->buf, g->created_line);
		put_opt_str(&w->buf, g->end);
		byte_buf__u32(&w->buf, (uint32_t)g->nframes);
		for (size_t k = 0; k < g->nframes; k++) {
			const struct stacksnap_runtime_frame *f = &g->frames[k];

			byte_buf__u64(&w->buf, f->pc);
			byte_buf__u32(&w->buf, f->native_index);
			byte_buf__u32(&w->buf, f->flags);
			put_opt_str(&w->buf, f->function);
			put_opt_str(&w->buf, f->file);
			byte_buf__u32(&w->buf, f->line);
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_goroutine *g =
			stacksnap_snapshot__goroutine(snap, i);
		size_t nl = g->nlabels < SNAPFILE_MAX_GLABELS
			? g->nlabels : SNAPFILE_MAX_GLABELS;

		byte_buf__u32(&w->buf, (uint32_t)nl);
		for (size_t k = 0; k < 2 * nl; k++)
			put_opt_str(&w->buf, g->labels[k]);
	}
	snapfile_writer__end_section(w);
}

/* The RUNTIME section: each thread's Python frames, named now (the file
 * may be shown after the process is gone), with the entry flags that let
 * the reader merge them into the native frames it unwinds, and the eval
 * loop's address range. Nothing when the capture read no runtime. */
static void put_runtime_counts(struct snapfile_writer *w,
			       const struct stacksnap_snapshot *snap);
static int put_runtime_rb(struct snapfile_writer *w,
			  const struct stacksnap_snapshot *snap);

/* The RUNTIME section's start: the runtime, its description, the range
 * of its evaluation loop's code, the thread count. */
static void put_runtime_head(struct snapfile_writer *w, enum stacksnap_runtime kind,
			     const char *note, uint64_t start, uint64_t end, size_t n)
{
	snapfile_writer__begin_section(w, SNAPFILE_SEC_RUNTIME, SNAPFILE_RUNTIME_COUNTS, 0);
	byte_buf__u8(&w->buf, (uint8_t)kind);
	put_str(&w->buf, note, strlen(note));
	byte_buf__u64(&w->buf, start);
	byte_buf__u64(&w->buf, end);
	byte_buf__u32(&w->buf, (uint32_t)n);
}

/* A thread record's start, up to its frame count (its length patched by
 * the caller, at the offset it read before): the frames it will hold,
 * nf bounded by SNAPFILE_MAX_RFRAMES. */
static size_t put_rthread_head(struct byte_buf *b, pid_t tid, bool gil,
			       const char *end, size_t nf)
{
	if (nf > SNAPFILE_MAX_RFRAMES)
		nf = SNAPFILE_MAX_RFRAMES;
	byte_buf__u32(b, 0); /* record length */
	byte_buf__u32(b, (uint32_t)tid);
	byte_buf__u8(b, gil);
	put_str(b, end ? end : "", end ? strlen(end) : 0);
	byte_buf__u32(b, (uint32_t)nf);
	return nf;
}

/* One runtime frame of a RUNTIME section's thread record. */
static void put_rframe(struct byte_buf *b, uint8_t flags, unsigned line,
		       const char *function, const char *file)
{
	size_t frec = b->n;

	byte_buf__u32(b, 0);
	byte_buf__u8(b, flags);
	byte_buf__u32(b, line);
	put_str(b, function, strlen(function));
	put_str(b, file, strlen(file));
	byte_buf__patch_u32(b, frec, (uint32_t)(b->n - frec - 4));
}

static int put_runtime(struct snapfile_writer *w, const struct stacksnap_snapshot *snap)
{
	/* Naming fills the capture's cache of code objects: logically
	   const, the snapshot is what it was. */
	struct stacksnap_snapshot *s = (struct stacksnap_snapshot *)snap;
	const struct py_runtime *py = capture__runtime_py(snap);
	size_t n = stacksnap_snapshot__thread_count(snap);

	if (!py)
		return capture__runtime_rb(snap) ? put_runtime_rb(w, snap) : 0;
	put_runtime_head(w, STACKSNAP_RUNTIME_PYTHON, py->note, py->eval_start,
			 py->eval_end, n);
	for (size_t i = 0; i < n; i++) {
		pid_t tid = stacksnap_snapshot__thread(snap, i)->tid;
		const struct py_frame *f;
		const char *end;
		size_t nf, rec = w->buf.n;
		bool gil;
		int err = capture__runtime_thread(s, tid, &f, &nf, &end, &gil);

		if (err)
			return err;
		nf = put_rthread_head(&w->buf, tid, gil, end, nf);
		for (size_t k = 0; k < nf; k++)
			put_rframe(&w->buf, f[k].entry ? SNAPFILE_RFRAME_ENTRY : 0,
				   f[k].line, f[k].function, f[k].file);
		const char *name = stacksnap_snapshot__runtime_thread_name(s, i);
		put_str(&w->buf, name ? name : "", name ? strlen(name) : 0);
		byte_buf__patch_u32(&w->buf, rec, (uint32_t)(w->buf.n - rec - 4));
	}
	put_runtime_counts(w, snap);
	return 0;
}

/* The RUNTIME section of a Ruby VM's capture: as Python's, each thread's
 * control frames named now, all of them (the reader's merge needs the
 * finish flags of the frames Ruby's backtrace does not show), and
 * rb_vm_exec's address range. */
static int put_runtime_rb(struct snapfile_writer *w, const struct stacksnap_snapshot *snap)
{
	struct stacksnap_snapshot *s = (struct stacksnap_snapshot *)snap;
	const struct rb_runtime *rb = capture__runtime_rb(snap);
	size_t n = stacksnap_snapshot__thread_count(snap);

	put_runtime_head(w, STACKSNAP_RUNTIME_RUBY, rb->note, rb->exec_start,
			 rb->exec_end, n);
	for (size_t i = 0; i < n; i++) {
		pid_t tid = stacksnap_snapshot__thread(snap, i)->tid;
		const struct rb_frame *f;
		const char *end;
		size_t nf, rec = w->buf.n;
		int err = capture__runtime_rb_thread(s, tid, &f, &nf, &end);

		if (err)
			return err;
		nf = put_rthread_head(&w->buf, tid, false, end, nf);
		for (size_t k = 0; k < nf; k++)
			put_rframe(&w->buf, (f[k].finish ? SNAPFILE_RFRAME_ENTRY : 0) |
				   (f[k].ruby ? 0 : SNAPFILE_RFRAME_HIDDEN) |
				   (f[k].cfunc ? SNAPFILE_RFRAME_CFUNC : 0),
				   f[k].line, f[k].function, f[k].file);
		put_str(&w->buf, "", 0);	/* no thread names */
		byte_buf__patch_u32(&w->buf, rec, (uint32_t)(w->buf.n - rec - 4));
	}
	put_runtime_counts(w, snap);
	return 0;
}

/* Version 2 of the RUNTIME section: what the capture said of the
 * runtime, after the threads; ends the section. */
static void put_runtime_counts(struct snapfile_writer *w,
			       const struct stacksnap_snapshot *snap)
{
	struct stacksnap_runtime_info ri = { .sz = sizeof(ri) };
	stacksnap_snapshot__runtime(snap, &ri);
	byte_buf__u8(&w->buf, ri.frames);
	byte_buf__u32(&w->buf, ri.interpreters);
	byte_buf__u64(&w->buf, ri.capture_ns);
	byte_buf__u32(&w->buf, ri.capture_reads);
	put_opt_str(&w->buf, ri.state);
	put_opt_str(&w->buf, ri.end);
	snapfile_writer__end_section(w);
}

int stacksnap_snapshot__save(const struct stacksnap_snapshot *snap,
			     struct stacksnap_addrspace *as, const char *path,
			     const struct stacksnap_save_opts *opts)
{
	struct stacksnap_save_opts o;
	struct snapfile_writer w;
	int err;

	if (!snap || !as || !path || opts_in(&o, sizeof(o), opts, 0) ||
	    o.encoding > STACKSNAP_ENCODING_FULL)
		return fail(-EINVAL);
	if (!o.encoding)
		o.encoding = DEFAULT_ENCODING;
	snapfile_writer__init(&w);
	put_process(&w, snap, as->pid, o.encoding);
	put_mappings(&w, as);
	err = put_threads(&w, snap, as, &o, o.encoding);
	if (!err) {
		put_goroutines(&w, snap);
		put_jit_symbols(&w, snap, as);
		err = put_runtime(&w, snap);
		waits_writer__put(&w, &o);
	}
	if (!err)
		err = named_writer__put(&w, snap, as, o.max_frames ? o.max_frames : 1024,
				       o.stack_scan);
	if (err) {
		byte_buf__free(&w.buf);
		log_err(&as->ctx->log, "%s: out of memory writing the snapshot", path);
		return fail(err);
	}
	err = snapfile_writer__finish(&w, path, &as->ctx->log);
	return err ? fail(err) : 0;
}
