/* main.c - `stacksnap PID`: build the address space (before the freeze),
 * capture every thread, unwind and symbolize from the copies while the
 * target runs again, print. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cxx_throw.h"
#include "dump_multi.h"
#include "help.h"
#include "options.h"
#include "print.h"
#include "print_waits.h"
#include "proc_about.h"
#include "thread_gone.h"
#include "subcommands.h"
#include "stacksnap.h"
#include "monotonic.h"
#include "stop_signal.h"



/* SIGINT, SIGTERM and SIGHUP. While threads may be stopped (in_freeze),
 * the handler only records the signal: the capture polls it, detaches
 * every thread and returns, and we exit. Otherwise nothing of the target
 * is held and the handler exits at once. */
static volatile sig_atomic_t dump_signal, in_freeze;

static const char *signal_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM"
		: sig == SIGHUP ? "SIGHUP" : "a signal";
}

static void on_stop_signal(int sig)
{
	static const char msg[] = "stacksnap: interrupted; no thread is stopped\n";

	dump_signal = sig;
	if (!in_freeze) {
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
		_exit(EXIT_SIGNAL_BASE + sig);
	}
}

static void catch_stop_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < 3; i++)
		sigaddset(&sa.sa_mask, sigs[i]);
	for (size_t i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, NULL);
}

static int interrupted_exit(void)
{
	fprintf(stderr, "stacksnap: interrupted by %s; every thread was "
			"detached\n", signal_name(dump_signal));
	return EXIT_SIGNAL_BASE + dump_signal;
}

/* Reads of /proc/PID/mem for --ptrace --proc-mem. */
static int proc_mem_read(void *user, uint64_t addr, void *buf, size_t len)
{
	ssize_t r = pread(*(int *)user, buf, len, (off_t)addr);

	return r == (ssize_t)len ? 0 : -EFAULT;
}

/* Says on stderr which threads were not captured and why. */
static void report_thread_errors(const struct options *o,
				 struct stacksnap_snapshot *snap)
{
	for (size_t i = 0; i < stacksnap_snapshot__thread_count(snap); i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, i);

		if (th->error == STACKSNAP_THREAD_NOT_STOPPED)
			fprintf(stderr, "stacksnap: pid %d: thread %d (%s, state %c%s) "
					"did not stop within %u ms; not captured\n",
				(int)o->pid, (int)th->tid, th->name,
				th->state ? th->state : '?',
				th->state == 'D' ? ": uninterruptible sleep" : "",
				o->stop_timeout_ms ? o->stop_timeout_ms : 1000);
		else if (th->error == STACKSNAP_THREAD_GONE && !thread_gone(o->pid, th->tid))
			fprintf(stderr, "stacksnap: pid %d: thread %d (%s) could not "
					"be captured (the kernel said it was gone, "
					"but it still exists); not captured\n",
				(int)o->pid, (int)th->tid, th->name);
		else if (th->error && th->error != STACKSNAP_THREAD_GONE &&
			 th->error != STACKSNAP_THREAD_EXITED)
			fprintf(stderr, "stacksnap: pid %d: thread %d (%s): %s\n",
				(int)o->pid, (int)th->tid, th->name,
				thread_error_str(th->error));
	}
}

/* `stacksnap PID` dumps a live process; other jobs are subcommands named by
 * the first argument, each in its own file. */
static const struct subcommand {
	const char *name;
	int (*main)(int argc, char **argv);
} subcommands[] = {
	{ "perf-script", perf_script_main },
	{ "symbolize", symbolize_main },
	{ "watch", watch_main },
	{ "show", show_main },
	{ "trace", trace_main },
	{ "profile", profile_main },
	{ "diff", diff_main },
};

static int dump_main(int argc, char **argv);

