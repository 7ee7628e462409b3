/* inproc_eq.c - the in-process backtrace checked against glibc's
 * backtrace(), frame by frame, from the same call site: plain call chains,
 * a libc callback (qsort), a stack realigned by alloca, a dlopen()ed
 * library calling back, a signal handler (its own stack through
 * __restore_rt, and the interrupted context), C++ frames (templates,
 * lambdas, std::function, virtual calls, a frame inside a catch block)
 * when built as C++; each before stacksnap_backtrace_prepare (tables
 * absent: .eh_frame interpreted) and after (compiled tables). Prints
 * `ok NAME` / `FAIL NAME: why` and `N passed, N failed`.
 * Usage: inproc_eq LIBPATH (the inproc_eq_lib.so to dlopen). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include <stacksnap.h>

#include "glibc_backtrace.h"

#include "target.h"

#ifdef __cplusplus
#include <functional>
#include <stdexcept>
#endif

#define MAXF 256

static int passed, failed;
/* Set when a second stacksnap_backtrace from the same place (its
 * frames now in the row caches, walked by the inner loop) differs from
 * the first (looked up): checked by compare(). */
static int cache_differs;

static const char *phase = "";

static void report(const char *name, const char *why)
{
	if (why) {
		printf("FAIL %s/%s: %s\n", phase, name, why);
		failed++;
	} else {
		printf("ok   %s/%s\n", phase, name);
		passed++;
	}
}

static void dump(const char *tag, void **ips, int n)
{
	fprintf(stderr, "  %s (%d):\n", tag, n);
	for (int i = 0; i < n; i++) {
		Dl_info di;
		const char *s = dladdr(ips[i], &di) && di.dli_sname ? di.dli_sname : "?";

		fprintf(stderr, "    #%d %p %s\n", i, ips[i], s);
	}
}

static void compare(const char *name, void **a, int na, void **b, int nb)
{
	static char why[128];

	if (cache_differs) {
		cache_differs = 0;
		report(name, "a second stacksnap_backtrace (row caches warm) "
			     "differs from the first");
		return;
	}
	if (na != nb) {
		snprintf(why, sizeof(why), "glibc %d frames, stacksnap %d", na, nb);
		dump("glibc", a, na);
		dump("stacksnap", b, nb);
		report(name, why);
		return;
	}
	for (int i = 0; i < na; i++) {
		if (a[i] != b[i]) {
			snprintf(why, sizeof(why), "frame %d: glibc %p, stacksnap %p",
				 i, a[i], b[i]);
			dump("glibc", a, na);
			dump("stacksnap", b, nb);
			report(name, why);
			return;
		}
	}
	report(name, NULL);
}

/* Both from one function: every frame but the first (the return address
 * into take_both, a different call site for each) must be equal, and the
 * first of both must lie in take_both. */
static int (*glibc_backtrace)(void **, int);

static NOINLINE void take_both(void **a, int *na, void **b, int *nb)
{
	void *first[MAXF];
	int nfirst = 0;

	*na = glibc_backtrace(a, MAXF);
	KEEP_FRAME();
	for (int k = 0; k < 2; k++) {
		if (k) {
			nfirst = *nb;
			memcpy(first, b, sizeof(*b) * (nfirst > 0 ? nfirst : 0));
		}
		*nb = stacksnap_backtrace(b, MAXF);
		KEEP_FRAME();
	}
	/* frame 0 is the call site, which an unrolled loop makes two */
	cache_differs = nfirst != *nb ||
			(nfirst > 1 &&
			 memcmp(first + 1, b + 1, sizeof(*b) * (nfirst - 1)));
}

/* Replaces frame 0 of both by take_both's address when both lie in it
 * (compiled code of take_both is well under 512 bytes). */
static void same_frame0(void **a, int na, void **b, int nb)
{
	uintptr_t f = (uintptr_t)take_both;

	if (na > 0 && nb > 0 && (uintptr_t)a[0] - f < 512 &&
	    (uintptr_t)b[0] - f < 512)
		a[0] = b[0] = (void *)f;
}

static NOINLINE void check_here(const char *name)
{
	void *a[MAXF], *b[MAXF];
	int na, nb;

	take_both(a, &na, b, &nb);
	same_frame0(a, na, b, nb);
	compare(name, a, na, b, nb);
}

/* A plain chain of frames of different shapes. */
static NOINLINE int chain(int depth, const char *name)
{
	if (depth == 0) {
		check_here(name);
		return 1;
	}
	int r = chain(depth - 1, name);

	KEEP_FRAME();
	return r + depth;
}

/* alloca with a variable size: the CFA is kept in rbp even without frame
 * pointers. */
