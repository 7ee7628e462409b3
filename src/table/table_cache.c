/* table_cache.c - encodes whole unwind tables into the cache file format
 * (docs/table-cache-format.md), and checks and maps such files for use in
 * place: the header and the small index at load, each chunk of rows when a
 * lookup first lands in it. */
#define _GNU_SOURCE
#include "table/table_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/cache_bind.h"
#include "base/cache_file.h"
#include "base/checksum.h"

static const char magic[8] = "SSUTABLE";

/* Header offsets (all fields little-endian). */
enum {
	H_MAGIC = 0, H_VERSION = 8, H_COMPILER = 12, H_HDR_SIZE = 16,
	H_BUILD_ID_LEN = 20, H_BUILD_ID = 24, /* 40 bytes, zero-padded */
	H_LO = 64, H_HI = 72, H_NROWS = 80, H_NBLOCKS = 84, H_SHIFT = 88,
	H_NFDES = 92, H_NINPUTS = 96, H_INPUT_KINDS = 100,
	H_INPUTS = 104, /* 2 x (u64 vaddr, u64 size) */
	H_NSIG = 136, H_CHUNK_SHIFT = 140, H_SIG = 144, /* 4 x u64 */
	H_SOURCE = 176, /* the module file's record: base/cache_bind.h */
	H_PAYLOAD_SIZE = 248, H_INDEX_HASH = 256, H_HEADER_HASH = 264,
	HDR_SIZE = 272,
};
_Static_assert(H_SOURCE + CACHE_BIND_SIZE == H_PAYLOAD_SIZE, "header layout");

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* The in-memory row is the file's row when the host is little-endian and
 * lays the two 4-bit kinds out low nibble first (x86_64 with GCC or
 * clang): then the table is used in place; otherwise files are neither
 * written nor read. */
static bool rows_native(void)
{
	struct unwind_row r = { .cfa_off = 0x0102, .rbp_off = 0x0304,
				.rbx_off = 0x0506, .cfa_kind = 7, .rbp_kind = 1,
				.rbx_kind = 2 };
	static const uint8_t want[8] = { 2, 1, 4, 3, 6, 5, 7, 0x21 };

	_Static_assert(sizeof(struct unwind_row) == 8, "row is 8 bytes");
	return !memcmp(&r, want, 8);
}

struct layout {
	size_t starts, rows, block, fdes, sums, end; /* offsets from the file start */
};

static void layout_of(uint64_t nrows, uint64_t nblocks, uint64_t nfdes,
		      uint64_t nchunks, struct layout *l)
{
	l->starts = HDR_SIZE;
	l->rows = l->starts + pad8(nrows * 4);
	l->block = l->rows + nrows * 8;
	l->fdes = l->block + pad8((nblocks + 1) * 4);
	l->sums = l->fdes + nfdes * 8;
	l->end = l->sums + nchunks * 8;
}

static uint64_t chunks_of(uint64_t span, unsigned chunk_shift)
{
	return ((span - 1) >> chunk_shift) + 1;
}

/* The block index entries chunk c's lookups read: [*b0, *b1]. */
static void chunk_blocks(uint64_t nblocks, unsigned shift, unsigned chunk_shift,
			 uint64_t c, uint64_t *b0, uint64_t *b1)
{
	*b0 = c << (chunk_shift - shift);
	*b1 = *b0 + (1ull << (chunk_shift - shift));
	if (*b1 > nblocks)
		*b1 = nblocks;
}

/* The checksum of chunk c: over its block entries [b0, b1] and the starts
 * and rows [r0, r1] they span (r0 = block[b0], r1 = block[b1]), as the
 * checksum of the three checksums. */
static uint64_t chunk_sum(const uint8_t *b, const struct layout *l,
			  uint64_t b0, uint64_t b1, uint64_t r0, uint64_t r1)
{
	uint8_t w[24];

	put_le64(w, checksum64(b + l->block + 4 * b0, 4 * (b1 - b0 + 1)));
	put_le64(w + 8, checksum64(b + l->starts + 4 * r0, 4 * (r1 - r0 + 1)));
	put_le64(w + 16, checksum64(b + l->rows + 8 * r0, 8 * (r1 - r0 + 1)));
	return checksum64(w, sizeof(w));
}

