/* print.h - the stacksnap output formats: text and JSON. */
#ifndef STACKSNAP_TOOL_PRINT_H
#define STACKSNAP_TOOL_PRINT_H

#include <stdio.h>

#include "options.h"
#include "stacksnap.h"

/* One printed line: a frame, or one of the inline frames at its pc. */
struct out_frame {
	const struct stacksnap_frame *frame;
	struct stacksnap_sym sym;
	/* The anonymous mapping of JIT code no JIT symbol file names
	 * (sym.module STACKSNAP_MODULE_JIT, no function); else 0, 0. */
	uint64_t jit_start, jit_end;
};

/* One unwound and symbolized thread, ready to print. */
struct thread_result {
	const struct stacksnap_thread *thread;
	struct stacksnap_frame *frames;
	int nframes;
	enum stacksnap_end end;
	struct out_frame *out;	/* nout lines, innermost first */
	size_t nout;
	/* Language-runtime (Python) frames merged into frames: those of one
	 * native frame replace it (native_index), innermost first; NULL
	 * when none. Strings live as long as the snapshot. */
	struct stacksnap_runtime_frame *rframes;
	size_t nrframes;
	const char *rend;	/* why the runtime frames were cut, or NULL */
	const char *rname;	/* the runtime's thread name, or NULL */
	bool rname_java;	/* rname is a java.lang.Thread's name */
	bool holds_gil;
	/* What the thread waits for (print_waits.c); NULL: not read. */
	const struct stacksnap_wait *wait;
	const char *wchan;	/* its wait channel before the freeze, or NULL */
	/* The C++ exception it is throwing (cxx_throw.c), or NULL. */
	struct stacksnap_cxx_exception *exception;
};

/* Frees res[0..n) (their frames and symbolized lines) and res itself. */
void thread_results_free(struct thread_result *res, size_t n);

struct dump_totals {
	const struct stacksnap_snapshot_stats *snap;
	const struct stacksnap_nonstop_stats *nonstop; /* NULL: not known */
	uint64_t unwind_ns, symbolize_ns;
	unsigned frames;
	/* The cold path's phases: checking the target, reading its maps and
	 * opening its modules, then what the module cache made. */
	uint64_t check_ns, addrspace_ns, total_ns;
	/* What the dump reads of /proc besides maps: the process header
	 * (status, cmdline, wait channels) and who waits for whom (every
	 * process's fds for a pipe's or socket's holders). */
	uint64_t about_ns, waits_ns;
	struct stacksnap_ctx_stats ctx;
	/* A Go program's goroutines, for the JSON's "goroutines" (NULL: no
	 * such key). */
	const struct stacksnap_goroutine *goroutines;
	size_t ngoroutines;
	/* What the capture found of a language runtime; NULL: not asked. */
	const struct stacksnap_runtime_info *runtime;
	/* show and --core: what the saved capture is, printed as the JSON's
	 * "snapshot" member by saved_json (cmd_show.c); NULL: a live dump. */
	void (*saved_json)(FILE *f, const void *user);
	const void *saved_user;
	/* Threads that exited during the capture, left out (--stats). */
	unsigned gone;
	/* Who waits for whom: the JSON's "deadlocks" (NULL: no such key). */
	const struct stacksnap_waits *waits;
	/* A live dump: what the process is, as the JSON's "process" member
	 * (proc_about.c); NULL: no such member. */
	void (*process_json)(FILE *f, const void *user);
	const void *process_user;
};

/* Unwinds r->thread into r->frames (allocated, up to max_frames), reading its
 * stack through mem (pointed at the thread's copy by the caller). A walk
 * that fails gives no frames, ending in "unusable unwind information".
 * Returns 0 or -ENOMEM. */
int unwind_thread(struct thread_result *r, struct stacksnap_unwinder *uw,
		  struct stacksnap_addrspace *as, struct stacksnap_mem *mem,
		  unsigned max_frames);

/* Fills r->out from r->frames. Returns 0 or -ENOMEM. */
int symbolize_thread(const struct options *o, struct stacksnap_addrspace *as,
		     struct thread_result *r);
/* A runtime frame's mark in the text output: "[py]", "[java]", "[jvm]"... */
const char *rframe_tag(const struct stacksnap_runtime_frame *rf);
/* The language of a runtime's frames, as messages name it ("Ruby",
 * "PHP"; "Python" for any other kind). */
const char *runtime_lang(int kind);
void print_text(FILE *f, const struct options *o,
		const struct thread_result *r, size_t n);
/* One thread as print_text() prints it without groups (first: no blank
 * line before), and its lines after the header; all[0..n) are the dump's
 * threads, which name the holders of what it waits for. */
void print_thread_text(FILE *f, const struct options *o,
		       const struct thread_result *r, bool first,
		       const struct thread_result *all, size_t n);
void print_thread_body(FILE *f, const struct options *o,
		       const struct thread_result *r,
		       const struct thread_result *all, size_t n,
		       uint64_t waited_lo, uint64_t waited_hi);
/* The frame lines of one stack (and its [truncated: ...] line), and the
 * frames as JSON objects (comma-separated, no brackets): shared by the
 * dump and `stacksnap trace`. */
void print_text_frames(FILE *f, const struct options *o,
		       const struct thread_result *r);
void print_json_frames(FILE *f, const struct thread_result *r);
/* The same with --runtime's mode (enum runtime_mode). */
void print_json_frames_mode(FILE *f, const struct thread_result *r, int mode);
/* s as a JSON string (null for NULL): the library's writer, the one of
 * every JSON output. */
static inline void json_str(FILE *f, const char *s)
{
	stacksnap_json_string(f, s);
}
void print_json(FILE *f, const struct options *o,
		const struct thread_result *r, size_t n,
		const struct dump_totals *tot);
void print_stats(FILE *f, const struct dump_totals *tot);
/* A Go program's goroutines (print_go.c): text after the threads (first:
 * nothing printed before), and the JSON "goroutines" member. */
void print_goroutines_text(FILE *f, const struct stacksnap_goroutine *gs,
			   size_t n, bool first);
void print_goroutines_json(FILE *f, const struct stacksnap_goroutine *gs,
			   size_t n);
const char *thread_error_str(int error);
/* qsort comparator of struct thread_result by tid (the printed order). */
int thread_result_cmp_tid(const void *a, const void *b);

#endif
