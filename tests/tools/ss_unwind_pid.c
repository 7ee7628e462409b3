/* ss_unwind_pid.c - test driver: stops every thread of a live process with
 * ptrace, unwinds each one through the public API only, and prints the
 * frames in a stable line format that tests/integration/gdb_compare parses.
 *
 *   ss_unwind_pid [--lines] [--max-frames N] [-v] PID [TID...]
 *
 * Output, one thread after another (TIDs in ascending order):
 *   thread TID frames=N end=<end>
 *   frame I pc=0x.. sp=0x.. stepper=<s> trust=<t> flags=<signal|-> \
 *         off=0x.. modoff=0x.. module=<path|-> fn=<name|??>
 * With --lines, each physical frame is preceded by its inline frames,
 * innermost first:
 *   inline I pc=0x.. src=<file:line|-> fn=<name|??>
 * and the physical frame line gains src=<file:line|->. fn is always the
 * last field and runs to the end of the line (C++ names hold spaces);
 * module and src have spaces and '%' escaped as %20 and %25.
 *
 * Exit status: 0 when every thread was stopped, unwound and released (a
 * truncated walk is reported in end=, it is not an error), 1 on an error,
 * 2 on bad usage. Every stopped thread is detached on every path, also
 * when a watchdog alarm or a termination signal cuts the run short. */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stacksnap.h"

#define MAX_THREADS 4096
#define DEFAULT_MAX_FRAMES 65536 /* deep-recursion targets go past 5,000 */
#define MAX_INLINE 64
#define WATCHDOG_SECONDS 60

/* Threads we hold stopped. Written before a thread is seized so that the
 * signal handler, which may run at any moment, releases every one. */
struct held_thread {
	pid_t tid;
	int pending_sig; /* a signal that stopped it instead of our interrupt,
			    given back on detach */
};

static struct held_thread held[MAX_THREADS];
static volatile sig_atomic_t nheld;
static int verbose;

/* Only async-signal-safe calls: this runs from SIGALRM/SIGTERM/SIGINT. */
static void release_all_and_exit(int sig)
{
	static const char msg[] =
		"ss_unwind_pid: interrupted; detached every thread\n";

	for (int i = 0; i < nheld; i++)
		ptrace(PTRACE_DETACH, held[i].tid, NULL,
		       (void *)(long)held[i].pending_sig);
	if (sig == SIGALRM) {
		static const char late[] =
			"ss_unwind_pid: watchdog: no result after 60 s\n";
		(void)!write(STDERR_FILENO, late, sizeof(late) - 1);
	}
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	_exit(1);
}

static void release_all(void)
{
	for (int i = 0; i < nheld; i++) {
		if (ptrace(PTRACE_DETACH, held[i].tid, NULL,
			   (void *)(long)held[i].pending_sig) != 0 &&
		    errno != ESRCH)
			fprintf(stderr, "ss_unwind_pid: detach %d: %s\n",
				held[i].tid, strerror(errno));
	}
	nheld = 0;
}

static int is_held(pid_t tid)
{
	for (int i = 0; i < nheld; i++)
		if (held[i].tid == tid)
			return 1;
	return 0;
}

/* Seizes and interrupts one thread and waits until it is stopped. Returns
 * 0, 1 when the thread is gone (it exited meanwhile: not an error), or -1. */
static int stop_thread(pid_t pid, pid_t tid)
{
	int status;
	struct held_thread *h;

	if (nheld >= MAX_THREADS) {
		fprintf(stderr, "ss_unwind_pid: pid %d: more than %d threads\n",
			pid, MAX_THREADS);
		return -1;
	}
	h = &held[nheld];
	h->tid = tid;
	h->pending_sig = 0;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
		if (errno == ESRCH)
			return 1;
		fprintf(stderr,
			"ss_unwind_pid: pid %d thread %d: ptrace seize: %s%s\n",
			pid, tid, strerror(errno),
			errno == EPERM ? " (run as root, or set "
					 "kernel.yama.ptrace_scope=0)"
				       : "");
		return -1;
	}
	nheld++;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0) {
		fprintf(stderr, "ss_unwind_pid: thread %d: interrupt: %s\n",
			tid, strerror(errno));
		return -1;
	}
	for (;;) {
		if (waitpid(tid, &status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "ss_unwind_pid: thread %d: wait: %s\n",
				tid, strerror(errno));
			return -1;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			nheld--; /* nothing left to detach */
			return 1;
		}
		if (!WIFSTOPPED(status))
			continue;
		/* A signal-delivery stop came first: the thread is stopped
		 * all the same; the signal goes back to it on detach. */
		if ((status >> 16) == 0 && WSTOPSIG(status) != SIGTRAP)
			h->pending_sig = WSTOPSIG(status);
		return 0;
	}
}

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Lists /proc/PID/task into tids (sorted); returns the count or -1. */
static int list_threads(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "ss_unwind_pid: pid %d: %s: %s\n", pid, path,
			strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) && n < max) {
		char *end;
		long t = strtol(e->d_name, &end, 10);

		if (*end == '\0' && t > 0)
			tids[n++] = (pid_t)t;
	}
	closedir(d);
	qsort(tids, (size_t)n, sizeof(*tids), cmp_tid);
	return n;
}

