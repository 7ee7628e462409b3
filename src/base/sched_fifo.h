/* sched_fifo.h - the calling thread raised to SCHED_FIFO for a short
 * window (a freeze, a walker's capture) and put back: a tool preempted
 * while its target is stopped stretches the stop by a time slice. */
#ifndef STACKSNAP_BASE_SCHED_FIFO_H
#define STACKSNAP_BASE_SCHED_FIFO_H

#include <sched.h>
#include <stdbool.h>

/* The policy to go back to; on: the thread runs SCHED_FIFO now. */
struct sched_fifo {
	bool on;
	int policy;
	struct sched_param param;
};

/* Raises the calling thread to SCHED_FIFO priority 1 where permitted
 * (root, CAP_SYS_NICE, an RLIMIT_RTPRIO), unless it is already realtime
 * or batch/idle by choice, or s->on already. Returns s->on. */
bool sched_fifo_enter(struct sched_fifo *s);
/* Puts the thread back to the policy it had (nothing when not on). */
void sched_fifo_leave(struct sched_fifo *s);

#endif
