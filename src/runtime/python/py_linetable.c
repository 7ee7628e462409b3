/* py_linetable.c - the decoder of CPython 3.11+'s location table
 * (co_linetable, PEP 626/657; Objects/locations.md): instruction offset to
 * line, as PyCode_Addr2Line computes it. */
#include "runtime/python/python.h"

#include <errno.h>

/* Entry codes: the high bit starts an entry; bits 3-6 are the code, bits
 * 0-2 the length in code units minus one. */
enum {
	LOC_SHORT_MAX = 9,	/* 0-9: short form, same line */
	LOC_ONE_LINE0 = 10,	/* 10-12: one-line form, line delta 0-2 */
	LOC_ONE_LINE2 = 12,
	LOC_NO_COLUMNS = 13,	/* signed varint line delta */
	LOC_LONG = 14,		/* signed varint line delta, then 3 varints */
	LOC_NONE = 15,		/* no location */
};

/* An unsigned varint (6 bits a byte, 0x40 continues) at t[*pos], within
 * len. Returns -EINVAL when it runs off the end or past 32 bits. */
static int varint(const uint8_t *t, size_t len, size_t *pos, unsigned *out)
{
	unsigned val, shift = 0, b;

	if (*pos >= len)
		return -EINVAL;
	b = t[(*pos)++];
	val = b & 63;
	while (b & 64) {
		shift += 6;
		if (shift > 30 || *pos >= len)
			return -EINVAL;
		b = t[(*pos)++];
		val |= (b & 63u) << shift;
	}
	*out = val;
	return 0;
}

static int signed_varint(const uint8_t *t, size_t len, size_t *pos, int *out)
{
	unsigned u;
	int err = varint(t, len, pos, &u);

	if (err)
		return err;
	*out = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
	return 0;
}

int py_linetable__line(const uint8_t *table, size_t len, int firstlineno,
		       int addrq, int *line)
{
	long computed = firstlineno;
	long start = 0;
	size_t pos = 0;

	if (addrq < 0) {
		*line = firstlineno;
		return 0;
	}
	while (pos < len) {
		uint8_t b = table[pos];
		unsigned code = (b >> 3) & 15;
		long end = start + ((b & 7) + 1) * 2;
		int delta = 0;
		size_t p = pos + 1;

		if (!(b & 0x80))
			return -EINVAL;
		if (code == LOC_NO_COLUMNS || code == LOC_LONG) {
			if (signed_varint(table, len, &p, &delta))
				return -EINVAL;
		} else if (code >= LOC_ONE_LINE0 && code <= LOC_ONE_LINE2) {
			delta = (int)(code - LOC_ONE_LINE0);
		}
		computed += delta;
		if (computed < -(1L << 30) || computed > (1L << 30))
			return -EINVAL;
		if (addrq < end) {
			*line = code == LOC_NONE ? -1 : (int)computed;
			return 0;
		}
		start = end;
		/* The next entry starts at the next byte with the high bit
		   (the payload bytes of every form keep it clear). */
		pos++;
		while (pos < len && !(table[pos] & 0x80))
			pos++;
	}
	*line = -1;	/* past the table: CPython says -1 too */
	return 0;
}
