/* test_snapshot.c - the capture given the caller's address space: its
 * writable mappings clamp the copies (no second read of /proc/PID/maps),
 * and a thread whose stack was mapped after that read is still copied
 * (the capture reads the maps afresh). The oracle is the same capture
 * without the address space. And the search of an alternate signal
 * stack's copy for the signal frame that switched stacks. And a process
 * gone before its maps are read: no error logged; a re-read of a
 * process's maps under the kernel's records merges, not replaces. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "base/ucontext_regs.h"
#include "harness.h"
#include "stacksnap.h"

static struct stacksnap_ctx *ctx;

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* The child: on each byte from `in`, starts 4 threads (new stack
 * mappings), then answers on `out`. */
static void child_main(int in, int out)
{
	char c;

	alarm(60); /* never outlive a broken test */
	while (read(in, &c, 1) == 1) {
		for (int i = 0; i < 4; i++) {
			pthread_t th;

			pthread_create(&th, NULL, sleeper, NULL);
		}
		usleep(20000); /* the threads reach pause() */
		if (write(out, "k", 1) != 1)
			_exit(1);
	}
	_exit(0);
}

static pid_t start_child(int *cmd, int *ack)
{
	int a[2], b[2];
	pid_t pid;

	if (pipe(a) || pipe(b))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		child_main(a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	*cmd = a[1];
	*ack = b[0];
	return pid;
}

static bool more_threads(int cmd, int ack)
{
	char c;

	return write(cmd, "c", 1) == 1 && read(ack, &c, 1) == 1;
}

static struct stacksnap_snapshot *capture(pid_t pid, const struct stacksnap_addrspace *as)
{
	STACKSNAP_OPTS(stacksnap_snapshot_opts, o, .freeze_all = true, .addrspace = as);

	return stacksnap_snapshot__capture(ctx, pid, &o);
}

/* Every thread copied, and each copy the same range as in the oracle. */
static void compare(const struct stacksnap_snapshot *got,
		    const struct stacksnap_snapshot *want, size_t expect)
{
	size_t n = stacksnap_snapshot__thread_count(got);

	CHECK_EQ_U64(n, expect);
	CHECK_EQ_U64(stacksnap_snapshot__thread_count(want), expect);
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_thread *t = stacksnap_snapshot__thread(got, i);
		const struct stacksnap_thread *w = NULL;

		for (size_t k = 0; k < stacksnap_snapshot__thread_count(want); k++)
			if (stacksnap_snapshot__thread(want, k)->tid == t->tid)
				w = stacksnap_snapshot__thread(want, k);
		CHECKF(t->error == STACKSNAP_THREAD_OK && t->stack,
		       "thread %d: error %d, no stack copied", t->tid, t->error);
		CHECKF(w, "thread %d not in the capture without the address space", t->tid);
		if (!w)
			continue;
		/* Where the copy ends is the clamp (the end of the stack's
		 * mapping or the thread pointer); where it starts follows
		 * rsp, which may move between the two captures. */
		CHECKF(t->stack_base + t->stack_len == w->stack_base + w->stack_len,
		       "thread %d: copied %#llx+%zu, without the address space %#llx+%zu",
		       t->tid, (unsigned long long)t->stack_base, t->stack_len,
		       (unsigned long long)w->stack_base, w->stack_len);
	}
}

static void borrowed_maps(void)
{
	int cmd, ack;
	pid_t pid = start_child(&cmd, &ack);

	CHECK(pid > 0);
	if (pid <= 0)
		return;
	CHECK(more_threads(cmd, ack));
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, pid);
	CHECKF(as, "addrspace: %s", strerror(errno));

	/* The maps as they are: borrowed as read. */
	struct stacksnap_snapshot *a = capture(pid, as), *b = capture(pid, NULL);
	CHECKF(a && b, "capture: %s", strerror(errno));
	if (a && b)
		compare(a, b, 5);
	stacksnap_snapshot__free(a);
	stacksnap_snapshot__free(b);

	/* Four stacks mapped after the address space read its maps. */
	CHECK(more_threads(cmd, ack));
	a = capture(pid, as);
	b = capture(pid, NULL);
	CHECKF(a && b, "capture: %s", strerror(errno));
	if (a && b)
		compare(a, b, 9);
	stacksnap_snapshot__free(a);
	stacksnap_snapshot__free(b);

	stacksnap_addrspace__free(as);
	close(cmd);
	close(ack);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A kernel rt_sigframe written at frame (8 past a 16-byte boundary) of
 * buf (at address base): the alternate stack [ss_sp, ss_sp + ss_size),
 * the interrupted rsp, fpregs (the FPU state the kernel puts above the
 * frame) 0x1f8 bytes above it. */
