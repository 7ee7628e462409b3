/* ktable.h - compiled unwind tables as BPF map images for the in-kernel
 * unwinder: one set of maps (kunwind_walk.bpf.h) owned here and shared by
 * every BPF program that walks stacks; each module's table loaded once,
 * found by build-id, and shared by every traced process mapping it;
 * per-process mapping tables (pc -> module + load bias); the memory all
 * of it takes in the kernel. */
#ifndef SS_KTABLE_KTABLE_H
#define SS_KTABLE_KTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "addrspace/addrspace.h"
#include "ktable/kunwind_layout.h"

struct bpf_object;
struct ktable;

/* Memory and work of the tables, for --stats and the benchmarks. */
struct ktable_stats {
	unsigned modules;	/* module tables loaded */
	unsigned procs;		/* processes with a mapping table */
	size_t rows;		/* rows of every loaded table */
	size_t table_bytes;	/* kernel memory of the per-module maps
				   (memlock as the kernel accounts it) */
	size_t fixed_bytes;	/* the shared maps (module array, outer
				   maps, build-id map), same accounting */
	uint64_t compile_ns;	/* compiling tables in user space */
	uint64_t load_ns;	/* creating and filling the maps */
};

/* Creates the shared maps (no program yet). NULL and errno set: EPERM
 * without the rights to create BPF maps. */
struct ktable *ktable__new(struct stacksnap_ctx *ctx);
void ktable__free(struct ktable *kt);

/* Makes obj, opened but not loaded, use the shared maps: every map of
 * kunwind_walk.bpf.h it declares. Returns 0 or -errno. */
int ktable__reuse_maps(struct ktable *kt, struct bpf_object *obj);

/* The table of a whole module as the kernel gets it: the one place a
 * module's table is asked for (NULL: the module has no CFI; its pcs are
 * walked by frame pointers). */
const struct unwind_table *ktable__module_table(struct stacksnap_ctx *ctx,
						struct module *m);

/* Loads m's table into the maps unless already loaded; *id is its module
 * id. Returns 0 or -errno. */
int ktable__load_module(struct ktable *kt, struct module *m, uint32_t *id);

/* Writes pid's mapping table from as (its executable mappings), loading
 * the tables of their modules. Returns 0 or -errno (-E2BIG: more than
 * KU_MAX_MAPS executable mappings; the first ones are kept). */
int ktable__set_process(struct ktable *kt, pid_t pid,
			struct stacksnap_addrspace *as);
int ktable__remove_process(struct ktable *kt, pid_t pid);

void ktable__stats(struct ktable *kt, struct ktable_stats *st);

/* The kernel's memlock accounting of a BPF map or program fd (from
 * /proc/self/fdinfo), or 0 when unknown. */
size_t ktable__fd_memlock(int fd);

/* Whether user space can go on where an in-kernel walk ended for reason
 * end (a row that needs DWARF evaluation, no or unusable CFI, an
 * unreadable page): the hybrid walk. */
bool ktable__can_continue(unsigned end);

/* The hybrid: unwinds the stack copy (stack_len bytes from stack_start)
 * from the frame where the in-kernel walk stopped (es), as the
 * user-space unwinder would from there, into frames[0..max) (frames[0]
 * is the stop frame, with its pc). Returns the frame count and sets *end,
 * -ENOENT when es->end is not one to go past, -ERANGE when the copy does
 * not hold the stop frame's stack, or -errno. */
int ktable__continue_walk(struct stacksnap_procs *procs, struct stacksnap_unwinder *uw,
			  pid_t pid, pid_t tid, const struct ku_end_state *es,
			  const void *stack, size_t stack_len, uint64_t stack_start,
			  struct stacksnap_frame *frames, size_t max,
			  enum stacksnap_end *end);

#endif
