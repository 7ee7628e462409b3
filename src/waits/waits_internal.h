/* waits_internal.h - what the sources of wait facts share: the thread as
 * they see it, the table of operations each source fills, and the graph's
 * storage. The driver (waits.c) and the cycle search (graph.c) know no
 * source; a source (futex locks, fds, children, file locks, sleeps) knows
 * only this header. */
#ifndef SS_WAITS_INTERNAL_H
#define SS_WAITS_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stacksnap.h"
#include "base/log.h"

/* How many innermost frames are named to classify a wait: a lock's wait
 * is a few libc frames deep; anything deeper is the program's. */
#define WAIT_FRAMES 16

/* A few system call numbers of x86_64 the sources and the driver share. */
enum {
	NR_READ = 0, NR_WRITE = 1, NR_POLL = 7, NR_PREAD64 = 17, NR_READV = 19,
	NR_WRITEV = 20, NR_SELECT = 23, NR_PAUSE = 34, NR_NANOSLEEP = 35, NR_CONNECT = 42,
	NR_ACCEPT = 43, NR_SENDTO = 44, NR_RECVFROM = 45, NR_SENDMSG = 46,
	NR_RECVMSG = 47, NR_WAIT4 = 61, NR_FCNTL = 72, NR_FLOCK = 73,
	NR_FUTEX = 202, NR_RESTART_SYSCALL = 219, NR_CLOCK_NANOSLEEP = 230,
	NR_EPOLL_WAIT = 232, NR_RT_SIGSUSPEND = 130, NR_RT_SIGTIMEDWAIT = 128, NR_WAITID = 247, NR_PSELECT6 = 270, NR_PPOLL = 271,
	NR_EPOLL_PWAIT = 281, NR_ACCEPT4 = 288, NR_RECVMMSG = 299,
	NR_EPOLL_PWAIT2 = 441, NR_FUTEX_WAITV = 449,
};

/* One thread as the sources see it. Invariant: fn[i] and mod[i] name the
 * frames [0, nfn) (NULL where unknown); args are the system call's
 * arguments as captured (rdi, rsi, rdx, r10, r8, r9). */
struct wait_thread {
	const struct stacksnap_thread *th;
	const struct stacksnap_frame *frames;
	size_t nframes;
	const char *fn[WAIT_FRAMES];	/* function names, innermost first */
	const char *mod[WAIT_FRAMES];	/* their modules' paths */
	size_t nfn;
	long nr;		/* system call; -1 none or not known */
	bool nr_guessed;	/* nr inferred from the frames, not read */
	uint64_t args[6];
	struct stacksnap_wait pub;
	size_t owners_cap;
	struct stacksnap_wait_owner *owners;
};

struct stacksnap_waits;

/* One source of facts. classify claims a thread from what the capture
 * holds (system call, arguments, frames): true when the wait is its kind,
 * with pub.kind, object, fd... set; owners then names the holders, read
 * now (after the thaw) from the process or the memory source. owners may
 * be NULL (a kind with no holder). */
struct wait_source_ops {
	const char *name;
	bool lock;	/* a lock's source: asked with opts.locks_only too */
	bool (*classify)(struct stacksnap_waits *w, struct wait_thread *t);
	int (*owners)(struct stacksnap_waits *w, struct wait_thread *t);
	/* Once every thread is classified and its holders named: what the
	 * source adds to threads whatever they wait for (a Java thread's
	 * monitors held). 0 or -ENOMEM. May be NULL. */
	int (*after)(struct stacksnap_waits *w);
	/* Frees what the source kept in w (may be NULL). */
	void (*free)(struct stacksnap_waits *w);
};

