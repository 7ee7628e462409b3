/* nonstop_race.c - target of the non-stop capture tests: threads that
 * block in every common way (futex, nanosleep, read, poll, epoll_wait) and
 * threads that wake up all the time (timers every 50 us, a producer and a
 * consumer, short-lived threads created and exiting), each at a call depth
 * it changes between blocks and records, with the time, in a shared log:
 * a test can then check that every stack a capture reported is one the
 * thread really had during the capture.
 *
 *   nonstop_race LOG [NSPIN [NIDLE [CHURN [NTICK [TICK_US]]]]]
 *
 * LOG: a file this program sizes and maps; NSPIN spinners (1); NIDLE more
 * threads blocked for good, in turn in a futex, nanosleep, read, poll and
 * epoll_wait (0); CHURN 0 for no threads created and exiting (1); NTICK
 * threads waking on periods of 0.3 to 1.8 ms, each its own (0), or all on
 * a period of TICK_US microseconds. Threads past the log's MAX_SLOTS
 * slots (many ticks) record into slots of their own, not in the log.
 *
 * Prints `ready N` (threads at that moment; churn threads come and go). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include "target.h"

#define MAX_SLOTS 64
#define RING 1024
#define MAX_DEPTH 6

/* One thread's record in the shared log: (time, depth) of every block,
 * written before the thread blocks at that depth. The reader takes a
 * snapshot after the capture; ring entries are 16 bytes written with the
 * time last, so a torn entry has time 0 or an old time. */
struct entry {
	uint64_t depth;
	volatile uint64_t time_ns;
};
struct slot {
	volatile int32_t tid;
	uint32_t kind;
	volatile uint64_t n;	/* entries written */
	struct entry ring[RING];
};
static struct slot *slots;
static long tick_ns;	/* 0: 0.3 ms times 1 + slot % 6 */
static __thread long my_index;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Long-lived threads get slots in creation order; churn threads cycle
 * through the rest (the one reusing a slot is ~50 threads later). */
static struct slot *new_slot(long arg)
{
	long i = arg >> 8;
	struct slot *s = i < MAX_SLOTS ? &slots[i] : calloc(1, sizeof(*s));
	uint32_t kind = (uint32_t)(arg & 0xff);

	if (!s)
		_exit(2);
	my_index = i;

	s->kind = kind;
	s->n = 0;
	s->tid = (int32_t)syscall(SYS_gettid);
	return s;
}

static void record(struct slot *s, int depth)
{
	struct entry *e = &s->ring[s->n % RING];

	e->time_ns = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	e->depth = (uint64_t)depth;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	e->time_ns = now_ns();
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	s->n++;
}

enum kind { K_FUTEX, K_SLEEP, K_READ, K_POLL, K_EPOLL, K_TIMER, K_PRODUCER,
	    K_CONSUMER, K_CHURN, K_SPIN, K_TICK };
static const char *const names[] = {
	"r_futex", "r_sleep", "r_read", "r_poll", "r_epoll", "r_timer",
	"r_producer", "r_consumer", "r_churn", "r_spin", "r_tick",
};

static int idle_pipe[2], pc_pipe[2], epfd;
static pthread_mutex_t never_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cond = PTHREAD_COND_INITIALIZER;
static volatile unsigned long spins;

/* The blocking call of each kind, made at the bottom of the recursion. */
static NOINLINE void race_block(struct slot *s, int depth)
{
	struct timespec t50 = { 0, 50000 }, t100 = { 0, 100000 }, hour = { 3600, 0 };
	struct pollfd pfd = { idle_pipe[0], POLLIN, 0 };
	struct epoll_event ev;
	char c = 'x';

	record(s, depth);
	switch (s->kind) {
	case K_FUTEX:
		pthread_mutex_lock(&never_lock);
		pthread_cond_wait(&never_cond, &never_lock);
		pthread_mutex_unlock(&never_lock);
		break;
	case K_SLEEP: nanosleep(&hour, NULL); break;
	case K_READ: (void)!read(idle_pipe[0], &c, 1); break;
	case K_POLL: poll(&pfd, 1, -1); break;
	case K_EPOLL: /* a ptrace stop makes it return EINTR: stay */
		while (epoll_wait(epfd, &ev, 1, -1) < 0)
			;
		break;
	case K_TIMER: nanosleep(&t50, NULL); break;
	case K_PRODUCER: (void)!write(pc_pipe[1], &c, 1); nanosleep(&t100, NULL); break;
	case K_CONSUMER: (void)!read(pc_pipe[0], &c, 1); break;
	case K_CHURN: nanosleep(&t100, NULL); break;
	case K_SPIN:
		for (int i = 0; i < 20000; i++)
			spins++;
		break;
	case K_TICK: {
		struct timespec p = { 0, tick_ns ? tick_ns : 300000 * (1 + my_index % 6) };
		nanosleep(&p, NULL);
		break;
	}
	}
	KEEP_FRAME();
}

