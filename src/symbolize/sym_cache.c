/* sym_cache.c - encodes symbol indexes into the symbol cache format
 * (docs/symbol-cache-format.md), and checks and maps such files for use
 * in place, block by block. */
#define _GNU_SOURCE
#include "symbolize/sym_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/cache_bind.h"
#include "base/cache_file.h"
#include "base/checksum.h"

static const char magic[8] = "SSSYMTAB";

/* Header offsets (all fields little-endian). */
enum {
	H_MAGIC = 0, H_VERSION = 8, H_HDR_SIZE = 12, H_BUILD_ID_LEN = 16,
	H_NTABLES = 20, H_BUILD_ID = 24, /* 40 bytes, zero-padded */
	H_SOURCE_KEY = 64, H_NRECS = 72, /* 4 x u32 */
	H_NRANGES = 88, H_BLOCK = 92, H_STRS_LEN = 96, H_PAYLOAD_SIZE = 104,
	H_NFUNCS = 112, H_FLAGS = 116, H_NSOURCES = 120, /* u32, 4 bytes 0 */
	H_SOURCES = 128, /* SYM_CACHE_MAX_SOURCES records: base/cache_bind.h */
	H_SUMS_HASH = 272, H_HEADER_HASH = 280,
};
_Static_assert(H_SOURCES + SYM_CACHE_MAX_SOURCES * CACHE_BIND_SIZE == H_SUMS_HASH,
	       "header layout");

_Static_assert(sizeof(struct sym_rec) == 32, "record is 32 bytes");
_Static_assert(sizeof(struct sym_cu_range) == 24, "range is 24 bytes");
_Static_assert(sizeof(struct sym_func) == 24, "function piece is 24 bytes");
_Static_assert(H_HEADER_HASH + 8 == SYM_CACHE_HDR_SIZE, "header layout");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "records are used in place: a little-endian host");

/* Invariant: view's arrays point into [data, data + data_len), which is
 * covered by nblocks blocks of SYM_CACHE_BLOCK bytes (the last may be
 * short) whose checksums are sums[]; bit i of verified is set once block
 * i was found to match. */
struct sym_cache {
	struct sym_cache_view view;
	const uint8_t *data;
	size_t data_len;
	const uint8_t *sums;
	size_t nblocks;
	uint64_t *verified;
	bool bad;		/* a block failed: nothing more is trusted */
	void *map;		/* owned mapping, or NULL (caller's bytes) */
	size_t map_len;
};

/* The data's size, or 0 when it does not fit in a size_t. */
static size_t data_size(const size_t nrecs[SYM_CACHE_MAX_TABLES],
			size_t nranges, size_t nfuncs, size_t strs_len)
{
	size_t n = 0;

	for (int i = 0; i < SYM_CACHE_MAX_TABLES; i++) {
		if (nrecs[i] > UINT32_MAX)
			return 0;
		n += nrecs[i] * sizeof(struct sym_rec);
	}
	if (nranges > UINT32_MAX || nfuncs > UINT32_MAX || strs_len > UINT32_MAX)
		return 0;
	return n + nranges * sizeof(struct sym_cu_range) +
	       nfuncs * sizeof(struct sym_func) + strs_len;
}

static void seal(uint8_t *b, size_t data_off, size_t nblocks, size_t data_len)
{
	for (size_t i = 0; i < nblocks; i++) {
		size_t off = i * SYM_CACHE_BLOCK;
		size_t n = data_len - off < SYM_CACHE_BLOCK ? data_len - off
							    : SYM_CACHE_BLOCK;

		put_le64(b + SYM_CACHE_HDR_SIZE + 8 * i,
			 checksum64(b + data_off + off, n));
	}
	put_le64(b + H_SUMS_HASH, checksum64(b + SYM_CACHE_HDR_SIZE, 8 * nblocks));
	put_le64(b + H_HEADER_HASH, checksum64(b, H_HEADER_HASH));
}

