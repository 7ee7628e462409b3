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
 *
 * Threads: a context and every object made from it are used by one thread
 * at a time (one context per thread for parallel work); a walker's calls
 * may come from several threads. Async-signal-safe: the in-process
 * backtrace (stacksnap_backtrace*) and the pure helpers. docs/library.md
 * says it object by object, with the minimum alternate signal stack.
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
	/* Ask the debuginfod servers in $DEBUGINFOD_URLS (libdebuginfod)
	 * for debug files, and for executables of saved captures, that are
	 * not found locally. Off by default: a live capture on a production
	 * host should not reach the network. */
	bool debuginfod;
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
 * (-EFAULT for unmapped memory; a callback's own -ENODATA for outside
 * the bytes it has ends a walk as STACKSNAP_END_STACK_COPY). */
typedef int (*stacksnap_read_fn)(void *user, uint64_t addr, void *buf,
				 size_t len);

/* A copied range of stack bytes starting at address base. Reads outside
 * it (and its more ranges and fallback) fail with -ENODATA. The bytes are not copied: they must outlive the
 * source (or the next stacksnap_mem__set_copy()). */
STACKSNAP_API struct stacksnap_mem *
stacksnap_mem__new_copy(const void *bytes, size_t len, uint64_t base);
/* Points an existing copy source at new bytes, without allocating (a pid
 * or callback source: bytes read first, before the source's own reads).
 * -EINVAL for a stacksnap_mem__new_self() source. */
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
/* One more copied range of a thread's memory (another stack it uses). */
struct stacksnap_stack_range {
	const uint8_t *bytes;
	size_t len;
	uint64_t base;
};
/* More copied ranges for a copy source, read (in order) when an address
 * is outside its main copy and before its fallback: a thread's other
 * stacks (struct stacksnap_thread's more_stacks). ranges[0..n) and their
 * bytes are not copied: they must outlive the source or the next call;
 * n = 0 removes them. */
STACKSNAP_API int stacksnap_mem__set_more(struct stacksnap_mem *mem,
					  const struct stacksnap_stack_range *ranges,
					  size_t n);
/* Reads len bytes at addr as a walk would. Returns 0 or -errno (errno
 * set): -ENODATA outside a copy source's bytes, -EFAULT where a pid or
 * self source's memory is not mapped, a callback's own error. */
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
 * read from the process's memory. The file of each code mapping is opened
 * (through /proc/PID/root) when an address in it is first looked up, by an
 * unwind, a symbolization or find_mapping: the process must still exist
 * then. NULL and errno set: ESRCH no such process (as every call taking a
 * pid), EACCES/EPERM not permitted (the log says why), EINVAL, ENOMEM. */
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
	STACKSNAP_STEP_USER,	    /* a stepper the user registered (see
				       stacksnap_frame.user_stepper) */
	STACKSNAP_STEP_ANALYSIS,    /* stack height from an analysis of the
				       function's machine code */
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
	uint8_t user_stepper; /* with STACKSNAP_STEP_USER: the id
				 stacksnap_unwinder__add_stepper() gave */
};

struct stacksnap_unwind_opts {
	size_t sz;
	unsigned max_frames;	/* 0: 1024 */
	bool stack_scan;	/* try stack scanning when nothing else works */
	bool no_frame_pointer;	/* disable the frame-pointer stepper */
	bool no_analysis;	/* disable the analysis stepper (code analysis
				   where there is no CFI; docs/steppers.md) */
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
 * *frame filled, 0 when the walk has ended (see end()), or -errno
 * (-EINVAL before any stacksnap_unwinder__start). A pc outside every
 * mapping of as that no stepper could step ends the walk with
 * STACKSNAP_END_NO_MODULE (stale mappings), one in a mapping without
 * usable unwind information with STACKSNAP_END_NO_CFI. */
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

/* Whether frame's pc is a return address, to be looked up at pc - 1 (the
 * call): the is_return argument of stacksnap_addrspace__symbolize and
 * stacksnap_addrspace__jit_file for this frame. false for frame 0 (the
 * registers given: STACKSNAP_STEP_START), for a frame a signal
 * interrupted (STACKSNAP_FRAME_SIGNAL: its pc is exact) and for the signal
 * trampoline (STACKSNAP_FRAME_SIGRETURN: the handler "returned" to the
 * trampoline's first instruction, which no call precedes); true for every
 * other frame. */
STACKSNAP_API bool stacksnap_frame__is_return(const struct stacksnap_frame *frame);

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

/* stacksnap_sym.module of a pc in anonymous executable memory (JIT code):
 * function is its name from the live process's perf map
 * (/tmp/perf-PID.map) or jitdump file (jit-PID.dump), file:line from the
 * jitdump's debug info with STACKSNAP_SYM_LINES; function is NULL when no
 * such file names the pc (never a neighbouring symbol). module_offset is
 * pc - the mapping's start. Compare with strcmp. */
#define STACKSNAP_MODULE_JIT "[jit]"

/* The JIT symbol file that names pc, as the process and perf name it
 * ("/tmp/perf-PID.map", a jitdump's path; `perf script` shows it as the
 * frame's dso), or NULL when none does. Address spaces of processes seen
 * in recorded events (stacksnap_procs__mmap...) read /tmp/perf-PID.map
 * of this machine's /tmp, as `perf script` does. */
STACKSNAP_API const char *
stacksnap_addrspace__jit_file(struct stacksnap_addrspace *as, uint64_t pc,
			      bool is_return);

/* Symbolizes pc. For a return address pass is_return = true: the lookup is
 * done at pc - 1, as the call is what matters. With STACKSNAP_SYM_LINES the
 * inline chain is returned innermost first, then the containing function,
 * so up to max entries may be filled; a Go program's pc gives its chain
 * (from the pclntab) without it too, names only. Returns the count (>= 1
 * when the pc is in a module, 0 when in none), or -errno (-EINVAL for a
 * flag this library does not know). */
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
	size_t stack_size;	/* bytes copied at most per stack from rsp up,
				   clamped to its mapping (and, on a glibc
				   thread's stack, its thread pointer; on a
				   stack a Go runtime allocated, its
				   g.stack.hi: docs/go.md): 0,
				   the target's RLIMIT_STACK (at most 64 MiB;
				   8 MiB when unknown): the whole stack in use */
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
	/* Stop every thread, as before the non-stop capture: by default,
	 * where BPF is permitted, threads asleep in the kernel are read
	 * without stopping them and only the others are interrupted (see
	 * stacksnap_snapshot__nonstop_stats; hold and no_copy imply this). */
	bool freeze_all;
	/* Do not raise the calling thread to SCHED_FIFO for the freeze
	 * window (by default it is, where permitted, and restored at once:
	 * a preempted tool stretches the freeze on a loaded machine). */
	bool no_realtime;
	/* Take the non-stop path whatever the threads' states (by default it
	 * is taken only where it pays: at least 16 threads asleep, or one in
	 * uninterruptible sleep (D), which a freeze would wait for). */
	bool nonstop;
	/* The address space of the same process, read just before
	 * (stacksnap_addrspace__from_pid): its writable mappings clamp the
	 * stack copies instead of a second read of /proc/PID/maps (~0.5 ms
	 * on a process with 400 mappings). A thread whose stack pointer is
	 * in none of them (a stack mapped since) makes the capture read the
	 * maps afresh. NULL: the capture reads them itself. */
	const struct stacksnap_addrspace *addrspace;
	/* A Go program: read its goroutine list while every thread is
	 * stopped (for a Go program this implies freeze_all: a list read
	 * under running threads could change while it is read), and unwind
	 * each goroutine (stacksnap_snapshot__goroutine). With nonstop the
	 * list is read while the threads asleep run: each goroutine is read
	 * again after its walk, and one that changed meanwhile has no frames
	 * and an end saying so (the log counts them, and the goroutines
	 * started meanwhile, not listed). Ignored with tids; no effect on
	 * other programs. */
	bool goroutines;
	/* Do not look for a language runtime (Python) nor read its frames
	 * during the freeze (by default they are read where one is found:
	 * stacksnap_snapshot__runtime_frames). */
	bool no_runtime;
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
	STACKSNAP_THREAD_EXITED,      /* had exited before the capture (a main
					 thread that called pthread_exit()
					 while the others run on) */
};

/* Kernel frames kept of a thread read non-stop (kernel_ips). */
#define STACKSNAP_KERNEL_IPS 24

/* Copied stacks of a thread besides the one holding rsp. */
#define STACKSNAP_MORE_STACKS 2