/* `stacksnap help [SUBCOMMAND]`: the --help text of either. */
static int help_main(int argc, char **argv)
{
	const char *text = help_text(argc > 1 ? argv[1] : "stacksnap");

	if (argc > 2 || !*text) {
		fprintf(stderr, "stacksnap help: %s%s%s\n",
			argc > 2 ? "one subcommand only" : "no subcommand '",
			argc > 2 ? "" : argv[1], argc > 2 ? "" : "'");
		return cli_usage_error(); /* "Try 'stacksnap --help'": the list */
	}
	fputs(text, stdout);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	static char name[64];

	/* Every message, getopt's included (it starts them with argv[0]),
	 * begins "stacksnap" or "stacksnap SUBCOMMAND", whatever path the
	 * binary was run by. */
	for (size_t i = 0; argc > 1 && i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (!strcmp(argv[1], subcommands[i].name)) {
			snprintf(name, sizeof(name), "stacksnap %s", subcommands[i].name);
			cli_name = name;
			argv[1] = name;
			return subcommands[i].main(argc - 1, argv + 1);
		}
	argv[0] = (char *)"stacksnap";
	if (argc > 1 && !strcmp(argv[1], "help"))
		return help_main(argc - 1, argv + 1);
	/* A word first is a subcommand mistyped or imagined ("stacksnap
	 * record -p 1" said "one PID only"): the dump's operand is a PID. */
	if (argc > 1 && ((argv[1][0] >= 'a' && argv[1][0] <= 'z') ||
			 (argv[1][0] >= 'A' && argv[1][0] <= 'Z'))) {
		fprintf(stderr, "stacksnap: no subcommand '%s' (they are:", argv[1]);
		for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
			fprintf(stderr, " %s", subcommands[i].name);
		fprintf(stderr, "; the dump takes a PID: stacksnap PID)\n");
		return cli_usage_error();
	}
	return dump_main(argc, argv);
}

/* One dump of a live process, from the parsed options to the printed
 * threads. Each step below fills in what the next one reads; every
 * pointer is NULL (mem_fd -1) until its step made it, so dump_free()
 * frees whatever exists at the step that stopped. */
struct dump {
	struct options o;
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct stacksnap_snapshot *snap;
	struct stacksnap_unwinder *uw;
	struct stacksnap_mem *mem;
	int mem_fd;
	struct thread_result *res;	/* n entries, one a captured thread */
	size_t n;
	unsigned max_frames;
	int partial;			/* a thread asked for was not captured */
	struct stacksnap_snapshot_stats st;
	struct stacksnap_nonstop_stats nst;
	struct dump_totals tot;		/* --stats; points at st and nst */
	/* A Go program's goroutines, as printed (none with --threads). */
	const struct stacksnap_goroutine *goroutines;
	size_t ngoroutines;
	struct stacksnap_runtime_info rinfo;
	struct stacksnap_waits *waits;	/* who waits for whom (print_waits.c) */
	struct proc_about about;	/* the header: what the process is */
};

/* What a step returns when the dump goes on; anything else is the exit
 * code the dump ends with. */
#define DUMP_GO_ON (-1)

/* The library context, the target's check and its address space (maps,
 * modules and the vDSO image are read before the freeze). */
static int dump_open(struct dump *d)
{
	const struct options *o = &d->o;

	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = cli_log,
		       .log_level = o->verbose ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_ERROR,
		       .ignore_deleted = o->ignore_deleted,
		       .cache_dir = o->no_cache ? NULL : default_cache_dir());
	d->ctx = stacksnap_ctx__new(&copts);
	if (!d->ctx) {
		fprintf(stderr, "stacksnap: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	stacksnap_ctx__defer_cache_writes(d->ctx, true);
	/* What is wrong with the target, said before anything else fails on
	 * it: no such process, zombie, kernel thread, traced. */
	uint64_t t_check = monotonic_ns();
	if (stacksnap_snapshot__check(d->ctx, o->pid) != 0)
		return exit_code_for_errno(errno);
	int rc_thread = cli_check_not_thread(o->pid);
	if (rc_thread)
		return rc_thread;
	d->tot.check_ns = monotonic_ns() - t_check;
	/* Read before the freeze: during it every thread waits in the
	 * ptrace stop. */
	uint64_t t_about = monotonic_ns();
	int rc_about = proc_about_read(o->pid, &d->about);
	d->tot.about_ns = monotonic_ns() - t_about;
	if (rc_about == 0) {
		d->tot.process_json = proc_about_json;
		d->tot.process_user = &d->about;
	}
	uint64_t t_as = monotonic_ns();
	d->as = stacksnap_addrspace__from_pid(d->ctx, o->pid);
	d->tot.addrspace_ns = monotonic_ns() - t_as;
	if (d->as)
		return DUMP_GO_ON;
	if (errno == EACCES || errno == EPERM)
		return EXIT_NOT_PERMITTED; /* the log said why, once */
	/* It existed a moment ago. */
	int rc = kill(o->pid, 0) != 0 && errno == ESRCH ? EXIT_EXITED : EXIT_ERROR;
	if (rc == EXIT_EXITED)
		fprintf(stderr, "stacksnap: pid %d: the process "
				"exited during the capture\n", (int)o->pid);
	return rc;
}

/* -t TID: when none of the threads asked for exists, no capture is
 * tried (it would end as if the process had exited). */
static int dump_check_threads(const struct options *o)
{
	char path[64];

	for (size_t i = 0; i < o->ntids; i++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)o->pid, (int)o->tids[i]);
		if (!access(path, F_OK))
			return DUMP_GO_ON;
	}
	fprintf(stderr, "stacksnap: pid %d: no thread %d in it (-t; its "
			"threads are in /proc/%d/task)\n", (int)o->pid,
		(int)o->tids[0], (int)o->pid);
	return EXIT_NO_PROCESS;
}

