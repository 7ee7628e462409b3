/* python.h - CPython's frames in another process: find the interpreter
 * (py_detect.c), copy each thread's frame chain during the freeze
 * (py_capture.c: pointers and instruction positions only, read as whole
 * pages and chunks in few bulk reads),
 * and after the thaw name the frames from the immutable code objects
 * (py_resolve.c, with the line table decoder of py_linetable.c). */
#ifndef SS_RUNTIME_PYTHON_PYTHON_H
#define SS_RUNTIME_PYTHON_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/log.h"
#include "runtime/python/py_layout.h"
#include "stacksnap.h"

/* glibc x86_64 keeps the kernel tid in struct pthread at 0x2d0 (after the
 * 0x2c0-byte tcbhead_t and the 16-byte list link): its own
 * _thread_db_pthread_tid descriptor says {32 bits, 1, 720} in glibc 2.36
 * here, and the layout has not moved since the tcbhead_t grew to that
 * size. */
#define GLIBC_PTHREAD_TID 0x2d0

struct mem_iov;
struct py_hint;
struct py_batch;

/* ------------------------------------------------------------------ */
/* Detection */

/* One interpreter found in a process. Invariant: found implies
 * runtime_addr is the run-time address of _PyRuntime and major/minor name
 * the version; layout == NULL means the version's layout is unknown
 * (note then holds the one line to show: "Python 3.X.Y: layout unknown,
 * native frames only"; before 3.7, "...: no layout, native frames only",
 * and runtime_addr is 0). layout points at a static table entry or at own. */
struct py_runtime {
	bool found;
	const struct py_layout *layout;
	struct py_layout own;		/* a layout read from the process */
	uint64_t runtime_addr;
	unsigned major, minor, micro;
	bool micro_known;		/* micro read from the image */
	bool debug;			/* Py_DEBUG build */
	bool trace_refs;		/* Py_TRACE_REFS build */
	bool version_from_path;		/* no Py_Version: guessed from the
					   file name */
	uint64_t code_type;		/* PyCode_Type, run-time; 0 if not
					   known (then tp_name says) */
	uint64_t eval_start, eval_end;	/* _PyEval_EvalFrameDefault's code,
					   run-time [start, end), 0 if not
					   known */
	uint64_t pthread_tid;		/* before 3.11: where glibc's struct
					   pthread keeps the kernel tid (its
					   _thread_db_pthread_tid), 0 unknown */
	char path[256];			/* the image holding _PyRuntime */
	char note[160];			/* unknown layout, or how the layout
					   was read */
};

/* Looks for _PyRuntime in the image at path (the executable, or a
 * libpython3.X.so), mapped at map_start from file offset map_offset.
 * Returns 0 with rt->found set when it is there (rt->layout may still be
 * NULL: unknown version), -ENOENT when the image holds no interpreter,
 * other -errno when it cannot be read. */
int py_runtime__detect_image(const char *path, uint64_t map_start,
			     uint64_t map_offset, const struct log_sink *log,
			     struct py_runtime *rt);

struct elf_image;

/* As py_runtime__detect_image, for an image already open (a module of the
 * address space), with its load bias. */
int py_runtime__detect_elf(const struct elf_image *img, const char *path,
			   uint64_t bias, struct py_runtime *rt);

/* Whether a mapped file may hold the interpreter: the executable exe (an
 * embedding links it statically) or a libpython. Other libraries are not
 * opened: a dump of any process looks. */
bool py_image_candidate(const char *path, const char *exe);

/* Looks at the executable and any libpython of a live process (its
 * /proc/PID/maps). Returns 0 (rt->found says whether one was found) or
 * -errno. */
int py_runtime__detect_pid(pid_t pid, const struct log_sink *log,
			   struct py_runtime *rt);

/* For versions that carry a _Py_DebugOffsets table at the start of
 * _PyRuntime (3.13+), reads the layout from the process through mem
 * (rt->layout becomes &rt->own). Called by the detect functions' users
 * once a memory source exists; a no-op for versions with a table entry.
 * Returns 0 or -errno (the note says why). */
int py_runtime__read_layout(struct py_runtime *rt, struct stacksnap_mem *mem);

/* ------------------------------------------------------------------ */
/* Capture: during the freeze. */

#define PY_MAX_INTERPS 64
#define PY_MAX_THREADS 4096
#define PY_MAX_FRAMES 4096	/* per thread; recursionlimit is 1000 */
#define PY_MAX_CHUNK (256 * 1024) /* largest data-stack chunk read whole */
#define PY_MAX_FRAME_SIZE 512	/* bytes of one frame read (PyFrameObject
				   up to f_localsplus[0]: 368) */
#define PY_MAX_PAGES 4096	/* pages a capture keeps copies of (16 MiB);
				   past that, reads go one at a time */

/* One _PyInterpreterFrame as copied: what can change while the process
 * runs. */
