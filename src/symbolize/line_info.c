/* line_info.c - file:line and inline frames for an address, read from
 * DWARF through libdw, with the function names gdb's bt would show. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "symbolize/sym_cache.h"
#include "symbolize/symbolize.h"
#include "symbolize/sym_internal.h"

/* A demangled name, keyed by the DWARF string it came from. */
struct name_slot {
	const char *key;	/* linkage name in the DWARF string section */
	char *value;		/* owned: gdb-style display name */
};

/* Invariant: dw reads img's Elf, which outlives li (the image is owned by
 * the module that owns li). names is an open-addressing table with at
 * most half its cap slots used, cap a power of two or 0. */
/* One address range of a compile unit: [lo, hi) and the offset of the
 * CU's header in .debug_info (the symbol cache's layout). */
#define cu_range sym_cu_range

struct line_info {
	Dwarf *dw;
	/* dw's ELF when the debug file's sections are compressed: only
	 * what lookups read, line tables inflated on first use (NULL: dw
	 * reads the image itself). */
	struct dwarf_mem *mem;
	bool lines_bad;		/* the line tables did not inflate */
	const struct log_sink *log;
	/* CU ranges sorted by lo, from each CU DIE's DW_AT_ranges or
	 * low/high pc: libdw's dwarf_addrdie needs .debug_aranges, which
	 * clang does not emit. */
	struct cu_range *ranges;
	size_t nranges;
	/* The index mapped from a symbol cache file instead (ranges NULL
	 * then): each range checked as a lookup touches it; a failed check
	 * drops it for ranges built from the DWARF. */
	const struct cu_range *cached;
	size_t ncached;
	struct sym_cache *cache;
	struct name_slot *names;
	size_t nnames, cap;
};

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

static int add_range(struct line_info *li, size_t *cap, uint64_t lo,
		     uint64_t hi, Dwarf_Off cu_off)
{
	if (li->nranges == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		void *p = realloc(li->ranges, ncap * sizeof(*li->ranges));

		if (!p)
			return -ENOMEM;
		li->ranges = p;
		*cap = ncap;
	}
	li->ranges[li->nranges++] = (struct cu_range){ lo, hi, cu_off };
	return 0;
}

static int cmp_off(const void *a, const void *b)
{
	Dwarf_Off x = *(const Dwarf_Off *)a, y = *(const Dwarf_Off *)b;

	return (x > y) - (x < y);
}

/* The bytes of img's section name as libdw reads them (inflated), or
 * NULL. */
static const uint8_t *section_bytes(Dwarf *dw, const char *name, size_t *len)
{
	Elf *elf = dwarf_getelf(dw);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    !(n = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(n, name))
			continue;
		if (sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			return NULL;
		*len = d->d_size;
		return d->d_buf;
	}
	return NULL;
}

/* Reads .debug_aranges (DWARF 2-5, 32- and 64-bit units, 8-byte
 * addresses) into the index, CUs by the offset of their header, which
 * also go to *listed (sorted). libdw's dwarf_getaranges would do it, but
 * mallocs a node per range and reads every CU header to find its DIE:
 * most of a warm dump's symbolization of libc. Returns 0 (a malformed
 * unit ends the reading: its CUs are then found by their DIEs) or
 * -ENOMEM. */
