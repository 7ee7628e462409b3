/* test_waits.c - unit tests of who waits for whom: the cycle search over
 * hand-made edges (threads, and processes as a whole), and the library's
 * graph of a forked child whose two threads deadlock on two mutexes it
 * names (the child's own record of which thread holds which is the
 * oracle). Run under ASan/UBSan in the tests-san build. Needs ptrace
 * rights over its own child (the default). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "stacksnap.h"
#include "waits/wait_python.h"

static struct stacksnap_wait_owner node(pid_t pid, pid_t tid)
{
	struct stacksnap_wait_owner o = { pid, tid };

	return o;
}

static struct stacksnap_wait_edge edge(pid_t p1, pid_t t1, pid_t p2, pid_t t2)
{
	struct stacksnap_wait_edge e = { node(p1, t1), node(p2, t2) };

	return e;
}

static void cycles_of_threads(void)
{
	/* 10 -> 11 -> 12 -> 10, 20 -> 21 -> 20, a chain 30 -> 31 -> 10. */
	struct stacksnap_wait_edge e[] = {
		edge(1, 30, 1, 31), edge(1, 31, 1, 10), edge(1, 11, 1, 12),
		edge(1, 10, 1, 11), edge(1, 12, 1, 10), edge(1, 21, 1, 20),
		edge(1, 20, 1, 21),
	};
	struct stacksnap_wait_owner *m;
	size_t *starts, n;

	CHECK(stacksnap_wait_cycles(e, sizeof(e) / sizeof(e[0]), &m, &starts, &n) == 0);
	CHECK_EQ_U64(n, 2);
	if (n != 2)
		return;
	/* Each from its smallest thread, in waiting order. */
	CHECK_EQ_U64(starts[1] - starts[0], 3);
	CHECK(m[0].tid == 10 && m[1].tid == 11 && m[2].tid == 12);
	CHECK_EQ_U64(starts[2] - starts[1], 2);
	CHECK(m[3].tid == 20 && m[4].tid == 21);
	free(m);
	free(starts);
}

static void cycle_through_processes(void)
{
	/* Thread 100/101 waits for process 200 (a file lock it holds), whose
	 * thread 200/202 waits for process 100: the processes point at their
	 * waiting threads. The cycle lists the threads only. */
	struct stacksnap_wait_edge e[] = {
		edge(100, 101, 200, 0), edge(200, 0, 200, 202),
		edge(200, 202, 100, 0), edge(100, 0, 100, 101),
	};
	struct stacksnap_wait_owner *m;
	size_t *starts, n;

	CHECK(stacksnap_wait_cycles(e, 4, &m, &starts, &n) == 0);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_EQ_U64(starts[1], 2);
		CHECK(m[0].pid == 100 && m[0].tid == 101 && m[1].pid == 200 && m[1].tid == 202);
	}
	free(m);
	free(starts);
	/* No cycle in a convoy of 100,000 threads (and no recursion). */
	size_t len = 100000;
	struct stacksnap_wait_edge *c = calloc(len, sizeof(*c));

	for (size_t i = 0; c && i < len; i++)
		c[i] = edge(1, (pid_t)i + 1, 1, (pid_t)i + 2);
	CHECK(c && stacksnap_wait_cycles(c, len, &m, &starts, &n) == 0 && n == 0);
	free(c);
	free(m);
	free(starts);
}

pthread_mutex_t unit_lock_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t unit_lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t barrier;
static int tids_fd;

static void *lock_pair(void *arg)
{
	pthread_mutex_t *first = arg ? &unit_lock_b : &unit_lock_a;
	pthread_mutex_t *second = arg ? &unit_lock_a : &unit_lock_b;
	pid_t tid = (pid_t)syscall(SYS_gettid);

	pthread_mutex_lock(first);
	(void)!write(tids_fd, &tid, sizeof(tid));
	pthread_barrier_wait(&barrier);
	pthread_mutex_lock(second);
	return NULL;
}

/* The child: thread A holds unit_lock_a and waits for unit_lock_b, B the
 * reverse; their tids go to fd in that order. */
static _Noreturn void deadlock_child(int fd)
{
	pthread_t a, b;

	tids_fd = fd;
	pthread_barrier_init(&barrier, NULL, 2);
	pthread_create(&a, NULL, lock_pair, NULL);
	pthread_create(&b, NULL, lock_pair, (void *)1);
	for (;;)
		pause();
}

static bool in_futex(pid_t pid, pid_t tid)
{
	char path[64], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (!(f = fopen(path, "r")))
		return false;
	(void)!fgets(buf, sizeof(buf), f);
	fclose(f);
	return !strncmp(buf, "202 ", 4);
}

