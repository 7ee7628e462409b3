/* symtab.c - a module's function-symbol index, answering "which symbol
 * contains this address" with the name gdb would show for its minimal
 * symbols (the same alias among many at one address, the same sized-symbol
 * rules). */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/vec.h"
#include "symbolize/symbolize.h"
#include "symbolize/sym_internal.h"

/* One ELF symbol usable as a code location. name points into the ELF
 * string table (it lives as long as the image); name_len excludes a
 * "@@VERSION" or "@VERSION" suffix. display is computed on first lookup
 * (version dropped, demangled, gdb's other renamings); it is name itself
 * when that needs no change, else malloc'ed (owned; see display_owned). */
struct sym_entry {
	uint64_t addr;
	uint64_t limit;	/* end of the symbol, or of its section when size 0 */
	const char *name;
	const char *display;
	const char *display_mangled; /* the same without demangling */
	uint32_t name_len;
	uint32_t size_nonzero : 1;
	uint32_t is_local : 1;
	uint32_t display_owned : 1;
	uint32_t mangled_owned : 1;
};

/* The symbols of one "objfile" in gdb's sense: the main image, or one
 * separate debug image. Invariant: syms sorted by (addr, stripped name). */
struct sym_table {
	struct sym_entry *syms;
	size_t n, cap;
};

/* Invariant: tables[0] is the main image's; a later table wins only with
 * a symbol at a strictly higher address (gdb's rule across objfiles). */
struct symtab {
	struct sym_table tables[SYMTAB_MAX_IMAGES];
	size_t ntables;
	char *plt_names;	/* the "foo@plt" names of tables[0], NUL-separated */
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

static bool same_name(const struct sym_entry *a, const struct sym_entry *b)
{
	return a->name_len == b->name_len && !memcmp(a->name, b->name, a->name_len);
}

/* Adds the code symbols of one SHT_SYMTAB/SHT_DYNSYM section. gdb takes
 * every symbol of an executable section except section and file symbols
 * as a text minimal symbol, whatever its type. */
static int add_symbols(struct sym_table *t, const struct elf_image *img,
		       Elf_Scn *scn, const GElf_Shdr *sh,
		       const struct log_sink *log)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count;

	if (!data || !sh->sh_entsize || sh->sh_entsize < sizeof(Elf64_Sym))
		return 0;
	count = data->d_size / sizeof(Elf64_Sym);
	for (size_t i = 1; i < count; i++) {
		GElf_Sym s;
		GElf_Shdr tsh;
		Elf_Scn *tscn;
		const char *name, *at;
		struct sym_entry *e;
		int type;

		if (!gelf_getsym(data, (int)i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (type == STT_SECTION || type == STT_FILE || type == STT_TLS ||
		    s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)
			continue;
		tscn = elf_getscn(img->elf, s.st_shndx);
		if (!tscn || !gelf_getshdr(tscn, &tsh) ||
		    !(tsh.sh_flags & SHF_EXECINSTR))
			continue;
		name = elf_strptr(img->elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		e = VEC_PUSH(t->syms, t->n, t->cap);
		if (!e)
			return -ENOMEM;
		memset(e, 0, sizeof(*e));
		e->addr = s.st_value;
		e->size_nonzero = s.st_size != 0;
		e->limit = s.st_size ? s.st_value + s.st_size
				     : tsh.sh_addr + tsh.sh_size;
		/* A zero-sized marker at its section's end (_etext) covers
		 * nothing: limit == addr. */
		if (e->limit < e->addr)
			e->limit = e->addr;
		e->name = name;
		at = strchr(name, '@');
		/* "foo@plt"-style names are gdb's synthetic ones; keep them. */
		e->name_len = (uint32_t)(at && at != name ? (size_t)(at - name)
							  : strlen(name));
		e->is_local = GELF_ST_BIND(s.st_info) == STB_LOCAL;
	}
	(void)log;
	return 0;
}

static int load_table(struct sym_table *t, const struct elf_image *img,
		      bool dynsym_ok, const struct log_sink *log)
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
			err = add_symbols(t, img, scn, &sh, log);
			if (err)
				return err;
		}
	}
	if (!have_symtab && dynsym_ok) {
		while ((scn = elf_nextscn(img->elf, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM) {
				err = add_symbols(t, img, scn, &sh, log);
				if (err)
					return err;
			}
		}
	}
	if (t->n)
		qsort(t->syms, t->n, sizeof(*t->syms), cmp_entry);
	/* Duplicates (a name in both versions "x@@V" and "x", or the same
	 * symbol twice) collapse as gdb compacts them. */
	if (t->n) {
		size_t w = 1;

		for (size_t r = 1; r < t->n; r++) {
			struct sym_entry *p = &t->syms[w - 1];

			if (p->addr == t->syms[r].addr && same_name(p, &t->syms[r]) &&
			    p->size_nonzero == t->syms[r].size_nonzero) {
				p->is_local &= t->syms[r].is_local;
				continue;
			}
			t->syms[w++] = t->syms[r];
		}
		t->n = w;
	}
	return 0;
}

/* PLT stubs have no symbol; gdb and perf name each after the function
 * its jump slot resolves: "foo@plt" (perf demangles foo first). Entry i
 * of .rela.plt's relocations is the 16-byte stub i of .plt.sec
 * when the link has one (IBT), else of .plt after its 16-byte header.
 * Added to the main image's table; names kept in *names. */
static int add_plt_symbols(struct sym_table *t, const struct elf_image *img,
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
		char *dem;

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
		dem = demangle(name);
		const char *base = dem ? dem : name;
		size_t bl = strlen(base);

		if (vec_reserve((void **)&buf, &cap, len + bl + 5, 1)) {
			free(dem);
			free(offs);
			free(buf);
			return -ENOMEM;
		}
		memcpy(buf + len, base, bl);
		memcpy(buf + len + bl, "@plt", 5);
		free(dem);
		struct sym_entry *e = VEC_PUSH(t->syms, t->n, t->cap);

		if (!e) {
			free(offs);
			free(buf);
			return -ENOMEM;
		}
		memset(e, 0, sizeof(*e));
		e->addr = at;
		e->limit = at + 16;
		e->size_nonzero = 1;
		e->name_len = (uint32_t)(bl + 4);
		offs[t->n - 1 - first] = len;
		len += bl + 5;
	}
	for (size_t i = first; i < t->n; i++) {
		struct sym_entry *e = &t->syms[i];

		e->name = e->display = e->display_mangled = buf + offs[i - first];
	}
	free(offs);
	*names = buf;
	return 0;
}

