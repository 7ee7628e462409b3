/* profile_empty.h - the one stderr line a profile without any sample owes
 * its user: why nothing was recorded (the target never ran on a CPU while
 * sampled, ran less than a sample period, exited first, never blocked),
 * where an empty output with exit 0 would look like a broken tool. */
#ifndef STACKSNAP_TOOL_PROFILE_EMPTY_H
#define STACKSNAP_TOOL_PROFILE_EMPTY_H

#include <stdbool.h>
#include <sys/types.h>

/* A -p process's CPU time at the start of the profile (its threads'
 * nanoseconds on a CPU, from their schedstat) and its name. Invariant:
 * cpu_ns and comm are meaningful only when known. */
struct cpu_use {
	pid_t pid;
	bool known;
	unsigned long long cpu_ns;
	char comm[16];
};

/* Reads pid's CPU time and name now (pid 0: nothing to read). */
void cpu_use_begin(struct cpu_use *u, pid_t pid);

/* profile (cpu-clock samples) took none: says why on stderr, for the
 * process u began with (-p), the command cmd (-- CMD), or every CPU
 * (neither), sampled freq times a second. */
void profile_say_no_samples(const struct cpu_use *u, char *const *cmd, unsigned freq);

/* profile --off-cpu recorded no wait: says why on stderr, for the process
 * u began with, or the command cmd. */
void profile_say_no_waits(const struct cpu_use *u, char *const *cmd);

#endif
