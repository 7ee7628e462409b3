/* lu_dump.c - the two libunwind baselines of the freeze benchmark: dump
 * every thread of a process with libunwind, either walking the stopped
 * threads live through ptrace (the _UPT accessors, as tbstack --ptrace
 * does) or copying registers and stacks, letting the process run, and
 * unwinding the copies (unw_create_addr_space with accessors reading the
 * copy, as tbstack does by default).
 *
 * usage: lu_dump --ptrace|--copy PID
 * Prints "TID n: ..." and "#i 0xpc name+0xoff" lines, like eu-stack, and
 * "lu_dump: freeze_us=X" on stderr. */
#include "lu_remote.h"

#include <dirent.h>
#include <errno.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#define MAX_THREADS 1024
#define MAX_FRAMES 1024
#define STACK_COPY (256u << 10)

static struct lu_thread threads[MAX_THREADS];
static int nthreads;
static uint64_t *pcs[MAX_THREADS];
static int npcs[MAX_THREADS], step_ret[MAX_THREADS];
static struct lu_maps maps;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int list_threads(int pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(dir = opendir(path)))
		return -1;
	while ((d = readdir(dir)) && nthreads < MAX_THREADS)
		if (d->d_name[0] != '.')
			threads[nthreads++].tid = atoi(d->d_name);
	closedir(dir);
	return 0;
}

/* Stops every thread: seize, interrupt all, then collect the stops (so
 * the threads stop concurrently, not one round trip each). */
static int freeze(void)
{
	for (int i = 0; i < nthreads; i++)
		if (ptrace(PTRACE_SEIZE, threads[i].tid, 0, 0) ||
		    ptrace(PTRACE_INTERRUPT, threads[i].tid, 0, 0)) {
			fprintf(stderr, "lu_dump: tid %d: %s\n", threads[i].tid,
				strerror(errno));
			return -1;
		}
	for (int i = 0; i < nthreads; i++) {
		int st;

		if (waitpid(threads[i].tid, &st, __WALL) < 0)
			return -1;
	}
	return 0;
}

static void thaw(void)
{
	for (int i = 0; i < nthreads; i++)
		ptrace(PTRACE_DETACH, threads[i].tid, 0, 0);
}

static void walk_live(void)
{
	unw_addr_space_t as = unw_create_addr_space(&_UPT_accessors, 0);

	for (int i = 0; i < nthreads; i++) {
		void *upt = _UPT_create(threads[i].tid);
		unw_cursor_t c;
		int r = unw_init_remote(&c, as, upt), n = 0;

		while (r >= 0 && n < MAX_FRAMES) {
			unw_word_t ip;

			unw_get_reg(&c, UNW_REG_IP, &ip);
			pcs[i][n++] = ip;
			if ((r = unw_step(&c)) <= 0)
				break;
		}
		npcs[i] = n;
		step_ret[i] = r;
		_UPT_destroy(upt);
	}
	unw_destroy_addr_space(as);
}

static int copy_threads(int pid)
{
	for (int i = 0; i < nthreads; i++) {
		struct lu_thread *t = &threads[i];
		struct user_regs_struct u;

		if (ptrace(PTRACE_GETREGS, t->tid, 0, &u))
			return -1;
		uint64_t r[LU_REGS] = { u.rax, u.rdx, u.rcx, u.rbx, u.rsi, u.rdi,
					u.rbp, u.rsp, u.r8,  u.r9,  u.r10, u.r11,
					u.r12, u.r13, u.r14, u.r15, u.rip };
		memcpy(t->regs, r, sizeof(r));
		/* Copy from rsp to the end of its mapping, at most STACK_COPY. */
		struct lu_map *m = lu_maps_find(&maps, u.rsp);
		size_t len = STACK_COPY;
		if (m && m->end - u.rsp < len)
			len = m->end - u.rsp;
		struct iovec l = { t->stack, len }, rv = { (void *)u.rsp, len };
		ssize_t got = process_vm_readv(t->tid, &l, 1, &rv, 1, 0);
		t->stack_base = u.rsp;
		t->stack_len = got > 0 ? (size_t)got : 0;
	}
	return 0;
}

static void walk_copies(int pid)
{
	unw_addr_space_t as = unw_create_addr_space(&lu_copy_accessors, 0);
	struct lu_walk w = { .maps = &maps, .upt = _UPT_create(pid) };

	unw_set_caching_policy(as, UNW_CACHE_GLOBAL);
	for (int i = 0; i < nthreads; i++) {
		w.thread = &threads[i];
		npcs[i] = lu_walk_copy(as, &w, pcs[i], MAX_FRAMES, &step_ret[i]);
	}
	_UPT_destroy(w.upt);
	unw_destroy_addr_space(as);
}

static void print(int pid)
{
	void *upt = _UPT_create(pid);
	unw_addr_space_t as = unw_create_addr_space(&_UPT_accessors, 0);

	for (int i = 0; i < nthreads; i++) {
		if (step_ret[i] == 0)
			printf("TID %d: %d frames, end of stack\n",
			       threads[i].tid, npcs[i]);
		else
			printf("TID %d: %d frames, unw_step failed: %s\n",
			       threads[i].tid, npcs[i], unw_strerror(step_ret[i]));
		for (int f = 0; f < npcs[i]; f++) {
			/* Return addresses name the call: look up pc - 1. */
			uint64_t pc = pcs[i][f] - (f > 0);
			unw_word_t off = 0;
			char name[256];

			if (_UPT_get_proc_name(as, pc, name, sizeof(name), &off, upt))
				strcpy(name, "??");
			printf("#%-3d 0x%016" PRIx64 " %s+0x%" PRIx64 "\n", f,
			       pcs[i][f], name, (uint64_t)(off + (f > 0)));
		}
	}
	unw_destroy_addr_space(as);
	_UPT_destroy(upt);
}

int main(int argc, char **argv)
{
	int live, pid;
	uint64_t t0, t1;

	if (argc != 3 || (strcmp(argv[1], "--ptrace") && strcmp(argv[1], "--copy"))) {
		fprintf(stderr, "usage: lu_dump --ptrace|--copy PID\n");
		return 1;
	}
	live = !strcmp(argv[1], "--ptrace");
	pid = atoi(argv[2]);
	if (list_threads(pid) || lu_maps_read(&maps, pid)) {
		fprintf(stderr, "lu_dump: pid %d: %s\n", pid, strerror(errno));
		return 2;
	}
	for (int i = 0; i < nthreads; i++) {
		pcs[i] = malloc(MAX_FRAMES * sizeof(uint64_t));
		if (!live && !(threads[i].stack = malloc(STACK_COPY)))
			return 9;
		/* Fault the copy buffers in before the freeze, as stacksnap does. */
		if (!live)
			memset(threads[i].stack, 0, STACK_COPY);
	}
	t0 = now_ns();
	if (freeze()) {
		thaw();
		return 3;
	}
	if (live)
		walk_live();
	else if (copy_threads(pid)) {
		thaw();
		return 9;
	}
	thaw();
	t1 = now_ns();
	if (!live)
		walk_copies(pid);
	print(pid);
	fprintf(stderr, "lu_dump: freeze_us=%.1f threads=%d\n", (t1 - t0) / 1e3,
		nthreads);
	lu_maps_release(&maps);
	return 0;
}