static NOINLINE void race_recurse(struct slot *s, int depth, int left);
static void (*volatile call_recurse)(struct slot *, int, int) = race_recurse;

static NOINLINE void race_recurse(struct slot *s, int depth, int left)
{
	if (left == 0)
		race_block(s, depth);
	else
		call_recurse(s, depth, left - 1);
	KEEP_FRAME();
}

static void *race_thread(void *arg)
{
	struct slot *s = new_slot((long)arg);
	int once = s->kind == K_CHURN;

	for (unsigned i = 0;; i++) {
		int depth = 1 + (int)(i % MAX_DEPTH);

		call_recurse(s, depth, depth - 1);
		if (once)
			break;
	}
	s->tid = 0;
	return NULL;
}

static void start(void *(*fn)(void *), long kind, int slot, pthread_t *t)
{
	pthread_t tmp;

	if (pthread_create(t ? t : &tmp, NULL, fn,
			   (void *)(kind | (long)slot << 8)) != 0)
		_exit(2);
	pthread_setname_np(t ? *t : tmp, names[kind]);
	if (!t)
		pthread_detach(tmp);
}

int main(int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int nspin = argc > 2 ? atoi(argv[2]) : 1, n = 0, fd;
	int nidle = argc > 3 ? atoi(argv[3]) : 0;
	int churn = argc > 4 ? atoi(argv[4]) : 1;
	int ntick = argc > 5 ? atoi(argv[5]) : 0;
	long tick_us = argc > 6 ? atol(argv[6]) : 0;
	pthread_t t;

	target_init();
	if (argc < 2 || pipe(idle_pipe) || pipe(pc_pipe) ||
	    (epfd = epoll_create1(0)) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, idle_pipe[0], &ev))
		return 2;
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(struct slot) * MAX_SLOTS))
		return 2;
	slots = mmap(NULL, sizeof(struct slot) * MAX_SLOTS, PROT_READ | PROT_WRITE,
		     MAP_SHARED, fd, 0);
	if (slots == MAP_FAILED)
		return 2;
	for (long k = K_FUTEX; k <= K_CONSUMER; k++, n++)
		start(race_thread, k, n, &t);
	start(race_thread, K_TIMER, n++, &t); /* a second timer */
	for (int i = 0; i < nspin && n < MAX_SLOTS / 4; i++, n++)
		start(race_thread, K_SPIN, n, &t);
	for (int i = 0; i < nidle && n < MAX_SLOTS - 8; i++, n++)
		start(race_thread, K_FUTEX + i % (K_EPOLL + 1), n, &t);
	tick_ns = tick_us > 0 && tick_us < 1000000 ? tick_us * 1000 : 0;
	for (int i = 0; i < ntick && (tick_ns || n < MAX_SLOTS - 8); i++, n++)
		start(race_thread, K_TICK, n, &t);
	usleep(20000);
	target_ready(n + 1);
	if (!churn || n >= MAX_SLOTS - 1)
		for (;;)
			pause();
	/* Churn: threads created and exiting, one every ~200 us. */
	for (int c = 0;; c++) {
		struct timespec ts = { 0, 200000 };

		start(race_thread, K_CHURN, n + c % (MAX_SLOTS - n), NULL);
		nanosleep(&ts, NULL);
	}
	return 0;
}
