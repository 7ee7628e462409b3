/* unwind_table.h - a module's DWARF CFI compiled into a compact table: a
 * sorted array of start addresses beside an array of small fixed rows, with
 * a block index so that a lookup is a short binary search (the shape of the
 * kernel's ORC tables). Rows that do not fit the fixed shape point back to
 * their FDE and are evaluated from the DWARF, bounded, when reached. */
#ifndef SS_TABLE_UNWIND_TABLE_H
#define SS_TABLE_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "dwarf/cfi.h" /* struct cfi_input */
#include "stacksnap.h"

/* How to find the canonical frame address (the caller's rsp). For every
 * kind but NONE, UNDEFINED_RA and DWARF, the return address is at CFA - 8. */
enum ut_cfa_kind {
	UT_CFA_NONE = 0,     /* no CFI covers this address */
	UT_CFA_RSP,	     /* CFA = rsp + cfa_off */
	UT_CFA_RBP,	     /* CFA = rbp + cfa_off */
	UT_CFA_PLT,	     /* CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0): the
				lazy-binding PLT's DW_CFA_def_cfa_expression */
	UT_CFA_UNDEFINED_RA, /* return address undefined: outermost frame */
	UT_CFA_DWARF,	     /* evaluate the DWARF for this address; the row
				holds an index into the table's FDE list */
	UT_CFA_LAZY,	     /* a lazy table has not compiled this range yet:
				never returned by unwind_table__lookup; must
				stay the last kind (see the lookup) */
};

/* Where the caller's rbp (or rbx) is. Besides rbp, rbx is carried because
 * code that realigns its stack keeps the CFA in it (glibc's
 * _dl_runtime_resolve: mov %rsp,%rbx; and $-64,%rsp), which outer frames
 * can then only unwind if rbx was tracked through the frames below. */
enum ut_rbp_kind {
	UT_RBP_SAME = 0,    /* unchanged (callee did not save it) */
	UT_RBP_CFA_OFF,	    /* saved at CFA + rbp_off (rbx_off) */
	UT_RBP_UNDEFINED,   /* undefined: the caller's value is unknown */
};

/* For UT_CFA_DWARF rows, rbp_kind holds flags instead: the FDE's CIE
 * says 'S', a signal frame, whose caller was interrupted (its pc is exact,
 * not a return address). */
#define UT_DWARF_SIGNAL_FRAME 1

/* One row: how to unwind from any address in [start[i], start[i+1]).
 * 8 bytes; offsets beyond 16 bits make the row a DWARF row. A DWARF row
 * keeps its FDE index in rbp_off (low half) and rbx_off (high half),
 * which it does not otherwise use. */
struct unwind_row {
	int16_t cfa_off;      /* offset for RSP/RBP kinds */
	int16_t rbp_off;      /* for rbp_kind UT_RBP_CFA_OFF */
	int16_t rbx_off;      /* for rbx_kind UT_RBP_CFA_OFF */
	uint8_t cfa_kind;     /* enum ut_cfa_kind */
	uint8_t rbp_kind : 4; /* enum ut_rbp_kind (DWARF rows: flags) */
	uint8_t rbx_kind : 4; /* enum ut_rbp_kind */
};

static inline uint32_t unwind_row__fde_index(const struct unwind_row *r)
{
	return (uint32_t)(uint16_t)r->rbp_off | (uint32_t)(uint16_t)r->rbx_off << 16;
}

struct unwind_table;

/* Maps an interpreted CFI row to a fixed row (what every compiled table
 * holds where it can); false when the row must stay DWARF. The in-process
 * walk's row caches use it too, so that they hold the rows a table would. */
bool unwind_table__fixed_row(const struct cfi_cie *cie, const struct cfi_row *r,
			     struct unwind_row *out);

/* Compiles the CFI of one module (link-time addresses). Rows from earlier
 * inputs win where inputs overlap (pass .eh_frame first). Returns 0 and
 * *out, or -errno; malformed CIEs/FDEs are skipped with a warning, never
 * trusted. */
int unwind_table__compile(const struct cfi_input *inputs, size_t ninputs,
			  const struct log_sink *log, struct unwind_table **out);

/* A lazy table over one .eh_frame: nothing is compiled up front; the
 * first lookup in the range of an FDE (found through .eh_frame_hdr's
 * binary search table, hdr/hdr_size at link-time address hdr_vaddr)
 * compiles that FDE, and the table gives for every address the row the
 * whole compile gives. After UT_LAZY_MAX_FILLS such fills, or when the
 * CFI is not what the lazy path handles (FDEs that overlap their
 * neighbours, a header table out of order), the table compiles itself
 * whole, in place. Returns 0 and *out, -ENOTSUP when the header has no
 * usable search table (compile whole instead), or -errno. hdr and the
 * CFI bytes must outlive the table; log too. */
int unwind_table__open_lazy(const struct cfi_input *eh_frame,
			    const uint8_t *hdr, size_t hdr_size,
			    uint64_t hdr_vaddr, const struct log_sink *log,
			    struct unwind_table **out);
