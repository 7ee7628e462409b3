/* stall_target.c - the process the benchmarks dump: N threads in deep call
 * chains built without frame pointers (partly inside libc, optionally through
 * K shared libraries), either spinning on CLOCK_MONOTONIC or sleeping on a
 * fixed period, each recording how long it was kept from running.
 *
 * usage: stall_target --threads N --mode spin|sleep --stats FILE
 *                     [--depth D] [--hops LIBHOP.so --nhops K]
 *
 * The stats FILE is a shared mapping (layout: struct stall_stats below) that
 * the orchestrator zeroes before a window and reads after it, so measuring
 * costs the target nothing beyond its own loop. "ready" is printed on stdout
 * once every thread is in its loop. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define MAX_THREADS 512
#define MAX_HOPS 64
/* Sleeping threads wake STAGGER_NS apart, all together once per
 * nthreads * STAGGER_NS: a freeze longer than STAGGER_NS always makes some
 * thread late by about its length, whatever the thread count. */
#define STAGGER_NS 50000ull

/* One thread's record; a cache line each so threads do not share lines. */
struct stall_slot {
	_Atomic uint64_t max_gap_ns; /* spin: largest gap between two clock
					reads; sleep: largest lateness */
	_Atomic uint64_t loops;	     /* iterations, to see it is alive */
	uint64_t pad[6];
};

/* The shared stats file. Written by the target's threads, zeroed and read
 * by the orchestrator; every field is a naturally aligned 64-bit word, so
 * reads are never torn. */
struct stall_stats {
	uint64_t magic;		      /* STATS_MAGIC once initialised */
	uint32_t nthreads;	      /* worker threads (the main thread waits) */
	uint32_t mode;		      /* 0 spin, 1 sleep */
	_Atomic uint64_t proc_gap_ns; /* spin: largest time no thread read the
					 clock; sleep: largest lateness of any
					 thread */
	_Atomic uint64_t last_progress_ns; /* spin: newest clock read of any thread */
	uint64_t pad[4];
	struct stall_slot slot[MAX_THREADS];
};
#define STATS_MAGIC 0x6c6c617473626e73ull

static struct stall_stats *stats;
static int mode_sleep;
static int depth = 40;
static int nthreads = 1;
static _Atomic int ready_count;
/* hops is the table of hop_fn; void * because a function type cannot name
 * itself. */
typedef void (*hop_fn)(const void *hops, int i, int n, void (*leaf)(void));
static hop_fn hops[MAX_HOPS];
static int nhops;
static __thread int my_index;
static char hop_dir[] = "/tmp/stall-hops-XXXXXX";
static char hop_paths[MAX_HOPS][64];
static volatile int sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record_max(_Atomic uint64_t *m, uint64_t v)
{
	uint64_t old = atomic_load_explicit(m, memory_order_relaxed);

	/* The orchestrator may zero m at any time; losing one update to that
	 * race only moves a gap into the neighbouring window. */
	while (v > old && !atomic_compare_exchange_weak_explicit(
				  m, &old, v, memory_order_relaxed,
				  memory_order_relaxed))
		;
}

NOINLINE static void spin_loop(struct stall_slot *s)
{
	uint64_t prev = now_ns();

	for (;;) {
		uint64_t t = now_ns();
		uint64_t last = atomic_load_explicit(&stats->last_progress_ns,
						     memory_order_relaxed);

		record_max(&s->max_gap_ns, t - prev);
		/* A read older than the newest one of any thread means another
		 * thread made progress since: no process-wide gap. */
		if (t > last) {
			if (last)
				record_max(&stats->proc_gap_ns, t - last);
			record_max(&stats->last_progress_ns, t);
		}
		prev = t;
		atomic_fetch_add_explicit(&s->loops, 1, memory_order_relaxed);
	}
}

NOINLINE static void sleep_loop(struct stall_slot *s, int index)
{
	uint64_t period = (uint64_t)nthreads * STAGGER_NS;
	uint64_t next = (now_ns() / period + 2) * period + index * STAGGER_NS;

	for (;;) {
		struct timespec ts = { .tv_sec = next / 1000000000u,
				       .tv_nsec = next % 1000000000u };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
		uint64_t t = now_ns();
		uint64_t late = t > next ? t - next : 0;

		record_max(&s->max_gap_ns, late);
		record_max(&stats->proc_gap_ns, late);
		atomic_fetch_add_explicit(&s->loops, 1, memory_order_relaxed);
		next += period;
		/* After a long stall, skip the missed periods rather than
		 * report one stall many times over. */
		while (next + period < t)
			next += period;
	}
}

/* The leaf: reached through qsort's comparator so the innermost frames
 * below the loop are libc's. */
static int compare_then_work(const void *a, const void *b)
{
	struct stall_slot *s = &stats->slot[my_index];

	atomic_fetch_add(&ready_count, 1);
	if (mode_sleep)
		sleep_loop(s, my_index);
	else
		spin_loop(s);
	return *(const int *)a - *(const int *)b;
}

