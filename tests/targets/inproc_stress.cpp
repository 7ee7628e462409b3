/* inproc_stress.cpp - the in-process backtrace under fire: threads sampled
 * by SIGPROF every 100 us (a per-thread timer) and by a second signal
 * whose handler also backtraces (landing inside the first handler's walk:
 * reentrancy), while they recurse, malloc and free, throw and catch C++
 * exceptions, call into plug-ins that they and the main thread dlopen()
 * and dlclose(), use a sigaltstack or not, and come and go (thread churn);
 * the main thread publishes tables (stacksnap_backtrace_prepare) as it
 * goes, so walks meet both paths. Every backtrace taken in a handler must
 * end with the frames the thread is known to stand on (its entry down to
 * clone3, recorded at thread start and checked against glibc's
 * backtrace()). malloc, calloc, realloc, free and pthread_mutex_lock are
 * interposed (unless built with NO_INTERPOSE, for the sanitizers) and must
 * never be called while a backtrace runs.
 * Usage: inproc_stress SECONDS PLUGIN.so... ; prints a summary, `ok`/`FAIL`
 * lines and `N passed, N failed`. */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <unwind.h>

struct dwarf_eh_bases {
	void *tbase, *dbase, *func;
};
extern "C" const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

#include <stacksnap.h>

#include "target.h"

#define MAXF 128
/* 10 kHz, and a second signal out of step; INPROC_STRESS_PERIOD_US
 * changes the first (sanitized builds: a walk instrumented by a sanitizer
 * can outlast 100 us, and a thread would then do nothing but handle
 * signals). */
static long sample_ns = 100000, nested_ns = 130000;
#define LONG_WORKERS 3

static std::atomic<long> violations, samples, checked, mismatches, nested,
	nonsignal_checked, short_walks, early_ends;
static int (*glibc_backtrace)(void **, int);
static std::atomic<bool> stop;
static std::atomic<int> first_bad; /* 1 once bad_ips holds a trace */
static void *bad_ips[2][MAXF];
static int bad_n[2];

static __thread int in_bt __attribute__((tls_model("initial-exec")));
static __thread int walking __attribute__((tls_model("initial-exec")));
static __thread int in_body __attribute__((tls_model("initial-exec")));
static __thread void *ref[MAXF] __attribute__((tls_model("initial-exec")));
static __thread int ref_n __attribute__((tls_model("initial-exec")));

#ifndef NO_INTERPOSE
/* The interposed allocator and lock: a call while in_bt is set means a
 * backtrace allocated or locked. */
extern "C" void *__libc_malloc(size_t);
extern "C" void *__libc_calloc(size_t, size_t);
extern "C" void *__libc_realloc(void *, size_t);
extern "C" void __libc_free(void *);
static int (*real_mutex_lock)(pthread_mutex_t *);

extern "C" void *malloc(size_t n)
{
	if (in_bt)
		violations++;
	return __libc_malloc(n);
}
extern "C" void *calloc(size_t a, size_t b)
{
	if (in_bt)
		violations++;
	return __libc_calloc(a, b);
}
extern "C" void *realloc(void *p, size_t n)
{
	if (in_bt)
		violations++;
	return __libc_realloc(p, n);
}
extern "C" void free(void *p)
{
	if (in_bt)
		violations++;
	__libc_free(p);
}
extern "C" int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (in_bt)
		violations++;
	if (!real_mutex_lock)
		real_mutex_lock = (int (*)(pthread_mutex_t *))dlsym(
			RTLD_NEXT, "pthread_mutex_lock");
	return real_mutex_lock(m);
}
#endif

/* Does ips[0..n) end with the thread's reference frames (its entry down
 * to the bottom)? */
static bool ends_with_ref(void **ips, int n)
{
	int k = ref_n - 1; /* ref[0] is the recording call site: not shared */

	if (k <= 0 || n < k)
		return false;
	return !memcmp(ips + n - k, ref + 1, sizeof(void *) * (size_t)k);
}

