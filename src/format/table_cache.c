/* table_cache.c - encodes whole unwind tables into the cache file format
 * (docs/table-cache-format.md), and checks and maps such files for use in
 * place. */
#define _GNU_SOURCE
#include "format/table_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cache_file.h"

static const char magic[8] = "SSUTABLE";

/* Header offsets (all fields little-endian). */
enum {
	H_MAGIC = 0, H_VERSION = 8, H_COMPILER = 12, H_HDR_SIZE = 16,
	H_BUILD_ID_LEN = 20, H_BUILD_ID = 24, /* 40 bytes, zero-padded */
	H_LO = 64, H_HI = 72, H_NROWS = 80, H_NBLOCKS = 84, H_SHIFT = 88,
	H_NFDES = 92, H_NINPUTS = 96, H_INPUT_KINDS = 100,
	H_INPUTS = 104, /* 2 x (u64 vaddr, u64 size) */
	H_NSIG = 136, H_RESERVED = 140, H_SIG = 144, /* 4 x u64 */
	H_PAYLOAD_SIZE = 176, H_PAYLOAD_HASH = 184, H_HEADER_HASH = 192,
	HDR_SIZE = 200,
};

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* A 64-bit checksum of bytes: four independent multiply-xor lanes over
 * 8-byte little-endian words (fast enough to check a 10 MB table in a
 * millisecond or two), folded with a final mix. Detects truncation and
 * corruption; trust comes from the ownership rules, not from it. */
static uint64_t checksum(const uint8_t *p, size_t len)
{
	uint64_t h[4] = { 0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull,
			  0x94d049bb133111ebull, 0x2545f4914f6cdd1dull };
	size_t i = 0;

	for (; i + 32 <= len; i += 32)
		for (int k = 0; k < 4; k++)
			h[k] = (h[k] ^ get64(p + i + 8 * k)) * 0x100000001b3ull;
	for (; i < len; i++)
		h[0] = (h[0] ^ p[i]) * 0x100000001b3ull;
	uint64_t x = h[0] ^ (h[1] << 1 | h[1] >> 63) ^ (h[2] << 2 | h[2] >> 62) ^
		     (h[3] << 3 | h[3] >> 61) ^ len;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return x;
}

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
	size_t starts, rows, block, fdes, end; /* offsets from the file start */
};

static void layout_of(uint64_t nrows, uint64_t nblocks, uint64_t nfdes,
		      struct layout *l)
{
	l->starts = HDR_SIZE;
	l->rows = l->starts + pad8(nrows * 4);
	l->block = l->rows + nrows * 8;
	l->fdes = l->block + pad8((nblocks + 1) * 4);
	l->end = l->fdes + nfdes * 8;
}

int table_cache__encode(const struct unwind_table *t,
			const struct table_cache_key *key,
			const uint64_t *sigreturn, unsigned nsigreturn,
			uint8_t **out, size_t *len)
{
	struct layout l;
	uint8_t *b;

	*out = NULL;
	if (t->lazy || !t->nrows || t->nrows > UINT32_MAX ||
	    t->nblocks >= UINT32_MAX || t->nfdes > UINT32_MAX ||
	    !key->build_id_len || key->build_id_len > 40 || !key->ninputs ||
	    key->ninputs > 2 || key->ninputs != t->ninputs ||
	    nsigreturn > TABLE_CACHE_MAX_SIGRETURN || !rows_native())
		return -EINVAL;
	layout_of(t->nrows, t->nblocks, t->nfdes, &l);
	b = calloc(1, l.end);
	if (!b)
		return -ENOMEM;
	memcpy(b + H_MAGIC, magic, 8);
	put32(b + H_VERSION, TABLE_CACHE_VERSION);
	put32(b + H_COMPILER, TABLE_CACHE_COMPILER);
	put32(b + H_HDR_SIZE, HDR_SIZE);
	put32(b + H_BUILD_ID_LEN, (uint32_t)key->build_id_len);
	memcpy(b + H_BUILD_ID, key->build_id, key->build_id_len);
	put64(b + H_LO, t->lo);
	put64(b + H_HI, t->hi);
	put32(b + H_NROWS, (uint32_t)t->nrows);
	put32(b + H_NBLOCKS, (uint32_t)t->nblocks);
	put32(b + H_SHIFT, t->block_shift);
	put32(b + H_NFDES, (uint32_t)t->nfdes);
	put32(b + H_NINPUTS, (uint32_t)key->ninputs);
	uint32_t kinds = 0;
	for (size_t i = 0; i < key->ninputs; i++) {
		kinds |= (key->inputs[i].is_eh_frame ? 1u : 0u) << i;
		put64(b + H_INPUTS + 16 * i, key->inputs[i].vaddr);
		put64(b + H_INPUTS + 16 * i + 8, key->inputs[i].size);
	}
	put32(b + H_INPUT_KINDS, kinds);
	put32(b + H_NSIG, nsigreturn);
	for (unsigned i = 0; i < nsigreturn; i++)
		put64(b + H_SIG + 8 * i, sigreturn[i]);
	for (size_t i = 0; i < t->nrows; i++)
		put32(b + l.starts + 4 * i, t->starts[i]);
	memcpy(b + l.rows, t->rows, t->nrows * 8);
	for (size_t i = 0; i <= t->nblocks; i++)
		put32(b + l.block + 4 * i, t->block[i]);
	for (size_t i = 0; i < t->nfdes; i++) {
		put32(b + l.fdes + 8 * i, t->fdes[i].off);
		put32(b + l.fdes + 8 * i + 4, t->fdes[i].input);
	}
	put64(b + H_PAYLOAD_SIZE, l.end - HDR_SIZE);
	put64(b + H_PAYLOAD_HASH, checksum(b + HDR_SIZE, l.end - HDR_SIZE));
	put64(b + H_HEADER_HASH, checksum(b, H_HEADER_HASH));
	*out = b;
	*len = l.end;
	return 0;
}

