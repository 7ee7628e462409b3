/* proc_lines.h - the /proc lines the wait sources read, parsed by pure
 * functions (fuzz/fuzz_waits.c): a thread's system call
 * (/proc/PID/task/TID/syscall) and one lock of /proc/locks. */
#ifndef SS_WAITS_PROC_LINES_H
#define SS_WAITS_PROC_LINES_H

#include <stdbool.h>
#include <stdint.h>

/* "NR A1 A2 A3 A4 A5 A6 SP PC" (hex but NR), as the kernel prints a
 * thread blocked in a system call. */
struct syscall_line {
	long nr;
	uint64_t args[6];
	uint64_t sp, pc;
};

/* "ID: TYPE MODE RW PID MAJ:MIN:INODE START END", or with "->" after the
 * ID for a waiter. */
struct lock_line {
	char type[16], rw[16];
	bool waiter;
	int pid;		/* -1: an OFD lock, which names no process */
	unsigned major, minor;
	unsigned long long inode;
};

/* Parses the NUL-terminated text line; 0, or -1 when it is not a blocked
 * thread's system call ("running", "-1 SP PC", anything else). */
int syscall_line__parse(const char *line, struct syscall_line *out);
/* Parses one NUL-terminated line of /proc/locks; 0, or -1. */
int lock_line__parse(const char *line, struct lock_line *out);

#endif