static int read_aranges(struct line_info *li, size_t *cap, Dwarf_Off **listed,
			size_t *nlisted)
{
	size_t len = 0, pos = 0, lcap = 0;
	const uint8_t *b = section_bytes(li->dw, ".debug_aranges", &len);

	while (b && len - pos >= 4) {
		uint64_t ulen = 0, cu = 0;
		uint32_t u32;
		uint16_t ver;
		size_t off = pos, hdr, end;
		bool dw64;

		memcpy(&u32, b + pos, 4);
		dw64 = u32 == 0xffffffffu;
		if (dw64 && len - pos < 12)
			break;
		if (dw64)
			memcpy(&ulen, b + pos + 4, 8);
		else
			ulen = u32;
		hdr = dw64 ? 12 : 4;
		if (ulen > len - pos - hdr)
			break;
		end = pos + hdr + ulen;
		/* version, CU offset, address size, segment selector size */
		if (ulen < 2 + (dw64 ? 8u : 4u) + 2)
			break;
		memcpy(&ver, b + pos + hdr, 2);
		memcpy(&cu, b + pos + hdr + 2, dw64 ? 8 : 4);
		pos += hdr + 2 + (dw64 ? 8 : 4);
		if (ver != 2 || b[pos] != 8 || b[pos + 1] != 0)
			break;
		/* Tuples start at a multiple of twice the address size. */
		pos = off + (pos + 2 - off + 15) / 16 * 16;
		if (*nlisted == lcap) {
			size_t ncap = lcap ? 2 * lcap : 256;
			void *p = realloc(*listed, ncap * sizeof(**listed));

			if (!p)
				return -ENOMEM;
			*listed = p;
			lcap = ncap;
		}
		(*listed)[(*nlisted)++] = cu;
		for (; pos + 16 <= end; pos += 16) {
			uint64_t lo, n;
			int err;

			memcpy(&lo, b + pos, 8);
			memcpy(&n, b + pos + 8, 8);
			if (!n || lo + n < lo)
				continue;
			if ((err = add_range(li, cap, lo, lo + n, cu)))
				return err;
		}
		pos = end;
	}
	if (*nlisted)
		qsort(*listed, *nlisted, sizeof(**listed), cmp_off);
	return 0;
}

/* The CU address index: .debug_aranges where the producer wrote it (gcc
 * does; reading it is ten times cheaper than opening every CU), and the
 * CU DIE's own ranges for the CUs it leaves out (clang writes none). */
