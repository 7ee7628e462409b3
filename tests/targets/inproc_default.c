/* inproc_default.c - stacksnap_backtrace() called the obvious way, with no
 * stacksnap_backtrace_prepare(): as the process's very first call from a
 * signal handler (and its _ucontext form), then from the main thread, a
 * new thread and a library dlopen()ed after the first walks. Each
 * backtrace must equal glibc's backtrace() frame by frame (the oracle of
 * inproc_eq), the walks of a second run through the same places must
 * interpret no frame from .eh_frame (the row caches the first run filled:
 * the fast path without set-up), no walk may allocate (malloc and friends are
 * interposed and abort while a walk runs), and after prepare the same
 * places give the same frames. Prints `ok NAME` / `FAIL NAME: why` and
 * `N passed, N failed`. Usage: inproc_default LIBPATH (inproc_eq_lib.so). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
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

#define MAXF 256

/* Set around every stacksnap walk: an allocation then aborts. */
static __thread volatile int in_walk __attribute__((tls_model("initial-exec")));

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static void alloc_in_walk(const char *what)
{
	static const char msg[] = "FAIL no-allocation: allocator called inside "
				  "stacksnap_backtrace: ";

	write(1, msg, sizeof(msg) - 1);
	write(1, what, strlen(what));
	write(1, "\n", 1);
	abort();
}

void *malloc(size_t n)
{
	if (in_walk)
		alloc_in_walk("malloc");
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	if (in_walk)
		alloc_in_walk("calloc");
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	if (in_walk)
		alloc_in_walk("realloc");
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (in_walk)
		alloc_in_walk("free");
	__libc_free(p);
}

static int passed, failed;
static const char *phase = "unprepared";
static int (*glibc_backtrace)(void **, int);

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

static uint64_t interpreted(void)
{
	STACKSNAP_OPTS(stacksnap_backtrace_stats, st);

	stacksnap_backtrace_stats(&st);
	return st.interpreted_frames;
}

static uint64_t tables(void)
{
	STACKSNAP_OPTS(stacksnap_backtrace_stats, st);

	stacksnap_backtrace_stats(&st);
	return st.tables;
}

/* What one place gave: glibc's frames, the first and second stacksnap
 * walks (frame 0 of each a different call site), and the frames
 * interpreted by each. */
struct take {
	void *a[MAXF], *b[MAXF], *b2[MAXF];
	int na, nb, nb2;
	uint64_t interp1, interp2;
};

/* Both walks from one function, so that every frame but the first (the
 * return address into take_all: a different call site each) is shared. */
static NOINLINE void take_all(struct take *t)
{
	uint64_t i0 = interpreted(), i1, i2;

	in_walk = 1;
	t->nb = stacksnap_backtrace(t->b, MAXF);
	in_walk = 0;
	KEEP_FRAME();
	i1 = interpreted();
	in_walk = 1;
	t->nb2 = stacksnap_backtrace(t->b2, MAXF);
	in_walk = 0;
	KEEP_FRAME();
	i2 = interpreted();
	t->na = glibc_backtrace(t->a, MAXF);
	KEEP_FRAME();
	t->interp1 = i1 - i0;
	t->interp2 = i2 - i1;
}

/* Frame 0 of each list lies in take_all (well under 1 KiB of code):
 * replaced by take_all's address. */
static void same_frame0(void **v, int n)
{
	uintptr_t f = (uintptr_t)take_all;

	if (n > 0 && (uintptr_t)v[0] - f < 1024)
		v[0] = (void *)f;
}

static int equal(const char *name, const char *what, void **a, int na,
		 void **b, int nb)
{
	char why[160];

	if (na == nb && !memcmp(a, b, sizeof(*a) * (size_t)(na > 0 ? na : 0)))
		return 1;
	for (int i = 0; i < na && i < nb; i++)
		if (a[i] != b[i]) {
			snprintf(why, sizeof(why), "%s: frame %d differs (%d and %d frames)",
				 what, i, na, nb);
			goto out;
		}
	snprintf(why, sizeof(why), "%s: %d frames against %d", what, na, nb);
out:
	dump("expected", a, na);
	dump("stacksnap", b, nb);
	report(name, why);
	return 0;
}

/* The frames of the unprepared walk at each place, for the prepared one. */
enum { C_SIGNAL, C_UCONTEXT, C_MAIN, C_THREAD, C_DLOPEN, C_N };
static void *first_frames[C_N][MAXF];
static int first_n[C_N];

/* Checks one place: glibc's frames, the second walk's, and, on a later
 * run, the first run's. On the second run without prepare (every pc now
 * seen, the first run's call sites too) the walks must come from the row
 * caches: at most max_interp frames interpreted per walk (signal
 * trampolines, whose DWARF rows are evaluated every time, with tables
 * too). */
