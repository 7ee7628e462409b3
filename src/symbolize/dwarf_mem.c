/* dwarf_mem.c - an in-memory ELF holding only the DWARF sections a lookup
 * reads, inflated with libdeflate, the rest left out or inflated on first
 * use: what lets a debug file with compressed sections (libc6-dbg's) be
 * read without inflating all of it.
 *
 * Why: libdw's dwarf_begin_elf inflates every compressed .debug_* section
 * through zlib when it opens the file: for libc's debug file ~11 MB, of
 * which names need .debug_info, .debug_abbrev and .debug_str; .debug_line
 * (file:line) is needed only with lines, .debug_loclists never. */
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zstd.h>

#include "symbolize/sym_internal.h"

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2 /* the gABI's value; older <elf.h> lack it */
#endif

/* Sections of the in-memory ELF at most (debug files have ~12). */
#define DM_MAX_SECS 32
/* Largest inflated section accepted: a hostile header must not make us
 * reserve terabytes. Real ones are far below (libLLVM's .debug_info with
 * -g: ~1 GiB). */
#define DM_MAX_SECTION (4ull << 30)

/* A section copied or inflated into buf. Invariant: dst lies inside buf,
 * src inside the image's bytes; done says whether dst holds the bytes. */
struct dm_sec {
	const uint8_t *src;	/* raw bytes in the image (after the Chdr) */
	size_t srclen;
	uint8_t *dst;
	size_t dstlen;
	uint32_t ctype;		/* ELFCOMPRESS_* or 0: copied as is */
	bool deferred;		/* filled by dwarf_mem__fill_deferred */
	bool done;
};

/* Invariant: elf reads buf (an anonymous mapping of size bytes: untouched
 * pages of deferred sections cost nothing) and lives no longer than it. */
struct dwarf_mem {
	Elf *elf;
	uint8_t *buf;
	size_t size;
	struct dm_sec secs[DM_MAX_SECS];
	unsigned nsecs;
	bool deferred_done;
};

/* The inflated sections' buffer. Where it spans huge pages, asked for in
 * 2 MiB pages: inflating libc's .debug_info writes 5.8 MB at once, and
 * faulting that in 4 KiB at a time was most of its cost (on a VM each
 * first touch of a page can cost 5-20 us: 1,415 faults against 3). */
