/* table_cache.h - whole-module unwind tables kept on disk, keyed by
 * build-id: an explicit little-endian format (docs/table-cache-format.md),
 * mapped read-only and used in place after its checksum and every bound
 * were checked. */
#ifndef SS_TABLE_TABLE_CACHE_H
#define SS_TABLE_TABLE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/cache_bind.h"
#include "base/log.h"
#include "table/unwind_table.h"

/* 3: the entry records the file it was made from (base/cache_bind.h). */
#define TABLE_CACHE_VERSION 3
/* Bumped whenever the compiler would give other rows for the same CFI:
 * a file of another compiler version is stale. */
#define TABLE_CACHE_COMPILER 1
#define TABLE_CACHE_MAX_SIGRETURN 4
/* log2 of the address range one checksummed chunk of rows covers (at
 * least; a sparse table's blocks may be larger): a lookup checks the
 * chunk it lands in once, so a dump that touches a handful of functions
 * of a 50 MB library checks a handful of chunks, not the whole file. */
#define TABLE_CACHE_CHUNK_SHIFT 16

/* What a cache file must agree with to be used: the module's build-id,
 * its CFI sections (the table's inputs), the module's file (identity,
 * else the digest of its bytes: a build-id is only a name) and, returned
 * by a load, the module's signal trampolines. */
struct table_cache_key {
	const uint8_t *build_id;
	size_t build_id_len;		/* 1..40 */
	const struct cfi_input *inputs;
	size_t ninputs;			/* 1 or 2 */
	const struct cache_source *file; /* the module's file: recorded by an
					   encode, checked by a load (which
					   refuses a key without it); not by
					   a decode */
};

/* Encodes a whole table (not lazy) and the module's trampolines into a
 * malloc'ed buffer. Returns 0 or -errno (-EINVAL: lazy or too large). */
int table_cache__encode(const struct unwind_table *t,
			const struct table_cache_key *key,
			const uint64_t *sigreturn, unsigned nsigreturn,
			uint8_t **out, size_t *len);

/* Checks bytes as a cache file for key and, when valid, makes a table
 * whose arrays point into the bytes (which must outlive it; the table
 * does not free them). Checked here: the header, the size, the FDE list
 * and the chunk checksums; each chunk of rows is checked when a lookup
 * first lands in it (unwind_table__check_all checks them all), and a
 * chunk that fails makes the table compile its inputs instead. Returns
 * 0, or -EINVAL with *why saying what is wrong (truncated, checksum,
 * another build-id...). */
int table_cache__decode(const uint8_t *bytes, size_t len,
			const struct table_cache_key *key,
			uint64_t *sigreturn, unsigned *nsigreturn,
			struct unwind_table **out, const char **why);

/* Recomputes the payload size and both checksums of the file bytes b in
 * place (for the fuzz target, to reach the checks behind them). */
void table_cache__seal(uint8_t *b, size_t len);

/* The cache file's path for a build-id: DIR/tables/<hex>.table. */
int table_cache__path(const char *dir, const uint8_t *build_id,
		      size_t build_id_len, char *buf, size_t size);

/* Maps the file for key from dir, decodes it and checks that it was made
 * from key->file (the table owns the mapping). -ENOENT: none; -EPERM:
 * not trusted (ownership, mode); -EINVAL: not valid, or made from another
 * file with this build-id (logged at info level: it is then rewritten). */
int table_cache__load(const char *dir, const struct table_cache_key *key,
		      const struct log_sink *log, uint64_t *sigreturn,
		      unsigned *nsigreturn, struct unwind_table **out);

/* Writes t for key to dir (temporary file, then rename). */
int table_cache__store(const char *dir, const struct table_cache_key *key,
		       const struct unwind_table *t, const uint64_t *sigreturn,
		       unsigned nsigreturn, const struct log_sink *log);

#endif
