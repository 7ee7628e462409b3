/* threads.c - gdb-comparison target: four threads, each blocked in a
 * different way at the end of its own call chain (condition variable
 * futex, nanosleep, read on a pipe, poll), and main blocked joining them. */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include "target.h"

#define NWORKERS 4

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static int started;
static pthread_mutex_t never_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cond = PTHREAD_COND_INITIALIZER;
static int block_pipe[2];

/* Tells main this thread is about to block; the harness then waits for
 * every thread to be asleep in the kernel before it looks. */
static void worker_started(void)
{
	pthread_mutex_lock(&start_lock);
	started++;
	pthread_cond_signal(&start_cond);
	pthread_mutex_unlock(&start_lock);
}

static NOINLINE void threads_block_futex(void)
{
	worker_started();
	pthread_mutex_lock(&never_lock);
	for (;;)
		pthread_cond_wait(&never_cond, &never_lock);
}

static NOINLINE void threads_block_sleep(void)
{
	struct timespec ts = { 3600, 0 };

	worker_started();
	for (;;)
		nanosleep(&ts, NULL);
}

static NOINLINE void threads_block_read(void)
{
	char c;

	worker_started();
	while (read(block_pipe[0], &c, 1) != 0)
		;
	for (;;)
		pause();
}

static NOINLINE void threads_block_poll(void)
{
	struct pollfd pfd = { block_pipe[0], 0, 0 };

	worker_started();
	for (;;)
		poll(&pfd, 1, -1);
}

static void (*volatile blockers[NWORKERS])(void) = {
	threads_block_futex, threads_block_sleep,
	threads_block_read, threads_block_poll,
};
static const char *const names[NWORKERS] = {
	"t_futex", "t_sleep", "t_read", "t_poll",
};

static NOINLINE void threads_worker_chain(long which)
{
	blockers[which]();
	KEEP_FRAME();
}

static void (*volatile call_chain)(long) = threads_worker_chain;

static void *threads_worker(void *arg)
{
	call_chain((long)arg);
	KEEP_FRAME();
	return NULL;
}

static NOINLINE void threads_join_all(pthread_t *t)
{
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(t[i], NULL);
	KEEP_FRAME();
}

int main(void)
{
	pthread_t t[NWORKERS];

	target_init();
	if (pipe(block_pipe) != 0)
		return 2;
	for (long i = 0; i < NWORKERS; i++) {
		if (pthread_create(&t[i], NULL, threads_worker, (void *)i) != 0)
			return 2;
		pthread_setname_np(t[i], names[i]);
	}
	pthread_mutex_lock(&start_lock);
	while (started < NWORKERS)
		pthread_cond_wait(&start_cond, &start_lock);
	pthread_mutex_unlock(&start_lock);
	target_ready(NWORKERS + 1);
	threads_join_all(t);
	return 0;
}