struct py_raw_frame {
	uint64_t addr;		/* the _PyInterpreterFrame */
	uint64_t code;		/* f_code / f_executable */
	uint64_t instr;		/* prev_instr (3.11) / instr_ptr */
	uint8_t owner;		/* FRAME_OWNED_BY_* */
	uint8_t is_entry;	/* 3.11's is_entry */
	uint64_t local0;	/* localsplus[0] (self of a method), 0 when
				   the layout does not say */
};

/* One thread state. Invariant: frames[first, first + nframes) of the
 * capture are its frames, innermost first; end == NULL means the chain
 * ended normally (previous == NULL), else it says why it was cut (the
 * frames before the cut are kept). */
struct py_raw_thread {
	uint64_t tstate;
	uint64_t interp;
	int64_t interp_id;
	uint64_t native_tid;	/* the kernel tid (0: not started) */
	uint64_t thread_id;	/* pthread_t, threading.get_ident() */
	size_t first, nframes;
	const char *end;	/* static string */
	uint64_t end_addr;	/* the address the chain was cut at */
	uint64_t top_frame;	/* the frame the chain starts at */
	bool holds_gil;
};

/* The target's pages one capture copied, whole (a page costs a remote
 * read about what a few bytes of it do): the structures a capture reads
 * (runtime, interpreter and thread states, 3.7-3.10's heap frames) come
 * from these copies, each page read once. Invariant: slots is an open
 * addressing table of nslots (a power of two, >= 2 * cap) holding index + 1
 * of each entry of addr/state, 0 for empty; data holds cap pages, entry
 * i's at i * 4096 when its state is "have". hints are the pages the last
 * capture used, read first by the next one in a few system calls. */
struct py_pages {
	uint64_t *addr;
	uint8_t *state;		/* enum in py_capture.c */
	uint8_t *data;
	uint32_t *queue;	/* entries waiting for their read */
	size_t n, cap, nqueue;
	size_t last;		/* the entry last found */
	uint32_t *slots;
	size_t nslots;
	uint64_t *hints;
	size_t nhints, cap_hints;
};

/* Everything read in one capture. state is NULL for a running
 * interpreter, else "finalizing", "not initialized" (static strings). */
struct py_capture {
	struct py_raw_thread *threads;
	size_t nthreads, cap_threads;
	struct py_raw_frame *frames;
	size_t nframes, cap_frames;
	uint8_t *chunk;		/* scratch for a data-stack chunk */
	size_t chunk_cap;
	unsigned ninterps;
	const char *state;
	const char *end;	/* the interpreter or thread list was cut */
	bool gil_locked;
	uint64_t gil_holder;	/* tstate, 0 when unknown */
	unsigned reads;		/* memory reads made (system calls, for a
				   live source; for the stats) */
	/* Where the last capture found the thread states, in list order:
	 * the next capture reads them all in one batch, and keeps the batch
	 * only if the lists still link exactly them (else it walks the
	 * lists one read at a time). Scratch buffers for that batch. */
	struct py_hint *hints;
	size_t nhints, cap_hints;
	struct py_batch *batch;
	size_t cap_batch;
	struct mem_iov *iov;
	size_t cap_iov;
	uint8_t *tsbuf;
	size_t tsbuf_cap;
	bool batched;		/* the last capture used the batch */
	bool heap_frames;	/* the last capture's frames were heap objects
				   (3.7-3.10): no chunks */
	/* Bytes of the target already copied in the same instant (the
	 * threads' stack copies, which hold 3.11's _PyCFrames): local()
	 * returns them for [addr, addr + len), or NULL. May be NULL. */
	const uint8_t *(*local)(void *user, uint64_t addr, size_t len);
	void *local_user;
	/* The kernel tid of the stopped thread whose thread pointer (glibc's
	 * struct pthread, pthread_self()) is pthread, or 0: before 3.11 the
	 * thread states have only that. May be NULL (then the tid is read
	 * from the struct pthread). Called with local_user. */
	uint64_t (*tid_of)(void *user, uint64_t pthread);
	struct py_pages pages;
};

/* Reads every thread state of every interpreter, and each one's frame
 * chain, bounded in steps and loop-checked. Memory is read through mem
 * (invalidated first: the target has run since the last read). Returns 0
 * (a cut chain is reported per thread, not as an error), -ENOMEM, or
 * -EFAULT when _PyRuntime itself cannot be read. */
int py_capture__all(const struct py_runtime *rt, struct stacksnap_mem *mem,
		    struct py_capture *cap);
/* Makes room for nthreads threads and nframes frames (and for the batch
 * reads of that many threads, chunk_bytes of data-stack chunks, and twice
 * the pages the last capture used), so a capture inside the freeze does
 * not allocate in the common case. After a capture of 3.7-3.10 (frames on
 * the heap, no chunks) chunk_bytes is not reserved. */
int py_capture__reserve(struct py_capture *cap, size_t nthreads,
			size_t nframes, size_t chunk_bytes);
void py_capture__clear(struct py_capture *cap);
void py_capture__free(struct py_capture *cap);
/* The thread with kernel tid, or NULL. */
const struct py_raw_thread *py_capture__thread(const struct py_capture *cap,
					       uint64_t tid);

