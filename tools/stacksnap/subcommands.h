/* subcommands.h - entry points of the stacksnap subcommands; each gets
 * argv from its own name on (argv[0] is the subcommand). */
#ifndef STACKSNAP_TOOL_SUBCOMMANDS_H
#define STACKSNAP_TOOL_SUBCOMMANDS_H

/* `stacksnap perf-script FILE`: unwind the samples of a perf.data file. */
int perf_script_main(int argc, char **argv);

/* `stacksnap trace -e EVENT (-p PID | -- CMD)`: call stacks at events,
 * captured with eBPF. */
int trace_main(int argc, char **argv);

#endif