int table_cache__encode(const struct unwind_table *t,
			const struct table_cache_key *key,
			const uint64_t *sigreturn, unsigned nsigreturn,
			uint8_t **out, size_t *len)
{
	struct layout l;
	uint8_t *b;
	unsigned cshift = t->block_shift > TABLE_CACHE_CHUNK_SHIFT
				  ? t->block_shift : TABLE_CACHE_CHUNK_SHIFT;

	*out = NULL;
	if (t->lazy || t->unchecked || t->hi <= t->lo || !t->nrows || t->nrows > UINT32_MAX ||
	    t->nblocks >= UINT32_MAX || t->nfdes > UINT32_MAX ||
	    !key->build_id_len || key->build_id_len > 40 || !key->ninputs ||
	    key->ninputs > 2 || key->ninputs != t->ninputs ||
	    nsigreturn > TABLE_CACHE_MAX_SIGRETURN || !rows_native())
		return -EINVAL;
	uint64_t nchunks = chunks_of(t->hi - t->lo, cshift);
	layout_of(t->nrows, t->nblocks, t->nfdes, nchunks, &l);
	b = calloc(1, l.end);
	if (!b)
		return -ENOMEM;
	memcpy(b + H_MAGIC, magic, 8);
	put_le32(b + H_VERSION, TABLE_CACHE_VERSION);
	put_le32(b + H_COMPILER, TABLE_CACHE_COMPILER);
	put_le32(b + H_HDR_SIZE, HDR_SIZE);
	put_le32(b + H_BUILD_ID_LEN, (uint32_t)key->build_id_len);
	memcpy(b + H_BUILD_ID, key->build_id, key->build_id_len);
	put_le64(b + H_LO, t->lo);
	put_le64(b + H_HI, t->hi);
	put_le32(b + H_NROWS, (uint32_t)t->nrows);
	put_le32(b + H_NBLOCKS, (uint32_t)t->nblocks);
	put_le32(b + H_SHIFT, t->block_shift);
	put_le32(b + H_NFDES, (uint32_t)t->nfdes);
	put_le32(b + H_NINPUTS, (uint32_t)key->ninputs);
	uint32_t kinds = 0;
	for (size_t i = 0; i < key->ninputs; i++) {
		kinds |= (key->inputs[i].is_eh_frame ? 1u : 0u) << i;
		put_le64(b + H_INPUTS + 16 * i, key->inputs[i].vaddr);
		put_le64(b + H_INPUTS + 16 * i + 8, key->inputs[i].size);
	}
	put_le32(b + H_INPUT_KINDS, kinds);
	put_le32(b + H_NSIG, nsigreturn);
	put_le32(b + H_CHUNK_SHIFT, cshift);
	for (unsigned i = 0; i < nsigreturn; i++)
		put_le64(b + H_SIG + 8 * i, sigreturn[i]);
	if (key->file)
		cache_bind__put(b + H_SOURCE, key->file);
	for (size_t i = 0; i < t->nrows; i++)
		put_le32(b + l.starts + 4 * i, t->starts[i]);
	memcpy(b + l.rows, t->rows, t->nrows * 8);
	for (size_t i = 0; i <= t->nblocks; i++)
		put_le32(b + l.block + 4 * i, t->block[i]);
	for (size_t i = 0; i < t->nfdes; i++) {
		put_le32(b + l.fdes + 8 * i, t->fdes[i].off);
		put_le32(b + l.fdes + 8 * i + 4, t->fdes[i].input);
	}
	for (uint64_t c = 0; c < nchunks; c++) {
		uint64_t b0, b1;

		chunk_blocks(t->nblocks, t->block_shift, cshift, c, &b0, &b1);
		put_le64(b + l.sums + 8 * c,
		      chunk_sum(b, &l, b0, b1, t->block[b0], t->block[b1]));
	}
	put_le64(b + H_PAYLOAD_SIZE, l.end - HDR_SIZE);
	put_le64(b + H_INDEX_HASH, checksum64(b + l.fdes, l.end - l.fdes));
	put_le64(b + H_HEADER_HASH, checksum64(b, H_HEADER_HASH));
	*out = b;
	*len = l.end;
	return 0;
}

