/* child_cmd.h - the command of `profile -- CMD` and `trace -- CMD`: started
 * held before its exec, in a process group of its own, and ended with
 * that whole group, so that no process it started outlives the tool. */
#ifndef STACKSNAP_TOOL_CHILD_CMD_H
#define STACKSNAP_TOOL_CHILD_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Forks cmd, which waits on *go_fd before its execvp: the caller opens
 * its events on the pid, then child_cmd_release lets it run. The child
 * leads a new process group (its pid), made the terminal's foreground
 * group when the tool's was, and the tool becomes a child subreaper so
 * that the group's members stay its children to reap. *err_fd gives the
 * errno of a failed execvp (EOF once it succeeded). Returns the pid, or
 * -1 with errno. */
pid_t child_cmd_spawn(char **cmd, int *go_fd, int *err_fd);

/* Lets the held command exec (closes *go_fd, sets it to -1) and waits for
 * the exec's outcome on err_fd. When it failed, says so as
 * "WHO: cannot run 'CMD': why (fix)" and returns EXIT_CANNOT_RUN; else 0. */
int child_cmd_release(const char *who, char **cmd, int *go_fd, int err_fd);

/* Ends the command's process group: SIGTERM to every member still there
 * (sig instead when not 0: the stop signal the tool got), SIGKILL to
 * those left after 2 s, and reaps them all; then the same for the
 * command's processes that left the group (setsid, as a daemon does),
 * which the tool, a subreaper, inherited. *status receives the leader's
 * wait status unless reaped (already reaped by the caller). The
 * terminal's foreground group is given back to the tool. */
void child_cmd_end(pid_t leader, bool reaped, int sig, int *status);

/* The tool's children now (at most max, in out): with the command's
 * group ended, processes of the command that had left the group and were
 * reparented to the tool. Returns how many. */
size_t child_cmd_strays(pid_t *out, size_t max);

#define CHILD_STRAYS_MAX 64

/* Strays being ended: those signalled (n of pid), since t0 (0: not yet);
 * killed once 2 s have passed (SIGKILL from then on). */
struct child_strays {
	pid_t pid[CHILD_STRAYS_MAX];
	size_t n;
	uint64_t t0;
	bool killed;
};

/* Signals each stray not signalled yet with sig (SIGTERM when 0), every
 * stray with SIGKILL from 2 s after the first call; reaps none (the
 * caller does, answering ptrace stops where it holds them). Returns how
 * many strays there are. */
size_t child_cmd_signal_strays(struct child_strays *s, int sig);

#endif
