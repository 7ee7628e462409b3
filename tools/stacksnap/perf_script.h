/* perf_script.h - pieces shared between the CLI's files: kernel symbols
 * (perf-script, profile). */
#ifndef STACKSNAP_TOOL_PERF_SCRIPT_H
#define STACKSNAP_TOOL_PERF_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Kernel symbols: stacksnap_kallsyms__load() (include/stacksnap.h). */

#endif
