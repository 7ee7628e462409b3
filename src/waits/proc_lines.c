/* proc_lines.c - the /proc lines the wait sources read (proc_lines.h). */
#include <stdio.h>
#include <string.h>

#include "proc_lines.h"

int syscall_line__parse(const char *line, struct syscall_line *out)
{
	long long nr;
	unsigned long long a[6], sp, pc;

	memset(out, 0, sizeof(*out));
	if (sscanf(line, "%lld %llx %llx %llx %llx %llx %llx %llx %llx", &nr,
		   &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &sp, &pc) != 9 || nr < 0)
		return -1;
	out->nr = (long)nr;
	for (int i = 0; i < 6; i++)
		out->args[i] = a[i];
	out->sp = sp;
	out->pc = pc;
	return 0;
}

int lock_line__parse(const char *line, struct lock_line *out)
{
	char mode[16];
	int n = 0;

	memset(out, 0, sizeof(*out));
	if (sscanf(line, "%*d: %n", &n) < 0 || !n)
		return -1;
	line += n;
	if (!strncmp(line, "->", 2)) {
		out->waiter = true;
		line += 2;
	}
	if (sscanf(line, "%15s %15s %15s %d %x:%x:%llu", out->type, mode, out->rw,
		   &out->pid, &out->major, &out->minor, &out->inode) != 7)
		return -1;
	return 0;
}
