/* gopclntab.h - a reader of Go's pc-line table (.gopclntab, the runtime's
 * own symbol table, kept in stripped binaries): functions, names, file:line,
 * the pc-value tables (pcsp, pcfile, pcln, pcdata) and the inline tree,
 * for the header versions of Go 1.2 (1.12-1.15 layout), 1.16, 1.18 and 1.20.
 * Every read is bounded by the bytes given; the tables come from outside. */
#ifndef SS_SYMBOLIZE_GOPCLNTAB_H
#define SS_SYMBOLIZE_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "elf/elf_image.h"
#include "table/go_pcsp.h"

#define GOPCLN_MAGIC_12 0xfffffffbu
#define GOPCLN_MAGIC_116 0xfffffffau
#define GOPCLN_MAGIC_118 0xfffffff0u
#define GOPCLN_MAGIC_120 0xfffffff1u

enum gopcln_version {
	GOPCLN_12 = 1,	/* Go 1.2 magic; _func as of Go 1.12-1.15 */
	GOPCLN_116,
	GOPCLN_118,	/* also Go 1.19 */
	GOPCLN_120,	/* Go 1.20 and later */
};

/* Indices the runtime gives its pc-value and funcdata tables. */
#define GO_PCDATA_INLTREE_INDEX 2
#define GO_FUNCDATA_INLTREE 3

/* Bytes of the image at link-time addresses, for funcdata (the inline tree
 * lives in go:func.* data, outside the pclntab). */
struct gopcln_region {
	uint64_t vaddr;
	const uint8_t *bytes;
	size_t size;
};

#define GOPCLN_MAX_REGIONS 8

/* Invariants: the offset and size pairs lie within data[0, size); the
 * functab holds nfunc + 1 entries (the last one the end of text) within
 * data. Nothing else is trusted: every function record, table and string
 * is checked when read. */
struct gopclntab {
	const uint8_t *data;	/* the pclntab bytes; not owned */
	size_t size;
	uint64_t vaddr;		/* link-time address of data (0: unknown) */
	enum gopcln_version version;
	uint32_t magic;
	uint8_t quantum;	/* instruction size quantum (1 on x86) */
	uint64_t nfunc, nfiles;
	uint64_t text_start;	/* 1.18+: entries are offsets from it */
	uint64_t funcname_off, cutab_off, filetab_off, pctab_off, functab_off;
	size_t functab_size;	/* bytes of the function table */
	size_t func_fixed;	/* size of the fixed part of a _func */
	uint64_t gofunc;	/* 1.18+: funcdata base (go:func.* data), 0 unknown */
	struct gopcln_region regions[GOPCLN_MAX_REGIONS];
	size_t nregions;
};

/* One function: the fields of its _func record the readers use. */
struct go_func {
	uint64_t entry, end;	/* [entry, end): link-time addresses */
	size_t off;		/* offset of the _func record in data */
	int32_t nameoff;
	uint32_t pcsp, pcfile, pcln, npcdata, cuoff;
	uint8_t funcid, flag, nfuncdata;
	uint32_t index;		/* in the function table */
};

/* Parses the header of the pclntab in data (size bytes at link-time
 * address vaddr, 0 if unknown). Returns 0, -EPROTONOSUPPORT for an unknown
 * magic, -EINVAL for a header or function table that does not fit. */
int gopclntab__init(struct gopclntab *t, const uint8_t *data, size_t size,
		    uint64_t vaddr, const struct log_sink *log);
/* Adds image bytes at link-time addresses for funcdata reads. */
void gopclntab__add_region(struct gopclntab *t, uint64_t vaddr,
			   const uint8_t *bytes, size_t size);

/* Bytes [vaddr, vaddr + len) of the image's regions, or NULL. */
const uint8_t *gopclntab__bytes_at(const struct gopclntab *t, uint64_t vaddr,
				   uint64_t len);

/* Finds the pclntab of a Go executable: the .gopclntab section, else a
 * header found by its magic in the read-only load segments; then the
 * moduledata that points at it (for go:func.*, the inline trees). The
 * image's bytes must outlive t. -ENOENT when img is not a Go binary. */
int gopclntab__open_elf(struct gopclntab *t, const struct elf_image *img,
			const struct log_sink *log);

/* The Go version string from .go.buildinfo ("go1.19.8"), copied into buf;
 * -ENOENT when there is none. */
int go_buildinfo_version(const struct elf_image *img, char *buf, size_t len);

/* Function i of the table (i < nfunc), or the function covering pc. 0 or
 * -ENOENT (no function there) / -EINVAL (a corrupt record). */
int gopclntab__func_at(const struct gopclntab *t, uint64_t i,
		       struct go_func *f);
int gopclntab__find_func(const struct gopclntab *t, uint64_t pc,
			 struct go_func *f);

/* The function's name, NUL-terminated inside the table, or NULL. */
const char *gopclntab__func_name(const struct gopclntab *t,
				 const struct go_func *f);
/* A name by offset (as in the inline tree). */
const char *gopclntab__name_at(const struct gopclntab *t, int32_t nameoff);

/* Starts a walk of f's pc-value table at offset tab (0: no table, the
 * walk is empty) with the table compiler's iterator (table/go_pcsp.h,
 * go_pcvalue_iter__next gives each range). */
void gopcln_iter__init(struct go_pcvalue_iter *it, const struct gopclntab *t,
		       const struct go_func *f, uint32_t tab);

/* The value of table tab at pc (-1 and -ENOENT when pc is outside it). */
int gopclntab__pcvalue(const struct gopclntab *t, const struct go_func *f,
		       uint32_t tab, uint64_t pc, int32_t *value);
/* pcdata table idx of f, or 0 when f has none. */
uint32_t gopclntab__pcdata_table(const struct gopclntab *t,
				 const struct go_func *f, uint32_t idx);
/* File name of file number fileno in f's compilation unit, or NULL. */
const char *gopclntab__file_name(const struct gopclntab *t,
				 const struct go_func *f, int32_t fileno);
/* file:line at pc (either may come back NULL/0). 0 or -ENOENT. */
int gopclntab__file_line(const struct gopclntab *t, const struct go_func *f,
			 uint64_t pc, const char **file, int32_t *line);

/* Every function as input of the pcsp compiler (table/go_pcsp.h), in
 * table order; functions whose records are corrupt are left out. *out is
 * malloc'ed. 0 or -ENOMEM. */
int gopclntab__pcsp_funcs(const struct gopclntab *t,
			  struct go_pcsp_func **out, size_t *n);

/* One frame at a pc as Go's traceback prints it. */
struct go_frame {
	const char *function;
	const char *file;	/* NULL when unknown */
	int32_t line;		/* 0 when unknown */
	bool inlined;		/* inlined into the next frame */
	uint64_t entry;		/* the physical function's entry */
	uint8_t funcid;		/* the function's funcID (the inline tree's
				   for an inlined call) */
};

/* The frames at pc, innermost first: the inlined calls (from the
 * function's inline tree, FUNCDATA_InlTree + PCDATA_InlTreeIndex), then
 * the physical function. pc is the address to look up (already a call
 * address: the caller backs up return addresses by one). Returns how many
 * frames (at most max; more are dropped), or -ENOENT / -EINVAL. */
int gopclntab__frames(const struct gopclntab *t, uint64_t pc,
		      struct go_frame *out, size_t max);

#endif
