/* subcommands.h - entry points of the stacksnap subcommands; each gets
 * argv from its own name on (argv[0] is the subcommand). */
#ifndef STACKSNAP_TOOL_SUBCOMMANDS_H
#define STACKSNAP_TOOL_SUBCOMMANDS_H

/* `stacksnap perf-script FILE`: unwind the samples of a perf.data file. */
int perf_script_main(int argc, char **argv);

/* `stacksnap profile`: on-CPU sampling into a profile (cmd_profile.c). */
int profile_main(int argc, char **argv);
/* `stacksnap diff A B`: a differential flame graph (cmd_diff.c). */
int diff_main(int argc, char **argv);

#endif
