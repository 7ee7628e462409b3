/* inproc_vdso.c - stacksnap_backtrace_ucontext from a SIGPROF handler that
 * interrupts a thread spinning in the vDSO (clock_gettime, gettimeofday):
 * the walk must cross the vDSO's frame (the interrupted pc, exact) and
 * libc's wrapper to the spinning function and on, frame by frame, to the
 * chain stacksnap_backtrace gives at a call site in the same function
 * (which ends at _start), first with .eh_frame interpreted, then with
 * tables. Prints `ok NAME` / `FAIL NAME: why` and `N passed, N failed`.
 * Built with -rdynamic (dladdr names the frames in failures). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>

#include <stacksnap.h>

#include "target.h"

#define MAXF 128
#define KEEP 64		/* vDSO samples kept for checking */
#define WANT 20		/* vDSO samples a case needs */

static uintptr_t vdso_lo, vdso_hi;

/* The samples the handler took with the interrupted pc in the vDSO. */
static void *samples[KEEP][MAXF];
static int nframes[KEEP];
static volatile int nsamples, nother, errors;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
	void *ips[MAXF];
	int n = stacksnap_backtrace_ucontext(uc, ips, MAXF);

	if (n < 1) {
		errors++;
		return;
	}
	if ((uintptr_t)ips[0] - vdso_lo >= vdso_hi - vdso_lo) {
		nother++;
		return;
	}
	if (nsamples < KEEP) {
		memcpy(samples[nsamples], ips, sizeof(*ips) * n);
		nframes[nsamples] = n;
		nsamples++;
	}
}

/* The vDSO's extent, from its ELF header (AT_SYSINFO_EHDR). */
static int find_vdso(void)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Phdr *ph;

	if (!eh)
		return -1;
	ph = (const Elf64_Phdr *)((const char *)eh + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			vdso_lo = (uintptr_t)eh;
			vdso_hi = vdso_lo + ph[i].p_vaddr + ph[i].p_memsz;
			return 0;
		}
	return -1;
}

static void *ref[MAXF];
static int nref;

NOINLINE void spin(int use_gettimeofday, double seconds)
{
	struct timespec t0, t;
	struct timeval tv;
	double cpu = 0;

	nref = stacksnap_backtrace(ref, MAXF); /* ref[0] is in spin */
	KEEP_FRAME();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	while (nsamples < KEEP && cpu < seconds) {
		for (int i = 0; i < 1000; i++) {
			if (use_gettimeofday)
				gettimeofday(&tv, NULL);
			else
				clock_gettime(CLOCK_MONOTONIC, &t);
			KEEP_FRAME();
		}
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
		cpu = (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
	}
	KEEP_FRAME();
}

NOINLINE void level2(int g, double s)
{
	spin(g, s);
	KEEP_FRAME();
}

NOINLINE void level1(int g, double s)
{
	level2(g, s);
	KEEP_FRAME();
}

static const char *name_of(void *pc)
{
	Dl_info di;

	return dladdr(pc, &di) && di.dli_sname ? di.dli_sname : "?";
}

static void dump(void **ips, int n)
{
	for (int i = 0; i < n; i++)
		fprintf(stderr, "    #%d %p %s%s\n", i, ips[i], name_of(ips[i]),
			(uintptr_t)ips[i] - vdso_lo < vdso_hi - vdso_lo ? " [vdso]" : "");
}

static int passed, failed;

static void run_case(const char *name, int use_gettimeofday)
{
	char why[256] = "";
	struct itimerval it = { { 0, 500 }, { 0, 500 } }; /* 2 kHz of CPU */
	struct itimerval off = { { 0, 0 }, { 0, 0 } };

	nsamples = nother = errors = 0;
	setitimer(ITIMER_PROF, &it, NULL);
	level1(use_gettimeofday, 3.0);
	setitimer(ITIMER_PROF, &off, NULL);

	if (nref < 4 || strcmp(name_of(ref[0]), "spin") ||
	    strcmp(name_of(ref[nref - 1]), "_start"))
	{
		snprintf(why, sizeof(why), "the reference chain is not spin ... _start (%d frames)",
			 nref);
		dump(ref, nref);
	}
	else if (errors)
		snprintf(why, sizeof(why), "%d walks failed", errors);
	else if (nsamples < WANT)
		snprintf(why, sizeof(why), "only %d samples in the vDSO (%d elsewhere)",
			 nsamples, nother);
	for (int s = 0; s < nsamples && !why[0]; s++) {
		void **ips = samples[s];
		int n = nframes[s], k = n - nref; /* where spin's frame must be */

		/* ips[0] in the vDSO, then at most a vDSO frame or two and
		 * libc's wrapper, then spin, then exactly ref's callers. */
		if (k < 1 || k > 4 || strcmp(name_of(ips[k]), "spin") ||
		    memcmp(ips + k + 1, ref + 1, sizeof(*ips) * (nref - 1))) {
			snprintf(why, sizeof(why), "sample %d (%d frames) does not go on "
				 "through spin to the reference chain's %d callers",
				 s, n, nref - 1);
			fprintf(stderr, "  sample:\n");
			dump(ips, n);
			fprintf(stderr, "  reference (stacksnap_backtrace in spin):\n");
			dump(ref, nref);
		}
	}
	if (why[0]) {
		printf("FAIL %s: %s\n", name, why);
		failed++;
	} else {
		printf("ok   %s: %d samples in the vDSO, each through spin to _start "
		       "(%d frames); %d elsewhere\n", name, nsamples, nframes[0], nother);
		passed++;
	}
}

int main(void)
{
	struct sigaction sa;

	target_init();
	if (find_vdso()) {
		printf("FAIL vdso: no vDSO (AT_SYSINFO_EHDR)\n0 passed, 1 failed\n");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);

	run_case("interpreted/clock_gettime", 0);
	run_case("interpreted/gettimeofday", 1);
	if (stacksnap_backtrace_prepare() < 0) {
		printf("FAIL prepare: %s\n", strerror(errno));
		failed++;
	}
	run_case("tables/clock_gettime", 0);
	run_case("tables/gettimeofday", 1);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
