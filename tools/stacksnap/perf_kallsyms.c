/* perf_kallsyms.c - kernel symbols for the kernel frames of perf samples,
 * from /proc/kallsyms of the machine running the command (what perf
 * script uses too when the recording has no kallsyms copy). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
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

struct kallsyms *kallsyms_load(void)
{
	struct kallsyms *ks = calloc(1, sizeof(*ks));
	FILE *f = fopen("/proc/kallsyms", "re");
	size_t len = 0, cap = 0, ncap = 0;
	char line[512];

	if (!ks || !f)
		goto out;
	/* Names are kept in one buffer; record offsets first, pointers after
	 * it stops moving. */
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		size_t l = strlen(name) + 1;
		if (len + l > cap) {
			char *t = realloc(ks->text, cap = (cap + l) * 2);
			if (!t)
				goto out;
			ks->text = t;
		}
		if (ks->n == ncap) {
			struct ksym *s = realloc(ks->syms, (ncap = ncap ? ncap * 2 : 4096) *
							     sizeof(*s));
			if (!s)
				goto out;
			ks->syms = s;
		}
		memcpy(ks->text + len, name, l);
		ks->syms[ks->n].addr = addr;
		ks->syms[ks->n++].name = (const char *)(uintptr_t)len;
		len += l;
	}
	for (size_t i = 0; i < ks->n; i++)
		ks->syms[i].name = ks->text + (uintptr_t)ks->syms[i].name;
	qsort(ks->syms, ks->n, sizeof(*ks->syms), cmp_ksym);
out:
	if (f)
		fclose(f);
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
