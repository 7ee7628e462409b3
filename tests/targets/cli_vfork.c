/* cli_vfork.c - target of the stacksnap CLI tests: a thread that cannot
 * stop. The main thread vfork()s and the child sleeps before it exits, so
 * the parent waits for it in the kernel (an uninterruptible, killable
 * wait that PTRACE_INTERRUPT does not end), while two other threads sleep.
 *
 *   cli_vfork SECONDS    prints `ready 3`, and `resumed` when the child
 *                        has exited and the parent runs again */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include "target.h"

static void *sleeper(void *arg)
{
	struct timespec ts = { 3600, 0 };

	(void)arg;
	for (;;)
		nanosleep(&ts, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec child_sleep = { argc > 1 ? atoi(argv[1]) : 5, 0 };
	pthread_t t[2];
	pid_t child;

	target_init();
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, sleeper, NULL) != 0)
			return 2;
	target_ready(3);
	child = vfork();
	if (child == 0) {
		/* Shares our memory: only raw system calls, then _exit. */
		syscall(SYS_nanosleep, &child_sleep, NULL);
		_exit(0);
	}
	if (write(STDOUT_FILENO, "resumed\n", 8) != 8)
		return 3;
	for (;;)
		pause();
}