struct stacksnap_thread {
	pid_t tid;
	char name[16];		/* comm */
	char state;		/* as in /proc/PID/task/TID/stat before the freeze */
	int error;		/* enum stacksnap_thread_error */
	struct stacksnap_regs regs;
	const uint8_t *stack;	/* copied bytes at stack_base; NULL if none */
	size_t stack_len;
	uint64_t stack_base;
	bool nonstop;		/* read without stopping it: it was asleep and
				   provably did not run during the capture */
	/* The other stacks a walk of this thread can enter, copied at the
	 * same instant: for a thread running a signal handler on an
	 * alternate signal stack (stack), its normal stack from the
	 * interrupted rsp up. Point a copy source at them with
	 * stacksnap_mem__set_more(). */
	struct stacksnap_stack_range more_stacks[STACKSNAP_MORE_STACKS];
	unsigned nmore_stacks;
	/* The system call the thread was in at the capture: orig_rax as the
	 * kernel saved it (-1: none; a call the kernel restarts shows
	 * restart_syscall), its return value in regs' rax (-ENOSYS: still
	 * in it; -EINTR, -ERESTART*: the freeze interrupted it; anything
	 * else: it had returned). Valid when have_orig_rax: the freeze and
	 * the non-stop iterator read it, saved captures keep none. */
	bool have_orig_rax;
	int64_t orig_rax;
	/* Read non-stop (nonstop): its kernel stack at the read, return
	 * addresses innermost first, by the iterator (bpf_get_task_stack);
	 * 0 frames otherwise. Names: stacksnap_kallsyms__lookup. */
	unsigned nkernel_ips;
	uint64_t kernel_ips[STACKSNAP_KERNEL_IPS];
	/* Read non-stop: how long it had been asleep at the read, in ns
	 * (the scheduler's clock: when it last left its CPU, to the
	 * runqueue's clock at the read; docs/waits.md). 0: not known. */
	uint64_t waited_ns;
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
 * -EBUSY traced by another debugger, -EPERM the calling process itself
 * (or one of its threads: a process cannot ptrace its own thread group;
 * stacksnap_backtrace() takes its own stacks) (errno set too; the log says
 * which). stacksnap_snapshot__capture and stacksnap_walker__attach make
 * the same checks first. */
STACKSNAP_API int stacksnap_snapshot__check(struct stacksnap_ctx *ctx,
					    pid_t pid);
/* What the kernel refused: a ptrace of a process (or a read of its
 * memory or maps), loading a BPF program or map, opening a perf event. */
enum stacksnap_refused {
	STACKSNAP_REFUSED_PTRACE,
	STACKSNAP_REFUSED_BPF,
	STACKSNAP_REFUSED_PERF,
};
/* Why this process got EPERM or EACCES for what (pid: the target of a
 * ptrace, else 0), from /proc and /sys alone: one phrase with its fix, in
 * buf (size bytes) and returned. "run as root ..." only when not root;
 * as root the cause: another tracer (TracerPid), Yama's ptrace_scope, a
 * capability dropped from the bounding set, a user namespace, a seccomp
 * filter, a security module. */
STACKSNAP_API const char *stacksnap_why_not_permitted(enum stacksnap_refused what, pid_t pid,
						      char *buf, size_t size);
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
/* Runtime frames: Python, Java, JavaScript and Go keep their own call
 * stacks in memory. A runtime found in the target adds what can change to
 * the freeze (a thread's interpreter frame chain, the goroutine list) and,
 * after the thaw, turns native frames into runtime frames: the frames of
 * one native frame (an evaluation loop running Python frames, JIT code
 * running a Java method and the methods inlined into it) replace it in a
 * merged stack. */
enum stacksnap_runtime {
	STACKSNAP_RUNTIME_NATIVE = 0,	/* not a runtime frame */
	STACKSNAP_RUNTIME_PYTHON,
	STACKSNAP_RUNTIME_JAVA,
	STACKSNAP_RUNTIME_JS,
	STACKSNAP_RUNTIME_GO,
	STACKSNAP_RUNTIME_JIT,		/* JIT code named by a perf map or jitdump */
	STACKSNAP_RUNTIME_RUBY,		/* CRuby (docs/ruby.md) */
	STACKSNAP_RUNTIME_PHP,		/* the Zend engine (docs/php.md) */
};

#define STACKSNAP_RFRAME_INLINED 0x1	/* inlined into the frame after it */
/* A Go wrapper the compiler generated (a go statement's closure, a method
 * wrapper: funcID_wrapper) that Go's own profiles and tracebacks leave
 * out, as they do (not when it called a panic). */
#define STACKSNAP_RFRAME_WRAPPER 0x2
/* The runtime's own code, not a function of the program: a JVM's call
 * stub, adapter or runtime stub (its CodeBlob's name). Printed as the
 * runtime "jvm" (docs/jit.md). */
#define STACKSNAP_RFRAME_VM 0x4

struct stacksnap_runtime_frame {
	size_t sz;
	enum stacksnap_runtime runtime;
	uint32_t native_index;	/* the native frame (index in the thread's
				   unwound frames) this one replaces; frames
				   of one native frame are consecutive,
				   innermost first */
	uint32_t flags;		/* STACKSNAP_RFRAME_* */
	const char *function;	/* qualified name; never NULL */
	const char *file;	/* may be NULL */
	unsigned line;		/* 0: unknown */
	uint64_t pc;		/* 0 for interpreted frames */
	size_t :0;
};

/* One goroutine of a Go program, as the runtime's own dump lists it, read
 * during the freeze (stacksnap_snapshot_opts.goroutines). Strings live as
 * long as the snapshot. frames are innermost first, runtime
 * STACKSNAP_RUNTIME_GO; inlined calls carry STACKSNAP_RFRAME_INLINED and
 * native_index counts the physical frames (the inlined ones share the
 * index of the frame they are inlined into). */
/* What a waiting goroutine waits on (docs/waits.md): a channel (its
 * runtime hchan), or the sync object around the semaphore it sleeps on. */
struct stacksnap_go_object {
	uint64_t addr;		/* as the program's fmt.Printf("%p") */
	const char *type;	/* "chan", "sync.Mutex", "sync.RWMutex",
				   "sync.WaitGroup", "semaphore" */
	int64_t capacity;	/* a channel's buffer; -1: not a channel */
	int64_t queued;		/* values in a channel's buffer */
	int closed;		/* a closed channel */
	uint32_t receivers;	/* goroutines waiting to receive from it */
	uint32_t senders;	/* and to send to it */
	int counts_cut;		/* a queue longer than stacksnap counts */
	const char *elem_type;	/* a channel's element type ("int"), or
				   NULL: not named */
};

struct stacksnap_goroutine {
	size_t sz;
	int64_t goid;
	const char *status;	/* "chan receive", "running", "runnable"... */
	const char *wait_reason; /* NULL when not waiting */
	int64_t wait_ns;	/* how long it has waited, -1: not recorded */
	pid_t thread;		/* the thread running it, 0: none */
	const char *created_by;	/* function with the go statement, or NULL */
	const char *created_file;
	unsigned created_line;
	const struct stacksnap_runtime_frame *frames;
	size_t nframes;
	const char *end;	/* why its stack ends early; NULL: it reached
				   the goroutine's start */
	/* Its profiler labels (pprof.Do, pprof.SetGoroutineLabels):
	 * labels[2i] a key, labels[2i + 1] its value, sorted by key. Read
	 * live and from cores; snapshot files keep them (older files have
	 * none). */
	const char *const *labels;
	size_t nlabels;
	/* What it waits on, read live (snapshot files and cores keep
	 * none): its channel, every channel of its select, or its sync
	 * object; none with object_unknown saying why ("object not
	 * known: ...") when it waits on one that could not be read. */
	const struct stacksnap_go_object *objects;
	size_t nobjects;
	const char *object_unknown;
	size_t :0;
};

/* The goroutines of a capture (0 when the target is not a Go program,
 * was not asked for them, or its list could not be read: the log says
 * why). */
STACKSNAP_API size_t
stacksnap_snapshot__goroutine_count(const struct stacksnap_snapshot *snap);
STACKSNAP_API const struct stacksnap_goroutine *
stacksnap_snapshot__goroutine(const struct stacksnap_snapshot *snap, size_t i);
/* A Go program's goroutines read on demand, for callers that stop the
 * process themselves (watch): open once (NULL, errno ENOENT: not a Go
 * program), then read while every thread is stopped; running goroutines
 * get no stack (their threads' registers are not known here). */
struct stacksnap_goroutines;
STACKSNAP_API struct stacksnap_goroutines *
stacksnap_goroutines__open(struct stacksnap_ctx *ctx, pid_t pid);
/* Reads the list now (replacing the last one). 0 or -errno. */
STACKSNAP_API int stacksnap_goroutines__read(struct stacksnap_goroutines *g);
STACKSNAP_API size_t
stacksnap_goroutines__count(const struct stacksnap_goroutines *g);
STACKSNAP_API const struct stacksnap_goroutine *
stacksnap_goroutines__get(const struct stacksnap_goroutines *g, size_t i);
STACKSNAP_API void stacksnap_goroutines__free(struct stacksnap_goroutines *g);
/* The id of the goroutine a thread of the live process ran when its
 * registers regs (DWARF order) were taken, e.g. at a trace event: Go's
 * register ABI (Go 1.17+) keeps the current g in r14 in Go code; that g is
 * read now and taken when rsp lies within its stack. -1 when not known:
 * the thread ran C code, the scheduler on its system stack (g0), or the
 * goroutine's g has gone. A g reused since for a new goroutine gives the
 * new one's id: read soon after the event. */
STACKSNAP_API int64_t
stacksnap_goroutines__goid_at(struct stacksnap_goroutines *g,
			      const uint64_t *regs);

/* A C++ exception in flight on a thread (inside __cxa_throw or
 * std::terminate), read as gdb's `catch throw` shows it. */
struct stacksnap_cxx_exception {
	size_t sz;
	uint64_t object;	/* the thrown object's address */
	char type[256];		/* its type, demangled */
	char what[512];		/* what(): std::runtime_error, std::logic_error
				   and their single-inheritance descendants;
				   "" when not read */
	size_t :0;
};

/* Thread th of live process pid (read now, after the capture: the thread
 * is inside __cxa_throw or std::terminate, which keep the exception):
 * the exception whose unwind header a stack word in [lo, hi) of the
 * thread's copy points at (lo: its innermost frame's sp; hi: the sp of the
 * frame that called __cxa_throw). Returns 0, or -errno (-ENOENT: none). */
int stacksnap_cxx_exception__read(pid_t pid, const struct stacksnap_thread *th,
				  uint64_t lo, uint64_t hi,
				  struct stacksnap_cxx_exception *out);

/* The goroutines a snapshot file kept (stacksnap_snapshot__save writes
 * them; 0 for files without, events files and cores). Goroutine i's
 * frames and strings live as long as s. */
struct stacksnap_saved;
STACKSNAP_API size_t
stacksnap_saved__goroutine_count(const struct stacksnap_saved *s);
STACKSNAP_API const struct stacksnap_goroutine *
stacksnap_saved__goroutine(const struct stacksnap_saved *s, size_t i);
/* What a live capture found of a language runtime in the target (one per
 * process; today CPython 3.11-3.13). */
struct stacksnap_runtime_info {
	size_t sz;
	enum stacksnap_runtime runtime;	/* NATIVE: none found */
	const char *description;	/* "Python 3.11.2: layout 3.11", or
					   "Python 3.10: layout unknown, native
					   frames only"; NULL when none */
	bool frames;			/* runtime frames were captured */
	pid_t gil_holder;		/* the thread holding the GIL; 0: none
					   or unknown */
	const char *state;		/* NULL, "finalizing" or "not
					   initialized" */
	const char *end;		/* NULL, or why the list of interpreters
					   or threads was cut */
	unsigned interpreters;		/* sub-interpreters included */
	uint64_t capture_ns;		/* what reading the runtime's frame
					   chains added to the freeze */
	unsigned capture_reads;		/* memory reads it made */
	/* Not known (a saved capture: a core, or a snapshot file written
	 * before they were kept): interpreters; capture_ns and
	 * capture_reads. Zero then, not measured. */
	bool interpreters_unknown, capture_unknown;
	size_t :0;
};

/* Says what the capture found of a runtime. Returns 0, or -EINVAL. */
STACKSNAP_API int stacksnap_snapshot__runtime(const struct stacksnap_snapshot *snap,
					      struct stacksnap_runtime_info *out);

/* The runtime's own name of thread i (Python: threading's name, where
 * the layout lets it be read: 3.11, 3.12), or NULL. Lives as long as the
 * snapshot. */
STACKSNAP_API const char *
stacksnap_snapshot__runtime_thread_name(struct stacksnap_snapshot *snap, size_t i);
/* Registers with uw the steppers of the runtime snap found, for walking
 * its threads' stacks: a HotSpot JVM's compiled Java frames keep no frame
 * pointer and are stepped by their nmethod's frame size. uw must not be
 * used after snap is freed. Returns how many were registered (0: none),
 * or -errno. */
STACKSNAP_API int
stacksnap_snapshot__runtime_steppers(struct stacksnap_snapshot *snap,
				     struct stacksnap_unwinder *uw);
/* The runtime frames of thread i of a live capture, merged against its
 * native frames (unwound from the same capture, innermost first): each
 * native frame of the runtime's evaluation loop is replaced by the runtime
 * frames it runs (native_index names it); frames left over (a native walk
 * cut short) have native_index == nnative. The frames were read during the
 * freeze; they are named now (code objects do not change). Writes up to
 * max frames and returns how many there are (0: none, the thread runs no
 * Python), or -errno. *end (may be NULL) is set to NULL or to why the
 * thread's runtime frames were cut (a corrupt chain). Strings live as long
 * as the snapshot. */
STACKSNAP_API int stacksnap_snapshot__runtime_frames(struct stacksnap_snapshot *snap,
						     size_t i,
						     const struct stacksnap_frame *native,
						     size_t nnative,
						     struct stacksnap_runtime_frame *out,
						     size_t max, const char **end);

/* One step of a runtime's stepper: the frame at (pc, sp) has its caller
 * at (caller_pc, caller_sp) with rbp caller_fp. Keyed by (pc, sp): sps of
 * different threads' stacks never coincide. */
struct stacksnap_runtime_step {
	uint64_t pc, sp;
	uint64_t caller_pc, caller_sp, caller_fp;
};

/* A runtime that names native frames (a HotSpot JVM, V8 in node)
 * followed over samples (profile, trace): its frames stepped where they
 * keep no frame pointer (compiled Java frames) and named from the
 * runtime's own tables (docs/jit.md), sample by sample, while the
 * process lives. */
struct stacksnap_vm;
/* The runtime of process pid (as: its address space, or NULL to read
 * /proc/PID/maps): V8 (node, libnode with v8dbg_* metadata), else a JVM
 * (libjvm.so); NULL with errno ENOENT (none, or tables that do not read:
 * logged through ctx). */
STACKSNAP_API struct stacksnap_vm *stacksnap_vm__open(struct stacksnap_ctx *ctx,
						      pid_t pid,
						      const struct stacksnap_addrspace *as);
STACKSNAP_API void stacksnap_vm__free(struct stacksnap_vm *vm);
/* STACKSNAP_RUNTIME_JAVA or STACKSNAP_RUNTIME_JS. */
STACKSNAP_API enum stacksnap_runtime stacksnap_vm__runtime(const struct stacksnap_vm *vm);
/* Registers with uw the steppers its frames need (uw must not be used
 * after vm is freed). Returns how many (0: none) or -errno. */
STACKSNAP_API int stacksnap_vm__steppers(struct stacksnap_vm *vm,
					 struct stacksnap_unwinder *uw);
/* Whether its steppers step (on at open): an unwinder that also walks
 * other processes' samples turns them off for those (their pcs mean
 * nothing in this runtime's code). */
STACKSNAP_API void stacksnap_vm__enable(struct stacksnap_vm *vm, bool on);
/* The runtime frames of one walk (native, unwound with uw above from
 * the stack copy stack[0..stack_len) at stack_base, which may be empty:
 * frame slots are then read from the live process), each replacing the
 * native frame native_index names; named now, once per walk: give room
 * for them (a native frame may give several: functions inlined at its
 * call). Strings live until the next call. Returns how many were
 * written, or -errno. */
STACKSNAP_API int stacksnap_vm__frames(struct stacksnap_vm *vm, const void *stack,
				       size_t stack_len, uint64_t stack_base,
				       const struct stacksnap_frame *native,
				       size_t nnative,
				       struct stacksnap_runtime_frame *out, size_t max);
/* The steps its steppers took in the walks since the last
 * stacksnap_vm__frames() (which forgets them), in the order taken; the
 * array lives until then. Returns how many (0: none, or a runtime whose
 * frames need no stepper). */
STACKSNAP_API size_t stacksnap_vm__steps(const struct stacksnap_vm *vm,
					 const struct stacksnap_runtime_step **steps);

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
 * /proc/PID/maps (the eBPF profiler's "map the address space once").
 * Returns 0 or -errno: -ESRCH no such process, -EACCES/-EPERM. */
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

/* Parses one line of /proc/PID/maps (or of a saved copy of it) in place
 * into *out, as far as out->sz (set by the caller) says: start, end,
 * offset, prot, inode, dev, and path (pointing into line, NULL when the
 * line names none; build_id NULL). Returns 0, or -EINVAL for a line of
 * another format. */
STACKSNAP_API int stacksnap_mapping__parse_line(char *line,
						struct stacksnap_mapping *out);

/* The mapping holding addr, copied into *out as far as out->sz (set by
 * the caller, e.g. STACKSNAP_OPTS) says; path owned by as, valid until its
 * mappings change. Returns 0, or -ENOENT (errno set) when none does. */
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
/* Context statistics: what the module cache made and where the time of a
 * cold run went (the CLI's --stats). */

struct stacksnap_ctx_stats {
	size_t sz;
	unsigned modules;	/* modules opened */
	unsigned tables_whole;	/* unwind tables compiled whole */
	unsigned tables_lazy;	/* tables compiled FDE by FDE, as walks need them */
	unsigned tables_cached;	/* whole tables mapped from the table cache */
	unsigned tables_stored;	/* whole tables written to the table cache */
	unsigned lazy_fdes;	/* FDEs compiled by lazy tables */
	uint64_t table_ns;	/* making tables (compile, lazy fills, cache) */
	uint64_t symtab_ns;	/* building symbol tables */
	uint64_t debug_ns;	/* finding and opening separate debug files */
	unsigned symtabs_cached; /* symbol tables mapped from the symbol cache */
	uint64_t module_ns;	/* opening the modules of a pid's mappings,
				   when a pc first falls in them */
	uint64_t dwarf_ns;	/* opening modules' DWARF for names and lines
				   (inflating a compressed debug file) */
};
/* Fills *st (as far as st->sz says). Returns 0 or -EINVAL. */
STACKSNAP_API int stacksnap_ctx__stats(const struct stacksnap_ctx *ctx,
				       struct stacksnap_ctx_stats *st);

/* Filling the cache is the slow part of a first run: uncompressed copies
 * of compressed debug files (libc6-dbg's libc: inflating and writing
 * ~40 MB) and whole unwind tables. With deferral on (and a cache_dir), a
 * context uses the compressed debug file this time and gives every module
 * a lazy table (compiled FDE by FDE as walks need it), and only notes what
 * to keep; stacksnap_ctx__write_caches then makes the noted copies and
 * compiles and keeps the whole tables (the CLI calls it in a detached
 * child after printing). write_caches returns how many files it wrote, or
 * -errno; pending_cache_writes says how many are noted. */
STACKSNAP_API void stacksnap_ctx__defer_cache_writes(struct stacksnap_ctx *ctx,
						     bool on);
STACKSNAP_API unsigned stacksnap_ctx__pending_cache_writes(const struct stacksnap_ctx *ctx);
STACKSNAP_API int stacksnap_ctx__write_caches(struct stacksnap_ctx *ctx);

/* The cache directory's rules, for a caller's own cache files (the CLI's
 * kernel symbols): a file is used only when it is a regular file owned by
 * the user and not writable by others; files are written whole (a private
 * temporary file, then renamed) in directories created 0700. open returns
 * a read-only file descriptor, or -errno (-EPERM: the file breaks a rule,
 * *why says which; -ENOENT: absent). write returns 0 or -errno. */
STACKSNAP_API int stacksnap_cache__open(const char *path, const char **why);
STACKSNAP_API int stacksnap_cache__write(const char *path, const void *data,
					 size_t len);

/* ------------------------------------------------------------------ */
/* In-process backtrace: the calling thread's own stack, for tracers and
 * profilers that record a call stack inside the traced program (a
 * tracepoint, a SIGPROF handler, an allocation hook, a crash handler).
 * docs/inproc.md has the design and the measurements.
 *
 * Guarantees of stacksnap_backtrace and stacksnap_backtrace_ucontext:
 *  - async-signal-safe and reentrant: they may be called from a signal
 *    handler, and a signal arriving while one runs, in the same thread,
 *    may take its own backtrace (all state is on the caller's stack or in
 *    read-only published tables);
 *  - thread-safe, with no lock of any kind (not the loader's: modules are
 *    found with glibc's lock-free _dl_find_object, never dl_iterate_phdr);
 *  - no malloc; the first walk to meet a module without a table maps its
 *    16 KiB row cache (one mmap, once per module: a single system call
 *    with no user-space lock, which Linux makes safe in a handler although
 *    POSIX does not list it); errno is preserved;
 *  - no system call on the warm path (but two rt_sigprocmask around a
 *    walk in a handler on a small alternate stack: see stack use below).
 *    The first walk on each stack of a
 *    thread (its stack, a sigaltstack) reads /proc/self/maps once
 *    (open/read/close, async-signal-safe) to learn the stack's bounds,
 *    kept in initial-exec TLS (the only TLS used);
 *  - bounded time and no fault on a corrupt stack: every stack read is
 *    checked against the stack mappings, the stack pointer must move up
 *    at each step (signal frames excepted, at most 64 of them), at most
 *    max frames are written, and DWARF interpretation is bounded;
 *  - no guesses: a frame is added only from CFI (.eh_frame) or an
 *    rt_sigreturn frame; the walk stops at the first pc without CFI
 *    (frame pointers are not followed);
 *  - stack use: on an ordinary stack about 1 KiB warm, up to ~16 KiB on
 *    a cold path (the first read of /proc/self/maps, interpreting
 *    .eh_frame, a lazy binding of a libc function). In a handler on an
 *    alternate signal stack with less than 24 KiB left (a crash
 *    handler's), stacksnap_backtrace_ucontext uses at most
 *    STACKSNAP_BACKTRACE_STACK_USE bytes of it on every path: the walk
 *    runs on one of 32 side stacks in the library's data, with signals
 *    blocked meanwhile (two rt_sigprocmask calls). The minimum alternate
 *    stack is the kernel's signal frame (getauxval(AT_MINSIGSTKSZ), 3.3
 *    KiB with AVX-512 state) + the handler's own frames +
 *    STACKSNAP_BACKTRACE_STACK_USE: glibc's classic SIGSTKSZ (8 KiB) is
 *    enough on x86_64 without AMX (docs/inproc.md).
 * Every module is walked from compact rows (the fast path): rows from a
 * table compiled by stacksnap_backtrace_prepare(), or, without one
 * (including modules dlopen()ed later), from a row cache the walks fill
 * themselves (each row interpreted once from .eh_frame through
 * .eh_frame_hdr); both give the same frames. Tables are never freed (a module
 * unloaded and reloaded at the same address reuses its table). A module
 * dlclose()d while frames of its code are still on the walking thread's
 * stack is a use-after-unload in the program, as for any unwinder. */

/* The most stack a walk uses in a handler on a small alternate signal
 * stack (measured: ~300 bytes; docs/inproc.md). */
#define STACKSNAP_BACKTRACE_STACK_USE 1024

/* Writes the return addresses of the calling function's stack into
 * ips[0..max), innermost first: ips[0] is the return address into the
 * caller of stacksnap_backtrace (as glibc's backtrace() gives it).
 * Returns the number written (>= 1 when max >= 1), or -EINVAL. */
STACKSNAP_API int stacksnap_backtrace(void **ips, int max);

/* The same from a signal handler's interrupted context (its third
 * argument, a ucontext_t *): ips[0] is the interrupted pc (exact, not a
 * return address), then its callers. */
STACKSNAP_API int stacksnap_backtrace_ucontext(const void *ucontext,
					       void **ips, int max);

/* Optional set-up, outside signal context (it allocates and takes a
 * lock): compiles the unwind table of every module loaded now that has
 * none yet, and publishes them for the walks. Never needed for
 * correctness nor for the fast path (docs/inproc.md): it only makes the
 * misses of a module's row cache a binary search instead of an
 * interpretation of .eh_frame.
 * Returns the number of tables added, or -errno. */
STACKSNAP_API int stacksnap_backtrace_prepare(void);

struct stacksnap_backtrace_stats {
	size_t sz;
	uint64_t tables;		/* tables published by prepare */
	uint64_t interpreted_frames;	/* frames walked by interpreting
					   .eh_frame (no table yet) */
	size_t :0;
};

/* Counters of the in-process backtrace, as far as st->sz says. Returns 0
 * or -EINVAL. */
STACKSNAP_API int
stacksnap_backtrace_stats(struct stacksnap_backtrace_stats *st);

/* ------------------------------------------------------------------ */
/* The attached walker: stays attached to processes and walks their
 * threads as often as wanted (docs/walker.md). One tracer thread owns
 * every ptrace call and handles what needs no decision at once (a new
 * thread, a thread exit, a signal to pass on, a fork child to let go), so
 * a target never waits for the caller; events are queued, the
 * notification fd becomes readable, and stacksnap_walker__handle_events()
 * delivers them. Several targets share one walker and one fd.
 *
 *   w = stacksnap_walker__new(ctx, NULL);
 *   t = stacksnap_walker__attach(w, pid);
 *   poll on stacksnap_walker__fd(w), then stacksnap_walker__handle_events(w,
 *   false, on_event, me); stacksnap_target__walk(t, NULL, 0, uw, on_stack,
 *   me, NULL) whenever wanted; stacksnap_target__detach(t);
 *
 * Threads are seized (PTRACE_SEIZE), never SIGSTOPped: if the caller dies
 * the kernel detaches them and they run on. A target that is the caller's
 * own child is reaped by the walker (its exit status comes in the EXIT
 * event). Code mappings are followed by reading /proc/PID/maps every
 * maps_poll_ms (no breakpoint: a dlopen never stops the target). The log
 * callback may be called from the walker's thread. */

struct stacksnap_walker;
struct stacksnap_target;

struct stacksnap_walker_opts {
	size_t sz;
	unsigned maps_poll_ms;	/* how often code mappings are compared;
				   0: 100 */
	unsigned stop_timeout_ms; /* wait for a thread to stop; 0: 1000 */
	size_t stack_size;	/* bytes copied per thread from rsp up (as
				   the snapshot); 0: 256 KiB */
	unsigned max_frames;	/* frames per walked thread; 0: 1024 */
	size_t :0;
};

enum stacksnap_event_type {
	STACKSNAP_EVENT_THREAD_CREATE = 1, /* tid is new */
	STACKSNAP_EVENT_THREAD_EXIT,	   /* tid exited; status */
	STACKSNAP_EVENT_LIBRARY_LOAD,	   /* a code mapping of path appeared */
	STACKSNAP_EVENT_LIBRARY_UNLOAD,	   /* ... disappeared */
	STACKSNAP_EVENT_SIGNAL,		   /* signo came to tid (passed on) */
	STACKSNAP_EVENT_FORK,		   /* tid forked child (not followed) */
	STACKSNAP_EVENT_EXEC,		   /* the process ran execve() */
	STACKSNAP_EVENT_EXIT,		   /* the process exited; status */
};

/* One event. Strings are valid during the callback only. */
struct stacksnap_event {
	enum stacksnap_event_type type;
	struct stacksnap_target *target;
	pid_t pid, tid;
	int signo;		/* SIGNAL */
	pid_t child;		/* FORK */
	int status;		/* THREAD_EXIT, EXIT: a wait status */
	const char *path;	/* LIBRARY_*: the mapped file */
	uint64_t start, end;	/* LIBRARY_*: the code mapping */
	uint64_t time_ns;	/* CLOCK_MONOTONIC when the walker saw it */
};

/* Returns 0 to go on, non-zero to stop delivering (the rest stay queued). */
typedef int (*stacksnap_event_fn)(void *user, const struct stacksnap_event *ev);

/* Starts the walker's tracer thread. NULL and errno set on failure. */
STACKSNAP_API struct stacksnap_walker *
stacksnap_walker__new(struct stacksnap_ctx *ctx,
		      const struct stacksnap_walker_opts *opts);
/* Detaches every target (they run on) and stops the tracer thread. */
STACKSNAP_API void stacksnap_walker__free(struct stacksnap_walker *w);
/* An eventfd, readable while events are queued (for poll/epoll). */
STACKSNAP_API int stacksnap_walker__fd(const struct stacksnap_walker *w);
/* Delivers the queued events to cb, first bringing the address spaces up
 * to date with the code mappings. With block, waits for at least one
 * event (returns 0 at once when no target is attached). Returns the
 * number delivered, or -errno. */
STACKSNAP_API int stacksnap_walker__handle_events(struct stacksnap_walker *w,
						  bool block,
						  stacksnap_event_fn cb,
						  void *user);

/* Seizes every thread of pid, and those it creates from then on. NULL and
 * errno set: ESRCH, EPERM, EBUSY (traced by someone else), ECHILD (a
 * zombie), EINVAL (a kernel thread); the log says which. */
STACKSNAP_API struct stacksnap_target *
stacksnap_walker__attach(struct stacksnap_walker *w, pid_t pid);
/* Lets the target run on untraced (resuming what pause paused; a thread
 * stopped by job control stays stopped) and frees the handle, also after
 * the target has terminated. Returns 0 or -errno (the handle is freed). */
STACKSNAP_API int stacksnap_target__detach(struct stacksnap_target *t);
STACKSNAP_API pid_t stacksnap_target__pid(const struct stacksnap_target *t);
/* true once the process has exited or was killed (seen by the walker). */
STACKSNAP_API bool stacksnap_target__is_terminated(const struct stacksnap_target *t);
/* Stops thread tid, or every thread with tid 0 (threads created later
 * too), until resume(); returns once they are stopped. 0 or -errno
 * (-ESRCH: no such thread, -ETIMEDOUT: not stopped in time). */
STACKSNAP_API int stacksnap_target__pause(struct stacksnap_target *t, pid_t tid);
/* Resumes what pause() stopped (tid 0: every paused thread). */
STACKSNAP_API int stacksnap_target__resume(struct stacksnap_target *t, pid_t tid);
/* The thread ids as the walker knows them now, up to max; returns the
 * count (which may exceed max). */
STACKSNAP_API int stacksnap_target__threads(struct stacksnap_target *t,
					    pid_t *tids, size_t max);
/* The target's address space (owned by t), current as of the last walk
 * or handle_events(). */
STACKSNAP_API struct stacksnap_addrspace *
stacksnap_target__addrspace(struct stacksnap_target *t);

/* One walked thread, as stacksnap_target__walk() hands it over. */
struct stacksnap_walked_thread {
	pid_t tid;
	int error;		/* enum stacksnap_thread_error */
	bool paused;		/* stays paused by pause() */
	const struct stacksnap_regs *regs;
	const struct stacksnap_frame *frames;
	size_t nframes;
	enum stacksnap_end end;
	/* Its Python frames (read in the same instant) or a JVM's Java
	 * frames (named from its metadata just after), merged into frames
	 * (native_index); NULL when none. Valid during the callback. */
	const struct stacksnap_runtime_frame *rframes;
	size_t nrframes;
	/* The runtime's name of the thread, as the dump says it: a JVM's
	 * (its java.lang.Thread's) or Python's (its threading.Thread's); or
	 * NULL (none, or not read). Valid during the callback. */
	const char *rname;
	enum stacksnap_runtime rname_runtime; /* whose name rname is */
};

typedef int (*stacksnap_walk_fn)(void *user,
				 const struct stacksnap_walked_thread *th);

struct stacksnap_walk_stats {
	size_t sz;
	uint64_t stopped_ns;	/* first thread asked to stop .. last resumed */
	uint64_t walk_ns;	/* the whole call */
	unsigned threads;	/* threads captured */
	size_t bytes_copied;
	size_t :0;
};

/* Walks threads tids[0..ntids) (ntids 0: every thread, at one instant):
 * stops them (those the user paused are already), copies registers and
 * stacks, lets them run, then unwinds each from its copy with uw and
 * calls cb (which may stop the walk by returning non-zero). Returns the
 * number of threads handed to cb, or -errno. stats may be NULL. A JVM
 * target registers with uw, once, the stepper of its compiled Java
 * frames (their Java frames come in rframes): uw must not be used after
 * t is detached. */
STACKSNAP_API int stacksnap_target__walk(struct stacksnap_target *t,
					 const pid_t *tids, size_t ntids,
					 struct stacksnap_unwinder *uw,
					 stacksnap_walk_fn cb, void *user,
					 struct stacksnap_walk_stats *stats);

/* ------------------------------------------------------------------ */
/* Frame steppers: the user's own, among the built-in ones.
 *
 * Built-in steppers are tried in priority order, highest first: signal
 * frame (STACKSNAP_PRIO_SIGNAL), compiled CFI (STACKSNAP_PRIO_CFI), frame
 * pointer (STACKSNAP_PRIO_FP), stack scan (STACKSNAP_PRIO_SCAN, opt-in);
 * the bottom of the stack is recognised by every one of them (CFI's
 * "return address undefined", a return address of 0). A user stepper with
 * a priority between two built-ins is tried between them; one above
 * STACKSNAP_PRIO_CFI sees every frame (the batch fast path then steps
 * aside for it). */
#define STACKSNAP_PRIO_SIGNAL 500
#define STACKSNAP_PRIO_CFI 400
#define STACKSNAP_PRIO_FP 300
#define STACKSNAP_PRIO_SCAN 100
/* The analysis stepper (docs/steppers.md): between CFI and frame
 * pointer; it answers only where it followed rsp from the entry. */
#define STACKSNAP_PRIO_ANALYSIS 350

/* What a stepper says of a frame. */
enum stacksnap_step_result {
	STACKSNAP_STEPPER_NOT_MINE = 0, /* try the next stepper */
	STACKSNAP_STEPPER_CALLER = 1,	/* *caller holds the caller's registers
					   (rip and rsp at least; rsp is the
					   frame's CFA) */
	STACKSNAP_STEPPER_BOTTOM = 2,	/* the outermost frame: the walk is
					   complete */
};

/* A stepper: from one frame's registers (exact_pc: frame 0 or a frame
 * interrupted by a signal, else a return address, whose call is at
 * rip - 1) and the target's memory (stacksnap_mem__read), the caller's
 * registers. Returns an enum stacksnap_step_result, or -errno when memory
 * could not be read (the walk ends: stack memory unreadable). */
typedef int (*stacksnap_stepper_fn)(void *user, const struct stacksnap_regs *regs,
				    bool exact_pc, struct stacksnap_mem *mem,
				    struct stacksnap_regs *caller);

struct stacksnap_stepper_opts {
	size_t sz;
	const char *name;	/* for stacksnap_unwinder__stepper_name(); copied */
	stacksnap_stepper_fn step;
	void *user;		/* passed to step */
	int priority;		/* STACKSNAP_PRIO_* scale; ties: after built-ins */
	enum stacksnap_trust trust; /* given to its frames; 0 means CFI */
	size_t :0;
};

/* Registers a stepper with uw. Returns its id (>= 1, what its frames carry
 * in user_stepper), or -errno (-E2BIG: 16 already). */
STACKSNAP_API int stacksnap_unwinder__add_stepper(struct stacksnap_unwinder *uw,
						  const struct stacksnap_stepper_opts *opts);
/* The name of the stepper that produced frame: a user stepper's name, or
 * stacksnap_stepper__str() of a built-in. */
STACKSNAP_API const char *
stacksnap_unwinder__stepper_name(const struct stacksnap_unwinder *uw,
				 const struct stacksnap_frame *frame);

/* ------------------------------------------------------------------ */
/* Non-stop capture: how a snapshot was taken. Threads asleep in the
 * kernel are read by a BPF task iterator without stopping them; a thread
 * found to have run meanwhile (its context-switch counters moved, or it
 * was on a CPU) and every running thread are interrupted and read under
 * ptrace. The snapshot is consistent at the instant the last interrupted
 * thread stopped (docs/nonstop-capture.md). */

struct stacksnap_nonstop_stats {
	size_t sz;
	bool nonstop;		/* the non-stop path was taken; false: every
				   thread was stopped (freeze_all, hold, or
				   no BPF: see reason) */
	const char *reason;	/* why not non-stop ("" when it was); owned
				   by the snapshot */
	unsigned read_nonstop;	/* threads read without stopping them */
	unsigned interrupted;	/* threads stopped with PTRACE_INTERRUPT */
	unsigned witness_moved;	/* of the first, found to have run before
				   the final check: interrupted instead */
	unsigned rounds;	/* iterator runs after the first: reads
				   again, then final witness checks */
	unsigned extended;	/* stacks deeper than one BPF copy, completed
				   by a read after the thaw */
	uint64_t iter_ns;	/* the iterator runs before the freeze
				   (registers, copies, reads again) */
	uint64_t check_ns;	/* the final witness checks */
	unsigned reread;	/* threads read again non-stop before the
				   freeze, after they ran or were on a CPU */
	uint64_t load_ns;	/* loading the task iterator and its warm-up
				   run (0: not tried), also when the capture
				   then stopped every thread */
	size_t :0;
};

/* Reads more of the stack of thread i (stacksnap_snapshot__thread) after
 * the capture, up to len bytes from its stack_base (at most to the top of
 * its stack), for a walk that ended with STACKSNAP_END_STACK_COPY: only for
 * a thread read non-stop, and only if it has not run since (its witness is
 * checked after the read), so the bytes are those of the snapshot's
 * instant. The thread's stack/stack_len are updated (earlier pointers stay
 * valid). Returns 0; -ESTALE when it has run (nothing changes); -EINVAL
 * when it was not read non-stop; -ESRCH, -EFAULT, -ENOMEM. */
STACKSNAP_API int stacksnap_snapshot__extend(struct stacksnap_snapshot *snap,
					     size_t i, size_t len);

/* Fills *st as far as st->sz says. Returns 0 or -EINVAL. */
STACKSNAP_API int
stacksnap_snapshot__nonstop_stats(const struct stacksnap_snapshot *snap,
				  struct stacksnap_nonstop_stats *st);

/* ------------------------------------------------------------------ */
/* Captures you can keep: snapshot files (written from a live capture,
 * compact and without the data words of the stacks) and ELF core dumps,
 * read back as threads + an address space + memory, unwound and
 * symbolized by the same engine. docs/snapshot-format.md has the format. */

/* How a snapshot file stores each thread's stack copy. Registers other
 * than rip and rsp are kept, under the compact encodings, only when they
 * point into code or into the thread's stack (else stored as 0). */
enum stacksnap_stack_encoding {
	STACKSNAP_ENCODING_DEFAULT = 0,	/* the library's choice (see the doc) */
	/* The words that point into an executable mapping or into the
	 * thread's stack; every other word is zeroed (run-length encoded). */
	STACKSNAP_ENCODING_POINTERS = 1,
	/* The words the unwinder read when the capture was unwound at save
	 * time, plus the words between the first frame's sp and the last
	 * frame's CFA that another unwinder (gdb, libdw) may read there:
	 * return addresses and saved registers; of both, only those that
	 * point into code or the stack (a spilled register holding data may
	 * be a secret, and cannot steer a walk). Nothing beyond the last
	 * frame. */
	STACKSNAP_ENCODING_EXACT = 2,
	/* Every byte of the copy (large; data words and secrets included). */
	STACKSNAP_ENCODING_FULL = 3,
};

struct stacksnap_wait;		/* "Waits", below */
struct stacksnap_wait_owner;

struct stacksnap_save_opts {
	size_t sz;
	enum stacksnap_stack_encoding encoding;
	/* How the capture is unwound for ENCODING_EXACT; give the options
	 * the reader will unwind with (stacksnap_unwind_opts' fields). */
	unsigned max_frames;
	bool stack_scan;
	/* What the threads wait for (docs/waits.md), kept in the file's
	 * WAITS section for `show`: waits[i] is thread wait_tids[i]'s, i <
	 * nwaits; the deadlocks: cycle i is deadlock_members
	 * [deadlock_start[i], deadlock_start[i + 1]), i < ndeadlocks. NULL, 0:
	 * no WAITS section. */
	const pid_t *wait_tids;
	const struct stacksnap_wait *const *waits;
	size_t nwaits;
	const struct stacksnap_wait_owner *deadlock_members;
	const size_t *deadlock_start;
	size_t ndeadlocks;
	size_t :0;
};

/* Writes the capture snap of the process whose address space is as (the
 * one it was captured with) to a snapshot file at path (written to a
 * temporary name, then renamed): per thread its tid, name, state,
 * registers and compact stack; the executable mappings with paths,
 * offsets, build-ids and the vDSO image; pid, command line, time, kernel,
 * stacksnap version. Returns 0 or -errno (the log names the problem). */
STACKSNAP_API int stacksnap_snapshot__save(const struct stacksnap_snapshot *snap,
					   struct stacksnap_addrspace *as,
					   const char *path,
					   const struct stacksnap_save_opts *opts);

/* A capture read back from a file. */
struct stacksnap_saved;

struct stacksnap_saved_opts {
	size_t sz;
	/* Cores: the main executable, when its path in the core is not
	 * where it is now (as eu-stack --executable and gdb's first
	 * argument). NULL: the path the core names. */
	const char *exe;
	size_t :0;
};

struct stacksnap_saved_info {
	size_t sz;
	pid_t pid;
	uint64_t time_ns;	/* wall-clock time of the capture (0 unknown) */
	const char *cmdline;	/* arguments separated by spaces ("" unknown) */
	const char *kernel;	/* uname release of the capturing host */
	const char *version;	/* stacksnap version that wrote it */
	enum stacksnap_stack_encoding encoding; /* 0 for cores */
	unsigned format_version; /* snapshot file: major * 100 + minor */
	uint64_t freeze_ns;	/* as the capture's statistics said */
	uint64_t bytes_copied;
	/* Events files: CLOCK_REALTIME - CLOCK_MONOTONIC of the capturing
	 * host when the trace began (0 unknown: a file of an older writer),
	 * its boot id and host name ("" unknown); what a CTF trace written
	 * from the file needs to be the one written live. */
	int64_t clock_offset_ns;
	const char *boot_id;
	const char *hostname;
	size_t :0;
};

/* Opens a snapshot file (stacksnap PID --save). The file is checked whole
 * (magic, version, checksum, every length before use); errors name the
 * file and the offset: NULL and errno EINVAL (corrupt), ENOTSUP (a newer
 * major version), or the open error. Modules are found as
 * stacksnap_saved__open_core says. */
STACKSNAP_API struct stacksnap_saved *
stacksnap_saved__open(struct stacksnap_ctx *ctx, const char *path,
		      const struct stacksnap_saved_opts *opts);
/* The same over bytes in memory (copied). */
STACKSNAP_API struct stacksnap_saved *
stacksnap_saved__open_mem(struct stacksnap_ctx *ctx, const void *bytes,
			  size_t len, const struct stacksnap_saved_opts *opts);
/* Opens an ELF core dump: threads from NT_PRSTATUS, memory from the
 * PT_LOAD segments, mappings from NT_FILE, build-ids from the mapped ELF
 * headers in the core. A module's file is used at its recorded path when
 * its build-id matches, else looked up by build-id in the debug
 * directories and the cache, else through debuginfod (when the context's
 * debuginfod option is set); what is not found is named with its
 * build-id in the log and its frames stay addresses. */
STACKSNAP_API struct stacksnap_saved *
stacksnap_saved__open_core(struct stacksnap_ctx *ctx, const char *path,
			   const struct stacksnap_saved_opts *opts);
STACKSNAP_API int stacksnap_saved__info(const struct stacksnap_saved *s,
					struct stacksnap_saved_info *info);
STACKSNAP_API size_t stacksnap_saved__thread_count(const struct stacksnap_saved *s);
/* Thread i: stack (possibly NULL) and regs as saved. */
STACKSNAP_API const struct stacksnap_thread *
stacksnap_saved__thread(const struct stacksnap_saved *s, size_t i);
/* The address space (owned by s). */
STACKSNAP_API struct stacksnap_addrspace *
stacksnap_saved__addrspace(const struct stacksnap_saved *s);
/* Memory beyond the stack copies (a core's segments), to pass to
 * stacksnap_mem__set_fallback; NULL when there is none (snapshot files
 * hold the stacks only). Owned by s. */
STACKSNAP_API struct stacksnap_mem *
stacksnap_saved__memory(const struct stacksnap_saved *s);
/* What thread tid waited for, as a snapshot file's WAITS section kept it
 * (a dump's --save), or NULL (the file kept none, or not for tid).
 * Strings and arrays live as long as s. */
STACKSNAP_API const struct stacksnap_wait *
stacksnap_saved__wait(const struct stacksnap_saved *s, pid_t tid);
/* The deadlocks the WAITS section kept: cycle i is
 * (*members)[(*start)[i], (*start)[i + 1]), i < *n. 0, or -ENOENT when
 * the file kept no waits (an older file, a core). */
STACKSNAP_API int stacksnap_saved__deadlocks(const struct stacksnap_saved *s,
					     const struct stacksnap_wait_owner **members,
					     const size_t **start, size_t *n);
STACKSNAP_API void stacksnap_saved__free(struct stacksnap_saved *s);
/* A snapshot file's language-runtime frames, kept named by --save: as
 * stacksnap_snapshot__runtime and stacksnap_snapshot__runtime_frames do
 * for a live capture (thread i of the file, merged against the native
 * frames unwound from its saved stack). Files without them: none. */
STACKSNAP_API int stacksnap_saved__runtime(const struct stacksnap_saved *s,
					   struct stacksnap_runtime_info *out);
STACKSNAP_API const char *
stacksnap_saved__runtime_thread_name(const struct stacksnap_saved *s, size_t i);
STACKSNAP_API int stacksnap_saved__runtime_frames(const struct stacksnap_saved *s,
						  size_t i,
						  const struct stacksnap_frame *native,
						  size_t nnative,
						  struct stacksnap_runtime_frame *out,
						  size_t max, const char **end);
/* Registers with uw the steppers a snapshot file's runtime needs for
 * walking its saved stacks as the capture walked them (a JVM's compiled
 * Java frames: the capture's steps, kept by --save). For an events file
 * (trace --save), the stepper replays the steps of the event last read
 * by stacksnap_saved__event(). uw must not be used after s is freed.
 * Returns how many were registered (0: none), or -errno. */
STACKSNAP_API int stacksnap_saved__runtime_steppers(const struct stacksnap_saved *s,
						    struct stacksnap_unwinder *uw);
/* eBPF captures: records made by a BPF program (stacksnap.bpf.h: the
 * user registers and a copy of the user stack at a tracepoint, uprobe or
 * perf event), turned into frames here. libdw-bpf's shape: the process
 * table above is the per-process address-space cache (once per process,
 * shared by its threads, kept current by fork/exec/exit and a re-read of
 * /proc/PID/maps when a pc falls outside every known mapping). */

#ifndef STACKSNAP_CAPTURE_REGS
#define STACKSNAP_CAPTURE_REGS 0x1    /* regs[] are the user registers */
#define STACKSNAP_CAPTURE_SHORT 0x2   /* the copy ended early: a page could
					 not be read */
#define STACKSNAP_CAPTURE_COMPACT 0x4 /* stack bytes are compacted (per 64
					 words: a mask of the words kept, then
					 them); stack_len is the expanded size */
#define STACKSNAP_CAPTURE_KERNEL 0x8  /* registers saved at the last entry
					 from user mode (tracepoint, sample
					 taken in the kernel) */
#endif

/* The capture header as the BPF program writes it (stacksnap.bpf.h has
 * the same struct in BPF types). Invariant: stack_len <= wanted; the
 * stack bytes (data_len of them as stored) are wherever the record's
 * owner put them, passed separately. */
struct stacksnap_capture {
	uint32_t flags;		/* STACKSNAP_CAPTURE_* */
	uint32_t data_len;	/* bytes stored for the stack */
	uint64_t regs[STACKSNAP_REG_COUNT]; /* DWARF order (enum stacksnap_reg) */
	uint64_t stack_start;	/* user rsp when captured */
	uint32_t stack_len;	/* bytes of stack covered from stack_start */
	uint32_t wanted;	/* bytes the program asked for */
};
#ifndef __cplusplus
_Static_assert(sizeof(struct stacksnap_capture) == 160,
	       "struct stacksnap_capture is shared with stacksnap.bpf.h");
#endif

/* The executable ranges of a process, as a BPF program that compacts
 * stacks in the kernel (stacksnap_compact in stacksnap.bpf.h) reads them
 * from a map: the caller keeps them current (after exec, dlopen).
 * Invariant: start[0..n) sorted, ranges disjoint. Same layout as in
 * stacksnap.bpf.h. */
#ifndef STACKSNAP_EXEC_RANGES
#define STACKSNAP_EXEC_RANGES 64
#endif
struct stacksnap_exec_ranges {
	uint32_t n;
	uint32_t pad;
	uint64_t start[STACKSNAP_EXEC_RANGES];
	uint64_t end[STACKSNAP_EXEC_RANGES];
};
/* Fills r from /proc/PID/maps (adjacent ranges merged). Returns 0,
 * -ESRCH when pid is gone, -E2BIG when it has more ranges than r holds
 * (then its stacks cannot be compacted). */
STACKSNAP_API int stacksnap_exec_ranges__from_pid(struct stacksnap_exec_ranges *r,
						  pid_t pid);

/* Unwinds one capture of thread tid of pid against pid's mappings in
 * procs (stacksnap_procs__attach_pid once per process first, then
 * fork/comm/exit as events come). When the walk ends at a pc outside
 * every known mapping (a library loaded since), /proc/PID/maps is read
 * again (at most every 10 ms per process) and the walk retried. Returns
 * the number of frames and sets *end, or -errno. */
STACKSNAP_API int
stacksnap_procs__unwind_capture(struct stacksnap_procs *procs,
				struct stacksnap_unwinder *uw, pid_t pid,
				const struct stacksnap_capture *cap,
				const void *stack, struct stacksnap_frame *frames,
				size_t max, enum stacksnap_end *end);

/* ------------------------------------------------------------------ */
/* Tracing with eBPF: the call stack at kernel or user events of chosen
 * processes (`stacksnap trace`). Needs root (or CAP_BPF + CAP_PERFMON)
 * and a kernel with BTF. Flow:
 *
 *   tr = stacksnap_trace__new(ctx, &opts);
 *   stacksnap_trace__add_event(tr, "syscalls:sys_enter_write");
 *   stacksnap_trace__start(tr);          (load and attach)
 *   stacksnap_trace__follow(tr, pid);    (its threads, and its children)
 *   while (...) stacksnap_trace__poll(tr, 100, on_event, user);
 *   stacksnap_trace__stats(tr, &st);     (captured, unwound, lost)
 *   stacksnap_trace__free(tr);           (detaches everything)
 */

struct stacksnap_trace;

struct stacksnap_trace_opts {
	size_t sz;
	/* Bytes of user stack copied per event; 0: 16 KiB (what the test
	 * programs, C++ and signal frames included, need to reach the bottom;
	 * perf's default of 8 KiB truncates main threads with large frames).
	 * At most 64 KiB. */
	size_t stack_size;
	size_t ring_size;	/* ring buffer bytes (a power of two); 0: 16 MiB */
	bool no_inherit;	/* do not follow new processes (threads are) */
	bool by_tid;		/* follow() names threads, not processes */
	unsigned max_frames;	/* per event; 0: 256 */
	/* Short library names in uprobe specs ("u:libc:malloc") are looked up
	 * in this process's mappings first. 0: none. */
	pid_t pid_hint;
	/* Where stacks are unwound (STACKSNAP_TRACE_UNWIND_*): from a stack
	 * copy in user space (default), inside the kernel over unwind tables
	 * in BPF maps (no stack bytes leave the kernel; see docs/kunwind.md),
	 * or both for each event, compared. */
	unsigned unwind;
	/* Compact each stack in the kernel: only words pointing into the
	 * process's code or into the copied stack leave it (fewer bytes, and
	 * data such as keys on the stack stay in the kernel); see
	 * docs/trace.md for what it costs and what it changes. */
	bool compact;
	/* Do not look for a Python interpreter in the traced processes nor
	 * walk their Python frames (see stacksnap_trace_event.rframes). */
	bool no_runtime;
	/* Trace every process of the system but the caller's (-a): none
	 * need be followed; each is known from its first record or event on
	 * (its mappings read then, kept by the kernel's records after). */
	bool all_processes;
	size_t :0;
};

#define STACKSNAP_TRACE_UNWIND_USER 0
#define STACKSNAP_TRACE_UNWIND_KERNEL 1
#define STACKSNAP_TRACE_UNWIND_BOTH 2

STACKSNAP_API struct stacksnap_trace *
stacksnap_trace__new(struct stacksnap_ctx *ctx,
		     const struct stacksnap_trace_opts *opts);
/* Adds the events spec names (before start): a tracepoint "CAT:NAME"
 * (globs allowed in both: "syscalls:sys_enter_*"), a uprobe
 * "u:PATH:FUNC" or uretprobe "ur:PATH:FUNC" (PATH an executable or
 * library, or a library's short name: "libc"). Returns the number of
 * events added, or -ENOENT (unknown event, file or function; the log says
 * which), -EINVAL (malformed spec). */
STACKSNAP_API int stacksnap_trace__add_event(struct stacksnap_trace *tr,
					     const char *spec);
/* Adds timed sampling at hz per CPU (software cpu-clock). */
STACKSNAP_API int stacksnap_trace__add_sampling(struct stacksnap_trace *tr,
						unsigned hz);
/* Checks rights and BTF, loads the programs and attaches every event.
 * -EPERM without rights, -ENOTSUP without BTF or a needed kernel feature
 * (the log names the fix). Nothing is captured until follow(). */
STACKSNAP_API int stacksnap_trace__start(struct stacksnap_trace *tr);
/* Traces process pid (or, with by_tid, thread pid) from now on; its
 * address space is read from /proc. -ESRCH when it does not exist. */
STACKSNAP_API int stacksnap_trace__follow(struct stacksnap_trace *tr,
					  pid_t pid);

/* One event, unwound. Pointers are valid during the callback only. */
struct stacksnap_trace_event {
	unsigned event;		/* index of the event (order added) */
	const char *name;	/* "syscalls:sys_enter_write", "u:/lib/..:malloc" */
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	pid_t pid, tid;
	unsigned cpu;
	const char *comm;	/* thread name at the event */
	const struct stacksnap_frame *frames;
	int nframes;		/* 0 when the walk failed at once */
	enum stacksnap_end end;
	struct stacksnap_addrspace *as; /* for stacksnap_addrspace__symbolize */
	const struct stacksnap_capture *capture;
	const void *stack;	/* capture->data_len bytes */
	const void *raw;	/* the tracepoint's record (NULL for others) */
	size_t raw_len;
	size_t record_len;	/* bytes the event took in the ring buffer */
	/* The in-kernel walk (unwind KERNEL or BOTH): its pcs (bit 63 set on
	 * exact pcs), why it ended, and in BOTH mode how it compares with
	 * the user-space walk of the copy (STACKSNAP_TRACE_AGREE_*). In
	 * KERNEL mode, frames are made from these pcs. */
	const uint64_t *kernel_pcs;
	int kernel_nframes;
	const char *kernel_end;
	int agreement;
	int first_difference;	/* frame index, -1 when none */
	/* BOTH mode, when the in-kernel walk stopped where user space can
	 * go on (a row that needs DWARF evaluation, no or unusable CFI, an
	 * unreadable page): the hybrid, the kernel's frames and then the
	 * copy's walk from the registers where the kernel stopped.
	 * hybrid_nframes is -1 otherwise. */
	const struct stacksnap_frame *hybrid_frames;
	int hybrid_nframes;
	enum stacksnap_end hybrid_end;
	/* The thread's Python frames, when its process runs a CPython the
	 * trace recognised (docs/python.md): walked in the kernel at the
	 * event, named here, merged against frames as the dump merges them
	 * (native_index: the eval-loop frame each replaces; nframes: after
	 * the last). NULL/0 when none; runtime_end says why they were cut,
	 * or is NULL. */
	const struct stacksnap_runtime_frame *rframes;
	size_t nrframes;
	const char *runtime_end;
	/* A thread in a signal handler on its alternate stack: the copy of
	 * its normal stack from the interrupted sp, which the walk crossed
	 * to (stacksnap_mem__set_more); NULL/0 when none. */
	const struct stacksnap_stack_range *more_stacks;
	size_t nmore_stacks;
	/* The steps a runtime's stepper took in the user-space walk (a
	 * JVM's compiled and interpreter frames): an events file keeps
	 * them, and `show` replays them to walk the stack as the trace did
	 * without the JVM's code cache. NULL/0 when none. */
	const struct stacksnap_runtime_step *rsteps;
	size_t nrsteps;
};

#define STACKSNAP_TRACE_AGREE_SAME 0	   /* identical frames */
#define STACKSNAP_TRACE_AGREE_FALLBACK 1   /* the kernel did not know the code
					      yet: frames from the copy */
#define STACKSNAP_TRACE_AGREE_KERNEL_PREFIX 2 /* the kernel stopped earlier
						 (a DWARF row): copy continues */
#define STACKSNAP_TRACE_AGREE_USER_PREFIX 3 /* the copy ended first */
#define STACKSNAP_TRACE_AGREE_DIFFER 4	   /* a frame differs */

/* Return non-zero to stop the poll (it returns that value). */
typedef int (*stacksnap_trace_fn)(const struct stacksnap_trace_event *ev,
				  void *user);

/* Waits up to timeout_ms for events and hands each to fn (process
 * events are applied to the address spaces in order). Returns the number
 * of events handled, or -errno (-EINTR when a signal interrupted the
 * wait: call again or stop). The kernel wakes the wait only when an
 * eighth of the ring buffer is waiting or 2 ms after its last wakeup
 * (a wakeup per event would cost the traced thread more than the event):
 * give a timeout (100 ms) rather than -1; each call then reads whatever
 * is waiting, woken or not, and 0 drains what is there without waiting. */
STACKSNAP_API int stacksnap_trace__poll(struct stacksnap_trace *tr,
					int timeout_ms, stacksnap_trace_fn fn,
					void *user);
/* Detaches every program (idempotent); events already in the ring buffer
 * can still be polled. */
STACKSNAP_API void stacksnap_trace__stop(struct stacksnap_trace *tr);

struct stacksnap_trace_stats {
	uint64_t captured;	/* events the programs wrote */
	uint64_t received;	/* events handed to the callback */
	uint64_t unwound;	/* ... with at least one frame */
	uint64_t complete;	/* ... whose walk reached the bottom */
	uint64_t lost;		/* records dropped: ring buffer full */
	uint64_t short_stacks;	/* stack copies cut by an unreadable page */
	uint64_t bytes;		/* bytes of event records received */
	uint64_t rereads;	/* /proc/PID/maps read again on a miss */
	/* unwind KERNEL/BOTH: in-kernel walks, those complete, those that
	 * fell back (code whose table was not loaded yet), and in BOTH mode
	 * the events by STACKSNAP_TRACE_AGREE_* value. */
	uint64_t kernel_walks, kernel_complete, kernel_fallback;
	uint64_t agreement[5];
	size_t table_bytes;	/* kernel memory of the unwind tables */
	uint64_t python;	/* events with Python frames */
};
STACKSNAP_API void stacksnap_trace__stats(const struct stacksnap_trace *tr,
					  struct stacksnap_trace_stats *st);
/* The events lost so far (ring buffer full) by CPU: lost[c] for CPU c,
 * c < max. Returns the number of possible CPUs (entries past max are not
 * filled) or -errno. */
STACKSNAP_API int stacksnap_trace__lost_by_cpu(const struct stacksnap_trace *tr,
					       uint64_t *lost, size_t max);

/* One field of a tracepoint record, by its format file. */
struct stacksnap_trace_field {
	const char *name;
	uint64_t value;		/* integers (sign-extended when is_signed) */
	const char *str;	/* char arrays and __data_loc strings; else NULL */
	unsigned size;
	bool is_signed;
	bool is_pointer;	/* a pointer or unsigned long: shown in hex */
};
/* The fields of ev's tracepoint record (common_* fields left out), up to
 * max. Returns the count. The strings are valid during the callback. */
STACKSNAP_API int stacksnap_trace__fields(struct stacksnap_trace *tr,
					  const struct stacksnap_trace_event *ev,
					  struct stacksnap_trace_field *out,
					  size_t max);
STACKSNAP_API void stacksnap_trace__free(struct stacksnap_trace *tr);
/* Whether a trace of process pid would walk the frames of a language
 * runtime at each event: STACKSNAP_RUNTIME_PYTHON for a CPython whose
 * layout is known (docs/python.md), else STACKSNAP_RUNTIME_NATIVE; or
 * -errno (-ESRCH: no such process). */
STACKSNAP_API int stacksnap_trace__runtime_of(pid_t pid);

/* Lists what can be traced: tracepoints "CAT:NAME" matching pattern (a
 * glob; NULL: all), or with pattern "u:PATH[:GLOB]" the functions of
 * that file a uprobe can attach to. Calls fn per name (non-zero stops).
 * Returns the count, or -errno. */
STACKSNAP_API int stacksnap_trace__list(struct stacksnap_ctx *ctx,
					const char *pattern,
					int (*fn)(const char *name, void *user),
					void *user);
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
	/* A label of the sample, not code: name is its key, file its
	 * value. pprof writes it as a Sample.label; the other formats show
	 * it as a frame "KEY=VALUE" where it stands in the stack (give it
	 * outside the root). */
	STACKSNAP_KIND_LABEL,
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
	/* What the period measures, as pprof names it: "cpu" when NULL
	 * (on-CPU sampling); "wall" for samples of wall-clock time. */
	const char *period_type;
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
/* As stacksnap_stacks__add, and *id (when id is non-NULL) names the stack
 * for stacksnap_stacks__add_again: a caller that knows it sees the same
 * stack again (the same pcs of the same process) adds to it without
 * building and interning its frames. Ids stay valid until st is freed. */
STACKSNAP_API int stacksnap_stacks__add_id(struct stacksnap_stacks *st,
					   const struct stacksnap_stack_frame *frames,
					   size_t n, uint64_t count, uint64_t *id);
/* count more samples of stack id. Returns 0 or -EINVAL (not an id of st). */
STACKSNAP_API int stacksnap_stacks__add_again(struct stacksnap_stacks *st,
					      uint64_t id, uint64_t count);
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

/* Writes s to f as a JSON string ("null" when s is NULL): '"', '\\' and
 * control characters escaped, UTF-8 kept as is, and each byte that is not
 * part of valid UTF-8 (a thread name the kernel cut to 15 bytes in the
 * middle of a character) written as \ufffd, so that the output is
 * always valid JSON. The one JSON string writer of the library's and the
 * CLI's outputs. */
STACKSNAP_API void stacksnap_json_string(FILE *f, const char *s);

/* Parses "folded", "pprof", "speedscope" or "svg". Returns 0 or -EINVAL. */
STACKSNAP_API int stacksnap_stacks_format__parse(const char *name,
						 enum stacksnap_stacks_format *fmt);
/* Writes the stacks to f in format fmt. Returns 0 or -errno: when f could
 * not be written, the write's own cause (-ENOSPC, -EFBIG, -EPIPE...; -EIO
 * only when the stream gave none). */
STACKSNAP_API int stacksnap_stacks__write(const struct stacksnap_stacks *st,
					  FILE *f, enum stacksnap_stacks_format fmt,
					  const struct stacksnap_stacks_write_opts *opts);


/* ------------------------------------------------------------------ */
/* Trace events you can keep (`stacksnap trace --save FILE`): every event
 * of a trace written into the snapshot container as it comes (time,
 * pid/tid, comm, event and its fields, registers, a compact stack or the
 * in-kernel walk's pcs), with the address spaces of the traced processes
 * by generation; read back with stacksnap_saved__open and re-unwound.
 * docs/snapshot-format.md ("Events files"). */

struct stacksnap_trace_writer;

struct stacksnap_trace_writer_opts {
	size_t sz;
	/* How each event's stack is stored (as for snapshot files); EXACT
	 * unwinds it again with max_frames to know what it read. */
	enum stacksnap_stack_encoding encoding;
	unsigned max_frames;	/* the trace's (0: 256), shown walks use it */
	unsigned unwind;	/* STACKSNAP_TRACE_UNWIND_* of the trace */
	pid_t pid;		/* the process traced first (its command line) */
	/* CLOCK_REALTIME - CLOCK_MONOTONIC kept with the events (for wall-clock
	 * times: a CTF trace written from the file); pass the one a CTF trace
	 * written live uses. 0: measured now. */
	int64_t clock_offset_ns;
	/* The command line kept when pid is 0: a command the trace starts
	 * (its arguments joined by spaces), which does not run yet. */
	const char *command;
	size_t :0;
};

/* Creates path and writes the file's header. NULL and errno set (the log
 * names the problem). */
STACKSNAP_API struct stacksnap_trace_writer *
stacksnap_trace_writer__new(struct stacksnap_ctx *ctx, const char *path,
			    const struct stacksnap_trace_writer_opts *opts);
/* Appends one event as the trace delivered it (in its callback), with the
 * fields stacksnap_trace__fields gave; a new generation of the process's
 * address space is written first when its code mappings changed. Events
 * are written at least every 64 KiB and at each flush. Returns 0 or
 * -errno. */
STACKSNAP_API int stacksnap_trace_writer__add(struct stacksnap_trace_writer *w,
					      const struct stacksnap_trace_event *ev,
					      const struct stacksnap_trace_field *fields,
					      size_t nfields);
/* Records that total events were lost on cpu since the trace began (a
 * running count, stacksnap_trace__lost_by_cpu), after the events added so
 * far: a CTF trace written from the file (`show --format ctf`) carries it
 * where the live one did. Returns 0 or -errno. */
STACKSNAP_API int stacksnap_trace_writer__lost(struct stacksnap_trace_writer *w,
					       unsigned cpu, uint64_t total);
/* Writes what is buffered (a crash after it loses nothing before). */
STACKSNAP_API int stacksnap_trace_writer__flush(struct stacksnap_trace_writer *w);
/* Flushes, completes the header (length, checksum) and closes; frees w.
 * Returns 0 or -errno (the first write error of the run). */
STACKSNAP_API int stacksnap_trace_writer__close(struct stacksnap_trace_writer *w);

/* One saved event (stacksnap_saved__event). Pointers are owned by the
 * saved capture and valid until the next call. */
struct stacksnap_saved_event {
	size_t sz;
	const char *name;	/* "syscalls:sys_enter_write" */
	uint64_t time_ns;	/* CLOCK_MONOTONIC of the capturing host */
	pid_t pid, tid;
	unsigned cpu;
	const char *comm;
	const struct stacksnap_trace_field *fields;
	size_t nfields;
	uint32_t stack_bytes;	/* bytes of stack the capture covered */
	/* The copy to unwind (stack NULL: none was kept, --unwind=kernel). */
	struct stacksnap_regs regs;
	const void *stack;
	size_t stack_len;
	uint64_t stack_base;
	/* No copy (--unwind=kernel): the frames the kernel's walk gave, as
	 * the trace printed them, and why it ended. */
	const struct stacksnap_frame *frames;
	int nframes;
	enum stacksnap_end end;
	/* The in-kernel walk's pcs (KERNEL/BOTH; bit 63 on exact pcs). */
	const uint64_t *kernel_pcs;
	int kernel_nframes;
	/* The address space of the event's process at its generation. */
	struct stacksnap_addrspace *as;
	unsigned generation;	/* 1 for the first of its process */
	/* The event's Python frames as the trace named them (native_index:
	 * the frame of the unwound copy each replaces); NULL/0: none. */
	const struct stacksnap_runtime_frame *rframes;
	size_t nrframes;
	/* The thread's other stacks the copy's walk reads (its normal stack
	 * below a handler on an alternate signal stack): give them to
	 * stacksnap_mem__set_more with the copy. */
	struct stacksnap_stack_range more_stacks[STACKSNAP_MORE_STACKS];
	unsigned nmore_stacks;
	size_t :0;
};

/* A lost-events record of an events file (stacksnap_trace_writer__lost):
 * cpu had lost total events so far when the first before_event events had
 * been written. */
struct stacksnap_saved_lost {
	size_t sz;
	unsigned cpu;
	uint64_t total;
	size_t before_event;
	size_t :0;
};
/* The lost-events records of an events file, in file order (0 for other
 * captures and files of older writers), and record i. Returns 0 or
 * -EINVAL. */
STACKSNAP_API size_t stacksnap_saved__lost_count(const struct stacksnap_saved *s);
STACKSNAP_API int stacksnap_saved__lost(const struct stacksnap_saved *s, size_t i,
					struct stacksnap_saved_lost *out);

/* The number of events of a saved capture (0 for snapshots, cores). */
STACKSNAP_API size_t stacksnap_saved__event_count(const struct stacksnap_saved *s);
/* Event i as far as ev->sz says. Returns 0, -EINVAL (i out of range),
 * -ENOMEM. */
STACKSNAP_API int stacksnap_saved__event(struct stacksnap_saved *s, size_t i,
					 struct stacksnap_saved_event *ev);
/* How the saved trace unwound (its max_frames, STACKSNAP_TRACE_UNWIND_*),
 * so a reader walks the same way; 0 when not an events file. */
STACKSNAP_API unsigned stacksnap_saved__trace_max_frames(const struct stacksnap_saved *s);
STACKSNAP_API unsigned stacksnap_saved__trace_unwind(const struct stacksnap_saved *s);
/* Every distinct stack as one folded line ("outer;...;inner", the text
 * STACKSNAP_FORMAT_FOLDED writes, without the count) and its count, in the
 * folded output's order; stacks that print the same are one line. For
 * tables of the stacks (`trace --count`, `watch --top`). Stops at the
 * first non-zero return of fn, which is returned; or -errno. */
typedef int (*stacksnap_stacks_folded_fn)(const char *folded, uint64_t count,
					  void *user);
STACKSNAP_API int stacksnap_stacks__visit_folded(const struct stacksnap_stacks *st,
						 stacksnap_stacks_folded_fn fn,
						 void *user);

/* Off-CPU events of a trace (before start): two events, "off-cpu" when a
 * followed thread leaves a CPU to wait (sched_switch of a thread not
 * runnable: blocked or sleeping; not preempted, not exiting; its user
 * stack, where it waits) and "wakeup" when a followed thread is woken
 * (sched_wakeup; no stack: nframes 0; pid, tid and comm are the woken
 * thread's). The time from a thread's "off-cpu" to its next "wakeup" is
 * the time it was blocked. Returns the number of events added (2) or
 * -errno (-EEXIST when added already). */
STACKSNAP_API int stacksnap_trace__add_off_cpu(struct stacksnap_trace *tr);

/* ------------------------------------------------------------------ */
/* CTF traces (`stacksnap trace --format ctf -o DIR`, `stacksnap show
 * EVENTS_FILE --format ctf -o DIR`): a CTF 1.8 trace (a TSDL metadata file
 * and one stream file per CPU) that babeltrace2 and Trace Compass read.
 * Each event carries pid, tid, procname (comm), its call stack twice (the
 * raw user pcs as LTTng's callstack_user context, and the symbolized
 * frames: "function+0xoffset" and module), complete and end, then its
 * fields by name and type; lost events are the streams' discarded-events
 * counts. docs/ctf.md. */

struct stacksnap_ctf_writer;

struct stacksnap_ctf_writer_opts {
	size_t sz;
	/* CLOCK_REALTIME - CLOCK_MONOTONIC of the capturing host (ns): the
	 * offset of the trace's clock "monotonic", so times read as wall-clock
	 * times and line up with other tools' traces (LTTng's kernel traces
	 * use the same clock and offset). 0: measured now
	 * (stacksnap_clock_offset_ns). */
	int64_t clock_offset_ns;
	bool no_clock_offset;	/* offset 0: times stay CLOCK_MONOTONIC (for
				   events whose offset is not known) */
	/* The capturing host's boot id (/proc/sys/kernel/random/boot_id):
	 * the clock's uuid, as LTTng sets it, so babeltrace2 merges this trace
	 * with LTTng's of the same boot. NULL: this host's; "": none. */
	const char *boot_id;
	const char *hostname;	/* the trace's env.hostname; NULL: none */
	const char *kernel_release; /* env.kernel_release; NULL: none */
	unsigned sym_flags;	/* STACKSNAP_SYM_NO_DEMANGLE, _SYMTAB (LINES is
				   ignored: one name per frame) */
	size_t :0;
};

/* CLOCK_REALTIME - CLOCK_MONOTONIC now (ns), from the closest of a few
 * paired readings. */
STACKSNAP_API int64_t stacksnap_clock_offset_ns(void);

/* Creates directory dir (or reuses it: a previous trace's metadata and
 * stream files are replaced) and starts a trace there. NULL and errno
 * set (the log names the problem). */
STACKSNAP_API struct stacksnap_ctf_writer *
stacksnap_ctf_writer__new(struct stacksnap_ctx *ctx, const char *dir,
			  const struct stacksnap_ctf_writer_opts *opts);

/* One event to write: a live one (stacksnap_trace_event and its fields)
 * or a saved one unwound again. */
struct stacksnap_ctf_event {
	size_t sz;
	const char *name;	/* "syscalls:sys_enter_write", "u:PATH:FUNC" */
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	pid_t pid, tid;
	unsigned cpu;
	const char *comm;
	const struct stacksnap_trace_field *fields;
	size_t nfields;
	const struct stacksnap_frame *frames;
	int nframes;
	enum stacksnap_end end;
	struct stacksnap_addrspace *as; /* symbolizes the frames (NULL: none) */
	size_t :0;
};

/* Symbolizes ev's frames and appends it to its CPU's stream (an event
 * earlier than the last of its stream takes that one's time: a stream is
 * in time order). uprobes ("u:FILE:FUNC", "ur:FILE:FUNC") get the fields
 * "file" and "function". Returns 0 or -errno. */
STACKSNAP_API int stacksnap_ctf_writer__add(struct stacksnap_ctf_writer *w,
					    const struct stacksnap_ctf_event *ev);
/* total events lost on cpu since the trace began (a running count): when
 * it grew, the CPU's stream gets it here, after the events added so far
 * (babeltrace2 reports the loss between them and the ones before). Returns
 * 0 or -errno. */
STACKSNAP_API int stacksnap_ctf_writer__discarded(struct stacksnap_ctf_writer *w,
						  unsigned cpu, uint64_t total);
/* Writes the pending packets and the metadata: the directory then holds a
 * complete trace of the events so far. Returns 0 or -errno. */
STACKSNAP_API int stacksnap_ctf_writer__flush(struct stacksnap_ctf_writer *w);
/* Flushes and frees w (NULL allowed). Returns 0 or the first error of the
 * trace (-errno). */
STACKSNAP_API int stacksnap_ctf_writer__close(struct stacksnap_ctf_writer *w);

/* ------------------------------------------------------------------ */
/* Waits: who waits for whom (docs/waits.md). Read after a capture, from
 * the captured registers and frames of each thread asleep in the kernel
 * and from the process as it is after the thaw: what each one waits for
 * (a lock, a file, a child, a timer), who holds it, and the cycles of that
 * graph (deadlocks). Owners are read after the thaw; one that may have
 * changed since is said to (stacksnap_wait.stale), never guessed. */

enum stacksnap_wait_kind {
	STACKSNAP_WAIT_NONE = 0,	/* not asleep in a system call */
	STACKSNAP_WAIT_MUTEX,
	STACKSNAP_WAIT_RWLOCK,
	STACKSNAP_WAIT_CONDVAR,
	STACKSNAP_WAIT_SEMAPHORE,
	STACKSNAP_WAIT_FUTEX,		/* a futex of no known lock */
	STACKSNAP_WAIT_PIPE,		/* a pipe or FIFO */
	STACKSNAP_WAIT_SOCKET,
	STACKSNAP_WAIT_CHILD,		/* wait4, waitid */
	STACKSNAP_WAIT_FILE_LOCK,	/* flock, fcntl F_SETLKW */
	STACKSNAP_WAIT_POLL,		/* poll, select, epoll_wait */
	STACKSNAP_WAIT_SLEEP,		/* nanosleep, clock_nanosleep */
	STACKSNAP_WAIT_DISK,		/* uninterruptible sleep (state D) */
	STACKSNAP_WAIT_OTHER,		/* another system call */
	STACKSNAP_WAIT_JOIN,		/* pthread_join: the thread joined */
	STACKSNAP_WAIT_PYTHON_LOCK,	/* CPython threading.Lock, RLock (and
					   Condition, Event, Queue on them) */
	STACKSNAP_WAIT_GIL,		/* CPython's global interpreter lock */
	STACKSNAP_WAIT_JAVA_MONITOR,	/* a Java monitor: synchronized, or
					   Object.wait() */
	STACKSNAP_WAIT_JAVA_LOCK,	/* a java.util.concurrent park with
					   a blocker (ReentrantLock...) */
};

/* A Java monitor a thread holds ("- locked <0x...>" in jstack). */
struct stacksnap_wait_held {
	uint64_t object;	/* the object's address */
	const char *object_type; /* its class ("java.lang.Object"), NULL
				    not known */
};

/* One holder of what a thread waits for: a thread (tid), or a process as
 * a whole (tid 0: a pipe's other end, a child, a file lock's holder). */
struct stacksnap_wait_owner {
	pid_t pid;
	pid_t tid;
};

/* What one thread waits for. Strings and arrays live as long as the
 * stacksnap_waits they came from. */
struct stacksnap_wait {
	enum stacksnap_wait_kind kind;
	long syscall;		/* the system call's number; -1 unknown */
	uint64_t object;	/* the lock's (futex word's) address; 0 none */
	const char *object_name; /* its symbol ("queue_lock", "table+0x40"),
				    NULL when none names it */
	int fd;			/* the file descriptor waited on; -1 none */
	const char *file;	/* what fd is ("pipe:[1234]", a path), or the
				   fds a poll watches; NULL none */
	const char *detail;	/* the kind in words ("recursive mutex, robust",
				   "child 812 (sleep) state S", "wakes in
				   2.5 s"); NULL none */
	const char *no_owner;	/* why no holder is named (a condition
				   variable has none, the layout is not
				   known...), NULL when owners are named */
	bool stale;		/* the holder read after the thaw may not be
				   the one at the capture (no_owner or detail
				   says why) */
	const struct stacksnap_wait_owner *owners;
	size_t nowners;
	int frame;		/* index into the frames given of the frame
				   that waits (the caller of the library's
				   wait), -1 none */
	const char *const *kernel_frames; /* innermost first ("futex_wait_
					     queue+0x60/0x90"), NULL none */
	size_t nkernel_frames;
	const char *object_type; /* the object's class (a Java lock:
				    "java.lang.Object"), NULL none */
	/* A Java thread: the monitors it holds (set whatever the kind,
	   NONE included), held_known when they were read. */
	const struct stacksnap_wait_held *held;
	size_t nheld;
	bool held_known;
	/* How long it had waited at the capture, in ns (a thread read
	 * non-stop: stacksnap_thread.waited_ns); 0 not known. */
	uint64_t waited_ns;
};

/* Kernel symbols, for kernel frames (perf samples, the waits' kernel
 * stacks): those of the kernel whose build-id (hex) a recording gives,
 * from perf's build-id cache ($PERF_BUILDID_DIR or ~/.debug), else
 * /proc/kallsyms through a per-boot cache file in cache_dir (NULL: none;
 * the kernel takes ~20 ms to format /proc/kallsyms); NULL when the
 * recording names another kernel than the running one and no copy is
 * kept; log (may be NULL) gets the cache's troubles at info level. lookup gives NULL when unknown (addresses hidden by
 * kptr_restrict), else the name and *off from its start. */
struct stacksnap_kallsyms;
STACKSNAP_API struct stacksnap_kallsyms *
stacksnap_kallsyms__load(const char *cache_dir, const char *kernel_build_id,
			 stacksnap_log_fn log, void *user);
STACKSNAP_API const char *stacksnap_kallsyms__lookup(struct stacksnap_kallsyms *ks,
						      uint64_t addr, uint64_t *off);
STACKSNAP_API void stacksnap_kallsyms__free(struct stacksnap_kallsyms *ks);

struct stacksnap_waits_opts {
	size_t sz;
	/* The target's memory; NULL: the live process (pid). */
	struct stacksnap_mem *mem;
	/* No kernel stacks (/proc/PID/task/TID/stack). */
	bool no_kernel_stacks;
	/* A saved capture: nothing is read from /proc (no fds, children or
	 * file locks: those waits name their kind only, and say why). */
	bool saved;
	/* The thread holding a CPython GIL at the capture
	 * (stacksnap_runtime_info.gil_holder): the holder of the threads
	 * waiting for it. 0: none or not known. */
	pid_t gil_holder;
	/* A saved capture whose file kept the waits (stacksnap_saved__
	 * deadlocks is 0): each thread's wait and the deadlocks are taken
	 * from it as the dump that saved it found them, nothing is read. */
	const struct stacksnap_saved *kept;
	/* Locks only (glibc's and CPython's futex waits, joins): no fds,
	 * children, file locks or sleeps read, whose facts cost a look through
	 * /proc; those waits name their system call only. For a caller that
	 * reads the waits at every sample (watch). */
	bool locks_only;
	size_t :0;
};
#define stacksnap_waits_opts__last_field locks_only

struct stacksnap_waits;

/* A graph for process pid with address space as (not owned; names lock
 * objects and frames). NULL and errno on failure. */
STACKSNAP_API struct stacksnap_waits *
stacksnap_waits__new(struct stacksnap_ctx *ctx, pid_t pid,
		     struct stacksnap_addrspace *as,
		     const struct stacksnap_waits_opts *opts);
/* Adds a captured thread and its unwound frames (innermost first). th and
 * frames must live until stacksnap_waits__resolve returns. 0 or -errno. */
STACKSNAP_API int stacksnap_waits__add_thread(struct stacksnap_waits *w,
					      const struct stacksnap_thread *th,
					      const struct stacksnap_frame *frames,
					      size_t nframes);
/* Classifies every thread added, reads the holders (after the thaw) and
 * finds the cycles. 0 or -errno. */
STACKSNAP_API int stacksnap_waits__resolve(struct stacksnap_waits *w);
/* What thread tid waits for; NULL when it was not added. */
STACKSNAP_API const struct stacksnap_wait *
stacksnap_waits__thread(const struct stacksnap_waits *w, pid_t tid);
/* The deadlocks found: cycle i's members in waiting order (each waits
 * for the next, the last for the first). */
STACKSNAP_API size_t stacksnap_waits__deadlock_count(const struct stacksnap_waits *w);
STACKSNAP_API int stacksnap_waits__deadlock(const struct stacksnap_waits *w, size_t i,
					    const struct stacksnap_wait_owner **members,
					    size_t *n);
STACKSNAP_API void stacksnap_waits__free(struct stacksnap_waits *w);
/* One edge of a wait-for graph: from waits for to. */
struct stacksnap_wait_edge {
	struct stacksnap_wait_owner from, to;
};
/* The cycles of the graph edges[0..n) (of several processes: a process
 * as a whole, tid 0, is a node; give it an edge to each of its waiting
 * threads for cycles through pipes or file locks): cycle i's threads are
 * (*members)[(*starts)[i], (*starts)[i + 1]), in waiting order, process
 * nodes left out. *members and *starts are the caller's to free(). 0 or
 * -errno. */
STACKSNAP_API int stacksnap_wait_cycles(const struct stacksnap_wait_edge *edges, size_t n,
					struct stacksnap_wait_owner **members,
					size_t **starts, size_t *ncycles);
/* "mutex", "rwlock", ... (the JSON's "kind"). */
STACKSNAP_API const char *stacksnap_wait_kind__str(enum stacksnap_wait_kind kind);
/* What goroutine g waits for (docs/waits.md), from its wait reason and
 * its frames: "go-chan", "go-select", "go-mutex", "go-rwmutex",
 * "go-waitgroup", "go-cond", "go-sema", "go-net", "sleep", "go-runtime"
 * (the runtime's own, idle), "go-other"; NULL when it does not wait.
 * *no_owner (may be NULL) gets why no holder is named (Go records none:
 * a sync.Mutex has no owner field). */
STACKSNAP_API const char *
stacksnap_goroutine__wait_kind(const struct stacksnap_goroutine *g, const char **no_owner);
/* Go's own "all goroutines are asleep - deadlock!": every goroutine but
 * the runtime's idle ones waits for another goroutine (a channel, select,
 * a sync lock, WaitGroup, Cond or semaphore), none runs, sleeps, waits for
 * the network or a system call. *note (may be NULL) gets NULL or what
 * was left out (os/signal's loop, which a signal wakes). */
STACKSNAP_API bool stacksnap_goroutines__all_asleep(const struct stacksnap_goroutine *gs,
						    size_t n, const char **note);

#ifdef __cplusplus
}
#endif
#endif /* STACKSNAP_H */