static void put_sigframe(uint8_t *buf, uint64_t base, uint64_t frame,
			 uint64_t ss_sp, uint64_t ss_size, uint64_t rsp)
{
	ucontext_t uc;

	memset(&uc, 0, sizeof(uc));
	uc.uc_flags = 7;
	uc.uc_stack.ss_sp = (void *)(uintptr_t)ss_sp;
	uc.uc_stack.ss_size = ss_size;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)rsp;
	uc.uc_mcontext.gregs[REG_RIP] = 0x401000;
	uc.uc_mcontext.fpregs = (fpregset_t)(uintptr_t)(frame + 0x1f8);
	memcpy(buf + (frame - base) + 8, &uc,
	       offsetof(ucontext_t, uc_mcontext.fpregs) + 8);
}

/* The signal frame that moved a thread onto its alternate stack is found
 * in the copy of that stack; nested frames on the same stack, frames on
 * the normal stack, and data that is no frame are not taken for it. */
static void altstack_sigframe(void)
{
	enum { LEN = 16384 };
	static uint8_t buf[LEN];
	const uint64_t alt = 0x7f0000100000, base = alt + 0x1000, sp = base + 0x40;

	memset(buf, 0, sizeof(buf));
	CHECK(ucontext__altstack_interrupted_sp(buf, LEN, base, sp) == 0);
	/* A nested frame alone: it interrupted the alternate stack itself. */
	put_sigframe(buf, base, base + 0x408, alt, 0x4000, base + 0x2000);
	CHECK(ucontext__altstack_interrupted_sp(buf, LEN, base, sp) == 0);
	/* The outer frame, higher: its rsp is the normal stack's. */
	put_sigframe(buf, base, base + 0x2008, alt, 0x4000, 0x7ffd00001000);
	CHECK_EQ_U64(ucontext__altstack_interrupted_sp(buf, LEN, base, sp), 0x7ffd00001000);
	/* The same bytes seen from a thread whose sp is not on that stack
	 * (a handler on the normal stack). */
	CHECK(ucontext__altstack_interrupted_sp(buf, LEN, base, alt + 0x8000) == 0);
	/* Not the kernel's words: uc_flags, uc_link, ss_flags. */
	buf[0x2008 + 8 + offsetof(ucontext_t, uc_flags)] = 0x10;
	CHECK(ucontext__altstack_interrupted_sp(buf, LEN, base, sp) == 0);
	buf[0x2008 + 8 + offsetof(ucontext_t, uc_flags)] = 7;
	buf[0x2008 + 8 + offsetof(ucontext_t, uc_link)] = 1;
	CHECK(ucontext__altstack_interrupted_sp(buf, LEN, base, sp) == 0);
	buf[0x2008 + 8 + offsetof(ucontext_t, uc_link)] = 0;
	/* An "alternate stack" reaching past the copied mapping: data, as a
	 * (pointer, hash) pair in a table beside the real stack looks. */
	put_sigframe(buf, base, base + 0x2008, alt, 0x40000000, 0x7ffd00001000);
	CHECK(ucontext__altstack_interrupted_sp(buf, LEN, base, sp) == 0);
	/* Too short a copy for any frame. */
	CHECK(ucontext__altstack_interrupted_sp(buf, 64, base, sp) == 0);

	/* The real outer frame again, and above it (the alternate stack's
	 * mapping merged with other anonymous memory, as in a JVM) zeros
	 * and a pointer: "an alternate stack at 0" of a pointer's size,
	 * which holds every address below it. Not a frame: no fpregs. */
	memset(buf, 0, sizeof(buf));
	put_sigframe(buf, base, base + 0x2008, alt, 0x4000, 0x7ffd00001000);
	{
		ucontext_t uc;

		memset(&uc, 0, sizeof(uc));
		uc.uc_stack.ss_size = base + 0x3400;
		uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(base + 0x3800);
		uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(base + 0x3880);
		memcpy(buf + 0x3008 + 8, &uc,
		       offsetof(ucontext_t, uc_mcontext.fpregs) + 8);
	}
	CHECK_EQ_U64(ucontext__altstack_interrupted_sp(buf, LEN, base, sp),
		     0x7ffd00001000);
	/* The kernel's words but for fpregs: none, below the frame, off the
	 * alternate stack, misaligned. */
	{
		const uint64_t bad[] = { 0, base + 0x2000, alt + 0x4000,
					 base + 0x2208 };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			memcpy(buf + 0x2008 + 8 + offsetof(ucontext_t, uc_mcontext.fpregs),
			       &bad[i], 8);
			CHECKF(ucontext__altstack_interrupted_sp(buf, LEN, base, sp) == 0,
			       "fpregs %#llx taken", (unsigned long long)bad[i]);
		}
	}
	/* An alternate stack at 0, or smaller than sigaltstack() takes. */
	put_sigframe(buf, base, base + 0x2008, 0, base + 0x3000, 0x7ffd00001000);
	CHECK(ucontext__altstack_interrupted_sp(buf, LEN, base, sp) == 0);
	put_sigframe(buf, base, base + 0x2008, base + 0x2000, 0x400, 0x7ffd00001000);
	CHECK(ucontext__altstack_interrupted_sp(buf, LEN, base, base + 0x2004) == 0);
}

