/* go_labels.c - a goroutine's profiler labels (pprof.Do, pprof.SetGoroutineLabels:
 * g.labels points at a map[string]string), read from the stopped process
 * as the runtime's hash map lays them out (runtime/map.go of Go 1.12 to
 * 1.23: an hmap, its buckets of 8 cells and their overflow chains), every
 * read bounded: a corrupt map gives no labels, never a loop. */
#include "runtime/go/go_runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* hmap (runtime/map.go): count int; flags uint8; B uint8; noverflow
 * uint16; hash0 uint32; buckets, oldbuckets unsafe.Pointer; ... */
#define HMAP_COUNT 0
#define HMAP_FLAGS 8
#define HMAP_B 9
#define HMAP_BUCKETS 16
#define HMAP_OLDBUCKETS 24
#define HMAP_SAME_SIZE_GROW 8	/* flags: growing to a map of the same size */
/* A bucket of map[string]string: tophash [8]uint8, keys [8]string, elems
 * [8]string, overflow *bmap. */
#define BUCKET_CELLS 8
#define BUCKET_KEYS 8
#define BUCKET_ELEMS (BUCKET_KEYS + BUCKET_CELLS * 16)
#define BUCKET_OVERFLOW (BUCKET_ELEMS + BUCKET_CELLS * 16)
#define BUCKET_SIZE (BUCKET_OVERFLOW + 8)
#define MIN_TOPHASH 5	/* below: an empty or evacuated cell */
#define MAX_B 6		/* 64 buckets: far beyond GO_MAX_LABELS */
#define MAX_CHAIN 8	/* overflow buckets followed per bucket */

/* Whether the map layout above is the binary's: Go 1.24 made maps Swiss
 * tables. An unknown version (no build info: before Go 1.13) reads. */
static bool classic_maps(const struct go_runtime *rt)
{
	unsigned major, minor;

	if (!rt->version[0])
		return true;
	if (sscanf(rt->version, "go%u.%u", &major, &minor) != 2)
		return false;
	return major == 1 && minor >= 12 && minor <= 23;
}

/* A Go string {ptr, len} of at most GO_MAX_LABEL_LEN bytes, malloc'ed. */
static char *read_string(struct stacksnap_mem *mem, const uint8_t *hdr,
			 int *err)
{
	uint64_t ptr, len;
	char *s;

	memcpy(&ptr, hdr, 8);
	memcpy(&len, hdr + 8, 8);
	if (len > GO_MAX_LABEL_LEN || (len && !ptr)) {
		*err = -EINVAL;
		return NULL;
	}
	s = malloc(len + 1);
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	if (len && mem_read(mem, ptr, s, len) < 0) {
		free(s);
		*err = -EFAULT;
		return NULL;
	}
	s[len] = 0;
	return s;
}

/* Adds the live cells of the buckets [buckets, buckets + n * BUCKET_SIZE)
 * and their overflow chains to g's labels (at most want). */
static int read_buckets(struct stacksnap_mem *mem, uint64_t buckets, size_t n,
			struct goroutine *g, size_t want)
{
	uint8_t b[BUCKET_SIZE];
	int err = 0;

	for (size_t i = 0; i < n && g->nlabels < want; i++) {
		uint64_t at = buckets + i * BUCKET_SIZE;

		for (unsigned chain = 0; at && chain <= MAX_CHAIN &&
		     g->nlabels < want; chain++) {
			if (at & 7 || mem_read(mem, at, b, sizeof(b)) < 0)
				return -EFAULT;
			for (unsigned c = 0; c < BUCKET_CELLS &&
			     g->nlabels < want; c++) {
				char *k, *v;

				if (b[c] < MIN_TOPHASH)
					continue;
				k = read_string(mem, b + BUCKET_KEYS + 16 * c, &err);
				v = k ? read_string(mem, b + BUCKET_ELEMS + 16 * c,
						    &err) : NULL;
				if (!v) {
					free(k);
					return err;
				}
				g->labels[2 * g->nlabels] = k;
				g->labels[2 * g->nlabels + 1] = v;
				g->nlabels++;
			}
			memcpy(&at, b + BUCKET_OVERFLOW, 8);
		}
	}
	return 0;
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void go_goroutine__free_labels(struct goroutine *g)
{
	for (size_t i = 0; g->labels && i < 2 * g->nlabels; i++)
		free(g->labels[i]);
	free(g->labels);
	g->labels = NULL;
	g->nlabels = 0;
}

int go_goroutine__read_labels(const struct go_runtime *rt,
			      struct stacksnap_mem *mem, struct goroutine *g)
{
	uint8_t h[HMAP_OLDBUCKETS + 8];
	uint64_t map, count, buckets, old;
	size_t want;
	unsigned B;
	int err;

	if (!g->labels_ptr || !classic_maps(rt))
		return 0;
	/* g.labels is a *labelMap; a labelMap is a map, a pointer to its
	 * hmap (nil: no labels). */
	if (mem_read(mem, g->labels_ptr, &map, 8) < 0)
		return -EFAULT;
	if (!map)
		return 0;
	if (map & 7 || mem_read(mem, map, h, sizeof(h)) < 0)
		return -EFAULT;
	memcpy(&count, h + HMAP_COUNT, 8);
	memcpy(&buckets, h + HMAP_BUCKETS, 8);
	memcpy(&old, h + HMAP_OLDBUCKETS, 8);
	B = h[HMAP_B];
	if (!count)
		return 0;
	if (B > MAX_B || !buckets || count > ((uint64_t)BUCKET_CELLS << B) * (MAX_CHAIN + 1))
		return -EINVAL;
	want = count < GO_MAX_LABELS ? (size_t)count : GO_MAX_LABELS;
	g->labels = calloc(2 * want, sizeof(*g->labels));
	if (!g->labels)
		return -ENOMEM;
	/* While the map grows, a key lives in the old buckets until they
	 * are evacuated (their cells then marked below MIN_TOPHASH), else
	 * in the new ones: the live cells of both are the map. */
	err = read_buckets(mem, buckets, (size_t)1 << B, g, want);
	if (!err && old)
		err = read_buckets(mem, old, (h[HMAP_FLAGS] & HMAP_SAME_SIZE_GROW)
				   ? (size_t)1 << B : B ? (size_t)1 << (B - 1) : 1,
				   g, want);
	if (err) {
		go_goroutine__free_labels(g);
		return err;
	}
	/* Sorted by key, as runtime/pprof prints them. */
	qsort(g->labels, g->nlabels, 2 * sizeof(*g->labels), cmp_label);
	return 0;
}