void table_cache__seal(uint8_t *b, size_t len)
{
	if (len < HDR_SIZE)
		return;
	put64(b + H_PAYLOAD_SIZE, len - HDR_SIZE);
	put64(b + H_PAYLOAD_HASH, checksum(b + HDR_SIZE, len - HDR_SIZE));
	put64(b + H_HEADER_HASH, checksum(b, H_HEADER_HASH));
}

/* Every bound the lookup and the DWARF evaluation rely on, and the block
 * index exactly as the compiler builds it. */
static const char *check_table(const uint8_t *b, const struct layout *l,
			       uint64_t span, uint32_t nrows, uint32_t nblocks,
			       unsigned shift, uint32_t nfdes,
			       const struct table_cache_key *key)
{
	const uint32_t *starts = (const uint32_t *)(b + l->starts);
	const struct unwind_row *rows = (const struct unwind_row *)(b + l->rows);
	const uint32_t *block = (const uint32_t *)(b + l->block);

	if (starts[0] != 0)
		return "first row does not start the table";
	for (uint32_t i = 1; i < nrows; i++)
		if (starts[i] <= starts[i - 1] || starts[i] >= span)
			return "row starts out of order";
	for (uint32_t i = 0; i < nrows; i++) {
		const struct unwind_row *r = &rows[i];

		if (r->cfa_kind > UT_CFA_DWARF)
			return "row of an unknown kind";
		if (r->cfa_kind == UT_CFA_DWARF) {
			if (unwind_row__fde_index(r) >= nfdes ||
			    r->rbp_kind > UT_DWARF_SIGNAL_FRAME || r->rbx_kind)
				return "DWARF row out of bounds";
		} else if (r->rbp_kind > UT_RBP_UNDEFINED ||
			   r->rbx_kind > UT_RBP_UNDEFINED) {
			return "register rule of an unknown kind";
		}
	}
	for (uint32_t bi = 0, r = 0; bi <= nblocks; bi++) {
		uint64_t a = (uint64_t)bi << shift;

		while (r + 1 < nrows && starts[r + 1] <= a)
			r++;
		if (block[bi] != r)
			return "block index does not match the rows";
	}
	for (uint32_t i = 0; i < nfdes; i++) {
		uint32_t off = get32(b + l->fdes + 8 * i);
		uint32_t in = get32(b + l->fdes + 8 * i + 4);

		if (in >= key->ninputs || off >= key->inputs[in].size)
			return "FDE reference out of bounds";
	}
	return NULL;
}

int table_cache__decode(const uint8_t *b, size_t len,
			const struct table_cache_key *key,
			uint64_t *sigreturn, unsigned *nsigreturn,
			struct unwind_table **out, const char **why)
{
	struct unwind_table *t;
	struct layout l;
	uint32_t nrows, nblocks, shift, nfdes, nsig, kinds;
	uint64_t lo, hi;
	const char *bad = NULL;

