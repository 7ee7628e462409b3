/* child_cmd.c - a `-- CMD` command held before its exec in its own process
 * group, and the end of that group with the tool's run. */
#define _GNU_SOURCE
#include "child_cmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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

size_t child_cmd_strays(pid_t *out, size_t max)
{
	char path[300];
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir("/proc/self/task");

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		FILE *f;
		int pid;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		while (n < max && fscanf(f, "%d", &pid) == 1)
			out[n++] = (pid_t)pid;
		fclose(f);
	}
	closedir(d);
	return n;
}

size_t child_cmd_signal_strays(struct child_strays *s, int sig)
{
	pid_t kids[CHILD_STRAYS_MAX];
	size_t n = child_cmd_strays(kids, CHILD_STRAYS_MAX);

	if (!s->t0)
		s->t0 = monotonic_ns();
	if (!s->killed && monotonic_ns() - s->t0 >= 2000000000ull)
		s->killed = true;
	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < s->n && s->pid[k] != kids[i]; k++)
			;
		if (k < s->n && !s->killed)
			continue; /* signalled once is enough until SIGKILL */
		kill(kids[i], s->killed ? SIGKILL : sig ? sig : SIGTERM);
		if (k == s->n && s->n < CHILD_STRAYS_MAX)
			s->pid[s->n++] = kids[i];
	}
	return n;
}

/* The strays (child_cmd_strays) ended and reaped; not waited for longer
 * than 10 s (a process in D state). */
static void end_strays(int sig)
{
	struct child_strays s = { 0 };
	int st;

	for (;;) {
		while (waitpid(-1, &st, WNOHANG) > 0)
			;
		if (!child_cmd_signal_strays(&s, sig) ||
		    monotonic_ns() - s.t0 >= 10000000000ull)
			return;
		usleep(5000);
	}
}

static void end_group(pid_t leader, bool reaped, int sig, int *status)
{
	uint64_t t0 = monotonic_ns();
	bool killed = false;

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

void child_cmd_end(pid_t leader, bool reaped, int sig, int *status)
{
	if (leader <= 0)
		return;
	end_group(leader, reaped, sig, status);
	/* What left the group (setsid: a daemon) and was reparented to the
	 * tool, its subreaper, once its parent ended. */
	end_strays(sig);
}
