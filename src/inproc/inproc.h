/* inproc.h - the in-process backtrace's module registry: which loaded
 * module holds a pc (glibc's lock-free _dl_find_object), its .eh_frame
 * through .eh_frame_hdr, and the unwind table compiled for it outside
 * signal context and published with atomics. Shared by the set-up
 * (registry.c) and the signal-safe walk (backtrace.c). */
#ifndef SS_INPROC_INPROC_H
#define SS_INPROC_INPROC_H

#include <stdbool.h>
#include <stdint.h>

#include "table/unwind_table.h"

/* What the walk knows of one loaded module. Invariant: start < end;
 * table, when not NULL, was compiled from this very module (same
 * mapping, same .eh_frame_hdr, same fingerprint of it) and is never
 * freed; hdr points into the module's mapped memory. */
struct inproc_module {
	uintptr_t start, end;	/* the module's mapping (dlfo_map_*) */
	uint64_t bias;		/* run-time minus link-time addresses */
	const uint8_t *hdr;	/* .eh_frame_hdr; NULL when it has none */
	const struct unwind_table *table; /* NULL: none published yet */
	/* INPROC_ROW_CACHE words shared by every thread, published by the
	 * first walk that meets the module or by prepare (NULL before, and
	 * for a module of 4 GiB or more). Rows come from the table, or,
	 * without one, from interpreting the pc's FDE; prepare empties the
	 * cache when it adds the table. The row for the pc
	 * addr (a return address - 1, or an exact pc) is at index
	 * (addr + 1) % INPROC_ROW_CACHE, taken from the run-time address so
	 * that the walk's critical path computes it with one AND of the
	 * return address. A word holds (addr + 1 - start) << 32 | the row in
	 * the fast form (INPROC_FAST_* below), written and read whole with
	 * relaxed atomics: one load gives both the tag and the row, so no
	 * torn entry can be used, and 0 (empty) matches no pc. A hit skips
	 * the binary search. Rows the fast form cannot hold are not cached. */
	_Atomic(uint64_t) *row_cache;
};

#define INPROC_ROW_CACHE 2048	/* words: 16 KiB a module */

/* The fast form of a compact row, 32 bits: what the walk's inner loop
 * decodes with a shift or two. cfa_off (int16) in bits 0-15; the CFA's
 * base register; whether rbp and rbx are saved (else unchanged); the
 * slots where they are saved, -offset / 8 (7 and 6 bits, at least 1).
 * The outermost frame has one (INPROC_FAST_END); rows with another CFA
 * rule, an undefined register, or one saved at or above the CFA, not
 * 8-aligned or too far below it, have none. */
#define INPROC_FAST_RBP_BASE	(1u << 16)	/* CFA = rbp + off, else rsp */
#define INPROC_FAST_RBP_SAVED	(1u << 17)	/* at CFA - 8 * slot */
#define INPROC_FAST_RBX_SAVED	(1u << 18)
#define INPROC_FAST_RBP_SLOT	19		/* 7 bits */
#define INPROC_FAST_RBX_SLOT	26		/* 6 bits */
/* The outermost frame (return address undefined): CFA = rsp + 0, which
 * no other row has in this form, and which ends the inner loop. */
#define INPROC_FAST_END		0u

/* The module holding addr, from _dl_find_object and the table registry.
 * Async-signal-safe: no allocation, no lock, no system call. Returns 0,
 * or -ENOENT when no loaded module holds addr. */
int inproc_module_find(uintptr_t addr, struct inproc_module *m);

/* Publishes an empty row cache for a module that has none (m from
 * inproc_module_find, without a table or cache), for the walks to fill
 * with the rows they interpret: the cache is mmap()ed and the registry
 * slot claimed by compare-and-swap, so this is lock-free, free of
 * malloc and safe in a signal handler (one system call, once per
 * module). Sets m->row_cache. Returns 0, or -ENOENT (no .eh_frame_hdr),
 * -ENOSPC (registry full), -ENOMEM. */
int inproc_module_publish_cache(struct inproc_module *m);

/* The module's .eh_frame as a CFI input (run-time bytes, link-time
 * vaddr), bounded by the end of the segment that holds it, found from
 * the ELF headers in the module's memory. Async-signal-safe. Returns 0
 * or -ENOENT. */
int inproc_module_eh_frame(const struct inproc_module *m,
			   struct cfi_input *in);

/* Whether [addr, addr + len) lies inside one loaded segment of the module
 * (executable if exec), from its ELF program headers in memory: a module's
 * mapping range has holes between segments, which must not be read.
 * Async-signal-safe. */
bool inproc_module_mapped(const struct inproc_module *m, uintptr_t addr,
			  size_t len, bool exec);

/* Frames stepped by interpreting .eh_frame, for stacksnap_backtrace_stats. */
extern _Atomic(uint64_t) inproc_interpreted_frames;

/* Finds, through .eh_frame_hdr's binary search table, the .eh_frame
 * offset of the FDE whose range may hold run-time address pc (the last
 * one starting at or before it; the caller checks its end). Returns 0 or
 * -ENOENT. Async-signal-safe. */
int inproc_hdr_search(const struct inproc_module *m, const struct cfi_input *eh,
		      uintptr_t pc, size_t *fde_off);

/* The side stacks the walks of handlers on small alternate signal stacks
 * run on (side_stack.c), with signals blocked: so many, of so many bytes
 * each (a walk interpreting .eh_frame needs ~13 KiB, a lazy binding of a
 * libc function ~3 KiB more). */
#define INPROC_SIDE_STACKS 32
#define INPROC_SIDE_STACK_BYTES (32 * 1024)

/* Runs *ret = fn(arg) on a free side stack: 0, or -1 when all are in use
 * (fn not called). Lock-free, allocation-free, async-signal-safe. */
int inproc_side_call(int (*fn)(void *), void *arg, int *ret);

/* The address range of every side stack: readable memory for a walk. */
void inproc_side_range(uintptr_t *lo, uintptr_t *hi);

/* The return address of the side-stack switch's call: the frame above it
 * is on the caller's own stack, wherever that lies. */
extern const char inproc_side_return[];

#endif
