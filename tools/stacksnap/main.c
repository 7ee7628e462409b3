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

#include "options.h"
#include "print.h"
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
		else if (th->error && th->error != STACKSNAP_THREAD_GONE)
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

int main(int argc, char **argv)
{
	for (size_t i = 0; argc > 1 && i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (!strcmp(argv[1], subcommands[i].name))
			return subcommands[i].main(argc - 1, argv + 1);
	return dump_main(argc, argv);
}

static int dump_main(int argc, char **argv)
{
	struct options o;
	struct stacksnap_ctx *ctx = NULL;
	struct stacksnap_addrspace *as = NULL;
	struct stacksnap_snapshot *snap = NULL;
	struct stacksnap_unwinder *uw = NULL;
	struct stacksnap_mem *mem = NULL;
	struct thread_result *res = NULL;
	struct stacksnap_snapshot_stats st;
	STACKSNAP_OPTS(stacksnap_nonstop_stats, nst);
	struct dump_totals tot = { .snap = &st, .nonstop = &nst };
	size_t n = 0;
	int rc, partial = 0, mem_fd = -1;

	uint64_t start_ns = monotonic_ns();

	rc = options_parse(&o, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	cli_verbose = o.verbose;
	if (o.core_path)
		return core_main(&o);
	/* Threads are seized, not SIGSTOPped: if we die the kernel detaches
	 * them and they run on. Ignore SIGPIPE so a closed pager ends the
	 * output, not the process, mid-capture. */
	signal(SIGPIPE, SIG_IGN);
	catch_stop_signals();

	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = cli_log,
		       .log_level = o.verbose ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_ERROR,
		       .ignore_deleted = o.ignore_deleted,
		       .cache_dir = o.no_cache ? NULL : default_cache_dir());
	ctx = stacksnap_ctx__new(&copts);
	if (!ctx) {
		fprintf(stderr, "stacksnap: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	stacksnap_ctx__defer_cache_writes(ctx, true);
	/* What is wrong with the target, said before anything else fails on
	 * it: no such process, zombie, kernel thread, traced. */
	uint64_t t_check = monotonic_ns();
	if (stacksnap_snapshot__check(ctx, o.pid) != 0) {
		rc = exit_code_for_errno(errno);
		goto out;
	}
	tot.check_ns = monotonic_ns() - t_check;
	/* Maps, modules and the vDSO image are read before the freeze. */
	uint64_t t_as = monotonic_ns();
	as = stacksnap_addrspace__from_pid(ctx, o.pid);
	tot.addrspace_ns = monotonic_ns() - t_as;
	if (!as) {
		if (errno == EACCES || errno == EPERM) {
			fprintf(stderr, "stacksnap: pid %d: not permitted to read "
					"its memory (run as root or as the process "
					"owner, or set kernel.yama.ptrace_scope=0)\n",
				(int)o.pid);
			rc = EXIT_NOT_PERMITTED;
		} else {
			/* It existed a moment ago. */
			rc = kill(o.pid, 0) != 0 && errno == ESRCH ? EXIT_EXITED
								   : EXIT_ERROR;
			if (rc == EXIT_EXITED)
				fprintf(stderr, "stacksnap: pid %d: the process "
						"exited during the capture\n",
					(int)o.pid);
		}
		goto out;
	}
	STACKSNAP_OPTS(stacksnap_snapshot_opts, sopts, .stack_size = o.stack_size,
		       .stop_timeout_ms = o.stop_timeout_ms, .proc_mem = o.proc_mem,
		       .tids = o.ntids ? o.tids : NULL, .ntids = o.ntids,
		       .hold = o.ptrace, .no_copy = o.ptrace, .cancel = &dump_signal,
		       .freeze_all = o.freeze_all, .no_realtime = o.no_realtime,
		       .nonstop = o.nonstop, .addrspace = as);
	in_freeze = 1;
	if (dump_signal) { /* came before in_freeze was set */
		rc = interrupted_exit();
		goto out;
	}
	snap = stacksnap_snapshot__capture(ctx, o.pid, &sopts);
	if (!snap) {
		int err = errno;

		in_freeze = 0;
		if (err == EINTR || dump_signal) {
			rc = interrupted_exit();
			goto out;
		}
		/* It passed the check: ESRCH now means it exited meanwhile. */
		rc = err == ESRCH ? EXIT_EXITED : exit_code_for_errno(err);
		if (rc == EXIT_EXITED)
			fprintf(stderr, "stacksnap: pid %d: the process exited "
					"during the capture\n", (int)o.pid);
		goto out;
	}
	if (!o.ptrace)
		in_freeze = 0;
	if (dump_signal && !o.ptrace) {
		rc = interrupted_exit();
		goto out;
	}
	n = stacksnap_snapshot__thread_count(snap);
	if (o.ntids && n < o.ntids) {
		fprintf(stderr, "stacksnap: pid %d: %zu of the %zu threads asked for "
				"do not exist\n", (int)o.pid, o.ntids - n, o.ntids);
		partial = 1;
	}
	if (o.save_path) {
		STACKSNAP_OPTS(stacksnap_save_opts, vopts, .encoding = o.encoding,
			       .max_frames = o.max_frames, .stack_scan = o.stack_scan);
		if (stacksnap_snapshot__save(snap, as, o.save_path, &vopts)) {
			rc = EXIT_ERROR; /* the library said why */
			goto out;
		}
		if (o.quiet) {
			report_thread_errors(&o, snap);
			for (size_t i = 0; i < n; i++)
				if (stacksnap_snapshot__thread(snap, i)->error)
					partial = 1;
			rc = partial ? EXIT_PARTIAL : EXIT_OK;
			goto out;
		}
	}
	STACKSNAP_OPTS(stacksnap_unwind_opts, uopts, .max_frames = o.max_frames,
		       .stack_scan = o.stack_scan);
	uw = stacksnap_unwinder__new(&uopts);
	if (o.ptrace && o.proc_mem) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/mem", (int)o.pid);
		mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		mem = mem_fd >= 0 ? stacksnap_mem__new_callback(proc_mem_read, &mem_fd)
				  : NULL;
	} else if (o.ptrace) {
		mem = stacksnap_mem__new_pid(o.pid);
	} else {
		mem = stacksnap_mem__new_copy(NULL, 0, 0);
	}
	res = calloc(n ? n : 1, sizeof(*res));
	unsigned max_frames = o.max_frames ? o.max_frames : 1024;
	if (!uw || !mem || !res) {
		rc = EXIT_ERROR;
		fprintf(stderr, "stacksnap: %s\n", mem || !o.ptrace ? "out of memory"
				: "cannot read the process's memory");
		goto out;
	}
	uint64_t t0 = monotonic_ns();
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, i);

		if (dump_signal) { /* --ptrace: threads are held */
			stacksnap_snapshot__release(snap);
			in_freeze = 0;
			rc = interrupted_exit();
			goto out;
		}
		res[i].thread = th;
		if (th->error) {
			partial = 1;
			continue;
		}
		if (!o.ptrace)
			stacksnap_mem__set_copy(mem, th->stack, th->stack_len,
						th->stack_base);
		if (unwind_thread(&res[i], uw, as, mem, max_frames)) {
			rc = EXIT_ERROR;
			goto out;
		}
		/* Deeper than the copy: a thread read non-stop that has not
		 * run since gives the rest of its stack, exact, now. */
		if (res[i].end == STACKSNAP_END_STACK_COPY && th->nonstop &&
		    stacksnap_snapshot__extend(snap, i, SIZE_MAX) == 0) {
			stacksnap_mem__set_copy(mem, th->stack, th->stack_len,
						th->stack_base);
			free(res[i].frames);
			if (unwind_thread(&res[i], uw, as, mem, max_frames)) {
				rc = EXIT_ERROR;
				goto out;
			}
		}
		tot.frames += (unsigned)res[i].nframes;
	}
	tot.unwind_ns = monotonic_ns() - t0;
	if (o.ptrace) {
		stacksnap_snapshot__release(snap);
		in_freeze = 0;
		if (dump_signal) {
			rc = interrupted_exit();
			goto out;
		}
	}
	stacksnap_snapshot__stats(snap, &st);
	stacksnap_snapshot__nonstop_stats(snap, &nst);
	report_thread_errors(&o, snap);
	t0 = monotonic_ns();
	for (size_t i = 0; i < n; i++)
		if (symbolize_thread(&o, as, &res[i])) {
			rc = EXIT_ERROR;
			fprintf(stderr, "stacksnap: out of memory\n");
			goto out;
		}
	tot.symbolize_ns = monotonic_ns() - t0;
	qsort(res, n, sizeof(*res), thread_result_cmp_tid);
	if (o.out.format_set) { /* -o/--format: a profile, a sample a thread */
		char title[64];

		snprintf(title, sizeof(title), "stacksnap %d", (int)o.pid);
		if (profile_out_threads(&o.out, "stacksnap", as, res, n, title))
			rc = EXIT_ERROR;
	} else if (o.json)
		print_json(stdout, &o, res, n, &tot);
	else
		print_text(stdout, &o, res, n);
	if (o.stats) {
		tot.ctx.sz = sizeof(tot.ctx);
		stacksnap_ctx__stats(ctx, &tot.ctx);
		tot.total_ns = monotonic_ns() - start_ns;
		print_stats(stderr, &tot);
	}
	rc = partial ? EXIT_PARTIAL : EXIT_OK;
	cli_write_caches_detached(ctx);
	/* Done: the kernel drops the memory at once, where freeing it walks
	 * every module, table and name, and after the cache writer's fork
	 * takes a copy-on-write fault (and a TLB shootdown) on each page
	 * free() writes to: ~10% of a cold dump's CPU (issue 16). */
	/* The capture is released as always (threads still seized are let
	 * go with their pending signals, the BPF reader closed): the
	 * target's safety does not rest on our exit. */
	stacksnap_snapshot__free(snap);
	if (fflush(stdout) != 0)
		rc = EXIT_ERROR;
	fflush(stderr);
	_exit(rc);
out:
	thread_results_free(res, n);
	stacksnap_mem__free(mem);
	if (mem_fd >= 0)
		close(mem_fd);
	stacksnap_unwinder__free(uw);
	stacksnap_snapshot__free(snap);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	if (fflush(stdout) != 0 && rc == EXIT_OK)
		rc = EXIT_ERROR;
	return rc;
}
