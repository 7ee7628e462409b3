/* symtab.c - a module's function-symbol index, answering "which symbol
 * contains this address" with the name gdb would show for its minimal
 * symbols (the same alias among many at one address, the same sized-symbol
 * rules). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/checksum.h"
#include "base/radix_sort.h"
#include "base/vec.h"
#include "symbolize/sym_cache.h"
#include "symbolize/symbolize.h"
#include "symbolize/sym_internal.h"

/* Inline chain length the function index evaluates lookups with (the
 * CLI's; deeper chains are cut the same way). */
#define SCOPE_MAX 32
/* Addresses where the function index may change, at most (libc with its
 * debug file: ~40,000). */
#define FUNCTION_INDEX_MAX_BOUNDS (4u << 20)

/* One ELF symbol while the index is built: name points into the ELF
 * string table (or the PLT names); name_len excludes a "@@VERSION" or
 * "@VERSION" suffix. Built entries become struct sym_rec, whose names are
 * copied into the symtab's own string table (the cache file's layout). */
struct sym_entry {
	uint64_t addr;
	uint64_t limit;	/* end of the symbol, or of its section when size 0 */
	const char *name;
	uint32_t name_len;
	uint32_t flags;	/* SYM_REC_* */
};

/* Entries of one table while it is built. */
struct sym_build {
	struct sym_entry *syms;
	size_t n, cap;
};

/* The symbols of one "objfile" in gdb's sense: the main image, or one
 * separate debug image. Invariant: recs sorted by (addr, stripped name). */
struct sym_table {
	const struct sym_rec *recs;
	size_t n;
};

/* Display names already made, by record (lookups are few: a small
 * open-addressing table, at most half full, cap a power of two or 0). */
struct display_slot {
	const struct sym_rec *rec;	/* NULL: empty */
	const char *display, *mangled;	/* NULL until asked for */
	bool display_owned, mangled_owned;
};

/* Invariant: tables[0] is the main image's; a later table wins only with
 * a symbol at a strictly higher address (gdb's rule across objfiles).
 * Names are at strs + name_off. With cache set, recs and strs point into
 * its mapping and every record a lookup touches is checked first (its
 * block's checksum, its bounds); a failed check sets corrupt, and the
 * lookup is done again on tables built from imgs. */
struct symtab {
	struct sym_table tables[SYMTAB_MAX_IMAGES];
	size_t ntables;
	const char *strs;
	size_t strs_len;
	struct sym_rec *owned_recs[SYMTAB_MAX_IMAGES]; /* built tables */
	char *owned_strs;
	struct sym_cache *cache;	/* tables mapped from the cache, or NULL */
	struct sym_cache *retired;	/* a corrupt cache, kept mapped: names
					   returned from it stay valid */
	bool corrupt;
	bool stored;			/* written to (or read from) the cache */
	bool functions_tried;		/* a file with the function index written */
	const struct elf_image *imgs[SYMTAB_MAX_IMAGES];
	size_t nimgs;
	const struct log_sink *log;
	uint64_t source_key;
	struct display_slot *disp;
	size_t ndisp, dcap;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;
	uint32_t n;
	int c;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	n = x->name_len < y->name_len ? x->name_len : y->name_len;
	c = memcmp(x->name, y->name, n);
	if (c)
		return c;
	return (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* Sorts by cmp_entry: by address with radix_sort_u64 (qsort's merge sort
 * took ~150 instructions a comparison: 180M for libLLVM's and
 * libclang-cpp's 73k symbols, most of a cold replay's symbol tables),
 * then each run of one address by name. */
static void sort_entries(struct sym_entry *v, size_t n)
{
	if (radix_sort_u64(v, n, sizeof(*v), offsetof(struct sym_entry, addr))) {
		qsort(v, n, sizeof(*v), cmp_entry);
		return;
	}
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && v[j].addr == v[i].addr; j++)
			;
		if (j - i > 1)
			qsort(v + i, j - i, sizeof(*v), cmp_entry);
	}
}

static bool same_name(const struct sym_entry *a, const struct sym_entry *b)
{
	return a->name_len == b->name_len && !memcmp(a->name, b->name, a->name_len);
}

/* What a symbol needs of the section it is defined in: whether it holds
 * code, and its end (a symbol of size 0 covers up to it). */
struct sym_section {
	uint64_t end;
	bool exec;
};

/* The section table of img, read once per symbol table rather than per
 * symbol (elf_getscn and gelf_getshdr for each of libLLVM's 73k symbols
 * were most of building its table). NULL on failure (*n 0). */
