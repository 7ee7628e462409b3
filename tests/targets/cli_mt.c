/* cli_mt.c - target of the stacksnap CLI tests: one process whose threads
 * are blocked in every common way (futex, nanosleep, read, poll, inside a
 * signal handler, deep in a recursion, in a dlopen()ed library) beside
 * threads that spin; compiles as C and as C++.
 *
 *   cli_mt LIBRARY [NSPIN]       the gdb-comparison layout
 *   cli_mt --many N [NSPIN]      N threads sleeping in nanosleep/futex,
 *                                NSPIN spinning, and a ticker that writes
 *                                one byte to stdout every 2 ms (progress)
 *
 * Prints `ready N` (N threads in all) once every thread is on its way to
 * its blocking call. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include "target.h"

#define DEEP_DEPTH 300
#define MAX_THREADS 1024

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static int started;
static pthread_mutex_t never_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cond = PTHREAD_COND_INITIALIZER;
static int block_pipe[2];
static volatile int sig_arrived, sig_waiting, announced;
static volatile unsigned long spin_count;
static void *dl_handle;

/* Tells main this thread is about to block. */
static void cli_started(void)
{
	pthread_mutex_lock(&start_lock);
	started++;
	pthread_cond_signal(&start_cond);
	pthread_mutex_unlock(&start_lock);
}

static NOINLINE void cli_block_futex(void)
{
	cli_started();
	pthread_mutex_lock(&never_lock);
	for (;;)
		pthread_cond_wait(&never_cond, &never_lock);
}

static NOINLINE void cli_block_sleep(void)
{
	struct timespec ts = { 3600, 0 };

	cli_started();
	for (;;)
		nanosleep(&ts, NULL);
}

static NOINLINE void cli_block_read(void)
{
	char c;

	cli_started();
	while (read(block_pipe[0], &c, 1) != 0)
		;
	for (;;)
		pause();
}

static NOINLINE void cli_block_poll(void)
{
	struct pollfd pfd = { block_pipe[0], 0, 0 };

	cli_started();
	for (;;)
		poll(&pfd, 1, -1);
}

/* The handler blocks for good: the walk has to cross the signal frame. */
static NOINLINE void cli_handler_block(int sig)
{
	char c;

	sig_arrived = sig;
	cli_started();
	while (read(block_pipe[0], &c, 1) != 0)
		;
}

static void (*volatile call_handler_block)(int) = cli_handler_block;

static void cli_handler(int sig)
{
	call_handler_block(sig);
	KEEP_FRAME();
}

static NOINLINE void cli_wait_signal(void)
{
	volatile unsigned long n = 0;

	sig_waiting = 1;
	while (!sig_arrived)
		n++;
}

static int cli_recurse(int n);
static int (*volatile call_recurse)(int) = cli_recurse;

static NOINLINE int cli_recurse(int n)
{
	int r;

	if (n == 0) {
		cli_block_sleep();
		return 0;
	}
	r = call_recurse(n - 1);
	KEEP_FRAME();
	return r + n;
}

static NOINLINE void cli_block_deep(void)
{
	call_recurse(DEEP_DEPTH);
	KEEP_FRAME();
}

typedef void (*cli_dl_fn)(void (*)(void));

static NOINLINE void cli_block_dl(void)
{
	cli_dl_fn entry = (cli_dl_fn)dlsym(dl_handle, "cli_dl_entry");

	if (!entry)
		_exit(4);
	entry(cli_block_sleep);
	KEEP_FRAME();
}

static NOINLINE void cli_spin(void)
{
	cli_started();
	for (;;)
		spin_count++;
}

static void (*volatile blockers[])(void) = {
	cli_block_futex, cli_block_sleep, cli_block_read, cli_block_poll,
	cli_wait_signal, cli_block_deep, cli_block_dl,
};
static const char *const names[] = {
	"t_futex", "t_sleep", "t_read", "t_poll", "t_signal", "t_deep", "t_dl",
};
#define NBLOCKERS (sizeof(names) / sizeof(names[0]))
#define SIGNAL_THREAD 4

static NOINLINE void cli_chain(long which)
{
	blockers[which]();
	KEEP_FRAME();
}

static void (*volatile call_chain)(long) = cli_chain;

static void *cli_thread(void *arg)
{
	call_chain((long)arg);
	KEEP_FRAME();
	return NULL;
}

static void *cli_spinner(void *arg)
{
	(void)arg;
	cli_spin();
	return NULL;
}

static void *cli_many_sleeper(void *arg)
{
	if ((long)arg & 1)
		cli_block_futex();
	else
		cli_block_sleep();
	return NULL;
}

static void *cli_ticker(void *arg)
{
	struct timespec ts = { 0, 2000000 };

	(void)arg;
	cli_started();
	for (;;) {
		nanosleep(&ts, NULL);
		if (announced && write(STDOUT_FILENO, ".", 1) != 1)
			_exit(0); /* the harness went away */
	}
	return NULL;
}

static NOINLINE void cli_join(pthread_t *t, int n)
{
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	KEEP_FRAME();
}

static pthread_t threads[MAX_THREADS];

static void start(int i, void *(*fn)(void *), long arg, const char *name)
{
	if (pthread_create(&threads[i], NULL, fn, (void *)arg) != 0)
		_exit(2);
	pthread_setname_np(threads[i], name);
}

static void wait_started(int n)
{
	pthread_mutex_lock(&start_lock);
	while (started < n)
		pthread_cond_wait(&start_cond, &start_lock);
	pthread_mutex_unlock(&start_lock);
}

int main(int argc, char **argv)
{
	int n = 0, nspin, many = argc > 2 && !strcmp(argv[1], "--many");
	struct sigaction sa;

	target_init();
	if (argc < 2 || pipe(block_pipe) != 0)
		return 2;
	nspin = argc > 2 + many ? atoi(argv[2 + many]) : 1;
	if (many) {
		int nsleep = atoi(argv[2]);

		if (nsleep + nspin + 1 > MAX_THREADS)
			return 2;
		for (; n < nsleep; n++)
			start(n, cli_many_sleeper, n, n & 1 ? "futex" : "sleep");
		start(n++, cli_ticker, 0, "ticker");
		wait_started(nsleep / 2 + 1); /* the futex half, the ticker */
	} else {
		dl_handle = dlopen(argv[1], RTLD_NOW);
		if (!dl_handle) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 2;
		}
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = cli_handler;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGUSR1, &sa, NULL) != 0)
			return 2;
		for (; n < (int)NBLOCKERS; n++)
			start(n, cli_thread, n, names[n]);
		/* The signal lands while the thread spins in cli_wait_signal. */
		while (!sig_waiting)
			sched_yield();
		pthread_kill(threads[SIGNAL_THREAD], SIGUSR1);
		wait_started(4 + 1); /* futex, sleep, read, poll, the handler */
	}
	int expect = many ? atoi(argv[2]) / 2 + 1 : 5;
	for (int i = 0; i < nspin; i++, n++)
		start(n, cli_spinner, 0, "spin");
	wait_started(expect + nspin);
	target_ready(n + 1);
	announced = 1; /* the ticker's dots come after the ready line */
	cli_join(threads, n);
	return 0;
}
