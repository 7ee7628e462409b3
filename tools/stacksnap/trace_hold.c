/* trace_hold.c - the command of `trace -- CMD` held at its exit until its
 * events are read: a process that exits before user space unwinds its
 * events takes its /proc/PID/maps with it, and its frames come out as
 * `??`. Each process and thread of the command (followed through fork,
 * vfork and clone) is seized with PTRACE_O_TRACEEXIT; its exit stop comes
 * before the kernel drops its mappings and after every event it raised
 * is in the ring buffer, so the trace reads them all, then lets it go.
 * Seized, never stopped otherwise: if stacksnap dies, the kernel lets the
 * command run on. */
#define _GNU_SOURCE
#include "trace_hold.h"

#include <errno.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

int trace_hold__attach(pid_t child)
{
	long opts = PTRACE_O_TRACEEXIT | PTRACE_O_TRACEFORK |
		    PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;

	return ptrace(PTRACE_SEIZE, child, 0, (void *)opts) ? -errno : 0;
}

/* One stop of a tracee: let it go on as it would have without us. */
static void answer_stop(pid_t pid, int st, trace_hold_drain_fn drain, void *arg)
{
	int event = st >> 16, sig = WSTOPSIG(st);

	if (event == PTRACE_EVENT_EXIT) {
		drain(arg);
		ptrace(PTRACE_CONT, pid, 0, 0);
	} else if (event == PTRACE_EVENT_STOP) {
		/* SIGTRAP: a new tracee's first stop; else a group stop,
		 * kept as the stop it is until SIGCONT. */
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			ptrace(PTRACE_LISTEN, pid, 0, 0);
		else
			ptrace(PTRACE_CONT, pid, 0, 0);
	} else if (event) {
		ptrace(PTRACE_CONT, pid, 0, 0); /* fork, vfork, clone */
	} else {
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig); /* a signal */
	}
}

bool trace_hold__poll(pid_t child, bool block, int *status,
		      trace_hold_drain_fn drain, void *arg)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, __WALL | (block ? 0 : WNOHANG));

		if (pid < 0 && errno == EINTR && block)
			continue;
		if (pid <= 0)
			return false;
		if (WIFSTOPPED(st)) {
			answer_stop(pid, st, drain, arg);
		} else if (pid == child) {
			*status = st;
			return true;
		}
		/* Another tracee's end: its parent reaps it. */
	}
}
