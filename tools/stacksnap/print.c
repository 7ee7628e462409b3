/* print.c - text (in the spirit of eu-stack and gdb) and JSON output. */
#include "print.h"
#include "print_group.h"
#include "print_waits.h"
#include "cxx_throw.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INLINE 32

const char *thread_error_str(int error)
{
	switch (error) {
	case STACKSNAP_THREAD_OK: return "ok";
	case STACKSNAP_THREAD_GONE: return "thread exited during the capture";
	case STACKSNAP_THREAD_NOT_STOPPED: return "thread did not stop within the timeout";
	case STACKSNAP_THREAD_NO_REGS: return "registers could not be read";
	case STACKSNAP_THREAD_NO_STACK: return "stack could not be copied";
	case STACKSNAP_THREAD_EXITED: return "thread exited before the capture (the process runs on in its other threads)";
	}
	return "unknown error";
}

int thread_result_cmp_tid(const void *a, const void *b)
{
	const struct thread_result *x = a, *y = b;

	return (x->thread->tid > y->thread->tid) - (x->thread->tid < y->thread->tid);
}

static unsigned sym_flags(const struct options *o)
{
	return (o->lines ? STACKSNAP_SYM_LINES : 0) |
	       (o->no_demangle ? STACKSNAP_SYM_NO_DEMANGLE : 0);
}

int unwind_thread(struct thread_result *r, struct stacksnap_unwinder *uw,
		  struct stacksnap_addrspace *as, struct stacksnap_mem *mem,
		  unsigned max_frames)
{
	/* Room for every frame a copied stack can hold (a frame takes 8
	 * bytes at least; calloc's pages are touched only where frames go),
	 * 1024 at least; a deeper walk (live memory, a core) is walked again
	 * with twice the room, so a limit of a million frames costs nothing
	 * until a stack is that deep. */
	size_t cap = r->thread->stack ? r->thread->stack_len / 8 + 64 : 0;

	for (unsigned k = 0; k < r->thread->nmore_stacks; k++)
		cap += r->thread->more_stacks[k].len / 8;
	if (cap < 1024)
		cap = 1024;
	if (cap > max_frames)
		cap = max_frames;

	r->frames = NULL;
	for (;;) {
		free(r->frames);
		r->frames = calloc(cap, sizeof(*r->frames));
		if (!r->frames)
			return -ENOMEM;
		r->nframes = stacksnap_unwind(uw, as, &r->thread->regs, mem,
					      r->frames, cap, &r->end);
		if (r->nframes < 0 || r->end != STACKSNAP_END_FRAME_LIMIT ||
		    cap >= max_frames)
			break;
		cap = cap * 2 < max_frames ? cap * 2 : max_frames;
	}
	if (r->nframes < 0) {
		r->nframes = 0;
		r->end = STACKSNAP_END_BAD_CFI;
	}
	return 0;
}

static bool is_jit(const struct stacksnap_sym *s)
{
	return s->module && !strcmp(s->module, STACKSNAP_MODULE_JIT);
}

int symbolize_thread(const struct options *o, struct stacksnap_addrspace *as,
		     struct thread_result *r)
{
	struct stacksnap_sym sym[MAX_INLINE];
	size_t cap = (size_t)r->nframes + 8;

	r->out = malloc(cap * sizeof(*r->out));
	if (!r->out)
		return -ENOMEM;
	r->nout = 0;
	for (int i = 0; i < r->nframes; i++) {
		const struct stacksnap_frame *fr = &r->frames[i];
		int ns = 0;

		if (!o->raw)
			ns = stacksnap_addrspace__symbolize(
				as, fr->pc,
				i > 0 && !(fr->flags & STACKSNAP_FRAME_SIGNAL),
				sym_flags(o), sym, MAX_INLINE);
		if (ns <= 0) {
			memset(sym, 0, sizeof(sym[0]));
			ns = 1;
		}
		if (r->nout + (size_t)ns > cap) {
			cap = 2 * cap + (size_t)ns;
			void *p = realloc(r->out, cap * sizeof(*r->out));
			if (!p)
				return -ENOMEM;
			r->out = p;
		}
		for (int k = 0; k < ns; k++) {
			struct out_frame *of = &r->out[r->nout++];

			*of = (struct out_frame){ fr, sym[k], 0, 0 };
			if (is_jit(&sym[k]) && !sym[k].function) {
				struct stacksnap_mapping m = { .sz = sizeof(m) };

				if (stacksnap_addrspace__find_mapping(as, fr->pc,
								      &m) == 0) {
					of->jit_start = m.start;
					of->jit_end = m.end;
				}
			}
		}
	}
	return 0;
}

