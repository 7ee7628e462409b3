/* proc_about.c - what a live process is, for the dump's header (see
 * proc_about.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "print.h"
#include "proc_about.h"

static size_t read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	return n;
}

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = ((const struct thread_wchan *)a)->tid;
	pid_t y = ((const struct thread_wchan *)b)->tid;

	return (x > y) - (x < y);
}

static void read_wchans(struct proc_about *a)
{
	char path[64];
	struct dirent *de;
	size_t cap = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)a->pid);
	if (!(d = opendir(path)))
		return;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
		struct thread_wchan *w;

		if (tid <= 0)
			continue;
		if (a->nwchans == cap) {
			w = realloc(a->wchans, (cap = cap ? 2 * cap : 64) * sizeof(*w));
			if (!w)
				break;
			a->wchans = w;
		}
		w = &a->wchans[a->nwchans];
		w->tid = tid;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/wchan", (int)a->pid, (int)tid);
		read_file(path, w->wchan, sizeof(w->wchan));
		/* "0": running, or a kernel that does not say. */
		if (!strcmp(w->wchan, "0"))
			w->wchan[0] = 0;
		a->nwchans++;
	}
	closedir(d);
	qsort(a->wchans, a->nwchans, sizeof(*a->wchans), cmp_tid);
}

int proc_about_read(pid_t pid, struct proc_about *a)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	double up = 0;
	size_t n;

	memset(a, 0, sizeof(*a));
	a->pid = pid;
	a->uptime_s = -1;
	read_wchans(a);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = read_file(path, a->cmdline, sizeof(a->cmdline));
	/* A main thread that called pthread_exit() has none: a live
	 * thread's is the process's. */
	for (size_t i = 0; !n && i < a->nwchans; i++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/cmdline", (int)pid,
			 (int)a->wchans[i].tid);
		n = read_file(path, a->cmdline, sizeof(a->cmdline));
	}
	/* As ps: the arguments joined by spaces; a title written over them
	 * ends at its first NUL and trailing NULs. */
	while (n && !a->cmdline[n - 1])
		n--;
	for (size_t i = 0; i < n; i++)
		if (!a->cmdline[i])
			a->cmdline[i] = ' ';
	a->cmdline[n] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	read_file(path, a->comm, sizeof(a->comm));
	a->comm[strcspn(a->comm, "\n")] = 0;
	/* starttime (field 22, clock ticks after boot) against /proc/uptime. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file(path, buf, sizeof(buf)) && (p = strrchr(buf, ')')) &&
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
			  "%*d %*d %*d %*d %*d %*d %llu", &start) == 1 &&
	    read_file("/proc/uptime", buf, sizeof(buf)) && sscanf(buf, "%lf", &up) == 1)
		a->uptime_s = up - (double)start / (double)sysconf(_SC_CLK_TCK);
	if (a->uptime_s < -1)
		a->uptime_s = 0;
	return a->comm[0] || a->cmdline[0] ? 0 : -1;
}

void proc_about_free(struct proc_about *a)
{
	free(a->wchans);
	a->wchans = NULL;
	a->nwchans = 0;
}

const char *proc_about_wchan(const struct proc_about *a, pid_t tid)
{
	struct thread_wchan key = { .tid = tid }, *w;

	if (!a || !a->nwchans)
		return NULL;
	w = bsearch(&key, a->wchans, a->nwchans, sizeof(*a->wchans), cmp_tid);
	return w && w->wchan[0] ? w->wchan : NULL;
}

/* "3 d 4 h", "2 h 5 min", "12 min 3 s", "4 s". */
static void print_duration(FILE *f, double s)
{
	unsigned long long t = (unsigned long long)s;

	if (t >= 86400)
		fprintf(f, "%llu d %llu h", t / 86400, t % 86400 / 3600);
	else if (t >= 3600)
		fprintf(f, "%llu h %llu min", t / 3600, t % 3600 / 60);
	else if (t >= 60)
		fprintf(f, "%llu min %llu s", t / 60, t % 60);
	else
		fprintf(f, "%llu s", t);
}

void proc_about_text(FILE *f, const struct proc_about *a)
{
	fprintf(f, "Process %d: %s\n  ", (int)a->pid,
		a->cmdline[0] ? a->cmdline : "command line unknown");
	if (a->uptime_s >= 0) {
		char when[64];
		time_t t = time(NULL) - (time_t)a->uptime_s;
		struct tm tm;

		fputs("up ", f);
		print_duration(f, a->uptime_s);
		if (gmtime_r(&t, &tm) &&
		    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm))
			fprintf(f, " (started %s), ", when);
		else
			fputs(", ", f);
	}
	fprintf(f, "name %s\n\n", a->comm[0] ? a->comm : "unknown");
}

void proc_about_json(FILE *f, const void *user)
{
	const struct proc_about *a = user;

	fprintf(f, "{\"pid\":%d,\"command\":", (int)a->pid);
	json_str(f, a->cmdline[0] ? a->cmdline : NULL);
	fputs(",\"name\":", f);
	json_str(f, a->comm[0] ? a->comm : NULL);
	if (a->uptime_s >= 0)
		fprintf(f, ",\"uptime_s\":%.0f}", a->uptime_s);
	else
		fputs(",\"uptime_s\":null}", f);
}