/* The freeze (or, with --ptrace, the hold) and the stack copies. */
static int dump_capture(struct dump *d)
{
	const struct options *o = &d->o;

	if (o->ntids && dump_check_threads(o) != DUMP_GO_ON)
		return EXIT_NO_PROCESS;

	STACKSNAP_OPTS(stacksnap_snapshot_opts, sopts, .stack_size = o->stack_size,
		       .stop_timeout_ms = o->stop_timeout_ms, .proc_mem = o->proc_mem,
		       .tids = o->ntids ? o->tids : NULL, .ntids = o->ntids,
		       .hold = o->ptrace, .no_copy = o->ptrace, .cancel = &dump_signal,
		       .freeze_all = o->freeze_all, .no_realtime = o->no_realtime,
		       .nonstop = o->nonstop, .addrspace = d->as,
		       .goroutines = !o->threads_only,
		       .no_runtime = o->runtime == RUNTIME_OFF);
	in_freeze = 1;
	if (dump_signal) /* came before in_freeze was set */
		return interrupted_exit();
	d->snap = stacksnap_snapshot__capture(d->ctx, o->pid, &sopts);
	if (!d->snap) {
		int err = errno;

		in_freeze = 0;
		if (err == EINTR || dump_signal)
			return interrupted_exit();
		/* It passed the check: ESRCH now means it exited meanwhile
		 * (said once: the library's log may have said so). */
		if (err != ESRCH)
			return exit_code_for_errno(err);
		if (!strstr(cli_last_error, "exited during the capture"))
			fprintf(stderr, "stacksnap: pid %d: the process exited "
					"during the capture\n", (int)o->pid);
		return EXIT_EXITED;
	}
	if (!o->ptrace)
		in_freeze = 0;
	if (dump_signal && !o->ptrace)
		return interrupted_exit();
	d->n = stacksnap_snapshot__thread_count(d->snap);
	d->rinfo.sz = sizeof(d->rinfo);
	if (o->runtime != RUNTIME_OFF &&
	    stacksnap_snapshot__runtime(d->snap, &d->rinfo) == 0) {
		d->tot.runtime = &d->rinfo;
		/* An interpreter whose frames cannot be read says so once. */
		if (d->rinfo.runtime && !d->rinfo.frames && !o->quiet)
			fprintf(stderr, "stacksnap: %s\n", d->rinfo.description);
		else if (d->rinfo.runtime && d->rinfo.state && !o->quiet)
			fprintf(stderr, "stacksnap: Python is %s\n", d->rinfo.state);
		/* A micro version its layout was not tested on says so. */
		else if (d->rinfo.runtime && d->rinfo.description &&
			 (strstr(d->rinfo.description, "; untested") ||
			  strstr(d->rinfo.description, "not shown")) && !o->quiet)
			fprintf(stderr, "stacksnap: %s\n", d->rinfo.description);
	}
	if (o->ntids && d->n < o->ntids) {
		fprintf(stderr, "stacksnap: pid %d: %zu of the %zu threads asked for "
				"do not exist\n", (int)o->pid, o->ntids - d->n, o->ntids);
		d->partial = 1;
	}
	return DUMP_GO_ON;
}

