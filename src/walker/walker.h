/* walker.h - the attached walker's shared state: targets, their threads
 * as the tracer thread sees them, the one request in flight and the event
 * queue; tracer.c runs the ptrace side, walker.c the caller's side. */
#ifndef SS_WALKER_WALKER_H
#define SS_WALKER_WALKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/log.h"
#include "base/sched_fifo.h"
#include "capture/capture_internal.h"
#include "runtime/python/python.h"
#include "runtime/ruby/ruby.h"
#include "stacksnap.h"

/* One thread of a target. Invariants: stopped means in a ptrace-stop we
 * have not resumed; a thread is left stopped only while hold or
 * user_paused says so (anything else is resumed when its stop is seen);
 * want_stop means the request in flight counts this thread as pending. */
struct wthread {
	pid_t tid;
	bool stopped;
	bool interrupted;	/* PTRACE_INTERRUPT sent since its last stop */
	bool group_stop;	/* job-control stop in effect: resume by LISTEN */
	bool user_paused;	/* stopped by pause() */
	bool hold;		/* held for the request in flight */
	bool want_stop;
	int stop_event;		/* PTRACE_EVENT_* of the current stop (0: a
				   signal-delivery stop) */
	int pending_sig;	/* signal to give back when resumed */
};

/* A captured thread: registers and where its stack copy is. */
struct wcapture {
	pid_t tid;
	int error;		/* enum stacksnap_thread_error */
	bool paused;
	struct stacksnap_regs regs;
	uint64_t base;		/* target address of the copy */
	size_t off, len;	/* in the target's stack buffer */
	uint64_t fs_base;	/* its thread pointer (Ruby's TLS) */
	bool scan_alt;		/* the copy misses its own stack's top: look
				   for an alternate signal stack's frame */
	uint64_t more_base;	/* its normal stack below a handler on an */
	size_t more_off, more_len; /* alternate stack (more_len 0: none) */
};

/* A code mapping, to tell loads and unloads apart between polls. */
struct xmap {
	uint64_t start, end, inode;
	char *path;
};

/* A writable mapping, to clamp a stack copy to the mapping it is on. */
struct rwmap {
	uint64_t start, end;
};

/* Invariants: threads, xmaps, caps and the flags are touched under the
 * walker's lock; as, frames and the stack buffer's contents only by the
 * caller's side (under api), except that the tracer fills the buffer and
 * caps while a capture request is in flight. */
struct stacksnap_target {
	struct stacksnap_walker *w;
	pid_t pid;
	struct wthread *threads;
	size_t n, cap;
	bool terminated;
	int exit_status;
	bool paused_all;	/* new threads start paused */
	bool capturing;		/* new threads join the capture */
	bool detached;		/* removed from the walker's list */
	uint64_t maps_gen;	/* bumped when code mappings change */
	uint64_t as_gen;	/* maps_gen the address space reflects */
	struct xmap *xmaps;
	size_t nx, capx;
	struct wcapture *caps;
	size_t ncaps, capcaps;
	uint8_t *stack_bytes;
	size_t stack_cap;
	struct stacksnap_addrspace *as;
	struct stacksnap_frame *frames;
	struct stacksnap_target *next;
	/* A Python interpreter in the target (looked for once, before the
	 * first walk; py == NULL: none or not usable): its frame chains are
	 * copied by the tracer in each capture, while the threads are
	 * stopped (py_cap, py_ok), and named and merged per walk. */
	bool py_tried;
	struct py_runtime *py;
	struct stacksnap_mem *py_mem;
	struct py_capture py_cap;
	bool py_ok;
	/* Or a Ruby VM (rb == NULL: none or no layout): each thread's
	 * control frames copied by the tracer in each capture (rb_cap,
	 * rb_ok), named and merged per walk. */
	struct rb_runtime *rb;
	struct stacksnap_mem *rb_mem;
	struct rb_capture rb_cap;
	bool rb_ok;
	struct stacksnap_runtime_frame *rframes;
	size_t cap_rframes;
	/* A JVM or V8 instead (looked for with Python; ops NULL: none):
	 * its steppers registered on named_uw (the caller's unwinder of the
	 * last walk), its frames named per walk after the threads run
	 * again (from the walk's copy and the live process). */
	struct named_runtime named;
	struct stacksnap_unwinder *named_uw;
};

enum request_kind {
	REQ_ATTACH,
	REQ_DETACH,
	REQ_PAUSE,
	REQ_RESUME,
	REQ_CAPTURE,
};

/* The one request in flight (callers are serialized by the api lock).
 * Invariant: pending counts the target's threads with want_stop. */
struct request {
	enum request_kind kind;
	struct stacksnap_target *t;
	pid_t tid;			/* PAUSE, RESUME: 0 for all */
	const pid_t *tids;		/* CAPTURE: NULL for all */
	size_t ntids;
	const struct rwmap *rw;		/* CAPTURE: writable mappings */
	size_t nrw;
	bool started, done;
	int result;
	unsigned pending;
	uint64_t deadline, t_start, t_end;
	size_t bytes_copied;
};

/* A queued event and the storage its path needs. */
struct wevent {
	struct stacksnap_event ev;
	char *path;
};

/* Invariants: lock guards everything the tracer thread touches; api
 * serializes callers, so at most one request is in flight; the event fd
 * is readable iff nevents > 0 (give or take a read racing a write). */
struct stacksnap_walker {
	struct stacksnap_ctx *ctx;
	const struct log_sink *log;
	unsigned maps_poll_ms, stop_timeout_ms, max_frames;
	size_t stack_size;
	pthread_mutex_t lock, api;
	pthread_cond_t cond;		/* a request done, an event queued */
	pthread_t thread;
	pid_t tracer_tid;
	pid_t bell;			/* the doorbell process (tracer.c) */
	int efd;
	bool quit, tracer_done;
	int tracer_err;			/* startup failure */
	struct request *req;
	struct stacksnap_target *targets;
	struct wevent *events;
	size_t nevents, capevents;
	/* Threads that ended lately: the kernel reports the newest tracees
	 * first, so a thread's whole life may come before its creator's
	 * clone event, which must not bring it back. known: its creation
	 * was reported. */
	struct { pid_t tid; int status; bool known; } gone[64];
	unsigned ngone;
	/* The tracer thread runs SCHED_FIFO while a capture holds the
	 * target stopped, where permitted (tracer.c): the policy to go
	 * back to. */
	struct sched_fifo realtime;
};

/* Queues an event and makes the fd readable (lock held). */
void walker_queue(struct stacksnap_walker *w, const struct stacksnap_event *ev,
		  const char *path);
/* Reads pid's code mappings (file-backed, executable) and, when rw is not
 * NULL, its writable ones. Returns 0 or -errno. */
int walker_read_maps(pid_t pid, struct xmap **x, size_t *nx, size_t *capx,
		     struct rwmap **rw, size_t *nrw, size_t *caprw);
void walker_free_xmaps(struct xmap *x, size_t n);

/* The tracer thread (tracer.c). */
void *tracer_main(void *arg);
/* Wakes the tracer thread to look at w->req (callable from any thread). */
void tracer_ring(struct stacksnap_walker *w);

#endif
