/* w_forkexec.c - perf_compare workload: a short-lived process that forks
 * children which work a little and exec another program (argv[1] with
 * argument argv[2]), so samples must be unwound against the mappings of
 * the right process at the right time. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) static long child_work(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += i * 7 % 13;
	return s;
}

__attribute__((noinline)) static void parent_work(void)
{
	sink = child_work(30000000);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	for (int i = 0; i < 3; i++) {
		pid_t p = fork();

		if (p == 0) {
			sink = child_work(20000000);
			execl(argv[1], argv[1], argv[2], (char *)NULL);
			_exit(127);
		}
		parent_work();
		waitpid(p, NULL, 0);
	}
	return 0;
}
