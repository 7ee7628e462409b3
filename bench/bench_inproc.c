/* bench_inproc.c - the in-process backtrace against what a tracer would
 * use instead, in one run: glibc's backtrace(), libunwind's
 * unw_backtrace() and a frame-pointer walk, at stack depths 36 and 200;
 * stacksnap_backtrace without set-up (row caches filled from interpreted
 * .eh_frame) and after stacksnap_backtrace_prepare() (compiled tables),
 * the first call of a process (in a fresh child process each time: from
 * ordinary code, from a signal handler, and glibc's and libunwind's first
 * calls), the first calls after a dlopen(), and from a signal handler
 * (stacksnap_backtrace_ucontext, signal delivery cost taken out). Prints
 * ns per call and per frame (medians of BATCHES) and ratios. Times are the thread's CPU time (the machine is shared). The
 * recursion is built with frame pointers (so that the
 * frame-pointer walk works at all); the CFI walkers do not use them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* handler_walks > 1: the handler times that many walks itself (the
 * thread's CPU clock read around them), without the signal's delivery. */
static volatile double handler_ns; /* written by the handler */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	if (handler_walks == 1) {
		sink_n = stacksnap_backtrace_ucontext(uc, sink, MAXF);
	} else if (handler_walks > 1) {
		double t0 = now_ns();

		for (int i = 0; i < handler_walks; i++)
			sink_n = stacksnap_backtrace_ucontext(uc, sink, MAXF);
		handler_ns += now_ns() - t0;
	}
}

/* Walks timed inside the handler: ns per walk, median of BATCHES of
 * `signals` signals of `per` walks each. */
struct injob {
	int signals, per;
	double ns[BATCHES];
};

static void run_in_handler(void *arg)
{
	struct injob *j = arg;

	for (int b = 0; b < BATCHES; b++) {
		handler_ns = 0;
		for (int i = 0; i < j->signals; i++)
			raise(SIGUSR1);
		j->ns[b] = handler_ns / ((double)j->signals * j->per);
	}
}

static double in_handler_cost(int depth)
{
	struct injob j = { .signals = 50, .per = 40 };

	handler_walks = j.per;
	recurse(depth, run_in_handler, &j);
	handler_walks = 0;
	return median(j.ns, BATCHES);
}

/* ---- the first calls after a dlopen() ----
 * Each batch copies libhop.so (bench/hop.c, built next to this program)
 * to a new file, dlopen()s it and takes backtraces from a leaf its code
 * calls: the first (its frames interpreted from .eh_frame: no table yet;
 * the other modules have theirs), the second (from the row cache the
 * first filled), then after
 * stacksnap_backtrace_prepare() (which compiles the one new table), the
 * first (row cache cold for its pcs) and a warm one. */
enum { DL_FIRST, DL_SECOND, DL_PREPARE, DL_AFTER, DL_WARM, DL_N };
static double dl_ns[DL_N][BATCHES];
static int dl_frames, dl_batch, dl_phase;
static double dl_clock_ns;	/* what reading the clock costs */

#define DL_REPEAT 100	/* calls timed together for the second and warm */

static void dl_leaf(void)
{
	double t0 = now_ns(), t1, t2;

	sink_n = stacksnap_backtrace(sink, MAXF);
	t1 = now_ns();
	for (int i = 0; i < DL_REPEAT; i++)
		sink_n = stacksnap_backtrace(sink, MAXF);
	t2 = now_ns();
	dl_ns[dl_phase ? DL_AFTER : DL_FIRST][dl_batch] = t1 - t0 - dl_clock_ns;
	dl_ns[dl_phase ? DL_WARM : DL_SECOND][dl_batch] = (t2 - t1) / DL_REPEAT;
	dl_frames = sink_n;
}

typedef void (*hop_fn)(const void *hops, int i, int n, void (*leaf)(void));