/* A runtime frame's mark in text ("[py]") and its JSON "runtime". */
const char *rframe_tag(const struct stacksnap_runtime_frame *rf)
{
	if (rf->flags & STACKSNAP_RFRAME_VM)
		return "[jvm]";
	return rf->runtime == STACKSNAP_RUNTIME_JAVA ? "[java]" :
		rf->runtime == STACKSNAP_RUNTIME_JS ? "[js]" :
		rf->runtime == STACKSNAP_RUNTIME_RUBY ? "[rb]" :
		rf->runtime == STACKSNAP_RUNTIME_PHP ? "[php]" : "[py]";
}

static const char *rframe_json(const struct stacksnap_runtime_frame *rf)
{
	if (rf->flags & STACKSNAP_RFRAME_VM)
		return "jvm";
	return rf->runtime == STACKSNAP_RUNTIME_JAVA ? "java" :
		rf->runtime == STACKSNAP_RUNTIME_JS ? "js" :
		rf->runtime == STACKSNAP_RUNTIME_RUBY ? "ruby" :
		rf->runtime == STACKSNAP_RUNTIME_PHP ? "php" : "python";
}

/* A Java or JavaScript frame with no source file (a stub, an adapter, a
 * builtin) prints no "(?)": Python frames always have one. */
static void print_rframe(FILE *f, size_t line, const struct stacksnap_runtime_frame *rf,
			 bool mark)
{
	fprintf(f, "#%-3zu %s", line, rf->function);
	if (rf->file || rf->runtime == STACKSNAP_RUNTIME_PYTHON ||
	    rf->runtime == STACKSNAP_RUNTIME_RUBY) {
		fprintf(f, " (%s", rf->file ? rf->file : "?");
		if (rf->line)
			fprintf(f, ":%u", rf->line);
		fputc(')', f);
	}
	fprintf(f, "%s%s%s\n", mark ? " " : "", mark ? rframe_tag(rf) : "",
		rf->flags & STACKSNAP_RFRAME_INLINED ? " [inlined]" : "");
}

/* Whose frames a thread's runtime frames are, for "[... frames cut]". */
const char *runtime_lang(int kind)
{
	return kind == STACKSNAP_RUNTIME_RUBY ? "Ruby" :
	       kind == STACKSNAP_RUNTIME_PHP ? "PHP" : "Python";
}

static const char *rframes_lang(const struct thread_result *r)
{
	return runtime_lang(r->nrframes ? (int)r->rframes[0].runtime : 0);
}

/* --runtime=only: the runtime frames alone, as py-spy prints them. */
static void print_text_rframes(FILE *f, const struct thread_result *r)
{
	for (size_t i = 0; i < r->nrframes; i++)
		print_rframe(f, i, &r->rframes[i], false);
	if (!r->nrframes)
		fputs("    [no runtime frames]\n", f);
	if (r->rend)
		fprintf(f, "    [%s frames cut: %s]\n", rframes_lang(r), r->rend);
}

/* Native frame i of r as text, numbered line (runtime frames before it
 * shift the numbering). */
