/* table_internal.h - what the files of table/ share and nobody else
 * sees: the fragments a compile makes rows from, a lazy table's state, and
 * the steps the compile, the lazy fills and the completion have in common. */
#ifndef SS_TABLE_TABLE_INTERNAL_H
#define SS_TABLE_TABLE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "dwarf/cfi.h"
#include "table/unwind_table.h"

/* An FDE found while scanning, before any program runs. */
struct fde_ref {
	uint64_t begin, end;
	uint32_t off;
	uint32_t input;
};

/* A piece of the table in the making: [start, end) with one row. */
struct frag {
	uint64_t start, end;
	struct unwind_row row;
};

/* An address range already claimed by an earlier input. */
struct range {
	uint64_t begin, end;
};

/* State shared by the row callback while one FDE runs. */
struct compile {
	const struct log_sink *log;
	struct frag *frags;
	size_t nfrags, capfrags;
	struct ut_fde *fdes;
	size_t nfdes, capfdes;
	const struct cfi_cie *cie;
	uint32_t input, fde_off;
	int32_t fde_index;		/* -1 until a DWARF row needs it */
	const struct range *clip;	/* allowed ranges for this FDE */
	size_t nclip;
	size_t frag_floor;		/* first fragment of this FDE */
};

/* A lazy table's state. Invariants: frags[] covers [t->lo, t->hi) without
 * gaps or overlaps, sorted; a LAZY fragment is a union of whole regions,
 * region i being [loc(i), loc(i + 1)) (the last up to t->hi); t's rows
 * are built from frags[]. */
struct ut_lazy {
	const struct log_sink *log;
	const uint8_t *entries;	/* the header's table: (loc, fde) sdata4 pairs */
	struct fde_ref *refs;	/* or our own index (sorted by begin), for CFI
				   without a header table (.debug_frame) */
	size_t nentries;
	uint64_t hdr_vaddr;	/* entries are relative to it (datarel) */
	struct frag *frags;
	size_t nfrags, capfrags;
	size_t capfdes;
	size_t nfills;
	size_t max_fills;	/* then compile whole */
};

/* Collects every usable FDE of every input (compile.c). */
int ut_scan_fdes(const struct cfi_input *inputs, size_t ninputs,
		 const struct log_sink *log, struct fde_ref **out,
		 size_t *nout);
/* Orders FDE references by input, then start, then offset. */
int ut_cmp_fde_ref(const void *a, const void *b);
/* cfi_run's row callback: the row as a fixed row (or a DWARF row naming
 * the FDE), clipped to cc->clip, appended to cc->frags. */
int ut_on_row(void *user, uint64_t start, uint64_t end,
	      const struct cfi_row *r);
/* Makes t's starts, rows and block index from sorted, non-overlapping
 * fragments (nfrags > 0). -ENOMEM leaves what was allocated in t. */
int ut_build(struct unwind_table *t, struct frag *frags, size_t nfrags);

/* Compiles the header region holding vaddr into a lazy table (lazy.c).
 * -ENOTSUP: the CFI there is not what the lazy path handles (compile
 * whole). */
int ut_lazy_fill(struct unwind_table *t, uint64_t vaddr);
void ut_lazy_free(struct ut_lazy *z);

#endif
