/* stacksnap.h - the public API of libstacksnap: unwind x86_64 Linux user stacks
 * from registers plus a way to read stack memory, using DWARF CFI compiled
 * into compact tables, and symbolize the frames.
 *
 * Conventions (the ones libbpf users know):
 *  - opaque objects used through functions named object__verb;
 *  - options structs whose first field is `size_t sz`, set by STACKSNAP_OPTS,
 *    so they can grow without breaking callers built against older headers;
 *  - functions return 0 (or a count) on success and a negative errno on
 *    failure, with errno set too; constructors return NULL and set errno;
 *  - the library never prints: messages go to the log callback of the context.
 */
#ifndef STACKSNAP_H
#define STACKSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STACKSNAP_API __attribute__((visibility("default")))

#define STACKSNAP_VERSION_MAJOR 0
#define STACKSNAP_VERSION_MINOR 1

/* Declares an options struct NAME of type TYPE with sz set and the named
 * fields initialised: STACKSNAP_OPTS(stacksnap_ctx_opts, o, .log = cb); */
#define STACKSNAP_OPTS(TYPE, NAME, ...)                                        \
	struct TYPE NAME = ({                                                  \
		memset(&NAME, 0, sizeof(struct TYPE));                         \
		(struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ };       \
	})

STACKSNAP_API const char *stacksnap_version(void);

/* ------------------------------------------------------------------ */
/* Context: log callback and the caches shared by every address space */

enum stacksnap_log_level {
	STACKSNAP_LOG_ERROR = 0,
	STACKSNAP_LOG_WARN = 1,
	STACKSNAP_LOG_INFO = 2,
	STACKSNAP_LOG_DEBUG = 3,
};

typedef void (*stacksnap_log_fn)(enum stacksnap_log_level level,
				 const char *msg, void *user);

struct stacksnap_ctx_opts {
	size_t sz;
	stacksnap_log_fn log;	   /* NULL: messages are dropped */
	void *log_user;		   /* passed to log */
	enum stacksnap_log_level log_level; /* most verbose level delivered */
	/* Colon-separated roots searched for separate debug files, in order.
	 * NULL: "/usr/lib/debug". */
	const char *debug_dirs;
	/* Root of the target's filesystem view ("/proc/PID/root" style
	 * prefix for module paths). NULL: paths are opened as they are. */
	const char *sysroot;
	/* stacksnap_addrspace__from_pid reads a file deleted since it was
	 * mapped ("(deleted)" in /proc/PID/maps) through /proc/PID/map_files,
	 * the bytes actually mapped; where that is not permitted (it needs
	 * CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), frames there are unknown.
	 * With ignore_deleted (tbstack's --ignore-deleted), the file now at
	 * that path is opened instead, which may be another version (after an
	 * upgrade): a warning says so when its build-id differs. */
	bool ignore_deleted;
	/* A directory where uncompressed copies of compressed separate debug
	 * files are kept, by build-id, and searched first: later contexts
	 * then skip inflating them (libc6-dbg's libc: ~45 ms each time).
	 * Created as needed. NULL: no cache. */
	const char *cache_dir;
	size_t :0;
};

struct stacksnap_ctx;

STACKSNAP_API struct stacksnap_ctx *
stacksnap_ctx__new(const struct stacksnap_ctx_opts *opts);
STACKSNAP_API void stacksnap_ctx__free(struct stacksnap_ctx *ctx);

/* ------------------------------------------------------------------ */
/* Registers */

/* DWARF register numbers of x86_64, used as indexes into regs[]. */
enum stacksnap_reg {
	STACKSNAP_REG_RAX = 0,
	STACKSNAP_REG_RDX = 1,
	STACKSNAP_REG_RCX = 2,
	STACKSNAP_REG_RBX = 3,
	STACKSNAP_REG_RSI = 4,
	STACKSNAP_REG_RDI = 5,
	STACKSNAP_REG_RBP = 6,
	STACKSNAP_REG_RSP = 7,
	STACKSNAP_REG_R8 = 8,
	STACKSNAP_REG_R9 = 9,
	STACKSNAP_REG_R10 = 10,
	STACKSNAP_REG_R11 = 11,
	STACKSNAP_REG_R12 = 12,
	STACKSNAP_REG_R13 = 13,
	STACKSNAP_REG_R14 = 14,
	STACKSNAP_REG_R15 = 15,
	STACKSNAP_REG_RIP = 16,
	STACKSNAP_REG_COUNT = 17,
};

/* A register set. valid has bit (1 << reg) set for every known register;
 * rip and rsp must be valid to start a walk. */
