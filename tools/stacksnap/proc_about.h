/* proc_about.h - what a live process is, for the dump's header (as `show`
 * prints a snapshot's): its command line as ps shows it (/proc/PID/cmdline,
 * a process title it set included), its name and how long it has run; and
 * each thread's wait channel (/proc/PID/task/TID/wchan), read before the
 * freeze (during it every thread waits in the ptrace stop). */
#ifndef STACKSNAP_TOOL_PROC_ABOUT_H
#define STACKSNAP_TOOL_PROC_ABOUT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

struct thread_wchan {
	pid_t tid;
	char wchan[48];	/* "" when it waits in none */
};

struct proc_about {
	pid_t pid;
	char cmdline[1024];	/* arguments joined by spaces, as ps; "" unknown */
	char comm[16];
	double uptime_s;	/* < 0: unknown */
	struct thread_wchan *wchans;	/* nwchans, by tid */
	size_t nwchans;
};

/* Reads what pid is (and its threads' wait channels). Returns 0, or -1
 * when it cannot be read (the dump then says why). */
int proc_about_read(pid_t pid, struct proc_about *a);
void proc_about_free(struct proc_about *a);
/* tid's wait channel, or NULL for none. */
const char *proc_about_wchan(const struct proc_about *a, pid_t tid);
/* "Process PID: CMDLINE" and "  up 3 h 12 min (started ...), name NAME",
 * then a blank line. */
void proc_about_text(FILE *f, const struct proc_about *a);
/* {"pid":N,"command":...,"name":...,"uptime_s":N} */
void proc_about_json(FILE *f, const void *a);

#endif
