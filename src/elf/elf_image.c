/* elf_image.c - opens one x86_64 ELF image through libelf and collects what
 * unwinding and symbolization need: load segments, build-id, sections; and
 * walks its symbol tables. */
#include "elf/elf_image.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cursor.h"
#include "elf/elf_internal.h"

#define NT_GNU_BUILD_ID_TYPE 3

static int libelf_ready(void)
{
	static int state; /* 0 unknown, 1 ok, -1 failed; racing sets agree */

	if (!state)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	return state > 0;
}

/* Reads a note list (PT_NOTE or SHT_NOTE) looking for the GNU build-id.
 * The bytes are untrusted, hence the cursor. */
static bool find_build_id(struct elf_image *img, const uint8_t *p, size_t len)
{
	struct cursor c;

	cursor_init(&c, p, len);
	while (cursor_left(&c) >= 12) {
		uint32_t namesz = cursor_u32(&c);
		uint32_t descsz = cursor_u32(&c);
		uint32_t type = cursor_u32(&c);
		const uint8_t *name = cursor_take(&c, ((uint64_t)namesz + 3) & ~3ull);
		const uint8_t *desc = cursor_take(&c, ((uint64_t)descsz + 3) & ~3ull);

		if (c.bad)
			return false;
		if (type == NT_GNU_BUILD_ID_TYPE && namesz == 4 &&
		    memcmp(name, "GNU", 4) == 0 && descsz > 0 &&
		    descsz <= ELF_BUILD_ID_MAX) {
			memcpy(img->build_id, desc, descsz);
			img->build_id_len = descsz;
			return true;
		}
	}
	return false;
}

static bool in_bounds(const struct elf_image *img, uint64_t off, uint64_t len)
{
	return off <= img->size && len <= img->size - off;
}

/* Fills sec from a section header. Compressed sections are inflated by
 * libelf (the bytes then live in libelf's buffers, as long as img->elf);
 * others point straight into the image bytes. */
static void fill_section(struct elf_image *img, const struct log_sink *log,
			 Elf_Scn *scn,
			 const GElf_Shdr *sh, struct elf_section *sec,
			 const char *name)
{
	memset(sec, 0, sizeof(*sec));
	sec->vaddr = sh->sh_addr;
	sec->offset = sh->sh_offset;
	if (sh->sh_type == SHT_NOBITS || sh->sh_size == 0)
		return;
	if (sh->sh_flags & SHF_COMPRESSED) {
		Elf_Data *d;

		if (elf_compress(scn, 0, 0) < 0) {
			log_warn(log, "%s: section %s: cannot decompress: %s",
				 img->path, name, elf_errmsg(-1));
			return;
		}
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf && d->d_size) {
			sec->data = d->d_buf;
			sec->size = d->d_size;
		}
		return;
	}
	if (!in_bounds(img, sh->sh_offset, sh->sh_size)) {
		log_warn(log, "%s: section %s lies outside the file (truncated?)",
			 img->path, name);
		return;
	}
	sec->data = img->bytes + sh->sh_offset;
	sec->size = sh->sh_size;
}

static void read_debuglink(struct elf_image *img, const struct log_sink *log,
			   const struct elf_section *s)
{
	const char *name = (const char *)s->data;
	size_t n = strnlen(name, s->size);
	size_t crc_off = (n + 1 + 3) & ~(size_t)3;

	if (n == 0 || n == s->size || crc_off + 4 > s->size) {
		log_warn(log, "%s: malformed .gnu_debuglink ignored", img->path);
		return;
	}
	img->debuglink = name;
	memcpy(&img->debuglink_crc, s->data + crc_off, 4);
}