struct stacksnap_regs {
	uint64_t regs[STACKSNAP_REG_COUNT];
	uint32_t valid;
};

struct user_regs_struct;
/* Fills regs from the kernel's ptrace register layout (all valid). */
STACKSNAP_API void stacksnap_regs__from_user_regs(struct stacksnap_regs *regs,
						  const struct user_regs_struct *u);
/* Fills regs from perf's PERF_SAMPLE_REGS_USER layout: mask is the
 * sample_regs_user bitmask of the perf_event_attr, vals the values in
 * ascending bit order, as many as mask has bits set. */
STACKSNAP_API void stacksnap_regs__from_perf(struct stacksnap_regs *regs,
					     uint64_t mask,
					     const uint64_t *vals);

/* ------------------------------------------------------------------ */
/* Memory sources: how the unwinder reads the target's stack */

struct stacksnap_mem;

/* Reads len bytes at addr into buf; returns 0, or a negative errno
 * (-EFAULT for unmapped or outside the available bytes). */
typedef int (*stacksnap_read_fn)(void *user, uint64_t addr, void *buf,
				 size_t len);

/* A copied range of stack bytes starting at address base. Reads outside
 * it fail with -EFAULT. The bytes are not copied: they must outlive the
 * source (or the next stacksnap_mem__set_copy()). */
STACKSNAP_API struct stacksnap_mem *
stacksnap_mem__new_copy(const void *bytes, size_t len, uint64_t base);
/* Points an existing copy source at new bytes, without allocating. */
STACKSNAP_API int stacksnap_mem__set_copy(struct stacksnap_mem *mem,
					  const void *bytes, size_t len,
					  uint64_t base);
/* Live memory of another process (process_vm_readv). */
STACKSNAP_API struct stacksnap_mem *stacksnap_mem__new_pid(pid_t pid);
/* Memory of the calling process (for in-process use). */
STACKSNAP_API struct stacksnap_mem *stacksnap_mem__new_self(void);
/* Any other source, through a read callback. */
STACKSNAP_API struct stacksnap_mem *
stacksnap_mem__new_callback(stacksnap_read_fn read, void *user);
/* A copy first, then a fallback source for reads outside it (e.g. a
 * snapshot of the stack backed by live memory for everything else).
 * fallback is not owned. */
STACKSNAP_API int stacksnap_mem__set_fallback(struct stacksnap_mem *mem,
					      struct stacksnap_mem *fallback);
STACKSNAP_API int stacksnap_mem__read(struct stacksnap_mem *mem, uint64_t addr,
				      void *buf, size_t len);
STACKSNAP_API void stacksnap_mem__free(struct stacksnap_mem *mem);

/* ------------------------------------------------------------------ */
/* Address spaces: mappings -> modules -> unwind tables and symbols */

struct stacksnap_addrspace;

/* One mapping as the caller knows it (from perf MMAP2 records, an eBPF
 * map, or its own reading of /proc/PID/maps). */
struct stacksnap_mapping {
	size_t sz;
	uint64_t start;		/* first address */
	uint64_t end;		/* one past the last address */
	uint64_t offset;	/* file offset of start */
	const char *path;	/* backing file; NULL or "[anon]" for none */
	const uint8_t *build_id; /* NULL when unknown */
	size_t build_id_len;
	uint32_t prot;		/* PROT_* bits; 0 means PROT_READ|PROT_EXEC */
	uint64_t inode;		/* 0 when unknown */
	uint64_t dev;		/* 0 when unknown */
	size_t :0;
};

/* Address space of a live process, from /proc/PID/maps. The vDSO image is
 * read from the process's memory. */
STACKSNAP_API struct stacksnap_addrspace *
stacksnap_addrspace__from_pid(struct stacksnap_ctx *ctx, pid_t pid);
/* An empty address space the caller fills with add_mapping(). */
STACKSNAP_API struct stacksnap_addrspace *
stacksnap_addrspace__new(struct stacksnap_ctx *ctx);
STACKSNAP_API int
stacksnap_addrspace__add_mapping(struct stacksnap_addrspace *as,
				 const struct stacksnap_mapping *map);
/* Forgets mappings overlapping [start, end) (munmap). */
STACKSNAP_API int stacksnap_addrspace__remove_range(struct stacksnap_addrspace *as,
						    uint64_t start, uint64_t end);
/* Re-reads /proc/PID/maps of a pid address space, keeping modules that
 * did not change. */
STACKSNAP_API int stacksnap_addrspace__refresh(struct stacksnap_addrspace *as);
STACKSNAP_API void stacksnap_addrspace__free(struct stacksnap_addrspace *as);

