/* sig.c - gdb-comparison target: a signal handler that blocks while it
 * handles SIGPROF, which interrupted a known chain spinning in user code.
 * With the argument "alt" the handler runs on a sigaltstack, so the walk
 * has to cross from the alternate stack back to the thread's stack. */
#include <sys/mman.h>
#include <sys/time.h>
#include "target.h"

static volatile int handled;
static int block_pipe[2];

static NOINLINE void sig_handler_block(int sig)
{
	char c;

	target_ready(1);
	/* Nobody ever writes: read() blocks for good, inside the handler. */
	while (read(block_pipe[0], &c, 1) != 0)
		;
	handled = sig;
}

static void (*volatile call_handler_block)(int) = sig_handler_block;

static NOINLINE void sig_handler(int sig)
{
	call_handler_block(sig);
	KEEP_FRAME();
}

/* The signal lands while this loop runs, at no fixed instruction: the
 * frame below the signal frame has an exact pc, not a return address. */
static NOINLINE void sig_spin(int n)
{
	volatile unsigned long count = (unsigned long)n;

	while (!handled)
		count++;
}

static void (*volatile call_spin)(int) = sig_spin;

static NOINLINE void sig_level_two(int n)
{
	call_spin(n * 3);
	KEEP_FRAME();
}

static void (*volatile call_two)(int) = sig_level_two;

static NOINLINE void sig_level_one(int n)
{
	call_two(n + 5);
	KEEP_FRAME();
}

static void (*volatile call_one)(int) = sig_level_one;

int main(int argc, char **argv)
{
	struct sigaction sa;
	/* A CPU-time timer: it can only fire while we spin in sig_spin. */
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };
	int alt = argc > 1 && strcmp(argv[1], "alt") == 0;

	target_init();
	if (pipe(block_pipe) != 0)
		return 2;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_handler;
	sigemptyset(&sa.sa_mask);
	if (alt) {
		stack_t ss;

		ss.ss_size = 256 * 1024;
		ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ss.ss_flags = 0;
		if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL) != 0)
			return 2;
		sa.sa_flags |= SA_ONSTACK;
	}
	if (sigaction(SIGPROF, &sa, NULL) != 0 ||
	    setitimer(ITIMER_PROF, &it, NULL) != 0)
		return 2;
	call_one(1);
	KEEP_FRAME();
	return 0;
}
