/* target.h - shared helpers of the gdb-comparison target programs: keeping
 * frames alive under -O3 without frame pointers, announcing readiness to
 * the harness, and blocking forever in a known place. */
#ifndef SS_TARGET_H
#define SS_TARGET_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every function of a chain must be a real frame, or gdb and stacksnap
 * would both be right to show nothing of it. */
#define NOINLINE __attribute__((noinline, noclone))
#if defined(__clang__)
#undef NOINLINE
#define NOINLINE __attribute__((noinline))
#endif

/* After a call, this keeps the call from becoming a tail jump (which would
 * take the caller's frame off the stack) and from being merged away. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* A target that outlives its harness (killed with SIGKILL, say) must not
 * linger: the default action of SIGALRM ends it. Long enough for the
 * longest test (cli_never_harm's 200 killed dumps of one target took over
 * 180 s at load 100+). */
#define TARGET_LIFETIME_SECONDS 300

static inline void target_init(void)
{
	alarm(TARGET_LIFETIME_SECONDS);
	setvbuf(stdout, NULL, _IONBF, 0);
}

/* The harness reads this one line from our stdout, then checks that every
 * thread is blocked; nthreads lets it wait until they all exist. A raw
 * write keeps stdio's locks out of a stack we may be standing on. */
static inline void target_ready(int nthreads)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "ready %d\n", nthreads);

	if (write(STDOUT_FILENO, line, (size_t)n) != n)
		_exit(3);
}

#endif