#define DM_HUGE (2ul << 20)
static uint8_t *map_buffer(size_t size)
{
	size_t len = size >= 2 * DM_HUGE ? size + DM_HUGE : size;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (len == size)
		return p;
	uint8_t *a = (uint8_t *)(((uintptr_t)p + DM_HUGE - 1) & ~(DM_HUGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	uint8_t *end = (uint8_t *)(((uintptr_t)a + size + 4095) & ~(uintptr_t)4095);
	if (end < p + len)
		munmap(end, (size_t)(p + len - end));
	madvise(a, size & ~(DM_HUGE - 1), MADV_HUGEPAGE); /* advice only */
	return a;
}

enum dm_use { DM_SKIP, DM_NOW, DM_LATER };

/* What a lookup needs of each DWARF section: names (DIEs, strings,
 * ranges) at once; line tables only for file:line and inline call sites;
 * location lists, macros and name indexes never. */
static enum dm_use section_use(const char *name)
{
	static const char *const skip[] = {
		".debug_loc", ".debug_loclists", ".debug_macro", ".debug_macinfo",
		".debug_pubnames", ".debug_pubtypes", ".debug_gnu_pubnames",
		".debug_gnu_pubtypes", ".debug_frame", ".debug_names",
	};

	if (strncmp(name, ".debug_", 7) != 0)
		return DM_SKIP;
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (!strcmp(name, skip[i]))
			return DM_SKIP;
	if (!strcmp(name, ".debug_line"))
		return DM_LATER;
	return DM_NOW;
}

static int inflate_sec(struct dm_sec *s)
{
	size_t got = 0;

	if (s->done)
		return 0;
	if (s->ctype == 0) {
		memcpy(s->dst, s->src, s->dstlen);
	} else if (s->ctype == ELFCOMPRESS_ZLIB) {
		struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
		enum libdeflate_result r;

		if (!d)
			return -ENOMEM;
		r = libdeflate_zlib_decompress(d, s->src, s->srclen, s->dst,
					       s->dstlen, &got);
		libdeflate_free_decompressor(d);
		if (r != LIBDEFLATE_SUCCESS || got != s->dstlen)
			return -EINVAL;
	} else {
		got = ZSTD_decompress(s->dst, s->dstlen, s->src, s->srclen);
		if (ZSTD_isError(got) || got != s->dstlen)
			return -EINVAL;
	}
	s->done = true;
	return 0;
}

void dwarf_mem__free(struct dwarf_mem *dm)
{
	if (!dm)
		return;
	elf_end(dm->elf);
	if (dm->buf)
		munmap(dm->buf, dm->size);
	free(dm);
}

static size_t align8(size_t x)
{
	return (x + 7) & ~(size_t)7;
}

/* Reads img's section headers: the sections to carry, their sizes, the
 * total. Returns 1 when the image is worth rebuilding (some carried
 * section is compressed), 0 when not (or not understood: the caller then
 * lets libdw read the file as it is), -errno. */
static int plan(Elf *elf, const uint8_t *bytes, size_t size,
		struct dwarf_mem *dm, size_t *names_len)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	bool compressed = false;

	if (gelf_getclass(elf) != ELFCLASS64 || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	*names_len = 1 + sizeof(".shstrtab");
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		struct dm_sec *s;
		enum dm_use use;

		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			return 0;
		/* Old-style .zdebug_ sections, and dwz's shared file (found
		 * through the file's own path): libdw's way. */
		if (!strncmp(name, ".zdebug", 7) || !strcmp(name, ".gnu_debugaltlink"))
			return 0;
		use = section_use(name);
		if (use == DM_SKIP || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		if (dm->nsecs == DM_MAX_SECS || sh.sh_offset > size ||
		    sh.sh_size > size - sh.sh_offset)
			return 0;
		s = &dm->secs[dm->nsecs++];
		s->src = bytes + sh.sh_offset;
		s->srclen = sh.sh_size;
		s->dstlen = sh.sh_size;
		s->deferred = use == DM_LATER;
		if (sh.sh_flags & SHF_COMPRESSED) {
			Elf64_Chdr ch;

			if (sh.sh_size < sizeof(ch))
				return 0;
			memcpy(&ch, s->src, sizeof(ch));
			if ((ch.ch_type != ELFCOMPRESS_ZLIB &&
			     ch.ch_type != ELFCOMPRESS_ZSTD) ||
			    ch.ch_size > DM_MAX_SECTION)
				return 0;
			s->ctype = ch.ch_type;
			s->src += sizeof(ch);
			s->srclen -= sizeof(ch);
			s->dstlen = ch.ch_size;
			compressed = true;
		}
		*names_len += strlen(name) + 1;
	}
	return compressed;
}

int dwarf_mem__open(Elf *elf, const uint8_t *bytes, size_t size,
		    struct dwarf_mem **out)
{
	struct dwarf_mem *dm;
	GElf_Ehdr eh;
	size_t names_len = 0, off, shoff;
	size_t shstrndx;
	Elf64_Ehdr *neh;
	Elf64_Shdr *nsh;
	char *names;
	int r, err = -EINVAL;

	*out = NULL;
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	if (!(dm = calloc(1, sizeof(*dm))))
		return -ENOMEM;
	r = plan(elf, bytes, size, dm, &names_len);
	if (r <= 0) {
		free(dm);
		return r;
	}
	/* [Ehdr][sections, 8-aligned][names][Shdrs]: section data sits
	 * aligned, so libelf hands libdw pointers into buf, no copies. */
	off = align8(sizeof(Elf64_Ehdr));
	for (unsigned i = 0; i < dm->nsecs; i++) {
		dm->secs[i].dst = (uint8_t *)(uintptr_t)off; /* offset for now */
		off = align8(off + dm->secs[i].dstlen);
	}
	size_t names_off = off;
	shoff = align8(off + names_len);
	dm->size = shoff + (dm->nsecs + 2) * sizeof(Elf64_Shdr);
	dm->buf = map_buffer(dm->size);
	if (!dm->buf) {
		err = -ENOMEM;
		goto fail;
	}
	neh = (Elf64_Ehdr *)dm->buf;
	memcpy(neh->e_ident, eh.e_ident, EI_NIDENT);
	neh->e_type = eh.e_type;
	neh->e_machine = eh.e_machine;
	neh->e_version = eh.e_version;
	neh->e_flags = eh.e_flags;
	neh->e_ehsize = sizeof(Elf64_Ehdr);
	neh->e_shentsize = sizeof(Elf64_Shdr);
	neh->e_shoff = shoff;
	neh->e_shnum = dm->nsecs + 2;
	neh->e_shstrndx = dm->nsecs + 1;
	names = (char *)dm->buf + names_off;
	nsh = (Elf64_Shdr *)(dm->buf + shoff);
	size_t noff = 1;
	Elf_Scn *scn = NULL;
	unsigned k = 0;
	/* The same walk as plan(): names and flags of the carried sections. */
	while ((scn = elf_nextscn(elf, scn)) && k < dm->nsecs) {
		GElf_Shdr sh;
		const char *name;
		struct dm_sec *s = &dm->secs[k];

		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			goto fail;
		if (section_use(name) == DM_SKIP || sh.sh_type == SHT_NOBITS ||
		    !sh.sh_size)
			continue;
		s->dst = dm->buf + (uintptr_t)s->dst;
		nsh[k + 1] = (Elf64_Shdr){
			.sh_name = (Elf64_Word)noff,
			.sh_type = sh.sh_type,
			.sh_flags = sh.sh_flags & ~(uint64_t)SHF_COMPRESSED,
			.sh_offset = (uint64_t)(s->dst - dm->buf),
			.sh_size = s->dstlen,
			.sh_addralign = 1,
			.sh_entsize = sh.sh_entsize,
		};
		memcpy(names + noff, name, strlen(name) + 1);
		noff += strlen(name) + 1;
		k++;
	}
	if (k != dm->nsecs)
		goto fail;
	memcpy(names + noff, ".shstrtab", sizeof(".shstrtab"));
	nsh[k + 1] = (Elf64_Shdr){ .sh_name = (Elf64_Word)noff,
				   .sh_type = SHT_STRTAB,
				   .sh_offset = names_off,
				   .sh_size = names_len,
				   .sh_addralign = 1 };
	for (unsigned i = 0; i < dm->nsecs; i++)
		if (!dm->secs[i].deferred && (err = inflate_sec(&dm->secs[i])))
			goto fail;
	err = -EINVAL;
	if (!(dm->elf = elf_memory((char *)dm->buf, dm->size)))
		goto fail;
	/* A deferred section is filled in place later: that needs libelf to
	 * hand out pointers into buf. Where it copied, fill it now. */
	scn = NULL;
	for (unsigned i = 0; i < dm->nsecs; i++) {
		Elf_Data *d;

		if (!dm->secs[i].deferred)
			continue;
		d = elf_getdata(elf_getscn(dm->elf, i + 1), NULL);
		if (!d || d->d_buf != dm->secs[i].dst)
			if ((err = inflate_sec(&dm->secs[i])))
				goto fail;
	}
	*out = dm;
	return 0;
fail:
	dwarf_mem__free(dm);
	return err;
}

Elf *dwarf_mem__elf(const struct dwarf_mem *dm)
{
	return dm->elf;
}

int dwarf_mem__fill_deferred(struct dwarf_mem *dm)
{
	int err;

	if (dm->deferred_done)
		return 0;
	for (unsigned i = 0; i < dm->nsecs; i++)
		if (dm->secs[i].deferred && (err = inflate_sec(&dm->secs[i])))
			return err;
	dm->deferred_done = true;
	return 0;
}
