/* perf_script.h - pieces shared between the CLI's files: kernel symbols
 * (perf-script, profile). */
#ifndef STACKSNAP_TOOL_PERF_SCRIPT_H
#define STACKSNAP_TOOL_PERF_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Kernel symbols, loaded on first use: those of the kernel whose build-id
 * (hex) the recording gives, from perf's build-id cache
 * ($PERF_BUILDID_DIR or ~/.debug), else /proc/kallsyms through a
 * per-boot cache file in cache_dir (NULL: none); none when the recording
 * names another kernel than the running one and no copy is kept. NULL
 * name when unknown (addresses hidden by kptr_restrict). */
struct kallsyms;
struct kallsyms *kallsyms_load(const char *cache_dir, const char *kernel_build_id);
const char *kallsyms_lookup(struct kallsyms *ks, uint64_t addr, uint64_t *off);
void kallsyms_free(struct kallsyms *ks);

#endif
