/* trace_dl_lib.c - the library trace_chains dlopen()s: a write() of 103
 * bytes from a chain of its own, and a spin of its own for profilers. */
#include <time.h>
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif
NOINLINE void tc_dl_b(int fd)
{
	static char buf[128];

	(void)!write(fd, buf, 103);
	KEEP_FRAME();
}

__attribute__((visibility("default"))) NOINLINE void tc_dl_entry(int fd)
{
	tc_dl_b(fd);
	KEEP_FRAME();
}
/* Spins on the CPU for ms milliseconds of its own CPU time (a profile's
 * samples land here: the bottom frame of the chain). */
NOINLINE void tc_dl_spin_b(int ms)
{
	struct timespec t0, t;
	volatile unsigned long n = 0;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 10000; i++)
			n++;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	KEEP_FRAME();
}

__attribute__((visibility("default"))) NOINLINE void tc_dl_spin(int ms)
{
	tc_dl_spin_b(ms);
	KEEP_FRAME();
}
#ifdef __cplusplus
}
#endif