/* A worker's reference frames, for the report (every worker's are the
 * same from its entry down). */
static void *g_ref[MAXF];
static std::atomic<int> g_ref_n;
static std::atomic<int> g_ref_claimed; /* one thread writes g_ref */
/* ThreadSanitizer runs handlers later, at points of its choosing, with
 * the ucontext of the original delivery: the interrupted stack has
 * moved on, so walks of that context are not checked (they must still
 * not crash), and signals never land inside a walk. */
static bool under_tsan;

static void keep_bad(void **ips, int n)
{
	int expected = 0;

	if (first_bad.compare_exchange_strong(expected, 2)) {
		memcpy(bad_ips[0], ips, sizeof(void *) * (size_t)n);
		bad_n[0] = n;
		memcpy(bad_ips[1], g_ref, sizeof(void *) * (size_t)g_ref_n);
		bad_n[1] = g_ref_n;
		first_bad = 1;
	}
}

/* A walk that does not reach the thread's known frames may only end
 * where there is nothing to go on: its last pc is in no loaded module
 * (a plug-in that dlclose() is unloading: its destructors run after the
 * loader has forgotten it), or no FDE covers it (crti's _init, called by
 * dlopen()). libgcc's _Unwind_Find_FDE is the oracle; it may take a lock
 * (under the sanitizers), so such walks are judged after the run, from
 * their last pc kept here. glibc's backtrace() itself cannot be the
 * oracle: in some of these places (a thread interrupted inside
 * _Unwind_RaiseException) it crashes, where the walker stops. */
#define MAX_CANDIDATES (1 << 16)
#define KEPT_TRACES 16
static void *candidate_pc[MAX_CANDIDATES];
static std::atomic<long> ncandidates;
static void *kept[KEPT_TRACES][MAXF];
static int kept_n[KEPT_TRACES];

static bool without_cfi(void *last)
{
	struct dwarf_eh_bases bases;
	char *pc = (char *)last;

	return !_Unwind_Find_FDE(pc, &bases) && !_Unwind_Find_FDE(pc - 1, &bases);
}

/* libgcc_s's mapping: a thread interrupted while libgcc installs a
 * landing pad's context (uw_install_context, which rewrites the saved
 * registers of _Unwind_RaiseException's frame before its eh_return
 * epilogue) has a stack that no CFI describes: libgcc's own unwinder
 * reads the same wrong caller there (and glibc's backtrace() crashes).
 * A walk through it may end anywhere after it. */
static uintptr_t libgcc_lo[2], libgcc_hi[2];

static bool through_libgcc(void **ips, int n)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			if ((uintptr_t)ips[i] - libgcc_lo[k] < libgcc_hi[k] - libgcc_lo[k])
				return true;
	return false;
}

/* The unwinder's mappings: libgcc_s's, and where the name
 * _Unwind_RaiseException binds from here if elsewhere (gcc's libasan
 * carries a copy of its own and comes first in the search order). */
static void find_libgcc(void)
{
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW);
	void *in_libgcc = h ? dlsym(h, "_Unwind_RaiseException") : NULL;
	void *fns[2] = { in_libgcc, (void *)_Unwind_RaiseException };

	for (int k = 0; k < 2; k++) {
		struct dl_find_object dlfo;

		if (fns[k] && !_dl_find_object(fns[k], &dlfo)) {
			libgcc_lo[k] = (uintptr_t)dlfo.dlfo_map_start;
			libgcc_hi[k] = (uintptr_t)dlfo.dlfo_map_end;
		}
	}
}

/* from: the first frame glibc's trace also has (0 for a context's walk;
 * 1 for the handler's own stack, whose frame 0 is our call site). */
static void check(void **ips, int n, int from)
{
	if (!in_body)
		return;
	checked++;
	if (n >= MAXF) {
		short_walks++; /* deeper than the buffer: nothing to compare */
		return;
	}
	if (ends_with_ref(ips, n))
		return;
	if (n > from && through_libgcc(ips, n)) {
		early_ends++;
		return;
	}
	if (n > from) {
		long k = ncandidates++;

		if (k < MAX_CANDIDATES)
			candidate_pc[k] = ips[n - 1];
		if (k < KEPT_TRACES) {
			memcpy(kept[k], ips, sizeof(void *) * (size_t)n);
			kept_n[k] = n;
		}
		return;
	}
	mismatches++;
	keep_bad(ips, n);
}