/* Stops all threads; threads created while we seize are caught by going
 * round again until a listing shows no thread we do not hold. */
static int stop_all_threads(pid_t pid)
{
	static pid_t tids[MAX_THREADS];

	for (int round = 0; round < 100; round++) {
		int n = list_threads(pid, tids, MAX_THREADS), fresh = 0;

		if (n < 0)
			return -1;
		for (int i = 0; i < n; i++) {
			if (is_held(tids[i]))
				continue;
			fresh++;
			if (stop_thread(pid, tids[i]) < 0)
				return -1;
		}
		if (!fresh)
			return 0;
	}
	fprintf(stderr, "ss_unwind_pid: pid %d: threads keep appearing\n", pid);
	return -1;
}

static void print_escaped(const char *s)
{
	if (!s || !*s) {
		fputc('-', stdout);
		return;
	}
	for (; *s; s++) {
		if (*s == ' ')
			fputs("%20", stdout);
		else if (*s == '%')
			fputs("%25", stdout);
		else if (*s == '\n')
			fputs("%0A", stdout);
		else
			fputc(*s, stdout);
	}
}

static void print_src(const struct stacksnap_sym *s)
{
	fputs(" src=", stdout);
	if (!s->file) {
		fputc('-', stdout);
		return;
	}
	print_escaped(s->file);
	printf(":%d", s->line);
}

static void log_to_stderr(enum stacksnap_log_level level, const char *msg,
			  void *user)
{
	static const char *const names[] = { "error", "warn", "info",
					     "debug" };

	fprintf(stderr, "ss_unwind_pid: libstacksnap %s: %s\n",
		(unsigned)level < 4 ? names[level] : "?", msg);
}

static int read_regs(pid_t tid, struct stacksnap_regs *regs)
{
	struct user_regs_struct u;
	struct iovec iov = { &u, sizeof(u) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) != 0) {
		fprintf(stderr, "ss_unwind_pid: thread %d: get registers: %s\n",
			tid, strerror(errno));
		return -1;
	}
	stacksnap_regs__from_user_regs(regs, &u);
	return 0;
}

/* Unwinds and prints one stopped thread. */
static int dump_thread(struct stacksnap_unwinder *uw,
		       struct stacksnap_addrspace *as, struct stacksnap_mem *mem,
		       pid_t tid, struct stacksnap_frame *frames,
		       size_t max_frames, unsigned sym_flags)
{
	struct stacksnap_regs regs;
	struct stacksnap_sym syms[MAX_INLINE];
	enum stacksnap_end end = STACKSNAP_END_NONE;
	int n;

	if (read_regs(tid, &regs) != 0)
		return -1;
	n = stacksnap_unwind(uw, as, &regs, mem, frames, max_frames, &end);
	if (n < 0) {
		fprintf(stderr, "ss_unwind_pid: thread %d: unwind: %s\n", tid,
			strerror(-n));
		return -1;
	}
	printf("thread %d frames=%d end=%s\n", tid, n, stacksnap_end__str(end));
	for (int i = 0; i < n; i++) {
		const struct stacksnap_frame *f = &frames[i];
		/* Caller frames hold return addresses: the call is at pc - 1.
		 * A frame a signal interrupted holds the exact pc. So does the
		 * frame above it, the signal trampoline: the handler returns
		 * to the trampoline's first instruction, no call precedes it,
		 * and pc - 1 would fall before __restore_rt. */
		bool is_return = i > 0 && !(f->flags & STACKSNAP_FRAME_SIGNAL) &&
				 !(i + 1 < n && (frames[i + 1].flags &
						 STACKSNAP_FRAME_SIGNAL));
		int ns = stacksnap_addrspace__symbolize(as, f->pc, is_return,
							sym_flags, syms,
							MAX_INLINE);
		const struct stacksnap_sym *outer;

		if (ns < 0) {
			fprintf(stderr,
				"ss_unwind_pid: thread %d frame %d pc %#llx: "
				"symbolize: %s\n",
				tid, i, (unsigned long long)f->pc,
				strerror(-ns));
			return -1;
		}
		for (int k = 0; k + 1 < ns; k++) {
			printf("inline %d pc=%#llx", i,
			       (unsigned long long)f->pc);
			print_src(&syms[k]);
			printf(" fn=%s\n",
			       syms[k].function ? syms[k].function : "??");
		}
		outer = ns > 0 ? &syms[ns - 1] : NULL;
		printf("frame %d pc=%#llx sp=%#llx stepper=%s trust=%s flags=%s",
		       i, (unsigned long long)f->pc, (unsigned long long)f->sp,
		       stacksnap_stepper__str(f->stepper),
		       stacksnap_trust__str(f->trust),
		       (f->flags & STACKSNAP_FRAME_SIGNAL) ? "signal" : "-");
		printf(" off=%#llx modoff=%#llx module=",
		       outer ? (unsigned long long)outer->offset : 0ULL,
		       outer ? (unsigned long long)outer->module_offset : 0ULL);
		print_escaped(outer ? outer->module : NULL);
		if (sym_flags & STACKSNAP_SYM_LINES) {
			if (outer)
				print_src(outer);
			else
				fputs(" src=-", stdout);
		}
		printf(" fn=%s\n",
		       outer && outer->function ? outer->function : "??");
	}
	return 0;
}