static struct sym_section *sym_sections(const struct elf_image *img, size_t *n)
{
	struct sym_section *v;
	Elf_Scn *scn = NULL;

	*n = 0;
	if (elf_getshdrnum(img->elf, n) || !*n || !(v = calloc(*n, sizeof(*v)))) {
		*n = 0;
		return NULL;
	}
	while ((scn = elf_nextscn(img->elf, scn))) {
		size_t i = elf_ndxscn(scn);
		GElf_Shdr sh;

		if (i < *n && gelf_getshdr(scn, &sh)) {
			v[i].exec = sh.sh_flags & SHF_EXECINSTR;
			v[i].end = sh.sh_addr + sh.sh_size;
		}
	}
	return v;
}

/* The string table of a symbol table as one NUL-terminated block, so a
 * name is strs + st_name after a bounds check (what elf_strptr checks,
 * without its lock per call); NULL when it is not such a block (then
 * names go through elf_strptr). */
static const char *sym_strings(const struct elf_image *img, size_t link,
			       size_t *len)
{
	Elf_Scn *scn = elf_getscn(img->elf, link);
	GElf_Shdr sh;
	Elf_Data *d;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB ||
	    (sh.sh_flags & SHF_COMPRESSED) || !(d = elf_getdata(scn, NULL)) ||
	    !d->d_buf || !d->d_size || d->d_size != sh.sh_size ||
	    ((const char *)d->d_buf)[d->d_size - 1] != 0)
		return NULL;
	*len = d->d_size;
	return d->d_buf;
}

/* Adds the code symbols of one SHT_SYMTAB/SHT_DYNSYM section. gdb takes
 * every symbol of an executable section except section and file symbols
 * as a text minimal symbol, whatever its type. */