	*out = NULL;
#define BAD(msg) do { bad = (msg); goto bad; } while (0)
	if (!rows_native())
		BAD("rows are not in this machine's layout");
	if (len < HDR_SIZE)
		BAD("truncated header");
	if (memcmp(b + H_MAGIC, magic, 8))
		BAD("not a table cache file");
	if (get32(b + H_VERSION) != TABLE_CACHE_VERSION ||
	    get32(b + H_COMPILER) != TABLE_CACHE_COMPILER ||
	    get32(b + H_HDR_SIZE) != HDR_SIZE)
		BAD("another format or compiler version");
	if (get64(b + H_HEADER_HASH) != checksum(b, H_HEADER_HASH))
		BAD("header checksum");
	if (get32(b + H_BUILD_ID_LEN) != key->build_id_len ||
	    key->build_id_len > 40 ||
	    memcmp(b + H_BUILD_ID, key->build_id, key->build_id_len))
		BAD("another build-id (stale)");
	kinds = get32(b + H_INPUT_KINDS);
	if (get32(b + H_NINPUTS) != key->ninputs || key->ninputs > 2)
		BAD("other CFI sections (stale)");
	for (size_t i = 0; i < key->ninputs; i++)
		if (get64(b + H_INPUTS + 16 * i) != key->inputs[i].vaddr ||
		    get64(b + H_INPUTS + 16 * i + 8) != key->inputs[i].size ||
		    !((kinds >> i) & 1) != !key->inputs[i].is_eh_frame)
			BAD("other CFI sections (stale)");
	lo = get64(b + H_LO);
	hi = get64(b + H_HI);
	nrows = get32(b + H_NROWS);
	nblocks = get32(b + H_NBLOCKS);
	shift = get32(b + H_SHIFT);
	nfdes = get32(b + H_NFDES);
	nsig = get32(b + H_NSIG);
	if (hi <= lo || hi - lo > UINT32_MAX || !nrows || nrows > (hi - lo) ||
	    shift < 1 || shift > 40 || nblocks != ((hi - lo) >> shift) + 1 ||
	    nsig > TABLE_CACHE_MAX_SIGRETURN || get32(b + H_RESERVED))
		BAD("header fields out of bounds");
	layout_of(nrows, nblocks, nfdes, &l);
	if (get64(b + H_PAYLOAD_SIZE) != l.end - HDR_SIZE || len != l.end)
		BAD(len < l.end ? "truncated" : "size does not match its header");
	if (get64(b + H_PAYLOAD_HASH) != checksum(b + HDR_SIZE, l.end - HDR_SIZE))
		BAD("checksum");
	if ((bad = check_table(b, &l, hi - lo, nrows, nblocks, shift, nfdes, key)))
		goto bad;
#undef BAD
	t = calloc(1, sizeof(*t));
	if (!t || !(t->inputs = malloc(key->ninputs * sizeof(*t->inputs)))) {
		free(t);
		return -ENOMEM;
	}
	memcpy(t->inputs, key->inputs, key->ninputs * sizeof(*t->inputs));
	t->ninputs = key->ninputs;
	t->lo = lo;
	t->hi = hi;
	t->starts = (uint32_t *)(b + l.starts);
	t->rows = (struct unwind_row *)(b + l.rows);
	t->nrows = nrows;
	t->block = (uint32_t *)(b + l.block);
	t->nblocks = nblocks;
	t->block_shift = shift;
	t->fdes = (struct ut_fde *)(b + l.fdes);
	t->nfdes = nfdes;
	t->map = (void *)b; /* borrowed: the caller's bytes */
	for (unsigned i = 0; i < nsig; i++)
		sigreturn[i] = get64(b + H_SIG + 8 * i);
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
	struct stat st;
	const char *why = NULL;
	void *map;
	int fd, err;

	*out = NULL;
	if ((err = table_cache__path(dir, key->build_id, key->build_id_len,
				     path, sizeof(path))))
		return err;
	fd = cache_file__open(path, log, NULL);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || st.st_size <= 0) {
		close(fd);
		log_info(log, "%s: empty table cache file; ignored", path);
		return -EINVAL;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	err = table_cache__decode(map, (size_t)st.st_size, key, sigreturn,
				  nsigreturn, out, &why);
	if (err) {
		munmap(map, (size_t)st.st_size);
		if (err == -EINVAL)
			log_info(log, "%s: table cache file not valid (%s); ignored "
				 "and rewritten", path, why);
		return err;
	}
	(*out)->map = map;
	(*out)->map_len = (size_t)st.st_size;
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