static void print_text_line(FILE *f, const struct options *o,
			    const struct thread_result *r, size_t i, size_t line)
{
	const struct stacksnap_frame *fr = r->out[i].frame;
	const struct stacksnap_sym *s = &r->out[i].sym;

	fprintf(f, "#%-3zu 0x%016" PRIx64, line, fr->pc);
	if (o->show_rsp)
		fprintf(f, " sp=0x%016" PRIx64, fr->sp);
	if (fr->flags & STACKSNAP_FRAME_SIGRETURN)
		fputs(" <signal handler called>", f);
	else if (is_jit(s) && s->function)
		fprintf(f, " in %s+0x%" PRIx64 " [jit]", s->function, s->offset);
	else if (is_jit(s) && r->out[i].jit_end)
		fprintf(f, " [jit] ?? (anon mapping %" PRIx64 "-%" PRIx64 ")",
			r->out[i].jit_start, r->out[i].jit_end);
	else if (is_jit(s))
		fputs(" [jit] ??", f);
	else if (s->function && s->inlined)
		fprintf(f, " in %s [inlined]", s->function);
	else if (s->function)
		fprintf(f, " in %s+0x%" PRIx64, s->function, s->offset);
	else if (!o->raw)
		fputs(" in ??", f);
	if (s->module && !is_jit(s))
		fprintf(f, " (%s)", s->module);
	if (s->file)
		fprintf(f, " at %s:%d", s->file, s->line);
	if (fr->trust == STACKSNAP_TRUST_SCAN)
		fputs(" [guess: stack scan]", f);
	else if (o->verbose)
		fprintf(f, " [%s]", stacksnap_stepper__str(fr->stepper));
	fputc('\n', f);
}

#define FOLD_MAX_CYCLE 16 /* lines in a cycle that folds */
#define FOLD_MIN_LINES 16 /* lines a fold hides at least */

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Whether two lines show the same function (the same pc, unnamed), so
 * that a recursion's lines repeat whatever their return addresses. */
static bool same_line(const struct out_frame *a, const struct out_frame *b)
{
	const unsigned sig = STACKSNAP_FRAME_SIGRETURN | STACKSNAP_FRAME_SIGNAL;

	if (((a->frame->flags ^ b->frame->flags) & sig) ||
	    a->sym.inlined != b->sym.inlined || !same_str(a->sym.module, b->sym.module))
		return false;
	if (!a->sym.function || !b->sym.function)
		return !a->sym.function && !b->sym.function &&
		       a->frame->pc == b->frame->pc;
	return same_str(a->sym.function, b->sym.function);
}

/* The cycle of *len lines that repeats right after lines [i, i + *len),
 * hiding *reps more whole copies of it, never the outermost line; false
 * when none hides FOLD_MIN_LINES lines. The shortest cycle wins a tie. */
static bool find_fold(const struct thread_result *r, size_t i, size_t *len,
		      size_t *reps)
{
	size_t best = 0;

	for (size_t l = 1; l <= FOLD_MAX_CYCLE && i + 2 * l < r->nout; l++) {
		size_t x = i + l;

		while (x + 1 < r->nout && same_line(&r->out[x], &r->out[x - l]))
			x++;
		size_t k = (x - i - l) / l;
		if (k * l > best && k * l >= FOLD_MIN_LINES) {
			best = k * l;
			*len = l;
			*reps = k;
		}
	}
	return best != 0;
}

/* n with thousands separators, as "9,988". */
static void print_count(FILE *f, size_t n)
{
	if (n >= 1000) {
		print_count(f, n / 1000);
		fprintf(f, ",%03zu", n % 1000);
	} else {
		fprintf(f, "%zu", n);
	}
}