/* The table's shape as a file header states it. */
struct geometry {
	uint64_t lo, hi, nchunks;
	uint32_t nrows, nblocks, shift, cshift, nfdes;
	struct layout l;
};

/* Reads the header's shape; false when its fields are out of bounds
 * (then g is not to be used). */
static bool geometry_of(const uint8_t *b, struct geometry *g)
{
	g->lo = le64(b + H_LO);
	g->hi = le64(b + H_HI);
	g->nrows = le32(b + H_NROWS);
	g->nblocks = le32(b + H_NBLOCKS);
	g->shift = le32(b + H_SHIFT);
	g->cshift = le32(b + H_CHUNK_SHIFT);
	g->nfdes = le32(b + H_NFDES);
	if (g->hi <= g->lo || g->hi - g->lo > UINT32_MAX || !g->nrows ||
	    g->nrows > g->hi - g->lo || g->shift < 1 || g->shift > 40 ||
	    g->nblocks != ((g->hi - g->lo) >> g->shift) + 1 ||
	    g->cshift < g->shift || g->cshift > 40)
		return false;
	g->nchunks = chunks_of(g->hi - g->lo, g->cshift);
	layout_of(g->nrows, g->nblocks, g->nfdes, g->nchunks, &g->l);
	return true;
}

void table_cache__seal(uint8_t *b, size_t len)
{
	struct geometry g;

	if (len < HDR_SIZE)
		return;
	if (geometry_of(b, &g) && g.l.end == len) {
		/* The chunk sums, where the block entries they span are in
		 * bounds. */
		for (uint64_t c = 0; c < g.nchunks; c++) {
			uint64_t b0, b1, r0, r1;

			chunk_blocks(g.nblocks, g.shift, g.cshift, c, &b0, &b1);
			r0 = le32(b + g.l.block + 4 * b0);
			r1 = le32(b + g.l.block + 4 * b1);
			if (r0 <= r1 && r1 < g.nrows)
				put_le64(b + g.l.sums + 8 * c,
				      chunk_sum(b, &g.l, b0, b1, r0, r1));
		}
		put_le64(b + H_INDEX_HASH, checksum64(b + g.l.fdes, g.l.end - g.l.fdes));
	}
	put_le64(b + H_PAYLOAD_SIZE, len - HDR_SIZE);
	put_le64(b + H_HEADER_HASH, checksum64(b, H_HEADER_HASH));
}

/* Chunk c of a table decoded from file bytes t->map: its checksum, then
 * every bound its lookups rely on, and its block entries exactly as the
 * compiler builds them from its rows. Lookups in the chunk read only
 * block entries [b0, b1] and the starts and rows [r0, r1] they span. */
static int check_chunk(const struct unwind_table *t, size_t c, void *user,
		       const char **why)
{
	const uint8_t *b = t->map;
	const uint32_t *starts = t->starts, *block = t->block;
	const struct unwind_row *rows = t->rows;
	uint64_t span = t->hi - t->lo, b0, b1, r0, r1;
	struct layout l;

	(void)user;
	layout_of(t->nrows, t->nblocks, t->nfdes,
		  chunks_of(span, t->unchecked->chunk_shift), &l);
	chunk_blocks(t->nblocks, t->block_shift, t->unchecked->chunk_shift, c,
		     &b0, &b1);
	r0 = block[b0];
	r1 = block[b1];
#define BAD(msg) do { *why = (msg); return -EINVAL; } while (0)
	if (r0 > r1 || r1 >= t->nrows)
		BAD("block index out of bounds");
	if (le64(b + l.sums + 8 * c) != chunk_sum(b, &l, b0, b1, r0, r1))
		BAD("checksum of a chunk");
	for (uint64_t r = r0; r <= r1; r++) {
		const struct unwind_row *w = &rows[r];

		if (starts[r] >= span || (r > r0 && starts[r] <= starts[r - 1]))
			BAD("row starts out of order");
		if (w->cfa_kind > UT_CFA_DWARF)
			BAD("row of an unknown kind");
		if (w->cfa_kind == UT_CFA_DWARF) {
			if (unwind_row__fde_index(w) >= t->nfdes ||
			    w->rbp_kind > UT_DWARF_SIGNAL_FRAME || w->rbx_kind)
				BAD("DWARF row out of bounds");
		} else if (w->rbp_kind > UT_RBP_UNDEFINED ||
			   w->rbx_kind > UT_RBP_UNDEFINED) {
			BAD("register rule of an unknown kind");
		}
	}
	for (uint64_t bi = b0, prev = r0; bi <= b1; bi++) {
		uint64_t a = bi << t->block_shift, r = block[bi];

		if (r < prev || r > r1 || starts[r] > a ||
		    (r < r1 && starts[r + 1] <= a))
			BAD("block index does not match the rows");
		prev = r;
	}
#undef BAD
	return 0;
}

