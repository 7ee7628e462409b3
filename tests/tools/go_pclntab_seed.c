/* go_pclntab_seed.c - writes a small, valid Go 1.18-format pclntab made
 * of a run of functions of a real Go binary (their names, files, pc-value
 * tables and inline trees, re-laid out), as a seed of fuzz_gopclntab: the
 * inline trees are appended after the table and funcdata offsets made
 * relative to the table's start, where the fuzz target puts go:func.*.
 * Usage: go_pclntab_seed BINARY FIRST_FUNCTION COUNT OUT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_image.h"
#include "symbolize/gopclntab.h"

struct out {
	uint8_t *b;
	size_t n, cap;
};

static size_t put(struct out *o, const void *p, size_t len)
{
	size_t at = o->n;

	if (o->n + len > o->cap) {
		o->cap = (o->n + len) * 2;
		o->b = realloc(o->b, o->cap);
	}
	memcpy(o->b + o->n, p, len);
	o->n += len;
	return at;
}

static size_t put32(struct out *o, uint32_t v) { return put(o, &v, 4); }

/* Bytes of the pc-value table at p (through its terminating 0). */
static size_t table_len(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *s = p;
	int first = 1;

	while (p < end) {
		if (*p == 0 && !first)
			return (size_t)(p - s) + 1;
		first = 0;
		for (int k = 0; k < 2; k++) {
			while (p < end && (*p & 0x80))
				p++;
			p++;
		}
	}
	return (size_t)(end - s);
}

