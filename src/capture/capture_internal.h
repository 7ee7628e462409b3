/* capture_internal.h - the state of a live capture (struct
 * stacksnap_snapshot, one entry per thread) and the steps the files of
 * src/capture/ share: the /proc task scan (task_scan.c), the ptrace
 * freeze (freeze.c), the stack copy (stack_copy.c), the non-stop reads
 * and their settling (nonstop_settle.c); snapshot.c runs them in order. */
#ifndef SS_CAPTURE_INTERNAL_H
#define SS_CAPTURE_INTERNAL_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/sched_fifo.h"
#include "base/log.h"
#include "bpf/nonstop.h"
#include "stacksnap.h"

#define PREFAULT_PER_THREAD (64u << 10) /* typical stack in use, rounded up */
#define PREFAULT_MAX (16u << 20)

/* A writable mapping, to clamp stack copies to the stack they are on.
 * A capture's list is sorted by start (found by a binary search: every
 * thread's stack is a mapping, so a linear one was O(threads) a thread,
 * inside the freeze). */
struct rw_map {
	uint64_t start, end;
};

/* Per-thread capture state. Invariant: seized implies the thread must be
 * detached before the capture returns (or, with hold, before release). */
struct cap_thread {
	struct stacksnap_thread pub;
	bool seized, interrupted, stopped;
	bool have_regs;		/* registers read (as soon as it stopped) */
	uint64_t fs_base;	/* its thread pointer (0: unknown) */
	int pending_sig;	/* a signal whose delivery-stop we took for our
				   interrupt: given back on detach */
	bool status_unread;	/* found stopped by reading its registers: its
				   wait status (pending_sig) is taken at its
				   detach */
	uint64_t copy_start, copy_len;
	bool below_tp;		/* the copy reaches up to its thread pointer
				   (main thread: up to the stack's start):
				   every frame of its own stack is in it, and
				   an alternate stack need not be looked for */
	/* pub.nonstop: read by the iterator, never seized; w is the witness
	 * of that read, which every later check must find unchanged. */
	struct nonstop_witness w;
	uint64_t want_len;	/* bytes the clamp allows beyond one BPF copy */
	uint64_t stack_top;	/* read non-stop: where its stack ends */
	unsigned moves;		/* iterator runs that found it running or
				   having run since its read */
	bool seen;		/* in the current check's records */
};

struct stacksnap_snapshot {
	pid_t pid;
	pid_t mm_pid;	      /* whose maps and memory are read: pid, or a
				 live thread when the main one has exited */
	struct cap_thread *threads;
	size_t n, cap;
	size_t *by_tid;	      /* indices of threads[0, nindexed) by tid */
	size_t nindexed;
	int task_fd;	      /* /proc/PID/task, open from the first scan */
	uint8_t *dents;	      /* its getdents64 buffer, DENTS_SIZE bytes */
	uint8_t *stack_bytes; /* one buffer for the threads' copies */
	size_t stack_cap;     /* bytes of stack_bytes already faulted in */
	size_t stack_off;     /* bytes of stack_bytes given to copies */
	/* Set during the freeze: the writable mappings and options that a
	 * copy needs, so wait_stops() can copy the stacks of threads that
	 * stopped while the others are still on their way (copy_early). */
	struct rw_map *maps;  /* owned; freed by the capture */
	size_t nmaps;
	bool maps_borrowed;   /* from opts.addrspace: reread once if short */
	uint64_t start_stack; /* near the top of the main thread's stack (0:
				 unknown): a main thread whose copy holds it
				 is on its own stack */
	const struct stacksnap_snapshot_opts *copy_opts;
	bool copy_early;
	bool copied_any;      /* the last copy_stacks() copied something */
	bool held;	      /* threads stopped until __release() */
	unsigned stop_timeout_ms;
	uint64_t freeze_start, t_copied; /* for the stats of a release */
	struct stacksnap_snapshot_stats stats;
	/* Non-stop path: the iterator (its mapped buffer holds the copies of
	 * threads read non-stop, so it lives as long as the snapshot) and
	 * buffers of later copy rounds and of stacks completed after the
	 * thaw. */
	struct nonstop *ns;
	uint8_t **extra;
	size_t nextra, extra_cap;
	struct stacksnap_nonstop_stats ns_stats;
	char ns_reason[192];
	/* The calling thread's scheduling before the freeze window, while it
	 * runs SCHED_FIFO (realtime.on); restored when the window closes. */
	struct sched_fifo realtime;
	/* settle() ended with a clean run: every thread was read non-stop
	 * and none ran until that run; no freeze and no check are needed
	 * unless the freeze's rescan finds a new thread. */
	bool settled;
	uint64_t run_ns_min;  /* the shortest settle run */
	struct stacksnap_goroutines *go; /* a Go program's goroutines (goroutines.c) */
	/* A language runtime found in the target (runtime_capture.c), or
	 * NULL: its frame chains are copied in every freeze round. */
	struct snap_runtime *runtime;
};