void print_text_frames(FILE *f, const struct options *o,
		       const struct thread_result *r)
{
	size_t line = 0, rf = 0;

	if (o->runtime == RUNTIME_ONLY) {
		print_text_rframes(f, r);
		return;
	}
	for (size_t i = 0; i < r->nout;) {
		const struct stacksnap_frame *fr = r->out[i].frame;
		size_t k = (size_t)(fr - r->frames), len, reps;

		if (rf < r->nrframes && r->rframes[rf].native_index == k) {
			/* The eval loop's frame (and what is inlined at its
			   pc) gives way to the Python frames it runs. */
			while (rf < r->nrframes && r->rframes[rf].native_index == k)
				print_rframe(f, line++, &r->rframes[rf++], true);
			while (i < r->nout && r->out[i].frame == fr)
				i++;
			continue;
		}
		/* A fold never hides a frame that runtime frames replace. */
		if (o->no_fold || !find_fold(r, i, &len, &reps) ||
		    (rf < r->nrframes &&
		     r->rframes[rf].native_index <=
			     (size_t)(r->out[i + len + reps * len - 1].frame - r->frames))) {
			print_text_line(f, o, r, i++, line++);
			continue;
		}
		/* One copy of the cycle in full, then a line for the copies
		 * that repeat it (innermost and outermost frames stay). */
		for (size_t c = 0; c < len; c++)
			print_text_line(f, o, r, i + c, line + c);
		fprintf(f, "#%zu ... #%zu  [", line + len, line + len + reps * len - 1);
		for (size_t c = 0; c < len; c++) {
			const struct out_frame *l = &r->out[i + c];

			if (c)
				fputs(", ", f);
			if (l->frame->flags & STACKSNAP_FRAME_SIGRETURN)
				fputs("<signal handler called>", f);
			else if (l->sym.function)
				fputs(l->sym.function, f);
			else
				fprintf(f, "0x%" PRIx64, l->frame->pc);
		}
		fputs("] repeated ", f);
		print_count(f, reps);
		fputs(reps == 1 ? " time\n" : " times\n", f);
		i += len + reps * len;
		line += len + reps * len;
	}
	/* Python frames no native frame took (a native walk cut short). */
	for (; rf < r->nrframes; rf++)
		print_rframe(f, line++, &r->rframes[rf], true);
	if (r->end != STACKSNAP_END_COMPLETE)
		fprintf(f, "    [truncated: %s]\n", stacksnap_end__str(r->end));
	if (r->rend)
		fprintf(f, "    [%s frames cut: %s]\n", rframes_lang(r), r->rend);
}

void print_thread_body(FILE *f, const struct options *o,
		       const struct thread_result *r,
		       const struct thread_result *all, size_t n,
		       uint64_t waited_lo, uint64_t waited_hi)
{
	if (r->thread->error) {
		fprintf(f, "    [no stack: %s]\n", thread_error_str(r->thread->error));
	} else {
		print_wait_text_waited(f, r, all, n, waited_lo, waited_hi);
		print_text_frames(f, o, r);
	}
	if (r->exception)
		cxx_throw_text(f, r->exception);
}

void print_thread_text(FILE *f, const struct options *o,
		       const struct thread_result *r, bool first,
		       const struct thread_result *all, size_t n)
{
	const struct stacksnap_thread *th = r->thread;

	/* What is not known is not printed (a core's other threads have
	 * neither name nor state). */
	fprintf(f, "%sThread %d", first ? "" : "\n", (int)th->tid);
	if (th->name[0])
		fprintf(f, " (%s)", th->name);
	if (th->state)
		fprintf(f, " state %c", th->state);
	if (r->wchan)
		fprintf(f, " (%s)", r->wchan);
	if (r->rname)
		fprintf(f, ", %s thread \"%s\"",
			r->rname_java ? "Java" : "Python", r->rname);
	fprintf(f, "%s:\n", r->holds_gil ? " [holds the GIL]" : "");
	uint64_t ns = r->wait ? r->wait->waited_ns : 0;

	print_thread_body(f, o, r, all, n, ns, ns);
}

void print_text(FILE *f, const struct options *o,
		const struct thread_result *r, size_t n)
{
	/* One block per distinct stack, unless --no-group. */
	if (!o->no_group && print_text_grouped(f, o, r, n) == 0)
		return;
	for (size_t t = 0; t < n; t++)
		print_thread_text(f, o, &r[t], !t, r, n);
}

/* A runtime frame as JSON: the keys of a native frame, "runtime" set,
 * sp null, pc null but for compiled code. */
