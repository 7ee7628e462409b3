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

#endif