int sym_cache__encode(const uint8_t *id, size_t id_len,
		      const struct sym_cache_view *v,
		      const struct cache_source *srcs, size_t nsrcs,
		      uint8_t **out, size_t *len)
{
	size_t nrecs[SYM_CACHE_MAX_TABLES] = { 0 }, data_len, nblocks, off;
	uint8_t *b;

	*out = NULL;
	if (!id_len || id_len > 40 || v->ntables > SYM_CACHE_MAX_TABLES ||
	    nsrcs > SYM_CACHE_MAX_SOURCES ||
	    (v->flags & ~(unsigned)SYM_CACHE_FUNCTIONS) ||
	    !v->strs_len || v->strs[v->strs_len - 1])
		return -EINVAL;
	for (unsigned t = 0; t < v->ntables; t++)
		nrecs[t] = v->nrecs[t];
	data_len = data_size(nrecs, v->nranges, v->nfuncs, v->strs_len);
	if (!data_len)
		return -EINVAL;
	nblocks = (data_len + SYM_CACHE_BLOCK - 1) / SYM_CACHE_BLOCK;
	off = SYM_CACHE_HDR_SIZE + 8 * nblocks;
	b = calloc(1, off + data_len);
	if (!b)
		return -ENOMEM;
	memcpy(b + H_MAGIC, magic, 8);
	put_le32(b + H_VERSION, SYM_CACHE_VERSION);
	put_le32(b + H_HDR_SIZE, SYM_CACHE_HDR_SIZE);
	put_le32(b + H_BUILD_ID_LEN, (uint32_t)id_len);
	put_le32(b + H_NTABLES, v->ntables);
	memcpy(b + H_BUILD_ID, id, id_len);
	put_le64(b + H_SOURCE_KEY, v->source_key);
	for (int t = 0; t < SYM_CACHE_MAX_TABLES; t++)
		put_le32(b + H_NRECS + 4 * t, (uint32_t)nrecs[t]);
	put_le32(b + H_NRANGES, (uint32_t)v->nranges);
	put_le32(b + H_NFUNCS, (uint32_t)v->nfuncs);
	put_le32(b + H_FLAGS, v->flags);
	put_le32(b + H_BLOCK, SYM_CACHE_BLOCK);
	put_le64(b + H_STRS_LEN, v->strs_len);
	put_le64(b + H_PAYLOAD_SIZE, 8 * nblocks + data_len);
	put_le32(b + H_NSOURCES, (uint32_t)nsrcs);
	for (size_t i = 0; i < nsrcs; i++)
		cache_bind__put(b + H_SOURCES + CACHE_BIND_SIZE * i, &srcs[i]);
	size_t p = off;
	for (unsigned t = 0; t < v->ntables; t++) {
		/* The in-memory record is the file's (little-endian host). */
		memcpy(b + p, v->recs[t], nrecs[t] * sizeof(struct sym_rec));
		p += nrecs[t] * sizeof(struct sym_rec);
	}
	if (v->nranges)
		memcpy(b + p, v->ranges, v->nranges * sizeof(struct sym_cu_range));
	p += v->nranges * sizeof(struct sym_cu_range);
	if (v->nfuncs)
		memcpy(b + p, v->funcs, v->nfuncs * sizeof(struct sym_func));
	p += v->nfuncs * sizeof(struct sym_func);
	memcpy(b + p, v->strs, v->strs_len);
	seal(b, off, nblocks, data_len);
	*out = b;
	*len = off + data_len;
	return 0;
}

void sym_cache__seal(uint8_t *b, size_t len)
{
	size_t nrecs[SYM_CACHE_MAX_TABLES], data_len, nblocks;

	if (len < SYM_CACHE_HDR_SIZE)
		return;
	for (int t = 0; t < SYM_CACHE_MAX_TABLES; t++)
		nrecs[t] = le32(b + H_NRECS + 4 * t);
	data_len = data_size(nrecs, le32(b + H_NRANGES), le32(b + H_NFUNCS),
			     le64(b + H_STRS_LEN));
	nblocks = (data_len + SYM_CACHE_BLOCK - 1) / SYM_CACHE_BLOCK;
	if (!data_len || (len - SYM_CACHE_HDR_SIZE) / 8 < nblocks ||
	    len - SYM_CACHE_HDR_SIZE - 8 * nblocks != data_len)
		return;
	put_le64(b + H_PAYLOAD_SIZE, 8 * nblocks + data_len);
	seal(b, SYM_CACHE_HDR_SIZE + 8 * nblocks, nblocks, data_len);
}

int sym_cache__decode(const uint8_t *b, size_t len, const uint8_t *id,
		      size_t id_len, uint64_t source_key,
		      struct sym_cache **out, const char **why)
{
	size_t nrecs[SYM_CACHE_MAX_TABLES], data_len, nblocks, ntables, off;
	const char *bad = NULL;
	struct sym_cache *c;