static NOINLINE int with_alloca(int n)
{
	volatile char *p = (volatile char *)alloca((size_t)n * 64);

	p[0] = 1;
	check_here("alloca");
	KEEP_FRAME();
	return p[0];
}

/* Called by libc's qsort: frames of libc in between. */
static int cmp_calls;
static int cmp_ints(const void *x, const void *y)
{
	if (cmp_calls++ == 0)
		check_here("qsort-callback");
	return *(const int *)x - *(const int *)y;
}

static NOINLINE void via_qsort(void)
{
	int v[4] = { 3, 1, 2, 0 };

	cmp_calls = 0;
	qsort(v, 4, sizeof(int), cmp_ints);
	KEEP_FRAME();
}

/* A signal handler: its own backtrace crosses __restore_rt; the
 * interrupted context's backtrace must be glibc's from the interrupted pc
 * on. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	void *a[MAXF], *b[MAXF], *c[MAXF];
	int na, nb, nc = stacksnap_backtrace_ucontext(uc, c, MAXF);
	int at = -1;

	take_both(a, &na, b, &nb);
	same_frame0(a, na, b, nb);

	compare("signal-handler", a, na, b, nb);
	for (int i = 0; i < na; i++)
		if (nc > 0 && a[i] == c[0])
			at = i;
	if (at < 0) {
		dump("glibc", a, na);
		dump("ucontext", c, nc);
		report("signal-ucontext", "interrupted pc not in glibc's trace");
	} else {
		compare("signal-ucontext", a + at, na - at, c, nc);
	}
}

static NOINLINE void via_signal(void)
{
	raise(SIGUSR1);
	KEEP_FRAME();
}

/* The dlopen()ed library calls back here. */
static NOINLINE int from_lib(int n)
{
	check_here("dlopen-callback");
	KEEP_FRAME();
	return n + 1;
}

#ifdef __cplusplus
struct base_t {
	virtual int run(int n) = 0;
	virtual ~base_t() {}
};

struct derived_t : base_t {
	NOINLINE int run(int n) override
	{
		check_here("cxx-virtual");
		KEEP_FRAME();
		return n * 2;
	}
};

template <typename T> NOINLINE T templ(T v, int depth)
{
	if (depth == 0) {
		std::function<int(int)> f = [](int x) NOINLINE {
			check_here("cxx-template-lambda-function");
			return x + 1;
		};
		return (T)f((int)v);
	}
	T r = templ<T>(v + 1, depth - 1);
	KEEP_FRAME();
	return r;
}

static NOINLINE int thrower(int n)
{
	if (n >= 0)
		throw std::runtime_error("x");
	return n;
}

static NOINLINE int in_catch(int n)
{
	try {
		thrower(n);
	} catch (const std::exception &) {
		check_here("cxx-in-catch");
		return 1;
	}
	return 0;
}

static NOINLINE void cxx_cases(void)
{
	derived_t d;
	base_t *volatile b = &d;

	b->run(3);
	templ<long>(1, 4);
	in_catch(2);
}
#endif

static void run_all(void *lib)
{
	chain(10, "chain");
	with_alloca(3);
	via_qsort();
	via_signal();
	if (lib) {
		int (*entry)(int, int (*)(int)) =
			(int (*)(int, int (*)(int)))dlsym(lib, "inproc_lib_entry");

		if (entry)
			entry(1, from_lib);
		else
			report("dlopen-callback", "inproc_lib_entry not found");
	}
#ifdef __cplusplus
	cxx_cases();
#endif
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	STACKSNAP_OPTS(stacksnap_backtrace_stats, st0);
	STACKSNAP_OPTS(stacksnap_backtrace_stats, st1);
	void *lib;

	target_init();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	glibc_backtrace = glibc_backtrace_warm();
	lib = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	if (argc > 1 && !lib)
		report("dlopen", dlerror());

	phase = "interpreted";
	stacksnap_backtrace_stats(&st0);
	run_all(lib);
	stacksnap_backtrace_stats(&st1);
	if (st1.tables != 0 || st1.interpreted_frames <= st0.interpreted_frames)
		report("path", "frames were not walked by interpretation");
	else
		report("path", NULL);

	phase = "tables";
	if (stacksnap_backtrace_prepare() <= 0)
		report("prepare", "no table compiled");
	stacksnap_backtrace_stats(&st0);
	run_all(lib);
	stacksnap_backtrace_stats(&st1);
	/* Only signal trampolines (DWARF rows) may still be interpreted:
	 * none of these frames are in a module without a table. */
	if (st1.interpreted_frames != st0.interpreted_frames)
		report("path", "frames were interpreted despite tables");
	else
		report("path", NULL);

	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