/* task_scan.c: /proc/PID/task and the thread table. */

/* Says why pid cannot be captured (logged), or 0. */
int capture_check_target(pid_t pid, const struct log_sink *log);
/* Whether a thread is gone or on its way out (EPERM from PTRACE_SEIZE). */
bool capture_thread_exiting(pid_t pid, pid_t tid);
/* TracerPid of a thread, 0 when untraced, -1 when unknown. */
long capture_tracer_pid(pid_t pid, pid_t tid);
/* Whether opts ask for thread tid (all threads without a tid list). */
bool capture__wanted(const struct stacksnap_snapshot_opts *o, pid_t tid);
void capture__index_threads(struct stacksnap_snapshot *s);
struct cap_thread *capture__find_thread(struct stacksnap_snapshot *s, pid_t tid);
struct cap_thread *capture__add_thread(struct stacksnap_snapshot *s, pid_t tid);
int capture__scan_tasks(struct stacksnap_snapshot *s,
			const struct stacksnap_snapshot_opts *o);
/* Bytes copied at most per stack by default: the target's RLIMIT_STACK,
 * at most CAPTURE_MAX_STACK (what a snapshot file's reader accepts). */
#define CAPTURE_MAX_STACK (64u << 20)
uint64_t capture_stack_limit(pid_t pid);
uint64_t capture_start_stack(pid_t pid);

/* freeze.c: ptrace seize, interrupt, stops, registers, detach. */
void capture__realtime_enter(struct stacksnap_snapshot *s);
int capture__freeze_rest(struct stacksnap_snapshot *s,
			 const struct stacksnap_snapshot_opts *o,
			 uint64_t deadline, bool rescan,
			 const struct log_sink *log);
/* Reads the registers of every stopped thread not read yet. */
void capture__read_regs(struct stacksnap_snapshot *s);
void capture__detach_late(struct stacksnap_snapshot *s);
void capture__thaw(struct stacksnap_snapshot *s);

/* stack_copy.c: the writable mappings and the copies of stopped threads. */
int capture__rw_maps_of(struct stacksnap_snapshot *s,
			const struct stacksnap_snapshot_opts *o,
			struct rw_map **out, size_t *nout);
int capture__copy_stacks(struct stacksnap_snapshot *s);
int capture__copy_more(struct stacksnap_snapshot *s,
		       const struct stacksnap_snapshot_opts *o, struct cap_thread *t);
void capture_prefault_kernel(uint8_t *buf, size_t len);

/* goroutines.c: a Go program's goroutine list. Before the freeze: opens
 * the program's runtime (nothing when it is not Go); during it: reads
 * the list and unwinds every goroutine. Failures are logged, never fatal
 * to the capture. */
void capture__go_prepare(struct stacksnap_snapshot *s, struct stacksnap_ctx *ctx);
void capture__go_read(struct stacksnap_snapshot *s, const struct log_sink *log);
/* The goroutines' wait objects, read once the threads run again (a list
 * read with every thread stopped; nothing otherwise). */
void capture__go_after_thaw(struct stacksnap_snapshot *s);
void capture__go_free(struct stacksnap_snapshot *s);
/* During the freeze, a Go program's thread t (registers read): the top
 * (g.stack.hi) of the runtime's own bounds of the stack its sp is on (its
 * goroutine's, or its system stack g0's, or its signal stack's), checked
 * to be a g of this thread (g.m's procid); 0 unknown. The stack copy
 * stops there rather than at the end of the heap mapping holding it. */
uint64_t capture__go_stack_top(const struct stacksnap_snapshot *s,
			       const struct cap_thread *t);

/* nonstop_settle.c: threads read by the BPF task iterator without a stop. */
void capture__start_nonstop(struct stacksnap_snapshot *s,
			    const struct stacksnap_snapshot_opts *o,
			    const struct log_sink *log);
int capture__check_witnesses(struct stacksnap_snapshot *s,
			     const struct stacksnap_snapshot_opts *o);
bool capture__resettle(struct stacksnap_snapshot *s,
		       const struct stacksnap_snapshot_opts *o,
		       const struct log_sink *log);
void capture__demote(struct stacksnap_snapshot *s, struct cap_thread *t,
		     bool ran);
void capture__demote_all(struct stacksnap_snapshot *s);