	*out = NULL;
#define BAD(msg) do { bad = (msg); goto bad; } while (0)
	if (len < SYM_CACHE_HDR_SIZE)
		BAD("truncated header");
	if (memcmp(b + H_MAGIC, magic, 8))
		BAD("not a symbol cache file");
	if (le32(b + H_VERSION) != SYM_CACHE_VERSION ||
	    le32(b + H_HDR_SIZE) != SYM_CACHE_HDR_SIZE ||
	    le32(b + H_BLOCK) != SYM_CACHE_BLOCK)
		BAD("another format version");
	if (le64(b + H_HEADER_HASH) != checksum64(b, H_HEADER_HASH))
		BAD("header checksum");
	if (le32(b + H_BUILD_ID_LEN) != id_len || id_len > 40 || !id_len ||
	    memcmp(b + H_BUILD_ID, id, id_len))
		BAD("another build-id (stale)");
	if (le64(b + H_SOURCE_KEY) != source_key)
		BAD("symbols of other debug files (stale)");
	ntables = le32(b + H_NTABLES);
	if (ntables > SYM_CACHE_MAX_TABLES)
		BAD("header fields out of bounds");
	for (size_t t = 0; t < SYM_CACHE_MAX_TABLES; t++) {
		nrecs[t] = le32(b + H_NRECS + 4 * t);
		if (t >= ntables && nrecs[t])
			BAD("header fields out of bounds");
	}
	data_len = data_size(nrecs, le32(b + H_NRANGES), le32(b + H_NFUNCS),
			     le64(b + H_STRS_LEN));
	if (!data_len || !le64(b + H_STRS_LEN) || (le32(b + H_FLAGS) & ~(uint32_t)SYM_CACHE_FUNCTIONS))
		BAD("header fields out of bounds");
	nblocks = (data_len + SYM_CACHE_BLOCK - 1) / SYM_CACHE_BLOCK;
	off = SYM_CACHE_HDR_SIZE + 8 * nblocks;
	if (le64(b + H_PAYLOAD_SIZE) != 8 * nblocks + data_len)
		BAD("header fields out of bounds");
	if (len != off + data_len)
		BAD(len < off + data_len ? "truncated" : "size does not match its header");
	if (le64(b + H_SUMS_HASH) != checksum64(b + SYM_CACHE_HDR_SIZE, 8 * nblocks))
		BAD("checksum of the block checksums");
#undef BAD
	c = calloc(1, sizeof(*c));
	if (!c || !(c->verified = calloc((nblocks + 63) / 64, sizeof(uint64_t)))) {
		free(c);
		return -ENOMEM;
	}
	c->data = b + off;
	c->data_len = data_len;
	c->sums = b + SYM_CACHE_HDR_SIZE;
	c->nblocks = nblocks;
	c->view.source_key = source_key;
	c->view.flags = le32(b + H_FLAGS);
	c->view.ntables = (unsigned)ntables;
	size_t p = 0;
	for (size_t t = 0; t < ntables; t++) {
		c->view.recs[t] = (const struct sym_rec *)(c->data + p);
		c->view.nrecs[t] = nrecs[t];
		p += nrecs[t] * sizeof(struct sym_rec);
	}
	c->view.ranges = (const struct sym_cu_range *)(c->data + p);
	c->view.nranges = le32(b + H_NRANGES);
	p += c->view.nranges * sizeof(struct sym_cu_range);
	c->view.funcs = (const struct sym_func *)(c->data + p);
	c->view.nfuncs = le32(b + H_NFUNCS);
	p += c->view.nfuncs * sizeof(struct sym_func);
	c->view.strs = (const char *)(c->data + p);
	c->view.strs_len = le64(b + H_STRS_LEN);
	*out = c;
	return 0;
bad:
	if (why)
		*why = bad;
	return -EINVAL;
}

const struct sym_cache_view *sym_cache__view(const struct sym_cache *c)
{
	return &c->view;
}

bool sym_cache__check(struct sym_cache *c, const void *p, size_t len)
{
	const uint8_t *q = p;
	size_t off, first, last;

	if (c->bad || q < c->data || (size_t)(q - c->data) > c->data_len ||
	    len > c->data_len - (size_t)(q - c->data))
		return false;
	if (!len)
		return true;
	off = (size_t)(q - c->data);
	first = off / SYM_CACHE_BLOCK;
	last = (off + len - 1) / SYM_CACHE_BLOCK;
	for (size_t i = first; i <= last; i++) {
		if (c->verified[i / 64] & (1ull << (i % 64)))
			continue;
		size_t at = i * SYM_CACHE_BLOCK;
		size_t n = c->data_len - at < SYM_CACHE_BLOCK ? c->data_len - at
							      : SYM_CACHE_BLOCK;

		if (checksum64(c->data + at, n) != le64(c->sums + 8 * i)) {
			c->bad = true;
			return false;
		}
		c->verified[i / 64] |= 1ull << (i % 64);
	}
	return true;
}

