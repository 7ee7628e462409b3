/* cursor.h - bounds-checked reading of untrusted bytes: fixed-size
 * little-endian integers, LEB128, and counted lists of length-prefixed
 * records. A read past the end sets `bad` and yields 0; callers check
 * `bad` once after a group of reads. */
#ifndef SS_BASE_CURSOR_H
#define SS_BASE_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Invariant: start <= p <= end; once bad is set, every read returns 0 and
 * p no longer moves. */
struct cursor {
	const uint8_t *start; /* first byte of the range (for offsets) */
	const uint8_t *p;     /* next byte to read */
	const uint8_t *end;   /* one past the last readable byte */
	bool bad;	      /* a read went past end, or a LEB128 overflowed */
};

static inline void cursor_init(struct cursor *c, const void *data, size_t len)
{
	c->start = c->p = (const uint8_t *)data;
	c->end = c->p + len;
	c->bad = false;
}

static inline size_t cursor_left(const struct cursor *c)
{
	return (size_t)(c->end - c->p);
}

static inline size_t cursor_offset(const struct cursor *c)
{
	return (size_t)(c->p - c->start);
}

/* Returns a pointer to the next n bytes and skips them, or NULL (and sets
 * bad) when fewer remain. */
static inline const uint8_t *cursor_take(struct cursor *c, size_t n)
{
	const uint8_t *r = c->p;

	if (c->bad || n > cursor_left(c)) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return r;
}

static inline bool cursor_skip(struct cursor *c, size_t n)
{
	return cursor_take(c, n) != NULL;
}

#define CURSOR_FIXED(name, type)                                               \
	static inline type cursor_##name(struct cursor *c)                     \
	{                                                                      \
		type v = 0;                                                    \
		const uint8_t *q = cursor_take(c, sizeof(type));               \
		if (q)                                                         \
			memcpy(&v, q, sizeof(type));                           \
		return v;                                                      \
	}
CURSOR_FIXED(u8, uint8_t)
CURSOR_FIXED(u16, uint16_t)
CURSOR_FIXED(u32, uint32_t)
CURSOR_FIXED(u64, uint64_t)
CURSOR_FIXED(s8, int8_t)
CURSOR_FIXED(s16, int16_t)
CURSOR_FIXED(s32, int32_t)
CURSOR_FIXED(s64, int64_t)
#undef CURSOR_FIXED

uint64_t cursor_uleb_slow(struct cursor *c);

/* A ULEB128. One byte, the common case in CFA programs (register
 * numbers, offsets, advances), is read inline: a whole-table compile of
 * libclang-cpp read 4M of them through a call. */
static inline uint64_t cursor_uleb(struct cursor *c)
{
	if (!c->bad && c->p < c->end && !(*c->p & 0x80))
		return *c->p++;
	return cursor_uleb_slow(c);
}
int64_t cursor_sleb(struct cursor *c);
/* A NUL-terminated string inside the range, or NULL (and bad). */
const char *cursor_cstr(struct cursor *c);

/* Whether a list of n items, each taking at least item_min (> 0) bytes,
 * can follow in what c has left, n being at most max: the check that
 * comes before an array is sized from a count read from the bytes. */
static inline bool cursor_count_fits(const struct cursor *c, size_t n, size_t max,
				     size_t item_min)
{
	return !c->bad && n <= max && n <= cursor_left(c) / item_min;
}

/* The array for such a list: n zeroed elements of elem_size bytes (room
 * for one when n is 0, so that NULL means only failure), or NULL with
 * *err -EINVAL (the count does not fit, as cursor_count_fits says) or
 * -ENOMEM. */
void *cursor_list_alloc(const struct cursor *c, size_t n, size_t max, size_t item_min,
			size_t elem_size, int *err);

/* A record of a list: a u32 length, then that many bytes, which rec then
 * reads (by itself: a record's reads never reach past it). *at (at may
 * be NULL) is set to the offset in c of the record's bytes, or of where
 * it was found cut. Returns false when cut (c is then bad, rec empty). */
bool cursor_record(struct cursor *c, struct cursor *rec, size_t *at);

#endif