/* ------------------------------------------------------------------ */
/* Unwinding */

/* Which stepper produced a frame. */
enum stacksnap_stepper {
	STACKSNAP_STEP_START = 0,   /* frame 0: the registers given */
	STACKSNAP_STEP_TABLE,	    /* compiled CFI table */
	STACKSNAP_STEP_DWARF,	    /* DWARF evaluated for this one address */
	STACKSNAP_STEP_PLT,	    /* PLT entry rule */
	STACKSNAP_STEP_SIGNAL,	    /* registers from a signal frame */
	STACKSNAP_STEP_FP,	    /* frame pointer chain */
	STACKSNAP_STEP_SCAN,	    /* stack scan (a guess) */
};

enum stacksnap_trust {
	STACKSNAP_TRUST_CONTEXT = 0, /* registers as captured */
	STACKSNAP_TRUST_CFI,	     /* from unwind information */
	STACKSNAP_TRUST_FP,	     /* from the frame pointer chain */
	STACKSNAP_TRUST_SCAN,	     /* found by scanning: low trust */
};

/* Why a walk ended. */
enum stacksnap_end {
	STACKSNAP_END_NONE = 0,	     /* not ended yet */
	STACKSNAP_END_COMPLETE,	     /* reached the bottom of the stack */
	STACKSNAP_END_NO_MODULE,     /* pc is not in any known mapping */
	STACKSNAP_END_NO_CFI,	     /* no unwind information and no fallback */
	STACKSNAP_END_BAD_MEMORY,    /* a read of the stack failed */
	STACKSNAP_END_STACK_COPY,    /* read outside the copied stack */
	STACKSNAP_END_FRAME_LIMIT,   /* max_frames reached */
	STACKSNAP_END_LOOP,	     /* the stack pointer did not move up */
	STACKSNAP_END_BAD_CFI,	     /* unwind information could not be used */
	STACKSNAP_END_BAD_PC,	     /* return address is not code */
	STACKSNAP_END_NO_MEMORY,     /* out of memory */
};

STACKSNAP_API const char *stacksnap_end__str(enum stacksnap_end end);
STACKSNAP_API const char *stacksnap_stepper__str(enum stacksnap_stepper s);
STACKSNAP_API const char *stacksnap_trust__str(enum stacksnap_trust t);

#define STACKSNAP_FRAME_SIGNAL 0x1    /* this frame was interrupted by a
					 signal: its pc is exact, not a
					 return address */
