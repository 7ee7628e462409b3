/* jit_range.c - paints JIT code ranges, newest on top, into disjoint
 * stretches (a sweep over the ranges' starts and ends with a heap of the
 * ranges open, newest first). */
#include "symbolize/jit_range.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/radix_sort.h"

struct entry_view {
	const unsigned char *b;
	size_t stride, seq_off;
};

static uint64_t ent_u64(const struct entry_view *v, size_t i, size_t off)
{
	uint64_t x;

	memcpy(&x, v->b + i * v->stride + off, sizeof(x));
	return x;
}

static uint32_t ent_seq(const struct entry_view *v, size_t i)
{
	uint32_t x;

	memcpy(&x, v->b + i * v->stride + v->seq_off, sizeof(x));
	return x;
}

/* A max-heap of entry indices by seq. */
static void heap_push(const struct entry_view *v, size_t *h, size_t *n,
		      size_t idx)
{
	size_t i = (*n)++;

	while (i) {
		size_t up = (i - 1) / 2;

		if (ent_seq(v, h[up]) >= ent_seq(v, idx))
			break;
		h[i] = h[up];
		i = up;
	}
	h[i] = idx;
}

static void heap_pop(const struct entry_view *v, size_t *h, size_t *n)
{
	size_t last = h[--*n], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && ent_seq(v, h[c + 1]) > ent_seq(v, h[c]))
			c++;
		if (ent_seq(v, h[c]) <= ent_seq(v, last))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
}

int jit_range__index(struct jit_range_index *ix, const void *entries,
		     size_t n, size_t stride, size_t seq_off)
{
	struct entry_view v = { entries, stride, seq_off };
	uint64_t *bounds = NULL;
	size_t *heap = NULL, nb = 0, nu = 0, nh = 0, next = 0, w = 0;
	struct jit_range_seg *segs = NULL;

	if (n) {
		bounds = malloc(2 * n * sizeof(*bounds));
		heap = malloc(n * sizeof(*heap));
		segs = malloc(2 * n * sizeof(*segs));
		if (!bounds || !heap || !segs)
			goto nomem;
	}
	for (size_t i = 0; i < n; i++) {
		bounds[nb++] = ent_u64(&v, i, 0);
		bounds[nb++] = ent_u64(&v, i, sizeof(uint64_t));
	}
	if (radix_sort_u64(bounds, nb, sizeof(*bounds), 0))
		goto nomem;
	for (size_t k = 0; k < nb; k++) /* each boundary once */
		if (!nu || bounds[nu - 1] != bounds[k])
			bounds[nu++] = bounds[k];
	nb = nu;
	for (size_t k = 0; k < nb; k++) {
		uint64_t at = bounds[k];

		while (next < n && ent_u64(&v, next, 0) <= at) {
			if (ent_u64(&v, next, 0) < ent_u64(&v, next, sizeof(uint64_t)))
				heap_push(&v, heap, &nh, next);
			next++;
		}
		while (nh && ent_u64(&v, heap[0], sizeof(uint64_t)) <= at)
			heap_pop(&v, heap, &nh);
		if (!nh || k + 1 >= nb)
			continue;
		/* [at, the next boundary) is the top's. */
		if (w && segs[w - 1].idx == heap[0] && segs[w - 1].end == at) {
			segs[w - 1].end = bounds[k + 1];
		} else {
			segs[w].start = at;
			segs[w].end = bounds[k + 1];
			segs[w].idx = heap[0];
			w++;
		}
	}
	free(bounds);
	free(heap);
	jit_range__index_free(ix);
	ix->segs = segs;
	ix->n = w;
	return 0;
nomem:
	free(bounds);
	free(heap);
	free(segs);
	return -ENOMEM;
}

ptrdiff_t jit_range__find(const struct jit_range_index *ix, uint64_t pc)
{
	size_t lo = 0, hi = ix->n;

	while (lo < hi) { /* the first stretch ending after pc */
		size_t mid = lo + (hi - lo) / 2;

		if (ix->segs[mid].end <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ix->n && ix->segs[lo].start <= pc)
		return (ptrdiff_t)ix->segs[lo].idx;
	return -1;
}

void jit_range__index_free(struct jit_range_index *ix)
{
	free(ix->segs);
	ix->segs = NULL;
	ix->n = 0;
}
