/* ss_java_gc.c - test driver: captures a JVM, runs a command (a
 * collection: `jcmd PID GC.run`) between the capture and the naming of
 * its Java frames, then names them, printing the library's warnings: the
 * check that a collection (which may unload classes) between the two is
 * reported.
 *
 *   ss_java_gc PID [CMD...]
 *
 * Prints "runtime java" when the JVM was found, each warning as
 * "warn: MESSAGE", then "frames N" (Java frames of all threads, walked
 * from their copies) and "stale N" (those saying their method is no
 * longer its class's: a class unloaded or redefined meanwhile). Exit
 * status 0, 1 on failure, 2 on bad usage. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stacksnap.h"

static void on_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	if (level <= STACKSNAP_LOG_WARN)
		printf("warn: %s\n", msg);
}

int main(int argc, char **argv)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = on_log,
		       .log_level = STACKSNAP_LOG_WARN);
	struct stacksnap_runtime_info info = { .sz = sizeof(info) };
	struct stacksnap_snapshot *snap;
	struct stacksnap_ctx *ctx;
	long total = 0;

	if (argc < 2)
		return 2;
	ctx = stacksnap_ctx__new(&copts);
	if (!ctx)
		return 1;
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, atoi(argv[1]));

	if (!as)
		return 1;
	STACKSNAP_OPTS(stacksnap_snapshot_opts, sopts, .addrspace = as);
	snap = stacksnap_snapshot__capture(ctx, atoi(argv[1]), &sopts);
	if (!snap)
		return 1;
	if (stacksnap_snapshot__runtime(snap, &info) == 0 &&
	    info.runtime == STACKSNAP_RUNTIME_JAVA)
		printf("runtime java\n");
	fflush(stdout);
	if (argc > 2) {
		pid_t child = fork();

		if (child == 0) {
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		waitpid(child, NULL, 0);
	}
	/* Each thread walked from its copy, as the dump walks it. */
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(NULL, 0, 0);
	static struct stacksnap_frame frames[1024];
	static struct stacksnap_runtime_frame rf[4096];
	long stale = 0;

	if (!uw || !mem)
		return 1;
	stacksnap_snapshot__runtime_steppers(snap, uw);
	for (size_t i = 0; i < stacksnap_snapshot__thread_count(snap); i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, i);
		enum stacksnap_end end;
		int nf = 0, n;

		if (!th->error && th->stack) {
			stacksnap_mem__set_copy(mem, th->stack, th->stack_len,
						th->stack_base);
			nf = stacksnap_unwind(uw, as, &th->regs, mem, frames, 1024,
					      &end);
		}
		n = stacksnap_snapshot__runtime_frames(snap, i, frames,
						       nf > 0 ? (size_t)nf : 0, rf,
						       4096, NULL);
		for (int k = 0; k < n && k < 4096; k++)
			stale += !strncmp(rf[k].function, "?? (Java method no longer", 25);
		if (n > 0)
			total += n;
	}
	printf("frames %ld\nstale %ld\n", total, stale);
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
	stacksnap_addrspace__free(as);
	stacksnap_snapshot__free(snap);
	stacksnap_ctx__free(ctx);
	return 0;
}
