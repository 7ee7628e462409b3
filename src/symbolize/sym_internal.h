/* sym_internal.h - helpers shared by the files of src/symbolize/. */
#ifndef SS_SYMBOLIZE_INTERNAL_H
#define SS_SYMBOLIZE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Images a symtab reads: main, debug file, MiniDebugInfo, and a spare. */
#define SYMTAB_MAX_IMAGES 4

/* The name gdb prints for the symbol name[0..len): demangled when
 * demangle (with parameters for minimal symbols; without parameters and
 * return type for DWARF functions, as gdb's bt does), and for minimal
 * symbols gdb's renaming of GCC clone suffixes ("f.cold" -> "f[cold]",
 * "f.part.0" -> "f.part"). Returns a malloc'ed string or NULL (ENOMEM). */
char *sym_gdb_name(const char *name, size_t len, bool demangle,
		   bool dwarf_function);

/* Cuts a demangled C++ name down to what gdb's bt shows for a function
 * with debug info: no parameter list, qualifiers or return type. In place. */
void sym_strip_params(char *s);

/* An in-memory ELF of a debug file's DWARF sections, inflated with
 * libdeflate (zlib) or libzstd; .debug_line only when
 * dwarf_mem__fill_deferred is called (before any libdw call that reads
 * line tables), location lists and name indexes never (dwarf_mem.c). */
typedef struct Elf Elf;
struct dwarf_mem;

/* *out is NULL (and 0 returned) when the image has no compressed DWARF
 * section or a layout left to libdw (.zdebug_, dwz's .gnu_debugaltlink):
 * the caller then reads elf as it is. bytes/size: the image elf reads.
 * Returns 0 or -errno (-EINVAL: a compressed section does not inflate). */
int dwarf_mem__open(Elf *elf, const uint8_t *bytes, size_t size,
		    struct dwarf_mem **out);
Elf *dwarf_mem__elf(const struct dwarf_mem *dm);
/* Inflates the deferred sections. Returns 0 or -errno (then they read as
 * zeros: the caller must not read line tables). */
int dwarf_mem__fill_deferred(struct dwarf_mem *dm);
void dwarf_mem__free(struct dwarf_mem *dm);

#endif
