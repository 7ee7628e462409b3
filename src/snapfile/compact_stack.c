/* compact_stack.c - the kept-word bitmap policies and the run-length stream
 * of compact stacks (see compact_stack.h). */
#include "snapfile/compact_stack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "addrspace/addrspace.h"
#include "base/vec.h"

void byte_buf__put(struct byte_buf *b, const void *bytes, size_t len)
{
	if (b->failed || !len)
		return;
	if (vec_reserve((void **)&b->p, &b->cap, b->n + len, 1)) {
		b->failed = true;
		return;
	}
	memcpy(b->p + b->n, bytes, len);
	b->n += len;
}

/* Little-endian whatever the host: the format is explicit. */
static void put_le(struct byte_buf *b, uint64_t v, size_t n)
{
	uint8_t t[8];

	for (size_t i = 0; i < n; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	byte_buf__put(b, t, n);
}

void byte_buf__u8(struct byte_buf *b, uint8_t v) { put_le(b, v, 1); }
void byte_buf__u16(struct byte_buf *b, uint16_t v) { put_le(b, v, 2); }
void byte_buf__u32(struct byte_buf *b, uint32_t v) { put_le(b, v, 4); }
void byte_buf__u64(struct byte_buf *b, uint64_t v) { put_le(b, v, 8); }

void byte_buf__uleb(struct byte_buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;

	do {
		t[n] = v & 0x7f;
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	byte_buf__put(b, t, n);
}

static void patch_le(struct byte_buf *b, size_t off, uint64_t v, size_t n)
{
	if (b->failed || off + n > b->n)
		return;
	for (size_t i = 0; i < n; i++)
		b->p[off + i] = (uint8_t)(v >> (8 * i));
}

void byte_buf__patch_u32(struct byte_buf *b, size_t off, uint32_t v)
{
	patch_le(b, off, v, 4);
}

void byte_buf__patch_u64(struct byte_buf *b, size_t off, uint64_t v)
{
	patch_le(b, off, v, 8);
}

void byte_buf__free(struct byte_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

bool compact_stack__is_pointer(struct stacksnap_addrspace *as, uint64_t v,
			       uint64_t stack_lo, uint64_t stack_hi)
{
	const struct as_map *m;

	if (v >= stack_lo && v < stack_hi)
		return true;
	/* Small integers are never code; spares the lookup for most words. */
	if (v < 0x10000)
		return false;
	m = as ? addrspace__find(as, v) : NULL;
	return m && (m->prot & PROT_EXEC);
}

void compact_stack__mark_pointers(struct stacksnap_addrspace *as,
				  const uint8_t *stack, size_t len,
				  uint64_t base, uint64_t *keep)
{
	size_t nw = compact_stack__words(len);

	for (size_t i = 0; i < nw; i++) {
		uint64_t v;

		memcpy(&v, stack + 8 * i, 8);
		if (compact_stack__is_pointer(as, v, base, base + len))
			compact_stack__keep(keep, i);
	}
}

void compact_stack__mark_range(uint64_t *keep, uint64_t base, size_t len,
			       uint64_t addr, size_t n)
{
	size_t nw = compact_stack__words(len);
	uint64_t lo, hi;

	if (!n || addr + n <= base || addr >= base + len)
		return;
	lo = addr < base ? 0 : (addr - base) / 8;
	hi = (addr + n - base + 7) / 8;
	for (uint64_t w = lo; w < hi && w < nw; w++)
		compact_stack__keep(keep, (size_t)w);
}

/* Word coding of the compact encodings: a ULEB128 of (zigzag(delta) << 2 |
 * tag), delta taken from the word's own address (tag 0: pointers into the
 * stack are close to where they are stored) or from the previous kept
 * word (tag 1: return addresses into one module are close to each
 * other), whichever is shorter; tag 2: the 8 bytes follow as they are
 * (deltas too large for the shift). */
#define WORD_SELF 0
#define WORD_PREV 1
#define WORD_RAW 2
#define ZZ_MAX (1ull << 62)

static uint64_t zigzag(uint64_t d)
{
	return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static uint64_t unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

static void put_word(struct byte_buf *out, uint64_t v, uint64_t addr, uint64_t *prev)
{
	uint64_t zs = zigzag(v - addr), zp = zigzag(v - *prev);

	if (zs < ZZ_MAX && zs <= zp)
		byte_buf__uleb(out, zs << 2 | WORD_SELF);
	else if (zp < ZZ_MAX)
		byte_buf__uleb(out, zp << 2 | WORD_PREV);
	else {
		byte_buf__uleb(out, WORD_RAW);
		byte_buf__u64(out, v);
	}
	*prev = v;
}

void compact_stack__encode(const uint8_t *stack, size_t len, uint64_t base,
			   const uint64_t *keep, bool delta, struct byte_buf *out)
{
	size_t nw = compact_stack__words(len), i = 0;
	uint64_t prev = 0;

	while (i < nw) {
		size_t skip = 0, run = 0;

		while (i + skip < nw && keep && !compact_stack__kept(keep, i + skip))
			skip++;
		while (i + skip + run < nw &&
		       (!keep || compact_stack__kept(keep, i + skip + run)))
			run++;
		byte_buf__uleb(out, skip);
		byte_buf__uleb(out, run);
		i += skip;
		if (!delta) {
			/* As the target had them: x86_64 is little-endian, so
			 * the copy's bytes are already the format's. */
			byte_buf__put(out, stack + 8 * i, 8 * run);
			i += run;
			continue;
		}
		for (size_t k = 0; k < run; k++, i++) {
			uint64_t v;

			memcpy(&v, stack + 8 * i, 8);
			put_word(out, v, base + 8 * i, &prev);
		}
	}
}

int compact_stack__decode(struct cursor *c, uint8_t *out, size_t len,
			  uint64_t base, bool delta, size_t *bad_off)
{
	size_t nw = compact_stack__words(len), i = 0;
	uint64_t prev = 0;

	while (i < nw) {
		size_t at = cursor_offset(c);
		uint64_t skip = cursor_uleb(c), run = cursor_uleb(c);

		if (c->bad || skip > nw - i || run > nw - i - skip ||
		    (skip == 0 && run == 0)) {
			*bad_off = at;
			return -EINVAL;
		}
		i += (size_t)skip;
		if (!delta) {
			const uint8_t *words = cursor_take(c, (size_t)run * 8);

			if (!words) {
				*bad_off = at;
				return -EINVAL;
			}
			memcpy(out + 8 * i, words, (size_t)run * 8);
			i += (size_t)run;
			continue;
		}
		for (uint64_t k = 0; k < run; k++, i++) {
			uint64_t t, v;

			at = cursor_offset(c);
			t = cursor_uleb(c);
			switch (t & 3) {
			case WORD_SELF: v = base + 8 * i + unzigzag(t >> 2); break;
			case WORD_PREV: v = prev + unzigzag(t >> 2); break;
			case WORD_RAW: v = t >> 2 ? 0 : cursor_u64(c); break;
			default: v = 0; c->bad = true; break;
			}
			if (c->bad || ((t & 3) == WORD_RAW && t >> 2)) {
				*bad_off = at;
				return -EINVAL;
			}
			memcpy(out + 8 * i, &v, 8);
			prev = v;
		}
	}
	if (cursor_left(c)) {
		*bad_off = cursor_offset(c);
		return -EINVAL;
	}
	return 0;
}