static int add_symbols(struct sym_build *t, const struct elf_image *img,
		       Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const Elf64_Sym *raw = NULL;
	struct sym_section *secs;
	const char *strs;
	size_t count, nsecs, strs_len = 0;
	int err = 0;

	if (!data || !sh->sh_entsize || sh->sh_entsize < sizeof(Elf64_Sym))
		return 0;
	count = data->d_size / sizeof(Elf64_Sym);
	/* libelf hands 64-bit symbols over in memory order, aligned: read
	 * them in place where it did. */
	if (gelf_getclass(img->elf) == ELFCLASS64 && data->d_type == ELF_T_SYM &&
	    sh->sh_entsize == sizeof(Elf64_Sym) && data->d_buf &&
	    (uintptr_t)data->d_buf % _Alignof(Elf64_Sym) == 0)
		raw = data->d_buf;
	if (!(secs = sym_sections(img, &nsecs)))
		return 0;
	strs = sym_strings(img, sh->sh_link, &strs_len);
	for (size_t i = 1; i < count; i++) {
		GElf_Sym s;
		const char *name, *at;
		struct sym_entry *e;
		int type;

		if (raw)
			s = raw[i];
		else if (!gelf_getsym(data, (int)i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (type == STT_SECTION || type == STT_FILE || type == STT_TLS ||
		    s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE ||
		    s.st_shndx >= nsecs || !secs[s.st_shndx].exec)
			continue;
		if (strs)
			name = s.st_name < strs_len ? strs + s.st_name : NULL;
		else
			name = elf_strptr(img->elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		e = VEC_PUSH(t->syms, t->n, t->cap);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		memset(e, 0, sizeof(*e));
		e->addr = s.st_value;
		e->flags = s.st_size ? SYM_REC_SIZED : 0;
		e->limit = s.st_size ? s.st_value + s.st_size
				     : secs[s.st_shndx].end;
		/* A zero-sized marker at its section's end (_etext) covers
		 * nothing: limit == addr. */
		if (e->limit < e->addr)
			e->limit = e->addr;
		e->name = name;
		at = strchr(name, '@');
		/* "foo@plt"-style names are gdb's synthetic ones; keep them. */
		e->name_len = (uint32_t)(at && at != name ? (size_t)(at - name)
							  : strlen(name));
		if (GELF_ST_BIND(s.st_info) == STB_LOCAL)
			e->flags |= SYM_REC_LOCAL;
	}
	free(secs);
	return err;
}

static int load_table(struct sym_build *t, const struct elf_image *img,
		      bool dynsym_ok)
{
	Elf_Scn *scn = NULL;
	bool have_symtab = false;
	int err = 0;

	if (!img->elf)
		return 0;
	/* gdb enters .dynsym only when the file has no .symtab: the static
	 * table is a superset. */
	while ((scn = elf_nextscn(img->elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
			have_symtab = true;
			err = add_symbols(t, img, scn, &sh);
			if (err)
				return err;
		}
	}
	if (!have_symtab && dynsym_ok) {
		while ((scn = elf_nextscn(img->elf, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM) {
				err = add_symbols(t, img, scn, &sh);
				if (err)
					return err;
			}
		}
	}
	return 0;
}

/* Sorts a table and collapses duplicates (a name in both versions
 * "x@@V" and "x", or the same symbol twice) as gdb compacts them. */
static void sort_table(struct sym_build *t)
{
	size_t w = 1;

	if (!t->n)
		return;
	sort_entries(t->syms, t->n);
	for (size_t r = 1; r < t->n; r++) {
		struct sym_entry *p = &t->syms[w - 1], *e = &t->syms[r];

		if (p->addr == e->addr && same_name(p, e) &&
		    (p->flags & SYM_REC_SIZED) == (e->flags & SYM_REC_SIZED)) {
			if (!(e->flags & SYM_REC_LOCAL))
				p->flags &= ~SYM_REC_LOCAL;
			continue;
		}
		t->syms[w++] = *e;
	}
	t->n = w;
}

/* PLT stubs have no symbol; gdb and perf name each after the function
 * its jump slot resolves: "foo@plt" (perf demangles foo first). Entry i
 * of .rela.plt's relocations is the 16-byte stub i of .plt.sec
 * when the link has one (IBT), else of .plt after its 16-byte header.
 * Added to the main image's table; names kept in *names (NUL-separated),
 * entries' name set from them once the buffer stops moving. */
static int add_plt_symbols(struct sym_build *t, const struct elf_image *img,
			   char **names)
{
	Elf_Scn *scn = NULL, *rela = NULL;
	GElf_Shdr sh, rsh = { 0 };
	uint64_t plt = 0, plt_sec = 0, plt_size = 0, sec_size = 0, start, limit;
	size_t shstrndx, len = 0, cap = 0, first = t->n;
	char *buf = NULL;

	if (!img->elf || elf_getshdrstrndx(img->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(img->elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(img->elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".plt") && sh.sh_type == SHT_PROGBITS) {
			plt = sh.sh_addr;
			plt_size = sh.sh_size;
		} else if (!strcmp(name, ".plt.sec") && sh.sh_type == SHT_PROGBITS) {
			plt_sec = sh.sh_addr;
			sec_size = sh.sh_size;
		} else if (!strcmp(name, ".rela.plt") && sh.sh_type == SHT_RELA) {
			rela = scn;
			rsh = sh;
		}
	}
	if (!rela || (!plt && !plt_sec) || !rsh.sh_entsize)
		return 0;
	start = plt_sec ? plt_sec : plt + 16;
	limit = plt_sec ? plt_sec + sec_size : plt + plt_size;
	Elf_Data *rd = elf_getdata(rela, NULL);
	Elf_Scn *dyn = elf_getscn(img->elf, rsh.sh_link);
	GElf_Shdr dsh;
	Elf_Data *dd = dyn ? elf_getdata(dyn, NULL) : NULL;

	if (!rd || !dd || !gelf_getshdr(dyn, &dsh))
		return 0;
	size_t n = rd->d_size / sizeof(Elf64_Rela), slot = 0;
	/* Name offsets in buf, per entry added (buf moves while it grows). */
	size_t *offs = calloc(n ? n : 1, sizeof(*offs));

	if (!offs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *name;

		if (!gelf_getrela(rd, (int)i, &r))
			continue;
		uint64_t at = start + 16 * slot++;

		if (at + 16 > limit)
			break;
		/* An IRELATIVE slot (libc's ifuncs) has no symbol: perf
		 * prints "@plt" for it, and so do we. */
		name = "";
		if (GELF_R_SYM(r.r_info) &&
		    (!gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym) ||
		     !(name = elf_strptr(img->elf, dsh.sh_link, sym.st_name))))
			continue;
		/* Demangled when looked up (display_name): a thousand C++
		 * stubs (clangd's) cost milliseconds to demangle up front. */
		size_t bl = strlen(name);

		if (vec_reserve((void **)&buf, &cap, len + bl + 5, 1)) {
			free(offs);
			free(buf);
			return -ENOMEM;
		}
		memcpy(buf + len, name, bl);
		memcpy(buf + len + bl, "@plt", 5);
		struct sym_entry *e = VEC_PUSH(t->syms, t->n, t->cap);

		if (!e) {
			free(offs);
			free(buf);
			return -ENOMEM;
		}
		memset(e, 0, sizeof(*e));
		e->addr = at;
		e->limit = at + 16;
		e->flags = SYM_REC_SIZED | SYM_REC_PLT;
		e->name_len = (uint32_t)(bl + 4);
		offs[t->n - 1 - first] = len;
		len += bl + 5;
	}
	for (size_t i = first; i < t->n; i++)
		t->syms[i].name = buf + offs[i - first];
	free(offs);
	*names = buf;
	return 0;
}

/* Turns the built tables into records over one string table of the
 * symtab's own (whole names, "@VERSION" included, NUL-terminated). */
static int emit_tables(struct symtab *st, struct sym_build *b, size_t nb)
{
	size_t len = 1, off = 1;

	for (size_t t = 0; t < nb; t++)
		for (size_t i = 0; i < b[t].n; i++)
			len += strlen(b[t].syms[i].name) + 1;
	if (len > UINT32_MAX || !(st->owned_strs = malloc(len)))
		return -ENOMEM;
	st->owned_strs[0] = 0;
	for (size_t t = 0; t < nb; t++) {
		struct sym_rec *r = calloc(b[t].n ? b[t].n : 1, sizeof(*r));

		if (!r)
			return -ENOMEM;
		st->owned_recs[t] = r;
		for (size_t i = 0; i < b[t].n; i++) {
			const struct sym_entry *e = &b[t].syms[i];
			size_t l = strlen(e->name) + 1;

			memcpy(st->owned_strs + off, e->name, l);
			r[i] = (struct sym_rec){ e->addr, e->limit, (uint32_t)off,
						 e->name_len, e->flags, 0 };
			off += l;
		}
		st->tables[t] = (struct sym_table){ r, b[t].n };
	}
	st->ntables = nb;
	st->strs = st->owned_strs;
	st->strs_len = len;
	return 0;
}

/* The tables of imgs, built from their ELF symbol tables. */
static int build_tables(struct symtab *st)
{
	struct sym_build b[SYMTAB_MAX_IMAGES] = { 0 };
	char *plt_names = NULL;
	size_t nb = 0;
	int err = 0;

	for (size_t i = 0; i < st->nimgs && !err; i++) {
		if (!st->imgs[i])
			continue;
		/* Only the main image's .dynsym counts: in debug files it is
		 * an empty NOBITS copy. */
		err = load_table(&b[nb], st->imgs[i], i == 0);
		if (!err)
			sort_table(&b[nb]);
		if (!err && i == 0 &&
		    (err = add_plt_symbols(&b[nb], st->imgs[0], &plt_names)) == 0 &&
		    b[nb].n)
			sort_entries(b[nb].syms, b[nb].n);
		nb++;
	}
	if (!err)
		err = emit_tables(st, b, nb);
	for (size_t t = 0; t < nb; t++)
		free(b[t].syms);
	free(plt_names);
	return err;
}

/* Which images the symbols come from, beyond the main image's build-id
 * (the cache file's name). A build-id names the code, not the file: a
 * copy stripped of its DWARF or its .symtab keeps it, so the main image's
 * size and what it has count too; then whether there is a debug image,
 * what it has, and which it is (by its build-id; MiniDebugInfo, which has
 * none, comes from the main image itself, so its size tells it enough). */
static uint64_t source_key(const struct elf_image *const *imgs, size_t nimgs)
{
	uint8_t k[2 * (2 + 8 + ELF_BUILD_ID_MAX)] = { 0 };
	size_t n = 0;

	for (size_t i = 0; i < nimgs && i < 2; i++) {
		const struct elf_image *img = imgs[i];

		k[n++] = img ? 1 : 0;
		if (!img)
			continue;
		k[n++] = (uint8_t)((img->has_symtab ? 1 : 0) |
				   (img->has_dwarf_info ? 2 : 0));
		if (i == 0 || !img->build_id_len) {
			put_le64(k + n, img->size);
			n += 8;
		} else {
			memcpy(k + n, img->build_id, img->build_id_len);
			n += img->build_id_len;
		}
	}
	return checksum64(k, n);
}

/* The files the symbols are made from, which a cache file must have been
 * made from too: the main image, and the debug image when it is a file
 * the module named (.gnu_debuglink). A debug file found by build-id (a
 * debug directory's tree, debuginfod, or the debug-file cache's copy of
 * one) is what every module with that build-id finds: the source key
 * names it by its build-id, and its form may change (compressed, then the
 * cache's copy). MiniDebugInfo comes from the main image's own bytes. */
static size_t sources_of(const struct elf_image *const *imgs, size_t nimgs,
			 struct cache_source srcs[SYM_CACHE_MAX_SOURCES])
{
	size_t n = 0;

	for (size_t i = 0; i < nimgs && n < SYM_CACHE_MAX_SOURCES; i++)
		if (imgs[i] && (i == 0 || (imgs[i]->ino &&
					   !imgs[i]->found_by_build_id)))
			srcs[n++] = elf_image__source(imgs[i]);
	return n;
}

static int symtab_new(const struct elf_image *const *imgs, size_t nimgs,
		      const struct log_sink *log, struct symtab **out)
{
	struct symtab *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	st->log = log;
	for (size_t i = 0; i < nimgs && i < SYMTAB_MAX_IMAGES; i++)
		st->imgs[st->nimgs++] = imgs[i];
	st->source_key = source_key(imgs, nimgs);
	*out = st;
	return 0;
}

int symtab__build(const struct elf_image *const *imgs, size_t nimgs,
		  const struct log_sink *log, struct symtab **out)
{
	struct symtab *st;
	int err;

	*out = NULL;
	if ((err = symtab_new(imgs, nimgs, log, &st)))
		return fail(err);
	if ((err = build_tables(st))) {
		symtab__free(st);
		return fail(err);
	}
	*out = st;
	return 0;
}

int symtab__open(const struct elf_image *const *imgs, size_t nimgs,
		 const char *cache_dir, const struct log_sink *log,
		 struct symtab **out, bool *from_cache)
{
	const struct elf_image *main = nimgs ? imgs[0] : NULL;
	struct sym_cache *c = NULL;
	struct symtab *st;
	int err;

	*from_cache = false;
	if (!cache_dir || !main || !main->build_id_len)
		return symtab__build(imgs, nimgs, log, out);
	*out = NULL;
	if ((err = symtab_new(imgs, nimgs, log, &st)))
		return fail(err);
	struct cache_source srcs[SYM_CACHE_MAX_SOURCES];
	size_t nsrcs = sources_of(imgs, nimgs, srcs);
	if (sym_cache__load(cache_dir, main->build_id, main->build_id_len,
			    st->source_key, srcs, nsrcs, log, &c) == 0) {
		const struct sym_cache_view *v = sym_cache__view(c);

		st->cache = c;
		for (size_t t = 0; t < v->ntables; t++)
			st->tables[t] = (struct sym_table){ v->recs[t], v->nrecs[t] };
		st->ntables = v->ntables;
		st->strs = v->strs;
		st->strs_len = v->strs_len;
		st->stored = true;
		*from_cache = true;
		*out = st;
		return 0;
	}
	if ((err = build_tables(st))) {
		symtab__free(st);
		return fail(err);
	}
	*out = st;
	return 0;
}

bool symtab__store_pending(const struct symtab *st, bool functions)
{
	if (!st || !st->nimgs || !st->imgs[0] || !st->imgs[0]->build_id_len)
		return false;
	if (!st->stored)
		return true;
	/* A file written without the function index (by a context that
	 * writes at its end, not in the background) gets one. */
	return functions && st->cache && !st->corrupt && !st->functions_tried &&
	       !(sym_cache__view(st->cache)->flags & SYM_CACHE_FUNCTIONS);
}

/* A mapped table found corrupt: the same lookups on tables built from the
 * images (the mapping stays until free: names given out live on). */
static bool rebuild(struct symtab *st)
{
	log_info(st->log, "%s: symbol cache file corrupt; symbols read again",
		 st->imgs[0] && st->imgs[0]->path ? st->imgs[0]->path : "?");
	st->retired = st->cache;
	st->cache = NULL;
	st->corrupt = false;
	st->stored = false;	/* rewritten by the next cache write */
	memset(st->tables, 0, sizeof(st->tables));
	st->ntables = 0;
	return build_tables(st) == 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* A string buffer that starts as a copy of st's names. */
struct strbuf {
	char *s;
	size_t n, cap;
};

static int strbuf_add(struct strbuf *sb, const char *s, uint32_t *off)
{
	size_t l = strlen(s) + 1;

	if (sb->n + l > UINT32_MAX ||
	    vec_reserve((void **)&sb->s, &sb->cap, sb->n + l, 1))
		return -ENOMEM;
	memcpy(sb->s + sb->n, s, l);
	*off = (uint32_t)sb->n;
	sb->n += l;
	return 0;
}

/* The function index: the default symbolization evaluated, by the very
 * code a lookup runs, once per piece between consecutive addresses where
 * its inputs change (li's DIE ranges, the symbols' starts and ends), so
 * that it holds for every address of the piece; equal neighbours merged.
 * Costs a lookup per piece: run by the cache writer, off the dump's path. */
static int function_index(struct symtab *st, struct line_info *li,
			  struct strbuf *sb, struct sym_func **out, size_t *nout)
{
	uint64_t *b = NULL;
	size_t nb = 0, cap, nf = 0, fcap = 0;
	struct sym_func *f = NULL;
	const char *prev_name = NULL;
	int err = line_info__bounds(li, &b, &nb);

	*out = NULL;
	*nout = 0;
	if (err)
		return err;
	cap = nb;
	for (size_t t = 0; t < st->ntables; t++)
		for (size_t i = 0; i < st->tables[t].n; i++) {
			const struct sym_rec *r = &st->tables[t].recs[i];

			if (vec_reserve((void **)&b, &cap, nb + 2, sizeof(*b))) {
				free(b);
				return -ENOMEM;
			}
			b[nb++] = r->addr;
			b[nb++] = r->limit;
		}
	/* A lookup per piece: past this, the background writer would run
	 * for minutes; such a module keeps its DWARF path. */
	if (nb > FUNCTION_INDEX_MAX_BOUNDS) {
		free(b);
		return -E2BIG;
	}
	if (nb)
		qsort(b, nb, sizeof(*b), cmp_u64);
	for (size_t i = 0; i + 1 < nb && !err; i++) {
		struct stacksnap_sym sym[SCOPE_MAX];
		uint64_t entry = 0;
		const char *name = NULL;
		struct sym_func *p;
		int n;

		if (b[i] == b[i + 1])
			continue;
		n = symbolize__lookup_entry(st, li, b[i], SYM_NO_LINES | SYM_FUNCTION_ONLY,
					    sym, SCOPE_MAX, &entry);
		if (n > 0)
			name = sym[n - 1].function;
		if (!name)
			entry = 0;
		if (nf && f[nf - 1].entry == entry &&
		    (name ? prev_name && !strcmp(name, prev_name) : !prev_name))
			continue;
		if (!(p = VEC_PUSH(f, nf, fcap))) {
			err = -ENOMEM;
			break;
		}
		*p = (struct sym_func){ b[i], entry, SYM_FUNC_NONE, 0 };
		if (name && prev_name && !strcmp(name, prev_name))
			p->name_off = f[nf - 2].name_off;
		else if (name)
			err = strbuf_add(sb, name, &p->name_off);
		prev_name = name;
	}
	if (!err && nf) { /* the end of the last piece */
		struct sym_func *p = VEC_PUSH(f, nf, fcap);

		if (!p)
			err = -ENOMEM;
		else
			*p = (struct sym_func){ b[nb - 1], 0, SYM_FUNC_NONE, 0 };
	}
	free(b);
	if (err) {
		free(f);
		return err;
	}
	*out = f;
	*nout = nf;
	return 0;
}

int symtab__store(struct symtab *st, struct line_info *li, bool functions,
		  const char *cache_dir, const struct log_sink *log)
{
	struct sym_cache_view v = { 0 };
	struct strbuf sb = { 0 };
	struct sym_func *funcs = NULL;
	int err;

	if (!cache_dir || !symtab__store_pending(st, functions))
		return -EINVAL;
	/* Mapped tables go into the new file only once all their bytes
	 * were checked: a corrupt file is not sealed again as valid. */
	if (st->cache && !sym_cache__check_all(st->cache) && !rebuild(st))
		return -ENOMEM;
	st->stored = true;
	st->functions_tried |= functions;
	if (functions)
		v.flags |= SYM_CACHE_FUNCTIONS;
	v.source_key = st->source_key;
	v.ntables = (unsigned)st->ntables;
	for (size_t t = 0; t < st->ntables; t++) {
		v.recs[t] = st->tables[t].recs;
		v.nrecs[t] = st->tables[t].n;
	}
	if (!(sb.s = malloc(st->strs_len)))
		return -ENOMEM;
	memcpy(sb.s, st->strs, st->strs_len);
	sb.n = sb.cap = st->strs_len;
	if (li && (err = line_info__cu_index(li, &v.ranges, &v.nranges)))
		goto out;
	/* Too big a DWARF to index: the file still saves the symbols. */
	if (functions && li &&
	    function_index(st, li, &sb, &funcs, &v.nfuncs) == -ENOMEM) {
		err = -ENOMEM;
		goto out;
	}
	v.funcs = funcs;
	v.strs = sb.s;
	v.strs_len = sb.n;
	struct cache_source srcs[SYM_CACHE_MAX_SOURCES];
	size_t nsrcs = sources_of(st->imgs, st->nimgs, srcs);
	err = sym_cache__store(cache_dir, st->imgs[0]->build_id,
			       st->imgs[0]->build_id_len, &v, srcs, nsrcs, log);
out:
	free(funcs);
	free(sb.s);
	return err;
}

bool symtab__function(struct symtab *st, uint64_t vaddr,
		      const char **function, uint64_t *offset)
{
	const struct sym_cache_view *v;
	const struct sym_func *f;
	size_t lo = 0, hi;

	if (!st || !st->cache || st->corrupt)
		return false;
	v = sym_cache__view(st->cache);
	hi = v->nfuncs;
	if (hi < 2)
		return false;
	while (lo < hi) { /* the first piece with lo > vaddr */
		size_t mid = lo + (hi - lo) / 2;

		f = &v->funcs[mid];
		if (!sym_cache__check(st->cache, f, sizeof(*f)))
			return false;
		if (f->lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Before the first piece or from the end of the last: not covered. */
	if (lo == 0 || lo == v->nfuncs)
		return false;
	f = &v->funcs[lo - 1];
	if (!sym_cache__check(st->cache, f, sizeof(*f)) || f->flags)
		return false;
	if (f->name_off == SYM_FUNC_NONE) {
		*function = NULL;
		*offset = 0;
		return true;
	}
	if (!(*function = sym_cache__string(st->cache, f->name_off, 0)))
		return false;
	*offset = f->entry ? vaddr - f->entry : 0;
	return true;
}

struct sym_cache *symtab__cache(const struct symtab *st)
{
	return st && st->cache && !st->corrupt ? st->cache : NULL;
}

void symtab__free(struct symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->dcap; i++) {
		if (st->disp[i].display_owned)
			free((void *)st->disp[i].display);
		if (st->disp[i].mangled_owned)
			free((void *)st->disp[i].mangled);
	}
	free(st->disp);
	for (size_t t = 0; t < SYMTAB_MAX_IMAGES; t++)
		free(st->owned_recs[t]);
	free(st->owned_strs);
	sym_cache__free(st->cache);
	sym_cache__free(st->retired);
	free(st);
}

/* A record of table t that a lookup may use: in a mapped table, its block
 * checked and its fields in bounds; otherwise corrupt is set and a record
 * that covers nothing is returned, which ends the lookup. */
static const struct sym_rec *rec_at(struct symtab *st, const struct sym_table *t,
				    size_t i)
{
	static const struct sym_rec none = { 0, 0, 0, 0, SYM_REC_SIZED, 0 };
	const struct sym_rec *r = &t->recs[i];

	if (!st->cache)
		return r;
	if (st->corrupt || !sym_cache__check(st->cache, r, sizeof(*r)) ||
	    r->limit < r->addr || (r->flags & ~SYM_REC_FLAGS) || r->reserved ||
	    !sym_cache__string(st->cache, r->name_off, r->name_len)) {
		st->corrupt = true;
		return &none;
	}
	return r;
}

/* gdb's minimal-symbol choice inside one table: the last of the symbols
 * at the highest address <= vaddr (sorted by name), stepping back to a
 * global alias of the same size over a local one; a zero-sized symbol
 * only when no sized one covers vaddr. */
static const struct sym_rec *table_lookup(struct symtab *st,
					  const struct sym_table *t,
					  uint64_t vaddr)
{
	size_t lo = 0, hi = t->n;
	ssize_t i, zero = -1;

#define REC(k) rec_at(st, t, (size_t)(k))
#define SIZED(r) ((r)->flags & SYM_REC_SIZED)
#define LOCAL(r) ((r)->flags & SYM_REC_LOCAL)
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (REC(mid)->addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = (ssize_t)lo - 1;
	while (i >= 0 && !st->corrupt) {
		const struct sym_rec *e = REC(i);

		if (!SIZED(e)) {
			if (zero < 0)
				zero = i;
			i--;
			continue;
		}
		while (i > 0 && LOCAL(e) && REC(i - 1)->addr == e->addr &&
		       SIZED(REC(i - 1)) && REC(i - 1)->limit == e->limit &&
		       !LOCAL(REC(i - 1)))
			e = REC(--i);
		if (vaddr >= e->limit) {
			/* A sized symbol ending before vaddr may sit inside a
			 * bigger one that still covers it. */
			if (i > 0 && SIZED(REC(i - 1)) && vaddr < REC(i - 1)->limit) {
				i--;
				continue;
			}
			break;
		}
		return st->corrupt ? NULL : e;
	}
	if (zero >= 0 && vaddr < REC(zero)->limit && !st->corrupt)
		return REC(zero);
	return NULL;
#undef REC
#undef SIZED
#undef LOCAL
}

static const char *rec_name(const struct symtab *st, const struct sym_rec *r)
{
	return st->strs + r->name_off;
}

static size_t hash_rec(const struct sym_rec *r)
{
	uint64_t x = (uint64_t)(uintptr_t)r;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

/* The display slot of r, made on first use; NULL when out of memory. */
static struct display_slot *display_slot(struct symtab *st,
					 const struct sym_rec *r)
{
	struct display_slot *s;

	if ((st->ndisp + 1) * 2 > st->dcap) {
		size_t ncap = st->dcap ? st->dcap * 2 : 64;
		struct display_slot *nd = calloc(ncap, sizeof(*nd));

		if (!nd)
			return NULL;
		for (size_t i = 0; i < st->dcap; i++) {
			size_t j;

			if (!st->disp[i].rec)
				continue;
			for (j = hash_rec(st->disp[i].rec) & (ncap - 1); nd[j].rec;
			     j = (j + 1) & (ncap - 1))
				;
			nd[j] = st->disp[i];
		}
		free(st->disp);
		st->disp = nd;
		st->dcap = ncap;
	}
	for (size_t i = hash_rec(r) & (st->dcap - 1);; i = (i + 1) & (st->dcap - 1)) {
		s = &st->disp[i];
		if (s->rec == r)
			return s;
		if (!s->rec) {
			s->rec = r;
			st->ndisp++;
			return s;
		}
	}
}

/* The name gdb prints for r: version dropped, demangled, gdb's other
 * renamings; made once per record. */
static const char *display_name(struct symtab *st, const struct sym_rec *r,
				int no_demangle)
{
	const char *name = rec_name(st, r);
	struct display_slot *slot;
	const char **out;
	char *s;

	slot = display_slot(st, r);
	if (!slot) /* out of memory: the raw name is still a fine answer */
		return name;
	if (r->flags & SYM_REC_PLT) {
		/* "foo@plt", foo demangled whatever no_demangle says (perf's
		 * and gdb's name for the stub). */
		if (slot->display)
			return slot->display;
		size_t bl = r->name_len >= 4 ? r->name_len - 4 : 0;
		char *raw = strndup(name, bl), *dem = raw ? demangle(raw) : NULL;

		free(raw);
		if (!dem || asprintf(&s, "%s@plt", dem) < 0) {
			free(dem);
			return slot->display = name;
		}
		free(dem);
		slot->display_owned = true;
		return slot->display = s;
	}
	out = no_demangle ? &slot->mangled : &slot->display;
	if (*out)
		return *out;
	s = sym_gdb_name(name, r->name_len, !no_demangle, false);
	if (!s)
		return name;
	if (!strcmp(s, name)) {
		free(s);
		*out = name;
		return name;
	}
	*out = s;
	if (no_demangle)
		slot->mangled_owned = true;
	else
		slot->display_owned = true;
	return s;
}

/* The symbol covering vaddr in any of st's tables: the closest start. */
static const struct sym_rec *best_entry(struct symtab *st, uint64_t vaddr)
{
	const struct sym_rec *best = NULL;

	if (!st)
		return NULL;
	for (size_t t = 0; t < st->ntables; t++) {
		const struct sym_rec *e = table_lookup(st, &st->tables[t], vaddr);

		if (e && (!best || e->addr > best->addr))
			best = e;
	}
	if (st->corrupt)
		return rebuild(st) ? best_entry(st, vaddr) : NULL;
	return best;
}

const char *symtab__lookup(struct symtab *st, uint64_t vaddr, int no_demangle,
			   uint64_t *start)
{
	const struct sym_rec *best = best_entry(st, vaddr);

	if (!best)
		return NULL;
	if (start)
		*start = best->addr;
	return display_name(st, best, no_demangle);
}

const char *symtab__lookup_range(struct symtab *st, uint64_t vaddr,
				 uint64_t *start, uint64_t *end)
{
	const struct sym_rec *best = best_entry(st, vaddr);

	if (!best)
		return NULL;
	*start = best->addr;
	*end = best->limit;
	return rec_name(st, best);
}