/* runtime_capture.c: a language runtime's frame chains. */
/* Before the freeze: finds an interpreter (unless opts say no_runtime). */
void capture__runtime_detect(struct stacksnap_snapshot *s,
			     const struct stacksnap_snapshot_opts *o,
			     const struct log_sink *log);
/* In the freeze, after a round's registers and stacks: copies the frame
 * chains (the last round's copy is kept). */
void capture__runtime_take(struct stacksnap_snapshot *s);
void capture__runtime_free(struct stacksnap_snapshot *s);

/* A runtime whose frames are named from native frames after the walk (a
 * HotSpot JVM, V8): one table of operations per runtime, so that the
 * dump, --save, watch (walker), profile and trace (stacksnap_vm__*)
 * drive any of them alike (named_runtime.c). rt is the runtime's own
 * state, from detect. */
struct stacksnap_addrspace;
struct stacksnap_runtime_step;
#define NAMED_FORGET_FRAMES 0x1	/* the frames named (before naming anew) */
#define NAMED_FORGET_WALKS 0x2	/* what the steppers remembered of walks */
#define NAMED_FORGET_CODE 0x4	/* cached code ranges (the JIT adds code) */
#define NAMED_FORGET_ALL 0x7
struct named_runtime_ops {
	enum stacksnap_runtime kind;
	/* NULL: no such runtime in pid, or one that cannot be read (logged
	   once). as may be NULL (then /proc/PID/maps is read). */
	void *(*detect)(pid_t pid, const struct stacksnap_addrspace *as,
			const struct log_sink *log);
	void (*free)(void *rt);
	const char *(*description)(const void *rt);
	/* Whether its frames are named (false: a runtime found whose layout
	   is unknown, its description says so); NULL op: true. */
	bool (*has_frames)(const void *rt);
	/* In the freeze (NULL: nothing to read there). */
	void (*take)(void *rt);
	/* Registers its steppers with uw: 1, 0 (none) or -errno; NULL:
	   the runtime's frames need none (they keep frame pointers). */
	int (*steppers)(void *rt, struct stacksnap_unwinder *uw);
	/* The runtime frames of thread i (of nthreads) of one walk, each
	   replacing the native frame native_index names; stack (may be
	   NULL) reads the walk's stack copy, for frame slots that live
	   memory may have changed since. Named once per (i, nnative) until
	   forgotten; at most max into out; returns their count or -errno. */
	int (*frames)(void *rt, size_t nthreads, size_t i, struct stacksnap_mem *stack,
		      const struct stacksnap_frame *native, size_t nnative,
		      struct stacksnap_runtime_frame *out, size_t max);
	/* NAMED_FORGET_* bits. */
	void (*forget)(void *rt, unsigned what);
	/* Thread tid's runtime name, or NULL (NULL op: none). A JVM's are
	   all read at the first call, after the thaw, and again (once per
	   capture after a forget) when a thread the last read did not see
	   is asked for; each lives as long as rt, or until such a read. */
	const char *(*thread_name)(void *rt, pid_t tid);
	/* The steps its steppers took since they were last forgotten (for
	   --save, and stacksnap_vm__steps), in the order taken, duplicates
	   possible; NULL op: none. */
	size_t (*steps)(const void *rt, const struct stacksnap_runtime_step **steps);
	/* Whether its steppers step (on at detect): an unwinder shared with
	   walks of other processes turns them off for those, as their pcs
	   mean nothing in this runtime's code; NULL op: no steppers. */
	void (*enable)(void *rt, bool on);
};

/* Invariant: ops and rt both set (found) or both NULL. */
struct named_runtime {
	const struct named_runtime_ops *ops;
	void *rt;
};

extern const struct named_runtime_ops capture__java_ops, capture__v8_ops,
	capture__php_ops;

/* Looks for ops' runtime in pid: true (nr set) or false (nr cleared). */
bool capture__named_detect(struct named_runtime *nr,
			   const struct named_runtime_ops *ops, pid_t pid,
			   const struct stacksnap_addrspace *as,
			   const struct log_sink *log);
void capture__named_free(struct named_runtime *nr);
/* Every op of the table through nr, for runtimes found or not (0, NULL). */
int capture__named_steppers(struct named_runtime *nr, struct stacksnap_unwinder *uw);
int capture__named_frames(struct named_runtime *nr, size_t nthreads, size_t i,
			  struct stacksnap_mem *stack,
			  const struct stacksnap_frame *native, size_t nnative,
			  struct stacksnap_runtime_frame *out, size_t max);
void capture__named_forget(struct named_runtime *nr, unsigned what);

#endif
