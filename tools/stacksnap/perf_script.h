/* perf_script.h - pieces shared between the CLI's files: kernel symbols
 * (perf-script, profile) and the folded-stack counter of perf_folded.c
 * (trace --count/--folded, watch). */
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

/* Counts of distinct folded stacks ("comm;outer;...;inner"): memory
 * follows the number of distinct stacks, not of samples. */
struct folded;
struct folded *folded_new(void);
/* Adds count to the stack in key[0..len). Returns 0 or -ENOMEM. */
int folded_add(struct folded *f, const char *key, size_t len, uint64_t count);
/* Prints "stack count" lines sorted by stack, as stackcollapse-perf.pl. */
int folded_print(struct folded *f, FILE *out);
/* Prints the stacks most frequent first, as `stacksnap trace --count`
 * shows them: "COUNT FIRST" then the other parts of the key, last first,
 * one per line and indented (the innermost frame first). */
int folded_print_counts(struct folded *f, FILE *out);
void folded_free(struct folded *f);
/* Calls fn for every distinct stack (in no order) until it returns
 * non-zero, which is returned. */
int folded_visit(struct folded *f,
		 int (*fn)(void *user, const char *key, uint64_t count), void *user);
/* Appends one frame's name to the folded stack being built in *key
 * (grown as needed; *len its length), tidied as stackcollapse-perf.pl
 * does: no parameter list, ';' made ':', an unknown function named after
 * its module ([libc.so.6]) or [unknown]; kernel adds "_[k]". Returns 0 or
 * -ENOMEM. */
int folded_key_add(char **key, size_t *keycap, size_t *len, const char *name,
		   const char *dso, bool kernel);

#endif
