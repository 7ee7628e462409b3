/* data_symbol.c - names a lock by the data symbol holding it: the file
 * mapped at its address (/proc/PID/maps, the .bss page after it
 * included), that file's load bias and its STT_OBJECT symbols. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waits_internal.h"
#include "base/maps_line.h"
#include "elf/elf_image.h"

/* The file mapped at addr (or just before an anonymous mapping holding
 * addr: the rest of a .bss) and the start of its mapping at offset 0. */
static bool file_at(pid_t pid, uint64_t addr, char *path, size_t size,
		    uint64_t *base, uint64_t *lo, uint64_t *hi)
{
	char mpath[64], line[4096 + 128], last[4096] = "";
	uint64_t last_base = 0, last_end = 0;
	bool found = false;
	FILE *f;

	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(mpath, "re")))
		return false;
	while (fgets(line, sizeof(line), f)) {
		struct maps_line m;

		if (maps_line__parse(line, &m))
			continue;
		bool file = m.path && m.path[0] == '/';

		if (file && m.offset == 0) {
			snprintf(last, sizeof(last), "%s", m.path);
			last_base = m.start;
		}
		if (addr >= m.start && addr < m.end) {
			*lo = m.start;
			*hi = m.end;
			if (file && !strcmp(m.path, last))
				found = true;
			else if (!m.path && last[0] && last_end == m.start)
				found = true;
			break;
		}
		if (file)
			last_end = m.end;
	}
	fclose(f);
	if (found) {
		snprintf(path, size, "%s", last);
		*base = last_base;
	}
	return found;
}

static bool lookup(const struct elf_image *img, uint32_t type, uint64_t vaddr,
		   struct elf_symbol *best, const char **name)
{
	struct elf_symbols it;
	struct elf_symbol s;

	elf_symbols__init(&it, img, type);
	while (elf_symbols__next(&it, &s)) {
		if ((s.info & 0xf) != STT_OBJECT || s.shndx == SHN_UNDEF)
			continue;
		if (vaddr < s.value || vaddr >= s.value + (s.size ? s.size : 1))
			continue;
		*best = s;
		*name = elf_symbols__name(&it, &s);
		return *name != NULL;
	}
	return false;
}

void waits__data_symbol_free(struct stacksnap_waits *w)
{
	elf_image__free(w->ds_img);
	w->ds_img = NULL;
	w->ds_lo = w->ds_hi = 0;
}

/* The image of the file mapped at addr into w->ds_*: the last one when
 * addr is in the same mapping. */
static bool image_at(struct stacksnap_waits *w, uint64_t addr)
{
	char path[4096], root[4200];
	uint64_t base, lo = 0, hi = 0;

	if (w->ds_img && addr >= w->ds_lo && addr < w->ds_hi)
		return true;
	waits__data_symbol_free(w);
	if (!file_at(w->pid, addr, path, sizeof(path), &base, &lo, &hi))
		return false;
	/* The target's view of the path (its mount namespace). */
	snprintf(root, sizeof(root), "/proc/%d/root%s", (int)w->pid, path);
	if (elf_image__open(root, NULL, &w->ds_img) &&
	    elf_image__open(path, NULL, &w->ds_img))
		return false;
	if (elf_image__load_bias(w->ds_img, base, 0, 0, &w->ds_bias)) {
		waits__data_symbol_free(w);
		return false;
	}
	w->ds_lo = lo;
	w->ds_hi = hi;
	return true;
}

const char *waits__data_symbol(struct stacksnap_waits *w, uint64_t addr,
			       uint64_t *start, uint64_t *size)
{
	struct elf_symbol s;
	const char *name = NULL;

	if (w->o.saved || !image_at(w, addr))
		return NULL;
	uint64_t bias = w->ds_bias;

	if (!lookup(w->ds_img, SHT_SYMTAB, addr - bias, &s, &name) &&
	    !lookup(w->ds_img, SHT_DYNSYM, addr - bias, &s, &name))
		return NULL;
	uint64_t off = addr - bias - s.value;

	if (start)
		*start = s.value + bias;
	if (size)
		*size = s.size;
	return off ? waits__strf(w, "%s+0x%" PRIx64, name, off) : waits__strf(w, "%s", name);
}