static void on_sample(int sig, siginfo_t *si, void *uc)
{
	void *ips[MAXF];
	int n;

	samples++;
	if (walking)
		nested++; /* this signal interrupted a walk of this thread */
	walking++;
	in_bt++;
	n = stacksnap_backtrace_ucontext(uc, ips, MAXF);
	in_bt--;
	if (!under_tsan)
		check(ips, n, 0);
	/* The handler's own stack: through the signal frame to the same
	 * bottom. */
	in_bt++;
	n = stacksnap_backtrace(ips, MAXF);
	in_bt--;
	check(ips, n, 1);
	walking--;
}

/* A crash (of the walker or the test) is reported with its stack, taken
 * by the walker itself, and fails the run. */
static void on_crash(int sig, siginfo_t *si, void *uc)
{
	void *ips[MAXF];
	int n = stacksnap_backtrace_ucontext(uc, ips, MAXF);

	fprintf(stderr, "FAIL signal %d at address %p; stack:\n", sig, si->si_addr);
	for (int i = 0; i < n; i++) {
		Dl_info di;
		bool in = dladdr(ips[i], &di);

		fprintf(stderr, "  #%d %p %s %s+%#lx\n", i, ips[i],
			in && di.dli_sname ? di.dli_sname : "?", in ? di.dli_fname : "?",
			in ? (unsigned long)((char *)ips[i] - (char *)di.dli_fbase) : 0ul);
	}
	_exit(4);
}

/* ---- what the threads do ---- */

static const char *const *plugin_paths;
static int nplugins;

static NOINLINE int leaf_work(int n);

static NOINLINE int recurse(int depth, int n)
{
	if (depth <= 0)
		return leaf_work(n);
	int r = recurse(depth - 1, n + 1);

	KEEP_FRAME();
	return r + 1;
}

static NOINLINE int thrower(int n)
{
	if (n % 3 != 1)
		throw std::runtime_error("stress");
	return n;
}

static NOINLINE int leaf_work(int n)
{
	int r = 0;

	switch (n % 4) {
	case 0: { /* malloc and free */
		void *p[8];

		for (int i = 0; i < 8; i++)
			p[i] = malloc((size_t)(16 << (i + n % 5)));
		for (int i = 0; i < 8; i++)
			free(p[i]);
		break;
	}
	case 1: /* exceptions, unwound by libgcc while we sample */
		try {
			r = thrower(n);
		} catch (const std::exception &) {
			r = -1;
		}
		break;
	case 2: { /* a backtrace outside signal context, checked too */
		void *ips[MAXF];
		int k;

		in_bt++;
		k = stacksnap_backtrace(ips, MAXF);
		in_bt--;
		if (k < MAXF) {
			nonsignal_checked++;
			if (!ends_with_ref(ips, k)) {
				mismatches++;
				keep_bad(ips, k);
			}
		}
		break;
	}
	default: /* spin a little */
		for (volatile int i = 0; i < 2000; i++)
			;
	}
	KEEP_FRAME();
	return r;
}

static int plugin_cb(int n)
{
	return recurse(n % 7, n);
}

static NOINLINE void via_plugin(unsigned seed)
{
	const char *path = plugin_paths[seed % (unsigned)nplugins];
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int (*work)(int, int (*)(int));

	if (!h)
		return;
	work = (int (*)(int, int (*)(int)))dlsym(h, "plugin_work");
	if (work)
		work((int)(seed % 5), plugin_cb);
	dlclose(h);
	KEEP_FRAME();
}