static void usage(FILE *to)
{
	fputs("usage: ss_unwind_pid [--lines] [--max-frames N] [-v] PID "
	      "[TID...]\n"
	      "  stops every thread of PID (or only the TIDs given), unwinds\n"
	      "  and symbolizes each, prints the frames, and lets them go.\n",
	      to);
}

int main(int argc, char **argv)
{
	unsigned sym_flags = 0;
	size_t max_frames = DEFAULT_MAX_FRAMES;
	pid_t pid = 0, only[MAX_THREADS];
	int nonly = 0, rc = 1, i;
	struct stacksnap_ctx *ctx = NULL;
	struct stacksnap_addrspace *as = NULL;
	struct stacksnap_mem *mem = NULL;
	struct stacksnap_unwinder *uw = NULL;
	struct stacksnap_frame *frames = NULL;
	struct sigaction sa;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--lines") == 0) {
			sym_flags |= STACKSNAP_SYM_LINES;
		} else if (strcmp(argv[i], "--max-frames") == 0 && i + 1 < argc) {
			char *end;

			max_frames = strtoul(argv[++i], &end, 10);
			if (*end || max_frames == 0 || max_frames > 1u << 22) {
				fprintf(stderr, "ss_unwind_pid: bad --max-frames "
						"%s\n", argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "-v") == 0) {
			verbose = 1;
		} else if (strcmp(argv[i], "-h") == 0 ||
			   strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	for (int first = i; i < argc; i++) {
		char *end;
		long v = strtol(argv[i], &end, 10);

		if (*end || v <= 0 || nonly >= MAX_THREADS) {
			fprintf(stderr, "ss_unwind_pid: bad pid/tid '%s'\n",
				argv[i]);
			return 2;
		}
		if (i == first)
			pid = (pid_t)v;
		else
			only[nonly++] = (pid_t)v;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = release_all_and_exit;
	sigfillset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	alarm(WATCHDOG_SECONDS);

	{
		STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = log_to_stderr,
			       .log_level = verbose ? STACKSNAP_LOG_DEBUG
						    : STACKSNAP_LOG_WARN);
		ctx = stacksnap_ctx__new(&copts);
	}
	if (!ctx) {
		fprintf(stderr, "ss_unwind_pid: context: %s\n",
			strerror(errno));
		goto out;
	}
	{
		STACKSNAP_OPTS(stacksnap_unwind_opts, uopts,
			       .max_frames = (unsigned)max_frames);
		uw = stacksnap_unwinder__new(&uopts);
	}
	frames = calloc(max_frames, sizeof(*frames));
	if (!uw || !frames) {
		fprintf(stderr, "ss_unwind_pid: unwinder: %s\n",
			strerror(errno ? errno : ENOMEM));
		goto out;
	}

	if (nonly) {
		qsort(only, (size_t)nonly, sizeof(*only), cmp_tid);
		for (int k = 0; k < nonly; k++)
			if (stop_thread(pid, only[k]) != 0) {
				fprintf(stderr, "ss_unwind_pid: pid %d: thread "
						"%d could not be stopped\n",
					pid, only[k]);
				goto out;
			}
	} else if (stop_all_threads(pid) != 0) {
		goto out;
	}
	if (nheld == 0) {
		fprintf(stderr, "ss_unwind_pid: pid %d: no such process\n",
			pid);
		goto out;
	}

	/* The maps are read after every thread is stopped, so the modules
	 * the stacks point into are the ones mapped now. */
	as = stacksnap_addrspace__from_pid(ctx, pid);
	if (!as) {
		fprintf(stderr, "ss_unwind_pid: pid %d: address space: %s\n",
			pid, strerror(errno));
		goto out;
	}
	mem = stacksnap_mem__new_pid(pid);
	if (!mem) {
		fprintf(stderr, "ss_unwind_pid: pid %d: memory source: %s\n",
			pid, strerror(errno));
		goto out;
	}
	{
		/* held[] is in seizing order; print in tid order. */
		static pid_t order[MAX_THREADS];
		int n = nheld;

		for (int k = 0; k < n; k++)
			order[k] = held[k].tid;
		qsort(order, (size_t)n, sizeof(*order), cmp_tid);
		for (int k = 0; k < n; k++)
			if (dump_thread(uw, as, mem, order[k], frames,
					max_frames, sym_flags) != 0)
				goto out;
	}
	rc = 0;
out:
	fflush(stdout);
	release_all();
	alarm(0);
	free(frames);
	stacksnap_unwinder__free(uw);
	stacksnap_mem__free(mem);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	return rc;
}
