/* cmd_show.c - `stacksnap show FILE` (a snapshot file written by --save)
 * and `stacksnap --core FILE` (an ELF core dump): a saved capture unwound
 * and symbolized here, printed as the live dump prints. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "options.h"
#include "print.h"
#include "print_waits.h"
#include "trace_print.h"
#include "profile_out.h"
#include "subcommands.h"
#include "stacksnap.h"

/* The Python frames --save kept for thread i, merged against the native
 * frames unwound from its saved stack. */
static int saved_runtime_frames(const struct stacksnap_saved *s, size_t i,
				struct thread_result *r,
				const struct stacksnap_runtime_info *ri)
{
	int n = stacksnap_saved__runtime_frames(s, i, r->frames, (size_t)r->nframes,
						NULL, 0, &r->rend);

	r->holds_gil = ri->gil_holder && ri->gil_holder == r->thread->tid;
	r->rname = stacksnap_saved__runtime_thread_name(s, i);
	r->rname_java = ri->runtime == STACKSNAP_RUNTIME_JAVA;
	if (n <= 0)
		return 0;
	r->rframes = calloc((size_t)n, sizeof(*r->rframes));
	if (!r->rframes)
		return -ENOMEM;
	r->nrframes = (size_t)stacksnap_saved__runtime_frames(
		s, i, r->frames, (size_t)r->nframes, r->rframes, (size_t)n, &r->rend);
	return 0;
}

/* What a saved capture is (show's header and its JSON "snapshot"). */
struct saved_about {
	const struct stacksnap_saved_info *info;
	const char *file;
	bool core;
	bool events;	/* an events file (trace --save) */
};

/* A string the file recorded, or NULL: an older writer's file (or a
 * core) did not record it. */
static const char *recorded(const char *s)
{
	return s && *s ? s : NULL;
}

/* The capture's wall-clock time, UTC, as fmt says; false when the file
 * does not say it. */
static bool capture_time(uint64_t ns, const char *fmt, char *buf, size_t len)
{
	time_t t = (time_t)(ns / NS_PER_S);
	struct tm tm;

	return ns && gmtime_r(&t, &tm) && strftime(buf, len, fmt, &tm) > 0;
}

/* Two lines and a blank one before the threads (the events): which
 * process, where and when, by which stacksnap; what the file does not say
 * is "unknown". An events file of `trace -- CMD` names CMD (it had no pid
 * yet); one of `trace -a` (or of an older `trace -- CMD`) has neither. */
static void print_saved_header(FILE *f, const struct saved_about *a)
{
	const struct stacksnap_saved_info *i = a->info;
	const char *cmd = recorded(i->cmdline), *host = recorded(i->hostname);
	const char *kernel = recorded(i->kernel), *ver = recorded(i->version);
	char when[64];

	if (!capture_time(i->time_ns, "%Y-%m-%d %H:%M:%S UTC", when, sizeof(when)))
		strcpy(when, "unknown");
	if (a->events && i->pid <= 0)
		fprintf(f, "Events of %s%s\n", cmd ? "command: " : "every process (trace -a) "
			"or of a command, command line unknown", cmd ? cmd : "");
	else
		fprintf(f, "%s of pid %d: %s\n",
			a->core ? "Core dump" : a->events ? "Events" : "Snapshot",
			(int)i->pid, cmd ? cmd : "command line unknown");
	fprintf(f, "  %s %s, host %s, kernel %s", a->events ? "traced from" : "taken", when,
		host ? host : "unknown", kernel ? kernel : "unknown");
	if (!a->core)
		fprintf(f, ", written by stacksnap %s", ver ? ver : "unknown");
	fputs("\n\n", f);
}

/* The JSON's "snapshot" object (a dump_totals saved_json): the same,
 * null where unknown. */