/* --save FILE; with --quiet the dump ends there. */
static int dump_save(struct dump *d)
{
	const struct options *o = &d->o;

	STACKSNAP_OPTS(stacksnap_save_opts, vopts, .encoding = o->encoding,
		       .max_frames = o->max_frames ? o->max_frames : DEFAULT_MAX_FRAMES,
		       .stack_scan = o->stack_scan);
	struct waits_save keep;
	int err;

	if (waits_save_opts(d->waits, d->res, d->n, &vopts, &keep))
		fprintf(stderr, "stacksnap: out of memory: the waits are not saved\n");
	err = stacksnap_snapshot__save(d->snap, d->as, o->save_path, &vopts);
	waits_save_free(&keep);
	if (err)
		return EXIT_ERROR; /* the library said why */
	if (!o->quiet)
		return DUMP_GO_ON;
	report_thread_errors(o, d->snap);
	for (size_t i = 0; i < d->n; i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(d->snap, i);

		if (th->error && !(th->error == STACKSNAP_THREAD_GONE &&
				   thread_gone(o->pid, th->tid)))
			d->partial = 1;
	}
	return d->partial ? EXIT_PARTIAL : EXIT_OK;
}

/* The unwinder, the memory it reads (the stack copies, or with --ptrace
 * the held process itself) and the per-thread results. */
static int dump_unwind_setup(struct dump *d)
{
	const struct options *o = &d->o;

	d->max_frames = o->max_frames ? o->max_frames : DEFAULT_MAX_FRAMES;
	STACKSNAP_OPTS(stacksnap_unwind_opts, uopts, .max_frames = d->max_frames,
		       .stack_scan = o->stack_scan);
	d->uw = stacksnap_unwinder__new(&uopts);
	/* A JVM's compiled frames keep no frame pointer: its stepper walks
	   them (nothing when the target has no runtime, or with
	   --runtime=off: none was looked for). */
	if (d->uw)
		stacksnap_snapshot__runtime_steppers(d->snap, d->uw);
	/* Memory through a captured thread: any shares the address space,
	 * and a main thread that called pthread_exit() has none. */
	pid_t mm = o->pid;

	for (size_t i = 0; i < d->n; i++)
		if (!stacksnap_snapshot__thread(d->snap, i)->error) {
			mm = stacksnap_snapshot__thread(d->snap, i)->tid;
			break;
		}
	if (o->ptrace && o->proc_mem) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/mem", (int)mm);
		d->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		d->mem = d->mem_fd >= 0
			? stacksnap_mem__new_callback(proc_mem_read, &d->mem_fd) : NULL;
	} else if (o->ptrace) {
		d->mem = stacksnap_mem__new_pid(mm);
	} else {
		d->mem = stacksnap_mem__new_copy(NULL, 0, 0);
	}
	d->res = calloc(d->n ? d->n : 1, sizeof(*d->res));
	if (!d->uw || !d->mem || !d->res) {
		fprintf(stderr, "stacksnap: %s\n", d->mem || !o->ptrace ? "out of memory"
				: "cannot read the process's memory");
		return EXIT_ERROR;
	}
	return DUMP_GO_ON;
}

