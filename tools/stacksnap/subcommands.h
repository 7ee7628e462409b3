/* subcommands.h - entry points of the stacksnap subcommands; each gets
 * argv from its own name on (argv[0] is the subcommand). */
#ifndef STACKSNAP_TOOL_SUBCOMMANDS_H
#define STACKSNAP_TOOL_SUBCOMMANDS_H

/* `stacksnap perf-script FILE`: unwind the samples of a perf.data file. */
int perf_script_main(int argc, char **argv);

/* `stacksnap symbolize`: name addresses of a live or recorded process. */
int symbolize_main(int argc, char **argv);

/* `stacksnap watch PID`: a wall-clock profile from an attached walker. */
int watch_main(int argc, char **argv);
/* `stacksnap show FILE`: print a snapshot file written by --save. */
int show_main(int argc, char **argv);

struct options;
/* `stacksnap --core FILE [--exe PATH]`: print the threads of a core dump
 * (o is the dump's parsed command line). */
int core_main(struct options *o);
/* `stacksnap trace -e EVENT (-p PID | -- CMD)`: call stacks at events,
 * captured with eBPF. */
int trace_main(int argc, char **argv);
/* `stacksnap profile`: on-CPU sampling into a profile (cmd_profile.c). */
int profile_main(int argc, char **argv);
/* `stacksnap diff A B`: a differential flame graph (cmd_diff.c). */
int diff_main(int argc, char **argv);

#endif