/* The same over CFI without a search table (.debug_frame, or an
 * .eh_frame without .eh_frame_hdr): one pass over the section's entry
 * headers makes a sorted FDE index that plays the header table's part.
 * -ENOTSUP when the section has no usable FDE (or spans more than 4 GiB:
 * compile whole instead). in's bytes and log must outlive the table. */
int unwind_table__open_lazy_index(const struct cfi_input *in,
				  const struct log_sink *log,
				  struct unwind_table **out);
#define UT_LAZY_MAX_FILLS 256
/* Compiles what a lazy table has not compiled yet (checks what a table
 * from the cache has not checked: one that fails is compiled whole
 * instead): the table is then the whole-module table (for exporting it
 * whole, or keeping it on disk).
 * Rows returned by earlier lookups are no longer valid. Returns 0 or
 * -errno (the table is unchanged then). No-op for a whole table. */
int unwind_table__complete(struct unwind_table *t);
/* Is t lazy (some ranges not compiled yet)? */
bool unwind_table__is_lazy(const struct unwind_table *t);
/* Sets how many fills a lazy table makes before compiling itself whole
 * (tests keep a table lazy with SIZE_MAX). */
void unwind_table__set_max_fills(struct unwind_table *t, size_t n);
/* FDEs compiled by a lazy table's fills so far (0 for a whole table). */
size_t unwind_table__lazy_fills(const struct unwind_table *t);
void unwind_table__free(struct unwind_table *t);

/* The table's layout is visible so that the lookup, on the unwinder's
 * per-frame path, can be inlined there. */
/* Where a DWARF row's program lives: an FDE of one input. */
struct ut_fde {
	uint32_t off;	/* section offset of the FDE */
	uint32_t input;	/* index into the table's inputs */
};

struct ut_lazy;
struct ut_unchecked;

/* Invariants: starts[] is strictly increasing, starts[0] == 0, and row i
 * covers [lo + starts[i], lo + starts[i + 1]) (the last row up to hi);
 * hi - lo <= UINT32_MAX. block[b] is the row covering lo + (b << shift), for
 * b in [0, nblocks], so the row for an address in block b lies in
 * [block[b], block[b + 1]]. Rows of kind DWARF index fdes[]. Rows of kind
 * LAZY exist only while lazy != NULL; a fill replaces them (and may
 * reallocate the arrays: a row pointer is good until the next lookup).
 * While unchecked != NULL (bytes from a cache file) all this is promised
 * only inside the chunks checked so far, and a lookup checks its chunk
 * before it reads the arrays there. */
struct unwind_table {
	uint64_t lo, hi;
	uint32_t *starts;
	struct unwind_row *rows;
	size_t nrows;
	uint32_t *block;
	size_t nblocks;
	unsigned block_shift;	/* UT_BLOCK_SHIFT unless the range is sparse */
	struct ut_fde *fdes;
	size_t nfdes;
	struct cfi_input *inputs;
	size_t ninputs;
	struct ut_lazy *lazy;	/* NULL once everything is compiled */
	/* A table mapped from the cache is checked a chunk of its address
	 * range at a time, when a lookup first lands in the chunk: NULL once
	 * every chunk passed (or for a table compiled here). */
	struct ut_unchecked *unchecked;
	bool rewrite;		/* came from a cache file that failed a check
				   and was compiled here instead */
	/* A table read from the cache: its arrays point into these bytes,
	 * not freed by unwind_table__free, which unmaps them when map_len
	 * is not 0 (a mapping the table owns). */
	void *map;
	size_t map_len;
	uint64_t fill_ns;	/* spent in unwind_table__fill (--stats) */
	/* Names this table among every table the process made, for the
	 * unwinder's row cache (a row copied out stays right for as long as
	 * the table lives: fills and completion only add rows it would have
	 * had whole). Never reused; 0 when the counter ran out: not cached. */
	uint32_t serial;
};

/* A serial for a new table (above). */
uint32_t unwind_table__new_serial(void);

/* The checks of a table used in place from bytes that are not ours:
 * check(t, c, user, &why) returns 0 when chunk c, the rows of link-time
 * range [lo + (c << chunk_shift), lo + ((c + 1) << chunk_shift)), may be
 * used (its checksum and every bound a lookup there relies on), else
 * -EINVAL with why. Invariant: bit c of checked[] set means check(t, c)
 * returned 0; nchecked counts the bits set. */
struct ut_unchecked {
	uint64_t *checked;
	size_t nchunks, nchecked;
	unsigned chunk_shift;
	int (*check)(const struct unwind_table *t, size_t chunk, void *user,
		     const char **why);
	void *user;
	const struct log_sink *log;
	char *name;		/* for messages: the file */
};

/* Makes t check its rows a chunk at a time (t takes name, a malloc'ed
 * string). Returns 0 or -ENOMEM. */
int unwind_table__defer_checks(struct unwind_table *t, unsigned chunk_shift,
			       int (*check)(const struct unwind_table *, size_t,
					    void *, const char **),
			       void *user, const struct log_sink *log,
			       char *name);