/* The Python frames of thread i, merged against its native frames. */
static int dump_runtime_frames(struct dump *d, size_t i, struct thread_result *r)
{
	int n = stacksnap_snapshot__runtime_frames(d->snap, i, r->frames,
						   (size_t)r->nframes, NULL, 0,
						   &r->rend);

	r->holds_gil = d->rinfo.gil_holder && d->rinfo.gil_holder == r->thread->tid;
	r->rname = stacksnap_snapshot__runtime_thread_name(d->snap, i);
	r->rname_java = d->rinfo.runtime == STACKSNAP_RUNTIME_JAVA;
	if (n <= 0)
		return n < 0 ? n : 0;
	r->rframes = calloc((size_t)n, sizeof(*r->rframes));
	if (!r->rframes)
		return -ENOMEM;
	r->nrframes = (size_t)stacksnap_snapshot__runtime_frames(
		d->snap, i, r->frames, (size_t)r->nframes, r->rframes, (size_t)n,
		&r->rend);
	return 0;
}

/* Unwinds every captured thread; a thread read non-stop whose copy ended
 * the unwind is extended and unwound again. With --ptrace the threads
 * are held until the last one is done, then released. */
static int dump_unwind(struct dump *d)
{
	const struct options *o = &d->o;
	uint64_t t0 = monotonic_ns();

	for (size_t i = 0; i < d->n; i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(d->snap, i);
		struct thread_result *r = &d->res[i];

		if (dump_signal) { /* --ptrace: threads are held */
			stacksnap_snapshot__release(d->snap);
			in_freeze = 0;
			return interrupted_exit();
		}
		r->thread = th;
		if (th->error == STACKSNAP_THREAD_GONE && thread_gone(o->pid, th->tid)) {
			/* Exited while the capture ran: not a partial capture
			 * (counted in --stats, left out of the output). */
			d->tot.gone++;
			continue;
		}
		if (th->error) {
			/* A main thread gone before the dump lost nothing. */
			d->partial |= th->error != STACKSNAP_THREAD_EXITED;
			continue;
		}
		if (!o->ptrace) {
			stacksnap_mem__set_copy(d->mem, th->stack, th->stack_len,
						th->stack_base);
			stacksnap_mem__set_more(d->mem, th->more_stacks,
						th->nmore_stacks);
		}
		if (unwind_thread(r, d->uw, d->as, d->mem, d->max_frames))
			return EXIT_ERROR;
		/* Deeper than the copy: a thread read non-stop that has not
		 * run since gives the rest of its stack, exact, now. */
		if (r->end == STACKSNAP_END_STACK_COPY && th->nonstop &&
		    stacksnap_snapshot__extend(d->snap, i, SIZE_MAX) == 0) {
			stacksnap_mem__set_copy(d->mem, th->stack, th->stack_len,
						th->stack_base);
			free(r->frames);
			if (unwind_thread(r, d->uw, d->as, d->mem, d->max_frames))
				return EXIT_ERROR;
		}
		d->tot.frames += (unsigned)r->nframes;
		if (d->o.runtime != RUNTIME_OFF && dump_runtime_frames(d, i, r)) {
			fprintf(stderr, "stacksnap: out of memory\n");
			return EXIT_ERROR;
		}
	}
	d->tot.unwind_ns = monotonic_ns() - t0;
	if (d->tot.gone)
		d->n = drop_gone_threads(d->o.pid, d->res, d->n);
	if (o->ptrace) {
		stacksnap_snapshot__release(d->snap);
		in_freeze = 0;
		if (dump_signal)
			return interrupted_exit();
	}
	return DUMP_GO_ON;
}

