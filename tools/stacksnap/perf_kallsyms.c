/* perf_kallsyms.c - kernel symbols for the kernel frames of perf samples,
 * from /proc/kallsyms of the machine running the command (what perf
 * script uses too when the recording has no kallsyms copy). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "perf_script.h"

/* Invariant: syms sorted by addr; names point into text. */
struct kallsyms {
	struct ksym { uint64_t addr; const char *name; } *syms;
	size_t n;
	char *text;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Reads all of path (a /proc file: its size is not known in advance). */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 1 << 20, n = 0;
	char *buf = NULL;
	ssize_t r;

	if (fd < 0)
		return NULL;
	for (;;) {
		if (!buf || n + 65536 > cap) {
			char *b = realloc(buf, cap *= 2);

			if (!b)
				break;
			buf = b;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf)
		buf[n] = 0;
	*len = n;
	return buf;
}

/* Lines are "ADDR TYPE NAME[\t[module]]": parsed in place (sscanf would
 * cost more than the rest of a perf-script run). Only text symbols. */
struct kallsyms *kallsyms_load(void)
{
	struct kallsyms *ks = calloc(1, sizeof(*ks));
	size_t len = 0, ncap = 0;
	bool sorted = true;

	if (!ks || !(ks->text = slurp("/proc/kallsyms", &len)))
		return ks;
	for (char *p = ks->text, *end = ks->text + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		uint64_t addr = 0;
		char *q = p;

		if (!nl)
			nl = end;
		*nl = 0;
		for (; *q && *q != ' '; q++)
			addr = addr << 4 | (uint64_t)(*q <= '9' ? *q - '0' : (*q | 32) - 'a' + 10);
		if (q[0] == ' ' && q[1] && q[2] == ' ' && addr &&
		    strchr("tTwW", q[1])) {
			char *name = q + 3, *tab = strchr(name, '\t');

			if (tab)
				*tab = 0;
			if (ks->n == ncap) {
				struct ksym *ns = realloc(ks->syms, (ncap = ncap ? ncap * 2 : 65536) *
								      sizeof(*ns));
				if (!ns)
					break;
				ks->syms = ns;
			}
			if (ks->n && ks->syms[ks->n - 1].addr > addr)
				sorted = false;
			ks->syms[ks->n].addr = addr;
			ks->syms[ks->n++].name = name;
		}
		p = nl + 1;
	}
	if (!sorted)
		qsort(ks->syms, ks->n, sizeof(*ks->syms), cmp_ksym);
	return ks;
}

const char *kallsyms_lookup(struct kallsyms *ks, uint64_t addr, uint64_t *off)
{
	size_t lo = 0, hi = ks ? ks->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	*off = addr - ks->syms[lo - 1].addr;
	return ks->syms[lo - 1].name;
}

void kallsyms_free(struct kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->text);
	free(ks);
}
