/* perf_script.h - pieces of `stacksnap perf-script` shared between its
 * files: kernel symbols from /proc/kallsyms. */
#ifndef STACKSNAP_TOOL_PERF_SCRIPT_H
#define STACKSNAP_TOOL_PERF_SCRIPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Kernel symbols, loaded on first use, through a per-boot cache file in
 * cache_dir (NULL: none). NULL name when unknown (no /proc/kallsyms, or
 * addresses hidden by kptr_restrict). */
struct kallsyms;
struct kallsyms *kallsyms_load(const char *cache_dir);
const char *kallsyms_lookup(struct kallsyms *ks, uint64_t addr, uint64_t *off);
void kallsyms_free(struct kallsyms *ks);

#endif
