/* altstack.c - gdb-comparison target: threads blocked inside signal
 * handlers on alternate signal stacks (one handler; two nested), inside a
 * handler on the normal stack of a thread that has an alternate one, and
 * a thread with SA_ONSTACK handlers but none running; the main thread
 * blocks in a handler on its own alternate stack. Each signal interrupts
 * a known chain (the thread raises it at the end of the chain), and each
 * handler blocks in read() at the end of a chain of its own. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include "target.h"

#define ALT_SIZE (128 * 1024)
#define NTHREADS 5 /* main and four */

static int block_pipe[2];
static sem_t blocked;		/* posted by each thread about to block */
static volatile int sink;

/* SIGUSR1: the handler of alt_one and of main; SIGUSR2: alt_nested's
 * outer handler, which raises SIG_INNER (its handler nested on the same
 * alternate stack); SIG_NORMAL: a handler without SA_ONSTACK. */
#define SIG_INNER (SIGRTMIN + 1)
#define SIG_NORMAL (SIGRTMIN + 2)

static NOINLINE void block_forever(void)
{
	char c;

	sem_post(&blocked);
	/* Nobody ever writes: read() blocks for good. */
	while (read(block_pipe[0], &c, 1) != 0)
		;
	KEEP_FRAME();
}

static void (*volatile call_block)(void) = block_forever;

static NOINLINE void handler_deep(int sig)
{
	sink += sig;
	call_block();
	KEEP_FRAME();
}

static void (*volatile call_handler_deep)(int) = handler_deep;

static NOINLINE void handler_mid(int sig)
{
	call_handler_deep(sig + 1);
	KEEP_FRAME();
}

static void (*volatile call_handler_mid)(int) = handler_mid;

static void on_usr1(int sig)
{
	call_handler_mid(sig);
	KEEP_FRAME();
}

static void on_inner(int sig)
{
	call_handler_mid(sig);
	KEEP_FRAME();
}

static NOINLINE void outer_raise(int sig)
{
	sink += sig;
	raise(SIG_INNER);
	KEEP_FRAME();
}

static void (*volatile call_outer_raise)(int) = outer_raise;

static void on_usr2(int sig)
{
	call_outer_raise(sig);
	KEEP_FRAME();
}

static void on_normal(int sig)
{
	call_handler_mid(sig);
	KEEP_FRAME();
}

/* The interrupted chain: chain_one -> chain_two -> chain_three, which
 * raises sig (0: blocks instead). */
static NOINLINE void chain_three(int sig)
{
	if (sig)
		raise(sig);
	else
		call_block();
	KEEP_FRAME();
}

static void (*volatile call_three)(int) = chain_three;

static NOINLINE void chain_two(int sig)
{
	call_three(sig);
	KEEP_FRAME();
}

static void (*volatile call_two)(int) = chain_two;

static NOINLINE void chain_one(int sig)
{
	call_two(sig);
	KEEP_FRAME();
}

static void (*volatile call_one)(int) = chain_one;

/* An alternate stack of its own mapping (mmap) or inside the heap. */
static int use_altstack(int heap)
{
	stack_t ss;

	ss.ss_size = ALT_SIZE;
	ss.ss_sp = heap ? malloc(ALT_SIZE)
			: mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ss.ss_flags = 0;
	if (!ss.ss_sp || ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL) != 0)
		return -1;
	return 0;
}

static int on(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

struct role {
	const char *name;
	int sig;	/* raised at the end of the chain; 0: no signal */
	int heap;	/* alternate stack in the heap */
};

static void *thread_main(void *arg)
{
	const struct role *r = (const struct role *)arg;

	prctl(PR_SET_NAME, r->name, 0, 0, 0);
	if (use_altstack(r->heap) != 0)
		_exit(2);
	call_one(r->sig);
	KEEP_FRAME();
	return NULL;
}

static const struct role roles[NTHREADS - 1] = {
	{ "alt_one", SIGUSR1, 0 },
	{ "alt_nested", SIGUSR2, 1 },
	{ "norm_handler", 0, 0 }, /* sig set in main: SIG_NORMAL */
	{ "alt_idle", 0, 0 },
};

int main(void)
{
	pthread_t t[NTHREADS - 1];
	struct role rs[NTHREADS - 1];

	target_init();
	if (pipe(block_pipe) != 0 || sem_init(&blocked, 0, 0) != 0)
		return 2;
	if (on(SIGUSR1, on_usr1, SA_ONSTACK) || on(SIGUSR2, on_usr2, SA_ONSTACK) ||
	    on(SIG_INNER, on_inner, SA_ONSTACK) || on(SIG_NORMAL, on_normal, 0))
		return 2;
	memcpy(rs, roles, sizeof(rs));
	rs[2].sig = SIG_NORMAL;
	for (int i = 0; i < NTHREADS - 1; i++)
		if (pthread_create(&t[i], NULL, thread_main, &rs[i]) != 0)
			return 2;
	for (int i = 0; i < NTHREADS - 1; i++)
		while (sem_wait(&blocked) != 0)
			;
	if (use_altstack(0) != 0)
		return 2;
	target_ready(NTHREADS);
	call_one(SIGUSR1);
	KEEP_FRAME();
	return 0;
}