int table_cache__decode(const uint8_t *b, size_t len,
			const struct table_cache_key *key,
			uint64_t *sigreturn, unsigned *nsigreturn,
			struct unwind_table **out, const char **why)
{
	struct unwind_table *t;
	struct geometry g;
	const struct layout *l = &g.l;
	uint32_t nsig, kinds;
	const char *bad = NULL;

	*out = NULL;
#define BAD(msg) do { bad = (msg); goto bad; } while (0)
	if (!rows_native())
		BAD("rows are not in this machine's layout");
	if (len < HDR_SIZE)
		BAD("truncated header");
	if (memcmp(b + H_MAGIC, magic, 8))
		BAD("not a table cache file");
	if (le32(b + H_VERSION) != TABLE_CACHE_VERSION ||
	    le32(b + H_COMPILER) != TABLE_CACHE_COMPILER ||
	    le32(b + H_HDR_SIZE) != HDR_SIZE)
		BAD("another format or compiler version");
	if (le64(b + H_HEADER_HASH) != checksum64(b, H_HEADER_HASH))
		BAD("header checksum");
	if (le32(b + H_BUILD_ID_LEN) != key->build_id_len ||
	    key->build_id_len > 40 ||
	    memcmp(b + H_BUILD_ID, key->build_id, key->build_id_len))
		BAD("another build-id (stale)");
	kinds = le32(b + H_INPUT_KINDS);
	if (le32(b + H_NINPUTS) != key->ninputs || key->ninputs > 2)
		BAD("other CFI sections (stale)");
	for (size_t i = 0; i < key->ninputs; i++)
		if (le64(b + H_INPUTS + 16 * i) != key->inputs[i].vaddr ||
		    le64(b + H_INPUTS + 16 * i + 8) != key->inputs[i].size ||
		    !((kinds >> i) & 1) != !key->inputs[i].is_eh_frame)
			BAD("other CFI sections (stale)");
	nsig = le32(b + H_NSIG);
	if (!geometry_of(b, &g) || nsig > TABLE_CACHE_MAX_SIGRETURN)
		BAD("header fields out of bounds");
	if (le64(b + H_PAYLOAD_SIZE) != l->end - HDR_SIZE || len != l->end)
		BAD(len < l->end ? "truncated" : "size does not match its header");
	/* Here only what is small: the FDE list and the chunk checksums.
	 * Rows are checked a chunk at a time, on first use (check_chunk). */
	if (le64(b + H_INDEX_HASH) != checksum64(b + l->fdes, l->end - l->fdes))
		BAD("checksum of the index");
	for (uint32_t i = 0; i < g.nfdes; i++) {
		uint32_t off = le32(b + l->fdes + 8 * i);
		uint32_t in = le32(b + l->fdes + 8 * i + 4);

		if (in >= key->ninputs || off >= key->inputs[in].size)
			BAD("FDE reference out of bounds");
	}
#undef BAD
	t = calloc(1, sizeof(*t));
	if (!t || !(t->inputs = malloc(key->ninputs * sizeof(*t->inputs)))) {
		free(t);
		return -ENOMEM;
	}
	memcpy(t->inputs, key->inputs, key->ninputs * sizeof(*t->inputs));
	t->serial = unwind_table__new_serial();
	t->ninputs = key->ninputs;
	t->lo = g.lo;
	t->hi = g.hi;
	t->starts = (uint32_t *)(b + l->starts);
	t->rows = (struct unwind_row *)(b + l->rows);
	t->nrows = g.nrows;
	t->block = (uint32_t *)(b + l->block);
	t->nblocks = g.nblocks;
	t->block_shift = g.shift;
	t->fdes = (struct ut_fde *)(b + l->fdes);
	t->nfdes = g.nfdes;
	t->map = (void *)b; /* borrowed: the caller's bytes */
	int err = unwind_table__defer_checks(t, g.cshift, check_chunk, NULL, NULL,
					     NULL);
	if (err) {
		unwind_table__free(t);
		return err;
	}
	for (unsigned i = 0; i < nsig; i++)
		sigreturn[i] = le64(b + H_SIG + 8 * i);
	*nsigreturn = nsig;
	*out = t;
	return 0;
bad:
	if (why)
		*why = bad;
	return -EINVAL;
}

