/* profile_offcpu.h - `stacksnap profile --off-cpu` (profile_offcpu.c),
 * called by cmd_profile.c with what its command line said. */
#ifndef STACKSNAP_TOOL_PROFILE_OFFCPU_H
#define STACKSNAP_TOOL_PROFILE_OFFCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "profile_out.h"
#include "stacksnap.h"

struct offcpu_args {
	struct stacksnap_ctx *ctx;
	pid_t pid;			/* -p; 0 with cmd */
	char **cmd;			/* -- CMD [ARGS] */
	double duration;		/* seconds; 0: until the target ends */
	size_t stack_size;
	unsigned max_stack;
	bool no_demangle, stats;
	const struct profile_out *out;
};

/* Profiles where the target's threads wait until it ends, --duration or
 * a signal; writes the profile. Returns an exit status. */
int profile_offcpu_run(const struct offcpu_args *a);

#endif
