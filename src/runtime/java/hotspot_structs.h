/* hotspot_structs.h - HotSpot's own layout tables, read from a live JVM:
 * libjvm.so exports gHotSpotVMStructs, gHotSpotVMTypes,
 * gHotSpotVMIntConstants and gHotSpotVMLongConstants (the tables the JDK's
 * Serviceability Agent reads) and the layout of their entries; read
 * through them, they give the field offsets, type sizes and constants of
 * exactly this JVM build, by name. The layout is data from the process,
 * never compiled in. */
#ifndef SS_RUNTIME_JAVA_HOTSPOT_STRUCTS_H
#define SS_RUNTIME_JAVA_HOTSPOT_STRUCTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "stacksnap.h"

/* One VMStructEntry: a field of a VM type, or a static's address. */
struct hotspot_field {
	const char *type;	/* "Method" */
	const char *field;	/* "_constMethod" */
	const char *type_string; /* the field's type, may be NULL */
	bool is_static;
	uint64_t offset;	/* non-static: byte offset in the type */
	uint64_t address;	/* static: its address in the process */
};

/* One VMTypeEntry. */
struct hotspot_type {
	const char *name;
	const char *super;	/* may be NULL */
	uint64_t size;
};

/* One VMIntConstantEntry or VMLongConstantEntry. */
struct hotspot_constant {
	const char *name;
	int64_t value;
};

/* The tables of one JVM. Invariant: every string is owned (malloc'ed)
 * by its entry; arrays sorted by name (type then field) for lookups. */
struct hotspot_structs {
	struct hotspot_field *fields;
	size_t nfields, fields_cap;
	struct hotspot_type *types;
	size_t ntypes, types_cap;
	struct hotspot_constant *constants; /* ints and longs */
	size_t nconstants, constants_cap;
};

/* Limits on what a process's tables may make the reader do. */
#define HOTSPOT_MAX_ENTRIES 20000
#define HOTSPOT_MAX_NAME 256

/* Reads the tables of the JVM whose libjvm.so is at jvm_path (opened to
 * find the exported symbols; the file the process maps), one mapping of
 * which starts at map_start from file offset map_offset, through mem. Returns 0, -ENOENT when jvm_path exports no
 * tables (not a HotSpot JVM, or one without the Serviceability Agent's
 * symbols), -EPROTO for tables that do not read as tables (a message
 * says which), or -errno. */
int hotspot_structs__read(struct stacksnap_mem *mem, const char *jvm_path,
			  uint64_t map_start, uint64_t map_offset,
			  const struct log_sink *log, struct hotspot_structs *out);
void hotspot_structs__free(struct hotspot_structs *hs);

/* Lookups by name; NULL or false when the table has no such entry. */
const struct hotspot_field *hotspot_structs__field(const struct hotspot_structs *hs,
						   const char *type,
						   const char *field);
const struct hotspot_type *hotspot_structs__type(const struct hotspot_structs *hs,
						 const char *name);
bool hotspot_structs__constant(const struct hotspot_structs *hs,
			       const char *name, int64_t *value);

#endif
