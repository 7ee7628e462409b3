/* go_pcsp.h - Go's pcsp tables (the stack-pointer delta at each pc of a
 * function) compiled into the compact rows of DWARF CFI (unwind_table.h):
 * CFA = rsp + delta + 8, return address at CFA - 8, and the caller's rbp
 * at CFA - 16 where the function's prologue saved it (Go's frame-pointer
 * convention, see go_pcsp.c). The pclntab is read above this folder
 * (symbolize/gopclntab.h); it hands the functions down as go_pcsp_func. */
#ifndef SS_TABLE_GO_PCSP_H
#define SS_TABLE_GO_PCSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "table/unwind_table.h"

/* One function. pcsp points at its pc-value table (pcsp_max bytes may be
 * read from there: up to the end of the pclntab), NULL when it has none;
 * code at its bytes [entry, end), NULL when not available (no rbp rule is
 * made then). */
struct go_pcsp_func {
	uint64_t entry, end;
	const uint8_t *pcsp;
	size_t pcsp_max;
	const uint8_t *code;
};

/* Rows at link-time addresses. Invariant: start[] strictly increasing;
 * row i covers [start[i], start[i + 1]) (the last up to hi); rows of kind
 * UT_CFA_NONE fill the gaps between functions. */
struct go_pcsp_rows {
	uint64_t *start;
	struct unwind_row *rows;
	size_t n;
	uint64_t hi;
	size_t funcs;		/* functions compiled */
	size_t bp_funcs;	/* of which save rbp (the rule applies) */
	size_t big_frames;	/* ranges whose CFA offset does not fit 16
				   bits (left without a row) */
	size_t bad_tables;	/* functions whose pcsp table was malformed
				   (rows up to the bad entry kept) */
};

/* Walks one function's pc-value table (pcsp here; the pclntab reader
 * walks pcfile, pcln and pcdata with it too): each step gives the value
 * over [pc, next_pc). Bounded by the table's bytes and the function's
 * end; values wrap as Go's int32 arithmetic does. */
struct go_pcvalue_iter {
	const uint8_t *p, *end;	/* NULL p: the walk is over */
	uint64_t pc, next_pc, func_end;
	int32_t value;
	uint8_t quantum;
	bool first;
	bool bad;	/* stopped on a malformed table */
};
/* Starts a walk of the table at p (up to end; p NULL: an empty walk) of
 * the function [entry, func_end). */
void go_pcvalue_iter__init(struct go_pcvalue_iter *it, const uint8_t *p,
			   const uint8_t *end, uint64_t entry,
			   uint64_t func_end, unsigned quantum);
/* Next range; false at the end (it->bad says whether the end was bad). */
bool go_pcvalue_iter__next(struct go_pcvalue_iter *it);

/* Compiles funcs (sorted by entry, not overlapping; quantum: the
 * instruction size quantum of the table). Returns 0 or -errno
 * (-ENOMEM, -EINVAL for functions out of order). */
int go_pcsp__compile(const struct go_pcsp_func *funcs, size_t n,
		     unsigned quantum, const struct log_sink *log,
		     struct go_pcsp_rows *out);
/* The row at vaddr, or NULL (no function there). */
const struct unwind_row *go_pcsp__lookup(const struct go_pcsp_rows *r,
					 uint64_t vaddr);
void go_pcsp__free(struct go_pcsp_rows *r);

/* The rows as an unwind table (a whole table with no CFI inputs: it is
 * never kept in the table cache), for a module whose CFI gives none (a
 * Go binary linked with -s -w has no .eh_frame or .debug_frame). 0,
 * -ENOENT (no rows), -E2BIG (a range beyond 4 GiB) or -ENOMEM. */
int go_pcsp__table(const struct go_pcsp_rows *r, struct unwind_table **out);

#endif
