/* kill_at_open.c - an LD_PRELOAD shim of cli_sre (built by it): the Nth open() of the
 * path $KILL_AT_OPEN_PATH SIGKILLs $KILL_AT_OPEN_PID and waits until it is
 * a zombie or gone, then opens. The target exits at a known point of the
 * dump (between its first check and the capture's), not by chance. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int dead(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !p || p[2] == 'Z' || p[2] == 'X';
}

int open(const char *path, int flags, ...)
{
	static int (*real_open)(const char *, int, ...);
	static int seen;
	const char *want = getenv("KILL_AT_OPEN_PATH");
	const char *nth = getenv("KILL_AT_OPEN_NTH");
	const char *pid = getenv("KILL_AT_OPEN_PID");
	mode_t mode = 0;
	va_list ap;

	va_start(ap, flags);
	if (flags & O_CREAT)
		mode = va_arg(ap, mode_t);
	va_end(ap);
	if (!real_open)
		real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	if (want && pid && !strcmp(path, want) && ++seen == (nth ? atoi(nth) : 1)) {
		kill(atoi(pid), SIGKILL);
		for (int i = 0; i < 2000 && !dead(atoi(pid)); i++)
			usleep(1000);
	}
	return real_open(path, flags, mode);
}
