/* app.c - an LTTng-UST traced program that records its call stack in
 * events with libstacksnap's in-process backtrace: from ordinary code and
 * from a SIGPROF handler (the interrupted context). At start-up it saves
 * its /proc/self/maps (argv[1]), so that the addresses can be symbolized
 * after it has exited: `stacksnap symbolize --maps FILE`. run.sh shows the
 * whole flow. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <stacksnap.h>

#include "tp.h"

#define MAXF 64
#define NOINLINE __attribute__((noinline))

static void record(const char *where, void **ips, int n)
{
	void *g[MAXF];
	int gn = where[0] == 's' ? 0 : backtrace(g, MAXF); /* glibc: not in a handler */

	lttng_ust_tracepoint(stacksnap_example, backtrace, where,
			     (const uint64_t *)ips, (unsigned)(n > 0 ? n : 0),
			     (const uint64_t *)g, (unsigned)gn);
}

static volatile sig_atomic_t samples;

/* A sampling profiler's handler: the interrupted stack, recorded. */
static void on_sigprof(int sig, siginfo_t *si, void *uc)
{
	void *ips[MAXF];
	int n = stacksnap_backtrace_ucontext(uc, ips, MAXF);

	record("sigprof", ips, n);
	samples++;
}

static NOINLINE void example_leaf(int i)
{
	void *ips[MAXF];
	int n = stacksnap_backtrace(ips, MAXF);

	record("example_leaf", ips, n);
	__asm__ volatile("" ::: "memory");
}

static NOINLINE void example_middle(int i)
{
	example_leaf(i + 1);
	__asm__ volatile("" ::: "memory");
}

static NOINLINE void example_outer(int i)
{
	example_middle(i + 1);
	__asm__ volatile("" ::: "memory");
}

static NOINLINE void spin(void)
{
	for (volatile long k = 0; k < 2000000 && samples < 5; k++)
		;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	FILE *in, *out;
	char buf[4096];
	size_t got;

	if (argc < 2) {
		fprintf(stderr, "usage: %s MAPS-FILE\n", argv[0]);
		return 1;
	}
	/* The mapping list, for symbolizing after this process is gone. */
	in = fopen("/proc/self/maps", "r");
	out = fopen(argv[1], "w");
	if (!in || !out) {
		perror("maps");
		return 1;
	}
	while ((got = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, got, out);
	fclose(in);
	fclose(out);
	/* Optional: tables compiled now, for the fast path. */
	stacksnap_backtrace_prepare();
	for (int i = 0; i < 3; i++)
		example_outer(i);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigprof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	for (int i = 0; i < 200 && samples < 5; i++)
		spin();
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_PROF, &it, NULL);
	printf("recorded 3 backtraces and %d samples\n", (int)samples);
	return 0;
}
