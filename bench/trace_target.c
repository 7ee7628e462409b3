/* trace_target.c - the workload of bench/trace.py: N write()s of one byte
 * to /dev/null from the bottom of a 30-deep call chain (built -O2 without
 * frame pointers); prints the loop's wall and CPU seconds. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define CHAIN(n, next) \
	__attribute__((noinline)) void d##n(long k) { next(k); __asm__ volatile("" ::: "memory"); }

static int fd;

__attribute__((noinline)) void leaf(long k)
{
	char c = 0;

	for (long i = 0; i < k; i++)
		(void)!write(fd, &c, 1);
	__asm__ volatile("" ::: "memory");
}
CHAIN(29, leaf) CHAIN(28, d29) CHAIN(27, d28) CHAIN(26, d27) CHAIN(25, d26)
CHAIN(24, d25) CHAIN(23, d24) CHAIN(22, d23) CHAIN(21, d22) CHAIN(20, d21)
CHAIN(19, d20) CHAIN(18, d19) CHAIN(17, d18) CHAIN(16, d17) CHAIN(15, d16)
CHAIN(14, d15) CHAIN(13, d14) CHAIN(12, d13) CHAIN(11, d12) CHAIN(10, d11)
CHAIN(9, d10) CHAIN(8, d9) CHAIN(7, d8) CHAIN(6, d7) CHAIN(5, d6)
CHAIN(4, d5) CHAIN(3, d4) CHAIN(2, d3) CHAIN(1, d2)

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct timespec a, b;
	struct rusage ru;

	fd = open("/dev/null", O_WRONLY);
	clock_gettime(CLOCK_MONOTONIC, &a);
	d1(n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "loop %.6f s cpu %.6f s\n",
		(double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
		ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	/* The tracer reads our mappings when it sees our first events. */
	usleep(200000);
	return 0;
}