static timer_t arm(int sig, long ns)
{
	struct sigevent sev;
	struct itimerspec its;
	timer_t t;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sig;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &t)) {
		perror("timer_create");
		exit(2);
	}
	its.it_interval.tv_sec = 0;
	its.it_interval.tv_nsec = ns;
	its.it_value = its.it_interval;
	timer_settime(t, 0, &its, NULL);
	return t;
}

/* The thread's known frames start here. */
static NOINLINE void worker_body(long iterations, bool altstack)
{
	void *g[MAXF];
	int gn;
	stack_t ss;
	timer_t t1, t2;
	unsigned seed = (unsigned)(uintptr_t)&g;

	ref_n = stacksnap_backtrace(ref, MAXF);
	if (!g_ref_claimed.exchange(1)) {
		memcpy(g_ref, ref, sizeof(void *) * (size_t)ref_n);
		g_ref_n = ref_n;
	}
	gn = glibc_backtrace(g, MAXF);
	/* Frames past the two call sites must be glibc's. */
	if (gn != ref_n || memcmp(g + 1, ref + 1, sizeof(void *) * (size_t)(gn - 1))) {
		fprintf(stderr, "reference stack differs from glibc's\n");
		mismatches++;
	}
	if (altstack) {
		ss.ss_sp = malloc(1 << 18);
		ss.ss_size = 1 << 18;
		ss.ss_flags = 0;
		sigaltstack(&ss, NULL);
	}
	in_body = 1;
	t1 = arm(SIGPROF, sample_ns);
	t2 = arm(SIGUSR2, nested_ns);
	for (long i = 0; (iterations < 0 || i < iterations) && !stop; i++) {
		seed = seed * 1103515245u + 12345u;
		if (seed % 8 == 0 && nplugins)
			via_plugin(seed >> 8);
		else
			recurse((int)(seed >> 8) % 40, (int)(seed >> 4));
	}
	timer_delete(t1);
	timer_delete(t2);
	in_body = 0;
	if (altstack) {
		ss.ss_flags = SS_DISABLE;
		sigaltstack(&ss, NULL);
		/* a signal still pending would use it: keep the memory */
	}
	KEEP_FRAME();
}

static void *worker(void *arg)
{
	long it = (long)(intptr_t)arg;

	worker_body(it, (it & 1) != 0);
	KEEP_FRAME();
	return NULL;
}