static void count_errors(enum stacksnap_log_level level, const char *msg, void *user)
{
	(void)msg;
	if (level <= STACKSNAP_LOG_WARN)
		++*(int *)user;
}

/* A process gone before its maps are read (profile -a and trace meet
 * them all the time: the kernel's records say they exited) is no error
 * to log: the caller gets -ENOENT and decides. */
static void gone_process_quiet(void)
{
	int errors = 0;
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = count_errors, .log_user = &errors,
		       .log_level = STACKSNAP_LOG_DEBUG);
	struct stacksnap_ctx *c = stacksnap_ctx__new(&copts);
	struct stacksnap_procs *procs = c ? stacksnap_procs__new(c, NULL) : NULL;
	pid_t pid = fork();

	CHECK(c && procs && pid >= 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	CHECK(!stacksnap_addrspace__from_pid(c, pid));
	CHECK(errno == ENOENT || errno == ESRCH);
	CHECK(procs && stacksnap_procs__attach_pid(procs, pid) < 0);
	CHECKF(errors == 0, "%d errors logged for a process gone", errors);
	stacksnap_procs__free(procs);
	stacksnap_ctx__free(c);
}

/* Under the kernel's records, a miss's re-read of the maps (JIT code)
 * adds what the records lack and keeps what they gave (a library
 * dlclose()d since, still in the events queued before): the mapping
 * recorded here, at an address the child never mapped, survives it. */
static void reread_merges(void)
{
	struct stacksnap_procs *procs = stacksnap_procs__new(ctx, NULL);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	const uint64_t at = 0x7e0000000000ull;
	struct stacksnap_capture cap = { .flags = STACKSNAP_CAPTURE_REGS };
	struct stacksnap_frame frames[8];
	enum stacksnap_end end;
	uint8_t stack[64] = { 0 };
	pid_t pid = fork();

	if (pid == 0) {
		alarm(30);
		for (;;)
			pause();
	}
	CHECK(procs && uw && pid > 0);
	if (!procs || !uw || pid <= 0)
		goto out;
	CHECK(stacksnap_procs__attach_pid(procs, pid) == 0);
	STACKSNAP_OPTS(stacksnap_mapping, m, .start = at, .end = at + 0x1000,
		       .path = "/bin/true", .prot = PROT_READ | PROT_EXEC);
	CHECK(stacksnap_procs__mmap(procs, pid, &m) == 0);
	procs_set_from_records(procs, true);
	/* A pc in no mapping: the walk misses, the maps are read again. */
	cap.regs[STACKSNAP_REG_RIP] = 0x1000;
	cap.regs[STACKSNAP_REG_RSP] = cap.stack_start = 0x7f0000000000ull;
	cap.data_len = cap.stack_len = sizeof(stack);
	uint64_t before = procs_rereads(procs);
	stacksnap_procs__unwind_capture(procs, uw, pid, &cap, stack, frames, 8, &end);
	CHECK(procs_rereads(procs) == before + 1);
	STACKSNAP_OPTS(stacksnap_mapping, found);
	struct stacksnap_addrspace *as = stacksnap_procs__addrspace(procs, pid);
	CHECKF(as && stacksnap_addrspace__find_mapping(as, at + 8, &found) == 0,
	       "the recorded mapping was dropped by the re-read");
	/* And the re-read's own mappings are there (the child's libc). */
	CHECK(as && stacksnap_addrspace__find_mapping(
			    as, (uint64_t)(uintptr_t)&getpid, &found) == 0);
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	stacksnap_unwinder__free(uw);
	stacksnap_procs__free(procs);
}

static void setup(void)
{
	ctx = stacksnap_ctx__new(NULL);
	CHECK(ctx);
}

static void cleanup(void)
{
	stacksnap_ctx__free(ctx);
}

TEST_MAIN("snapshot", TEST(setup), TEST(borrowed_maps), TEST(altstack_sigframe),
	  TEST(gone_process_quiet), TEST(reread_merges), TEST(cleanup))
