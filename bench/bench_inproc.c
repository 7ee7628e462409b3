/* bench_inproc.c - the in-process backtrace against what a tracer would
 * use instead, in one run: glibc's backtrace(), libunwind's
 * unw_backtrace() and a frame-pointer walk, at stack depths 36 and 200;
 * stacksnap_backtrace warm (compiled tables), with modules not compiled
 * yet (.eh_frame interpreted: the first calls after a dlopen()), and from
 * a signal handler (stacksnap_backtrace_ucontext, signal delivery cost
 * taken out). Prints ns per call and per frame (medians of BATCHES) and
 * ratios. Times are the thread's CPU time (the machine is shared). The
 * recursion is built with frame pointers (so that the
 * frame-pointer walk works at all); the CFI walkers do not use them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stacksnap.h>

#define BATCHES 9
#define MAXF 512

typedef int (*bt_fn)(void **, int);

/* CPU time of this thread: on a machine shared by many jobs, wall time
 * would mostly measure the time slices of others. */
static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* The frame-pointer walk profilers use when they trust frame pointers:
 * [rbp] = caller's rbp, [rbp + 8] = return address, bounded by the stack
 * pointer moving up and a sanity limit. */
static __attribute__((noinline)) int fp_backtrace(void **ips, int max)
{
	uintptr_t *fp = __builtin_frame_address(0);
	uintptr_t lo = (uintptr_t)fp;
	int n = 0;

	while (n < max && fp && ((uintptr_t)fp & 7) == 0 &&
	       (uintptr_t)fp >= lo && (uintptr_t)fp - lo < (64u << 20)) {
		uintptr_t ret = fp[1];

		if (!ret)
			break;
		ips[n++] = (void *)ret;
		lo = (uintptr_t)fp + 16;
		fp = (uintptr_t *)fp[0];
	}
	return n;
}

struct method {
	const char *name;
	bt_fn fn;
};

static void *sink[MAXF];
static volatile int sink_n;

/* What the bottom of the recursion measures. */
struct job {
	bt_fn fn;
	int calls;
	double ns[BATCHES];
	int frames;
};

static __attribute__((noinline)) void measure(struct job *j)
{
	for (int b = 0; b < BATCHES; b++) {
		double t0 = now_ns();

		for (int i = 0; i < j->calls; i++)
			sink_n = j->fn(sink, MAXF);
		j->ns[b] = (now_ns() - t0) / j->calls;
	}
	j->frames = sink_n;
}

static __attribute__((noinline)) int recurse(int depth, void (*at_bottom)(void *),
					     void *arg)
{
	int r;

	if (depth <= 1) {
		at_bottom(arg);
		return 0;
	}
	r = recurse(depth - 1, at_bottom, arg);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static void run_job(void *arg)
{
	measure(arg);
}

/* The depth of the stack below main's call of recurse: frames that every
 * backtrace also walks (main, libc start, _start). */
static double run(bt_fn fn, int depth, int calls, int *frames)
{
	struct job j = { .fn = fn, .calls = calls };

	recurse(depth, run_job, &j);
	*frames = j.frames;
	return median(j.ns, BATCHES);
}

/* ---- from a signal handler ---- */

static volatile int handler_walks;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	if (handler_walks)
		sink_n = stacksnap_backtrace_ucontext(uc, sink, MAXF);
}

struct sigjob {
	int calls;
	double ns[BATCHES];
};

static void run_signals(void *arg)
{
	struct sigjob *j = arg;

	for (int b = 0; b < BATCHES; b++) {
		double t0 = now_ns();

		for (int i = 0; i < j->calls; i++)
			raise(SIGUSR1);
		j->ns[b] = (now_ns() - t0) / j->calls;
	}
}

static double signal_cost(int depth, int walk, int calls)
{
	struct sigjob j = { .calls = calls };

	handler_walks = walk;
	recurse(depth, run_signals, &j);
	return median(j.ns, BATCHES);
}

/* --count METHOD DEPTH CALLS: only CALLS calls of one method at one
 * depth (tables prepared first, one warm-up call), for instruction counts
 * under valgrind --tool=callgrind or perf stat, which do not depend on the
 * machine's load. METHOD: stacksnap, fp, glibc, libunwind, ucontext (from
 * a SIGUSR1 handler), interpreted (no tables). Prints the frames walked. */
static struct job count_job;

static void count_at_bottom(void *arg)
{
	struct job *j = arg;

	if (!j->fn) { /* from a handler */
		for (int i = 0; i < j->calls; i++)
			raise(SIGUSR1);
		j->frames = sink_n;
		return;
	}
	for (int i = 0; i < j->calls; i++)
		sink_n = j->fn(sink, MAXF);
	j->frames = sink_n;
}