int symtab__build(const struct elf_image *const *imgs, size_t nimgs,
		  const struct log_sink *log, struct symtab **out)
{
	struct symtab *st;
	int err;

	*out = NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return fail(-ENOMEM);
	for (size_t i = 0; i < nimgs && st->ntables < SYMTAB_MAX_IMAGES; i++) {
		if (!imgs[i])
			continue;
		/* Only the main image's .dynsym counts: in debug files it is
		 * an empty NOBITS copy. */
		err = load_table(&st->tables[st->ntables++], imgs[i], i == 0, log);
		if (!err && i == 0 && (err = add_plt_symbols(&st->tables[0], imgs[0],
							     &st->plt_names)) == 0 &&
		    st->tables[0].n)
			qsort(st->tables[0].syms, st->tables[0].n, sizeof(struct sym_entry),
			      cmp_entry);
		if (err) {
			symtab__free(st);
			return fail(err);
		}
	}
	*out = st;
	return 0;
}

void symtab__free(struct symtab *st)
{
	if (!st)
		return;
	for (size_t t = 0; t < st->ntables; t++) {
		for (size_t i = 0; i < st->tables[t].n; i++) {
			struct sym_entry *e = &st->tables[t].syms[i];

			if (e->display_owned)
				free((void *)e->display);
			if (e->mangled_owned)
				free((void *)e->display_mangled);
		}
		free(st->tables[t].syms);
	}
	free(st->plt_names);
	free(st);
}

/* gdb's minimal-symbol choice inside one table: the last of the symbols
 * at the highest address <= vaddr (sorted by name), stepping back to a
 * global alias of the same size over a local one; a zero-sized symbol
 * only when no sized one covers vaddr. */
static struct sym_entry *table_lookup(struct sym_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->n;
	ssize_t i, zero = -1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = (ssize_t)lo - 1;
	while (i >= 0) {
		struct sym_entry *e = &t->syms[i];

		if (!e->size_nonzero) {
			if (zero < 0)
				zero = i;
			i--;
			continue;
		}
		while (i > 0 && e->is_local && t->syms[i - 1].addr == e->addr &&
		       t->syms[i - 1].size_nonzero &&
		       t->syms[i - 1].limit == e->limit && !t->syms[i - 1].is_local)
			e = &t->syms[--i];
		if (vaddr >= e->limit) {
			/* A sized symbol ending before vaddr may sit inside a
			 * bigger one that still covers it. */
			if (i > 0 && t->syms[i - 1].size_nonzero &&
			    vaddr < t->syms[i - 1].limit) {
				i--;
				continue;
			}
			break;
		}
		return e;
	}
	if (zero >= 0 && vaddr < t->syms[zero].limit)
		return &t->syms[zero];
	return NULL;
}

static const char *display_name(struct sym_entry *e, int no_demangle)
{
	const char **slot = no_demangle ? &e->display_mangled : &e->display;
	char *s;

	if (*slot)
		return *slot;
	s = sym_gdb_name(e->name, e->name_len, !no_demangle, false);
	if (!s) /* out of memory: the raw name is still a fine answer */
		return e->name;
	if (strlen(s) == strlen(e->name) && !strcmp(s, e->name)) {
		free(s);
		*slot = e->name;
		return *slot;
	}
	*slot = s;
	if (no_demangle)
		e->mangled_owned = 1;
	else
		e->display_owned = 1;
	return s;
}

/* The symbol covering vaddr in any of st's tables: the closest start. */
static struct sym_entry *best_entry(struct symtab *st, uint64_t vaddr)
{
	struct sym_entry *best = NULL;

	if (!st)
		return NULL;
	for (size_t t = 0; t < st->ntables; t++) {
		struct sym_entry *e = table_lookup(&st->tables[t], vaddr);

		if (e && (!best || e->addr > best->addr))
			best = e;
	}
	return best;
}

const char *symtab__lookup(struct symtab *st, uint64_t vaddr, int no_demangle,
			   uint64_t *start)
{
	struct sym_entry *best = best_entry(st, vaddr);

	if (!best)
		return NULL;
	if (start)
		*start = best->addr;
	return display_name(best, no_demangle);
}

const char *symtab__lookup_range(struct symtab *st, uint64_t vaddr,
				 uint64_t *start, uint64_t *end)
{
	struct sym_entry *best = best_entry(st, vaddr);

	if (!best)
		return NULL;
	*start = best->addr;
	*end = best->limit;
	return best->name;
}
