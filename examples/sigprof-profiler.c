/* sigprof-profiler.c - libstacksnap inside the program it profiles: a
 * SIGPROF sampling profiler and a crash handler, both on an 8 KiB
 * alternate signal stack (glibc's classic SIGSTKSZ), collecting return
 * addresses with stacksnap_backtrace_ucontext() in the handler (async-
 * signal-safe: no allocation, no lock) into memory set aside beforehand,
 * and naming them afterwards, outside the handler, with
 * stacksnap_addrspace__symbolize(). Built against the installed library:
 *   cc -O2 sigprof-profiler.c $(pkg-config --cflags --libs stacksnap)
 * Run: ./sigprof-profiler            profile 300 ms of busy work, then
 *                                    take a SIGSEGV and print its stack
 *      ./sigprof-profiler --check    the same, and glibc's backtrace() of
 *                                    the crash handler, raw, to compare */
#define _GNU_SOURCE
#include <execinfo.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <stacksnap.h>

#define MAX_DEPTH 64
#define MAX_SAMPLES 4096

/* Samples, written by the handler: slot i is claimed by an atomic
 * increment, so the handler needs no lock. */
struct sample {
	int n;
	void *ips[MAX_DEPTH];
};
static struct sample samples[MAX_SAMPLES];
static atomic_uint nsamples;

static void on_sigprof(int sig, siginfo_t *si, void *uc)
{
	unsigned i = atomic_fetch_add(&nsamples, 1);

	(void)sig;
	(void)si;
	if (i < MAX_SAMPLES)
		samples[i].n = stacksnap_backtrace_ucontext(uc, samples[i].ips,
							    MAX_DEPTH);
}

/* The crash: its stack, then back to main to name it (a real crash
 * handler would write the addresses and /proc/self/maps somewhere and
 * let `stacksnap symbolize --maps` name them later). */
static struct sample crash, crash_glibc;
static sigjmp_buf after_crash;
static int check;

static void on_sigsegv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	crash.n = stacksnap_backtrace_ucontext(uc, crash.ips, MAX_DEPTH);
	if (check) /* the oracle; libgcc_s is loaded already (main) */
		crash_glibc.n = backtrace(crash_glibc.ips, MAX_DEPTH);
	siglongjmp(after_crash, 1);
}

static volatile uint64_t sink;

__attribute__((noinline)) static void busy_leaf(void)
{
	for (int i = 0; i < 20000; i++)
		sink = sink * 6364136223846793005ull + 1442695040888963407ull;
}

__attribute__((noinline)) static void busy_mid(void)
{
	busy_leaf();
	__asm__ volatile("" ::: "memory");
}

static int *volatile nowhere;

__attribute__((noinline)) static void crash_leaf(void)
{
	sink = (uint64_t)*nowhere;
}

__attribute__((noinline)) static void crash_mid(void)
{
	crash_leaf();
	__asm__ volatile("" ::: "memory");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The function holding a pc: ips[0] of a ucontext walk is exact, the
 * others are return addresses (looked up at pc - 1). */
static const char *name_of(struct stacksnap_addrspace *as, void *pc, int i)
{
	struct stacksnap_sym sym;

	if (stacksnap_addrspace__symbolize(as, (uint64_t)(uintptr_t)pc, i > 0,
					   STACKSNAP_SYM_SYMTAB, &sym, 1) < 1 ||
	    !sym.function)
		return "??";
	return sym.function;
}

int main(int argc, char **argv)
{
	static uint8_t altstack[8192];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa = { 0 };
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } }, off = { 0 };
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	unsigned n, in_leaf;
	void *warm[2];
	double end;

	check = argc > 1 && !strcmp(argv[1], "--check");
	backtrace(warm, 2); /* loads libgcc_s now, not in the handler */
	/* Optional: compile the unwind tables now, outside any handler. */
	stacksnap_backtrace_prepare();
	if (sigaltstack(&ss, NULL))
		return 1;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sa.sa_sigaction = on_sigprof;
	sigaction(SIGPROF, &sa, NULL);
	sa.sa_sigaction = on_sigsegv;
	sigaction(SIGSEGV, &sa, NULL);

	setitimer(ITIMER_PROF, &it, NULL);
	for (end = now_s() + 0.3; now_s() < end;)
		busy_mid();
	setitimer(ITIMER_PROF, &off, NULL);
	if (!sigsetjmp(after_crash, 1))
		crash_mid();

	/* Outside the handlers: name what they collected. */
	ctx = stacksnap_ctx__new(NULL);
	as = ctx ? stacksnap_addrspace__from_pid(ctx, getpid()) : NULL;
	if (!as)
		return 1;
	in_leaf = 0;
	n = atomic_load(&nsamples);
	if (n > MAX_SAMPLES)
		n = MAX_SAMPLES;
	for (unsigned i = 0; i < n; i++)
		for (int k = 0; k < samples[i].n && k < 2; k++)
			if (!strcmp(name_of(as, samples[i].ips[k], k), "busy_leaf")) {
				in_leaf++;
				break;
			}
	printf("profile: %u samples, %u in busy_leaf\n", n, in_leaf);
	for (unsigned i = 0; i < n && i < 3; i++) {
		printf("sample %u:", i);
		for (int k = 0; k < samples[i].n; k++)
			printf(" %s", name_of(as, samples[i].ips[k], k));
		printf("\n");
	}
	printf("crash:");
	for (int k = 0; k < crash.n; k++)
		printf(" %s", name_of(as, crash.ips[k], k));
	printf("\n");
	if (check) {
		printf("crash-ips:");
		for (int k = 0; k < crash.n; k++)
			printf(" %p", crash.ips[k]);
		printf("\nglibc-ips:");
		for (int k = 0; k < crash_glibc.n; k++)
			printf(" %p", crash_glibc.ips[k]);
		printf("\n");
	}
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	return 0;
}
