/* kunwind_target.c - target of the in-kernel unwinder's tests: makes the
 * marker system call (getppid) from known call chains, one round per line
 * read from stdin, so the test paces the rounds (the first after a dlopen
 * or an exec may come before the tracer has loaded the new tables; later
 * ones must unwind in the kernel). Prints `ready` first. Scenarios:
 *   chain      main > run_round > chain_a > chain_b > chain_c > marker
 *   thread     thread_main > thread_b > marker, a new thread per round
 *   dlopen     dl_entry > dl_b > marker in a dlopen()ed library
 *   exec       at the first line, fork, then exec of this program as
 *              `child`: child_main > child_b > marker in the new image
 *   signal     sig_caller > raise ... handler > handler_b > marker
 *   dwarf      dwarf_caller > kt_dwarf_frame > dwarf_leaf > marker, where
 *              kt_dwarf_frame's CFA is a DWARF expression (the in-kernel
 *              walk stops there; user space goes on: the hybrid)
 *   deep N     recurse x N > marker
 *   garbage    the marker with rsp on a buffer of random words
 *   selfloop   rsp on a buffer whose every word is a return address
 *   badrbp     frame-pointer code without CFI whose rbp chain is broken
 *   bench D N  (bench/kunwind.py) recurse x D, then N markers timed: each
 *              round prints `elapsed_ns T`
 * Built by the tests with gcc/clang, -O2, no frame pointers, C and C++. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEEP() __asm__ volatile("" ::: "memory") /* no tail calls */
/* A distinct store per function, so identical-code folding cannot merge
 * functions whose names the tests expect. */
static volatile int where;
#define HERE(n) (where = (n))

#ifdef __cplusplus
extern "C" {
#endif
NOINLINE void marker(void);
#ifdef __cplusplus
}
#endif

NOINLINE void marker(void)
{
	syscall(SYS_getppid);
	KEEP();
}

NOINLINE static void chain_c(void) { HERE(1); marker(); KEEP(); }
NOINLINE static void chain_b(void) { HERE(2); chain_c(); KEEP(); }
NOINLINE static void chain_a(void) { HERE(3); chain_b(); KEEP(); }

NOINLINE static void thread_b(void) { HERE(4); marker(); KEEP(); }
static void *thread_main(void *arg)
{
	(void)arg;
	thread_b();
	KEEP();
	return NULL;
}

NOINLINE static void handler_b(void) { HERE(5); marker(); KEEP(); }
static void handler(int sig)
{
	(void)sig;
	handler_b();
	KEEP();
}
NOINLINE static void sig_caller(void) { HERE(6); raise(SIGUSR1); KEEP(); }

/* kt_dwarf_frame(fn): calls fn on a stack realigned to 64 bytes, keeping
 * the entry rsp in rbx; its CFA is rbx + 16, said with
 * DW_CFA_def_cfa_expression (DW_OP_breg3 16), which a compact row cannot
 * hold (CFA = rsp|rbp + offset): a row that needs DWARF evaluation. */
#ifdef __cplusplus
extern "C" {
#endif
void kt_dwarf_frame(void (*fn)(void));
#ifdef __cplusplus
}
#endif
__asm__(".text\n"
	".globl kt_dwarf_frame\n"
	".type kt_dwarf_frame, @function\n"
	"kt_dwarf_frame:\n"
	".cfi_startproc\n"
	"push %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_offset %rbx, -16\n"
	"mov %rsp, %rbx\n"
	".cfi_escape 0x0f, 0x02, 0x73, 0x10\n" /* CFA = rbx + 16 */
	"and $-64, %rsp\n"
	"call *%rdi\n"
	"mov %rbx, %rsp\n"
	".cfi_def_cfa %rsp, 16\n"
	"pop %rbx\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size kt_dwarf_frame, .-kt_dwarf_frame\n");

NOINLINE static void dwarf_leaf(void) { HERE(8); marker(); KEEP(); }
NOINLINE static void dwarf_caller(void) { HERE(9); kt_dwarf_frame(dwarf_leaf); KEEP(); }

static long bench_n; /* markers per call at the bottom (bench mode) */

NOINLINE static int recurse(int n)
{
	int r;

	if (n <= 1)
		for (long i = 0; i < (bench_n ? bench_n : 1); i++)
			marker();
	else
		r = recurse(n - 1);
	KEEP();
	return n <= 1 ? 1 : r + 1;
}

NOINLINE static void child_b(void) { HERE(7); marker(); KEEP(); }
/* Waits for the test's go (a line on stdin); false at EOF. */
static int next_round(void)
{
	char line[64];

	return fgets(line, sizeof(line), stdin) != NULL;
}

/* The first round right after the exec, then one per line. */
NOINLINE static void child_main(void)
{
	do
		child_b();
	while (next_round());
	KEEP();
}