static void check(const char *name, int id, struct take *t,
		  uint64_t max_interp)
{
	char why[160];

	same_frame0(t->a, t->na);
	same_frame0(t->b, t->nb);
	same_frame0(t->b2, t->nb2);
	if (!equal(name, "against glibc", t->a, t->na, t->b, t->nb) ||
	    !equal(name, "second walk against the first", t->b, t->nb, t->b2,
		   t->nb2))
		return;
	if (!strcmp(phase, "unprepared")) {
		memcpy(first_frames[id], t->b, sizeof(*t->b) * (size_t)t->nb);
		first_n[id] = t->nb;
	} else if (!equal(name, "against the first run", first_frames[id],
			  first_n[id], t->b, t->nb)) {
		return;
	}
	if (!strcmp(phase, "unprepared-again") &&
	    (t->interp1 > max_interp || t->interp2 > max_interp)) {
		snprintf(why, sizeof(why), "walks interpreted %llu and %llu "
			 "frames (at most %llu): not the fast path",
			 (unsigned long long)t->interp1,
			 (unsigned long long)t->interp2,
			 (unsigned long long)max_interp);
		report(name, why);
		return;
	}
	report(name, NULL);
}

/* ---- (c) a signal handler, the very first walk of the process ---- */

static NOINLINE void on_signal(int sig, siginfo_t *si, void *uc)
{
	static struct take t;
	void *c[MAXF], *c2[MAXF];
	int nc, nc2, at = -1;
	uint64_t i0 = interpreted();

	(void)sig;
	(void)si;
	if (!strcmp(phase, "unprepared") && (i0 || tables()))
		report("signal-first", "not the first walk");
	in_walk = 1;
	nc = stacksnap_backtrace_ucontext(uc, c, MAXF);
	nc2 = stacksnap_backtrace_ucontext(uc, c2, MAXF);
	in_walk = 0;
	take_all(&t);
	/* __restore_rt is a signal frame: its DWARF row is evaluated every
	 * time, with or without tables. */
	check("signal-handler", C_SIGNAL, &t, 1);
	for (int i = 0; i < t.na; i++)
		if (nc > 0 && t.a[i] == c[0])
			at = i;
	if (at < 0) {
		dump("glibc", t.a, t.na);
		dump("ucontext", c, nc);
		report("signal-ucontext", "interrupted pc not in glibc's trace");
		return;
	}
	if (!equal("signal-ucontext", "against glibc", t.a + at, t.na - at, c, nc) ||
	    !equal("signal-ucontext", "second walk against the first", c, nc, c2,
		   nc2))
		return;
	if (strcmp(phase, "unprepared")) {
		if (!equal("signal-ucontext", "against the first run",
			   first_frames[C_UCONTEXT], first_n[C_UCONTEXT], c, nc))
			return;
	} else {
		memcpy(first_frames[C_UCONTEXT], c, sizeof(*c) * (size_t)nc);
		first_n[C_UCONTEXT] = nc;
	}
	report("signal-ucontext", NULL);
}

static NOINLINE void via_signal(void)
{
	raise(SIGUSR1);
	KEEP_FRAME();
}

/* ---- (a) the main thread, (b) a new thread ---- */

static NOINLINE int chain(int depth, const char *name, int id)
{
	if (depth == 0) {
		struct take t;

		take_all(&t);
		check(name, id, &t, 0);
		return 1;
	}
	int r = chain(depth - 1, name, id);

	KEEP_FRAME();
	return r + depth;
}

static void *thread_main(void *arg)
{
	(void)arg;
	chain(7, "new-thread", C_THREAD);
	return NULL;
}

static void in_thread(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, thread_main, NULL)) {
		report("new-thread", "pthread_create failed");
		return;
	}
	pthread_join(th, NULL);
}

/* ---- (d) a library dlopen()ed after the first walks calls back ---- */

static NOINLINE int from_lib(int n)
{
	struct take t;

	take_all(&t);
	check("after-dlopen", C_DLOPEN, &t, 0);
	KEEP_FRAME();
	return n + 1;
}

/* The four places, in this order: the signal handler first (the
 * process's very first walk), then the main thread, a new thread, and a
 * library dlopen()ed after those walks (on the first run). */
static void run_all(const char *path, void **lib)
{
	via_signal();
	chain(9, "main-thread", C_MAIN);
	in_thread();
	if (!path)
		return;
	if (!*lib && !(*lib = dlopen(path, RTLD_NOW))) {
		report("dlopen", dlerror());
		return;
	}
	int (*entry)(int, int (*)(int)) =
		(int (*)(int, int (*)(int)))dlsym(*lib, "inproc_lib_entry");

	if (entry)
		entry(1, from_lib);
	else
		report("after-dlopen", "inproc_lib_entry not found");
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	void *lib = NULL;

	target_init();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	glibc_backtrace = glibc_backtrace_warm();

	/* No stacksnap call before the handler's. Both runs from one call
	 * site, so that the prepared walks' frames equal the unprepared. */
	for (int run = 0; run < 3; run++) {
		if (run == 1)
			phase = "unprepared-again";
		if (run == 2) {
			if (tables())
				report("no-tables", "tables published without prepare");
			phase = "prepared";
			if (stacksnap_backtrace_prepare() <= 0)
				report("prepare", "no table compiled");
		}
		run_all(argc > 1 ? argv[1] : NULL, &lib);
	}

	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
