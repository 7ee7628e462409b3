/* sym_cache.h - a module's symbol index kept on disk, keyed by build-id:
 * an explicit little-endian format (docs/symbol-cache-format.md), mapped
 * read-only and used in place, each 4 KiB block's checksum verified when
 * a lookup first touches the block. */
#ifndef SS_SYMBOLIZE_SYM_CACHE_H
#define SS_SYMBOLIZE_SYM_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cache_bind.h"
#include "base/log.h"

/* 3: the files an entry was made from are recorded (base/cache_bind.h),
 * and Rust functions named from their DWARF scopes. */
#define SYM_CACHE_VERSION 3
#define SYM_CACHE_MAX_TABLES 4
/* The main image and its debug file. */
#define SYM_CACHE_MAX_SOURCES 2
#define SYM_CACHE_HDR_SIZE 288
#define SYM_CACHE_BLOCK 4096

/* One symbol as the file stores it (32 bytes, little-endian) and as
 * symtab.c keeps it in memory. Invariant: limit >= addr; the name is the
 * NUL-terminated string at name_off of the string table, of which the
 * first name_len bytes (before an "@VERSION" suffix) are compared. */
struct sym_rec {
	uint64_t addr;
	uint64_t limit;		/* end of the symbol, or of its section when size 0 */
	uint32_t name_off;
	uint32_t name_len;
	uint32_t flags;		/* SYM_REC_* */
	uint32_t reserved;	/* 0 */
};
#define SYM_REC_SIZED 0x1	/* st_size != 0 */
#define SYM_REC_LOCAL 0x2	/* STB_LOCAL */
#define SYM_REC_PLT 0x4		/* a PLT stub "foo@plt": printed with foo
				   demangled, with or without --no-demangle */
#define SYM_REC_FLAGS 0x7

/* One address range of a DWARF compile unit (24 bytes): [lo, hi) and the
 * offset of the CU's header in .debug_info. */
struct sym_cu_range {
	uint64_t lo, hi, cu_off;
};

/* One piece of the function index (24 bytes): from lo to the next
 * piece's lo, the default symbolization (names demangled, no lines) is
 * the function named at name_off, and the offset is from entry. The last
 * piece only ends the one before it. */
struct sym_func {
	uint64_t lo;
	uint64_t entry;		/* 0 with a name: offsets are 0 */
	uint32_t name_off;	/* SYM_FUNC_NONE: no name known */
	uint32_t flags;		/* 0 */
};
#define SYM_FUNC_NONE 0xffffffffu

/* What a file holds, as arrays: the writer's input, the reader's view
 * into the mapping. Invariant: every table sorted as symtab.c sorts it;
 * ranges sorted by lo; strs ends with a NUL. */
struct sym_cache_view {
	uint64_t source_key;	/* which images the symbols came from */
	unsigned flags;		/* SYM_CACHE_FUNCTIONS */
	unsigned ntables;
	const struct sym_rec *recs[SYM_CACHE_MAX_TABLES];
	size_t nrecs[SYM_CACHE_MAX_TABLES];
	const struct sym_cu_range *ranges; /* may be none */
	size_t nranges;
	const struct sym_func *funcs; /* may be none */
	size_t nfuncs;
	const char *strs;
	size_t strs_len;
};

/* The function index was made (it may be empty: no DWARF, or too big). */
#define SYM_CACHE_FUNCTIONS 0x1

struct sym_cache;

/* Encodes v for build-id id, made from the files srcs[0..nsrcs) (at
 * most SYM_CACHE_MAX_SOURCES; their records are written: identity and
 * digest), into a malloc'ed buffer. Returns 0 or -errno (-EINVAL: too
 * large, or a build-id of 0 or more than 40 bytes). */
int sym_cache__encode(const uint8_t *id, size_t id_len,
		      const struct sym_cache_view *v,
		      const struct cache_source *srcs, size_t nsrcs,
		      uint8_t **out, size_t *len);
/* Checks bytes' header (magic, version, header checksum, build-id,
 * source key, every size) and the checksum of its block checksums; the
 * blocks themselves are checked by sym_cache__check as they are used.
 * The bytes must outlive *out. Returns 0, or -EINVAL with *why. */
int sym_cache__decode(const uint8_t *b, size_t len, const uint8_t *id,
		      size_t id_len, uint64_t source_key,
		      struct sym_cache **out, const char **why);
const struct sym_cache_view *sym_cache__view(const struct sym_cache *c);
/* Are the len bytes at p (inside the view's arrays) in blocks whose
 * checksum holds? Verifies each block once. A false answer means the
 * file is corrupt: the caller stops using it. */
bool sym_cache__check(struct sym_cache *c, const void *p, size_t len);
/* The NUL-terminated name at off of the string table, checked; NULL when
 * off is out of bounds, unterminated or in a corrupt block. */
/* Verifies every block (before the view is copied into another file). */
bool sym_cache__check_all(struct sym_cache *c);
const char *sym_cache__string(struct sym_cache *c, uint32_t off, uint32_t len);
void sym_cache__free(struct sym_cache *c);

/* Recomputes every checksum of the file bytes b in place (for the fuzz
 * target, to reach the checks behind them). */
void sym_cache__seal(uint8_t *b, size_t len);

/* DIR/symbols/<build-id hex>.sym */
int sym_cache__path(const char *dir, const uint8_t *id, size_t id_len,
		    char *buf, size_t size);
/* Maps and decodes the file for id from dir and checks that it was made
 * from srcs[0..nsrcs) (1..SYM_CACHE_MAX_SOURCES; by identity, else by
 * digest: a build-id is only a name) (the cache owns the mapping).
 * -ENOENT: none; -EPERM: not trusted (ownership, mode); -EINVAL: not
 * valid, stale or made from other files (logged at info level: it is then
 * rewritten). */
int sym_cache__load(const char *dir, const uint8_t *id, size_t id_len,
		    uint64_t source_key, const struct cache_source *srcs,
		    size_t nsrcs, const struct log_sink *log,
		    struct sym_cache **out);
/* Writes v for id, made from srcs, to dir (temporary file, then rename). */
int sym_cache__store(const char *dir, const uint8_t *id, size_t id_len,
		     const struct sym_cache_view *v,
		     const struct cache_source *srcs, size_t nsrcs,
		     const struct log_sink *log);

#endif