NOINLINE static void enter_libc(void)
{
	int pair[2] = { 2, 1 };

	qsort(pair, 2, sizeof(pair[0]), compare_then_work);
	sink += pair[0];
}

/* Three chain functions with different frame sizes, calling each other, so
 * the CFI rows along a stack differ (a realistic mix, not one row). */
NOINLINE static void chain_a(int n);
NOINLINE static void chain_b(int n);
NOINLINE static void chain_c(int n);

static void chain_next(int n)
{
	if (n <= 0) {
		if (nhops)
			hops[0](hops, 0, nhops, enter_libc);
		else
			enter_libc();
	} else if (n % 3 == 0) {
		chain_a(n - 1);
	} else if (n % 3 == 1) {
		chain_b(n - 1);
	} else {
		chain_c(n - 1);
	}
}

NOINLINE static void chain_a(int n)
{
	chain_next(n);
	sink += n;
}

NOINLINE static void chain_b(int n)
{
	volatile char buf[40];

	buf[n % 40] = (char)n;
	chain_next(n);
	sink += buf[n % 40];
}

NOINLINE static void chain_c(int n)
{
	volatile uint64_t words[25];

	words[n % 25] = (uint64_t)n;
	chain_next(n);
	sink += (int)words[(n + 1) % 25];
}

static void *thread_main(void *arg)
{
	my_index = (int)(intptr_t)arg;
	chain_next(depth);
	return NULL;
}

/* Copies the hop library to K file names and opens each: K distinct
 * modules for the unwinders, from one build. */
static int load_hops(const char *lib, int k)
{
	static char buf[1 << 16];

	if (!mkdtemp(hop_dir))
		return -1;
	for (int i = 0; i < k; i++) {
		char *path = hop_paths[i];
		int in = open(lib, O_RDONLY), out;
		ssize_t n;

		snprintf(path, sizeof(hop_paths[i]), "%s/libhop%d.so", hop_dir, i);
		out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
		if (in < 0 || out < 0) {
			perror(lib);
			return -1;
		}
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n)
				return -1;
		close(in);
		close(out);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h || !(hops[i] = (hop_fn)dlsym(h, "hop_enter"))) {
			fprintf(stderr, "%s: %s\n", path, dlerror());
			return -1;
		}
		nhops = i + 1;
	}
	return 0;
}

/* The copies stay on disk while the target runs (tools that open modules
 * by the path in /proc/PID/maps cannot read a deleted file); SIGTERM
 * removes them. */
static void remove_hops(int sig)
{
	for (int i = 0; i < nhops; i++)
		unlink(hop_paths[i]);
	if (nhops)
		rmdir(hop_dir);
	_exit(128 + sig);
}

int main(int argc, char **argv)
{
	const char *stats_path = NULL, *hop_lib = NULL;
	int k = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--threads"))
			nthreads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--mode"))
			mode_sleep = !strcmp(argv[i + 1], "sleep");
		else if (!strcmp(argv[i], "--depth"))
			depth = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--stats"))
			stats_path = argv[i + 1];
		else if (!strcmp(argv[i], "--hops"))
			hop_lib = argv[i + 1];
		else if (!strcmp(argv[i], "--nhops"))
			k = atoi(argv[i + 1]);
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || k < 0 || k > MAX_HOPS) {
		fprintf(stderr, "usage: stall_target --threads 1..%d --mode spin|sleep "
			"--stats FILE [--depth D] [--hops LIB --nhops 0..%d]\n",
			MAX_THREADS, MAX_HOPS);
		return 1;
	}
	signal(SIGTERM, remove_hops);
	signal(SIGINT, remove_hops);
	if (hop_lib && k && load_hops(hop_lib, k)) {
		remove_hops(0);
		return 1;
	}
	if (stats_path) {
		int fd = open(stats_path, O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || ftruncate(fd, sizeof(*stats))) {
			perror(stats_path);
			return 1;
		}
		stats = mmap(NULL, sizeof(*stats), PROT_READ | PROT_WRITE,
			     MAP_SHARED, fd, 0);
		close(fd);
	} else {
		stats = mmap(NULL, sizeof(*stats), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	}
	if (stats == MAP_FAILED)
		return 1;
	stats->nthreads = (uint32_t)nthreads;
	stats->mode = (uint32_t)mode_sleep;
	/* The default 50 us timer slack would hide short stalls as lateness. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	for (int i = 0; i < nthreads; i++) {
		pthread_t t;

		if (pthread_create(&t, &attr, thread_main, (void *)(intptr_t)i)) {
			perror("pthread_create");
			return 1;
		}
		pthread_setname_np(t, mode_sleep ? "sleeper" : "spinner");
	}
	while (atomic_load(&ready_count) < nthreads)
		usleep(1000);
	stats->magic = STATS_MAGIC;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	/* The main thread waits in libc too, so it is a stack of its own to
	 * dump; the orchestrator ends the target with a signal. */
	for (;;)
		pause();
}