int table_cache__path(const char *dir, const uint8_t *id, size_t n, char *buf,
		      size_t size)
{
	int k = snprintf(buf, size, "%s/tables/", dir);

	if (!n || n > 40 || k < 0 || (size_t)k + 2 * n + sizeof(".table") > size)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < n; i++)
		k += snprintf(buf + k, size - (size_t)k, "%02x", id[i]);
	strcpy(buf + k, ".table");
	return 0;
}

int table_cache__load(const char *dir, const struct table_cache_key *key,
		      const struct log_sink *log, uint64_t *sigreturn,
		      unsigned *nsigreturn, struct unwind_table **out)
{
	char path[4096];
	const char *why = NULL;
	void *map;
	size_t len;
	int err;

	*out = NULL;
	if (!key->file)
		return -EINVAL;
	if ((err = table_cache__path(dir, key->build_id, key->build_id_len,
				     path, sizeof(path))))
		return err;
	if ((err = cache_file__map(path, "table cache", log, &map, &len)))
		return err;
	err = table_cache__decode(map, len, key, sigreturn, nsigreturn, out,
				  &why);
	if (!err && key->file) {
		/* Rows and trampolines come from the file's bytes, which its
		 * build-id does not vouch for. */
		enum cache_bind_match m = cache_bind__check((const uint8_t *)map + H_SOURCE,
							  key->file);

		if (m == CACHE_BIND_OTHER) {
			unwind_table__free(*out);
			*out = NULL;
			err = -EINVAL;
			why = "made from another file with this build-id, whose "
			      "bytes differ";
		} else if (m == CACHE_BIND_SAME_BYTES) {
			log_info(log, "%s: table cache file made from another "
				 "copy of this file (same bytes): used", path);
		}
	}
	if (err) {
		munmap(map, len);
		if (err == -EINVAL)
			log_info(log, "%s: table cache file not valid (%s); ignored "
				 "and rewritten", path, why);
		return err;
	}
	(*out)->map = map;
	(*out)->map_len = len;
	/* Chunks that fail their check later say so under -v. */
	if ((*out)->unchecked) {
		(*out)->unchecked->log = log;
		(*out)->unchecked->name = strdup(path);
	}
	return 0;
}

int table_cache__store(const char *dir, const struct table_cache_key *key,
		       const struct unwind_table *t, const uint64_t *sigreturn,
		       unsigned nsigreturn, const struct log_sink *log)
{
	char path[4096];
	uint8_t *b;
	size_t len;
	int err;

	if ((err = table_cache__path(dir, key->build_id, key->build_id_len,
				     path, sizeof(path))) ||
	    (err = table_cache__encode(t, key, sigreturn, nsigreturn, &b, &len)))
		return err;
	err = cache_file__write(path, b, len, log);
	free(b);
	return err;
}