static void print_saved_json(FILE *f, const void *user)
{
	const struct saved_about *a = user;
	const struct stacksnap_saved_info *i = a->info;
	char when[64];

	fputs("{\"file\":", f);
	json_str(f, a->file);
	fprintf(f, ",\"kind\":\"%s\",\"pid\":",
		a->core ? "core" : a->events ? "events" : "snapshot");
	if (a->events && i->pid <= 0)
		fputs("null", f); /* trace -- CMD, trace -a */
	else
		fprintf(f, "%d", (int)i->pid);
	fputs(",\"command\":", f);
	json_str(f, recorded(i->cmdline));
	fputs(",\"time\":", f);
	json_str(f, capture_time(i->time_ns, "%Y-%m-%dT%H:%M:%SZ", when, sizeof(when))
		    ? when : NULL);
	if (i->time_ns)
		fprintf(f, ",\"time_ns\":%llu", (unsigned long long)i->time_ns);
	else
		fputs(",\"time_ns\":null", f);
	fputs(",\"host\":", f);
	json_str(f, recorded(i->hostname));
	fputs(",\"kernel\":", f);
	json_str(f, recorded(i->kernel));
	fputs(",\"boot_id\":", f);
	json_str(f, recorded(i->boot_id));
	fputs(",\"stacksnap_version\":", f);
	json_str(f, a->core ? NULL : recorded(i->version));
	if (a->core || !i->format_version)
		fputs(",\"format_version\":null}", f);
	else
		fprintf(f, ",\"format_version\":\"%u.%u\"}", i->format_version / 100,
			i->format_version % 100);
}

/* Unwinds every thread of s from its saved stack (and, for cores, the
 * rest of its memory), symbolizes and prints. */
/* The file's indices of the threads to print into at: every thread, or
 * with -t TID... those asked for (one not in the file is named). Returns
 * how many. */
static size_t wanted_threads(const struct options *o, struct stacksnap_saved *s,
			     size_t *at, const char *file, bool core)
{
	size_t n = stacksnap_saved__thread_count(s), k = 0;

	for (size_t i = 0; !o->ntids && i < n; i++)
		at[k++] = i;
	for (size_t t = 0; t < o->ntids; t++) {
		size_t i;

		for (i = 0; i < n; i++)
			if (stacksnap_saved__thread(s, i)->tid == o->tids[t])
				break;
		if (i == n)
			fprintf(stderr, "stacksnap%s: %s: no thread %d in it\n",
				core ? "" : " show", file, (int)o->tids[t]);
		else
			at[k++] = i;
	}
	return k;
}