/* The marker with rsp on a buffer of words chosen by the caller: what the
 * walk reads as the caller's frames is garbage. */
static uint64_t fake_stack[8192] __attribute__((aligned(16)));
NOINLINE static void on_fake_stack(void)
{
	__asm__ volatile("mov %%rsp, %%r12\n\t"
			 "lea %0, %%rsp\n\t"
			 "mov $110, %%eax\n\t" /* getppid */
			 "syscall\n\t"
			 "mov %%r12, %%rsp\n\t"
			 : : "m"(fake_stack[16])
			 : "rax", "rcx", "r11", "r12", "memory");
}

/* Frame-pointer code without CFI in an anonymous mapping:
 *   push %rbp; mov %rsp,%rbp; mov $BAD,%rbp; mov $110,%eax; syscall;
 *   mov %rsp,%rbp (restore a sane rbp for pop); pop %rbp; ret
 * rbp is set 1 MiB above the stack pointer, beyond the stack, so the
 * frame-pointer step reads memory that is not the stack. The mapping is
 * kept across rounds: its first round may come before the tracer knows
 * it. */
static void call_bad_rbp(void)
{
	static void *p;
	static const unsigned char code[] = {
		0x55,			      /* push %rbp */
		0x48, 0x89, 0xe5,	      /* mov %rsp,%rbp */
		0x48, 0x8d, 0xac, 0x24,	      /* lea 0x100000(%rsp),%rbp */
		0x00, 0x00, 0x10, 0x00,
		0x48, 0x83, 0xe5, 0xf0,	      /* and $-16,%rbp */
		0xb8, 110, 0, 0, 0,	      /* mov $110,%eax */
		0x0f, 0x05,		      /* syscall */
		0x48, 0x89, 0xe5,	      /* mov %rsp,%rbp */
		0x5d,			      /* pop %rbp */
		0xc3,			      /* ret */
	};
	if (!p) {
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			exit(1);
		memcpy(p, code, sizeof(code));
	}
	((void (*)(void))p)();
}

NOINLINE static void run_round(const char *what, int arg, const char *self)
{
	if (!strcmp(what, "chain")) {
		chain_a();
	} else if (!strcmp(what, "thread")) {
		pthread_t t;

		if (!pthread_create(&t, NULL, thread_main, NULL))
			pthread_join(t, NULL);
	} else if (!strcmp(what, "dlopen")) {
		static void (*entry)(void);

		if (!entry) {
			char path[4096];
			const char *slash = strrchr(self, '/');
			void *h;

			snprintf(path, sizeof(path), "%.*s/libkunwind_dl.so",
				 slash ? (int)(slash - self) : 1, slash ? self : ".");
			h = dlopen(path, RTLD_NOW);
			if (!h) {
				fprintf(stderr, "dlopen: %s\n", dlerror());
				exit(1);
			}
			entry = (void (*)(void))dlsym(h, "dl_entry");
		}
		entry();
	} else if (!strcmp(what, "signal")) {
		sig_caller();
	} else if (!strcmp(what, "dwarf")) {
		dwarf_caller();
	} else if (!strcmp(what, "deep")) {
		recurse(arg);
	} else if (!strcmp(what, "bench")) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		recurse(arg);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("elapsed_ns %lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL +
						(b.tv_nsec - a.tv_nsec));
		fflush(stdout);
	} else if (!strcmp(what, "garbage")) {
		srand(42);
		for (size_t i = 0; i < sizeof(fake_stack) / 8; i++)
			fake_stack[i] = (uint64_t)rand() << 33 ^ (uint64_t)rand();
		on_fake_stack();
	} else if (!strcmp(what, "selfloop")) {
		/* Every word a return address inside chain_b: each frame
		 * steps up by chain_b's frame size, finding chain_b again. */
		uint64_t ra = (uint64_t)(uintptr_t)&chain_b + 5;

		for (size_t i = 0; i < sizeof(fake_stack) / 8; i++)
			fake_stack[i] = ra;
		on_fake_stack();
	} else if (!strcmp(what, "badrbp")) {
		call_bad_rbp();
	}
	KEEP();
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "chain";
	int arg = argc > 2 ? atoi(argv[2]) : 0;

	bench_n = argc > 3 ? atol(argv[3]) : 0;
	if (!strcmp(what, "child")) {
		child_main();
		return 0;
	}
	alarm(bench_n ? 600 : 60); /* a test that died leaves no target behind */
	printf("ready\n");
	fflush(stdout);
	if (!strcmp(what, "exec")) {
		pid_t c;
		int st;

		if (!next_round()) /* fork once the tracer follows us */
			return 0;
		c = fork();
		if (c == 0) {
			execl("/proc/self/exe", argv[0], "child", (char *)NULL);
			_exit(127);
		}
		waitpid(c, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	signal(SIGUSR1, handler);
	while (next_round())
		run_round(what, arg, argv[0]);
	return 0;
}