static int read_sections(struct elf_image *img, const struct log_sink *log)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	bool build_id_from_phdr = img->build_id_len > 0;

	if (elf_getshdrstrndx(img->elf, &shstrndx) < 0)
		return 0; /* no usable section headers: segments are enough */
	while ((scn = elf_nextscn(img->elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		struct elf_section tmp, *dst = NULL;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(img->elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (sh.sh_type == SHT_SYMTAB &&
		    sh.sh_size >= 2 * sizeof(Elf64_Sym))
			img->has_symtab = true;
		if (sh.sh_type == SHT_NOTE && !build_id_from_phdr &&
		    !img->build_id_len) {
			fill_section(img, log, scn, &sh, &tmp, name);
			if (tmp.data)
				find_build_id(img, tmp.data, tmp.size);
			continue;
		}
		/* Every name below starts ".e", ".d", ".t", ".p" or ".g":
		 * the other sections pass without a string compare (the
		 * compares were 3% of a cold walk through 40 libraries). */
		if (name[0] != '.' || (name[1] != 'e' && name[1] != 'd' &&
				       name[1] != 't' && name[1] != 'p' &&
				       name[1] != 'g'))
			continue;
		if (!strcmp(name, ".eh_frame"))
			dst = &img->eh_frame;
		else if (!strcmp(name, ".eh_frame_hdr"))
			dst = &img->eh_frame_hdr;
		else if (!strcmp(name, ".debug_frame"))
			dst = &img->debug_frame;
		else if (!strcmp(name, ".text"))
			dst = &img->text;
		else if (!strcmp(name, ".plt"))
			dst = &img->plt;
		else if (!strcmp(name, ".plt.sec"))
			dst = &img->plt_sec;
		else if (!strcmp(name, ".plt.got"))
			dst = &img->plt_got;
		else if (!strcmp(name, ".gnu_debugdata"))
			dst = &img->gnu_debugdata;
		else if (!strcmp(name, ".gnu_debuglink")) {
			fill_section(img, log, scn, &sh, &tmp, name);
			if (tmp.data)
				read_debuglink(img, log, &tmp);
		} else if (!strcmp(name, ".debug_info")) {
			img->has_dwarf_info = sh.sh_type != SHT_NOBITS &&
					      sh.sh_size > 0;
		}
		/* The first of duplicated names wins: later copies are
		 * unusual and never what the loader or a debugger reads. */
		if (dst && !dst->data)
			fill_section(img, log, scn, &sh, dst, name);
	}
	return 0;
}

static int read_segments(struct elf_image *img)
{
	size_t phnum;

	if (elf_getphdrnum(img->elf, &phnum) < 0)
		return 0; /* relocatable objects and debug files may have none */
	if (phnum > 0xffff)
		return 0;
	img->segs = calloc(phnum ? phnum : 1, sizeof(*img->segs));
	if (!img->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(img->elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD) {
			struct elf_segment *s = &img->segs[img->nsegs++];

			s->vaddr = ph.p_vaddr;
			s->memsz = ph.p_memsz;
			s->offset = ph.p_offset;
			s->filesz = ph.p_filesz;
			s->flags = ph.p_flags;
		} else if (ph.p_type == PT_NOTE && !img->build_id_len &&
			   in_bounds(img, ph.p_offset, ph.p_filesz)) {
			find_build_id(img, img->bytes + ph.p_offset, ph.p_filesz);
		}
	}
	return 0;
}

/* Takes ownership of bytes (mmapped or malloc'ed, per mmapped) and of
 * nothing else; on failure bytes are released too. */
int elf_image__open_owned(const uint8_t *bytes, size_t len, bool mmapped,
			  const char *name, const struct log_sink *log,
			  struct elf_image **out)
{
	struct elf_image *img;
	GElf_Ehdr eh;
	int err;

	*out = NULL;
	img = calloc(1, sizeof(*img));
	if (!img || !(img->path = strdup(name ? name : "[memory]"))) {
		free(img);
		if (mmapped)
			munmap((void *)bytes, len);
		else
			free((void *)bytes);
		return fail(-ENOMEM);
	}
	img->bytes = bytes;
	img->size = len;
	img->bytes_mmapped = mmapped;

	if (!libelf_ready()) {
		log_err(log, "%s: libelf initialisation failed", img->path);
		err = -ENOSYS;
		goto out_free;
	}
	if (len < EI_NIDENT || memcmp(bytes, ELFMAG, SELFMAG) != 0) {
		log_warn(log, "%s: not an ELF file", img->path);
		err = -ENOEXEC;
		goto out_free;
	}
	if (bytes[EI_CLASS] != ELFCLASS64 || bytes[EI_DATA] != ELFDATA2LSB ||
	    len < sizeof(Elf64_Ehdr)) {
		log_warn(log, "%s: not a 64-bit little-endian ELF file", img->path);
		err = -ENOEXEC;
		goto out_free;
	}
	img->elf = elf_memory((char *)bytes, len);
	if (!img->elf || elf_kind(img->elf) != ELF_K_ELF ||
	    !gelf_getehdr(img->elf, &eh)) {
		log_warn(log, "%s: malformed ELF file: %s", img->path,
			 elf_errmsg(-1));
		err = -ENOEXEC;
		goto out_free;
	}
	if (eh.e_machine != EM_X86_64) {
		log_warn(log, "%s: ELF machine %u is not x86_64", img->path,
			 (unsigned)eh.e_machine);
		err = -ENOEXEC;
		goto out_free;
	}
	img->e_type = eh.e_type;
	img->e_entry = eh.e_entry;
	err = read_segments(img);
	if (!err)
		err = read_sections(img, log);
	if (err)
		goto out_free;
	*out = img;
	return 0;

out_free:
	elf_image__free(img);
	return fail(err);
}

int elf_image__open_mem(const void *bytes, size_t len, const char *name,
			const struct log_sink *log, struct elf_image **out)
{
	/* malloc(0) may return NULL; one spare byte keeps this simple. */
	uint8_t *copy = malloc(len ? len : 1);

	*out = NULL;
	if (!copy)
		return fail(-ENOMEM);
	if (len)
		memcpy(copy, bytes, len);
	return elf_image__open_owned(copy, len, false, name, log, out);
}

int elf_file__openat(int dirfd, const char *path, const char *name,
		     const struct log_sink *log, int *fd, struct stat *st)
{
	int err;

	*fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		err = -errno;
		log_debug(log, "%s: cannot open: %s", name, strerror(-err));
		return fail(err);
	}
	if (fstat(*fd, st) < 0) {
		err = -errno;
		close(*fd);
		*fd = -1;
		return fail(err);
	}
	if (!S_ISREG(st->st_mode) || st->st_size < (off_t)EI_NIDENT) {
		close(*fd);
		*fd = -1;
		log_warn(log, "%s: not a regular ELF file", name);
		return fail(S_ISDIR(st->st_mode) ? -EISDIR : -ENOEXEC);
	}
	return 0;
}

int elf_file__open(const char *path, const struct log_sink *log, int *fd,
		   struct stat *st)
{
	return elf_file__openat(AT_FDCWD, path, path, log, fd, st);
}

/* The whole of a small file, read: mapping it (mmap, a fault on each part
 * the parse and the walks touch, munmap) cost 17-30 us against 3-10 us
 * for reading up to 256 KiB (measured on the 40 small libraries of
 * bench_unwind_cmp); larger files are mapped, as only what is touched
 * costs. NULL: not read (the caller maps it). */
#define ELF_READ_MAX (256u << 10)

static uint8_t *read_small(int fd, size_t size)
{
	uint8_t *buf;
	size_t got = 0;

	if (size > ELF_READ_MAX || !(buf = malloc(size)))
		return NULL;
	while (got < size) {
		ssize_t n = pread(fd, buf + got, size - got, (off_t)got);

		if (n <= 0) { /* an error, or the file shrank: map it */
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	return buf;
}

int elf_image__open_fd(int fd, const struct stat *st, const char *path,
		       const struct log_sink *log, struct elf_image **out)
{
	size_t size = (size_t)st->st_size;
	void *map;
	int err;

	*out = NULL;
	map = read_small(fd, size);
	if (map) {
		close(fd);
		err = elf_image__open_owned(map, size, false, path, log, out);
	} else {
		/* Private and writable: libelf (elf_compress, also when
		 * libdw inflates .debug_* sections) rewrites section headers
		 * in place in an ELF_C_READ_MMAP image. Copy-on-write keeps
		 * the file untouched and copies only the pages written. */
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		err = -errno;
		close(fd);
		if (map == MAP_FAILED) {
			log_warn(log, "%s: cannot map: %s", path, strerror(-err));
			return fail(err);
		}
		err = elf_image__open_owned(map, size, true, path, log, out);
	}
	if (err)
		return err;
	(*out)->dev = st->st_dev;
	(*out)->ino = st->st_ino;
	(*out)->mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
			   (uint64_t)st->st_mtim.tv_nsec;
	(*out)->ctime_ns = (uint64_t)st->st_ctim.tv_sec * 1000000000ull +
			   (uint64_t)st->st_ctim.tv_nsec;
	return 0;
}

int elf_image__open(const char *path, const struct log_sink *log,
		    struct elf_image **out)
{
	struct stat st;
	int fd, err;

	*out = NULL;
	err = elf_file__open(path, log, &fd, &st);
	if (err)
		return err;
	return elf_image__open_fd(fd, &st, path, log, out);
}

void elf_image__free(struct elf_image *img)
{
	if (!img)
		return;
	if (img->elf)
		elf_end(img->elf);
	if (img->bytes) {
		if (img->bytes_mmapped)
			munmap((void *)img->bytes, img->size);
		else
			free((void *)img->bytes);
	}
	free(img->segs);
	free(img->path);
	free(img);
}

static int bias_for(const struct elf_segment *s, uint64_t map_start,
		    uint64_t map_offset, uint64_t *bias)
{
	/* Unsigned wrap-around is intended: the bias is modular. */
	*bias = map_start - (s->vaddr + (map_offset - s->offset));
	return 0;
}

int elf_image__load_bias(const struct elf_image *img, uint64_t map_start,
			 uint64_t map_offset, uint32_t pf_flags, uint64_t *bias)
{
	const uint64_t page = 4096;

	/* A mapping starts inside a segment's file range, or (when the
	 * segment's offset is not page aligned) on the page holding its first
	 * byte. The exact match is tried first: with `-z noseparate-code`
	 * two segments can share a page and only one starts on it. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < img->nsegs; i++) {
			const struct elf_segment *s = &img->segs[i];
			uint64_t lo = pass == 0 ? s->offset : s->offset & ~(page - 1);
			uint64_t hi = s->offset + (s->filesz ? s->filesz : 1);

			if (pf_flags && (s->flags & pf_flags) != pf_flags)
				continue;
			if (map_offset >= lo && map_offset < hi)
				return bias_for(s, map_start, map_offset, bias);
		}
	}
	if (pf_flags)
		return elf_image__load_bias(img, map_start, map_offset, 0, bias);
	return -ENOENT;
}

int elf_image__vaddr_bytes(const struct elf_image *img, uint64_t addr, uint64_t size,
			   const uint8_t **bytes)
{
	for (size_t s = 0; s < img->nsegs; s++) {
		const struct elf_segment *seg = &img->segs[s];
		uint64_t at;

		if (addr < seg->vaddr || addr - seg->vaddr >= seg->memsz ||
		    seg->memsz - (addr - seg->vaddr) < size)
			continue;
		at = addr - seg->vaddr;
		*bytes = NULL;
		if (at + size > seg->filesz)
			return 0;
		if (seg->offset + at + size > img->size)
			return -EPROTO;
		*bytes = img->bytes + seg->offset + at;
		return 0;
	}
	return -ENOENT;
}

void elf_symbols__init(struct elf_symbols *it, const struct elf_image *img,
		       uint32_t sh_type)
{
	memset(it, 0, sizeof(*it));
	it->img = img;
	it->sh_type = sh_type;
}

bool elf_symbols__next(struct elf_symbols *it, struct elf_symbol *sym)
{
	Elf64_Sym e;

	while (it->at == it->end) {
		GElf_Shdr sh;

		if (!(it->scn = elf_nextscn(it->img->elf, it->scn)))
			return false;
		if (!gelf_getshdr(it->scn, &sh) || sh.sh_type != it->sh_type ||
		    sh.sh_entsize != sizeof(Elf64_Sym) ||
		    !in_bounds(it->img, sh.sh_offset, sh.sh_size))
			continue;
		it->strtab = sh.sh_link;
		it->at = it->img->bytes + sh.sh_offset;
		it->end = it->at + sh.sh_size / sizeof(Elf64_Sym) * sizeof(Elf64_Sym);
	}
	memcpy(&e, it->at, sizeof(e));
	it->at += sizeof(e);
	*sym = (struct elf_symbol){
		.value = e.st_value, .size = e.st_size, .name = e.st_name,
		.info = e.st_info, .shndx = e.st_shndx,
	};
	return true;
}

const char *elf_symbols__name(const struct elf_symbols *it,
			      const struct elf_symbol *sym)
{
	return elf_strptr(it->img->elf, it->strtab, sym->name);
}