static int index_cus(struct line_info *li)
{
	Dwarf_Off off = 0, next, *listed = NULL;
	size_t hsize, cap = 0, nar = 0;
	int err;

	if ((err = read_aranges(li, &cap, &listed, &nar)))
		goto out;
	while (dwarf_nextcu(li->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Off hdr_off = off;
		Dwarf_Die cu;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t it = 0;

		off = next;
		if (nar && bsearch(&hdr_off, listed, nar, sizeof(*listed), cmp_off))
			continue;
		if (!dwarf_offdie(li->dw, hdr_off + hsize, &cu))
			continue;
		while ((it = dwarf_ranges(&cu, it, &base, &lo, &hi)) > 0)
			if (hi > lo && (err = add_range(li, &cap, lo, hi, hdr_off)))
				goto out;
	}
	if (li->nranges)
		qsort(li->ranges, li->nranges, sizeof(*li->ranges), cmp_range);
out:
	free(listed);
	return err;
}

/* The DIE of the CU whose header is at hdr_off. */
static bool cu_die(Dwarf *dw, Dwarf_Off hdr_off, Dwarf_Die *cu)
{
	Dwarf_Off next;
	size_t hsize;

	return dwarf_nextcu(dw, hdr_off, &next, &hsize, NULL, NULL, NULL) == 0 &&
	       dwarf_offdie(dw, hdr_off + hsize, cu) != NULL;
}

/* Range i of the index in use; NULL when a mapped one fails its check
 * (then li->cache is dropped). */
static const struct cu_range *range_at(struct line_info *li, size_t i)
{
	const struct cu_range *r;

	if (!li->cache)
		return &li->ranges[i];
	r = &li->cached[i];
	if (sym_cache__check(li->cache, r, sizeof(*r)))
		return r;
	log_info(li->log, "symbol cache file corrupt; CU index read again");
	li->cache = NULL;
	li->cached = NULL;
	li->ncached = 0;
	return NULL;
}

/* The CU containing vaddr: our index first, then libdw's aranges. */
static bool find_cu(struct line_info *li, uint64_t vaddr, Dwarf_Die *cu)
{
	size_t lo = 0, hi = li->cache ? li->ncached : li->nranges;
	const struct cu_range *r;

	while (lo < hi) { /* last range with lo <= vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (!(r = range_at(li, mid)))
			goto again;
		if (r->lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges of different CUs may nest (rarely); look back a little. */
	for (size_t i = lo, k = 0; i-- > 0 && k < 8; k++) {
		if (!(r = range_at(li, i)))
			goto again;
		if (vaddr < r->hi)
			return cu_die(li->dw, r->cu_off, cu);
	}
	return dwarf_addrdie(li->dw, vaddr, cu) != NULL;
again:
	if (index_cus(li))
		return false;
	return find_cu(li, vaddr, cu);
}

int line_info__open(const struct elf_image *img, const struct log_sink *log,
		    struct line_info **out)
{
	return line_info__open_cached(img, NULL, log, out);
}

int line_info__open_cached(const struct elf_image *img, struct symtab *st,
			   const struct log_sink *log, struct line_info **out)
{
	struct sym_cache *c = symtab__cache(st);
	struct line_info *li;
	struct dwarf_mem *mem = NULL;
	Dwarf *dw;
	int err;

	*out = NULL;
	if (!img || !img->elf || !img->has_dwarf_info)
		return 0;
	err = dwarf_mem__open(img->elf, img->bytes, img->size, &mem);
	if (err == -ENOMEM)
		return fail(err);
	if (err)
		log_info(log, "%s: compressed DWARF section does not inflate; "
			 "reading it through libdw", img->path);
	dw = dwarf_begin_elf(mem ? dwarf_mem__elf(mem) : img->elf, DWARF_C_READ,
			     NULL);
	if (!dw) {
		log_info(log, "%s: DWARF unreadable: %s", img->path,
			 dwarf_errmsg(-1));
		dwarf_mem__free(mem);
		return 0;
	}
	li = calloc(1, sizeof(*li));
	if (!li) {
		dwarf_end(dw);
		dwarf_mem__free(mem);
		return fail(-ENOMEM);
	}
	li->dw = dw;
	li->mem = mem;
	li->log = log;
	if (c && sym_cache__view(c)->nranges) {
		li->cache = c;
		li->cached = sym_cache__view(c)->ranges;
		li->ncached = sym_cache__view(c)->nranges;
	} else if (index_cus(li)) {
		line_info__free(li);
		return fail(-ENOMEM);
	}
	*out = li;
	return 0;
}

int line_info__cu_index(struct line_info *li, const struct sym_cu_range **ranges,
			size_t *n)
{
	if (li->cache) {
		li->cache = NULL;
		li->cached = NULL;
		li->ncached = 0;
		if (index_cus(li))
			return -ENOMEM;
	}
	*ranges = li->ranges;
	*n = li->nranges;
	return 0;
}

void line_info__free(struct line_info *li)
{
	if (!li)
		return;
	for (size_t i = 0; i < li->cap; i++)
		free(li->names[i].value);
	free(li->names);
	free(li->ranges);
	dwarf_end(li->dw);
	dwarf_mem__free(li->mem);
	free(li);
}

static size_t hash_ptr(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

static struct name_slot *name_find(struct line_info *li, const char *key)
{
	if (!li->cap)
		return NULL;
	for (size_t i = hash_ptr(key) & (li->cap - 1);; i = (i + 1) & (li->cap - 1)) {
		if (!li->names[i].key || li->names[i].key == key)
			return &li->names[i];
	}
}

/* Caches value for key; on failure value is freed and NULL returned. */
static const char *name_put(struct line_info *li, const char *key, char *value)
{
	struct name_slot *slot;

	if ((li->nnames + 1) * 2 > li->cap) {
		size_t ncap = li->cap ? li->cap * 2 : 64;
		struct name_slot *old = li->names, *nn = calloc(ncap, sizeof(*nn));
		size_t ocap = li->cap;

		if (!nn) {
			free(value);
			return NULL;
		}
		li->names = nn;
		li->cap = ncap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].key)
				*name_find(li, old[i].key) = old[i];
		free(old);
	}
	slot = name_find(li, key);
	slot->key = key;
	slot->value = value;
	li->nnames++;
	return value;
}

/* gdb names a DWARF function by its linkage name when it has one (so libc
 * internals print as "__GI___nanosleep"), C++ ones demangled without
 * parameters; otherwise by DW_AT_name. */
/* Longest inline nesting followed; deeper chains are cut (hostile DWARF). */
#define SCOPE_DEPTH_MAX 64

/* Finds the chain of DIEs from cu down to the DIE at offset target,
 * outermost first, by descending into the child whose subtree spans the
 * offset (a DIE's children lie between it and its next sibling). libdw
 * keeps no parent links. Returns the chain length, 0 when not found. */
static int die_path(Dwarf_Die *cu, Dwarf_Off target, Dwarf_Die *path, int max)
{
	Dwarf_Die cur = *cu, child;
	int n = 0;

	while (n < max && dwarf_dieoffset(&cur) != target) {
		Dwarf_Die pick;
		bool found = false;

		if (dwarf_child(&cur, &child) != 0)
			return 0;
		do {
			if (dwarf_dieoffset(&child) > target)
				break;
			pick = child;
			found = true;
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			return 0;
		path[n++] = pick;
		cur = pick;
	}
	return n;
}

/* Does a DIE with this tag qualify the names inside it? Namespaces,
 * classes, structures, unions; for Rust also (C-like) enums, which rustc
 * marks enum classes, as gdb's determine_prefix reads them. */
static bool scope_tag(int tag, bool rust)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
	       (rust && tag == DW_TAG_enumeration_type);
}

/* C, whose functions are never inside a namespace, class or structure
 * (C17 and C23 have no constant in every dwarf.h: 0x2c, 0x3e). */
static bool c_language(int lang)
{
	return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 ||
	       lang == DW_LANG_C11 || lang == 0x2c || lang == 0x3e;
}

/* "ns::Class::name" for a function DIE without a linkage name (gcc omits
 * it for functions with internal linkage), and for every Rust function:
 * the name of the declaration the DIE refers to, qualified by the
 * namespaces and classes around that declaration, as debuggers print it.
 * gdb names Rust functions so whatever their linkage name says: rustc's
 * DW_AT_name carries the generic arguments ("generic_sleep<u8>"), its
 * scopes the impl blocks and closures ("{impl#3}", "{closure#1}").
 * NULL when it has no name. */
static char *qualified_name(Dwarf_Die *die, bool rust)
{
	Dwarf_Die decl = *die, cu, path[SCOPE_DEPTH_MAX];
	Dwarf_Attribute a;
	const char *name;
	size_t len = 0;
	char *out;
	int n;

	/* Follow DW_AT_specification / DW_AT_abstract_origin to the DIE that
	 * names the function (bounded: hostile DWARF may loop). */
	for (int hops = 0; hops < 8 && !dwarf_hasattr(&decl, DW_AT_name); hops++)
		if (!dwarf_formref_die(dwarf_attr(&decl, DW_AT_specification, &a), &decl) &&
		    !dwarf_formref_die(dwarf_attr(&decl, DW_AT_abstract_origin, &a), &decl))
			break;
	name = dwarf_diename(&decl);
	if (!name || !dwarf_diecu(&decl, &cu, NULL, NULL))
		return NULL;
	/* C has no scopes that qualify a function: the name as it is. The
	 * path down to the DIE skips every DIE before it, children parsed
	 * (most of a cold dump's lookups in python3's LTO units). */
	if (c_language(dwarf_srclang(&cu)))
		return strdup(name);
	n = die_path(&cu, dwarf_dieoffset(&decl), path, SCOPE_DEPTH_MAX);
	for (int i = 0; i < n - 1; i++) {
		const char *sn = dwarf_diename(&path[i]);
		int tag = dwarf_tag(&path[i]);

		if (scope_tag(tag, rust))
			len += strlen(sn ? sn : "(anonymous namespace)") + 2;
	}
	out = malloc(len + strlen(name) + 1);
	if (!out)
		return NULL;
	out[0] = 0;
	for (int i = 0; i < n - 1; i++) {
		const char *sn = dwarf_diename(&path[i]);
		int tag = dwarf_tag(&path[i]);

		if (scope_tag(tag, rust)) {
			strcat(out, sn ? sn : "(anonymous namespace)");
			strcat(out, "::");
		}
	}
	strcat(out, name);
	return out;
}

/* rust: the DIE is in a Rust CU. */
static const char *die_function_name(struct line_info *li, Dwarf_Die *die,
				     int no_demangle, bool rust)
{
	Dwarf_Attribute a;
	const char *link = NULL;
	struct name_slot *slot;
	char *d;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		link = dwarf_formstring(&a);
	if (!link || (rust && !no_demangle)) {
		/* Cached under the DIE's own bytes, unique per DIE (a name
		 * string is shared by every function of that name). */
		const char *key = (const char *)die->addr;

		slot = name_find(li, key);
		if (slot && slot->key)
			return slot->value;
		d = qualified_name(die, rust);
		const char *q = d ? name_put(li, key, d) : NULL; /* frees d on failure */
		if (q)
			return q;
		return dwarf_attr_integrate(die, DW_AT_name, &a)
			       ? dwarf_formstring(&a)
			       : NULL;
	}
	if (no_demangle || strncmp(link, "_Z", 2) != 0)
		return link;
	slot = name_find(li, link);
	if (slot && slot->key)
		return slot->value;
	d = sym_gdb_name(link, strlen(link), true, true);
	if (!d)
		return link;
	return name_put(li, link, d) ?: link;
}

static const char *file_name(Dwarf_Files *files, Dwarf_Word idx)
{
	if (!files)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

/* DIEs visited per lookup before giving up (hostile or huge CUs). */
#define SCOPE_VISIT_MAX 2000000

static bool is_function(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* Walks the CU's concrete DIE tree down to pc, filling chain[]
 * outermost first with the subprogram and the inline instances around
 * pc. (dwarf_getscopes would do it, but it follows abstract origins
 * instead of the concrete callers and leaks on malformed DWARF.)
 * The assembler emits one subprogram per symbol of a function (getgid,
 * __getgid, __GI_getgid at one address); gdb's block search ends on the
 * last of them, so with last_match the last top-level match is taken. */
static int scope_chain(Dwarf_Die *cu, uint64_t pc, bool last_match,
		       Dwarf_Die *chain, int max)
{
	Dwarf_Die cur = *cu, child;
	int n = 0;
	long visits = 0;

	while (n < max && dwarf_child(&cur, &child) == 0) {
		bool found = false;
		Dwarf_Die pick;

		do {
			int tag = dwarf_tag(&child);

			if (++visits > SCOPE_VISIT_MAX)
				return n;
			if (tag == DW_TAG_namespace && n == 0 &&
			    dwarf_haschildren(&child) > 0) {
				/* Functions inside namespaces: look in. */
				int k = scope_chain(&child, pc, last_match, chain, max);

				if (k > 0)
					return k;
				continue;
			}
			if (!is_function(tag) && tag != DW_TAG_lexical_block)
				continue;
			if (dwarf_haspc(&child, pc) <= 0)
				continue;
			pick = child;
			found = true;
			if (!(last_match && n == 0 && tag == DW_TAG_subprogram))
				break;
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
		if (is_function(dwarf_tag(&pick)))
			chain[n++] = pick;
		cur = pick;
	}
	return n;
}

/* Are the line tables readable (inflated first if deferred)? */
static bool lines_ready(struct line_info *li)
{
	if (!li->mem || li->lines_bad)
		return !li->lines_bad;
	if (dwarf_mem__fill_deferred(li->mem)) {
		log_info(li->log, "line tables do not inflate: no file:line");
		li->lines_bad = true;
	}
	return !li->lines_bad;
}

int line_info__lookup_entry(struct line_info *li, uint64_t vaddr,
			    unsigned flags, struct stacksnap_sym *out,
			    size_t max, uint64_t *entry)
{
	int no_demangle = !!(flags & SYM_NO_DEMANGLE);
	Dwarf_Die cudie, scopes[SCOPE_DEPTH_MAX];
	Dwarf_Line *line;
	Dwarf_Files *files = NULL;
	size_t nfiles;
	const char *file = NULL;
	int lineno = 0, col = 0, nscopes, n = 0;
	bool asm_cu, rust_cu;

	if (entry)
		*entry = 0;
	if (!li || !max)
		return 0;
	if (!find_cu(li, vaddr, &cudie))
		return 0;
	/* Decoding a CU's line program costs milliseconds: only for lines. */
	line = flags & SYM_NO_LINES || !lines_ready(li)
		       ? NULL
		       : dwarf_getsrc_die(&cudie, vaddr);
	if (line) {
		file = dwarf_linesrc(line, NULL, NULL);
		dwarf_lineno(line, &lineno);
		dwarf_linecol(line, &col);
	}
	/* The files of inline call sites: read from the line table, which
	 * a caller that wants only the function need not inflate. */
	if (flags & SYM_FUNCTION_ONLY || !lines_ready(li) ||
	    dwarf_getsrcfiles(&cudie, &files, &nfiles) != 0)
		files = NULL;
	int lang = dwarf_srclang(&cudie);
	asm_cu = lang == DW_LANG_Mips_Assembler;
	rust_cu = lang == DW_LANG_Rust;
	nscopes = scope_chain(&cudie, vaddr, asm_cu, scopes, SCOPE_DEPTH_MAX);
	/* A caller that wants only the containing function gets it even in
	 * a short buffer: its last slot is written again, scope by scope, up
	 * to the subprogram (else one slot would hold the innermost inline). */
	bool function_only = flags & SYM_FUNCTION_ONLY;
	for (int i = nscopes - 1; i >= 0 && (function_only || (size_t)n < max); i--) {
		Dwarf_Die *s = &scopes[i];
		int tag = dwarf_tag(s);
		struct stacksnap_sym *o;
		Dwarf_Attribute a;
		Dwarf_Word w;

		if ((size_t)n < max)
			o = &out[n++];
		else
			o = &out[max - 1];
		o->function = die_function_name(li, s, no_demangle, rust_cu);
		o->file = file;
		o->line = lineno;
		o->column = col;
		o->inlined = tag == DW_TAG_inlined_subroutine;
		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr pc;

			if (entry && dwarf_lowpc(s, &pc) == 0)
				*entry = pc;
			else if (entry && dwarf_entrypc(s, &pc) == 0)
				*entry = pc;
			break;
		}
		/* The caller's location is this inline's call site. */
		file = dwarf_formudata(dwarf_attr(s, DW_AT_call_file, &a), &w) == 0
			       ? file_name(files, w)
			       : NULL;
		lineno = dwarf_formudata(dwarf_attr(s, DW_AT_call_line, &a), &w) == 0
				 ? (int)w
				 : 0;
		col = dwarf_formudata(dwarf_attr(s, DW_AT_call_column, &a), &w) == 0
			      ? (int)w
			      : 0;
	}
	if (n == 0 && line && max) {
		/* Line info without a subprogram (assembly): keep the line. */
		memset(&out[0], 0, sizeof(out[0]));
		out[0].file = file;
		out[0].line = lineno;
		out[0].column = col;
		n = 1;
	}
	return n;
}

int line_info__lookup(struct line_info *li, uint64_t vaddr, int no_demangle,
		      struct stacksnap_sym *out, size_t max)
{
	return line_info__lookup_entry(li, vaddr, no_demangle ? SYM_NO_DEMANGLE : 0,
				       out, max, NULL);
}

/* Addresses where what scope_chain finds may change, for the function
 * index: DIE ranges of the functions it can reach. */
struct bounds {
	uint64_t *v;
	size_t n, cap;
	unsigned long dies;	/* visited, against BOUNDS_DIES_MAX */
};

/* DIEs visited to index one module; past it the module gets no function
 * index (its lookups go through libdw, as without the cache). */
#define BOUNDS_DIES_MAX 50000000ul

static int push_ranges(struct bounds *b, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t it = 0;

	while ((it = dwarf_ranges(die, it, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (vec_reserve((void **)&b->v, &b->cap, b->n + 2, sizeof(*b->v)))
			return -ENOMEM;
		b->v[b->n++] = lo;
		b->v[b->n++] = hi;
	}
	return 0;
}

/* The functions and blocks scope_chain may descend into below die. With
 * push, their ranges are added. Returns 1 when a subprogram is nested
 * there (then which one is innermost depends on every block's range),
 * 0, or -errno. */
static int inner_bounds(struct bounds *b, Dwarf_Die *die, int depth, bool push)
{
	Dwarf_Die child;
	int nested = 0, err;

	if (depth >= SCOPE_DEPTH_MAX || dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);

		if (++b->dies > BOUNDS_DIES_MAX)
			return -E2BIG;
		if (!is_function(tag) && tag != DW_TAG_lexical_block)
			continue;
		if (tag == DW_TAG_subprogram)
			nested = 1;
		if (push && (err = push_ranges(b, &child)))
			return err;
		if ((err = inner_bounds(b, &child, depth + 1, push)) < 0)
			return err;
		nested |= err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return nested;
}

/* The top-level functions of a CU or namespace, as scope_chain sees them. */
static int top_bounds(struct bounds *b, Dwarf_Die *parent, int depth)
{
	Dwarf_Die child;
	int err;

	if (depth >= SCOPE_DEPTH_MAX || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);

		if (++b->dies > BOUNDS_DIES_MAX)
			return -E2BIG;
		if (tag == DW_TAG_namespace) {
			if ((err = top_bounds(b, &child, depth + 1)))
				return err;
			continue;
		}
		if (!is_function(tag) && tag != DW_TAG_lexical_block)
			continue;
		if ((err = push_ranges(b, &child)))
			return err;
		/* Inline and block ranges matter only around a nested
		 * subprogram: the innermost subprogram names the frame. */
		if ((err = inner_bounds(b, &child, 1, false)) < 0 ||
		    (err && (err = inner_bounds(b, &child, 1, true)) < 0))
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

int line_info__bounds(struct line_info *li, uint64_t **out, size_t *n)
{
	struct bounds b = { 0 };
	const struct cu_range *r;
	size_t nr;
	int err = line_info__cu_index(li, &r, &nr);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	for (size_t i = 0; i < nr && !err; i++) {
		if (vec_reserve((void **)&b.v, &b.cap, b.n + 2, sizeof(*b.v))) {
			err = -ENOMEM;
			break;
		}
		b.v[b.n++] = r[i].lo;
		b.v[b.n++] = r[i].hi;
	}
	for (Dwarf_Off off = 0, next; !err;) {
		size_t hsize;
		Dwarf_Die cu;

		if (dwarf_nextcu(li->dw, off, &next, &hsize, NULL, NULL, NULL))
			break;
		if (dwarf_offdie(li->dw, off + hsize, &cu))
			err = top_bounds(&b, &cu, 0);
		off = next;
	}
	if (err) {
		free(b.v);
		return err;
	}
	*out = b.v;
	*n = b.n;
	return 0;
}

int symbolize__lookup(struct symtab *st, struct line_info *li, uint64_t vaddr,
		      unsigned flags, struct stacksnap_sym *out, size_t max)
{
	uint64_t entry;

	return symbolize__lookup_entry(st, li, vaddr, flags, out, max, &entry);
}

int symbolize__lookup_entry(struct symtab *st, struct line_info *li,
			    uint64_t vaddr, unsigned flags,
			    struct stacksnap_sym *out, size_t max,
			    uint64_t *entry_out)
{
	int no_demangle = !!(flags & SYM_NO_DEMANGLE);
	uint64_t entry = 0, mstart = 0;
	const char *msym;
	int n;

	*entry_out = 0;
	if (!max)
		return 0;
	for (size_t i = 0; i < max; i++)
		memset(&out[i], 0, sizeof(out[i]));
	n = line_info__lookup_entry(li, vaddr, flags, out, max, &entry);
	if (n < 0)
		n = 0;
	msym = symtab__lookup(st, vaddr, no_demangle, &mstart);
	if (n == 0) {
		if (!msym)
			return 0;
		out[0].function = msym;
		out[0].offset = vaddr - mstart;
		*entry_out = mstart;
		return 1;
	}
	/* gdb's bt (find_frame_funname) names a frame by its DWARF function
	 * whenever there is one, also inside a ".cold" part the function's
	 * ranges cover; the minimal symbol only when there is none. */
	if (!out[n - 1].inlined && msym && !out[n - 1].function) {
		out[n - 1].function = msym;
		entry = mstart;
	}
	/* A function in several ranges (gcc's hot/cold split: libc's
	 * _IO_new_file_underflow) has neither DW_AT_low_pc nor, mostly,
	 * DW_AT_entry_pc: the offset is from the ELF symbol around the
	 * address (the function's own, or its ".cold" part's), as gdb's
	 * x/i and perf count it — not from 0. */
	if (!entry && msym && vaddr >= mstart)
		entry = mstart;
	for (int i = 0; i < n; i++)
		out[i].offset = entry ? vaddr - entry : 0;
	*entry_out = entry;
	return n;
}
