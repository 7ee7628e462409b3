/* gopclntab.c - reads Go's pc-line table: the header of each version, the
 * function table, names, files, pc-value tables and inline trees, every read
 * bounded by the table's bytes (see gopclntab.h). */
#include "symbolize/gopclntab.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

/* Inlined calls deeper than this end the expansion (the runtime's own
 * trees are a few levels deep; a loop in a corrupt tree must end). */
#define GO_MAX_INLINE_DEPTH 64

static bool in_range(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static bool t_u32(const struct gopclntab *t, uint64_t off, uint32_t *v)
{
	if (!in_range(t->size, off, 4))
		return false;
	*v = rd32(t->data + off);
	return true;
}

static bool t_u64(const struct gopclntab *t, uint64_t off, uint64_t *v)
{
	if (!in_range(t->size, off, 8))
		return false;
	*v = rd64(t->data + off);
	return true;
}

int gopclntab__init(struct gopclntab *t, const uint8_t *data, size_t size,
		    uint64_t vaddr, const struct log_sink *log)
{
	uint64_t w[8];
	size_t nw;

	memset(t, 0, sizeof(*t));
	t->data = data;
	t->size = size;
	t->vaddr = vaddr;
	if (size < 16)
		return fail(-EINVAL);
	t->magic = rd32(data);
	switch (t->magic) {
	case GOPCLN_MAGIC_12: t->version = GOPCLN_12; break;
	case GOPCLN_MAGIC_116: t->version = GOPCLN_116; break;
	case GOPCLN_MAGIC_118: t->version = GOPCLN_118; break;
	case GOPCLN_MAGIC_120: t->version = GOPCLN_120; break;
	default:
		log_warn(log, "gopclntab: unknown magic %#x", t->magic);
		return fail(-EPROTONOSUPPORT);
	}
	/* pad, pad, quantum, pointer size: only 64-bit tables are read. */
	if (data[4] != 0 || data[5] != 0 || data[7] != 8 ||
	    (data[6] != 1 && data[6] != 2 && data[6] != 4)) {
		log_warn(log, "gopclntab: header %02x %02x %02x %02x is not a "
			 "64-bit table", data[4], data[5], data[6], data[7]);
		return fail(-EINVAL);
	}
	t->quantum = data[6];
	nw = t->version == GOPCLN_12 ? 1 : t->version == GOPCLN_116 ? 7 : 8;
	if (!in_range(size, 8, nw * 8))
		return fail(-EINVAL);
	for (size_t i = 0; i < nw; i++)
		w[i] = rd64(data + 8 + 8 * i);
	t->nfunc = w[0];
	if (t->version == GOPCLN_12) {
		/* functab right after the header: nfunc {entry, funcoff}
		 * pairs, the end pc, then the u32 offset of the file table. */
		uint32_t ft, nfiles;

		t->functab_off = 16;
		t->functab_size = (t->nfunc * 2 + 1) * 8;
		if (t->nfunc > size / 16 ||
		    !t_u32(t, t->functab_off + t->functab_size, &ft) ||
		    !t_u32(t, ft, &nfiles))
			return fail(-EINVAL);
		t->filetab_off = ft;
		t->nfiles = nfiles;
		t->func_fixed = 40;
		return 0;
	}
	t->nfiles = w[1];
	if (t->version == GOPCLN_116) {
		t->funcname_off = w[2];
		t->cutab_off = w[3];
		t->filetab_off = w[4];
		t->pctab_off = w[5];
		t->functab_off = w[6];
		t->functab_size = (t->nfunc * 2 + 1) * 8;
		t->func_fixed = 44;
	} else {
		t->text_start = w[2];
		t->funcname_off = w[3];
		t->cutab_off = w[4];
		t->filetab_off = w[5];
		t->pctab_off = w[6];
		t->functab_off = w[7];
		t->functab_size = (t->nfunc * 2 + 1) * 4;
		t->func_fixed = t->version == GOPCLN_120 ? 44 : 40;
	}
	if (t->nfunc > size / 8 || t->funcname_off > size ||
	    t->cutab_off > size || t->filetab_off > size ||
	    t->pctab_off > size ||
	    !in_range(size, t->functab_off, t->functab_size)) {
		log_warn(log, "gopclntab: header offsets beyond its %zu bytes",
			 size);
		return fail(-EINVAL);
	}
	return 0;
}

void gopclntab__add_region(struct gopclntab *t, uint64_t vaddr,
			   const uint8_t *bytes, size_t size)
{
	if (t->nregions < GOPCLN_MAX_REGIONS && bytes && size)
		t->regions[t->nregions++] = (struct gopcln_region){
			vaddr, bytes, size };
}

const uint8_t *gopclntab__bytes_at(const struct gopclntab *t, uint64_t vaddr,
				   uint64_t len)
{
	for (size_t i = 0; i < t->nregions; i++) {
		const struct gopcln_region *r = &t->regions[i];

		if (vaddr >= r->vaddr && in_range(r->size, vaddr - r->vaddr, len))
			return r->bytes + (vaddr - r->vaddr);
	}
	return NULL;
}

/* Entry address and _func offset of functab entry i (i <= nfunc). */
static bool functab_entry(const struct gopclntab *t, uint64_t i,
			  uint64_t *entry, uint64_t *funcoff)
{
	uint64_t base = t->functab_off;

	if (t->version == GOPCLN_118 || t->version == GOPCLN_120) {
		uint32_t e, o;

		if (!t_u32(t, base + i * 8, &e) || !t_u32(t, base + i * 8 + 4, &o))
			return false;
		*entry = t->text_start + e;
		*funcoff = base + o;
		return true;
	}
	if (!t_u64(t, base + i * 16, entry))
		return false;
	if (i == t->nfunc) {
		*funcoff = 0;
		return true;
	}
	if (!t_u64(t, base + i * 16 + 8, funcoff))
		return false;
	/* 1.16: relative to pclntable (the functab's section); 1.2: to the
	 * table's start. */
	if (t->version == GOPCLN_116)
		*funcoff += base;
	return true;
}

int gopclntab__func_at(const struct gopclntab *t, uint64_t i,
		       struct go_func *f)
{
	uint64_t entry, end, off, dummy;
	const uint8_t *p;

	if (i >= t->nfunc)
		return -ENOENT;
	if (!functab_entry(t, i, &entry, &off) ||
	    !functab_entry(t, i + 1, &end, &dummy) || end < entry ||
	    !in_range(t->size, off, t->func_fixed))
		return fail(-EINVAL);
	memset(f, 0, sizeof(*f));
	p = t->data + off;
	f->entry = entry;
	f->end = end;
	f->off = off;
	f->index = (uint32_t)i;
	switch (t->version) {
	case GOPCLN_12:
		/* entry u64, nameoff, args, deferreturn, pcsp, pcfile, pcln,
		 * npcdata, funcID, pad[2], nfuncdata */
		f->nameoff = (int32_t)rd32(p + 8);
		f->pcsp = rd32(p + 20);
		f->pcfile = rd32(p + 24);
		f->pcln = rd32(p + 28);
		f->npcdata = rd32(p + 32);
		f->funcid = p[36];
		f->nfuncdata = p[39];
		break;
	case GOPCLN_116:
		f->nameoff = (int32_t)rd32(p + 8);
		f->pcsp = rd32(p + 20);
		f->pcfile = rd32(p + 24);
		f->pcln = rd32(p + 28);
		f->npcdata = rd32(p + 32);
		f->cuoff = rd32(p + 36);
		f->funcid = p[40];
		f->nfuncdata = p[43];
		break;
	case GOPCLN_118:
	case GOPCLN_120: {
		size_t tail = t->version == GOPCLN_120 ? 40 : 36;

		if (t->text_start + rd32(p) != entry)
			return fail(-EINVAL);
		f->nameoff = (int32_t)rd32(p + 4);
		f->pcsp = rd32(p + 16);
		f->pcfile = rd32(p + 20);
		f->pcln = rd32(p + 24);
		f->npcdata = rd32(p + 28);
		f->cuoff = rd32(p + 32);
		f->funcid = p[tail];
		f->flag = p[tail + 1];
		f->nfuncdata = p[tail + 3];
		break;
	}
	}
	if (f->npcdata > 1024)
		return fail(-EINVAL);
	return 0;
}

int gopclntab__find_func(const struct gopclntab *t, uint64_t pc,
			 struct go_func *f)
{
	uint64_t lo = 0, hi = t->nfunc, first, last, dummy;

	if (t->nfunc == 0 || !functab_entry(t, 0, &first, &dummy) ||
	    !functab_entry(t, t->nfunc, &last, &dummy) || pc < first ||
	    pc >= last)
		return -ENOENT;
	/* Last entry <= pc; a table out of order just finds nothing. */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2, e;

		if (!functab_entry(t, mid, &e, &dummy))
			return fail(-EINVAL);
		if (e <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (gopclntab__func_at(t, lo, f) < 0)
		return fail(-EINVAL);
	return pc >= f->entry && pc < f->end ? 0 : -ENOENT;
}

/* A NUL-terminated string at off of data, or NULL. */
static const char *cstr_at(const struct gopclntab *t, uint64_t off)
{
	if (off >= t->size || !memchr(t->data + off, 0, t->size - off))
		return NULL;
	return (const char *)t->data + off;
}

const char *gopclntab__name_at(const struct gopclntab *t, int32_t nameoff)
{
	if (nameoff < 0)
		return NULL;
	return cstr_at(t, t->funcname_off + (uint64_t)nameoff);
}

const char *gopclntab__func_name(const struct gopclntab *t,
				 const struct go_func *f)
{
	return gopclntab__name_at(t, f->nameoff);
}

/* Offset of pc-value table tab in data: 1.16+ offsets are relative to
 * pctab, 1.2 ones to the table's start. */
static uint64_t table_off(const struct gopclntab *t, uint32_t tab)
{
	return t->version == GOPCLN_12 ? tab : t->pctab_off + tab;
}

void gopcln_iter__init(struct go_pcvalue_iter *it, const struct gopclntab *t,
		       const struct go_func *f, uint32_t tab)
{
	uint64_t off = table_off(t, tab);
	bool none = tab == 0 || off >= t->size;

	go_pcvalue_iter__init(it, none ? NULL : t->data + off,
			      t->data + t->size, f->entry, f->end, t->quantum);
	it->bad = none && tab != 0;
}

int gopclntab__pcvalue(const struct gopclntab *t, const struct go_func *f,
		       uint32_t tab, uint64_t pc, int32_t *value)
{
	struct go_pcvalue_iter it;

	*value = -1;
	gopcln_iter__init(&it, t, f, tab);
	while (go_pcvalue_iter__next(&it)) {
		if (pc >= it.pc && pc < it.next_pc) {
			*value = it.value;
			return 0;
		}
	}
	return -ENOENT;
}

uint32_t gopclntab__pcdata_table(const struct gopclntab *t,
				 const struct go_func *f, uint32_t idx)
{
	uint32_t v;

	if (idx >= f->npcdata ||
	    !t_u32(t, f->off + t->func_fixed + 4ull * idx, &v))
		return 0;
	return v;
}

const char *gopclntab__file_name(const struct gopclntab *t,
				 const struct go_func *f, int32_t fileno)
{
	uint32_t off;

	if (fileno < 0)
		return NULL;
	if (t->version == GOPCLN_12) {
		/* u32 count, then offsets from the table's start; 0 unused. */
		if ((uint64_t)fileno >= t->nfiles ||
		    !t_u32(t, t->filetab_off + 4ull * (uint64_t)fileno, &off))
			return NULL;
		return cstr_at(t, off);
	}
	if (!t_u32(t, t->cutab_off + 4ull * ((uint64_t)f->cuoff + (uint64_t)fileno),
		   &off) || off == UINT32_MAX)
		return NULL;
	return cstr_at(t, t->filetab_off + off);
}

int gopclntab__file_line(const struct gopclntab *t, const struct go_func *f,
			 uint64_t pc, const char **file, int32_t *line)
{
	int32_t fileno;
	int rl, rf;

	*file = NULL;
	*line = 0;
	rf = gopclntab__pcvalue(t, f, f->pcfile, pc, &fileno);
	rl = gopclntab__pcvalue(t, f, f->pcln, pc, line);
	if (rl < 0)
		*line = 0;
	if (rf == 0)
		*file = gopclntab__file_name(t, f, fileno);
	return rf == 0 || rl == 0 ? 0 : -ENOENT;
}

int gopclntab__pcsp_funcs(const struct gopclntab *t,
			  struct go_pcsp_func **out, size_t *n)
{
	struct go_pcsp_func *v;
	uint64_t last_end = 0;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	v = calloc(t->nfunc ? t->nfunc : 1, sizeof(*v));
	if (!v)
		return fail(-ENOMEM);
	for (uint64_t i = 0; i < t->nfunc; i++) {
		struct go_func f;
		uint64_t off;

		if (gopclntab__func_at(t, i, &f) < 0 || f.end <= f.entry ||
		    f.entry < last_end)
			continue;
		off = table_off(t, f.pcsp);
		v[k].entry = f.entry;
		v[k].end = f.end;
		if (f.pcsp && off < t->size) {
			v[k].pcsp = t->data + off;
			v[k].pcsp_max = t->size - off;
		}
		v[k].code = gopclntab__bytes_at(t, f.entry, f.end - f.entry);
		last_end = f.end;
		k++;
	}
	*out = v;
	*n = k;
	return 0;
}

/* Link-time address of f's funcdata idx, or 0. */
static uint64_t funcdata_addr(const struct gopclntab *t,
			      const struct go_func *f, uint32_t idx)
{
	uint64_t off = f->off + t->func_fixed + 4ull * f->npcdata;

	if (idx >= f->nfuncdata)
		return 0;
	if (t->version == GOPCLN_118 || t->version == GOPCLN_120) {
		uint32_t v;

		if (!t->gofunc || !t_u32(t, off + 4ull * idx, &v) ||
		    v == UINT32_MAX)
			return 0;
		return t->gofunc + v;
	} else {
		uint64_t v;

		/* Pointers, aligned to 8 in memory (the table is). */
		if (t->vaddr ? (t->vaddr + off) & 4 : off & 4)
			off += 4;
		if (!t_u64(t, off + 8ull * idx, &v))
			return 0;
		return v;
	}
}

/* One entry of an inline tree. */
struct inl_call {
	int32_t nameoff;
	int32_t parent_pc;
	uint8_t funcid;
};

static bool inl_call_at(const struct gopclntab *t, uint64_t tree, int32_t ix,
			struct inl_call *c)
{
	size_t esz = t->version == GOPCLN_120 ? 16 : 20;
	const uint8_t *p;

	if (ix < 0)
		return false;
	p = gopclntab__bytes_at(t, tree + (uint64_t)ix * esz, esz);
	if (!p)
		return false;
	if (t->version == GOPCLN_120) {
		/* funcID, pad[3], nameOff, parentPc, startLine */
		c->funcid = p[0];
		c->nameoff = (int32_t)rd32(p + 4);
		c->parent_pc = (int32_t)rd32(p + 8);
	} else {
		/* parent, funcID, pad, file, line, func_, parentPc */
		c->funcid = p[2];
		c->nameoff = (int32_t)rd32(p + 12);
		c->parent_pc = (int32_t)rd32(p + 16);
	}
	return true;
}

int gopclntab__frames(const struct gopclntab *t, uint64_t pc,
		      struct go_frame *out, size_t max)
{
	struct go_func f;
	uint64_t tree;
	uint32_t ixtab;
	size_t n = 0;
	int err;

	err = gopclntab__find_func(t, pc, &f);
	if (err < 0)
		return err;
	tree = funcdata_addr(t, &f, GO_FUNCDATA_INLTREE);
	ixtab = gopclntab__pcdata_table(t, &f, GO_PCDATA_INLTREE_INDEX);
	/* As the runtime's traceback: the inlined call at pc is named by
	 * the tree, its line is the function's pcln at pc; then pc moves to
	 * the call site (parentPc) in the caller, one level out. */
	int32_t last_ix = -1;

	for (unsigned depth = 0; tree && ixtab && depth < GO_MAX_INLINE_DEPTH;
	     depth++) {
		struct inl_call c;
		int32_t ix;

		/* The same entry again: its parentPc does not lead out of
		 * it (a corrupt tree); the expansion stops there. */
		if (gopclntab__pcvalue(t, &f, ixtab, pc, &ix) < 0 || ix < 0 ||
		    ix == last_ix || !inl_call_at(t, tree, ix, &c))
			break;
		last_ix = ix;
		if (n < max) {
			struct go_frame *fr = &out[n];

			fr->function = gopclntab__name_at(t, c.nameoff);
			if (!fr->function)
				break;
			gopclntab__file_line(t, &f, pc, &fr->file, &fr->line);
			fr->inlined = true;
			fr->entry = f.entry;
			fr->funcid = c.funcid;
			n++;
		}
		if (c.parent_pc < 0 || f.entry + (uint64_t)c.parent_pc >= f.end)
			break;
		pc = f.entry + (uint64_t)c.parent_pc;
	}
	if (n < max) {
		out[n].function = gopclntab__func_name(t, &f);
		if (!out[n].function)
			return n ? (int)n : fail(-EINVAL);
		gopclntab__file_line(t, &f, pc, &out[n].file, &out[n].line);
		out[n].inlined = false;
		out[n].entry = f.entry;
		out[n].funcid = f.funcid;
		n++;
	}
	return (int)n;
}

/* ---- finding it in an ELF image --------------------------------------- */

/* The section called name, or false. */
static bool find_section(const struct elf_image *img, const char *name,
			 struct elf_section *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!img->elf || elf_getshdrstrndx(img->elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(img->elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(img->elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name) != 0)
			continue;
		if (sh.sh_type == SHT_NOBITS ||
		    !in_range(img->size, sh.sh_offset, sh.sh_size))
			return false;
		out->data = img->bytes + sh.sh_offset;
		out->size = sh.sh_size;
		out->vaddr = sh.sh_addr;
		out->offset = sh.sh_offset;
		return true;
	}
	return false;
}

/* The file bytes of load segment s. */
static bool seg_bytes(const struct elf_image *img, const struct elf_segment *s,
		      const uint8_t **p, size_t *len)
{
	if (!in_range(img->size, s->offset, s->filesz))
		return false;
	*p = img->bytes + s->offset;
	*len = s->filesz;
	return true;
}

/* Scans read-only segments for a header that parses and whose function
 * table starts in order: what a binary without section headers has. */
static int scan_for_header(struct gopclntab *t, const struct elf_image *img,
			   const struct log_sink *log)
{
	for (size_t si = 0; si < img->nsegs; si++) {
		const struct elf_segment *s = &img->segs[si];
		const uint8_t *p;
		size_t len;

		if ((s->flags & 2 /* PF_W */) || !seg_bytes(img, s, &p, &len))
			continue;
		for (size_t off = 0; off + 64 <= len; off += 8) {
			uint32_t m = rd32(p + off);
			struct go_func f0, f1;

			if (m != GOPCLN_MAGIC_12 && m != GOPCLN_MAGIC_116 &&
			    m != GOPCLN_MAGIC_118 && m != GOPCLN_MAGIC_120)
				continue;
			if (gopclntab__init(t, p + off, len - off,
					    s->vaddr + off, NULL) < 0 ||
			    t->nfunc < 2 ||
			    gopclntab__func_at(t, 0, &f0) < 0 ||
			    gopclntab__func_at(t, 1, &f1) < 0 ||
			    f1.entry < f0.entry ||
			    !gopclntab__func_name(t, &f0))
				continue;
			log_debug(log, "gopclntab: found by magic at %#llx",
				  (unsigned long long)t->vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

/* Offset of moduledata.gofunc: after pcHeader, six slices, ftab (a
 * slice), findfunctab, minpc, maxpc, text..enoptrbss (10 words; 1.20 adds
 * covctrs, ecovctrs), end, gcdata, gcbss, types, etypes, rodata. */
static size_t moduledata_gofunc_off(enum gopcln_version v)
{
	return v == GOPCLN_120 ? 320 : 304;
}

/* Finds the moduledata (a word pointing at the table, followed by the
 * funcnametab slice pointing into it) in the writable segments, for
 * moduledata.gofunc. */
static void find_gofunc(struct gopclntab *t, const struct elf_image *img,
			const struct log_sink *log)
{
	if (t->version != GOPCLN_118 && t->version != GOPCLN_120)
		return;
	for (size_t si = 0; si < img->nsegs; si++) {
		const struct elf_segment *s = &img->segs[si];
		size_t goff = moduledata_gofunc_off(t->version);
		const uint8_t *p;
		size_t len;

		if (!(s->flags & 2) || !seg_bytes(img, s, &p, &len))
			continue;
		for (size_t off = (8 - (s->vaddr & 7)) & 7; off + goff + 8 <= len;
		     off += 8) {
			if (rd64(p + off) != t->vaddr ||
			    rd64(p + off + 8) != t->vaddr + t->funcname_off)
				continue;
			t->gofunc = rd64(p + off + goff);
			log_debug(log, "gopclntab: moduledata at %#llx, "
				  "go:func.* at %#llx",
				  (unsigned long long)(s->vaddr + off),
				  (unsigned long long)t->gofunc);
			return;
		}
	}
	log_info(log, "gopclntab: no moduledata found: inlined calls are "
		 "not expanded");
}

int gopclntab__open_elf(struct gopclntab *t, const struct elf_image *img,
			const struct log_sink *log)
{
	struct elf_section sec;
	int err;

	/* Position-independent Go programs keep it among their relocated
	 * read-only data. */
	if (find_section(img, ".gopclntab", &sec) ||
	    find_section(img, ".data.rel.ro.gopclntab", &sec)) {
		err = gopclntab__init(t, sec.data, sec.size, sec.vaddr, log);
		if (err < 0)
			return err;
	} else {
		size_t nsec = 0;

		/* Only an image without section headers is searched: with
		 * them, a Go binary names its .gopclntab (and libraries
		 * that are not Go cost no scan). */
		if ((img->elf && elf_getshdrnum(img->elf, &nsec) == 0 &&
		     nsec > 1) || scan_for_header(t, img, log) < 0)
			return -ENOENT;
	}
	for (size_t si = 0; si < img->nsegs; si++) {
		const uint8_t *p;
		size_t len;

		if (!(img->segs[si].flags & 2) &&
		    seg_bytes(img, &img->segs[si], &p, &len))
			gopclntab__add_region(t, img->segs[si].vaddr, p, len);
	}
	find_gofunc(t, img, log);
	return 0;
}

int go_buildinfo_version(const struct elf_image *img, char *buf, size_t len)
{
	static const char magic[] = "\xff Go buildinf:";
	struct elf_section sec;
	const uint8_t *p;
	uint64_t n = 0;
	unsigned shift = 0;
	size_t i = 32;

	if (!find_section(img, ".go.buildinfo", &sec) || sec.size < 33 ||
	    memcmp(sec.data, magic, 14) != 0)
		return -ENOENT;
	/* Go 1.18+: flag bit 2 means the strings follow inline, each a
	 * uvarint length and bytes. Older ones hold pointers (not read). */
	if (!(sec.data[15] & 2))
		return -ENOENT;
	p = sec.data;
	for (; i < sec.size && shift < 63; i++, shift += 7) {
		n |= (uint64_t)(p[i] & 0x7f) << shift;
		if (!(p[i] & 0x80))
			break;
	}
	i++;
	if (i > sec.size || n > sec.size - i || n + 1 > len)
		return -ENOENT;
	memcpy(buf, p + i, n);
	buf[n] = 0;
	return 0;
}
