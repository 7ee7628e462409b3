/* profile_python.h - `stacksnap profile` of a Python process
 * (profile_python.c), called by cmd_profile.c with what its command line
 * said. */
#ifndef STACKSNAP_TOOL_PROFILE_PYTHON_H
#define STACKSNAP_TOOL_PROFILE_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "profile_out.h"
#include "stacksnap.h"

struct sampled_args {
	struct stacksnap_ctx *ctx;
	pid_t pid;			/* -p; 0 with cmd */
	char **cmd;			/* -- CMD [ARGS] */
	unsigned freq;			/* -F */
	double duration;		/* seconds; 0: until the target ends */
	size_t stack_size;
	unsigned max_stack;
	int runtime;			/* --runtime: enum runtime_mode */
	bool no_demangle, stats;
	const struct profile_out *out;
};

/* Samples the target at a->freq per CPU with the trace's eBPF program
 * (which walks each sample's Python frames) until it ends, --duration or
 * a signal; writes the profile. Returns an exit status. */
int profile_python_run(const struct sampled_args *a);

/* Whether -- CMD looks like it runs CPython: its program (found on PATH
 * as execvp finds it) or the interpreter of its "#!" line, followed
 * through `env` and up to four scripts, is named python* (python3,
 * python3.12, a pyenv shim, a venv's bin/python). What CMD runs is not
 * known before it runs: a command that runs Python another way (sh -c,
 * a launcher) is caught at its samples (profile_python_check). */
bool profile_python_command(char *const *cmd);

/* Whether this process may load BPF programs (root, CAP_BPF and
 * CAP_PERFMON, or CAP_SYS_ADMIN), from /proc/self/status alone. */
bool profile_bpf_permitted(void);

#endif
