/* perf-sample-unwind.c - how a profiler embeds libstacksnap: one context,
 * one process table and one unwinder for the whole run; the address space
 * of each process is described once (here from a perf.data file's
 * MMAP/COMM/FORK/EXIT records; an eBPF profiler would call
 * stacksnap_procs__attach_pid() when it first sees a pid), then each
 * sample (registers + a copy of the user stack) is unwound and
 * symbolized. Build:
 *   cc -o perf-sample-unwind perf-sample-unwind.c $(pkg-config --cflags --libs stacksnap)
 * Run: perf record --call-graph dwarf -o perf.data PROGRAM
 *      ./perf-sample-unwind perf.data */
#include <inttypes.h>
#include <stdio.h>

#include <stacksnap.h>

static void print_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	if (level <= STACKSNAP_LOG_ERROR)
		fprintf(stderr, "%s\n", msg);
}

int main(int argc, char **argv)
{
	struct stacksnap_frame frames[128];
	struct stacksnap_perf_event ev;
	enum stacksnap_end end;
	int rc = 0, r;

	if (argc != 2) {
		fprintf(stderr, "usage: %s perf.data\n", argv[0]);
		return 1;
	}
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = print_log);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&copts);
	struct stacksnap_procs *procs = stacksnap_procs__new(ctx, NULL);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	struct stacksnap_perf_data *pd = stacksnap_perf_data__open(ctx, argv[1], NULL);
	if (!ctx || !procs || !uw || !pd)
		return 1;
	while ((r = stacksnap_perf_data__next(pd, &ev)) > 0) {
		if (ev.type != STACKSNAP_PERF_SAMPLE) {
			/* mmap, fork, exec (COMM), exit: keep the processes' maps. */
			stacksnap_procs__apply_perf_event(procs, &ev);
			continue;
		}
		if (!ev.regs_abi)
			continue; /* a kernel thread: no user stack */
		STACKSNAP_OPTS(stacksnap_sample, s, .pid = ev.pid, .tid = ev.tid,
			       .perf_regs_mask = ev.regs_mask, .perf_regs = ev.regs,
			       .stack = ev.stack, .stack_len = ev.stack_len);
		int n = stacksnap_procs__unwind_sample(procs, uw, &s, frames, 128, &end);
		struct stacksnap_addrspace *as = stacksnap_procs__addrspace(procs, ev.pid);
		const char *comm = stacksnap_procs__comm_of(procs, ev.tid);

		printf("%s %d: %d frames (%s)\n", comm ? comm : "?", (int)ev.tid, n,
		       stacksnap_end__str(end));
		for (int i = 0; i < n; i++) {
			struct stacksnap_sym sym;
			bool is_return = stacksnap_frame__is_return(&frames[i]);

			if (stacksnap_addrspace__symbolize(as, frames[i].pc, is_return, 0,
							   &sym, 1) > 0 && sym.function)
				printf("  #%-2d %#" PRIx64 " %s\n", i, frames[i].pc, sym.function);
			else
				printf("  #%-2d %#" PRIx64 " ??\n", i, frames[i].pc);
		}
	}
	if (r < 0)
		rc = 1; /* the log callback named the offset */
	stacksnap_perf_data__free(pd);
	stacksnap_unwinder__free(uw);
	stacksnap_procs__free(procs);
	stacksnap_ctx__free(ctx);
	return rc;
}
