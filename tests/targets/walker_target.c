/* walker_target.c - the attached walker's test target: threads that count
 * their progress where the harness can read it (process_vm_readv at the
 * address printed on stdout), and modes that make events: thread churn,
 * dlopen/dlclose, signals, fork + exec, exit with threads running.
 *   walker_target spin N        N counting threads besides main
 *   walker_target churn LIB     create/join threads, dlopen LIB, raise
 *                               SIGUSR1, pacing each round
 *   walker_target exit N CODE   N threads; one of them calls exit(CODE)
 *                               when the harness sets counters[23]
 *   walker_target forkexec      fork + exec /bin/true, then exec "spin 1"
 *   walker_target grow N        a new counting thread every 200 ms, up to N
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* counters[0]: main's rounds; [1..16]: per-thread rounds; [20]: threads
 * created; [21]: SIGUSR1 handled; [22]: dlopen calls; [23]: set by the
 * harness: "exit" mode exits; tids[i]: thread i's
 * id (0: main). */
struct shared {
	volatile uint64_t counters[32];
	volatile int32_t tids[17];
};
static struct shared sh;

static void pause_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static void ready(void)
{
	printf("ready %p\n", (void *)&sh);
	fflush(stdout);
}

static __attribute__((noinline)) void count_round(int i)
{
	sh.counters[i]++;
	pause_us(1000);
	__asm__ volatile("" ::: "memory");
}

static void *counting_thread(void *arg)
{
	int i = (int)(intptr_t)arg;

	sh.tids[i] = (int32_t)syscall(SYS_gettid);
	for (;;)
		count_round(i);
	return NULL;
}

static void *short_thread(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&sh.counters[20], 1, __ATOMIC_RELAXED);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	sh.counters[21]++;
}

/* Exits the process once the harness writes counters[23] (after it
 * attached: on a loaded machine a fixed delay may pass before). */
static void *exiting_thread(void *arg)
{
	while (!sh.counters[23])
		pause_us(1000);
	exit((int)(intptr_t)arg);
}

int main(int argc, char **argv)
{
	pthread_t th;

	alarm(120); /* never outlive a broken harness */
	sh.tids[0] = (int32_t)getpid();
	if (argc >= 3 && !strcmp(argv[1], "spin")) {
		int n = atoi(argv[2]);

		for (int i = 1; i <= n && i <= 16; i++)
			pthread_create(&th, NULL, counting_thread, (void *)(intptr_t)i);
		/* Every thread's id, not just the last one's: threads start
		 * in any order, and a tid still 0 would make the harness
		 * pause the whole process instead of one thread. */
		for (int i = 1; i <= n && i <= 16; i++)
			while (!__atomic_load_n(&sh.tids[i], __ATOMIC_ACQUIRE))
				pause_us(1000);
		ready();
		for (;;)
			count_round(0);
	}
	if (argc >= 3 && !strcmp(argv[1], "churn")) {
		void *lib = NULL;

		signal(SIGUSR1, on_usr1);
		ready();
		for (;;) {
			/* Loaded for 300 ms, then not for 300 ms: the walker
			 * polls the mappings every 100 ms. */
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			bool want = (now.tv_sec * 1000 + now.tv_nsec / 1000000) % 600 < 300;
			if (want && !lib) {
				lib = dlopen(argv[2], RTLD_NOW);
				sh.counters[22]++;
			} else if (!want && lib) {
				dlclose(lib);
				lib = NULL;
			}
			pthread_create(&th, NULL, short_thread, NULL);
			pthread_join(th, NULL);
			raise(SIGUSR1);
			count_round(0);
		}
	}
	if (argc >= 4 && !strcmp(argv[1], "exit")) {
		int n = atoi(argv[2]);

		for (int i = 1; i <= n && i <= 16; i++)
			pthread_create(&th, NULL, counting_thread, (void *)(intptr_t)i);
		pthread_create(&th, NULL, exiting_thread,
			       (void *)(intptr_t)atoi(argv[3]));
		ready();
		for (;;)
			count_round(0);
	}
	if (argc >= 2 && !strcmp(argv[1], "forkexec")) {
		ready();
		pause_us(300000);
		pid_t c = fork();
		if (c == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		waitpid(c, NULL, 0);
		pause_us(300000);
		execl("/proc/self/exe", argv[0], "spin", "1", (char *)NULL);
		return 127;
	}
	if (argc >= 3 && !strcmp(argv[1], "grow")) {
		int n = atoi(argv[2]);

		ready();
		for (int i = 1; i <= n && i <= 16; i++) {
			pause_us(200000);
			pthread_create(&th, NULL, counting_thread, (void *)(intptr_t)i);
		}
		for (;;)
			count_round(0);
	}
	fprintf(stderr, "usage: walker_target spin N | churn LIB | exit N CODE | forkexec | grow N\n");
	return 2;
}
