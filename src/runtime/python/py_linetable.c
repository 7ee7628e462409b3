/* py_linetable.c - the decoders of CPython's line tables: 3.11+'s
 * location table (co_linetable, PEP 626/657; Objects/locations.md), 3.10's
 * co_linetable and 3.7-3.9's co_lnotab (Objects/lnotab_notes.txt of each
 * version): instruction offset to line, as each PyCode_Addr2Line computes
 * it. */
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

/* 3.7-3.9 co_lnotab: (bytecode increment, signed line increment) byte
 * pairs from (0, co_firstlineno); the line of addrq is the one reached
 * before the address passes it. */
static int lnotab_line(const uint8_t *t, size_t len, int firstlineno,
		       int addrq, int *line)
{
	long l = firstlineno, addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > addrq)
			break;
		l += (int8_t)t[i + 1];
		if (l < -(1L << 30) || l > (1L << 30))
			return -EINVAL;
	}
	*line = (int)l;
	return 0;
}

/* 3.10 co_linetable: (bytecode length, signed line delta) byte pairs,
 * each a range [start, start + length) of the line so far plus delta, or
 * of no line when the delta is -128; empty ranges only move the line. */
static int linetable310_line(const uint8_t *t, size_t len, int firstlineno,
			     int addrq, int *line)
{
	long l = firstlineno, start, end = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t ld = (int8_t)t[i + 1];
		bool none = ld == -128;

		start = end;
		end = start + t[i];
		if (!none)
			l += ld;
		if (l < -(1L << 30) || l > (1L << 30))
			return -EINVAL;
		if (end > start && addrq >= start && addrq < end) {
			*line = none ? -1 : (int)l;
			return 0;
		}
	}
	*line = -1;
	return 0;
}

int py_linetable__line_of(enum py_lines kind, const uint8_t *table,
			  size_t len, int firstlineno, int addrq, int *line)
{
	if (addrq < 0) {
		*line = firstlineno;
		return 0;
	}
	switch (kind) {
	case PY_LINES_LNOTAB:
		return lnotab_line(table, len, firstlineno, addrq, line);
	case PY_LINES_310:
		return linetable310_line(table, len, firstlineno, addrq, line);
	case PY_LINES_LOCATIONS:
		break;
	}
	return py_linetable__line(table, len, firstlineno, addrq, line);
}