/* ------------------------------------------------------------------ */
/* Resolve: after the thaw. */

/* One named Python frame. Invariant: function and file are never NULL
 * (file may be "?" when it cannot be read); strings live as long as the
 * resolver. entry: this frame is the outermost one of a C-level call of
 * the evaluation loop (3.11's is_entry; 3.12+: the frame before a C-stack
 * shim), so a native frame of the eval loop runs the frames up to and
 * including the next entry frame. */
struct py_frame {
	const char *function;	/* co_qualname */
	const char *name;	/* co_name */
	const char *file;	/* co_filename */
	unsigned line;		/* 0: unknown */
	bool entry;
	uint64_t code;
	int lasti;		/* instruction offset in bytes, -2: none */
};

struct py_code;

/* Names frames of one capture; caches code objects by address. */
struct py_resolver {
	const struct py_runtime *rt;
	struct stacksnap_mem *mem;
	struct py_code **slots;	/* open addressing by code address */
	size_t nslots, nused;
	uint64_t code_type;	/* the PyCode_Type seen, 0 before */
	unsigned reads;
	char **names;		/* thread names read, owned */
	size_t nnames, cap_names;
	/* A code object that cannot be read gives a frame named "<unknown
	 * code object>" and the walk goes on (the trace names frames after
	 * the event: the object may have been freed since), instead of
	 * ending the thread's frames. */
	bool keep_unknown;
	/* The resolver outlives the frames (a trace): a code object can be
	 * freed and another made at its address, so a cached one is checked
	 * against the object's header at each use and read again when it
	 * changed; the old entry is kept in retired (frames handed out point
	 * at its names) until the resolver is freed. */
	bool recheck;
	struct py_code **retired;
	size_t nretired;
};

void py_resolver__init(struct py_resolver *r, const struct py_runtime *rt,
		       struct stacksnap_mem *mem);
void py_resolver__free(struct py_resolver *r);

/* The named frames of thread t of cap, innermost first, skipping frames
 * CPython itself hides (incomplete frames, C-stack shims): *out (malloc'ed,
 * the caller frees it) and *n. *end is set to a static reason when a code
 * object could not be read (the frames before it are kept), else NULL.
 * Returns 0 or -ENOMEM. */
int py_resolve__thread(struct py_resolver *r, const struct py_capture *cap,
		       const struct py_raw_thread *t, struct py_frame **out,
		       size_t *n, const char **end);

/* The named frames of every thread state of kernel thread tid,
 * innermost first: a thread that entered a sub-interpreter has one thread
 * state per interpreter, and the newer interpreter's (listed first, as
 * the capture walks them) runs inside the older's. As py_resolve__thread
 * otherwise; *holds_gil: one of them holds a GIL. */
int py_resolve__tid(struct py_resolver *r, const struct py_capture *cap,
		    uint64_t tid, struct py_frame **out, size_t *n,
		    const char **end, bool *holds_gil);

/* The threading name of thread t: its outermost frame is
 * threading.Thread._bootstrap, whose self is the Thread object, and its
 * _name attribute a str. NULL when that is not so, or the layout cannot
 * say (3.7-3.12's can). The string lives as long as the resolver. */
const char *py_resolve__thread_name(struct py_resolver *r,
				    const struct py_capture *cap,
				    const struct py_raw_thread *t);
/* The threading name of the thread whose native id is tid in cap: its
 * outermost thread state's (a thread inside a sub-interpreter holds the
 * innermost first). NULL as py_resolve__thread_name, or no such thread. */
const char *py_resolve__tid_name(struct py_resolver *r,
				 const struct py_capture *cap, uint64_t tid);

/* ------------------------------------------------------------------ */
/* Merge with the native frames. */

/* Replaces each native frame of the evaluation loop (pc in [eval_start,
 * eval_end]) by the Python frames its C call runs: from the next Python
 * frame up to and including the next entry frame. Python frames left over
 * (a native walk cut short) get native_index = nnative. Writes up to max
 * frames to out (function/file point into pf's strings) and returns how
 * many there are. */
size_t py_merge(const struct py_frame *pf, size_t npf,
		const struct stacksnap_frame *native, size_t nnative,
		uint64_t eval_start, uint64_t eval_end,
		struct stacksnap_runtime_frame *out, size_t max);

/* ------------------------------------------------------------------ */
/* The 3.11+ location table (co_linetable, PEP 626/657). */

/* The line of the instruction at byte offset addrq of a code object whose
 * first line is firstlineno, as PyCode_Addr2Line computes it: 0 and *line
 * (-1 for an instruction without a line, or past the table's end), or
 * -EINVAL when the table is corrupt. addrq < 0 gives firstlineno. */
int py_linetable__line(const uint8_t *table, size_t len, int firstlineno,
		       int addrq, int *line);

/* As py_linetable__line, for a table of the given kind (3.7-3.9's
 * co_lnotab, 3.10's co_linetable, 3.11+'s); addrq in bytes. */
int py_linetable__line_of(enum py_lines kind, const uint8_t *table,
			  size_t len, int firstlineno, int addrq, int *line);

#endif
