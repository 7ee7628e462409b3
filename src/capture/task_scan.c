/* task_scan.c - the /proc side of a live capture: the target's checks,
 * its thread list (one getdents64 buffer reused by every rescan), each
 * thread's name, state and tracer, and the table of threads by tid. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/vec.h"
#include "capture/capture_internal.h"

#define DENTS_SIZE (16u << 10) /* getdents64 buffer of the task scans */

static int read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

/* State letter and the kernel-thread flag from /proc/PID/task/TID/stat. */
static char task_state(pid_t pid, pid_t tid, unsigned long *flags)
{
	char path[64], buf[1024], *p;
	unsigned long fl = 0;
	char st;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	if (read_small_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')'); /* comm may contain spaces and parens */
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &st, &fl) < 2)
		return 0;
	if (flags)
		*flags = fl;
	return st;
}

static void task_name(pid_t pid, pid_t tid, char name[16])
{
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	if (read_small_file(path, buf, sizeof(buf)) <= 0)
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	buf[15] = 0; /* comm is at most 15 characters */
	memcpy(name, buf, strlen(buf) + 1);
}

/* Whether a thread is gone or on its way out: the kernel refuses to
 * attach to an exiting task with EPERM, which is not a permission
 * problem. */
bool capture_thread_exiting(pid_t pid, pid_t tid)
{
	unsigned long flags = 0;
	char st = task_state(pid, tid, &flags);

	return !st || st == 'Z' || st == 'X' || (flags & 0x4 /* PF_EXITING */);
}

/* TracerPid of a thread, 0 when untraced, -1 when unknown. */
long capture_tracer_pid(pid_t pid, pid_t tid)
{
	char path[64], buf[4096], *tp;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	if (read_small_file(path, buf, sizeof(buf)) < 0 ||
	    !(tp = strstr(buf, "TracerPid:")))
		return -1;
	return strtol(tp + 10, NULL, 10);
}

static int cmp_by_tid(const void *a, const void *b, void *arg)
{
	const struct cap_thread *v = arg;
	pid_t x = v[*(const size_t *)a].pub.tid, y = v[*(const size_t *)b].pub.tid;

	return (x > y) - (x < y);
}

/* Sorts the threads known so far by tid, for capture__find_thread(): the iterator
 * runs look up every record, and at 513 threads a linear search per
 * record cost ~100 us a run. On -ENOMEM the index is only older. */
void capture__index_threads(struct stacksnap_snapshot *s)
{
	size_t *v;

	if (s->nindexed == s->n)
		return;
	v = realloc(s->by_tid, s->n * sizeof(*v));
	if (!v)
		return;
	s->by_tid = v;
	for (size_t i = 0; i < s->n; i++)
		v[i] = i;
	qsort_r(v, s->n, sizeof(*v), cmp_by_tid, s->threads);
	s->nindexed = s->n;
}

/* Threads [0, nindexed) by a binary search of the index, those added
 * since by a linear one. */
struct cap_thread *capture__find_thread(struct stacksnap_snapshot *s, pid_t tid)
{
	size_t lo = 0, hi = s->nindexed;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct cap_thread *t = &s->threads[s->by_tid[mid]];

		if (t->pub.tid == tid)
			return t;
		if (t->pub.tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = s->nindexed; i < s->n; i++)
		if (s->threads[i].pub.tid == tid)
			return &s->threads[i];
	return NULL;
}

bool capture__wanted(const struct stacksnap_snapshot_opts *o, pid_t tid)
{
	if (!o->tids)
		return true;
	for (size_t i = 0; i < o->ntids; i++)
		if (o->tids[i] == tid)
			return true;
	return false;
}

/* A new thread entry with its name and state; NULL on -ENOMEM. */
struct cap_thread *capture__add_thread(struct stacksnap_snapshot *s, pid_t tid)
{
	struct cap_thread *t = VEC_PUSH(s->threads, s->n, s->cap);

	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->pub.tid = tid;
	task_name(s->pid, tid, t->pub.name);
	t->pub.state = task_state(s->pid, tid, NULL);
	/* A leader that called pthread_exit() stays a zombie while the
	 * others run; it would never report a stop. It had exited before
	 * the capture began, not during it. */
	if (t->pub.state == 'Z' || t->pub.state == 'X')
		t->pub.error = tid == s->pid ? STACKSNAP_THREAD_EXITED
					     : STACKSNAP_THREAD_GONE;
	return t;
}

