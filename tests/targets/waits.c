/* waits.c - target of tests/integration/waits_locks: threads and
 * processes that wait for each other in a known way. `waits MODE ROLES`
 * writes "role tid" lines to the file ROLES, then prints "ready N" (N:
 * its threads) and blocks for good. Modes: mutex-KIND (two threads
 * deadlocked on two mutexes of KIND: normal, recursive, errorcheck,
 * adaptive, robust, pi), mutex3 (three threads in a cycle), rwlock (a
 * writer and a mutex holder deadlocked), sleeper (a thread waits for a
 * mutex whose holder sleeps; "waiter_since NS" is CLOCK_MONOTONIC just
 * before it locks), condvar, pipe (reads a pipe whose writer is
 * a child), waitpid, flock (an flock held by a child), flock2 (the
 * main thread and a child deadlocked on two flocks), tcp (reads a local
 * TCP connection whose other end is a child), orphan (a thread exits
 * holding a mutex another then waits for), sem (a thread in sem_wait),
 * join (the main thread joins a thread that sleeps), poll (a thread polls
 * a pipe and an eventfd, another waits in epoll_wait on them), churn (threads
 * born and joined without end, and a fork+exec a millisecond, beside 4
 * threads that sleep). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t lock_1, lock_2, lock_3;
pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static FILE *roles;
static const char *mode;
static int nthreads = 1;

static void role(const char *name, pid_t tid)
{
	fprintf(roles, "%s %d\n", name, (int)tid);
	fflush(roles);
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void init_mutex(pthread_mutex_t *m, const char *kind)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	if (!strcmp(kind, "recursive"))
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	else if (!strcmp(kind, "errorcheck"))
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	else if (!strcmp(kind, "adaptive"))
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	else if (!strcmp(kind, "robust"))
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	else if (!strcmp(kind, "pi"))
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(m, &a);
}

/* Thread i of a cycle: holds lock i, then takes lock i + 1. */
static pthread_mutex_t *const cycle[] = { &lock_1, &lock_2, &lock_3 };
static int ncycle;

static void *cycle_thread(void *arg)
{
	int i = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof(name), "t%d", i + 1);
	role(name, gettid_());
	pthread_mutex_lock(cycle[i]);
	pthread_barrier_wait(&barrier);
	pthread_mutex_lock(cycle[(i + 1) % ncycle]);
	return NULL;
}

static void *rw_writer(void *arg)
{
	role("writer", gettid_());
	pthread_rwlock_wrlock(&table_lock);
	pthread_barrier_wait(&barrier);
	pthread_mutex_lock(&lock_1);
	return arg;
}

static void *rw_waiter(void *arg)
{
	role("rwwaiter", gettid_());
	pthread_mutex_lock(&lock_1);
	pthread_barrier_wait(&barrier);
	pthread_rwlock_wrlock(&table_lock);
	return arg;
}

static void *sleeper(void *arg)
{
	role("sleeper", gettid_());
	pthread_mutex_lock(&lock_1);
	pthread_barrier_wait(&barrier);
	for (;;)
		sleep(1000);
	return arg;
}

static void *waiter(void *arg)
{
	struct timespec ts;

	role("waiter", gettid_());
	pthread_barrier_wait(&barrier);
	/* When it starts to wait: the truth of its "waited_ns". */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(roles, "waiter_since %lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	fflush(roles);
	pthread_mutex_lock(&lock_1);
	return arg;
}

static void *exit_holding(void *arg)
{
	role("gone", gettid_());
	pthread_mutex_lock(&lock_1);
	return arg;
}

static void *waiter_nobarrier(void *arg)
{
	role("waiter", gettid_());
	pthread_mutex_lock(&lock_1);
	return arg;
}

static sem_t work_sem;
static int poll_fds[2];

static void *sem_waiter(void *arg)
{
	role("semwaiter", gettid_());
	sem_wait(&work_sem);
	return arg;
}

static void *poller(void *arg)
{
	struct pollfd p[2] = { { poll_fds[0], POLLIN, 0 }, { poll_fds[1], POLLIN, 0 } };

	role("poller", gettid_());
	for (;;)
		poll(p, 2, -1); /* EINTR: again, as programs do */
	return arg;
}

static void *epoller(void *arg)
{
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN }, out;

	for (int i = 0; i < 2; i++) {
		e.data.fd = poll_fds[i];
		epoll_ctl(ep, EPOLL_CTL_ADD, poll_fds[i], &e);
	}
	role("epoller", gettid_());
	for (;;)
		epoll_wait(ep, &out, 1, -1); /* EINTR after a freeze: again */
	return arg;
}

static void *cond_waiter(void *arg)
{
	role("condwaiter", gettid_());
	pthread_mutex_lock(&lock_1);
	for (;;)
		pthread_cond_wait(&queue_cond, &lock_1);
	return arg;
}

static void *short_lived(void *arg)
{
	return arg;
}

static void *sleep_forever(void *arg)
{
	role("sleeper", gettid_());
	for (;;)
		sleep(1000);
	return arg;
}

static void churn(void)
{
	for (unsigned i = 0;; i++) {
		pthread_t t[4];

		for (int k = 0; k < 4; k++)
			pthread_create(&t[k], NULL, short_lived, NULL);
		for (int k = 0; k < 4; k++)
			pthread_join(t[k], NULL);
		if (i % 16 == 0) {
			pid_t c = fork();

			if (c == 0) {
				execl("/bin/true", "true", (char *)NULL);
				_exit(127);
			}
			waitpid(c, NULL, 0);
		}
	}
}

static void spawn_threads(void *(*fn)(void *), int n)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;

		pthread_create(&t, NULL, fn, (void *)(long)i);
		nthreads++;
	}
}