static int dlopen_cost(void)
{
	char self[4096], src[4200], tmpl[] = "/tmp/bench_inproc.XXXXXX";
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;
	double t0;
	int fd;

	if (len <= 0)
		return -1;
	self[len] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = 0;
	snprintf(src, sizeof(src), "%s/libhop.so", self);
	if (access(src, R_OK) || !mkdtemp(tmpl))
		return -1;
	{
		double c[BATCHES];

		for (int b = 0; b < BATCHES; b++) {
			t0 = now_ns();
			c[b] = now_ns() - t0;
		}
		dl_clock_ns = median(c, BATCHES);
	}
	for (dl_batch = 0; dl_batch < BATCHES; dl_batch++) {
		char dst[4200], buf[65536];
		ssize_t got;
		int in = open(src, O_RDONLY);
		void *h;
		hop_fn hops[1];

		snprintf(dst, sizeof(dst), "%s/hop%d.so", tmpl, dl_batch);
		fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		while (in >= 0 && fd >= 0 && (got = read(in, buf, sizeof(buf))) > 0)
			if (write(fd, buf, (size_t)got) != got)
				break;
		if (in >= 0)
			close(in);
		if (fd >= 0)
			close(fd);
		h = dlopen(dst, RTLD_NOW | RTLD_LOCAL);
		unlink(dst);
		if (!h || !(hops[0] = (hop_fn)dlsym(h, "hop_enter")))
			return -1;
		dl_phase = 0;
		hops[0](hops, 0, 1, dl_leaf);
		t0 = now_ns();
		stacksnap_backtrace_prepare();
		dl_ns[DL_PREPARE][dl_batch] = now_ns() - t0 - dl_clock_ns;
		dl_phase = 1;
		hops[0](hops, 0, 1, dl_leaf);
		/* kept loaded: a module unloaded and loaded again at the same
		 * address would find its table already published */
	}
	rmdir(tmpl);
	printf("\nafter a dlopen() (a copy of libhop.so a batch, %d frames, 3 in it; "
	       "medians of %d; the first ones single calls, less a clock read of %.0f ns):\n", dl_frames, BATCHES, dl_clock_ns);
	printf("  %-34s %9.0f ns/call %6.2f ns/frame\n", "first stacksnap_backtrace",
	       median(dl_ns[DL_FIRST], BATCHES), median(dl_ns[DL_FIRST], BATCHES) / dl_frames);
	printf("  %-34s %9.0f ns/call %6.2f ns/frame\n", "second (no table: row cache)",
	       median(dl_ns[DL_SECOND], BATCHES), median(dl_ns[DL_SECOND], BATCHES) / dl_frames);
	printf("  %-34s %9.0f ns (one new table; the others are found published)\n",
	       "stacksnap_backtrace_prepare()", median(dl_ns[DL_PREPARE], BATCHES));
	printf("  %-34s %9.0f ns/call %6.2f ns/frame\n", "first after prepare (cache cold)",
	       median(dl_ns[DL_AFTER], BATCHES), median(dl_ns[DL_AFTER], BATCHES) / dl_frames);
	printf("  %-34s %9.0f ns/call %6.2f ns/frame\n", "next (warm)",
	       median(dl_ns[DL_WARM], BATCHES), median(dl_ns[DL_WARM], BATCHES) / dl_frames);
	return 0;
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

/* ---- the first call of a process ----
 * --first METHOD: one call at depth FIRST_DEPTH, the first of its kind in
 * this process (no table, no row cache, the thread's stack not known
 * yet), timed alone; prints "ns frames". METHOD: stacksnap, signal (the
 * first stacksnap_backtrace is made inside a SIGUSR1 handler and timed
 * there; then a second one), glibc (its first call loads libgcc_s),
 * libunwind (loaded before). The parent runs each in FIRST_RUNS fresh
 * children and takes the median. */
#define FIRST_DEPTH 36
#define FIRST_RUNS 9

static double first_ns, first_second_ns;
static int first_frames;
static bt_fn first_fn;

static void on_first_signal(int sig, siginfo_t *si, void *uc)
{
	double t0 = now_ns(), t1, t2;

	(void)sig;
	(void)si;
	(void)uc;
	first_frames = stacksnap_backtrace(sink, MAXF);
	t1 = now_ns();
	sink_n = stacksnap_backtrace(sink, MAXF);
	t2 = now_ns();
	first_ns = t1 - t0;
	first_second_ns = t2 - t1;
}

static void first_at_bottom(void *arg)
{
	double t0;

	(void)arg;
	if (!first_fn) {
		raise(SIGUSR1);
		return;
	}
	t0 = now_ns();
	first_frames = first_fn(sink, MAXF);
	first_ns = now_ns() - t0;
}

static int first_mode(const char *method, bt_fn glibc_bt)
{
	struct sigaction sa;
	void *lu;

	if (!strcmp(method, "stacksnap")) {
		first_fn = stacksnap_backtrace;
	} else if (!strcmp(method, "glibc")) {
		first_fn = glibc_bt;
	} else if (!strcmp(method, "libunwind")) {
		lu = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
		first_fn = lu ? (bt_fn)dlsym(lu, "unw_backtrace") : NULL;
		if (!first_fn)
			return 1;
	} else if (!strcmp(method, "signal")) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_first_signal;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGUSR1, &sa, NULL);
	} else {
		return 2;
	}
	recurse(FIRST_DEPTH, first_at_bottom, NULL);
	printf("%.0f %d %.0f\n", first_ns, first_frames, first_second_ns);
	return 0;
}

