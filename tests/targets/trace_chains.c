/* trace_chains.c - the target of tests/integration/trace: system calls
 * from known call chains, each marked by the byte count of a write() to
 * /dev/null: main thread (101), a thread created after the trace began
 * (102), a dlopen'ed library (103, its own write), a child after fork
 * (104), the program again after exec (105), a signal handler (106); and
 * a busy loop in two threads for sampling ("spin" mode). "LIB quick":
 * no fork or exec, a shorter wait at the end. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>

#include "target.h"

static int devnull;

NOINLINE void tc_write(int count)
{
	static char buf[256];

	(void)!write(devnull, buf, (size_t)count);
	KEEP_FRAME();
}

NOINLINE void tc_main_b(void) { tc_write(101); KEEP_FRAME(); }
NOINLINE void tc_main_a(void) { tc_main_b(); KEEP_FRAME(); }

NOINLINE void tc_thread_b(void) { tc_write(102); KEEP_FRAME(); }
NOINLINE void *tc_thread_a(void *arg) { tc_thread_b(); KEEP_FRAME(); return arg; }

NOINLINE void tc_fork_b(void) { tc_write(104); KEEP_FRAME(); }
NOINLINE void tc_fork_a(void) { tc_fork_b(); KEEP_FRAME(); }

NOINLINE void tc_exec_b(void) { tc_write(105); KEEP_FRAME(); }
NOINLINE void tc_exec_a(void) { tc_exec_b(); KEEP_FRAME(); }

NOINLINE void tc_handler_b(void) { tc_write(106); KEEP_FRAME(); }
NOINLINE void tc_handler(int sig) { (void)sig; tc_handler_b(); KEEP_FRAME(); }
NOINLINE void tc_signal_a(void) { raise(SIGUSR1); KEEP_FRAME(); }

/* Sampling: two threads spin in known leaves, each for spin_seconds of
 * its own CPU time (so that a loaded machine gives as many samples,
 * later). */
static volatile unsigned long sink;
NOINLINE void tc_spin_leaf1(void) { for (int i = 0; i < 20000; i++) sink += (unsigned)i; KEEP_FRAME(); }
NOINLINE void tc_spin_leaf2(void) { for (int i = 0; i < 20000; i++) sink ^= (unsigned)i; KEEP_FRAME(); }
static double spin_seconds = 0.5;
NOINLINE void *tc_spin(void *arg)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		/* The clock is a system call (thread CPU time has no vDSO
		 * path) whose cost varies with the machine's load: read it
		 * seldom, so that the leaves' shares are the loops' own. */
		for (int k = 0; k < 32; k++) {
			tc_spin_leaf1();
			tc_spin_leaf2();
			tc_spin_leaf2();
		}
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < spin_seconds);
	KEEP_FRAME();
	return arg;
}

/* The tracer reads a process's mappings when it sees the process's first
 * events; a process that exits at once may be gone by then. */
static void linger(double seconds)
{
	usleep((useconds_t)(seconds * 1e6));
}

int main(int argc, char **argv)
{
	pthread_t th;
	void *dl;
	pid_t pid;

	target_init();
	devnull = open("/dev/null", O_WRONLY);
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		tc_exec_a();
		linger(1.0);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "spin")) {
		if (argc > 2)
			spin_seconds = atof(argv[2]);
		pthread_create(&th, NULL, tc_spin, NULL);
		tc_spin(NULL);
		pthread_join(th, NULL);
		return 0;
	}
	tc_main_a();
	pthread_create(&th, NULL, tc_thread_a, NULL);
	pthread_join(th, NULL);
	if (argc > 1 && (dl = dlopen(argv[1], RTLD_NOW))) {
		void (*entry)(int) = (void (*)(int))dlsym(dl, "tc_dl_entry");

		if (entry)
			entry(devnull);
	}
	if (argc > 2 && !strcmp(argv[2], "quick")) {
		/* The uprobe cases: no children, no waiting. */
		signal(SIGUSR1, tc_handler);
		tc_signal_a();
		linger(0.2);
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		tc_fork_a();
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	signal(SIGUSR1, tc_handler);
	tc_signal_a();
	linger(0.5);
	return 0;
}
