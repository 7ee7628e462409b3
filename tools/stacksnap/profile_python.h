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

#endif