/* Runs `self --first method` FIRST_RUNS times: the medians of the first
 * call's ns (and of the second, for signal), and its frames. */
static int first_runs(const char *method, double *ns, double *second,
		      int *frames)
{
	double v[FIRST_RUNS], v2[FIRST_RUNS];
	char cmd[4200], self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		return -1;
	self[len] = 0;
	snprintf(cmd, sizeof(cmd), "'%s' --first %s", self, method);
	for (int r = 0; r < FIRST_RUNS; r++) {
		FILE *f = popen(cmd, "r");
		int ok = f && fscanf(f, "%lf %d %lf", &v[r], frames, &v2[r]) == 3;

		if (f)
			pclose(f);
		if (!ok)
			return -1;
	}
	*ns = median(v, FIRST_RUNS);
	*second = median(v2, FIRST_RUNS);
	return 0;
}

static void first_calls(void)
{
	static const char *const methods[] = { "stacksnap", "signal", "glibc",
					       "libunwind" };
	static const char *const names[] = {
		"stacksnap_backtrace",
		"stacksnap_backtrace in a handler",
		"glibc backtrace() (loads libgcc_s)",
		"libunwind unw_backtrace()",
	};
	double ns[4], second, sig_second = 0;
	int frames[4];

	printf("\nthe first call of a process (depth %d; a fresh process each "
	       "run, medians of %d; no prepare):\n", FIRST_DEPTH, FIRST_RUNS);
	for (int k = 0; k < 4; k++) {
		if (first_runs(methods[k], &ns[k], &second, &frames[k])) {
			printf("  %-34s not available\n", names[k]);
			ns[k] = 0;
			continue;
		}
		if (k == 1)
			sig_second = second;
		printf("  %-34s %9.0f ns/call %6.2f ns/frame (%d frames)\n",
		       names[k], ns[k], ns[k] / frames[k], frames[k]);
	}
	if (ns[1])
		printf("  %-34s %9.0f ns/call %6.2f ns/frame (row caches "
		       "filled by the first)\n",
		       "  the second, in the same handler", sig_second,
		       sig_second / frames[1]);
	if (ns[0] && ns[2])
		printf("  ratios: glibc first / stacksnap first %.1f, libunwind "
		       "first / stacksnap first %.1f\n", ns[2] / ns[0],
		       ns[3] ? ns[3] / ns[0] : 0);
}

