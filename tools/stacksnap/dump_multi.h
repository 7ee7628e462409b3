/* dump_multi.h - several processes in one run (`stacksnap PID PID...`,
 * -p repeated, --pgrep PATTERN): one dump (one freeze) per process, one
 * after another; with --json one {"processes": [...]} object. Any caller
 * that dumps processes one by one (the wait-for graph's --follow) gives
 * its own dump of one process. */
#ifndef STACKSNAP_TOOL_DUMP_MULTI_H
#define STACKSNAP_TOOL_DUMP_MULTI_H

#include <stdbool.h>
#include <sys/types.h>

#include "options.h"

/* Dumps process pid with options o (o->pid is pid), printing it (text or
 * one JSON object); *printed when anything of it was printed. Returns its
 * exit code. */
typedef int (*dump_one_fn)(const struct options *o, pid_t pid, void *user,
			   bool *printed);

/* The processes to dump: pids[0..npids) in the order given, then those
 * --pgrep matches, by pid (each once, never this process). Returns how
 * many (into *out, malloc'd), or -1 (said). */
long dump_multi_pids(const struct options *o, pid_t **out);

/* Every process of pids[0..n) dumped by one(), in order; text: each with
 * its header, a blank line between; --json: {"processes":[...]}, a process
 * not dumped as {"pid":N,"exit":RC}. Stops at a signal's exit code.
 * Returns 0 when every dump returned 0, else the first other exit code. */
int dump_multi_run(const struct options *o, const pid_t *pids, size_t n,
		   dump_one_fn one, void *user);

/* dump_multi_pids() then dump_multi_run(); no process: exit 2 (said). */
int dump_multi(const struct options *o, dump_one_fn one, void *user);

#endif
