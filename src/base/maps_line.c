/* maps_line.c - parsing one /proc/PID/maps line, strictly: hex numbers
 * without signs or blanks inside, four permission characters, a device and
 * an inode; anything else is refused rather than guessed. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#include "base/maps_line.h"

/* Reads an unsigned number in base 16 or 10 at *p, at most 16 (hex) or 20
 * (decimal) digits, and moves *p past it. False when there is none.
 * Inlined: each call's constant base turns the overflow test's division
 * into a multiplication (a division a digit was most of the parse). */
static inline __attribute__((always_inline)) bool
number(const char **p, unsigned base, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	unsigned n = 0;

	for (;; s++, n++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			return false; /* overflows 64 bits */
		v = v * base + d;
	}
	if (!n)
		return false;
	*p = s;
	*out = v;
	return true;
}

static bool expect(const char **p, char c)
{
	if (**p != c)
		return false;
	(*p)++;
	return true;
}

static bool blanks(const char **p)
{
	const char *s = *p;

	while (*s == ' ' || *s == '\t')
		s++;
	if (s == *p)
		return false;
	*p = s;
	return true;
}

int maps_line__parse(char *line, struct maps_line *out)
{
	const char *p = line;
	uint64_t major, minor;
	char *path;

	memset(out, 0, sizeof(*out));
	line[strcspn(line, "\n")] = '\0';
	if (!number(&p, 16, &out->start) || !expect(&p, '-') ||
	    !number(&p, 16, &out->end) || out->end <= out->start || !blanks(&p))
		return -EINVAL;
	/* perms: r/-, w/-, x/-, then p or s */
	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
		return -EINVAL;
	out->prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
		    (p[2] == 'x' ? PROT_EXEC : 0);
	p += 4;
	if (!blanks(&p) || !number(&p, 16, &out->offset) || !blanks(&p) ||
	    !number(&p, 16, &major) || !expect(&p, ':') || !number(&p, 16, &minor) ||
	    major > 0xfff || minor > 0xfffff || !blanks(&p) ||
	    !number(&p, 10, &out->inode))
		return -EINVAL;
	out->dev_major = (unsigned)major;
	out->dev_minor = (unsigned)minor;
	if (*p && *p != ' ' && *p != '\t')
		return -EINVAL;
	while (*p == ' ' || *p == '\t')
		p++;
	path = line + (p - line);
	out->path = *path ? path : NULL;
	return 0;
}
