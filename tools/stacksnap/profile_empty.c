/* profile_empty.c - why a profile has no sample, said on stderr: from the
 * target's CPU time over the profile (its threads' schedstat), whether it
 * still exists, and its state. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "profile_empty.h"

/* pid's state letter from /proc/PID/stat; false when it cannot be read
 * (the process is gone). */
static bool read_state(pid_t pid, char *state)
{
	char path[64], buf[1024];
	FILE *f;
	size_t n;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* comm may hold spaces and parentheses: the fields follow the last ')'. */
	return (p = strrchr(buf, ')')) && sscanf(p + 1, " %c", state) == 1;
}

/* The nanoseconds pid's threads have run on a CPU: the sum of their
 * /proc/PID/task/TID/schedstat (exact, where /proc/PID/stat counts clock
 * ticks: a process that polls now and then shows none there). */
static bool read_cpu_ns(pid_t pid, unsigned long long *ns)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return false;
	*ns = 0;
	while ((d = readdir(dir))) {
		unsigned long long t;
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/schedstat", (int)pid, d->d_name);
		if (!(f = fopen(path, "re")))
			continue; /* exited meanwhile */
		if (fscanf(f, "%llu", &t) == 1)
			*ns += t;
		fclose(f);
	}
	closedir(dir);
	return true;
}

void cpu_use_begin(struct cpu_use *u, pid_t pid)
{
	char path[64];
	FILE *f;

	memset(u, 0, sizeof(*u));
	u->pid = pid;
	if (pid <= 0 || !read_cpu_ns(pid, &u->cpu_ns))
		return;
	u->known = true;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((f = fopen(path, "re"))) {
		if (fgets(u->comm, sizeof(u->comm), f))
			u->comm[strcspn(u->comm, "\n")] = 0;
		fclose(f);
	}
}

/* Whether u's process is gone (a zombie counts as gone: it runs no more). */
static bool gone(const struct cpu_use *u, char *state)
{
	if (!read_state(u->pid, state))
		return kill(u->pid, 0) && errno == ESRCH;
	return *state == 'Z' || *state == 'X';
}

/* The state letter of /proc/PID/stat in words. */
static const char *state_words(char state)
{
	switch (state) {
	case 'S': return "asleep";
	case 'D': return "in an uninterruptible wait";
	case 'T': return "stopped";
	case 't': return "stopped by its tracer";
	case 'R': return "runnable";
	}
	return "state unknown";
}

void profile_say_no_samples(const struct cpu_use *u, char *const *cmd, unsigned freq)
{
	double period_ms = 1000.0 / (freq ? freq : 1);
	unsigned long long ns = 0;
	char state = '?';

	if (cmd) {
		fprintf(stderr, "stacksnap profile: no samples: '%s' did not run on a "
			"CPU long enough to be sampled (one sample per %.1f ms of CPU "
			"time at -F %u)\n", cmd[0], period_ms, freq);
		return;
	}
	if (!u || u->pid <= 0) {
		fprintf(stderr, "stacksnap profile: no samples: no task ran on a "
			"CPU while sampled\n");
		return;
	}
	if (gone(u, &state)) {
		fprintf(stderr, "stacksnap profile: no samples: pid %d (%s) exited "
			"before one was taken\n", (int)u->pid, u->comm);
		return;
	}
	if (u->known && read_cpu_ns(u->pid, &ns) && ns <= u->cpu_ns) {
		fprintf(stderr, "stacksnap profile: no samples: pid %d (%s) did not "
			"run on a CPU during the profile (%s: profile samples "
			"running threads only; `stacksnap watch %d` samples where it "
			"waits)\n", (int)u->pid, u->comm, state_words(state), (int)u->pid);
		return;
	}
	if (u->known && ns > u->cpu_ns)
		fprintf(stderr, "stacksnap profile: no samples: pid %d (%s) ran %.1f ms "
			"on a CPU during the profile, too little to be sampled (one "
			"sample per %.1f ms of a thread's CPU time at -F %u)\n",
			(int)u->pid, u->comm, (double)(ns - u->cpu_ns) / 1e6, period_ms, freq);
	else
		fprintf(stderr, "stacksnap profile: no samples: pid %d (%s) did not "
			"run on a CPU long enough to be sampled (one sample per %.1f ms "
			"of a thread's CPU time at -F %u)\n", (int)u->pid, u->comm,
			period_ms, freq);
}

void profile_say_no_waits(const struct cpu_use *u, char *const *cmd)
{
	char state;

	if (cmd) {
		fprintf(stderr, "stacksnap profile: no off-CPU time: no thread of "
			"'%s' left a CPU to wait\n", cmd[0]);
		return;
	}
	if (u && u->pid > 0 && gone(u, &state)) {
		fprintf(stderr, "stacksnap profile: no off-CPU time: pid %d (%s) "
			"exited before a thread of it left a CPU to wait\n",
			(int)u->pid, u->comm);
		return;
	}
	fprintf(stderr, "stacksnap profile: no off-CPU time: no thread of pid %d "
		"(%s) waited during the profile (it ran or was runnable all the "
		"time: a preemption is not a wait; `stacksnap profile -p %d` "
		"samples where it runs)\n", u ? (int)u->pid : 0, u ? u->comm : "?",
		u ? (int)u->pid : 0);
}
