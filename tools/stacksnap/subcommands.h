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

#endif
