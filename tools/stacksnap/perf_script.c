/* perf_script.c - `stacksnap perf-script`: not written yet (issue 4). */
#include <stdio.h>

#include "options.h"
#include "subcommands.h"

int perf_script_main(int argc, char **argv)
{
	fprintf(stderr, "stacksnap perf-script: not available yet\n");
	return EXIT_USAGE;
}
