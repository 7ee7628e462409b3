/* secrets.c - target of the snapshot-file secret test: every thread keeps a
 * known canary string in a stack buffer and random key material in locals
 * held across a blocking call (so in callee-saved registers, spilled by the
 * callees' prologues, and on the stack), then blocks in read().
 *
 *   secrets KEYFILE [NTHREADS]   writes the key (32 bytes, hex) to KEYFILE
 *
 * Prints `ready N` once every thread is on its way to its blocking call. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <sys/random.h>
#include "target.h"

static uint64_t key[4];
static int block_pipe[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int started;

/* Built at run time from pieces, so the only whole copies are on stacks. */
static NOINLINE void make_canary(char *buf)
{
	static const char *const parts[] = { "STACKSNAP", "-CANARY-", "s3cr3t",
					     "-0451" };

	buf[0] = 0;
	for (int i = 0; i < 4; i++)
		strcat(buf, parts[i]);
}

static NOINLINE void block_here(const char *canary)
{
	char c;

	pthread_mutex_lock(&lock);
	started++;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	__asm__ volatile("" ::"r"(canary) : "memory");
	if (read(block_pipe[0], &c, 1) < 0)
		_exit(4);
}

static NOINLINE void hold_secrets(void)
{
	char canary[64];
	volatile uint64_t local_key[4];
	uint64_t k0 = key[0], k1 = key[1], k2 = key[2], k3 = key[3];

	make_canary(canary);
	for (int i = 0; i < 4; i++)
		local_key[i] = key[i];
	block_here(canary);
	/* Live across the call: kept in callee-saved registers. */
	__asm__ volatile("" ::"r"(k0), "r"(k1), "r"(k2), "r"(k3), "r"(canary),
			 "r"(local_key) : "memory");
	KEEP_FRAME();
}

static void *thread_main(void *arg)
{
	hold_secrets();
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 3;
	pthread_t t;
	FILE *f;

	target_init();
	if (argc < 2 || n < 0 || n > 64 || pipe(block_pipe) ||
	    getrandom(key, sizeof(key), 0) != sizeof(key))
		return 2;
	f = fopen(argv[1], "w");
	if (!f)
		return 2;
	for (int i = 0; i < 4; i++)
		fprintf(f, "%016llx", (unsigned long long)key[i]);
	fclose(f);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t, NULL, thread_main, NULL))
			return 2;
	pthread_mutex_lock(&lock);
	while (started < n)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	target_ready(n + 1);
	hold_secrets();
	return 0;
}