/* Runs every check not run yet, without replacing anything: 0 when the
 * whole table passed (it is then an ordinary table), else -EINVAL and
 * *why (may be NULL). */
int unwind_table__check_all(struct unwind_table *t, const char **why);
/* Did the rows come from a cache file that failed a check (the file
 * should be rewritten)? */
static inline bool unwind_table__needs_rewrite(const struct unwind_table *t)
{
	return t->rewrite;
}

static inline bool ut_chunk_checked(const struct ut_unchecked *u, uint64_t off)
{
	uint64_t c = off >> u->chunk_shift;

	return (u->checked[c / 64] >> (c % 64)) & 1;
}

/* Compiles the range of the LAZY row at vaddr (or, for a table from the
 * cache, checks vaddr's chunk; a chunk that fails its check makes the
 * table compile itself whole from its inputs) and returns vaddr's row
 * (NULL: no CFI there). Logically const: the table only learns rows it
 * would have had if compiled whole. */
const struct unwind_row *unwind_table__fill(const struct unwind_table *t,
					    uint64_t vaddr);

/* The row covering link-time address vaddr, or NULL if the table has no
 * row there (equivalent to UT_CFA_NONE). Does not allocate. */
static inline const struct unwind_row *
unwind_table__lookup(const struct unwind_table *t, uint64_t vaddr)
{
	uint64_t off;
	size_t lo, hi;
	uint32_t o;

	if (vaddr < t->lo || vaddr >= t->hi)
		return NULL;
	off = vaddr - t->lo;
	/* A table from the cache: its chunk checked before first use. */
	if (__builtin_expect(t->unchecked != NULL, 0) &&
	    !ut_chunk_checked(t->unchecked, off))
		return unwind_table__fill(t, vaddr);
	o = (uint32_t)off;
	lo = t->block[off >> t->block_shift];
	hi = t->block[(off >> t->block_shift) + 1];
	/* Last row with starts[row] <= o, within [lo, hi]. Branch-free:
	 * the comparison becomes a conditional move, so random addresses
	 * cost no mispredictions. */
	for (size_t n = hi - lo + 1; n > 1;) {
		size_t half = n / 2;

		lo = t->starts[lo + half] <= o ? lo + half : lo;
		n -= half;
	}
	/* NONE (0) and LAZY (the last kind) in one unsigned comparison:
	 * the warm path pays what it paid for NONE alone. */
	if (__builtin_expect((uint8_t)(t->rows[lo].cfa_kind - 1) >=
				     UT_CFA_LAZY - 1, 0))
		return t->rows[lo].cfa_kind == UT_CFA_NONE
			       ? NULL
			       : unwind_table__fill(t, vaddr);
	return &t->rows[lo];
}

/* For a UT_CFA_DWARF row: runs the CFI of its FDE up to link-time address
 * vaddr and applies every register rule to regs (run-time values; bias is
 * what to add to link-time addresses), reading memory through read/user.
 * Fills *caller with the caller's registers (valid bits for what could be
 * recovered, rip always from the return-address rule) and *cfa. Bounded in
 * steps and expression stack depth. Returns 0 or -errno (-EINVAL: CFI not
 * usable, -EFAULT: a memory read failed). A return address that is
 * undefined (outermost frame) or has no rule returns 0 with rip's valid
 * bit clear; a register other than rip whose saved value cannot be read
 * is just left invalid. */
int unwind_table__eval_dwarf(const struct unwind_table *t,
			     const struct unwind_row *row, uint64_t vaddr,
			     uint64_t bias, const struct stacksnap_regs *regs,
			     stacksnap_read_fn read, void *user,
			     struct stacksnap_regs *caller, uint64_t *cfa);

/* The same for a caller without a table (the in-process backtrace on a
 * module it has not compiled yet): evaluates the FDE at section offset
 * fde_off of in, found by the caller (e.g. through .eh_frame_hdr).
 * -ENOENT when that FDE does not cover vaddr. *signal_frame (may be NULL)
 * tells whether its CIE marks a signal frame. Neither allocates nor takes
 * locks: safe in a signal handler when read is. */
int unwind_table__eval_fde(const struct cfi_input *in, size_t fde_off,
			   uint64_t vaddr, uint64_t bias,
			   const struct stacksnap_regs *regs,
			   stacksnap_read_fn read, void *user,
			   struct stacksnap_regs *caller, uint64_t *cfa,
			   bool *signal_frame);

/* The link-time address range [*lo, *hi) the table's rows span (both 0
 * for an empty table). Lookups outside it return NULL. */
void unwind_table__range(const struct unwind_table *t, uint64_t *lo,
			 uint64_t *hi);

/* Statistics for --stats and benchmarks. */
struct unwind_table_stats {
	size_t rows;
	size_t dwarf_rows;
	size_t fdes;
	size_t bytes; /* memory used by the table */
};
void unwind_table__stats(const struct unwind_table *t,
			 struct unwind_table_stats *st);

#endif