int main(int argc, char **argv)
{
	struct elf_image *img;
	struct gopclntab t;
	struct go_func fs[64];
	struct out names = { 0 }, cutab = { 0 }, files = { 0 }, pct = { 0 },
		   funcs = { 0 }, inl = { 0 }, all = { 0 };
	uint32_t cuoff[64], pcsp[64], pcfile[64], pcln[64], pcdata[64][8],
		nameoff[64], inloff[64];
	size_t first = SIZE_MAX, count;
	FILE *f;

	if (argc != 5 || elf_image__open(argv[1], NULL, &img) != 0 ||
	    gopclntab__open_elf(&t, img, NULL) != 0 ||
	    t.version != GOPCLN_118) {
		fprintf(stderr, "usage: go_pclntab_seed GO1.18+BINARY FUNC N OUT\n");
		return 2;
	}
	count = (size_t)atoi(argv[3]);
	if (count == 0 || count > 64)
		return 2;
	for (uint64_t i = 0; i < t.nfunc; i++) {
		struct go_func g;
		const char *n;

		if (gopclntab__func_at(&t, i, &g) == 0 &&
		    (n = gopclntab__func_name(&t, &g)) && !strcmp(n, argv[2]))
			first = i;
	}
	if (first == SIZE_MAX || first + count > t.nfunc)
		return 1;
	put(&pct, "", 1);
	for (size_t k = 0; k < count; k++) {
		struct go_func *g = &fs[k];
		const uint8_t *end = t.data + t.size;
		struct go_pcvalue_iter it;
		int32_t maxfile = -1, maxix = -1;
		uint32_t tabs[3], *outs[3] = { &pcsp[k], &pcfile[k], &pcln[k] };
		uint32_t inltab = 0;

		gopclntab__func_at(&t, first + k, g);
		nameoff[k] = (uint32_t)put(&names, gopclntab__func_name(&t, g),
					   strlen(gopclntab__func_name(&t, g)) + 1);
		tabs[0] = g->pcsp, tabs[1] = g->pcfile, tabs[2] = g->pcln;
		for (int j = 0; j < 3; j++) {
			const uint8_t *p = t.data + t.pctab_off + tabs[j];

			*outs[j] = tabs[j] ? (uint32_t)put(&pct, p, table_len(p, end)) : 0;
		}
		for (uint32_t j = 0; j < g->npcdata && j < 8; j++) {
			uint32_t tab = gopclntab__pcdata_table(&t, g, j);
			const uint8_t *p = t.data + t.pctab_off + tab;

			pcdata[k][j] = tab ? (uint32_t)put(&pct, p, table_len(p, end)) : 0;
			if (j == GO_PCDATA_INLTREE_INDEX)
				inltab = tab;
		}
		/* Its files: a CU of its own in the new cutab. */
		gopcln_iter__init(&it, &t, g, g->pcfile);
		while (go_pcvalue_iter__next(&it))
			if (it.value > maxfile)
				maxfile = it.value;
		cuoff[k] = (uint32_t)(cutab.n / 4);
		for (int32_t j = 0; j <= maxfile; j++) {
			const char *fn = gopclntab__file_name(&t, g, j);

			put32(&cutab, fn ? (uint32_t)put(&files, fn, strlen(fn) + 1)
					 : UINT32_MAX);
		}
		/* Its inline tree, names re-pointed. */
		inloff[k] = UINT32_MAX;
		if (inltab && g->nfuncdata > GO_FUNCDATA_INLTREE) {
			uint32_t fd;
			const uint8_t *tree;

			memcpy(&fd, t.data + g->off + t.func_fixed +
			       4 * g->npcdata + 4 * GO_FUNCDATA_INLTREE, 4);
			gopcln_iter__init(&it, &t, g, inltab);
			while (go_pcvalue_iter__next(&it))
				if (it.value > maxix)
					maxix = it.value;
			tree = fd != UINT32_MAX ?
				gopclntab__bytes_at(&t, t.gofunc + fd,
						    20 * (uint64_t)(maxix + 1)) : NULL;
			if (tree && maxix >= 0) {
				inloff[k] = (uint32_t)inl.n;
				for (int32_t e = 0; e <= maxix; e++) {
					uint8_t ent[20];
					int32_t no;
					const char *n;

					memcpy(ent, tree + 20 * e, 20);
					memcpy(&no, ent + 12, 4);
					n = gopclntab__name_at(&t, no);
					no = (int32_t)put(&names, n ? n : "?",
							  n ? strlen(n) + 1 : 2);
					memcpy(ent + 12, &no, 4);
					put(&inl, ent, 20);
				}
			}
		}
	}
	{
		uint64_t hdr[9] = { 0 };
		size_t nt, ct, ft, pt, fnt, tree_base;
		uint32_t magic = GOPCLN_MAGIC_118;
		uint8_t h8[8] = { 0, 0, 0, 0, 0, 0, 1, 8 };

		memcpy(h8, &magic, 4);
		put(&all, h8, 8);
		put(&all, hdr, 8 * 8);
		nt = put(&all, names.b, names.n);
		while (all.n % 4)
			put(&all, "", 1);
		ct = put(&all, cutab.b, cutab.n);
		ft = put(&all, files.b, files.n);
		pt = put(&all, pct.b, pct.n);
		while (all.n % 8)
			put(&all, "", 1);
		fnt = all.n;
		/* functab, then the _func records after it. */
		{
			size_t rec = 8 * (count + 1) - 4 + 4;
			size_t fixed = t.func_fixed;

			for (size_t k = 0; k < count; k++) {
				put32(&funcs, (uint32_t)(fs[k].entry - t.text_start));
				put32(&funcs, 0);
			}
			put32(&funcs, (uint32_t)(fs[count - 1].end - t.text_start));
			put32(&funcs, 0);
			(void)rec;
			for (size_t k = 0; k < count; k++) {
				struct go_func *g = &fs[k];
				uint8_t r[256];
				size_t len = fixed + 4 * g->npcdata +
					     4 * g->nfuncdata;
				uint32_t at = (uint32_t)funcs.n;

				if (len > sizeof(r) || g->npcdata > 8)
					return 1;
				memcpy(r, t.data + g->off, len);
				memcpy(r + 4, &nameoff[k], 4);
				memcpy(r + 16, &pcsp[k], 4);
				memcpy(r + 20, &pcfile[k], 4);
				memcpy(r + 24, &pcln[k], 4);
				memcpy(r + 32, &cuoff[k], 4);
				for (uint32_t j = 0; j < g->npcdata; j++)
					memcpy(r + fixed + 4 * j, &pcdata[k][j], 4);
				for (uint32_t j = 0; j < g->nfuncdata; j++) {
					uint32_t v = UINT32_MAX;

					memcpy(r + fixed + 4 * g->npcdata + 4 * j,
					       &v, 4);
				}
				memcpy(funcs.b + 8 * k + 4, &at, 4);
				put(&funcs, r, len);
				while (funcs.n % 4)
					put(&funcs, "", 1);
			}
		}
		put(&all, funcs.b, funcs.n);
		while (all.n % 4)
			put(&all, "", 1);
		tree_base = put(&all, inl.b, inl.n ? inl.n : 0);
		/* Funcdata: the trees, relative to the table's start. */
		for (size_t k = 0; k < count; k++) {
			uint32_t at, v;

			if (inloff[k] == UINT32_MAX)
				continue;
			memcpy(&at, all.b + fnt + 8 * k + 4, 4);
			v = (uint32_t)(tree_base + inloff[k]);
			memcpy(all.b + fnt + at + t.func_fixed +
			       4 * fs[k].npcdata + 4 * GO_FUNCDATA_INLTREE, &v, 4);
		}
		hdr[0] = count;
		hdr[1] = cutab.n / 4;
		hdr[2] = t.text_start;
		hdr[3] = nt;
		hdr[4] = ct;
		hdr[5] = ft;
		hdr[6] = pt;
		hdr[7] = fnt;
		memcpy(all.b + 8, hdr, 8 * 8);
	}
	f = fopen(argv[4], "wb");
	if (!f || fwrite(all.b, 1, all.n, f) != all.n)
		return 1;
	fclose(f);
	printf("%zu functions from %s, %zu bytes\n", count, argv[2], all.n);
	free(names.b);
	free(cutab.b);
	free(files.b);
	free(pct.b);
	free(funcs.b);
	free(inl.b);
	free(all.b);
	elf_image__free(img);
	return 0;
}