/* Names every frame, then sorts the threads by tid. */
static int dump_symbolize(struct dump *d)
{
	uint64_t t0 = monotonic_ns();

	for (size_t i = 0; i < d->n; i++)
		d->res[i].wchan = proc_about_wchan(&d->about, d->res[i].thread->tid);
	for (size_t i = 0; i < d->n; i++)
		if (symbolize_thread(&d->o, d->as, &d->res[i])) {
			fprintf(stderr, "stacksnap: out of memory\n");
			return EXIT_ERROR;
		}
	d->tot.symbolize_ns = monotonic_ns() - t0;
	/* A thread throwing a C++ exception: its type and what(). */
	if (cxx_throw_read(d->o.pid, d->res, d->n)) {
		fprintf(stderr, "stacksnap: out of memory\n");
		return EXIT_ERROR;
	}
	qsort(d->res, d->n, sizeof(*d->res), thread_result_cmp_tid);
	return DUMP_GO_ON;
}

/* The output: a profile (-o/--format, a sample a thread), JSON or text,
 * and --stats on stderr. */
static int dump_print(struct dump *d, uint64_t start_ns)
{
	const struct options *o = &d->o;
	int rc = EXIT_OK;

	/* A Go program's goroutines (contiguous in the capture). */
	d->ngoroutines = o->threads_only ? 0
		: stacksnap_snapshot__goroutine_count(d->snap);
	d->goroutines = d->ngoroutines
		? stacksnap_snapshot__goroutine(d->snap, 0) : NULL;
	if (o->goroutines_only && !d->ngoroutines)
		fprintf(stderr, "stacksnap: pid %d: no goroutines (not a Go "
				"program, or its list could not be read: -v "
				"says why)\n", (int)o->pid);

	if (o->out.format_set) {
		char title[64];

		snprintf(title, sizeof(title), "stacksnap %d", (int)o->pid);
		/* The output not written (said, naming the file) is the
		 * run's failure, as in every subcommand: EXIT_ERROR. */
		rc = profile_out_threads(&o->out, "stacksnap",
					 d->goroutines, d->ngoroutines, d->as,
					 d->res, o->goroutines_only ? 0 : d->n,
					 title);
	} else if (o->json) {
		d->tot.waits = d->waits;
		/* Only a Go program's output has the key. */
		d->tot.goroutines = d->goroutines;
		d->tot.ngoroutines = d->ngoroutines;
		print_json(stdout, o, d->res, o->goroutines_only ? 0 : d->n,
			   &d->tot);
	} else {
		if (d->tot.process_user)
			proc_about_text(stdout, &d->about);
		if (!o->goroutines_only) {
			print_text(stdout, o, d->res, d->n);
			print_deadlocks_text(stdout, d->waits, d->res, d->n);
		}
		print_goroutines_text(stdout, d->goroutines, d->ngoroutines,
				      o->goroutines_only || !d->n);
	}
	if (o->stats) {
		d->tot.ctx.sz = sizeof(d->tot.ctx);
		stacksnap_ctx__stats(d->ctx, &d->tot.ctx);
		d->tot.total_ns = monotonic_ns() - start_ns;
		print_stats(stderr, &d->tot);
	}
	return rc;
}

/* Every step done: the caches are written by a detached child, and the
 * process exits without freeing. */
static _Noreturn void dump_exit(struct dump *d, int rc)
{
	cli_write_caches_detached(d->ctx);
	/* Done: the kernel drops the memory at once, where freeing it walks
	 * every module, table and name, and after the cache writer's fork
	 * takes a copy-on-write fault (and a TLB shootdown) on each page
	 * free() writes to: ~10% of a cold dump's CPU (issue 16). */
	/* The capture is released as always (threads still seized are let
	 * go with their pending signals, the BPF reader closed): the
	 * target's safety does not rest on our exit. */
	stacksnap_snapshot__free(d->snap);
	rc = cli_close_output(stdout, NULL, rc);
	fflush(stderr);
	_exit(rc);
}

