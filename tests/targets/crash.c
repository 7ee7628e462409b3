/* crash.c - target of the core-dump tests: threads blocked in a futex, in
 * nanosleep, in read() and deep in a recursion, and one that crashes with
 * SIGSEGV through a chain of calls once they are all blocked, so the
 * kernel writes a core; compiles as C and as C++.
 *
 *   crash           crash once every thread is blocked
 *   crash --wait    block forever instead (for gcore)
 *
 * Prints `ready N` once every thread is on its way to its blocking call. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <time.h>
#include "target.h"

#define DEPTH 40

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t never_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cond = PTHREAD_COND_INITIALIZER;
static int started, block_pipe[2];
static volatile int *volatile nowhere;

static void announce(void)
{
	pthread_mutex_lock(&lock);
	started++;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
}

static NOINLINE void block_futex(void)
{
	pthread_mutex_lock(&never_lock);
	announce();
	for (;;)
		pthread_cond_wait(&never_cond, &never_lock);
}

static NOINLINE void block_sleep(void)
{
	struct timespec ts = { 1000, 0 };

	announce();
	for (;;)
		nanosleep(&ts, NULL);
}

static NOINLINE void block_read(void)
{
	char c;

	announce();
	if (read(block_pipe[0], &c, 1) < 0)
		_exit(4);
}

static NOINLINE int recurse(int n)
{
	int r;

	if (n == 0) {
		block_read();
		return 0;
	}
	r = recurse(n - 1) + 1;
	KEEP_FRAME();
	return r;
}

static NOINLINE void crash_here(void)
{
	*nowhere = 42; /* SIGSEGV */
	KEEP_FRAME();
}

static NOINLINE void crash_chain(int wait)
{
	if (wait)
		block_sleep();
	crash_here();
	KEEP_FRAME();
}

static void *t_futex(void *a) { block_futex(); return a; }
static void *t_sleep(void *a) { block_sleep(); return a; }
static void *t_deep(void *a) { recurse(DEPTH); return a; }

static void *t_crash(void *a)
{
	pthread_mutex_lock(&lock);
	while (started < 3)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	target_ready(5);
	/* Let the harness see every thread blocked before the crash. */
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	crash_chain(a != NULL);
	return a;
}

int main(int argc, char **argv)
{
	void *(*fns[])(void *) = { t_futex, t_sleep, t_deep };
	int wait = argc > 1 && !strcmp(argv[1], "--wait");
	pthread_t t[4];

	target_init();
	if (pipe(block_pipe))
		return 2;
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, fns[i], NULL))
			return 2;
	if (pthread_create(&t[3], NULL, t_crash, wait ? (void *)1 : NULL))
		return 2;
	pthread_join(t[3], NULL);
	return 0;
}