static void report(const char *name, bool ok, const char *why, int *p, int *f)
{
	if (ok) {
		printf("ok   %s\n", name);
		++*p;
	} else {
		printf("FAIL %s: %s\n", name, why);
		++*f;
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_t longw[LONG_WORKERS];
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	struct timespec t0, now;
	long churned = 0, prepared = 0, reloads = 0;
	int passed = 0, failed = 0;
	char why[256];

	target_init();
	under_tsan = getenv("INPROC_STRESS_TSAN") != NULL;
	if (getenv("INPROC_STRESS_PERIOD_US")) {
		sample_ns = atol(getenv("INPROC_STRESS_PERIOD_US")) * 1000;
		nested_ns = sample_ns * 13 / 10;
	}
	plugin_paths = (const char *const *)(argv + 2);
	nplugins = argc > 2 ? argc - 2 : 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sample;
	/* No mask: either signal may land in the other's handler (not in
	 * its own, which would nest without bound under load). */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigaction(SIGPROF, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_sigaction = on_crash;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	/* glibc's own, not a sanitizer's interceptor of it */
	glibc_backtrace = (int (*)(void **, int))dlvsym(
		dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), "backtrace",
		"GLIBC_2.2.5");
	if (!glibc_backtrace)
		glibc_backtrace = backtrace;
	find_libgcc();
	{
		void *w[4];

		glibc_backtrace(w, 4); /* it loads libgcc_s once, here */
	}
	for (long i = 0; i < LONG_WORKERS; i++)
		pthread_create(&longw[i], NULL, worker, (void *)(intptr_t)(-1 - 2 * i + (i & 1)));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pthread_t t;
		void *h[8];
		int nh = 0;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) +
			    (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
		/* thread churn: a short-lived sampled worker */
		if (!pthread_create(&t, NULL, worker, (void *)(intptr_t)(2 + (churned & 1)))) {
			churned++;
			pthread_join(t, NULL);
		}
		/* the main thread loads and unloads plug-ins too, and
		 * publishes tables for what is loaded now */
		for (int i = 0; i < nplugins && i < 8; i++)
			if ((h[nh] = dlopen(plugin_paths[i], RTLD_NOW | RTLD_LOCAL)))
				nh++;
		/* the first 40% of the run without tables, then tables
		 * for what is loaded each round */
		if ((double)(now.tv_sec - t0.tv_sec) +
			    (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >= 0.4 * seconds &&
		    stacksnap_backtrace_prepare() >= 0)
			prepared++;
		while (nh > 0)
			dlclose(h[--nh]);
		reloads++;
	}
	stop = true;
	for (int i = 0; i < LONG_WORKERS; i++)
		pthread_join(longw[i], NULL);

	for (long k = 0; k < ncandidates && k < MAX_CANDIDATES; k++) {
		Dl_info di;

		if (without_cfi(candidate_pc[k])) {
			early_ends++;
			continue;
		}
		/* where each such walk ended, so a failure says it */
		if (mismatches < 8)
			fprintf(stderr, "walk ended early at %p %s %s\n", candidate_pc[k],
				dladdr(candidate_pc[k], &di) && di.dli_sname ? di.dli_sname : "?",
				dladdr(candidate_pc[k], &di) ? di.dli_fname : "(no module)");
		mismatches++;
		if (k < KEPT_TRACES)
			keep_bad(kept[k], kept_n[k]);
	}
	if (ncandidates > MAX_CANDIDATES)
		mismatches += ncandidates - MAX_CANDIDATES; /* not judged */
	STACKSNAP_OPTS(stacksnap_backtrace_stats, st);
	stacksnap_backtrace_stats(&st);
	printf("%.1f s: %ld samples (%.0f/s), %ld checked in handlers, %ld outside, "
	       "%ld nested in a walk, %ld deeper than the buffer, %ld ended early "
	       "at a pc without CFI or in exception dispatch, %ld mismatches; "
	       "%ld threads churned, %ld plug-in reload rounds, %ld prepares, "
	       "%llu tables, %llu frames interpreted\n",
	       seconds, samples.load(), samples.load() / seconds, checked.load(),
	       nonsignal_checked.load(), nested.load(), short_walks.load(),
	       early_ends.load(), mismatches.load(), churned, reloads, prepared,
	       (unsigned long long)st.tables,
	       (unsigned long long)st.interpreted_frames);
	if (first_bad == 1) {
		for (int k = 0; k < 2; k++) {
			fprintf(stderr, k ? "reference:\n" : "bad trace:\n");
			for (int i = 0; i < bad_n[k]; i++) {
				Dl_info di;

				bool in = dladdr(bad_ips[k][i], &di);

				fprintf(stderr, "  #%d %p %s %s+%#lx\n", i, bad_ips[k][i],
					in && di.dli_sname ? di.dli_sname : "?",
					in ? di.dli_fname : "?",
					in ? (unsigned long)((char *)bad_ips[k][i] - (char *)di.dli_fbase) : 0ul);
			}
		}
	}
	snprintf(why, sizeof(why), "%ld of %ld backtraces did not end at the thread's known frames",
		 mismatches.load(), checked.load() + nonsignal_checked.load());
	report("stacks", mismatches == 0 && checked > 0, why, &passed, &failed);
	snprintf(why, sizeof(why), "%ld calls of malloc/free/pthread_mutex_lock inside a backtrace",
		 violations.load());
	report("no-malloc-no-lock", violations == 0, why, &passed, &failed);
	report(under_tsan ? "reentrancy (not testable under ThreadSanitizer)" : "reentrancy",
	       nested > 0 || under_tsan, "no signal landed inside another's walk", &passed, &failed);
	report("both-paths", st.tables > 0 && st.interpreted_frames > 0,
	       "tables or interpretation never used", &passed, &failed);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