static void print_json_rframe(FILE *f, bool comma,
			      const struct stacksnap_runtime_frame *rf)
{
	/* A compiled (JIT) runtime frame has its native frame's pc. */
	if (rf->pc)
		fprintf(f, "%s{\"pc\":\"0x%" PRIx64 "\",\"sp\":null,\"function\":",
			comma ? "," : "", rf->pc);
	else
		fprintf(f, "%s{\"pc\":null,\"sp\":null,\"function\":", comma ? "," : "");
	json_str(f, rf->function);
	fputs(",\"offset\":0,\"module\":null,\"file\":", f);
	json_str(f, rf->file);
	if (rf->line)
		fprintf(f, ",\"line\":%u", rf->line);
	else
		fputs(",\"line\":null", f);
	fprintf(f, ",\"inlined\":%s,\"sigreturn\":false,\"signal\":false,"
		   "\"stepper\":null,\"trust\":null,\"runtime\":",
		rf->flags & STACKSNAP_RFRAME_INLINED ? "true" : "false");
	json_str(f, rframe_json(rf));
	fputc('}', f);
}

void print_json_frames(FILE *f, const struct thread_result *r)
{
	print_json_frames_mode(f, r, RUNTIME_MERGED);
}

void print_json_frames_mode(FILE *f, const struct thread_result *r, int mode)
{
	size_t rf = 0, nprinted = 0;

	if (mode == RUNTIME_ONLY) {
		for (size_t i = 0; i < r->nrframes; i++)
			print_json_rframe(f, i > 0, &r->rframes[i]);
		return;
	}
	for (size_t i = 0; i < r->nout; i++, nprinted++) {
		const struct stacksnap_frame *fr = r->out[i].frame;
		const struct stacksnap_sym *s = &r->out[i].sym;
		size_t k = (size_t)(fr - r->frames);

		if (rf < r->nrframes && r->rframes[rf].native_index == k) {
			while (rf < r->nrframes && r->rframes[rf].native_index == k)
				print_json_rframe(f, nprinted++ > 0, &r->rframes[rf++]);
			nprinted--;
			while (i + 1 < r->nout && r->out[i + 1].frame == fr)
				i++;
			continue;
		}
		fprintf(f, "%s{\"pc\":\"0x%" PRIx64 "\",\"sp\":\"0x%" PRIx64 "\",\"function\":",
			nprinted ? "," : "", fr->pc, fr->sp);
		json_str(f, fr->flags & STACKSNAP_FRAME_SIGRETURN
				    ? "<signal handler called>"
				    : s->function);
		fprintf(f, ",\"offset\":%" PRIu64 ",\"module\":", s->offset);
		json_str(f, s->module);
		fputs(",\"file\":", f);
		json_str(f, s->file);
		if (s->line)
			fprintf(f, ",\"line\":%d", s->line);
		else
			fputs(",\"line\":null", f);
		fprintf(f, ",\"inlined\":%s,\"sigreturn\":%s,\"signal\":%s,"
			   "\"stepper\":\"%s\",\"trust\":\"%s\",\"runtime\":null}",
			s->inlined ? "true" : "false",
			fr->flags & STACKSNAP_FRAME_SIGRETURN ? "true" : "false",
			fr->flags & STACKSNAP_FRAME_SIGNAL ? "true" : "false",
			stacksnap_stepper__str(fr->stepper),
			stacksnap_trust__str(fr->trust));
	}
	for (; rf < r->nrframes; rf++)
		print_json_rframe(f, nprinted++ > 0, &r->rframes[rf]);
}

