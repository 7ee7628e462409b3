/* w_threads.c - perf_compare workload: four threads spending their time in
 * a deep recursion, in libc's qsort calling back into the program, and in
 * plain loops, for `perf record --call-graph dwarf`. Runs argv[1] ms. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile long sink;
static long run_ms = 1000;

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

__attribute__((noinline)) static long spin(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += i ^ (s >> 3);
	return s;
}

__attribute__((noinline)) static long recurse(int depth)
{
	if (depth == 0)
		return spin(20000);
	long r = recurse(depth - 1) + depth;
	sink = r;
	return r;
}

static int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	for (volatile int i = 0; i < 20; i++)
		;
	return (x > y) - (x < y);
}

__attribute__((noinline)) static void sort_some(unsigned *seed)
{
	int v[2000];

	for (int i = 0; i < 2000; i++)
		v[i] = rand_r(seed);
	qsort(v, 2000, sizeof(v[0]), cmp_ints);
	sink = v[0];
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(long)arg;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (elapsed_ms(&t0) < run_ms) {
		sort_some(&seed);
		sink = recurse(10 + (int)(seed % 30));
		sink = spin(50000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[3];

	if (argc > 1)
		run_ms = atol(argv[1]);
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	worker((void *)7);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