static void live_deadlock(void)
{
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(NULL);
	int p[2];
	pid_t tid[2] = { 0, 0 }, child;

	CHECK(ctx && pipe(p) == 0);
	/* Each thread writes its tid once it holds its first lock; they
	 * may come in either order, so A's and B's are told by the lock. */
	child = fork();
	if (child == 0) {
		close(p[0]);
		deadlock_child(p[1]);
	}
	close(p[1]);
	CHECK(read(p[0], &tid[0], sizeof(pid_t)) == sizeof(pid_t));
	CHECK(read(p[0], &tid[1], sizeof(pid_t)) == sizeof(pid_t));
	for (int i = 0; i < 500 && !(in_futex(child, tid[0]) && in_futex(child, tid[1])); i++)
		usleep(10000);
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, child);
	STACKSNAP_OPTS(stacksnap_snapshot_opts, so, .freeze_all = true, .addrspace = as);
	struct stacksnap_snapshot *snap = as ? stacksnap_snapshot__capture(ctx, child, &so) : NULL;
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(NULL, 0, 0);
	struct stacksnap_waits *w = stacksnap_waits__new(ctx, child, as, NULL);
	size_t n = snap ? stacksnap_snapshot__thread_count(snap) : 0;
	struct stacksnap_frame (*frames)[64] = calloc(n ? n : 1, sizeof(*frames));
	size_t *nfs = calloc(n ? n : 1, sizeof(*nfs));

	CHECK(snap && uw && mem && w && frames && nfs);
	for (size_t i = 0; snap && uw && mem && w && frames && nfs && i < n; i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, i);
		size_t nf = 0;

		stacksnap_mem__set_copy(mem, th->stack, th->stack_len, th->stack_base);
		if (!th->error && stacksnap_unwinder__start(uw, as, &th->regs, mem) == 0)
			while (nf < 64 && stacksnap_unwinder__next(uw, &frames[i][nf]) == 1)
				nf++;
		CHECK(stacksnap_waits__add_thread(w, th, frames[i], nf) == 0);
		nfs[i] = nf;
	}
	CHECK(w && stacksnap_waits__resolve(w) == 0);
	/* Each waits for the mutex the other holds. */
	for (int k = 0; w && k < 2; k++) {
		const struct stacksnap_wait *wt = stacksnap_waits__thread(w, tid[k]);

		CHECKF(wt && wt->kind == STACKSNAP_WAIT_MUTEX, "thread %d: kind %d",
		       (int)tid[k], wt ? (int)wt->kind : -1);
		if (!wt || wt->kind != STACKSNAP_WAIT_MUTEX)
			continue;
		CHECKF(wt->nowners == 1 && wt->owners[0].pid == child &&
		       wt->owners[0].tid == tid[!k], "thread %d: %zu owners, first %d",
		       (int)tid[k], wt->nowners, wt->nowners ? (int)wt->owners[0].tid : 0);
		CHECK(wt->object_name && !strncmp(wt->object_name, "unit_lock_", 10));
		CHECK(wt->object == (uint64_t)(uintptr_t)(wt->object_name[10] == 'a'
				? &unit_lock_a : &unit_lock_b));
	}
	CHECK_EQ_U64(stacksnap_waits__deadlock_count(w), 1);
	/* locks_only (watch's samples): the same mutexes and cycle; the main
	 * thread's pause() is no source's then, only its system call. */
	STACKSNAP_OPTS(stacksnap_waits_opts, lo, .locks_only = true);
	struct stacksnap_waits *wl = stacksnap_waits__new(ctx, child, as, &lo);

	CHECK(wl);
	for (size_t i = 0; wl && snap && frames && nfs && i < n; i++)
		CHECK(stacksnap_waits__add_thread(wl, stacksnap_snapshot__thread(snap, i),
						  frames[i], nfs[i]) == 0);
	CHECK(wl && stacksnap_waits__resolve(wl) == 0);
	for (int k = 0; wl && k < 2; k++) {
		const struct stacksnap_wait *wt = stacksnap_waits__thread(wl, tid[k]);

		CHECK(wt && wt->kind == STACKSNAP_WAIT_MUTEX && wt->nowners == 1 &&
		      wt->owners[0].tid == tid[!k]);
	}
	const struct stacksnap_wait *m0 = stacksnap_waits__thread(w, child),
				    *m1 = stacksnap_waits__thread(wl, child);

	CHECKF(m0 && m0->kind == STACKSNAP_WAIT_SLEEP, "main: kind %d", m0 ? (int)m0->kind : -1);
	CHECKF(m1 && m1->kind == STACKSNAP_WAIT_OTHER && m1->syscall == 34,
	       "main, locks only: kind %d syscall %ld", m1 ? (int)m1->kind : -1,
	       m1 ? m1->syscall : -1);
	CHECK_EQ_U64(stacksnap_waits__deadlock_count(wl), 1);
	stacksnap_waits__free(wl);
	stacksnap_waits__free(w);
	free(frames);
	free(nfs);
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
	stacksnap_snapshot__free(snap);
	stacksnap_addrspace__free(as);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(p[0]);
	stacksnap_ctx__free(ctx);
}

/* The CPython lock object search over this process's own memory laid out
 * as CPython's: the object whose lock_lock is the semaphore and whose
 * type is named _thread.RLock / _thread.lock, never one with another type
 * name or another semaphore. */