#define STACKSNAP_FRAME_SIGRETURN 0x2 /* this frame is the signal trampoline
					 (gdb's <signal handler called>) */

struct stacksnap_frame {
	uint64_t pc;	/* instruction pointer (a return address after frame 0) */
	uint64_t sp;	/* stack pointer of this frame */
	uint64_t cfa;	/* canonical frame address (0 when not computed) */
	uint8_t stepper; /* enum stacksnap_stepper that produced this frame */
	uint8_t trust;	/* enum stacksnap_trust */
	uint8_t flags;	/* STACKSNAP_FRAME_* */
};

struct stacksnap_unwind_opts {
	size_t sz;
	unsigned max_frames;	/* 0: 1024 */
	bool stack_scan;	/* try stack scanning when nothing else works */
	bool no_frame_pointer;	/* disable the frame-pointer stepper */
	size_t :0;
};

/* A reusable unwinder: allocate once, walk many stacks; walking does not
 * allocate once the modules it meets have their tables compiled. */
struct stacksnap_unwinder;

STACKSNAP_API struct stacksnap_unwinder *
stacksnap_unwinder__new(const struct stacksnap_unwind_opts *opts);
STACKSNAP_API void stacksnap_unwinder__free(struct stacksnap_unwinder *uw);

/* Begins a walk from regs, reading memory through mem. */
STACKSNAP_API int stacksnap_unwinder__start(struct stacksnap_unwinder *uw,
					    struct stacksnap_addrspace *as,
					    const struct stacksnap_regs *regs,
					    struct stacksnap_mem *mem);
/* Produces the next frame (the first call gives frame 0). Returns 1 with
 * *frame filled, 0 when the walk has ended (see end()), or -errno. */
STACKSNAP_API int stacksnap_unwinder__next(struct stacksnap_unwinder *uw,
					   struct stacksnap_frame *frame);
STACKSNAP_API enum stacksnap_end
stacksnap_unwinder__end(const struct stacksnap_unwinder *uw);

/* Walks a whole stack into frames[0..max). Returns the number of frames
 * (>= 0) and sets *end, or -errno. */
STACKSNAP_API int stacksnap_unwind(struct stacksnap_unwinder *uw,
				   struct stacksnap_addrspace *as,
				   const struct stacksnap_regs *regs,
				   struct stacksnap_mem *mem,
				   struct stacksnap_frame *frames, size_t max,
				   enum stacksnap_end *end);

/* ------------------------------------------------------------------ */
/* Symbolization */

#define STACKSNAP_SYM_LINES 0x1	      /* file:line and inline frames */
#define STACKSNAP_SYM_NO_DEMANGLE 0x2 /* keep C++ names mangled */
#define STACKSNAP_SYM_SYMTAB 0x4      /* names from the ELF symbol tables
					 only, as perf and nm show them (no
					 DWARF: faster; ignores LINES) */

/* One symbolized location. Strings belong to the context's caches and
 * stay valid until the module leaves the cache (ctx or addrspace free). */
struct stacksnap_sym {
	const char *module;	/* path of the module, NULL if none */
	const char *function;	/* NULL when unknown */
	uint64_t offset;	/* pc - function start */
	uint64_t module_offset;	/* pc relative to the module's link address */
	const char *file;	/* NULL without line info */
	int line;		/* 0 without line info */
	int column;
	bool inlined;		/* an inline frame inside the next entry */
};

/* Symbolizes pc. For a return address pass is_return = true: the lookup is
 * done at pc - 1, as the call is what matters. With STACKSNAP_SYM_LINES the
 * inline chain is returned innermost first, then the containing function,
 * so up to max entries may be filled. Returns the count (>= 1 when the pc is
 * in a module, 0 when in none), or -errno. */
STACKSNAP_API int stacksnap_addrspace__symbolize(struct stacksnap_addrspace *as,
						 uint64_t pc, bool is_return,
						 unsigned flags,
						 struct stacksnap_sym *out,
						 size_t max);

/* ------------------------------------------------------------------ */
/* Snapshots of live processes: freeze every thread, copy registers and
 * stacks, let the process run again; unwind afterwards from the copy. */

struct stacksnap_snapshot_opts {
	size_t sz;
	size_t stack_size;	/* bytes copied per thread from rsp up;
				   0: 256 KiB. Clamped to the stack mapping. */
	unsigned stop_timeout_ms; /* wait for a thread to stop; 0: 1000 */
	bool proc_mem;		/* copy through /proc/PID/mem instead of
				   process_vm_readv */
	const pid_t *tids;	/* only these threads; NULL: all */
	size_t ntids;
	/* Leave every captured thread stopped when the capture returns, until
	 * stacksnap_snapshot__release() or __free(): to unwind live memory
	 * under ptrace (stacksnap_mem__new_pid), e.g. stacks deeper than a
	 * copy. The freeze then lasts until the release. */
	bool hold;
	bool no_copy;		/* copy no stack bytes (with hold: read live) */
	/* Polled while the threads are stopped (a signal handler sets it):
	 * once non-zero, every thread is detached and the capture fails with
	 * EINTR. NULL: not polled. */
	const volatile sig_atomic_t *cancel;
	size_t :0;
};

struct stacksnap_snapshot;

/* Why a thread has no usable capture. */
enum stacksnap_thread_error {
	STACKSNAP_THREAD_OK = 0,
	STACKSNAP_THREAD_GONE,	      /* exited during the capture */
	STACKSNAP_THREAD_NOT_STOPPED, /* did not stop within the timeout */
	STACKSNAP_THREAD_NO_REGS,     /* registers could not be read */
	STACKSNAP_THREAD_NO_STACK,    /* stack could not be copied */
};

struct stacksnap_thread {
	pid_t tid;
	char name[16];		/* comm */
	char state;		/* as in /proc/PID/task/TID/stat before the freeze */
	int error;		/* enum stacksnap_thread_error */
	struct stacksnap_regs regs;
	const uint8_t *stack;	/* copied bytes at stack_base; NULL if none */
	size_t stack_len;
	uint64_t stack_base;
};

struct stacksnap_snapshot_stats {
	uint64_t freeze_ns;	/* first thread stopped .. last resumed */
	uint64_t capture_ns;	/* whole capture call */
	/* The freeze, phase by phase: interrupting and waiting for every
	 * thread to stop, reading registers, copying stacks, detaching. */
	uint64_t stop_ns, regs_ns, copy_ns, detach_ns;
	size_t bytes_copied;
	unsigned threads;
	unsigned rescans;	/* task-list rescans to catch new threads */
};

/* Says whether pid can be captured, from /proc alone (no ptrace): 0, or
 * -ESRCH no such process, -ECHILD a zombie, -EINVAL a kernel thread,
 * -EBUSY traced by another debugger (errno set too; the log says which). */
STACKSNAP_API int stacksnap_snapshot__check(struct stacksnap_ctx *ctx,
					    pid_t pid);
/* Freezes pid, captures every thread (or opts->tids) and lets it run again.
 * The target is never left stopped: threads are seized (PTRACE_SEIZE), so
 * the kernel detaches them if the caller dies, and a signal that arrives
 * while a thread is stopped is given back to it on detach. Returns NULL and
 * sets errno: ESRCH no such process (or it exited during the capture),
 * EPERM not permitted, EBUSY traced by another debugger, ECHILD a zombie,
 * EINVAL a kernel thread, EINTR opts->cancel was set; the log names them.
 * Uses waitpid() on the threads only (never on the caller's children). */
STACKSNAP_API struct stacksnap_snapshot *
stacksnap_snapshot__capture(struct stacksnap_ctx *ctx, pid_t pid,
			    const struct stacksnap_snapshot_opts *opts);
STACKSNAP_API size_t
stacksnap_snapshot__thread_count(const struct stacksnap_snapshot *snap);
STACKSNAP_API const struct stacksnap_thread *
stacksnap_snapshot__thread(const struct stacksnap_snapshot *snap, size_t i);
STACKSNAP_API void
stacksnap_snapshot__stats(const struct stacksnap_snapshot *snap,
			  struct stacksnap_snapshot_stats *st);
/* Lets the threads of a capture made with opts->hold run again (and
 * completes the freeze statistics). Returns 0, or -EINVAL when nothing is
 * held. */
STACKSNAP_API int stacksnap_snapshot__release(struct stacksnap_snapshot *snap);
/* Frees the snapshot; releases held threads first. */
STACKSNAP_API void stacksnap_snapshot__free(struct stacksnap_snapshot *snap);

/* ------------------------------------------------------------------ */
/* Samples: processes followed over time from events, and unwinding of
 * one sample (registers + a copy of the user stack), the way profilers
 * and tracers capture them (perf's PERF_SAMPLE_REGS_USER +
 * PERF_SAMPLE_STACK_USER, or an eBPF program's copy).
 *
 * A process table keeps, per pid, the address space as the events describe
 * it (mmap, fork/clone, exec, exit) and, per thread, its name. Modules,
 * unwind tables and symbols live in the context and are shared by every
 * process and sample; unwinding a sample does not allocate once the
 * modules it meets are loaded. The typical flow (an eBPF profiler):
 *
 *   ctx = stacksnap_ctx__new(NULL);
 *   procs = stacksnap_procs__new(ctx, NULL);
 *   uw = stacksnap_unwinder__new(NULL);
 *   once per new process:  stacksnap_procs__attach_pid(procs, pid);
 *     (or, from recorded events: stacksnap_procs__mmap / __fork / __comm /
 *      __exit as they come)
 *   per event:  n = stacksnap_procs__unwind_sample(procs, uw, &sample,
 *                                                   frames, max, &end);
 *               stacksnap_addrspace__symbolize(
 *                   stacksnap_procs__addrspace(procs, pid), frames[i].pc, ...);
 */

struct stacksnap_procs;

struct stacksnap_procs_opts {
	size_t sz;
	size_t :0;
};

STACKSNAP_API struct stacksnap_procs *
stacksnap_procs__new(struct stacksnap_ctx *ctx,
		     const struct stacksnap_procs_opts *opts);
STACKSNAP_API void stacksnap_procs__free(struct stacksnap_procs *procs);

/* A mapping appeared in pid (perf MMAP/MMAP2). Mappings without PROT_EXEC
 * are ignored (only code needs a module). */
STACKSNAP_API int stacksnap_procs__mmap(struct stacksnap_procs *procs, pid_t pid,
					const struct stacksnap_mapping *map);
/* [start, end) was unmapped in pid. */
STACKSNAP_API int stacksnap_procs__munmap(struct stacksnap_procs *procs,
					  pid_t pid, uint64_t start,
					  uint64_t end);
/* Thread tid of process pid was created by thread ptid of ppid (perf FORK).
 * A new process (pid != ppid) starts with a copy of the parent's mappings;
 * a new thread (pid == ppid) shares them. */
STACKSNAP_API int stacksnap_procs__fork(struct stacksnap_procs *procs,
					pid_t ppid, pid_t ptid, pid_t pid,
					pid_t tid);
/* Thread tid of pid is now named comm (perf COMM). exec: the process ran
 * execve(): its old mappings are forgotten. */
STACKSNAP_API int stacksnap_procs__comm(struct stacksnap_procs *procs,
					pid_t pid, pid_t tid, const char *comm,
					bool exec);
/* Thread tid of pid exited (perf EXIT). When the last thread has gone the
 * process is kept until its pid is reused or the table is freed, so
 * samples ordered after the exit still find its mappings. */
STACKSNAP_API int stacksnap_procs__exit(struct stacksnap_procs *procs,
					pid_t pid, pid_t tid);
/* Replaces pid's mappings with those of the live process, read from
 * /proc/PID/maps (the eBPF profiler's "map the address space once"). */
STACKSNAP_API int stacksnap_procs__attach_pid(struct stacksnap_procs *procs,
					      pid_t pid);
/* The address space of pid (created empty when the pid is new), for
 * symbolizing its frames. NULL and errno set on failure. Owned by procs. */
STACKSNAP_API struct stacksnap_addrspace *
stacksnap_procs__addrspace(struct stacksnap_procs *procs, pid_t pid);
/* The name of thread tid as the last COMM gave it (or the parent's); NULL
 * when unknown. Valid until the next event for tid. */
STACKSNAP_API const char *stacksnap_procs__comm_of(struct stacksnap_procs *procs,
						   pid_t tid);
/* Counts every change to the code mappings of any process, so a caller
 * may cache symbolized addresses while it does not move. */
STACKSNAP_API uint64_t stacksnap_procs__generation(const struct stacksnap_procs *procs);

/* One sample. Registers are given either as a register set (regs) or in
 * perf's layout (perf_regs_mask + perf_regs, as PERF_SAMPLE_REGS_USER has
 * them). The stack copy is stack_len bytes read from stack_start up (0: from
 * the sample's rsp, as perf and eBPF copy it). */
struct stacksnap_sample {
	size_t sz;
	pid_t pid;
	pid_t tid;
	const struct stacksnap_regs *regs;	/* NULL: use perf_regs */
	uint64_t perf_regs_mask;
	const uint64_t *perf_regs;
	const void *stack;
	size_t stack_len;
	uint64_t stack_start;
	size_t :0;
};

/* Unwinds a sample against pid's mappings as they are now (feed events in
 * time order). A read outside the stack copy ends the walk with
 * STACKSNAP_END_STACK_COPY. Returns the number of frames and sets *end,
 * or -errno. Does not allocate once the modules met are loaded. */
STACKSNAP_API int
stacksnap_procs__unwind_sample(struct stacksnap_procs *procs,
			       struct stacksnap_unwinder *uw,
			       const struct stacksnap_sample *sample,
			       struct stacksnap_frame *frames, size_t max,
			       enum stacksnap_end *end);

/* The mapping holding addr, copied into *out as far as out->sz (set by
 * the caller, e.g. STACKSNAP_OPTS) says; path owned by as, valid until its
 * mappings change. Returns 0, or -ENOENT when none does. */
STACKSNAP_API int stacksnap_addrspace__find_mapping(struct stacksnap_addrspace *as,
						    uint64_t addr,
						    struct stacksnap_mapping *out);

/* ------------------------------------------------------------------ */
/* perf.data files, read as a stream of events in time order (the order
 * `perf script` processes them: sorted within perf's flush rounds), with
 * the memory of two rounds, never of the whole file. */

struct stacksnap_perf_data;

struct stacksnap_perf_data_opts {
	size_t sz;
	bool file_order;	/* do not sort by time: records as written */
	size_t :0;
};

/* PERF_RECORD_* types the reader decodes; others come as
 * STACKSNAP_PERF_OTHER with only type, offset and size set. */
enum stacksnap_perf_event_type {
	STACKSNAP_PERF_OTHER = 0,
	STACKSNAP_PERF_MMAP,	/* MMAP and MMAP2: map */
	STACKSNAP_PERF_COMM,	/* comm, exec */
	STACKSNAP_PERF_FORK,	/* ppid, ptid -> pid, tid */
	STACKSNAP_PERF_EXIT,	/* pid, tid */
	STACKSNAP_PERF_SAMPLE,	/* everything under "sample" */
	STACKSNAP_PERF_LOST,	/* lost: records the kernel dropped */
};

/* One decoded record. Pointers point into the file's bytes (valid until
 * the reader is freed); map.path, map.build_id and comm likewise, except
 * in pipe-mode files, where they are valid until the next call. */
struct stacksnap_perf_event {
	enum stacksnap_perf_event_type type;
	uint32_t record_type;	/* PERF_RECORD_* as in the file */
	uint16_t misc;		/* the record header's misc */
	uint64_t offset;	/* file offset of the record */
	uint32_t size;		/* record size in bytes */
	pid_t pid, tid;		/* -1 when the record has none */
	pid_t ppid, ptid;	/* FORK */
	uint64_t time;		/* 0 when the record has none */
	uint32_t cpu;
	struct stacksnap_mapping map; /* MMAP: build_id from the record or
					 the file's build-id table */
	const char *comm;	/* COMM */
	bool exec;		/* COMM from execve() */
	uint64_t lost;		/* LOST */
	/* SAMPLE */
	const char *event_name;	/* "cpu-clock", or "" when unknown */
	uint64_t sample_type;	/* the event's PERF_SAMPLE_* bits */
	uint64_t ip, period;
	uint64_t callchain_nr;
	const uint64_t *callchain; /* PERF_CONTEXT_* markers included */
	uint64_t regs_abi;	/* 0: no user registers */
	uint64_t regs_mask;	/* sample_regs_user of the event */
	const uint64_t *regs;	/* as many values as regs_mask has bits */
	const uint8_t *stack;	/* user stack copy from regs' sp */
	uint64_t stack_len;	/* bytes valid (dyn_size) */
};

/* Opens and checks a perf.data file (mmap'ed, not read). Errors name the
 * file and the offset of what is wrong, through the context's log; NULL
 * and errno set (EINVAL for a corrupt or unsupported file). */
STACKSNAP_API struct stacksnap_perf_data *
stacksnap_perf_data__open(struct stacksnap_ctx *ctx, const char *path,
			  const struct stacksnap_perf_data_opts *opts);
/* The same over bytes in memory (not copied; they must outlive it). */
STACKSNAP_API struct stacksnap_perf_data *
stacksnap_perf_data__open_mem(struct stacksnap_ctx *ctx, const void *data,
			      size_t len,
			      const struct stacksnap_perf_data_opts *opts);
/* The next event: 1 with *ev filled, 0 at the end, -errno on a corrupt
 * record (logged with its offset; the stream ends there). */
STACKSNAP_API int stacksnap_perf_data__next(struct stacksnap_perf_data *pd,
					    struct stacksnap_perf_event *ev);
/* A message describing the last error ("" when none). */
STACKSNAP_API const char *stacksnap_perf_data__error(const struct stacksnap_perf_data *pd);
STACKSNAP_API void stacksnap_perf_data__free(struct stacksnap_perf_data *pd);

/* The build-id the recording's BUILD_ID feature gives for filename (e.g.
 * "[kernel.kallsyms]" for the kernel): 0 with *id (owned by pd) and *len,
 * or -ENOENT. */
STACKSNAP_API int stacksnap_perf_data__build_id(const struct stacksnap_perf_data *pd,
						const char *filename,
						const uint8_t **id, size_t *len);
/* A decoder for records as the kernel writes them into the ring buffer of
 * a perf event the caller opened itself (perf_event_open + mmap): attr is
 * its struct perf_event_attr (attr_size bytes). NULL and errno set. */
STACKSNAP_API struct stacksnap_perf_data *
stacksnap_perf_data__open_attr(struct stacksnap_ctx *ctx, const void *attr,
			       size_t attr_size);
/* Decodes one record of len bytes (its header's size must fit) into *ev;
 * ev's pointers point into rec. rec must be 8-byte aligned (copy a record
 * that wraps around the ring's end). Returns 0 or -errno (-EINVAL for a
 * malformed record, logged). */
STACKSNAP_API int stacksnap_perf_data__decode(struct stacksnap_perf_data *pd,
					      const void *rec, size_t len,
					      struct stacksnap_perf_event *ev);

/* Feeds an MMAP, COMM, FORK or EXIT event to procs (others are ignored):
 * the glue between the reader and the process table. */
STACKSNAP_API int stacksnap_procs__apply_perf_event(struct stacksnap_procs *procs,
						    const struct stacksnap_perf_event *ev);

/* ------------------------------------------------------------------ */
/* Aggregated stacks and the profile formats written from them (folded,
 * pprof, speedscope, flame graph SVG): one path for every source of
 * stacks (perf-script, profile, and anything else that walks stacks).
 * Memory follows the number of distinct stacks, never of samples: stacks
 * are kept as a tree of distinct frames (a call tree), each node with the
 * count of samples that ended there. */

#include <stdio.h>

/* What a frame is, for colouring by kind. */
enum stacksnap_frame_kind {
	STACKSNAP_KIND_USER = 0,	/* user-space code with a module */
	STACKSNAP_KIND_KERNEL,		/* kernel code */
	STACKSNAP_KIND_UNKNOWN,		/* no module or no symbol known */
	STACKSNAP_KIND_ROOT,		/* a process or thread name (comm) */
};

/* One frame of a stack handed to stacksnap_stacks__add. Every string and
 * byte is copied; NULL/0 fields are unknown. Two frames are the same
 * frame when every field is equal. */
struct stacksnap_stack_frame {
	const char *name;	/* function name, demangled as it should show */
	const char *module;	/* path of the module */
	const uint8_t *build_id; /* of the module */
	size_t build_id_len;
	uint64_t addr;		/* the pc in the process (a return address
				   minus 1 for callers: the call) */
	uint64_t map_start, map_end, map_offset; /* the mapping holding addr
						    (pprof's Mapping) */
	const char *file;	/* source file, with line, when known */
	int line;
	uint8_t kind;		/* enum stacksnap_frame_kind */
	bool inlined;		/* inlined into the next frame (outer) */
};

struct stacksnap_stacks_opts {
	size_t sz;
	/* What a sample counts and its unit, as pprof names them
	 * ("samples"/"count" when NULL). */
	const char *sample_type, *sample_unit;
	/* The sampling period in nanoseconds (e.g. 1e9/99 for 99 Hz); 0 when
	 * not known. With it pprof files carry cpu/nanoseconds values too. */
	uint64_t period_ns;
	uint64_t duration_ns;	/* length of the profile; 0 unknown */
	uint64_t time_ns;	/* start, ns since the epoch; 0 unknown */
	size_t :0;
};

struct stacksnap_stacks;

STACKSNAP_API struct stacksnap_stacks *
stacksnap_stacks__new(const struct stacksnap_stacks_opts *opts);
STACKSNAP_API void stacksnap_stacks__free(struct stacksnap_stacks *st);
/* Adds count samples of the stack frames[0..n), innermost first (frame 0
 * is where the sample was taken; the outermost may be a ROOT frame naming
 * the process). Returns 0 or -errno. */
STACKSNAP_API int stacksnap_stacks__add(struct stacksnap_stacks *st,
					const struct stacksnap_stack_frame *frames,
					size_t n, uint64_t count);
/* Reads folded stacks ("outer;...;inner COUNT" lines, as
 * stackcollapse-perf.pl writes them) and adds them: frames get only a
 * name (and kind KERNEL for a "_[k]" suffix). Returns the number of stacks
 * read, or -EINVAL with a message naming the line in the context's log
 * (ctx may be NULL: no message). */
STACKSNAP_API int stacksnap_stacks__add_folded(struct stacksnap_stacks *st,
					       struct stacksnap_ctx *ctx,
					       const char *text, size_t len);
/* Total samples and distinct stacks added so far. */
STACKSNAP_API uint64_t stacksnap_stacks__samples(const struct stacksnap_stacks *st);
STACKSNAP_API size_t stacksnap_stacks__distinct(const struct stacksnap_stacks *st);

enum stacksnap_stacks_format {
	STACKSNAP_FORMAT_FOLDED = 0,	/* "outer;...;inner COUNT", sorted */
	STACKSNAP_FORMAT_PPROF,		/* profile.proto, gzipped */
	STACKSNAP_FORMAT_SPEEDSCOPE,	/* speedscope JSON */
	STACKSNAP_FORMAT_SVG,		/* interactive flame graph */
};

enum stacksnap_svg_colors {
	STACKSNAP_COLOR_MODULE = 0,	/* a hue per module */
	STACKSNAP_COLOR_KIND,		/* kernel / user / unknown */
};

struct stacksnap_stacks_write_opts {
	size_t sz;
	const char *title;	/* SVG title, speedscope/pprof name */
	enum stacksnap_svg_colors colors;
	/* SVG: a differential flame graph of st against base (widths from
	 * st, red where a frame grew relative to base, blue where it
	 * shrank, normalised by the two totals). */
	const struct stacksnap_stacks *base;
	unsigned width;		/* SVG width in pixels; 0: 1200 */
	size_t :0;
};

/* Parses "folded", "pprof", "speedscope" or "svg". Returns 0 or -EINVAL. */
STACKSNAP_API int stacksnap_stacks_format__parse(const char *name,
						 enum stacksnap_stacks_format *fmt);
/* Writes the stacks to f in format fmt. Returns 0 or -errno (EIO when f
 * could not be written). */
STACKSNAP_API int stacksnap_stacks__write(const struct stacksnap_stacks *st,
					  FILE *f, enum stacksnap_stacks_format fmt,
					  const struct stacksnap_stacks_write_opts *opts);

#ifdef __cplusplus
}
#endif
#endif /* STACKSNAP_H */