/* Adds threads of /proc/PID/task not yet known. Returns how many were new,
 * or -errno. The directory stays open and its buffer allocated for the
 * rescans inside the freeze: the first scan, before it, has the kernel
 * write the buffer once (see capture_prefault_kernel(); at 65 threads, load ~70,
 * a rescan through opendir()'s fresh buffer took 230-320 us of the
 * window, this one 100-170 us: procfs builds an entry per thread). */
int capture__scan_tasks(struct stacksnap_snapshot *s,
		      const struct stacksnap_snapshot_opts *o)
{
	int added = 0;

	if (s->task_fd < 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task", s->pid);
		s->task_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (s->task_fd < 0)
			return -errno;
	}
	if (!s->dents && !(s->dents = malloc(DENTS_SIZE)))
		return -ENOMEM;
	if (lseek(s->task_fd, 0, SEEK_SET) < 0)
		return -errno;
	capture__index_threads(s);
	for (;;) {
		ssize_t n = getdents64(s->task_fd, s->dents, DENTS_SIZE);

		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			const struct dirent64 *de = (const void *)(s->dents + off);
			pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
			struct cap_thread *t;

			off += de->d_reclen;
			if (tid <= 0 || !capture__wanted(o, tid) || capture__find_thread(s, tid))
				continue;
			t = capture__add_thread(s, tid);
			if (!t)
				return -ENOMEM;
			added++;
		}
	}
	return added;
}

/* Says why pid cannot be captured, or 0. */
int capture_check_target(pid_t pid, const struct log_sink *log)
{
	char path[64], buf[4096];
	unsigned long flags = 0;
	char *tp, *th, *tg;
	char st;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (read_small_file(path, buf, sizeof(buf)) < 0) {
		log_err(log, "pid %d: no such process", pid);
		return -ESRCH;
	}
	/* The kernel refuses a ptrace of one's own thread group (EPERM),
	 * whatever the permissions: no security module is to blame. */
	tg = strstr(buf, "\nTgid:");
	if (tg && strtol(tg + 6, NULL, 10) == (long)getpid()) {
		log_err(log, "pid %d: the calling process itself, which cannot "
			     "ptrace its own threads; take its own stacks with "
			     "stacksnap_backtrace() or stacksnap_backtrace_ucontext()",
			pid);
		return -EPERM;
	}
	st = task_state(pid, pid, &flags);
	th = strstr(buf, "Threads:");
	/* A leader that called pthread_exit() is a zombie too, but the
	 * process lives while it has other threads. */
	if ((st == 'Z' || st == 'X') && (!th || strtol(th + 8, NULL, 10) <= 1)) {
		log_err(log, "pid %d: the process is a zombie (it exited; its "
			     "parent has not reaped it)", pid);
		return -ECHILD;
	}
	if (flags & 0x00200000 /* PF_KTHREAD */) {
		log_err(log, "pid %d: a kernel thread has no user stack", pid);
		return -EINVAL;
	}
	tp = strstr(buf, "TracerPid:");
	if (tp && strtol(tp + 10, NULL, 10) != 0) {
		log_err(log, "pid %d: already traced by pid %ld (a debugger or "
			     "strace?); detach it first",
			pid, strtol(tp + 10, NULL, 10));
		return -EBUSY;
	}
	return 0;
}

/* The soft RLIMIT_STACK of pid from /proc/PID/limits, clamped to
 * [256 KiB, CAPTURE_MAX_STACK] (unlimited: the maximum); 8 MiB, Linux's
 * usual limit, when it cannot be read. No stack of pid's main thread
 * grows past it, and glibc sizes other threads' stacks by it. */
uint64_t capture_stack_limit(pid_t pid)
{
	char path[64], line[256];
	uint64_t v = 8u << 20;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", pid);
	if (!(f = fopen(path, "re")))
		return v;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strlen("Max stack size");

		if (strncmp(line, "Max stack size", strlen("Max stack size")))
			continue;
		while (*p == ' ')
			p++;
		if (!strncmp(p, "unlimited", 9))
			v = CAPTURE_MAX_STACK;
		else if (*p >= '0' && *p <= '9')
			v = strtoull(p, NULL, 10);
		break;
	}
	fclose(f);
	if (v < (256u << 10))
		v = 256u << 10;
	return v > CAPTURE_MAX_STACK ? CAPTURE_MAX_STACK : v;
}

/* startstack of pid's /proc/PID/stat (field 28): an address near the top
 * of the main thread's stack; 0 when unknown. */
uint64_t capture_start_stack(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_small_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')'); /* comm may contain spaces and parens */
	/* Fields 3 (state) to 27 skipped, then startstack. */
	if (!p || sscanf(p + 1, " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
				"%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
				"%*s %llu", &v) != 1)
		return 0;
	return v;
}