extern const struct wait_source_ops wait_java_ops;	/* wait_java.c */
extern const struct wait_source_ops wait_python_ops;	/* wait_python.c */
extern const struct wait_source_ops wait_futex_ops;	/* wait_futex.c */
extern const struct wait_source_ops wait_fds_ops;	/* wait_fds.c */
extern const struct wait_source_ops wait_child_ops;	/* wait_child.c */
extern const struct wait_source_ops wait_flock_ops;	/* wait_flock.c */
extern const struct wait_source_ops wait_sleep_ops;	/* wait_sleep.c */

/* The graph of one process. Invariant: threads[0, n) in the order added;
 * every string any pub points at is in strs. */
struct stacksnap_waits {
	struct stacksnap_ctx *ctx;
	const struct log_sink *log;
	pid_t pid;
	struct stacksnap_addrspace *as;
	struct stacksnap_mem *mem;
	bool own_mem;
	struct stacksnap_waits_opts o;
	struct wait_thread *threads;
	size_t n, cap;
	char **strs;
	size_t nstrs, strs_cap;
	/* Deadlocks: cycle i is members[start[i], start[i + 1]). */
	struct stacksnap_wait_owner *members;
	size_t *start;
	size_t ncycles;
	/* The file whose data symbols named the last lock (data_symbol.c):
	 * the mapping range it was found in, its image and load bias, kept
	 * for the next lock in the same range. */
	uint64_t ds_lo, ds_hi, ds_bias;
	struct elf_image *ds_img;
	/* Every process's pipe and socket fds, read once for all the waits
	 * on them (wait_fds.c). */
	struct fd_table *fds;
	/* The JVM the process runs, read at the first thread asked about
	 * (wait_java.c); NULL none. */
	struct java_waits *java;
	bool java_tried;
	const char *libc_why;	/* why glibc's layouts are not used, or NULL */
	int libc_checked;	/* 0 not yet, 1 glibc >= 2.25, -1 not */
	/* Kernel symbols for the kernel stacks the non-stop iterator read,
	 * loaded at the first (NULL: none, or not yet if !ksyms_tried). */
	struct stacksnap_kallsyms *ksyms;
	bool ksyms_tried;
};

/* Frees what data_symbol.c keeps. */
void waits__data_symbol_free(struct stacksnap_waits *w);
/* A string kept as long as w (NULL on -ENOMEM). */
const char *waits__strf(struct stacksnap_waits *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Adds a holder to t's wait. 0 or -ENOMEM. */
int waits__add_owner(struct wait_thread *t, pid_t pid, pid_t tid);
/* Names thread tid as the holder of what t waits for: an edge, or why
 * none (a holder that no longer exists). 0 or -ENOMEM. */
int waits__name_owner(struct stacksnap_waits *w, struct wait_thread *t, uint32_t tid);
/* The thread tid of the process, or NULL. */
struct wait_thread *waits__find(struct stacksnap_waits *w, pid_t tid);
/* Reads len bytes at addr of the target (after the thaw). 0 or -errno. */
int waits__read(struct stacksnap_waits *w, uint64_t addr, void *buf, size_t len);
/* Whether thread tid exists: in the saved capture, or now. */
bool waits__thread_exists(struct stacksnap_waits *w, pid_t tid);
/* The process a thread id belongs to (its Tgid), or 0 when there is none. */
pid_t waits__tgid(pid_t tid);
/* A process's name (comm) into buf, "?" when gone. */
const char *waits__comm(pid_t pid, char *buf, size_t size);
/* The symbol of the data at addr ("queue_lock", "table+0x40"), or NULL:
 * the ELF symbol tables of the file mapped there. *start (may be NULL)
 * gets the symbol's start and *size its size. */
const char *waits__data_symbol(struct stacksnap_waits *w, uint64_t addr,
			       uint64_t *start, uint64_t *size);
/* True when some frame i < t->nfn has a function name containing s. */
int waits__frame_has(const struct wait_thread *t, const char *s);

/* graph.c: the cycles of the wait-for graph (edges: each thread to the
 * threads that hold what it waits for) into w->members / w->start. */
int waits_graph__cycles(struct stacksnap_waits *w);

#endif
