/* trace_thread_tp.c - a target of tests/integration/trace: a thread
 * prints its thread pointer (pthread_self(): glibc's struct pthread, the
 * thread control block at the top of the thread's stack mapping) on a
 * line "tp=0x...", then writes 107 bytes to /dev/null three times from a
 * known chain; the test checks that the trace's stack copy of those
 * events ends at or below that pointer and still unwinds whole. */
#include <fcntl.h>
#include <pthread.h>

#include "target.h"

static int devnull;

NOINLINE void tt_write(void)
{
	static char buf[128];

	(void)!write(devnull, buf, 107);
	KEEP_FRAME();
}

NOINLINE void tt_b(void) { tt_write(); KEEP_FRAME(); }
NOINLINE void tt_a(void) { tt_b(); KEEP_FRAME(); }

static void *thread_main(void *arg)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "tp=%#lx\n", (unsigned long)pthread_self());

	(void)!write(1, line, (size_t)n);
	for (int i = 0; i < 3; i++)
		tt_a();
	return arg;
}

int main(void)
{
	pthread_t t;

	target_init();
	devnull = open("/dev/null", O_WRONLY);
	if (devnull < 0 || pthread_create(&t, NULL, thread_main, NULL))
		return 1;
	pthread_join(t, NULL);
	usleep(200000); /* the tracer reads our mappings at our first events */
	return 0;
}
