/* deep_rec.c - gdb-comparison target: a mutual recursion tens of
 * thousands of frames deep (rec_a -> rec_b -> rec_a ...), blocked in
 * read() at its bottom, on the main thread and on a second thread. The
 * argument is the depth of each (default 20000 calls). */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <sys/prctl.h>
#include "target.h"

static int block_pipe[2];
static sem_t blocked;
static volatile int sink;

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
static void (*volatile call_a)(int);
static void (*volatile call_b)(int);

static NOINLINE void rec_b(int n)
{
	if (n > 0)
		call_a(n - 1);
	else
		call_block();
	sink += n;
	KEEP_FRAME();
}

static NOINLINE void rec_a(int n)
{
	if (n > 0)
		call_b(n - 1);
	else
		call_block();
	sink += n;
	KEEP_FRAME();
}

static void *thread_main(void *arg)
{
	prctl(PR_SET_NAME, "deep_thread", 0, 0, 0);
	call_a((int)(long)arg);
	KEEP_FRAME();
	return NULL;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 20000;
	pthread_t t;

	target_init();
	call_a = rec_a;
	call_b = rec_b;
	if (pipe(block_pipe) != 0 || sem_init(&blocked, 0, 0) != 0 ||
	    pthread_create(&t, NULL, thread_main, (void *)(long)depth) != 0)
		return 2;
	while (sem_wait(&blocked) != 0)
		;
	target_ready(2);
	call_a(depth);
	KEEP_FRAME();
	return 0;
}