static int print_saved(const struct options *o, struct stacksnap_saved *s,
		       const char *file, bool core)
{
	struct stacksnap_addrspace *as = stacksnap_saved__addrspace(s);
	size_t n = stacksnap_saved__thread_count(s);
	unsigned max_frames = o->max_frames ? o->max_frames : DEFAULT_MAX_FRAMES;
	STACKSNAP_OPTS(stacksnap_saved_info, info);
	STACKSNAP_OPTS(stacksnap_runtime_info, rinfo);
	struct stacksnap_snapshot_stats st = { 0 };
	struct dump_totals tot = { .snap = &st };
	struct thread_result *res = calloc(n ? n : 1, sizeof(*res));
	size_t *at = calloc(n ? n : 1, sizeof(*at));
	STACKSNAP_OPTS(stacksnap_unwind_opts, uopts, .max_frames = max_frames,
		       .stack_scan = o->stack_scan);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(&uopts);
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(NULL, 0, 0);
	struct stacksnap_waits *waits = NULL;
	int rc = EXIT_OK;

	const struct saved_about about = { .info = &info, .file = file, .core = core };

	stacksnap_saved__info(s, &info);
	/* A JVM's compiled frames: walked as the capture walked them. */
	if (uw && o->runtime != RUNTIME_OFF)
		stacksnap_saved__runtime_steppers(s, uw);
	if (o->runtime != RUNTIME_OFF && stacksnap_saved__runtime(s, &rinfo) == 0 &&
	    rinfo.runtime) {
		tot.runtime = &rinfo;
		if (!rinfo.frames)
			fprintf(stderr, "stacksnap: %s\n", rinfo.description);
	}
	st.freeze_ns = info.freeze_ns;
	st.bytes_copied = (size_t)info.bytes_copied;
	st.threads = (unsigned)n;
	if (!res || !at || !uw || !mem ||
	    (stacksnap_saved__memory(s) &&
	     stacksnap_mem__set_fallback(mem, stacksnap_saved__memory(s)))) {
		fprintf(stderr, "stacksnap: out of memory\n");
		rc = EXIT_ERROR;
		goto out;
	}
	if ((n = wanted_threads(o, s, at, file, core)) == 0 && o->ntids) {
		rc = EXIT_ERROR;
		goto out;
	}
	if (n < o->ntids)
		rc = EXIT_PARTIAL;
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_thread *th = stacksnap_saved__thread(s, at[i]);

		res[i].thread = th;
		if (th->error) {
			rc = EXIT_PARTIAL;
			continue;
		}
		stacksnap_mem__set_copy(mem, th->stack, th->stack ? th->stack_len : 0,
					th->stack_base);
		stacksnap_mem__set_more(mem, th->more_stacks, th->nmore_stacks);
		if (unwind_thread(&res[i], uw, as, mem, max_frames)) {
			rc = EXIT_ERROR;
			goto out;
		}
		tot.frames += (unsigned)res[i].nframes;
		if (o->runtime != RUNTIME_OFF && saved_runtime_frames(s, at[i], &res[i], &rinfo)) {
			fprintf(stderr, "stacksnap: out of memory\n");
			rc = EXIT_ERROR;
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (symbolize_thread(o, as, &res[i])) {
			fprintf(stderr, "stacksnap: out of memory\n");
			rc = EXIT_ERROR;
			goto out;
		}
	qsort(res, n, sizeof(*res), thread_result_cmp_tid);
	/* The waits the dump that saved the file found (its WAITS section);
	 * else locks from the saved memory (a core's; an older snapshot file
	 * has only the stacks), no fds or system calls: the waits say so. */
	waits = waits_build(NULL, info.pid, as, stacksnap_saved__memory(s), true, s,
			    rinfo.gil_holder, res, n);
	tot.waits = waits;
	/* A Go program's goroutines, kept by --save (contiguous). */
	size_t ng = o->threads_only ? 0 : stacksnap_saved__goroutine_count(s);
	const struct stacksnap_goroutine *gs =
		ng ? stacksnap_saved__goroutine(s, 0) : NULL;
	size_t nt = o->goroutines_only ? 0 : n;

	if (o->out.format_set) {
		char title[64];
		int r;

		snprintf(title, sizeof(title), "stacksnap show: pid %d", (int)info.pid);
		r = profile_out_threads(&o->out, "stacksnap show", gs, ng, as,
					res, nt, title);
		if (r)
			rc = r;
	} else if (o->json) {
		tot.goroutines = gs;
		tot.ngoroutines = ng;
		tot.saved_json = print_saved_json;
		tot.saved_user = &about;
		print_json(stdout, o, res, nt, &tot);
	} else {
		print_saved_header(stdout, &about);
		print_text(stdout, o, res, nt);
		if (nt)
			print_deadlocks_text(stdout, waits, res, nt);
		print_goroutines_text(stdout, gs, ng, !nt);
	}
out:
	stacksnap_waits__free(waits);
	thread_results_free(res, n);
	free(at);
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
	return cli_close_output(stdout, NULL, rc);
}

/* --format ctf: the CTF trace of an events file, with the clock offset,
 * boot id and host name the file kept (so it is the one `trace --format
 * ctf` wrote live); a file of an older writer kept none of them: its
 * times stay CLOCK_MONOTONIC of the capturing host. */
static struct stacksnap_ctf_writer *open_ctf(const struct options *o,
					      struct stacksnap_ctx *ctx,
					      struct stacksnap_saved *s)
{
	STACKSNAP_OPTS(stacksnap_saved_info, info);

	stacksnap_saved__info(s, &info);
	if (!info.clock_offset_ns)
		fprintf(stderr, "stacksnap show: warning: the events file does not say "
			"how its clock relates to wall-clock time (an older stacksnap "
			"wrote it): the CTF trace's times are CLOCK_MONOTONIC\n");
	STACKSNAP_OPTS(stacksnap_ctf_writer_opts, copts,
		       .clock_offset_ns = info.clock_offset_ns,
		       .no_clock_offset = !info.clock_offset_ns,
		       .boot_id = info.boot_id ? info.boot_id : "",
		       .hostname = info.hostname, .kernel_release = info.kernel,
		       .sym_flags = o->no_demangle ? STACKSNAP_SYM_NO_DEMANGLE : 0);
	return stacksnap_ctf_writer__new(ctx, o->out.output, &copts);
}

/* The lost-events records written before event i (from *next on) as the
 * CTF trace's discarded-event counts, where the live trace gave them.
 * Returns 0 or -errno. */
static int ctf_lost(struct stacksnap_ctf_writer *ctf, const struct stacksnap_saved *s,
		    size_t *next, size_t i)
{
	for (; *next < stacksnap_saved__lost_count(s); ++*next) {
		STACKSNAP_OPTS(stacksnap_saved_lost, l);
		int r = stacksnap_saved__lost(s, *next, &l);

		if (r)
			return r;
		if (l.before_event > i)
			break;
		if ((r = stacksnap_ctf_writer__discarded(ctf, l.cpu, l.total)))
			return r;
	}
	return 0;
}

/* An events file (stacksnap trace --save): every event unwound again
 * from its saved registers and stack, against its process's address space
 * of the event's generation, as the trace unwound it (its max_frames),
 * and printed as the live trace printed it. */
static int print_events(const struct options *o, struct stacksnap_ctx *ctx,
			struct stacksnap_saved *s, const char *file)
{
	unsigned max_frames = o->max_frames ? o->max_frames
			      : stacksnap_saved__trace_max_frames(s);
	STACKSNAP_OPTS(stacksnap_unwind_opts, uopts, .max_frames = max_frames,
		       .stack_scan = o->stack_scan);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(&uopts);
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(NULL, 0, 0);
	struct stacksnap_frame *frames = calloc(max_frames ? max_frames : 1, sizeof(*frames));
	struct trace_printer p = { .print = o, .out = stdout, .json = o->json };
	size_t n = stacksnap_saved__event_count(s);
	struct stacksnap_ctf_writer *ctf = NULL;
	size_t next_lost = 0;
	int rc = EXIT_OK;

	STACKSNAP_OPTS(stacksnap_stacks_opts, sopts, .sample_type = "events");
	if (!uw || !mem || !frames ||
	    ((o->count || o->folded || o->out.format_set) &&
	     !(p.counts = stacksnap_stacks__new(&sopts)))) {
		fprintf(stderr, "stacksnap: out of memory\n");
		rc = EXIT_ERROR;
		goto out;
	}
	/* A JVM's compiled frames walked as the trace walked them. */
	if (stacksnap_saved__runtime_steppers(s, uw) < 0) {
		fprintf(stderr, "stacksnap: out of memory\n");
		rc = EXIT_ERROR;
		goto out;
	}
	if (o->out.ctf && !(ctf = open_ctf(o, ctx, s))) {
		rc = EXIT_ERROR; /* the log named the directory */
		goto out;
	}
	/* What the events are, as a snapshot's show says it: the text's two
	 * lines, or in --json a first line {"snapshot": {...}}, before the
	 * events (not before counts, folded stacks or a profile). */
	if (!ctf && !p.counts) {
		STACKSNAP_OPTS(stacksnap_saved_info, info);
		const struct saved_about about = { .info = &info, .file = file, .events = true };

		stacksnap_saved__info(s, &info);
		if (o->json) {
			fputs("{\"snapshot\":", stdout);
			print_saved_json(stdout, &about);
			fputs("}\n", stdout);
		} else
			print_saved_header(stdout, &about);
	}
	for (size_t i = 0; i < n; i++) {
		STACKSNAP_OPTS(stacksnap_saved_event, ev);
		struct trace_line line;
		int nf;

		if (stacksnap_saved__event(s, i, &ev)) {
			rc = EXIT_ERROR; /* checked when opened: out of memory */
			break;
		}
		line = (struct trace_line){
			.name = ev.name, .time_ns = ev.time_ns, .comm = ev.comm,
			.pid = ev.pid, .tid = ev.tid, .cpu = ev.cpu,
			.fields = ev.fields, .nfields = (int)ev.nfields,
			.stack_bytes = ev.stack_bytes, .as = ev.as,
			.frames = ev.frames, .nframes = ev.nframes, .end = ev.end,
			.rframes = o->runtime == RUNTIME_OFF ? NULL : ev.rframes,
			.nrframes = o->runtime == RUNTIME_OFF ? 0 : ev.nrframes,
		};
		if (ev.stack && ev.as) {
			stacksnap_mem__set_copy(mem, ev.stack, ev.stack_len, ev.stack_base);
			/* The normal stack below a handler on an alternate one. */
			stacksnap_mem__set_more(mem, ev.more_stacks, ev.nmore_stacks);
			nf = stacksnap_unwind(uw, ev.as, &ev.regs, mem, frames, max_frames,
					      &line.end);
			if (nf < 0) { /* as the live trace says it */
				nf = 0;
				line.end = STACKSNAP_END_BAD_MEMORY;
			}
			line.frames = frames;
			line.nframes = nf;
		}
		if (ctf) {
			if (ctf_lost(ctf, s, &next_lost, i)) {
				rc = EXIT_ERROR; /* said at close */
				break;
			}
			STACKSNAP_OPTS(stacksnap_ctf_event, cev, .name = line.name,
				       .time_ns = line.time_ns, .pid = line.pid,
				       .tid = line.tid, .cpu = line.cpu, .comm = line.comm,
				       .fields = line.fields, .nfields = (size_t)line.nfields,
				       .frames = line.frames, .nframes = line.nframes,
				       .end = line.end, .as = line.as);

			if (stacksnap_ctf_writer__add(ctf, &cev)) {
				rc = EXIT_ERROR; /* said at close */
				break;
			}
			continue;
		}
		if (trace_print_event(&p, &line)) {
			fprintf(stderr, "stacksnap: out of memory\n");
			rc = EXIT_ERROR;
			break;
		}
	}
	if (ctf && rc == EXIT_OK && ctf_lost(ctf, s, &next_lost, n))
		rc = EXIT_ERROR;
	if (ctf && stacksnap_ctf_writer__close(ctf))
		rc = EXIT_ERROR; /* the log named the directory */
	ctf = NULL;
	if (p.counts && rc == EXIT_OK) {
		if (o->out.format_set)
			rc = profile_out_write(&o->out, "stacksnap show", NULL, p.counts,
					       "stacksnap show");
		else
			rc = trace_print_counts_said(&p, o->folded, "stacksnap show", NULL);
	}
out:
	stacksnap_ctf_writer__close(ctf);
	stacksnap_stacks__free(p.counts);
	trace_printer_free(&p);
	free(frames);
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
	return cli_close_output(stdout, NULL, rc);
}

/* Warnings are shown without -v here: they name the modules that were
 * not found, which is why frames stay addresses. */
static void saved_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	if (level == STACKSNAP_LOG_WARN && !cli_verbose)
		fprintf(stderr, "stacksnap: warning: %s\n", msg);
	else
		cli_log(level, msg, user);
}

