/* test_go_pclntab.c - the Go pclntab reader: against the binary's own
 * symbol table and `go tool addr2line` on a Go 1.19 program (plain and
 * stripped with -s -w), the inline tree, small tables of every header
 * version (1.2, 1.16, 1.18, 1.20) and corrupt ones. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_image.h"
#include "symbolize/gopclntab.h"
#include "go_build.h"
#include "harness.h"

static char dir[4096];
static int built = -2;

static int build(void)
{
	return go_build_once("go_goroutines", dir, sizeof(dir), &built) ? 0 : -1;
}

static void open_prog(const char *suffix, struct elf_image **img,
		      struct gopclntab *t)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/go_goroutines%s", dir, suffix);
	*img = NULL;
	CHECK(elf_image__open(path, NULL, img) == 0);
	if (*img)
		CHECK(gopclntab__open_elf(t, *img, NULL) == 0);
}

/* The ELF symbol's name as the pclntab spells it: no ABI suffix,
 * array lengths "[...]" in generated equality functions. */
static void go_name_of_symbol(const char *sym, char *out, size_t len)
{
	size_t o = 0;

	for (const char *p = sym; *p && o + 6 < len; p++) {
		if (*p == '[' && p[1] >= '0' && p[1] <= '9') {
			memcpy(out + o, "[...]", 5);
			o += 5;
			while (*p && *p != ']')
				p++;
			if (!*p)
				break;
			continue;
		}
		out[o++] = *p;
	}
	out[o] = 0;
	if (o > 5 && strcmp(out + o - 5, ".abi0") == 0)
		out[o - 5] = 0;
}

/* Names equal but for the middle dot the pclntab keeps in some
 * generated names where the symbol table has '.'. */
static bool same_go_name(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a == *b) {
			a++, b++;
		} else if (*b == '.' && (uint8_t)a[0] == 0xc2 &&
			   (uint8_t)a[1] == 0xb7) {
			a += 2, b++;
		} else {
			return false;
		}
	}
	return !*a && !*b;
}

/* Every function's name equals the ELF symbol at its entry, in the
 * plain binary; the stripped one's table says the same everywhere. */
