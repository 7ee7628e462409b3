/* perf_folded.c - counting folded stacks for `perf-script --folded`: a hash
 * table of distinct stack strings with their sample counts. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_script.h"

/* Invariant: cap is a power of two and n < cap / 2; an empty slot has
 * key == NULL. */
struct folded {
	struct fentry { char *key; size_t len; uint64_t count; uint64_t hash; } *slots;
	size_t n, cap;
};

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

struct folded *folded_new(void)
{
	struct folded *f = calloc(1, sizeof(*f));

	if (f && !(f->slots = calloc(f->cap = 1024, sizeof(*f->slots)))) {
		free(f);
		f = NULL;
	}
	return f;
}

static struct fentry *slot_for(struct fentry *slots, size_t cap, uint64_t h,
			       const char *key, size_t len)
{
	for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!slots[i].key || (slots[i].hash == h && slots[i].len == len &&
				      !memcmp(slots[i].key, key, len)))
			return &slots[i];
}

int folded_add(struct folded *f, const char *key, size_t len, uint64_t count)
{
	uint64_t h = hash_bytes(key, len);
	struct fentry *e = slot_for(f->slots, f->cap, h, key, len);

	if (e->key) {
		e->count += count;
		return 0;
	}
	if (f->n + 1 >= f->cap / 2) {
		size_t ncap = f->cap * 2;
		struct fentry *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		for (size_t i = 0; i < f->cap; i++)
			if (f->slots[i].key)
				*slot_for(ns, ncap, f->slots[i].hash, f->slots[i].key,
					  f->slots[i].len) = f->slots[i];
		free(f->slots);
		f->slots = ns;
		f->cap = ncap;
		e = slot_for(f->slots, f->cap, h, key, len);
	}
	e->key = malloc(len + 1);
	if (!e->key)
		return -ENOMEM;
	memcpy(e->key, key, len);
	e->key[len] = 0;
	e->len = len;
	e->hash = h;
	e->count = count;
	f->n++;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct fentry *x = *(struct fentry *const *)a;
	const struct fentry *y = *(struct fentry *const *)b;

	return strcmp(x->key, y->key);
}

/* The entries of f sorted by cmp, in a new array of f->n pointers (free
 * it); NULL when out of memory. */
static struct fentry **sorted(struct folded *f, int (*cmp)(const void *, const void *))
{
	struct fentry **v = malloc((f->n ? f->n : 1) * sizeof(*v));
	size_t k = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < f->cap; i++)
		if (f->slots[i].key)
			v[k++] = &f->slots[i];
	qsort(v, k, sizeof(*v), cmp);
	return v;
}

int folded_print(struct folded *f, FILE *out)
{
	struct fentry **v = sorted(f, cmp_entry);

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++)
		fprintf(out, "%s %llu\n", v[i]->key, (unsigned long long)v[i]->count);
	free(v);
	return 0;
}

static int cmp_count(const void *a, const void *b)
{
	const struct fentry *x = *(struct fentry *const *)a;
	const struct fentry *y = *(struct fentry *const *)b;

	return x->count != y->count ? (x->count < y->count) - (x->count > y->count)
				    : strcmp(x->key, y->key);
}

int folded_print_counts(struct folded *f, FILE *out)
{
	struct fentry **v = sorted(f, cmp_count);

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++) {
		const char *key = v[i]->key, *first = strchr(key, ';');
		const char *end = key + v[i]->len;

		fprintf(out, "%10llu  %.*s\n", (unsigned long long)v[i]->count,
			(int)(first ? first - key : end - key), key);
		while (first && end > first) {
			const char *p = end;

			while (p > first && p[-1] != ';')
				p--;
			fprintf(out, "            %.*s\n", (int)(end - p), p);
			end = p - 1;
		}
		fputc('\n', out);
	}
	free(v);
	return 0;
}

void folded_free(struct folded *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->cap; i++)
		free(f->slots[i].key);
	free(f->slots);
	free(f);
}

/* Appends one frame name to the folded key, as stackcollapse-perf.pl
 * tidies it: no parameter list, ';' made ':', unknown functions named
 * after their module. */
int folded_key_add(char **key, size_t *keycap, size_t *len, const char *name,
		   const char *dso, bool kernel)
{
	char tmp[64];
	size_t n;

	if (!name) {
		const char *b = dso ? strrchr(dso, '/') : NULL;

		if (dso) {
			snprintf(tmp, sizeof(tmp), "[%s]", b ? b + 1 : dso);
			name = tmp;
		} else {
			name = "[unknown]";
		}
	}
	n = strlen(name);
	/* stackcollapse-perf.pl's rule: cut at the first '(' that does not
	 * open "(anonymous namespace)" (Java lambdas' ".(...)." aside). */
	if (!strstr(name, ".(")) {
		for (const char *q = strchr(name, '('); q; q = strchr(q + 1, '('))
			if (strncmp(q + 1, "anonymous namespace)", 20)) {
				n = (size_t)(q - name);
				break;
			}
	}
	if (*len + n + 8 > *keycap) {
		size_t cap = (*keycap + n + 8) * 2;
		char *k = realloc(*key, cap);

		if (!k)
			return -ENOMEM;
		*key = k;
		*keycap = cap;
	}
	if (*len)
		(*key)[(*len)++] = ';';
	for (size_t i = 0; i < n; i++)
		(*key)[(*len)++] = name[i] == ';' ? ':' : name[i];
	if (kernel) {
		memcpy(*key + *len, "_[k]", 4);
		*len += 4;
	}
	return 0;
}


int folded_visit(struct folded *f,
		 int (*fn)(void *user, const char *key, uint64_t count), void *user)
{
	for (size_t i = 0; i < f->cap; i++)
		if (f->slots[i].key) {
			int err = fn(user, f->slots[i].key, f->slots[i].count);

			if (err)
				return err;
		}
	return 0;
}
