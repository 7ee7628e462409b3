/* vdso.c - gdb-comparison target: a thread spinning on clock_gettime(),
 * so it is stopped inside the vDSO most of the time and at a different
 * instruction at every look; main blocks joining it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>
#include "target.h"

static volatile unsigned long spins;

static NOINLINE void vdso_spin(void)
{
	struct timespec ts;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		spins += (unsigned long)ts.tv_nsec & 1;
	}
}

static void (*volatile call_spin)(void) = vdso_spin;

static NOINLINE void vdso_spin_chain(void)
{
	call_spin();
	KEEP_FRAME();
}

static void *vdso_thread(void *arg)
{
	vdso_spin_chain();
	KEEP_FRAME();
	return arg;
}

static NOINLINE void vdso_join(pthread_t t)
{
	pthread_join(t, NULL);
	KEEP_FRAME();
}

int main(void)
{
	pthread_t t;

	target_init();
	if (pthread_create(&t, NULL, vdso_thread, NULL) != 0)
		return 2;
	pthread_setname_np(t, "spin_vdso");
	/* The spinner needs no handshake: it never blocks, and any moment of
	 * its loop is a fair place to stop it. */
	target_ready(2);
	vdso_join(t);
	return 0;
}