static struct stacksnap_ctx *saved_ctx(const struct options *o)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = saved_log,
		       .log_level = o->verbose ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_WARN,
		       .debug_dirs = o->debug_dirs,
		       .cache_dir = o->no_cache ? NULL : default_cache_dir(),
		       .debuginfod = !o->no_debuginfod);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&copts);

	if (!ctx)
		fprintf(stderr, "stacksnap: %s\n", strerror(errno));
	return ctx;
}

static int run_saved(struct options *o, const char *file, bool core)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_saved *s;
	int rc;

	cli_verbose = o->verbose;
	ctx = saved_ctx(o);
	if (!ctx)
		return EXIT_ERROR;
	STACKSNAP_OPTS(stacksnap_saved_opts, sopts, .exe = o->exe_path);
	s = core ? stacksnap_saved__open_core(ctx, file, &sopts)
		 : stacksnap_saved__open(ctx, file, &sopts);
	if (!s) {
		/* The library said what and where; name the fix for ENOTSUP. */
		if (errno == ENOTSUP)
			fprintf(stderr, "stacksnap: %s: written by a newer stacksnap; "
					"read it with that version\n", file);
		stacksnap_ctx__free(ctx);
		return EXIT_ERROR;
	}
	STACKSNAP_OPTS(stacksnap_saved_info, info);
	stacksnap_saved__info(s, &info);
	o->pid = info.pid;
	if (stacksnap_saved__event_count(s) ||
	    (!core && info.format_version % 100 >= 1 && !stacksnap_saved__thread_count(s)))
		rc = print_events(o, ctx, s, file);
	else if (o->out.ctf) {
		fprintf(stderr, "stacksnap show: %s: --format ctf is for events files "
			"(stacksnap trace --save)\n", file);
		rc = EXIT_USAGE;
	} else if (o->count || o->folded) {
		fprintf(stderr, "stacksnap show: %s: --count and --folded are for events "
			"files (stacksnap trace --save)\n", file);
		rc = EXIT_USAGE;
	} else
		rc = print_saved(o, s, file, core);
	stacksnap_saved__free(s);
	stacksnap_ctx__free(ctx);
	return rc;
}

int show_main(int argc, char **argv)
{
	struct options o;
	const char *file;
	int rc = options_parse_show(&o, argc, argv, &file);

	if (rc)
		return rc < 0 ? EXIT_OK : cli_usage_error();
	if ((rc = cli_json_to_file(&o)))
		return rc;
	return run_saved(&o, file, false);
}

int core_main(struct options *o)
{
	return run_saved(o, o->core_path, true);
}