/* Resident memory in KiB, from /proc/self/statm. */
static long rss_kib(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* --count METHOD DEPTH CALLS: only CALLS calls of one method at one
 * depth (tables prepared first, one warm-up call), for instruction counts
 * under valgrind --tool=callgrind or perf stat, which do not depend on the
 * machine's load. METHOD: stacksnap, fp, glibc, libunwind, ucontext (from
 * a SIGUSR1 handler), interpreted (no prepare: rows interpreted from
 * .eh_frame into the row caches on the warm-up call). Prints the frames
 * walked. */
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
	double interp[2], unprep_handler[2], prep_ns;
	int interp_frames[2];
	int prepared;

	/* glibc's backtrace (libunwind also exports one named backtrace) */
	glibc_bt = (bt_fn)dlvsym(dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD),
				 "backtrace", "GLIBC_2.2.5");
	if (argc == 3 && !strcmp(argv[1], "--first"))
		return glibc_bt ? first_mode(argv[2], glibc_bt) : 1;
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
		fprintf(stderr, "usage: bench_inproc [--count METHOD DEPTH CALLS | "
			"--first METHOD]\n");
		return 2;
	}

	printf("== in-process backtrace (bench_inproc): ns per call, ns per frame; "
	       "medians of %d batches\n", BATCHES);
	first_calls();
	/* Without prepare (the default): the first call interprets each
	 * frame's .eh_frame and fills the row caches; the batches' median is
	 * the steady state. */
	for (int d = 0; d < 2; d++) {
		int calls = depths[d] > 100 ? 2000 : 10000;

		interp[d] = run(stacksnap_backtrace, depths[d], calls,
				&interp_frames[d]);
		unprep_handler[d] = in_handler_cost(depths[d]);
	}
	{
		long rss0 = rss_kib();
		double t0 = now_ns();

		prepared = stacksnap_backtrace_prepare();
		prep_ns = now_ns() - t0;
		printf("\nstacksnap_backtrace_prepare: %d tables in %.2f ms, "
		       "+%ld KiB resident (what compiling every module's table at "
		       "start-up would cost each program)\n", prepared,
		       prep_ns / 1e6, rss_kib() - rss0);
	}
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
		       "stacksnap, no prepare (default)", interp[d],
		       interp[d] / interp_frames[d], interp_frames[d]);
		{
			double empty = signal_cost(depth, 0, 2000);
			double walk = signal_cost(depth, 1, 2000);

			double in = in_handler_cost(depth);

			printf("  %-34s %9.0f ns/call %6.2f ns/frame (%d frames; "
			       "raise() with an empty handler: %.0f ns)\n",
			       "from a handler (_ucontext)", walk - empty,
			       (walk - empty) / sink_n, sink_n, empty);
			printf("  %-34s %9.0f ns/call %6.2f ns/frame (%d frames; timed "
			       "inside the handler, no delivery)\n",
			       "  the walk alone, in the handler", in, in / sink_n,
			       sink_n);
			printf("  %-34s %9.0f ns/call %6.2f ns/frame\n",
			       "  the same, no prepare (default)",
			       unprep_handler[d], unprep_handler[d] / sink_n);
		}
		printf("  ratios per frame: fp walk / stacksnap %.2f, glibc / stacksnap %.1f, "
		       "libunwind / stacksnap %.1f, no prepare / prepared %.2f, "
		       "glibc / no prepare %.1f, libunwind / no prepare %.1f\n",
		       (ns[1] / frames[1]) / (ns[0] / frames[0]),
		       (ns[2] / frames[2]) / (ns[0] / frames[0]),
		       ns[3] ? (ns[3] / frames[3]) / (ns[0] / frames[0]) : 0,
		       (interp[d] / interp_frames[d]) / (ns[0] / frames[0]),
		       (ns[2] / frames[2]) / (interp[d] / interp_frames[d]),
		       ns[3] ? (ns[3] / frames[3]) / (interp[d] / interp_frames[d]) : 0);
	}
	if (dlopen_cost())
		printf("\nafter a dlopen(): not measured (libhop.so next to this "
		       "program: `make bench` builds it)\n");
	return 0;
}
