/* test_api_errors.c - the errors of the public API tell the truth (issue
 * 40): each return value and errno as the header states it, checked
 * against the kernel's own answer where there is one (ptrace of one's
 * own process, kill() of a missing pid, /proc/self/maps). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "stacksnap.h"

static char logged[8192];

static void collect(enum stacksnap_log_level level, const char *msg, void *user)
{
	size_t n = strlen(logged);

	(void)level;
	(void)user;
	snprintf(logged + n, sizeof(logged) - n, "%s\n", msg);
}

static struct stacksnap_ctx *new_ctx(void)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, o, .log = collect,
		       .log_level = STACKSNAP_LOG_DEBUG);

	logged[0] = 0;
	return stacksnap_ctx__new(&o);
}

/* A pid no process has: a child's, once reaped. */
static pid_t missing_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

/* The kernel refuses a ptrace of one's own process: check says so, with
 * the reason and the way out, and capture and the walker say the same
 * (not a security module). */
static void test_self_refused(void)
{
	struct stacksnap_ctx *ctx = new_ctx();
	struct stacksnap_snapshot *snap;
	struct stacksnap_walker *w;
	long kernel = ptrace(PTRACE_SEIZE, getpid(), 0, 0);
	int kernel_errno = errno;

	CHECKF(kernel == -1 && kernel_errno == EPERM, "oracle: ptrace(self) %ld %d",
	       kernel, kernel_errno);
	errno = 0;
	CHECK_EQ_U64(stacksnap_snapshot__check(ctx, getpid()), -EPERM);
	CHECK(errno == EPERM);
	CHECKF(strstr(logged, "stacksnap_backtrace") && !strstr(logged, "AppArmor"),
	       "log: %s", logged);
	logged[0] = 0;
	snap = stacksnap_snapshot__capture(ctx, getpid(), NULL);
	CHECK(!snap && errno == EPERM);
	CHECKF(strstr(logged, "stacksnap_backtrace") && !strstr(logged, "security module"),
	       "log: %s", logged);
	w = stacksnap_walker__new(ctx, NULL);
	CHECK(w);
	if (w) {
		logged[0] = 0;
		CHECK(!stacksnap_walker__attach(w, getpid()) && errno == EPERM);
		CHECKF(strstr(logged, "stacksnap_backtrace"), "log: %s", logged);
		stacksnap_walker__free(w);
	}
	stacksnap_ctx__free(ctx);
}

/* A missing pid is ESRCH everywhere, as kill() says it. */
static void test_missing_pid_esrch(void)
{
	struct stacksnap_ctx *ctx = new_ctx();
	struct stacksnap_procs *procs = stacksnap_procs__new(ctx, NULL);
	pid_t pid = missing_pid();

	CHECK(kill(pid, 0) == -1 && errno == ESRCH); /* the oracle */
	errno = 0;
	CHECK(!stacksnap_addrspace__from_pid(ctx, pid));
	CHECKF(errno == ESRCH, "from_pid: %s", strerror(errno));
	CHECK_EQ_U64(stacksnap_procs__attach_pid(procs, pid), -ESRCH);
	CHECK_EQ_U64(stacksnap_snapshot__check(ctx, pid), -ESRCH);
	CHECK(!stacksnap_snapshot__capture(ctx, pid, NULL) && errno == ESRCH);
	stacksnap_procs__free(procs);
	stacksnap_ctx__free(ctx);
}

/* Reads outside a copy are -ENODATA, with errno; find_mapping's -ENOENT
 * sets errno as every negative return does. */
static void test_mem_and_mapping_errno(void)
{
	struct stacksnap_ctx *ctx = new_ctx();
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, getpid());
	static const uint8_t bytes[64];
	struct stacksnap_mem *copy = stacksnap_mem__new_copy(bytes, sizeof(bytes), 0x1000);
	STACKSNAP_OPTS(stacksnap_mapping, mp);
	uint64_t v;

	CHECK(stacksnap_mem__read(copy, 0x1000, &v, 8) == 0);
	errno = 0;
	CHECK_EQ_U64(stacksnap_mem__read(copy, 0x2000, &v, 8), -ENODATA);
	CHECK(errno == ENODATA);
	errno = 0;
	CHECK_EQ_U64(stacksnap_addrspace__find_mapping(as, 0, &mp), -ENOENT);
	CHECK(errno == ENOENT);
	stacksnap_mem__free(copy);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
}

/* A self source stays one: set_copy refuses it (as set_more does). */
static void test_set_copy_self(void)
{
	struct stacksnap_mem *self = stacksnap_mem__new_self();
	static const uint8_t bytes[16];
	uint64_t v = 0x1122334455667788ull, got = 0;

	errno = 0;
	CHECK_EQ_U64(stacksnap_mem__set_copy(self, bytes, sizeof(bytes),
					     (uint64_t)(uintptr_t)&v), -EINVAL);
	CHECK(errno == EINVAL);
	/* still reads the process's own memory */
	CHECK(stacksnap_mem__read(self, (uint64_t)(uintptr_t)&v, &got, 8) == 0);
	CHECK_EQ_U64(got, v);
	stacksnap_mem__free(self);
}

/* Is addr in any mapping of /proc/self/maps? */
static bool mapped(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	bool in = false;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi)
			in = true;
	if (f)
		fclose(f);
	return in;
}

/* next before start is -EINVAL; a pc outside every mapping ends the walk
 * NO_MODULE with the default options (frame pointer and analysis on). */
