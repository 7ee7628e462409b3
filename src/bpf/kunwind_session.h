/* kunwind_session.h - the user side of kunwind.bpf.c: loads the program
 * with the shared table maps, attaches it to an event, follows processes
 * (their mapping tables written from /proc and rewritten when the program
 * reports an exec or an executable mmap), and hands each event to the
 * caller: in-kernel frames, a stack copy, or both. */
#ifndef SS_BPF_KUNWIND_SESSION_H
#define SS_BPF_KUNWIND_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ktable/kunwind_layout.h"
#include "ktable/ktable.h"

struct kunwind_opts {
	int mode;		/* KU_MODE_KERNEL, _COPY or _BOTH */
	unsigned max_frames;	/* 0: KU_MAX_FRAMES */
	unsigned stack_size;	/* copy/both: bytes copied; 0: KU_MAX_STACK */
	/* The event: a syscall number on raw_syscalls:sys_enter (>= 0; -1
	 * every syscall), or a tracepoint "category:name" (then syscall is
	 * ignored). */
	int syscall;
	const char *tracepoint;
	bool no_follow_forks;
};

struct kunwind;

/* Checks rights (bpf_env), creates the table maps, loads and attaches the
 * program. NULL and errno set; the log says what is missing and the fix. */
struct kunwind *kunwind__open(struct stacksnap_ctx *ctx,
			      const struct kunwind_opts *opts);
void kunwind__close(struct kunwind *k);

/* Follows pid (and, unless no_follow_forks, its future children): its
 * mapping table is written now, from /proc/PID/maps; or, before_exec
 * (a child about to exec the traced command), when the exec is seen, so
 * that the tracer's own modules are not loaded for it. */
int kunwind__add_pid(struct kunwind *k, pid_t pid, bool before_exec);

/* One event: ev, its pcs (nframes, KU_PC_EXACT marking exact pcs) and
 * its stack copy (stack_len bytes, NULL without one). */
typedef int (*kunwind_event_fn)(void *user, const struct ku_event *ev,
				const uint64_t *pcs, const uint8_t *stack);

/* Delivers the events waiting (up to timeout_ms for the first). Returns
 * the number delivered or -errno. */
int kunwind__poll(struct kunwind *k, int timeout_ms, kunwind_event_fn fn,
		  void *user);

/* The process table the session keeps (mappings from /proc, updated on
 * exec and executable mmaps): for symbolizing and for unwinding copies. */
struct stacksnap_procs *kunwind__procs(struct kunwind *k);
struct ktable *kunwind__ktable(struct kunwind *k);

struct kunwind_stats {
	uint64_t events;	/* delivered */
	uint64_t lost;		/* ring buffer full */
	uint64_t refreshes;	/* mapping tables rewritten */
	uint32_t verified_insns; /* what the verifier walked (main program) */
	uint32_t xlated_insns;	/* its size after verification */
	uint64_t run_cnt, run_time_ns; /* with kernel.bpf_stats_enabled */
	/* Latency from a process's exec (or executable mmap) notification to
	 * its mapping table being rewritten, the last time it happened. */
	uint64_t last_refresh_ns;
	/* The walk's row cache and stack window, summed over CPUs. */
	uint64_t cache_hits, cache_misses, stack_reads;
};
void kunwind__stats(struct kunwind *k, struct kunwind_stats *st);

const char *kunwind_end__str(unsigned end);

#endif
