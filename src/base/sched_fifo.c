/* sched_fifo.c - a thread's short SCHED_FIFO window and its way back. */
#define _GNU_SOURCE
#include "base/sched_fifo.h"

bool sched_fifo_enter(struct sched_fifo *s)
{
	struct sched_param p = { .sched_priority = 1 };

	if (s->on)
		return true;
	s->policy = sched_getscheduler(0);
	if (s->policy < 0 || sched_getparam(0, &s->param) ||
	    (s->policy & ~SCHED_RESET_ON_FORK) != SCHED_OTHER)
		return false; /* already realtime, or batch/idle by choice */
	s->on = sched_setscheduler(0, SCHED_FIFO, &p) == 0;
	return s->on;
}

void sched_fifo_leave(struct sched_fifo *s)
{
	if (!s->on)
		return;
	sched_setscheduler(0, s->policy, &s->param);
	s->on = false;
}