static int count_mode(const char *method, int depth, int calls,
		      bt_fn glibc_bt, bt_fn unw_bt)
{
	bt_fn fn = NULL;

	if (strcmp(method, "interpreted"))
		stacksnap_backtrace_prepare();
	if (!strcmp(method, "stacksnap") || !strcmp(method, "interpreted"))
		fn = stacksnap_backtrace;
	else if (!strcmp(method, "fp"))
		fn = fp_backtrace;
	else if (!strcmp(method, "glibc"))
		fn = glibc_bt;
	else if (!strcmp(method, "libunwind"))
		fn = unw_bt;
	else if (strcmp(method, "ucontext")) {
		fprintf(stderr, "bench_inproc: unknown method %s (stacksnap, fp, "
			"glibc, libunwind, ucontext, interpreted)\n", method);
		return 2;
	}
	if (!fn && strcmp(method, "ucontext")) {
		fprintf(stderr, "bench_inproc: %s not available\n", method);
		return 1;
	}
	handler_walks = 1;
	count_job.fn = fn;
	count_job.calls = 1; /* warm-up: the stack ranges, the row caches */
	recurse(depth, count_at_bottom, &count_job);
	count_job.calls = calls;
	recurse(depth, count_at_bottom, &count_job);
	printf("%s depth %d: %d calls, %d frames a call\n", method, depth, calls,
	       count_job.frames);
	return 0;
}

int main(int argc, char **argv)
{
	static const int depths[] = { 36, 200 };
	bt_fn glibc_bt, unw_bt = NULL;
	void *lu;
	struct sigaction sa;
	double interp[2], prep_ns;
	int interp_frames[2];
	int prepared;

	/* glibc's backtrace (libunwind also exports one named backtrace) */
	glibc_bt = (bt_fn)dlvsym(dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD),
				 "backtrace", "GLIBC_2.2.5");
	lu = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (lu)
		unw_bt = (bt_fn)dlsym(lu, "unw_backtrace");
	if (!glibc_bt) {
		fprintf(stderr, "bench_inproc: glibc backtrace not found\n");
		return 1;
	}
	glibc_bt(sink, 4); /* loads libgcc_s */
	if (unw_bt)
		unw_bt(sink, 4);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	if (argc == 5 && !strcmp(argv[1], "--count"))
		return count_mode(argv[2], atoi(argv[3]), atoi(argv[4]), glibc_bt,
				  unw_bt);
	if (argc > 1) {
		fprintf(stderr, "usage: bench_inproc [--count METHOD DEPTH CALLS]\n");
		return 2;
	}

	printf("== in-process backtrace (bench_inproc): ns per call, ns per frame; "
	       "medians of %d batches\n", BATCHES);
	/* Before any table: every module's .eh_frame interpreted, as for a
	 * module dlopen()ed since the last stacksnap_backtrace_prepare(). */
	for (int d = 0; d < 2; d++)
		interp[d] = run(stacksnap_backtrace, depths[d], 200,
				&interp_frames[d]);
	{
		double t0 = now_ns();

		prepared = stacksnap_backtrace_prepare();
		prep_ns = now_ns() - t0;
	}
	printf("stacksnap_backtrace_prepare: %d tables in %.2f ms\n", prepared,
	       prep_ns / 1e6);
	for (int d = 0; d < 2; d++) {
		int depth = depths[d], calls = depth > 100 ? 2000 : 10000;
		struct method m[] = {
			{ "stacksnap_backtrace", stacksnap_backtrace },
			{ "frame-pointer walk", fp_backtrace },
			{ "glibc backtrace()", glibc_bt },
			{ "libunwind unw_backtrace()", unw_bt },
		};
		double ns[4] = { 0 };
		int frames[4] = { 0 };

		printf("\ndepth %d (recursion frames; the walks see more: main, libc start, _start):\n",
		       depth);
		for (int k = 0; k < 4; k++) {
			if (!m[k].fn) {
				printf("  %-34s not available\n", m[k].name);
				continue;
			}
			ns[k] = run(m[k].fn, depth, calls / (k >= 2 ? 4 : 1), &frames[k]);
			printf("  %-34s %9.0f ns/call %6.2f ns/frame (%d frames)\n",
			       m[k].name, ns[k], ns[k] / frames[k], frames[k]);
		}
		printf("  %-34s %9.0f ns/call %6.2f ns/frame (%d frames)\n",
		       "stacksnap, no table (interpreted)", interp[d],
		       interp[d] / interp_frames[d], interp_frames[d]);
		{
			double empty = signal_cost(depth, 0, 2000);
			double walk = signal_cost(depth, 1, 2000);

			printf("  %-34s %9.0f ns/call %6.2f ns/frame (%d frames; "
			       "raise() with an empty handler: %.0f ns)\n",
			       "from a handler (_ucontext)", walk - empty,
			       (walk - empty) / sink_n, sink_n, empty);
		}
		printf("  ratios per frame: fp walk / stacksnap %.2f, glibc / stacksnap %.1f, "
		       "libunwind / stacksnap %.1f, interpreted / table %.1f\n",
		       (ns[1] / frames[1]) / (ns[0] / frames[0]),
		       (ns[2] / frames[2]) / (ns[0] / frames[0]),
		       ns[3] ? (ns[3] / frames[3]) / (ns[0] / frames[0]) : 0,
		       (interp[d] / interp_frames[d]) / (ns[0] / frames[0]));
	}
	return 0;
}