void print_json(FILE *f, const struct options *o,
		const struct thread_result *r, size_t n,
		const struct dump_totals *tot)
{
	fprintf(f, "{\"pid\":%d,\"freeze_us\":%.1f,\"bytes_copied\":%zu,"
		   "\"unwind_us\":%.1f,\"symbolize_us\":%.1f,",
		(int)o->pid, tot->snap->freeze_ns / 1e3, tot->snap->bytes_copied,
		tot->unwind_ns / 1e3, tot->symbolize_ns / 1e3);
	if (tot->saved_json) {
		fputs("\"snapshot\":", f);
		tot->saved_json(f, tot->saved_user);
		fputc(',', f);
	}
	if (tot->process_json) {
		fputs("\"process\":", f);
		tot->process_json(f, tot->process_user);
		fputc(',', f);
	}
	if (tot->nonstop) {
		fprintf(f, "\"path\":\"%s\",\"read_nonstop\":%u,\"interrupted\":%u,",
			tot->nonstop->nonstop ? "non-stop" : "freeze-all",
			tot->nonstop->read_nonstop, tot->nonstop->interrupted);
		/* Why not non-stop (too few sleepers, reads that would not
		 * settle, no BPF...): "" when it was. */
		fputs("\"path_reason\":", f);
		json_str(f, tot->nonstop->reason ? tot->nonstop->reason : "");
		fputc(',', f);
	}
	const struct stacksnap_runtime_info *ri = tot->runtime;
	fputs("\"runtime\":", f);
	if (ri && ri->runtime == STACKSNAP_RUNTIME_PYTHON) {
		fputs("{\"kind\":\"python\",\"description\":", f);
		json_str(f, ri->description);
		fprintf(f, ",\"frames\":%s,\"gil_holder\":", ri->frames ? "true" : "false");
		if (ri->gil_holder)
			fprintf(f, "%d", (int)ri->gil_holder);
		else
			fputs("null", f);
		fputs(",\"state\":", f);
		json_str(f, ri->state);
		/* Unknown (a core, a file of before): null, not 0. */
		fputs(",\"interpreters\":", f);
		if (ri->interpreters_unknown)
			fputs("null", f);
		else
			fprintf(f, "%u", ri->interpreters);
		fputs(",\"capture_us\":", f);
		if (ri->capture_unknown)
			fputs("null},", f);
		else
			fprintf(f, "%.1f},", ri->capture_ns / 1e3);
	} else if (ri && (ri->runtime == STACKSNAP_RUNTIME_JAVA ||
			  ri->runtime == STACKSNAP_RUNTIME_JS ||
			  ri->runtime == STACKSNAP_RUNTIME_RUBY ||
			  ri->runtime == STACKSNAP_RUNTIME_PHP)) {
		fprintf(f, "{\"kind\":\"%s\",\"description\":",
			ri->runtime == STACKSNAP_RUNTIME_JAVA ? "java" :
			ri->runtime == STACKSNAP_RUNTIME_RUBY ? "ruby" :
			ri->runtime == STACKSNAP_RUNTIME_PHP ? "php" : "js");
		json_str(f, ri->description);
		fprintf(f, ",\"frames\":%s},", ri->frames ? "true" : "false");
	} else {
		fputs("null,", f);
	}
	fputs("\"threads\":[", f);
	for (size_t t = 0; t < n; t++) {
		const struct stacksnap_thread *th = r[t].thread;
		char state[2] = { th->state, 0 };

		fprintf(f, "%s{\"tid\":%d,\"name\":", t ? "," : "", (int)th->tid);
		json_str(f, th->name[0] ? th->name : NULL);
		fputs(",\"state\":", f);
		json_str(f, th->state ? state : NULL);
		fputs(",\"wchan\":", f);
		json_str(f, r[t].wchan);
		fputs(",\"exception\":", f);
		cxx_throw_json(f, r[t].exception);
		fprintf(f, ",\"nonstop\":%s", th->nonstop ? "true" : "false");
		fprintf(f, ",\"complete\":%s,\"end\":",
			!th->error && r[t].end == STACKSNAP_END_COMPLETE ? "true" : "false");
		json_str(f, th->error ? thread_error_str(th->error)
				      : stacksnap_end__str(r[t].end));
		fputs(",\"runtime_name\":", f);
		json_str(f, r[t].rname);
		fprintf(f, ",\"holds_gil\":%s,\"runtime_end\":",
			r[t].holds_gil ? "true" : "false");
		json_str(f, r[t].rend);
		if (tot->waits)
			print_wait_json(f, &r[t]);
		fputs(",\"frames\":[", f);
		if (!th->error)
			print_json_frames_mode(f, &r[t], o->runtime);
		fputs("]}", f);
	}
	fputc(']', f);
	print_groups_json(f, r, n);
	if (tot->goroutines) {
		fputc(',', f);
		print_goroutines_json(f, tot->goroutines, tot->ngoroutines);
	}
	if (tot->waits)
		print_deadlocks_json(f, tot->waits);
	fputs("}\n", f);
}

