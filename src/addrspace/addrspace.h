/* addrspace.h - an address space: the target's mappings, sorted, each
 * executable one tied to a module and the bias between the module's
 * link-time addresses and the run-time ones. */
#ifndef SS_ADDRSPACE_ADDRSPACE_H
#define SS_ADDRSPACE_ADDRSPACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "addrspace/module.h"

/* One mapping. Invariant: start < end; mod != NULL implies bias is valid
 * (run-time = link-time + bias); pending implies mod == NULL and a path.
 * Executable mappings without a module (anonymous, JIT) are kept so
 * steppers know the address is code. */
struct as_map {
	uint64_t start, end, offset;
	uint64_t bias;
	struct module *mod; /* holds a reference; NULL for anonymous code */
	uint32_t prot;
	bool pending;	    /* a file of the target's maps not opened yet:
			       addrspace__find opens it (a dump opens only
			       the modules its pcs fall in) */
	char *path;	    /* as the target names it; NULL for anonymous */
	uint64_t inode;	    /* the maps line's, for a pending mapping whose
			       process is gone when it is opened */
};

/* Invariant: maps is sorted by start and non-overlapping. last is the
 * index of the most recent lookup hit (consecutive frames are usually in
 * the same module), always < n when n > 0. */
/* A writable mapping of a process read from its maps (a stack, heap,
 * data): a snapshot clamps its stack copies to them. */
struct as_rw_range {
	uint64_t start, end;
};

struct stacksnap_addrspace {
	struct stacksnap_ctx *ctx;
	pid_t pid;		/* 0 for caller-supplied mappings */
	pid_t mm_pid;		/* whose /proc files and memory are read:
				   pid, or a live thread when its main
				   thread has exited (base/mm_task.h) */
	struct as_map *maps;
	size_t n, cap;
	size_t last;
	/* The writable mappings of the last read of /proc/PID/maps (the
	 * snapshot of the same process reuses them: one read, not two). */
	struct as_rw_range *rw;
	size_t nrw, caprw;
	/* The process's perf map and jitdump: names of its anonymous code
	 * (NULL until a pc there is symbolized; live processes only). */
	struct jit_symbols *jit;
	/* A descriptor of /proc/PID/root, opened with the first module of a
	 * live target without a sysroot: its files are opened relative to
	 * it, in the target's mount namespace, without a walk through the
	 * magic link each. -1 when not open (root_tried: not available, then
	 * files are opened by their /proc/PID/root paths); counted in the
	 * context's root_fds while open. */
	int root_fd;
	bool root_tried;
};

/* How many root descriptors one context's address spaces hold at most: a
 * recorder following thousands of processes keeps that many spaces, and
 * the others open their files by path. */
#define AS_MAX_ROOT_FDS 32

/* The JIT symbol source of as: a live process's perf map and jitdump
 * (made at the first call), or what addrspace__set_jit gave a saved
 * space; NULL when there is none. */
struct jit_symbols *addrspace__jit(struct stacksnap_addrspace *as);
/* Gives as the names of a saved snapshot's JIT code (takes js). */
void addrspace__set_jit(struct stacksnap_addrspace *as, struct jit_symbols *js);

/* Moves src's mappings that overlap none of dst's into dst (a re-read of
 * the maps filling the gaps of the mappings the kernel's records gave:
 * those stay as of the events being unwound). Returns how many, or
 * -ENOMEM. */
int addrspace__merge_new(struct stacksnap_addrspace *dst, struct stacksnap_addrspace *src);

/* The writable mappings read with the maps; 0 for caller-supplied ones. */
size_t addrspace__writable(const struct stacksnap_addrspace *as,
			   const struct as_rw_range **out);

const struct as_map *addrspace__find_slow(struct stacksnap_addrspace *as,
					  uint64_t addr);

/* The mapping containing addr, or NULL, its module opened. Does not
 * allocate once the modules met are open. Consecutive frames are mostly
 * in one mapping: that case is inlined. */
static inline const struct as_map *addrspace__find(struct stacksnap_addrspace *as,
						   uint64_t addr)
{
	if (as->n) {
		const struct as_map *m = &as->maps[as->last];

		if (addr - m->start < m->end - m->start && !m->pending)
			return m;
	}
	return addrspace__find_slow(as, addr);
}

/* Opens the module of every mapping not opened yet (for callers that
 * walk as->maps themselves: saving every mapping's build-id, exporting
 * every module's table). */
void addrspace__resolve_all(struct stacksnap_addrspace *as);

/* A new address space with the same mappings (modules referenced again),
 * for a forked process. NULL and errno set on failure. */
/* Adds a mapping backed by a module the caller already holds (an image
 * that is not a file, such as a vDSO); takes a reference of its own. */
int addrspace__add_with_module(struct stacksnap_addrspace *as,
			       const struct stacksnap_mapping *map,
			       struct module *mod);
/* Adds a file mapping whose file is not opened (the file at its path is
 * another build): its frames name the file, without functions, and are
 * never taken for JIT code. */
int addrspace__add_unopened(struct stacksnap_addrspace *as,
			    const struct stacksnap_mapping *map);

struct stacksnap_addrspace *addrspace__clone(const struct stacksnap_addrspace *as);

/* How many times stacksnap_procs__unwind_capture re-read a process's
 * maps after a miss (the trace loader's statistics). */
uint64_t procs_rereads(const struct stacksnap_procs *p);
/* Whether procs follows process pid and has not seen its exit (a
 * recorder of the kernel's mmap records keeps only those). */
bool procs_alive(const struct stacksnap_procs *p, pid_t pid);
/* Whether p's processes are kept by the kernel's mmap records (as of
 * the events being unwound): a re-read of the maps on a miss (JIT code)
 * then adds the mappings the records lack instead of replacing the
 * process's mappings with the later ones. */
void procs_set_from_records(struct stacksnap_procs *p, bool on);
/* More copied ranges for the next unwinds of captures (a thread's normal
 * stack below its alternate signal stack's copy); n = 0 removes them.
 * The bytes must outlive those unwinds. */
void procs_set_more(struct stacksnap_procs *p,
		    const struct stacksnap_stack_range *ranges, size_t n);

#endif