bool sym_cache__check_all(struct sym_cache *c)
{
	return sym_cache__check(c, c->data, c->data_len);
}

const char *sym_cache__string(struct sym_cache *c, uint32_t off, uint32_t len)
{
	const char *s, *nul;

	if (off >= c->view.strs_len || len > c->view.strs_len - off)
		return NULL;
	s = c->view.strs + off;
	nul = memchr(s + len, 0, c->view.strs_len - off - len);
	if (!nul || !sym_cache__check(c, s, (size_t)(nul - s) + 1))
		return NULL;
	return s;
}

void sym_cache__free(struct sym_cache *c)
{
	if (!c)
		return;
	if (c->map)
		munmap(c->map, c->map_len);
	free(c->verified);
	free(c);
}

int sym_cache__path(const char *dir, const uint8_t *id, size_t n, char *buf,
		    size_t size)
{
	int k = snprintf(buf, size, "%s/symbols/", dir);

	if (!n || n > 40 || k < 0 || (size_t)k + 2 * n + sizeof(".sym") > size)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < n; i++)
		k += snprintf(buf + k, size - (size_t)k, "%02x", id[i]);
	strcpy(buf + k, ".sym");
	return 0;
}

/* Was the file at path, decoded, made from srcs? NULL, or why not. */
static const char *made_from(const uint8_t *b, const char *path,
			     const struct cache_source *srcs, size_t nsrcs,
			     const struct log_sink *log)
{
	if (le32(b + H_NSOURCES) != nsrcs)
		return "made from other files (stale)";
	for (size_t i = 0; i < nsrcs; i++) {
		switch (cache_bind__check(b + H_SOURCES + CACHE_BIND_SIZE * i,
					  &srcs[i])) {
		case CACHE_BIND_OTHER:
			return "made from another file with this build-id, "
			       "whose bytes differ";
		case CACHE_BIND_SAME_BYTES:
			log_info(log, "%s: symbol cache file made from another "
				 "copy of file %zu (same bytes): used", path, i);
			break;
		case CACHE_BIND_SAME_FILE:
			break;
		}
	}
	return NULL;
}

int sym_cache__load(const char *dir, const uint8_t *id, size_t id_len,
		    uint64_t source_key, const struct cache_source *srcs,
		    size_t nsrcs, const struct log_sink *log,
		    struct sym_cache **out)
{
	char path[4096];
	const char *why = NULL;
	size_t len;
	void *map;
	int err;

	*out = NULL;
	if (!nsrcs || nsrcs > SYM_CACHE_MAX_SOURCES)
		return -EINVAL;
	if ((err = sym_cache__path(dir, id, id_len, path, sizeof(path))) ||
	    (err = cache_file__map(path, "symbol cache", log, &map, &len)))
		return err;
	err = sym_cache__decode(map, len, id, id_len, source_key, out, &why);
	if (!err && (why = made_from(map, path, srcs, nsrcs, log))) {
		sym_cache__free(*out); /* not yet the mapping's owner */
		*out = NULL;
		err = -EINVAL;
	}
	if (err) {
		munmap(map, len);
		if (err == -EINVAL)
			log_info(log, "%s: symbol cache file not valid (%s); "
				 "ignored and rewritten", path, why);
		return err;
	}
	(*out)->map = map;
	(*out)->map_len = len;
	return 0;
}

int sym_cache__store(const char *dir, const uint8_t *id, size_t id_len,
		     const struct sym_cache_view *v,
		     const struct cache_source *srcs, size_t nsrcs,
		     const struct log_sink *log)
{
	char path[4096];
	uint8_t *b;
	size_t len;
	int err;

	if ((err = sym_cache__path(dir, id, id_len, path, sizeof(path))) ||
	    (err = sym_cache__encode(id, id_len, v, srcs, nsrcs, &b, &len)))
		return err;
	err = cache_file__write(path, b, len, log);
	free(b);
	return err;
}