void print_stats(FILE *f, const struct dump_totals *tot)
{
	const struct stacksnap_snapshot_stats *s = tot->snap;

	fprintf(f, "stacksnap: freeze %.1f us, %u threads, %zu bytes copied, "
		   "capture %.1f us, unwind %.1f us (%u frames), symbolize %.1f us\n",
		s->freeze_ns / 1e3, s->threads, s->bytes_copied, s->capture_ns / 1e3,
		tot->unwind_ns / 1e3, tot->frames, tot->symbolize_ns / 1e3);
	if (tot->gone)
		fprintf(f, "stacksnap: %u thread%s exited during the capture "
			   "(left out)\n", tot->gone, tot->gone == 1 ? "" : "s");
	fprintf(f, "stacksnap: freeze phases: stop %.1f us, registers %.1f us, "
		   "copy %.1f us, detach %.1f us; %u task-list rescans\n",
		s->stop_ns / 1e3, s->regs_ns / 1e3, s->copy_ns / 1e3,
		s->detach_ns / 1e3, s->rescans);
	fprintf(f, "stacksnap: cold path: check %.1f us, maps and modules %.1f us "
		   "(%u modules), tables %.1f us, debug files %.1f us, symbol "
		   "tables %.1f us, DWARF %.1f us; total %.1f us\n",
		tot->check_ns / 1e3,
		(tot->addrspace_ns + tot->ctx.module_ns) / 1e3, tot->ctx.modules,
		tot->ctx.table_ns / 1e3, tot->ctx.debug_ns / 1e3,
		tot->ctx.symtab_ns / 1e3, tot->ctx.dwarf_ns / 1e3, tot->total_ns / 1e3);
	if (tot->about_ns || tot->waits_ns || (tot->nonstop && tot->nonstop->load_ns))
		fprintf(f, "stacksnap: other cold costs: /proc: process header "
			   "%.1f us, waits %.1f us; BPF task iterator load %.1f "
			   "us\n", tot->about_ns / 1e3, tot->waits_ns / 1e3,
			tot->nonstop ? tot->nonstop->load_ns / 1e3 : 0.0);
	cli_print_table_stats(f, "stacksnap", &tot->ctx);
	if (tot->runtime && (tot->runtime->runtime == STACKSNAP_RUNTIME_PYTHON ||
			     tot->runtime->runtime == STACKSNAP_RUNTIME_RUBY))
		fprintf(f, "stacksnap: runtime: %s; frame chains read at the "
			   "capture's instant: %.1f us, %u reads\n",
			tot->runtime->description, tot->runtime->capture_ns / 1e3,
			tot->runtime->capture_reads);

	if (tot->nonstop && tot->nonstop->nonstop)
		fprintf(f, "stacksnap: path non-stop: %u threads read without "
			   "stopping them, %u interrupted (%u found to have run "
			   "after their read), %u witness checks, iterator %.1f us, "
			   "checks %.1f us, %u deep stacks completed, %u read "
			   "again before the freeze\n",
			tot->nonstop->read_nonstop, tot->nonstop->interrupted,
			tot->nonstop->witness_moved, tot->nonstop->rounds,
			tot->nonstop->iter_ns / 1e3, tot->nonstop->check_ns / 1e3,
			tot->nonstop->extended, tot->nonstop->reread);
	else if (tot->nonstop)
		fprintf(f, "stacksnap: path freeze-all: %u threads interrupted "
			   "(%s)\n", tot->nonstop->interrupted, tot->nonstop->reason);
}

void thread_results_free(struct thread_result *res, size_t n)
{
	for (size_t i = 0; res && i < n; i++) {
		free(res[i].frames);
		free(res[i].out);
		free(res[i].rframes);
		free(res[i].exception);
	}
	free(res);
}
