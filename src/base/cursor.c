/* cursor.c - LEB128, string and list reads for the bounds-checked cursor. */
#include "cursor.h"

#include <errno.h>
#include <stdlib.h>

uint64_t cursor_uleb_slow(struct cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		const uint8_t *b = cursor_take(c, 1);

		if (!b)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(*b & 0x7f) << shift;
		else if (*b & 0x7f)
			c->bad = true; /* does not fit in 64 bits */
		shift += 7;
		if (!(*b & 0x80))
			break;
	}
	return c->bad ? 0 : v;
}

int64_t cursor_sleb(struct cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t last = 0;

	for (;;) {
		const uint8_t *b = cursor_take(c, 1);

		if (!b)
			return 0;
		last = *b;
		if (shift < 64)
			v |= (uint64_t)(last & 0x7f) << shift;
		shift += 7;
		if (!(last & 0x80))
			break;
	}
	if (c->bad)
		return 0;
	if (shift < 64 && (last & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

const char *cursor_cstr(struct cursor *c)
{
	const uint8_t *nul;

	if (c->bad)
		return NULL;
	nul = memchr(c->p, 0, cursor_left(c));
	if (!nul) {
		c->bad = true;
		return NULL;
	}
	const char *s = (const char *)c->p;
	c->p = nul + 1;
	return s;
}

void *cursor_list_alloc(const struct cursor *c, size_t n, size_t max, size_t item_min,
			size_t elem_size, int *err)
{
	void *a;

	if (!cursor_count_fits(c, n, max, item_min)) {
		*err = -EINVAL;
		return NULL;
	}
	a = calloc(n ? n : 1, elem_size);
	if (!a)
		*err = -ENOMEM;
	return a;
}

bool cursor_record(struct cursor *c, struct cursor *rec, size_t *at)
{
	uint32_t len = cursor_u32(c);
	const uint8_t *p = cursor_take(c, len);

	if (at)
		*at = p ? (size_t)(p - c->start) : cursor_offset(c);
	cursor_init(rec, p ? p : c->p, p ? len : 0);
	return p != NULL;
}
