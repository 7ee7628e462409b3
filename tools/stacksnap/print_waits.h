/* print_waits.h - who waits for whom in the dump (print_waits.c): the
 * graph built from the unwound threads, each thread's wait line and the
 * deadlocks, in text and JSON. */
#ifndef STACKSNAP_TOOL_PRINT_WAITS_H
#define STACKSNAP_TOOL_PRINT_WAITS_H

#include <stdio.h>

#include "print.h"
#include "stacksnap.h"

/* The wait-for graph of res[0..n) (unwound, after the thaw): each
 * res[i].wait set. mem: the memory to read locks from, NULL for the live
 * process; saved: a saved capture (no /proc); kept: the saved capture,
 * whose file may have kept the waits its dump found (taken as they are),
 * or NULL. NULL when it could not be made (said on stderr); the dump goes
 * on without it. */
struct stacksnap_waits *waits_build(struct stacksnap_ctx *ctx, pid_t pid,
				    struct stacksnap_addrspace *as,
				    struct stacksnap_mem *mem, bool saved,
				    const struct stacksnap_saved *kept,
				    pid_t gil_holder,
				    struct thread_result *res, size_t n);

/* What --save keeps of the dump's waits (w may be NULL: nothing): the
 * arrays stacksnap_save_opts points at, freed by waits_save_free. */
struct waits_save {
	pid_t *tids;
	const struct stacksnap_wait **waits;
	struct stacksnap_wait_owner *members;
	size_t *start;
};
/* Fills o's waits fields from w and res[0..n). 0, or -ENOMEM (o then
 * keeps none). */
int waits_save_opts(const struct stacksnap_waits *w, const struct thread_result *res,
		    size_t n, struct stacksnap_save_opts *o, struct waits_save *keep);
void waits_save_free(struct waits_save *keep);
/* "mutex 0x55d0c0a0 (queue_lock), normal mutex": what w waits for,
 * without its holders. */
void print_wait_what(FILE *f, const struct stacksnap_wait *w);
/* The lines under a thread's header: what it waits for, the kernel
 * frames. */
void print_wait_text(FILE *f, const struct thread_result *r,
		     const struct thread_result *all, size_t n);
/* The same, saying how long as waited_lo..waited_hi ns (a group's
 * threads; 0: not said). */
void print_wait_text_waited(FILE *f, const struct thread_result *r,
			    const struct thread_result *all, size_t n,
			    uint64_t waited_lo, uint64_t waited_hi);
/* Whether a and b wait for the same thing (their "waits for" lines are
 * equal): a group of identical stacks never hides a difference. */
bool print_wait_same(const struct thread_result *a, const struct thread_result *b);
/* ,"wait":{...} (or null) of one thread's JSON object. */
void print_wait_json(FILE *f, const struct thread_result *r);
/* The deadlocks after the stacks (nothing when none). */
void print_deadlocks_text(FILE *f, const struct stacksnap_waits *w,
			  const struct thread_result *res, size_t n);
/* ,"deadlocks":[[{"pid":P,"tid":T},...],...] at the JSON's top level. */
void print_deadlocks_json(FILE *f, const struct stacksnap_waits *w);

/* --follow's followed dump: one line a waiting thread into fd, read by
 * dump_follow.c: "W\tPID\tTID\tNAME\tKIND\tOWNERS\tWHAT\n", OWNERS as
 * "PID:TID,..." (TID 0: the process), WHAT the text the dump prints. */
void waits_write_edges(int fd, pid_t pid, const struct thread_result *res, size_t n);

/* stacksnap PID --follow (dump_follow.c): the process and the ones it
 * waits on, dumped one after another by this program itself (argv
 * without --follow), then the chains and the deadlocks across them. */
int follow_main(const struct options *o, int argc, char **argv);

#endif