static void ready(void)
{
	printf("ready %d\n", nthreads);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc < 3 || !(roles = fopen(argv[2], "w")))
		return 2;
	mode = argv[1];
	role("main", gettid_());
	if (!strncmp(mode, "mutex-", 6) || !strcmp(mode, "mutex3")) {
		const char *kind = strcmp(mode, "mutex3") ? mode + 6 : "normal";

		ncycle = strcmp(mode, "mutex3") ? 2 : 3;
		for (int i = 0; i < ncycle; i++)
			init_mutex(cycle[i], kind);
		pthread_barrier_init(&barrier, NULL, (unsigned)ncycle);
		spawn_threads(cycle_thread, ncycle);
	} else if (!strcmp(mode, "rwlock")) {
		init_mutex(&lock_1, "normal");
		pthread_barrier_init(&barrier, NULL, 2);
		spawn_threads(rw_writer, 1);
		spawn_threads(rw_waiter, 1);
	} else if (!strcmp(mode, "sleeper")) {
		init_mutex(&lock_1, "normal");
		pthread_barrier_init(&barrier, NULL, 2);
		spawn_threads(sleeper, 1);
		spawn_threads(waiter, 1);
	} else if (!strcmp(mode, "sem")) {
		sem_init(&work_sem, 0, 0);
		spawn_threads(sem_waiter, 1);
	} else if (!strcmp(mode, "join")) {
		pthread_t t;

		pthread_create(&t, NULL, sleep_forever, NULL);
		nthreads++;
		ready();
		pthread_join(t, NULL);
		return 0;
	} else if (!strcmp(mode, "poll")) {
		int p[2];

		if (pipe(p))
			return 2;
		poll_fds[0] = p[0];
		poll_fds[1] = eventfd(0, 0);
		role("pipefd", poll_fds[0]);
		role("eventfd", poll_fds[1]);
		spawn_threads(poller, 1);
		spawn_threads(epoller, 1);
	} else if (!strcmp(mode, "orphan")) {
		pthread_t t;

		init_mutex(&lock_1, "normal");
		pthread_create(&t, NULL, exit_holding, NULL);
		pthread_join(t, NULL);
		spawn_threads(waiter_nobarrier, 1);
	} else if (!strcmp(mode, "churn")) {
		spawn_threads(sleep_forever, 4);
		ready();
		churn();
	} else if (!strcmp(mode, "condvar")) {
		init_mutex(&lock_1, "normal");
		spawn_threads(cond_waiter, 1);
	} else if (!strcmp(mode, "tcp")) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t len = sizeof(a);
		int l = socket(AF_INET, SOCK_STREAM, 0), s;
		char x;

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
		    getsockname(l, (struct sockaddr *)&a, &len))
			return 2;
		pid_t c = fork();

		if (c == 0) {
			int cs = socket(AF_INET, SOCK_STREAM, 0);

			close(l);
			if (connect(cs, (struct sockaddr *)&a, sizeof(a)))
				_exit(2);
			for (;;)
				pause();
		}
		role("child", c);
		s = accept(l, NULL, NULL);
		close(l);
		ready();
		(void)!read(s, &x, 1);
		return 0;
	} else if (!strcmp(mode, "flock2")) {
		char a[] = "/tmp/waits-flock-a-XXXXXX", b[] = "/tmp/waits-flock-b-XXXXXX";
		int fa = mkstemp(a), fb = mkstemp(b), go[2], got[2];
		char x;

		unlink(a);
		unlink(b);
		if (fa < 0 || fb < 0 || pipe(go) || pipe(got))
			return 2;
		pid_t c = fork();

		if (c == 0) {
			char self[64];
			int ca, cb;

			snprintf(self, sizeof(self), "/proc/%d/fd/%d", (int)getppid(), fa);
			ca = open(self, O_RDWR);
			snprintf(self, sizeof(self), "/proc/%d/fd/%d", (int)getppid(), fb);
			cb = open(self, O_RDWR);
			flock(cb, LOCK_EX);
			(void)!write(got[1], "x", 1);
			(void)!read(go[0], &x, 1);
			flock(ca, LOCK_EX);
			_exit(0);
		}
		role("child", c);
		flock(fa, LOCK_EX);
		(void)!read(got[0], &x, 1);
		(void)!write(go[1], "x", 1);
		ready();
		flock(fb, LOCK_EX);
		return 0;
	} else if (!strcmp(mode, "pipe") || !strcmp(mode, "waitpid") ||
		   !strcmp(mode, "flock")) {
		int p[2], go[2];
		char path[] = "/tmp/waits-flock-XXXXXX";
		int fd = -1;

		if (pipe(p) || pipe(go))
			return 2;
		if (!strcmp(mode, "flock")) {
			fd = mkstemp(path);
			unlink(path);
		}
		pid_t c = fork();

		if (c == 0) {
			if (fd >= 0) {
				/* A lock of the child's own open file. */
				char self[64];
				int own;

				snprintf(self, sizeof(self), "/proc/%d/fd/%d", (int)getppid(), fd);
				own = open(self, O_RDWR);
				flock(own, LOCK_EX);
			}
			close(p[0]);
			(void)!write(go[1], "x", 1);
			for (;;)
				pause();
		}
		role("child", c);
		close(p[1]);
		char x;

		(void)!read(go[0], &x, 1);
		ready();
		if (!strcmp(mode, "pipe"))
			(void)!read(p[0], &x, 1);
		else if (!strcmp(mode, "waitpid"))
			waitpid(c, NULL, 0);
		else
			flock(fd, LOCK_EX);
		return 0;
	} else {
		return 2;
	}
	ready();
	for (;;)
		pause();
}
