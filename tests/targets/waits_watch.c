/* waits_watch.c - target of tests/integration/waits_watch: waits that
 * last and one that ends. `waits_watch ROLES` writes "role tid" lines to
 * the file ROLES, prints "ready N" and runs for good: dl-a and dl-b
 * deadlocked on lock_a and lock_b; waiter waits for lock_c, held by
 * sleeper, which sleeps; late waits for lock_d, held by releaser until
 * the process gets SIGUSR1 (releaser unlocks it then, and late takes it
 * and sleeps). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER, lock_b = PTHREAD_MUTEX_INITIALIZER,
		lock_c = PTHREAD_MUTEX_INITIALIZER, lock_d = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both, held, named;
static FILE *roles;
static pthread_mutex_t roles_lock = PTHREAD_MUTEX_INITIALIZER;

static void role(const char *name)
{
	pthread_setname_np(pthread_self(), name);
	pthread_mutex_lock(&roles_lock);
	fprintf(roles, "%s %d\n", name, (int)syscall(SYS_gettid));
	fflush(roles);
	pthread_mutex_unlock(&roles_lock);
}

static void *dl_a(void *arg)
{
	(void)arg;
	role("dl-a");
	pthread_mutex_lock(&lock_a);
	pthread_barrier_wait(&both);
	pthread_mutex_lock(&lock_b);
	return NULL;
}

static void *dl_b(void *arg)
{
	(void)arg;
	role("dl-b");
	pthread_mutex_lock(&lock_b);
	pthread_barrier_wait(&both);
	pthread_mutex_lock(&lock_a);
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	role("sleeper");
	pthread_mutex_lock(&lock_c);
	pthread_barrier_wait(&held);
	for (;;)
		sleep(1000);
	return NULL;
}

static void *releaser(void *arg)
{
	sigset_t usr1;
	int sig;

	(void)arg;
	role("releaser");
	pthread_mutex_lock(&lock_d);
	pthread_barrier_wait(&held);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigwait(&usr1, &sig);
	pthread_mutex_unlock(&lock_d);
	for (;;)
		sleep(1000);
	return NULL;
}

static void *waiter(void *arg)
{
	pthread_mutex_t *m = arg;

	role(m == &lock_c ? "waiter" : "late");
	pthread_barrier_wait(&named);
	pthread_mutex_lock(m);
	pthread_mutex_unlock(m);
	for (;;)
		sleep(1000);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[6];
	sigset_t usr1;

	if (argc != 2 || !(roles = fopen(argv[1], "w"))) {
		fprintf(stderr, "usage: waits_watch ROLES\n");
		return 2;
	}
	/* SIGUSR1 is releaser's to take. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	pthread_barrier_init(&both, NULL, 2);
	pthread_barrier_init(&held, NULL, 3);
	pthread_barrier_init(&named, NULL, 3);
	pthread_create(&t[0], NULL, dl_a, NULL);
	pthread_create(&t[1], NULL, dl_b, NULL);
	pthread_create(&t[2], NULL, sleeper, NULL);
	pthread_create(&t[3], NULL, releaser, NULL);
	pthread_barrier_wait(&held);	/* lock_c and lock_d held */
	pthread_create(&t[4], NULL, waiter, &lock_c);
	pthread_create(&t[5], NULL, waiter, &lock_d);
	pthread_barrier_wait(&named);	/* every role in the file */
	printf("ready 7\n");
	fflush(stdout);
	for (;;)
		pause();
}
