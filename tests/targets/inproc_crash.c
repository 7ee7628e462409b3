/* inproc_crash.c - a crash handler on a small alternate signal stack:
 * a SIGSEGV from a null dereference at the end of a deep call chain, or
 * from a stack overflow, caught on a sigaltstack of the size asked
 * (filled with a pattern, a PROT_NONE guard page below it), where
 * stacksnap_backtrace_ucontext walks the interrupted context; then glibc's
 * backtrace() of the same handler (libgcc_s loaded beforehand) for
 * comparison. Prints the stack the walk used (the lowest byte of the
 * pattern it overwrote, from the handler's own frame) and both traces.
 *
 *   inproc_crash null|overflow PREPARE(0|1) ALTSTACK_BYTES|min GLIBC(0|1)
 *
 * "min" is the documented minimum: the kernel's signal frame
 * (AT_MINSIGSTKSZ) + STACKSNAP_BACKTRACE_STACK_USE + 512 bytes for this
 * handler's own frame.
 *
 * Output (one line each, from the handler, with write()):
 *   walk_bytes N       stack the walk used below the handler's frame
 *   total_bytes N      alternate stack used in all (kernel frame included)
 *   ours N a b c ...   stacksnap_backtrace_ucontext's addresses (hex)
 *   glibc N a b c ...  glibc's backtrace() of the handler (when asked)
 * and exits 0; a crash in the handler kills the process with SIGSEGV. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "stacksnap.h"
#include "glibc_backtrace.h"

#define MAXF 64
#define PATTERN 0xa5
#define NOINLINE __attribute__((noinline))

static uint8_t *alt_lo;		/* lowest usable byte of the alternate stack */
static size_t alt_size;
static int want_glibc;
static void *ours[MAXF], *theirs[MAXF];
static int (*glibc_backtrace)(void **, int);
/* Called through pointers bound at load: the first call of a function
 * through the PLT binds it lazily, on the handler's stack, with the
 * AVX-512 state saved there (~3 KiB), which is no test of the walk. */
static ssize_t (*volatile write_fn)(int, const void *, size_t) = write;
static void (*volatile exit_fn)(int) = _exit;

/* Appends s to the line in buf (no stdio in a handler). */
static void put(char *buf, size_t *len, const char *s)
{
	while (*s && *len < 4000)
		buf[(*len)++] = *s++;
}

static void put_hex(char *buf, size_t *len, uintptr_t v)
{
	char tmp[17];
	int i = 16;

	tmp[i] = 0;
	do {
		tmp[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	put(buf, len, tmp + i);
}

static void put_dec(char *buf, size_t *len, size_t v)
{
	char tmp[24];
	int i = 23;

	tmp[i] = 0;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(buf, len, tmp + i);
}

static void print_trace(const char *what, void **ips, int n)
{
	static char line[4096];
	size_t len = 0;

	put(line, &len, what);
	put(line, &len, " ");
	put_dec(line, &len, n < 0 ? 0 : (size_t)n);
	for (int i = 0; i < n; i++) {
		put(line, &len, " ");
		put_hex(line, &len, (uintptr_t)ips[i]);
	}
	put(line, &len, "\n");
	if (write_fn(1, line, len) < 0)
		exit_fn(3);
}

static void print_num(const char *what, size_t v)
{
	static char line[64];
	size_t len = 0;

	put(line, &len, what);
	put(line, &len, " ");
	put_dec(line, &len, v);
	put(line, &len, "\n");
	if (write_fn(1, line, len) < 0)
		exit_fn(3);
}

/* The lowest byte of the alternate stack no longer holding the pattern. */
static uintptr_t lowest_used(void)
{
	const volatile uint8_t *p = alt_lo;

	for (size_t i = 0; i < alt_size; i++)
		if (p[i] != PATTERN)
			return (uintptr_t)alt_lo + i;
	return (uintptr_t)alt_lo + alt_size;
}

static NOINLINE void on_segv(int sig, siginfo_t *si, void *uc)
{
	volatile char here;	/* the handler's own frame */
	uintptr_t sp = (uintptr_t)&here, low;
	int n, ng;

	(void)sig;
	(void)si;
	n = stacksnap_backtrace_ucontext(uc, ours, MAXF);
	low = lowest_used();
	print_num("walk_bytes", low < sp ? sp - low : 0);
	print_num("total_bytes", (uintptr_t)alt_lo + alt_size - low);
	print_trace("ours", ours, n);
	if (want_glibc) {
		ng = glibc_backtrace(theirs, MAXF);
		print_trace("glibc", theirs, ng);
	}
	exit_fn(0);
}

/* A deep chain of distinct functions ending in a null dereference. */
static volatile int *volatile null_ptr;
static volatile int sink;

static NOINLINE void fault(void)
{
	sink = *null_ptr;
}

#define LINK(name, next)                                                       \
	static NOINLINE void name(int d)                                       \
	{                                                                      \
		volatile char pad[24];                                         \
		pad[0] = (char)d;                                              \
		if (d > 0)                                                     \
			next(d - 1);                                           \
		else                                                           \
			fault();                                               \
		sink += pad[0];                                                \
	}
static void chain_a(int d);
LINK(chain_d, chain_a)
LINK(chain_c, chain_d)
LINK(chain_b, chain_c)
LINK(chain_a, chain_b)

/* Recursion until the stack runs out. */
static NOINLINE int overflow(int d)
{
	volatile char pad[256];

	pad[0] = (char)d;
	pad[255] = (char)(overflow(d + 1) + pad[0]);
	return pad[255];
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	stack_t ss;
	uint8_t *m;

	if (argc != 5) {
		fprintf(stderr, "usage: inproc_crash null|overflow PREPARE "
				"ALTSTACK_BYTES GLIBC\n");
		return 2;
	}
	if (!strcmp(argv[3], "min"))
		alt_size = (getauxval(AT_MINSIGSTKSZ) + STACKSNAP_BACKTRACE_STACK_USE +
			    512 + 15) & ~(size_t)15;
	else
		alt_size = strtoul(argv[3], NULL, 0);
	want_glibc = atoi(argv[4]);
	glibc_backtrace = glibc_backtrace_warm();
	if (atoi(argv[2]) && stacksnap_backtrace_prepare() < 0) {
		perror("stacksnap_backtrace_prepare");
		return 2;
	}
	/* The alternate stack with a guard page below: a handler that needs
	 * more than it faults, and dies. */
	m = mmap(NULL, alt_size + 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE)) {
		perror("mmap");
		return 2;
	}
	alt_lo = m + 4096;
	memset(alt_lo, PATTERN, alt_size);
	ss.ss_sp = alt_lo;
	ss.ss_size = alt_size;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL)) {
		perror("sigaltstack");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	if (!strcmp(argv[1], "overflow"))
		return overflow(0);
	chain_a(23);
	return 1;
}