static void test_unwinder_no_module(void)
{
	struct stacksnap_ctx *ctx = new_ctx();
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, getpid());
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	struct stacksnap_mem *self = stacksnap_mem__new_self();
	struct stacksnap_regs regs = { 0 };
	struct stacksnap_frame fr;
	uint64_t stack[4] = { 0 };
	int n = 0;

	errno = 0;
	CHECK_EQ_U64(stacksnap_unwinder__next(uw, &fr), -EINVAL);
	CHECK(errno == EINVAL);
	CHECK(!mapped(0x10)); /* the oracle */
	regs.regs[STACKSNAP_REG_RIP] = 0x10;
	regs.regs[STACKSNAP_REG_RSP] = (uint64_t)(uintptr_t)stack;
	regs.regs[STACKSNAP_REG_RBP] = 0;
	regs.valid = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP |
		     1u << STACKSNAP_REG_RBP;
	CHECK(stacksnap_unwinder__start(uw, as, &regs, self) == 0);
	while (stacksnap_unwinder__next(uw, &fr) == 1)
		n++;
	CHECK(n == 1);
	CHECKF(stacksnap_unwinder__end(uw) == STACKSNAP_END_NO_MODULE, "end: %s",
	       stacksnap_end__str(stacksnap_unwinder__end(uw)));
	stacksnap_mem__free(self);
	stacksnap_unwinder__free(uw);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
}

/* Unknown symbolize flags are refused, as libbpf refuses unknown bits. */
static void test_symbolize_unknown_flags(void)
{
	struct stacksnap_ctx *ctx = new_ctx();
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, getpid());
	struct stacksnap_sym sym[4];
	uint64_t pc = (uint64_t)(uintptr_t)test_symbolize_unknown_flags;

	CHECK(stacksnap_addrspace__symbolize(as, pc, false, STACKSNAP_SYM_SYMTAB,
					     sym, 4) >= 1);
	errno = 0;
	CHECK_EQ_U64(stacksnap_addrspace__symbolize(as, pc, false, 0x80, sym, 4),
		     -EINVAL);
	CHECK(errno == EINVAL);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
}

/* The frames of a walk taken inside a SIGUSR1 handler. */
static struct stacksnap_frame sig_frames[64];
static int sig_n;

static __attribute__((noinline)) void walk_in_handler(int sig)
{
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(NULL);
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, getpid());
	struct stacksnap_mem *mem = stacksnap_mem__new_self();
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	struct stacksnap_regs regs = { 0 };
	enum stacksnap_end end;
	uint64_t ip, sp, bp;

	(void)sig;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	regs.regs[STACKSNAP_REG_RIP] = ip;
	regs.regs[STACKSNAP_REG_RSP] = sp;
	regs.regs[STACKSNAP_REG_RBP] = bp;
	regs.valid = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP |
		     1u << STACKSNAP_REG_RBP;
	sig_n = stacksnap_unwind(uw, as, &regs, mem, sig_frames, 64, &end);
	stacksnap_unwinder__free(uw);
	stacksnap_mem__free(mem);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
}

/* How to look a frame's pc up: frame 0 and an interrupted frame exact, the
 * signal trampoline exact too (the rule "i > 0 && !SIGNAL" named it after
 * the function before it), every other frame a return address. The
 * oracle: the kernel's sa_restorer for SIGUSR1, where the trampoline's
 * frame must be, at offset 0 of its function. */
static void test_frame_is_return(void)
{
	struct stacksnap_ctx *ctx = new_ctx();
	struct stacksnap_addrspace *as;
	struct { uint64_t handler, flags, restorer, mask; } kact = { 0 };
	struct sigaction sa = { .sa_handler = walk_in_handler };
	int tramp = -1;

	sigaction(SIGUSR1, &sa, NULL);
	CHECK(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &kact, 8) == 0);
	raise(SIGUSR1);
	as = stacksnap_addrspace__from_pid(ctx, getpid());
	CHECK(sig_n > 3);
	CHECK(!stacksnap_frame__is_return(&sig_frames[0]));
	for (int i = 0; i < sig_n; i++) {
		struct stacksnap_sym sym = { 0 };
		bool ret = stacksnap_frame__is_return(&sig_frames[i]);

		if (sig_frames[i].flags & STACKSNAP_FRAME_SIGRETURN) {
			tramp = i;
			CHECK_EQ_U64(sig_frames[i].pc, kact.restorer);
			CHECK(!ret);
			CHECK(stacksnap_addrspace__symbolize(as, sig_frames[i].pc, ret,
							     STACKSNAP_SYM_SYMTAB, &sym, 1) == 1);
			CHECKF(sym.function && sym.offset == 0, "%s+%#llx",
			       sym.function ? sym.function : "?",
			       (unsigned long long)sym.offset);
		} else if (sig_frames[i].flags & STACKSNAP_FRAME_SIGNAL) {
			CHECK(!ret);
		} else if (i > 0) {
			CHECK(ret);
		}
	}
	CHECK(tramp > 0 && tramp + 1 < sig_n &&
	      (sig_frames[tramp + 1].flags & STACKSNAP_FRAME_SIGNAL));
	CHECK(!stacksnap_frame__is_return(NULL));
	signal(SIGUSR1, SIG_DFL);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
}

TEST_MAIN("api_errors", TEST(test_self_refused), TEST(test_missing_pid_esrch),
	  TEST(test_mem_and_mapping_errno), TEST(test_set_copy_self),
	  TEST(test_unwinder_no_module), TEST(test_symbolize_unknown_flags),
	  TEST(test_frame_is_return))
