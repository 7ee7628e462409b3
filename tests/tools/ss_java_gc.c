/* ss_java_gc.c - test driver: captures a JVM, runs a command (a
 * collection: `jcmd PID GC.run`) between the capture and the naming of
 * its Java frames, then names them, printing the library's warnings: the
 * check that a collection (which may unload classes) between the two is
 * reported.
 *
 *   ss_java_gc PID [CMD...]
 *
 * Prints "runtime java" when the JVM was found, each warning as
 * "warn: MESSAGE", then "frames N" (Java frames of all threads). Exit
 * status 0, 1 on failure, 2 on bad usage. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
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
	snap = stacksnap_snapshot__capture(ctx, atoi(argv[1]), NULL);
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
	/* No native frames: the naming's check alone. */
	for (size_t i = 0; i < stacksnap_snapshot__thread_count(snap); i++) {
		int n = stacksnap_snapshot__runtime_frames(snap, i, NULL, 0, NULL,
							   0, NULL);
		if (n > 0)
			total += n;
	}
	printf("frames %ld\n", total);
	stacksnap_snapshot__free(snap);
	stacksnap_ctx__free(ctx);
	return 0;
}
