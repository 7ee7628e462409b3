/* demo-target.c - the built-in demo target of `make demo`: a process with
 * a few threads parked in different ways (sleeping, blocked on a pipe, on
 * a condition variable, spinning), each under a call chain built without
 * frame pointers, so there is something real to unwind. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* Keeps the compiler from turning a call into a jump (a tail call would
 * leave no frame to show). */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static int pipefd[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile unsigned long spins;

NOINLINE static void sleep_forever(void)
{
	for (;;) {
		struct timespec ts = { 3600, 0 };
		nanosleep(&ts, NULL);
	}
}
NOINLINE static void *sleeper(void *arg)
{
	sleep_forever();
	KEEP_FRAME();
	return arg;
}

NOINLINE static void wait_for_input(void)
{
	char c;
	while (read(pipefd[0], &c, 1) != 0)
		;
	KEEP_FRAME();
}
NOINLINE static void *reader(void *arg)
{
	wait_for_input();
	KEEP_FRAME();
	return arg;
}

NOINLINE static void wait_for_signal(void)
{
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&never, &lock);
}
NOINLINE static void *waiter(void *arg)
{
	wait_for_signal();
	KEEP_FRAME();
	return arg;
}

NOINLINE static unsigned long crunch(unsigned long x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}
NOINLINE static void *spinner(void *arg)
{
	unsigned long x = 1;
	for (;;) {
		x = crunch(x);
		spins++;
		struct timespec ts = { 0, 1000000 };
		if (!(spins & 1023))
			nanosleep(&ts, NULL); /* leave the CPU to others */
	}
	return arg;
}

NOINLINE static void serve(void)
{
	sleep_forever();
	KEEP_FRAME();
}

int main(int argc, char **argv)
{
	static void *(*const fns[])(void *) = { sleeper, reader, waiter, spinner };
	static const char *const names[] = { "sleeper", "reader", "waiter", "spinner" };
	pthread_t t;

	if (pipe(pipefd))
		return 1;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (pthread_create(&t, NULL, fns[i], NULL))
			return 1;
		pthread_setname_np(t, names[i]);
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	serve();
	return 0;
}
