/* child_cmd.c - a `-- CMD` command held before its exec in its own process
 * group, and the end of that group with the tool's run. */
#define _GNU_SOURCE
#include "child_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "monotonic.h"
#include "options.h"

/* The terminal whose foreground group the command got (-1: none). */
static int fg_tty = -1;

/* tcsetpgrp from a background group raises SIGTTOU: blocked meanwhile. */
static void set_foreground(int fd, pid_t pgrp)
{
	sigset_t s, old;

	sigemptyset(&s);
	sigaddset(&s, SIGTTOU);
	sigprocmask(SIG_BLOCK, &s, &old);
	(void)tcsetpgrp(fd, pgrp);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

pid_t child_cmd_spawn(char **cmd, int *go_fd, int *err_fd)
{
	int gp[2], ep[2];
	pid_t pid;

	/* Members whose parent exits (sh's background jobs) are reparented
	 * to the tool, not to init: child_cmd_end reaps them. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (pipe2(gp, O_CLOEXEC))
		return -1;
	if (pipe2(ep, O_CLOEXEC)) {
		close(gp[0]);
		close(gp[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		char c;
		int e;

		setpgid(0, 0);
		close(gp[1]);
		close(ep[0]);
		if (read(gp[0], &c, 1) != 1)
			_exit(127); /* the tool gave up before letting it run */
		execvp(cmd[0], cmd);
		e = errno;
		(void)!write(ep[1], &e, sizeof(e));
		_exit(127);
	}
	close(gp[0]);
	close(ep[1]);
	if (pid < 0) {
		int e = errno;

		close(gp[1]);
		close(ep[0]);
		errno = e;
		return -1;
	}
	setpgid(pid, pid); /* either side may run first */
	/* A command run from a shell's foreground keeps the terminal: it
	 * reads it, and Ctrl-C reaches it (ending it, and so the run). */
	if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp()) {
		fg_tty = STDIN_FILENO;
		set_foreground(fg_tty, pid);
	}
	*go_fd = gp[1];
	*err_fd = ep[0];
	return pid;
}

int child_cmd_release(const char *who, char **cmd, int *go_fd, int err_fd)
{
	int e;
	const char *s;

	(void)!write(*go_fd, "g", 1);
	close(*go_fd);
	*go_fd = -1;
	if (read(err_fd, &e, sizeof(e)) != sizeof(e))
		return 0;
	for (s = cmd[0]; *s >= '0' && *s <= '9'; s++)
		;
	fprintf(stderr, "%s: cannot run '%s': %s%s%s%s\n", who, cmd[0], strerror(e),
		!*s && s != cmd[0] ? " (to follow the process " : "",
		!*s && s != cmd[0] ? cmd[0] : "",
		!*s && s != cmd[0] ? ", give -p before it)" : "");
	return EXIT_CANNOT_RUN;
}

void child_cmd_end(pid_t leader, bool reaped, int sig, int *status)
{
	uint64_t t0 = monotonic_ns();
	bool killed = false;

	if (leader <= 0)
		return;
	if (fg_tty >= 0) {
		set_foreground(fg_tty, getpgrp());
		fg_tty = -1;
	}
	if (kill(-leader, sig ? sig : SIGTERM) && errno == ESRCH && reaped)
		return; /* the group is empty */
	for (;;) {
		int st;
		pid_t w = waitpid(-leader, &st, WNOHANG);

		if (w < 0 && errno == ECHILD)
			reaped = true; /* reaped elsewhere */
		if (w == leader && !reaped) {
			*status = st;
			reaped = true;
		}
		if (w > 0)
			continue;
		/* Nothing of the group left to reap: done once no member is
		 * left at all (one that is not our child is waited for by
		 * polling). */
		if (w < 0 && reaped && kill(-leader, 0) && errno == ESRCH)
			return;
		if (!killed && monotonic_ns() - t0 >= 2000000000ull) {
			kill(-leader, SIGKILL);
			killed = true;
		}
		if (monotonic_ns() - t0 >= 10000000000ull)
			return; /* unkillable (D state): not waited for longer */
		usleep(5000);
	}
}
