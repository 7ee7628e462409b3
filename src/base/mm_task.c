/* mm_task.c - the live task of a process whose address space is read
 * (mm_task.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mm_task.h"

bool mm_task_exited(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* comm may hold spaces and parens */
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

pid_t mm_task_of(pid_t pid)
{
	char path[64];
	struct dirent *de;
	pid_t found = pid;
	DIR *d;

	if (!mm_task_exited(pid, pid))
		return pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return pid;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);

		if (tid > 0 && tid != pid && !mm_task_exited(pid, tid)) {
			found = tid;
			break;
		}
	}
	closedir(d);
	return found;
}
