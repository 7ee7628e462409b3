/* symbolize.h - per-module symbol lookup: function symbols from .symtab
 * (of the separate debug file, the image, or its MiniDebugInfo) and
 * .dynsym; C++ demangling; file:line and inline frames through libdw. */
#ifndef SS_SYMBOLIZE_SYMBOLIZE_H
#define SS_SYMBOLIZE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "elf/elf_image.h"
#include "stacksnap.h"

struct symtab;

/* Builds a module's function-symbol index from images of the same link
 * (the main image, its debug file, its MiniDebugInfo; NULL entries are
 * skipped). All share link-time addresses. Returns 0 and *out or -errno. */
/* imgs[0] must be the main image (the loaded file): like gdb, its symbols
 * (its .symtab, or its .dynsym when stripped) win over the debug images'
 * at equal addresses, which is what picks e.g. "clock_nanosleep" over the
 * debug file's "__GI___clock_nanosleep" for libc's minimal symbols. */
int symtab__build(const struct elf_image *const *imgs, size_t nimgs,
		  const struct log_sink *log, struct symtab **out);
void symtab__free(struct symtab *st);

struct line_info;
struct sym_cache;

/* symtab__build through the symbol cache in cache_dir (NULL: none): a
 * file for imgs[0]'s build-id, made from the same debug image, is mapped
 * and used in place (*from_cache set); otherwise the tables are built. */
int symtab__open(const struct elf_image *const *imgs, size_t nimgs,
		 const char *cache_dir, const struct log_sink *log,
		 struct symtab **out, bool *from_cache);
/* Is st built and not yet in the cache (its main image has a build-id)?
 * With functions, also: mapped from a file without the function index. */
bool symtab__store_pending(const struct symtab *st, bool functions);
/* Writes st, and the CU address index of li (may be NULL: the module's
 * DWARF, opened with line_info__open_cached), to the cache (once); with
 * functions also the function index, which evaluates a lookup per piece
 * of the module (up to a second for libc's debug file): for a writer off
 * the user's path. */
int symtab__store(struct symtab *st, struct line_info *li, bool functions,
		  const char *cache_dir, const struct log_sink *log);
/* The cache file st was mapped from, while it is trusted; else NULL. */
struct sym_cache *symtab__cache(const struct symtab *st);

/* The function containing link-time address vaddr: its name (demangled
 * unless no_demangle; the string lives as long as st) and start address.
 * NULL when no symbol covers vaddr. */
const char *symtab__lookup(struct symtab *st, uint64_t vaddr, int no_demangle,
			   uint64_t *start);
/* The same, with the symbol's end (its size, or its section's end for a
 * symbol of size 0) and its raw name: for code analysis, which needs the
 * function's whole range. */
const char *symtab__lookup_range(struct symtab *st, uint64_t vaddr,
				 uint64_t *start, uint64_t *end);

/* Demangles a C++ (Itanium ABI) name; returns a malloc'ed string or NULL
 * when name is not mangled. */
char *demangle(const char *name);

struct line_info;

/* Opens DWARF line and scope information of img (a debug file or an
 * image with .debug_info). *out is NULL when there is none. */
int line_info__open(const struct elf_image *img, const struct log_sink *log,
		    struct line_info **out);
/* The same, with the CU address index from st's cache file when st was
 * mapped from one (made from the same images, so from this img's DWARF):
 * not every CU header of .debug_info is read. st may be NULL. */
int line_info__open_cached(const struct elf_image *img, struct symtab *st,
			   const struct log_sink *log, struct line_info **out);
struct sym_cu_range;
/* li's CU address index, sorted by lo (made now when it came from a
 * cache file). Returns 0 or -ENOMEM. */
int line_info__cu_index(struct line_info *li, const struct sym_cu_range **ranges,
			size_t *n);
void line_info__free(struct line_info *li);

/* Fills out[] for link-time vaddr with the inline chain, innermost first
 * (inlined = true, function = the inlined function, file:line = where in
 * it vaddr is), then the containing function (inlined = false, file:line
 * of vaddr, or of the outermost inline call site). Only function, file,
 * line, column and inlined are set; strings live as long as li. Returns the
 * number filled (0 when vaddr has no line info) or -errno. */
int line_info__lookup(struct line_info *li, uint64_t vaddr, int no_demangle,
		      struct stacksnap_sym *out, size_t max);

/* line_info__lookup that also gives the link-time entry address of the
 * containing (not inlined) function, 0 when unknown. */
/* Flags of the lookups below. */
#define SYM_NO_DEMANGLE 0x1 /* keep C++ names mangled */
#define SYM_NO_LINES 0x2    /* function names only: no file:line (faster) */
/* Only the containing function (name, entry) is used: inline call sites'
 * file names are left NULL, so line tables are never read (a debug file's
 * compressed .debug_line is never inflated). */
#define SYM_FUNCTION_ONLY 0x4

int line_info__lookup_entry(struct line_info *li, uint64_t vaddr,
			    unsigned flags, struct stacksnap_sym *out,
			    size_t max, uint64_t *entry);

/* THE call for symbolizing a frame the way gdb's `bt` names it. li may be
 * NULL (no DWARF). Fills out[] like line_info__lookup (inline chain
 * innermost first, then the containing function) and also offset
 * (vaddr - start of the containing function, for every entry). The
 * containing function is named as gdb does: by its DWARF subprogram's
 * linkage name, else DW_AT_name (C++: demangled, without parameters or
 * return type; for assembler CUs with several subprograms at one address,
 * the last), and only when no DWARF subprogram covers vaddr by the
 * symtab__lookup name (C++: demangled with parameters, as gdb prints
 * minimal symbols). module and module_offset
 * are left 0 for the caller. Returns the count (0: nothing known). */
int symbolize__lookup(struct symtab *st, struct line_info *li, uint64_t vaddr,
		      unsigned flags, struct stacksnap_sym *out, size_t max);
/* The same, with the entry address the offsets are from (0: offsets are
 * 0, the entry unknown). */
int symbolize__lookup_entry(struct symtab *st, struct line_info *li,
			    uint64_t vaddr, unsigned flags,
			    struct stacksnap_sym *out, size_t max,
			    uint64_t *entry);
/* The addresses where the DWARF part of symbolize__lookup's answer may
 * change (CU ranges; top-level functions' ranges; inline and block ranges
 * around nested functions), unsorted, malloc'ed. Returns 0 or -errno
 * (-E2BIG: too many DIEs to index). */
int line_info__bounds(struct line_info *li, uint64_t **out, size_t *n);
/* The default symbolization of vaddr (names demangled, function only)
 * from st's cached function index: true and *function (NULL: no name)
 * and *offset, or false when the index does not cover vaddr. */
bool symtab__function(struct symtab *st, uint64_t vaddr,
		      const char **function, uint64_t *offset);

#endif
