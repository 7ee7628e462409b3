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
		    uint64_t *base)
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

const char *waits__data_symbol(struct stacksnap_waits *w, uint64_t addr,
			       uint64_t *start, uint64_t *size)
{
	char path[4096];
	uint64_t base, bias;
	struct elf_image *img = NULL;
	struct elf_symbol s;
	const char *name = NULL, *out = NULL;

	if (w->o.saved || !file_at(w->pid, addr, path, sizeof(path), &base))
		return NULL;
	char root[4200];

	/* The target's view of the path (its mount namespace). */
	snprintf(root, sizeof(root), "/proc/%d/root%s", (int)w->pid, path);
	if (elf_image__open(root, NULL, &img) && elf_image__open(path, NULL, &img))
		return NULL;
	if (!elf_image__load_bias(img, base, 0, 0, &bias) &&
	    (lookup(img, SHT_SYMTAB, addr - bias, &s, &name) ||
	     lookup(img, SHT_DYNSYM, addr - bias, &s, &name))) {
		uint64_t off = addr - bias - s.value;

		out = off ? waits__strf(w, "%s+0x%" PRIx64, name, off)
			  : waits__strf(w, "%s", name);
		if (start)
			*start = s.value + bias;
		if (size)
			*size = s.size;
	}
	elf_image__free(img);
	return out;
}
