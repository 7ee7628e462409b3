/* main.c - `stacksnap PID`: build the address space (before the freeze),
 * capture every thread, unwind and symbolize from the copies while the
 * target runs again, print. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "options.h"
#include "print.h"
#include "subcommands.h"
#include "stacksnap.h"

static bool verbose;

static void log_to_stderr(enum stacksnap_log_level level, const char *msg,
			  void *user)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	if (level <= STACKSNAP_LOG_ERROR || verbose)
		fprintf(stderr, "stacksnap: %s: %s\n", names[level], msg);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int exit_code_for(int err)
{
	switch (err) {
	case ESRCH: return EXIT_NO_PROCESS;
	case EPERM: case EACCES: return EXIT_NOT_PERMITTED;
	case EBUSY: return EXIT_TRACED;
	case ECHILD: return EXIT_ZOMBIE;
	case EINVAL: return EXIT_KERNEL_THREAD;
	}
	return EXIT_ERROR;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct thread_result *x = a, *y = b;

	return (x->thread->tid > y->thread->tid) - (x->thread->tid < y->thread->tid);
}

/* `stacksnap PID` dumps a live process; other jobs are subcommands named by
 * the first argument, each in its own file. */
static const struct subcommand {
	const char *name;
	int (*main)(int argc, char **argv);
} subcommands[] = {
	{ "perf-script", perf_script_main },
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
	struct dump_totals tot = { .snap = &st };
	size_t n = 0;
	int rc, partial = 0;

	rc = options_parse(&o, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	verbose = o.verbose;
	/* Threads are seized, not SIGSTOPped: if we die here the kernel
	 * detaches them and they run on. Ignore SIGPIPE so a closed pager
	 * ends the output, not the process, mid-capture. */
	signal(SIGPIPE, SIG_IGN);

	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = log_to_stderr,
		       .log_level = o.verbose ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_ERROR);
	ctx = stacksnap_ctx__new(&copts);
	if (!ctx) {
		fprintf(stderr, "stacksnap: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	/* Maps, modules and the vDSO image are read before the freeze. */
	as = stacksnap_addrspace__from_pid(ctx, o.pid);
	if (!as) {
		rc = exit_code_for(errno);
		if (errno == ENOENT)
			rc = EXIT_NO_PROCESS;
		goto out;
	}
	STACKSNAP_OPTS(stacksnap_snapshot_opts, sopts, .stack_size = o.stack_size,
		       .stop_timeout_ms = o.stop_timeout_ms, .proc_mem = o.proc_mem,
		       .tids = o.ntids ? o.tids : NULL, .ntids = o.ntids);
	snap = stacksnap_snapshot__capture(ctx, o.pid, &sopts);
	if (!snap) {
		rc = errno == ESRCH ? (kill(o.pid, 0) == 0 || errno != ESRCH
					       ? EXIT_EXITED : EXIT_NO_PROCESS)
				    : exit_code_for(errno);
		goto out;
	}
	stacksnap_snapshot__stats(snap, &st);
	n = stacksnap_snapshot__thread_count(snap);
	if (o.ntids && n < o.ntids) {
		fprintf(stderr, "stacksnap: pid %d: %zu of the %zu threads asked for "
				"do not exist\n", (int)o.pid, o.ntids - n, o.ntids);
		partial = 1;
	}
	STACKSNAP_OPTS(stacksnap_unwind_opts, uopts, .max_frames = o.max_frames,
		       .stack_scan = o.stack_scan);
	uw = stacksnap_unwinder__new(&uopts);
	mem = stacksnap_mem__new_copy(NULL, 0, 0);
	res = calloc(n ? n : 1, sizeof(*res));
	unsigned max_frames = o.max_frames ? o.max_frames : 1024;
	if (!uw || !mem || !res) {
		rc = EXIT_ERROR;
		fprintf(stderr, "stacksnap: out of memory\n");
		goto out;
	}
	uint64_t t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, i);

		res[i].thread = th;
		if (th->error) {
			partial = 1;
			continue;
		}
		res[i].frames = calloc(max_frames, sizeof(*res[i].frames));
		if (!res[i].frames) {
			rc = EXIT_ERROR;
			goto out;
		}
		stacksnap_mem__set_copy(mem, th->stack, th->stack_len, th->stack_base);
		res[i].nframes = stacksnap_unwind(uw, as, &th->regs, mem, res[i].frames,
						  max_frames, &res[i].end);
		if (res[i].nframes < 0) {
			res[i].nframes = 0;
			res[i].end = STACKSNAP_END_BAD_CFI;
		}
		tot.frames += (unsigned)res[i].nframes;
	}
	tot.unwind_ns = now_ns() - t0;
	t0 = now_ns();
	for (size_t i = 0; i < n; i++)
		if (symbolize_thread(&o, as, &res[i])) {
			rc = EXIT_ERROR;
			fprintf(stderr, "stacksnap: out of memory\n");
			goto out;
		}
	tot.symbolize_ns = now_ns() - t0;
	qsort(res, n, sizeof(*res), cmp_tid);
	if (o.json)
		print_json(stdout, &o, res, n, &tot);
	else
		print_text(stdout, &o, res, n);
	if (o.stats)
		print_stats(stderr, &tot);
	rc = partial ? EXIT_PARTIAL : EXIT_OK;
out:
	for (size_t i = 0; res && i < n; i++) {
		free(res[i].frames);
		free(res[i].out);
	}
	free(res);
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
	stacksnap_snapshot__free(snap);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	if (fflush(stdout) != 0 && rc == EXIT_OK)
		rc = EXIT_ERROR;
	return rc;
}