/* A step stopped the dump with rc: frees what the steps made. */
static int dump_free(struct dump *d, int rc)
{
	thread_results_free(d->res, d->n);
	stacksnap_mem__free(d->mem);
	if (d->mem_fd >= 0)
		close(d->mem_fd);
	stacksnap_unwinder__free(d->uw);
	stacksnap_snapshot__free(d->snap);
	stacksnap_addrspace__free(d->as);
	stacksnap_ctx__free(d->ctx);
	proc_about_free(&d->about);
	stacksnap_waits__free(d->waits);
	return cli_close_output(stdout, NULL, rc);
}

/* Every step of one dump; *printed when it got to the output. Returns
 * the dump's exit code. */
static int dump_steps(struct dump *d, uint64_t start_ns, bool *printed)
{
	int rc;

	*printed = false;
	d->tot.snap = &d->st;
	d->tot.nonstop = &d->nst;
	if ((rc = dump_open(d)) != DUMP_GO_ON ||
	    (rc = dump_capture(d)) != DUMP_GO_ON ||
	    (d->o.save_path && d->o.quiet && (rc = dump_save(d)) != DUMP_GO_ON) ||
	    (rc = dump_unwind_setup(d)) != DUMP_GO_ON ||
	    (rc = dump_unwind(d)) != DUMP_GO_ON)
		return rc;
	stacksnap_snapshot__stats(d->snap, &d->st);
	stacksnap_snapshot__nonstop_stats(d->snap, &d->nst);
	report_thread_errors(&d->o, d->snap);
	if ((rc = dump_symbolize(d)) != DUMP_GO_ON)
		return rc;
	/* After the thaw: the holders are read from the running process. */
	uint64_t t_waits = monotonic_ns();
	if (!d->o.out.format_set && !d->o.no_waits) /* a profile has no place for them */
		d->waits = waits_build(d->ctx, d->o.pid, d->as, NULL, false, NULL,
				       d->rinfo.gil_holder, d->res, d->n);
	d->tot.waits_ns = monotonic_ns() - t_waits;
	/* --save after the waits, which the file keeps (-q saved before the
	 * unwind: it keeps none). */
	if (d->o.save_path && !d->o.quiet && (rc = dump_save(d)) != DUMP_GO_ON)
		return rc;
	if (d->o.waits_fd)
		waits_write_edges(d->o.waits_fd, d->o.pid, d->res, d->n);
	*printed = true;
	rc = dump_print(d, start_ns);
	return rc ? rc : d->partial ? EXIT_PARTIAL : EXIT_OK;
}

/* One process of several (dump_multi.c): its whole dump, freed after. */
static int dump_one(const struct options *o, pid_t pid, void *user, bool *printed)
{
	struct dump d = { .mem_fd = -1, .nst = { .sz = sizeof(d.nst) } };
	int rc;

	(void)user;
	d.o = *o;
	d.o.pid = pid;
	rc = dump_steps(&d, monotonic_ns(), printed);
	if (d.ctx)
		cli_write_caches_detached(d.ctx);
	return dump_free(&d, rc);
}

static int dump_main(int argc, char **argv)
{
	struct dump d = { .mem_fd = -1, .nst = { .sz = sizeof(d.nst) } };
	uint64_t start_ns = monotonic_ns();
	bool printed;
	int rc;

	rc = options_parse(&d.o, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : cli_usage_error();
	cli_verbose = d.o.verbose;
	if ((rc = cli_json_to_file(&d.o)))
		return rc;
	if (d.o.core_path)
		return core_main(&d.o);
	if (d.o.follow)
		return follow_main(&d.o, argc, argv);
	/* Threads are seized, not SIGSTOPped: if we die the kernel detaches
	 * them and they run on. Ignore SIGPIPE so a closed pager ends the
	 * output, not the process, mid-capture. */
	signal(SIGPIPE, SIG_IGN);
	catch_stop_signals();
	if (d.o.npids > 1 || d.o.pgrep)
		return dump_multi(&d.o, dump_one, NULL);
	rc = dump_steps(&d, start_ns, &printed);
	if (!printed)
		return dump_free(&d, rc);
	dump_exit(&d, rc);
}