static void test_names_vs_symtab(void)
{
	struct elf_image *img, *simg;
	struct gopclntab t, st;
	Elf_Scn *scn = NULL;
	size_t matched = 0, funcs = 0;
	char ver[64];

	if (build() < 0)
		return;
	open_prog("", &img, &t);
	open_prog("_s", &simg, &st);
	if (!img || !simg)
		return;
	CHECK(t.version == GOPCLN_118);
	CHECK(go_buildinfo_version(simg, ver, sizeof(ver)) == 0);
	CHECKF(strncmp(ver, "go1.", 4) == 0, "%s", ver);
	CHECK(t.gofunc != 0 && st.gofunc != 0);
	CHECK(t.nfunc == st.nfunc && t.nfunc > 1000);
	while ((scn = elf_nextscn(img->elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			struct go_func f;
			const char *fn;
			char name[1024];

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			go_name_of_symbol(elf_strptr(img->elf, sh.sh_link,
						     sym.st_name),
					  name, sizeof(name));
			/* The end-of-text marker is no function. */
			if (strcmp(name, "runtime.etext") == 0 ||
			    strcmp(name, "runtime.text") == 0)
				continue;
			funcs++;
			if (gopclntab__find_func(&t, sym.st_value, &f) != 0) {
				CHECKF(0, "no function at %s %#llx", name,
				       (unsigned long long)sym.st_value);
				continue;
			}
			fn = gopclntab__func_name(&t, &f);
			CHECKF(fn && f.entry == sym.st_value &&
			       same_go_name(fn, name), "%s at %#llx: %s",
			       name, (unsigned long long)sym.st_value,
			       fn ? fn : "(null)");
			matched++;
		}
	}
	printf("  %zu of %zu ELF function symbols named alike\n", matched,
	       funcs);
	CHECK(matched > 1000 && matched == funcs);
	/* Stripped: the same table, function by function. */
	for (uint64_t i = 0; i < t.nfunc; i++) {
		struct go_func a, b;

		CHECK(gopclntab__func_at(&t, i, &a) == 0);
		CHECK(gopclntab__func_at(&st, i, &b) == 0);
		CHECK(a.entry == b.entry && a.end == b.end);
		CHECK(strcmp(gopclntab__func_name(&t, &a),
			     gopclntab__func_name(&st, &b)) == 0);
	}
	elf_image__free(img);
	elf_image__free(simg);
}

/* Every 7th byte of text: function and file:line as Go's own
 * addr2line (debug/gosym: the physical function, the line at pc). */
static void test_vs_addr2line(void)
{
	struct elf_image *img;
	struct gopclntab t;
	char path[4300], line[8192];
	FILE *f;
	size_t n = 0, same = 0;
	uint64_t *pcs = NULL;
	size_t npcs = 0;

	if (build() < 0)
		return;
	open_prog("_s", &img, &t);
	if (!img)
		return;
	snprintf(path, sizeof(path), "%s/addrs", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	for (uint64_t i = 0; i < t.nfunc; i++) {
		struct go_func fn;

		if (gopclntab__func_at(&t, i, &fn) < 0)
			continue;
		for (uint64_t pc = fn.entry; pc < fn.end; pc += 7) {
			if (npcs % 1024 == 0)
				pcs = realloc(pcs, (npcs + 1024) * sizeof(*pcs));
			pcs[npcs++] = pc;
			fprintf(f, "%#llx\n", (unsigned long long)pc);
		}
	}
	fclose(f);
	CHECK(harness_sh("cd %s && GOCACHE=%s/cache go tool addr2line "
			 "go_goroutines < addrs > a2l", dir, dir) == 0);
	snprintf(path, sizeof(path), "%s/a2l", dir);
	f = fopen(path, "r");
	CHECK(f != NULL);
	while (f && n < npcs && fgets(line, sizeof(line), f)) {
		char fl[8192];
		struct go_func fn;
		const char *file = NULL, *name;
		int32_t ln, fileno;
		char want[8300];

		line[strcspn(line, "\n")] = 0;
		if (!fgets(fl, sizeof(fl), f))
			break;
		fl[strcspn(fl, "\n")] = 0;
		if (gopclntab__find_func(&t, pcs[n], &fn) == 0 &&
		    (name = gopclntab__func_name(&t, &fn))) {
			/* Where a table has no value Go says "" and -1. */
			gopclntab__pcvalue(&t, &fn, fn.pcln, pcs[n], &ln);
			if (gopclntab__pcvalue(&t, &fn, fn.pcfile, pcs[n],
					       &fileno) == 0)
				file = gopclntab__file_name(&t, &fn, fileno);
			snprintf(want, sizeof(want), "%s:%d",
				 file ? file : "", ln);
			if (strcmp(name, line) == 0 && strcmp(want, fl) == 0)
				same++;
			else if (n - same < 10)
				fprintf(stderr, "  %#llx: %s %s, go: %s %s\n",
					(unsigned long long)pcs[n], name, want,
					line, fl);
		}
		else if (n - same < 10)
			fprintf(stderr, "  %#llx: not found, go: %s %s\n",
				(unsigned long long)pcs[n], line, fl);
		n++;
	}
	if (f)
		fclose(f);
	printf("  %zu of %zu pcs agree with go tool addr2line\n", same, npcs);
	CHECK(n == npcs && same == npcs && npcs > 10000);
	free(pcs);
	elf_image__free(img);
}

/* An inlined call: main.inlinedRecv inside main.recvViaInline, as the
 * runtime's traceback shows it (inlined frame first, the same pc's
 * physical function next). */
static void test_inline_tree(void)
{
	struct elf_image *img;
	struct gopclntab t;
	bool found = false;

	if (build() < 0)
		return;
	open_prog("_s", &img, &t);
	if (!img)
		return;
	for (uint64_t i = 0; i < t.nfunc && !found; i++) {
		struct go_func fn;
		const char *name;

		if (gopclntab__func_at(&t, i, &fn) < 0 ||
		    !(name = gopclntab__func_name(&t, &fn)) ||
		    strcmp(name, "main.recvViaInline") != 0)
			continue;
		for (uint64_t pc = fn.entry; pc < fn.end && !found; pc++) {
			struct go_frame fr[8];
			int n = gopclntab__frames(&t, pc, fr, 8);

			if (n == 2 && fr[0].inlined &&
			    strcmp(fr[0].function, "main.inlinedRecv") == 0 &&
			    !fr[1].inlined &&
			    strcmp(fr[1].function, "main.recvViaInline") == 0 &&
			    fr[0].file && strstr(fr[0].file, "main.go") &&
			    fr[0].line > 0 && fr[1].line > 0 &&
			    fr[0].line != fr[1].line)
				found = true;
		}
	}
	CHECK(found);
	elf_image__free(img);
}

/* ---- small tables of each header version ------------------------------ */

struct buf {
	uint8_t b[512];
	size_t n;
};

static size_t put(struct buf *b, const void *p, size_t len)
{
	size_t at = b->n;

	memcpy(b->b + b->n, p, len);
	b->n += len;
	return at;
}

static size_t put32(struct buf *b, uint32_t v) { return put(b, &v, 4); }
static size_t put64(struct buf *b, uint64_t v) { return put(b, &v, 8); }
static void set32(struct buf *b, size_t at, uint32_t v) { memcpy(b->b + at, &v, 4); }
static void set64(struct buf *b, size_t at, uint64_t v) { memcpy(b->b + at, &v, 8); }

/* One function "main.f" at 0x1000, 16 bytes, in f.go line 10. */
static size_t make_table(uint32_t magic, struct buf *b)
{
	/* pcln: value 10 (from -1: delta 11, zigzag 22) for 16 bytes;
	 * pcfile: file 0 (1), or 1 in the 1.2 format. */
	static const uint8_t pcln[] = { 22, 16, 0 };
	uint8_t pcfile[] = { 2, 16, 0 };
	uint8_t hdr[8] = { 0, 0, 0, 0, 0, 0, 1, 8 };
	size_t words, fn, ft, nt, ct, flt, pt, ln, fl;

	memset(b, 0, sizeof(*b));
	memcpy(hdr, &magic, 4);
	put(b, hdr, 8);
	if (magic == GOPCLN_MAGIC_12) {
		put64(b, 1);		       /* nfunc */
		put64(b, 0x1000);	       /* entry */
		fn = put64(b, 0);	       /* funcoff */
		put64(b, 0x1010);	       /* end */
		ft = put32(b, 0);	       /* filetab offset */
		nt = put(b, "main.f", 7);
		pcfile[0] = 4;		       /* file 1 */
		pt = b->n;
		ln = put(b, pcln, 3);
		fl = put(b, pcfile, 3);
		flt = put32(b, 2);	       /* nfiles, then offsets */
		set32(b, ft, (uint32_t)flt);
		put32(b, (uint32_t)(flt + 8));  /* file 1 */
		put(b, "f.go", 5);
		while (b->n % 8)
			b->n++;
		set64(b, fn, b->n);
		put64(b, 0x1000);
		put32(b, (uint32_t)nt);  /* nameoff */
		put32(b, 0); put32(b, 0); put32(b, 0); /* args, defer, pcsp */
		put32(b, (uint32_t)fl);
		put32(b, (uint32_t)ln);
		put32(b, 0);		       /* npcdata */
		put32(b, 0);		       /* funcID, pad, nfuncdata */
		(void)pt;
		return b->n;
	}
	words = magic == GOPCLN_MAGIC_116 ? 7 : 8;
	for (size_t i = 0; i < words; i++)
		put64(b, 0);
	set64(b, 8, 1);			       /* nfunc */
	set64(b, 16, 1);		       /* nfiles */
	if (words == 8)
		set64(b, 24, 0x1000);	       /* textStart */
	nt = put(b, "main.f", 7);
	ct = put32(b, 0);
	flt = put(b, "f.go", 5);
	pt = put(b, "", 1);		       /* offset 0 is "no table" */
	put(b, pcln, 3);
	put(b, pcfile, 3);
	while (b->n % 8)
		b->n++;
	fn = b->n;
	{
		size_t h = 8 + 16 + (words == 8 ? 8 : 0);

		set64(b, h, nt);
		set64(b, h + 8, ct);
		set64(b, h + 16, flt);
		set64(b, h + 24, pt);
		set64(b, h + 32, fn);
	}
	if (words == 8) {
		put32(b, 0);
		put32(b, 16);		       /* funcoff from functab */
		put32(b, 0x10);
		put32(b, 0);
		put32(b, 0);		       /* entryoff */
	} else {
		put64(b, 0x1000);
		put64(b, 24);
		put64(b, 0x1010);
		put64(b, 0x1000);	       /* entry */
	}
	put32(b, 0);			       /* nameoff */
	put32(b, 0); put32(b, 0); put32(b, 0); /* args, defer, pcsp */
	put32(b, 4);			       /* pcfile */
	put32(b, 1);			       /* pcln */
	put32(b, 0);			       /* npcdata */
	put32(b, 0);			       /* cuOffset */
	if (magic == GOPCLN_MAGIC_120)
		put32(b, 10);		       /* startLine */
	put32(b, 0);			       /* funcID, flag, pad, nfuncdata */
	return b->n;
}

#define INL_VADDR 0x10000

/* "main.f" at 0x1000 (16 bytes) with "main.g" inlined over its first 8
 * bytes, called from offset 4: lines 20 in [0x1000, 0x1004), 10 after.
 * The inline tree follows the table; funcdata points at it (as an offset
 * from go:func.* for 1.18+, the table's address INL_VADDR standing for
 * it; as a pointer before). */
static size_t make_inl_table(uint32_t magic, struct buf *b)
{
	static const uint8_t pcln[] = { 42, 4, 19, 12, 0 };
	static const uint8_t inlix[] = { 2, 4, 1, 12, 0 };
	uint8_t pcfile[] = { 2, 16, 0 };
	uint8_t hdr[8] = { 0, 0, 0, 0, 0, 0, 1, 8 };
	bool v12 = magic == GOPCLN_MAGIC_12, v116 = magic == GOPCLN_MAGIC_116;
	bool v120 = magic == GOPCLN_MAGIC_120;
	size_t words = v12 ? 1 : v116 ? 7 : 8;
	size_t nf, ng, ct = 0, flt, pt, ln, fl, ix, fn, fd, tree, ft = 0;
	size_t base;

	memset(b, 0, sizeof(*b));
	memcpy(hdr, &magic, 4);
	put(b, hdr, 8);
	for (size_t i = 0; i < words; i++)
		put64(b, 0);
	set64(b, 8, 1);				/* nfunc */
	if (v12) {
		put64(b, 0x1000);
		fn = put64(b, 0);		/* funcoff, set below */
		put64(b, 0x1010);
		ft = put32(b, 0);		/* filetab offset */
		pcfile[0] = 4;			/* file 1 */
	} else {
		set64(b, 16, 1);		/* nfiles */
		if (words == 8)
			set64(b, 24, 0x1000);	/* textStart */
	}
	base = v12 ? 0 : b->n;			/* names are relative to it */
	nf = put(b, "main.f", 7) - base;
	ng = put(b, "main.g", 7) - base;
	if (!v12)
		ct = put32(b, 0);
	if (v12) {
		flt = put32(b, 2);
		put32(b, (uint32_t)(flt + 8));
		put(b, "f.go", 5);
		set32(b, ft, (uint32_t)flt);
	} else {
		flt = put(b, "f.go", 5);
	}
	pt = v12 ? 0 : put(b, "", 1);		/* offset 0: no table */
	ln = put(b, pcln, sizeof(pcln)) - pt;
	fl = put(b, pcfile, sizeof(pcfile)) - pt;
	ix = put(b, inlix, sizeof(inlix)) - pt;
	while (b->n % 8)
		b->n++;
	if (!v12) {
		size_t h = 8 + 16 + (words == 8 ? 8 : 0);

		fn = b->n;
		set64(b, h, base);
		set64(b, h + 8, ct);
		set64(b, h + 16, flt);
		set64(b, h + 24, pt);
		set64(b, h + 32, fn);
		if (words == 8) {
			put32(b, 0);
			put32(b, 16);
			put32(b, 0x10);
			put32(b, 0);
		} else {
			put64(b, 0x1000);
			put64(b, 24);
			put64(b, 0x1010);
		}
	}
	/* The _func record. */
	{
		size_t rec = b->n;

		if (v12)
			set64(b, fn, rec);
		if (words == 8)
			put32(b, 0);		/* entryoff */
		else
			put64(b, 0x1000);	/* entry */
		put32(b, (uint32_t)nf);
		put32(b, 0); put32(b, 0); put32(b, 0); /* args, defer, pcsp */
		put32(b, (uint32_t)fl);
		put32(b, (uint32_t)ln);
		put32(b, 3);			/* npcdata */
		if (!v12)
			put32(b, 0);		/* cuOffset */
		if (v120)
			put32(b, 10);		/* startLine */
		put32(b, 4u << 24);		/* funcID, flag, pad, nfuncdata 4 */
		put32(b, 0); put32(b, 0);
		put32(b, (uint32_t)ix);		/* pcdata[InlTreeIndex] */
		if (words == 8) {
			fd = put32(b, UINT32_MAX);
			put32(b, UINT32_MAX); put32(b, UINT32_MAX);
			put32(b, 0);		/* set below */
		} else {
			while ((INL_VADDR + b->n) % 8)
				b->n++;
			fd = put64(b, 0);
			put64(b, 0); put64(b, 0);
			put64(b, 0);		/* set below */
		}
		(void)rec;
	}
	while (b->n % 8)
		b->n++;
	tree = b->n;
	if (v120) {
		put32(b, 0);			/* funcID, pad */
		put32(b, (uint32_t)ng);
		put32(b, 4);			/* parentPc */
		put32(b, 20);			/* startLine */
	} else {
		put32(b, 0xffff);		/* parent -1, funcID, pad */
		put32(b, 0); put32(b, 0);	/* file, line */
		put32(b, (uint32_t)ng);
		put32(b, 4);			/* parentPc */
	}
	if (words == 8)
		set32(b, fd + 12, (uint32_t)tree);
	else
		set64(b, fd + 24, INL_VADDR + tree);
	return b->n;
}

/* The inline tree of every version: main.g inlined in main.f. */
static void test_versions_inline(void)
{
	static const uint32_t magics[] = { GOPCLN_MAGIC_12, GOPCLN_MAGIC_116,
					   GOPCLN_MAGIC_118, GOPCLN_MAGIC_120 };

	for (size_t i = 0; i < 4; i++) {
		struct buf b;
		struct gopclntab t;
		struct go_frame fr[4];
		size_t n = make_inl_table(magics[i], &b);
		int k;

		CHECKF(gopclntab__init(&t, b.b, n, INL_VADDR, NULL) == 0, "%#x",
		       magics[i]);
		/* SS_WRITE_SEEDS=DIR: the tables as fuzz_gopclntab seeds (it
		 * maps its input at INL_VADDR too). */
		if (getenv("SS_WRITE_SEEDS")) {
			char path[4200];

			snprintf(path, sizeof(path), "%s/inline_%08x",
				 getenv("SS_WRITE_SEEDS"), magics[i]);
			harness_spit(path, b.b, n);
		}
		t.gofunc = INL_VADDR;
		gopclntab__add_region(&t, INL_VADDR, b.b, n);
		k = gopclntab__frames(&t, 0x1002, fr, 4);
		CHECKF(k == 2 && fr[0].inlined && !fr[1].inlined &&
		       !strcmp(fr[0].function, "main.g") &&
		       !strcmp(fr[1].function, "main.f") && fr[0].line == 20 &&
		       fr[1].line == 10 && fr[0].file &&
		       !strcmp(fr[0].file, "f.go"),
		       "%#x: %d frames: %s:%d, %s:%d", magics[i], k,
		       k > 0 ? fr[0].function : "-", k > 0 ? fr[0].line : 0,
		       k > 1 ? fr[1].function : "-", k > 1 ? fr[1].line : 0);
		k = gopclntab__frames(&t, 0x100a, fr, 4);
		CHECKF(k == 1 && !strcmp(fr[0].function, "main.f") &&
		       fr[0].line == 10, "%#x: %d", magics[i], k);
		/* A tree whose parentPc leads back into the same entry: one
		 * inlined frame, not a loop. */
		{
			struct buf bad = b;
			struct gopclntab bt;

			/* inlix 0 over the whole function */
			for (size_t o = 0; o + 5 <= n; o++)
				if (!memcmp(bad.b + o, "\x02\x04\x01\x0c\x00", 5)) {
					memcpy(bad.b + o, "\x02\x10\x00", 3);
					break;
				}
			CHECK(gopclntab__init(&bt, bad.b, n, INL_VADDR, NULL) == 0);
			bt.gofunc = INL_VADDR;
			gopclntab__add_region(&bt, INL_VADDR, bad.b, n);
			k = gopclntab__frames(&bt, 0x1002, fr, 4);
			CHECKF(k == 2 && !strcmp(fr[1].function, "main.f"),
			       "%#x: %d", magics[i], k);
		}
		/* The tree unreadable: the function alone, no inlined frame. */
		t.nregions = 0;
		k = gopclntab__frames(&t, 0x1002, fr, 4);
		CHECKF(k == 1 && !strcmp(fr[0].function, "main.f"), "%#x: %d",
		       magics[i], k);
	}
}

static void test_versions(void)
{
	static const uint32_t magics[] = { GOPCLN_MAGIC_12, GOPCLN_MAGIC_116,
					   GOPCLN_MAGIC_118, GOPCLN_MAGIC_120 };

	for (size_t i = 0; i < 4; i++) {
		struct buf b;
		struct gopclntab t;
		struct go_frame fr[4];
		size_t n = make_table(magics[i], &b);
		int k;

		CHECKF(gopclntab__init(&t, b.b, n, 0, NULL) == 0, "%#x",
		       magics[i]);
		k = gopclntab__frames(&t, 0x1008, fr, 4);
		CHECKF(k == 1, "%#x: %d", magics[i], k);
		if (k == 1) {
			CHECKF(strcmp(fr[0].function, "main.f") == 0, "%#x",
			       magics[i]);
			CHECKF(fr[0].file && strcmp(fr[0].file, "f.go") == 0 &&
			       fr[0].line == 10, "%#x: %s:%d", magics[i],
			       fr[0].file ? fr[0].file : "?", fr[0].line);
		}
		CHECK(gopclntab__frames(&t, 0x1010, fr, 4) == -ENOENT);
		CHECK(gopclntab__frames(&t, 0xfff, fr, 4) == -ENOENT);
		/* Every truncation: an error or a partial answer, bounded. */
		for (size_t cut = 0; cut < n; cut++) {
			uint8_t *copy = malloc(cut ? cut : 1);

			memcpy(copy, b.b, cut);
			if (gopclntab__init(&t, copy, cut, 0, NULL) == 0)
				(void)gopclntab__frames(&t, 0x1008, fr, 4);
			free(copy);
		}
	}
	{
		struct buf b;
		struct gopclntab t;
		size_t n = make_table(GOPCLN_MAGIC_118, &b);

		b.b[0] = 0xf2;	/* an unknown magic */
		CHECK(gopclntab__init(&t, b.b, n, 0, NULL) == -EPROTONOSUPPORT);
	}
}

static void cleanup(void)
{
	go_build_cleanup(dir);
}

static void test_zz_cleanup(void) { cleanup(); }

TEST_MAIN("go_pclntab", TEST(test_names_vs_symtab), TEST(test_vs_addr2line),
	  TEST(test_inline_tree), TEST(test_versions),
	  TEST(test_versions_inline), TEST(test_zz_cleanup))
