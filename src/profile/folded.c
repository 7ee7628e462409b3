/* folded.c - the folded-stack writer (outer;...;inner COUNT, the input of
 * flamegraph.pl), and the visit of the folded lines it is made of. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "profile/stacks.h"
#include "profile/writers.h"

struct folded_line {
	char *text;
	uint64_t count;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text,
		      ((const struct folded_line *)b)->text);
}

/* Calls fn with every distinct folded line, sorted by text; stacks that
 * differ only in what folded text does not show (the address, the module)
 * are one line, their counts summed. */
static int folded_lines(const struct stacksnap_stacks *st,
			int (*fn)(const char *folded, uint64_t count, void *user),
			void *user)
{
	struct folded_line *v = calloc(st->distinct ? st->distinct : 1, sizeof(*v));
	uint32_t *path = malloc(st->nnodes * sizeof(*path));
	size_t k = 0;
	int err = 0;

	if (!v || !path) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 1; i < st->nnodes && k < st->distinct; i++) {
		size_t depth = 0, len = 0;

		if (!st->nodes[i].self)
			continue;
		for (uint32_t n = (uint32_t)i; n; n = st->nodes[n].parent) {
			path[depth++] = n;
			len += strlen(st->frames[st->nodes[n].frame].disp) + 1;
		}
		char *s = malloc(len + 1), *p = s;

		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		while (depth-- > 0) {
			const char *d = st->frames[st->nodes[path[depth]].frame].disp;
			size_t dl = strlen(d);

			memcpy(p, d, dl);
			p += dl;
			*p++ = ';';
		}
		p[p > s ? -1 : 0] = 0;
		v[k].text = s;
		v[k++].count = st->nodes[i].self;
	}
	qsort(v, k, sizeof(*v), cmp_line);
	for (size_t i = 0; i < k && !err;) {
		uint64_t c = v[i].count;
		size_t j = i + 1;

		while (j < k && !strcmp(v[j].text, v[i].text))
			c += v[j++].count;
		err = fn(v[i].text, c, user);
		i = j;
	}
out:
	if (v)
		for (size_t i = 0; i < k; i++)
			free(v[i].text);
	free(v);
	free(path);
	return err;
}

static int print_line(const char *folded, uint64_t count, void *user)
{
	fprintf(user, "%s %" PRIu64 "\n", folded, count);
	return 0;
}

int folded_write(const struct stacksnap_stacks *st, FILE *f)
{
	return folded_lines(st, print_line, f);
}

int stacksnap_stacks__visit_folded(const struct stacksnap_stacks *st,
				   stacksnap_stacks_folded_fn fn, void *user)
{
	int err;

	if (!st || !fn)
		return fail(-EINVAL);
	err = folded_lines(st, fn, user);
	return err == -ENOMEM ? fail(err) : err;
}
