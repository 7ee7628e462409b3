/* table_open.h - one call that gives a module its unwind table: from the
 * table cache, else lazy (through .eh_frame_hdr or an FDE index made in
 * one pass), else compiled whole and kept in the cache for the next run. */
#ifndef SS_TABLE_TABLE_OPEN_H
#define SS_TABLE_TABLE_OPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cache_bind.h"
#include "base/log.h"
#include "dwarf/cfi.h"
#include "stacksnap.h"
#include "table/unwind_table.h"

/* What a module's table is made from, and where it is kept. Invariant:
 * inputs[0..ninputs) are the module's .eh_frame then .debug_frame (the
 * bytes outlive the table); sigreturn has room for
 * TABLE_CACHE_MAX_SIGRETURN (table_cache.h) addresses. */
struct table_source {
	const char *name;		/* the module, for messages */
	struct cfi_input inputs[2];
	size_t ninputs;
	const uint8_t *eh_frame_hdr;	/* NULL or empty: no search table */
	size_t eh_frame_hdr_size;
	uint64_t eh_frame_hdr_vaddr;
	const uint8_t *build_id;	/* the cache key; none: no cache */
	size_t build_id_len;
	struct cache_source file;	/* the module's file: what a cache
					   entry is bound to (a build-id is
					   only a name) */
	const char *cache_dir;		/* NULL: no table cache */
	size_t lazy_min_cfi;		/* CFI bytes from which a table is lazy
					   (with a cache_dir; without one,
					   every table is lazy) */
	const struct log_sink *log;
	/* The module's rt_sigreturn trampolines: read back with a cached
	 * table, written beside a whole one. */
	uint64_t *sigreturn;
	unsigned *nsigreturn;
	/* Fills sigreturn/nsigreturn by scanning the module's code: called
	 * when the table comes neither from the cache nor lazy (before a
	 * whole table is compiled and stored). */
	void (*scan_sigreturn)(void *user);
	void *user;
};

/* Where unwind_table__open found the table. */
enum table_origin {
	TABLE_ORIGIN_NONE = 0,	/* no CFI, or the compile failed */
	TABLE_ORIGIN_CACHE,	/* mapped from the table cache (on disk) */
	TABLE_ORIGIN_LAZY,	/* lazy: compiled as walks reach it */
	TABLE_ORIGIN_WHOLE,	/* compiled whole here (and stored) */
};

/* Opens src's table: the cache file when one is valid, a lazy table when
 * there is one CFI section (of at least lazy_min_cfi bytes when there is
 * a cache to store a whole table in), else the whole compile, which is
 * stored in the cache. Sets *out (NULL for none) and
 * *on_disk (the table is in the cache file), counts what it did in st
 * (tables_cached, tables_lazy, tables_whole, tables_stored) and returns
 * where the table came from. */
enum table_origin unwind_table__open(const struct table_source *src,
				     struct stacksnap_ctx_stats *st,
				     struct unwind_table **out, bool *on_disk);

/* Would unwind_table__store write t? Once per table (when on_disk is
 * clear, or t came from a cache file that failed a check, so the file is
 * rewritten), and only a whole, checked table with a cache and build-id.
 * Lets the caller complete its trampolines only for a write. */
bool unwind_table__store_due(const struct table_source *src,
			     const struct unwind_table *t, bool on_disk);

/* Keeps t in src's cache for the next run when unwind_table__store_due
 * says so, and sets *on_disk. src's trampolines must be complete. */
void unwind_table__store(const struct table_source *src,
			 struct unwind_table *t, bool *on_disk,
			 struct stacksnap_ctx_stats *st);

#endif
