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
	/* With table: INPROC_ROW_CACHE pairs of words shared by every
	 * thread; a pair holds a copy of the row for one offset from
	 * table->lo: each word is (offset + 1) << 32 | one half of the row,
	 * written and read whole (relaxed atomics). Both words must carry
	 * the same offset to be used, so a pair torn by two writers is a
	 * miss, never a wrong row. A hit skips the binary search and the
	 * load of the row itself for a pc seen before. */
	_Atomic(uint64_t) *row_cache;
};

#define INPROC_ROW_CACHE 1024	/* pairs */

/* The module holding addr, from _dl_find_object and the table registry.
 * Async-signal-safe: no allocation, no lock, no system call. Returns 0,
 * or -ENOENT when no loaded module holds addr. */
int inproc_module_find(uintptr_t addr, struct inproc_module *m);

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

#endif