static int own_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return 0;
}

static void python_lock_object(void)
{
	static const char rlock_name[16] = "_thread.RLock", lock_name[16] = "_thread.lock",
			  other_name[16] = "_thread.RLockX";
	uint64_t rl_type[4] = { 1, 0, 0, (uintptr_t)rlock_name };
	uint64_t lk_type[4] = { 1, 0, 0, (uintptr_t)lock_name };
	uint64_t ot_type[4] = { 1, 0, 0, (uintptr_t)other_name };
	uint64_t sem = 0x5a5a0000;
	uint64_t other[5] = { 1, (uintptr_t)ot_type, sem, 0x1000, 1 };
	uint64_t wrong_sem[5] = { 1, (uintptr_t)rl_type, sem + 8, 0x1000, 1 };
	uint64_t rlock[5] = { 1, (uintptr_t)rl_type, sem, 0x7f0000001000ull, 2 };
	uint64_t lock[5] = { 1, (uintptr_t)lk_type, sem, 0, 0 };
	uint64_t cands[] = { 0, 8, 0x1001, (uintptr_t)other, (uintptr_t)wrong_sem,
			     (uintptr_t)rlock, (uintptr_t)lock };
	struct py_lock_obj o;

	CHECK(waits_python__find_lock(cands, 7, sem, own_read, NULL, &o) == 1);
	CHECK_EQ_U64(o.addr, (uintptr_t)rlock);
	CHECK(o.rlock);
	CHECK_EQ_U64(o.owner, 0x7f0000001000ull);
	CHECK_EQ_U64(o.count, 2);
	CHECK(waits_python__find_lock(cands + 6, 1, sem, own_read, NULL, &o) == 1);
	CHECK(!o.rlock && o.addr == (uintptr_t)lock);
	CHECK(waits_python__find_lock(cands, 5, sem, own_read, NULL, &o) == 0);
	CHECK(waits_python__find_lock(cands, 7, sem + 16, own_read, NULL, &o) == 0);
}

/* Goroutines' kinds from their wait reasons and sync frames, and Go's
 * "all goroutines are asleep": not when one runs, not counting the
 * runtime's idle goroutines nor os/signal's loop (said). */
static struct stacksnap_goroutine goroutine(const char *reason, const char *status,
					    const struct stacksnap_runtime_frame *fr,
					    size_t n)
{
	struct stacksnap_goroutine g;

	memset(&g, 0, sizeof(g));
	g.sz = sizeof(g);
	g.wait_reason = reason;
	g.status = status;
	g.frames = fr;
	g.nframes = n;
	return g;
}

static void go_wait_kinds(void)
{
	static const struct stacksnap_runtime_frame mutex[] = {
		{ .function = "runtime.gopark" }, { .function = "sync.runtime_SemacquireMutex" },
		{ .function = "sync.(*Mutex).lockSlow" }, { .function = "sync.(*Mutex).Lock" },
		{ .function = "main.work" } };
	static const struct stacksnap_runtime_frame wg[] = {
		{ .function = "runtime.gopark" }, { .function = "sync.(*WaitGroup).Wait" } };
	static const struct stacksnap_runtime_frame sig[] = {
		{ .function = "runtime.notetsleepg" }, { .function = "os/signal.signal_recv" } };
	struct stacksnap_goroutine gs[6];
	const char *why, *note;

	gs[0] = goroutine("semacquire", "semacquire", mutex, 5);
	gs[1] = goroutine("semacquire", "semacquire", wg, 2);
	gs[2] = goroutine("chan receive", "chan receive", NULL, 0);
	gs[3] = goroutine("GC worker (idle)", "GC worker (idle)", NULL, 0);
	gs[4] = goroutine(NULL, "syscall", sig, 2);
	gs[5] = goroutine(NULL, "running", NULL, 0);
	CHECK(!strcmp(stacksnap_goroutine__wait_kind(&gs[0], &why), "go-mutex"));
	CHECK(strstr(why, "no owner field") != NULL);
	CHECK(!strcmp(stacksnap_goroutine__wait_kind(&gs[1], NULL), "go-waitgroup"));
	CHECK(!strcmp(stacksnap_goroutine__wait_kind(&gs[2], NULL), "go-chan"));
	CHECK(!strcmp(stacksnap_goroutine__wait_kind(&gs[3], NULL), "go-runtime"));
	CHECK(stacksnap_goroutine__wait_kind(&gs[5], &why) == NULL && !why);
	CHECK(stacksnap_goroutines__all_asleep(gs, 4, &note) && !note);
	CHECK(stacksnap_goroutines__all_asleep(gs, 5, &note) && note &&
	      strstr(note, "os/signal"));
	CHECK(!stacksnap_goroutines__all_asleep(gs, 6, &note));
	CHECK(!stacksnap_goroutines__all_asleep(gs + 3, 1, &note));
}

TEST_MAIN("waits", TEST(cycles_of_threads), TEST(cycle_through_processes),
	  TEST(live_deadlock), TEST(python_lock_object), TEST(go_wait_kinds))
