/* elf_image.h - one ELF image (a file on disk, or bytes in memory such as
 * the vDSO or a .gnu_debugdata payload) read through libelf: load segments,
 * build-id, the sections unwinding and symbolization need, its symbol
 * tables' entries, and the search for its separate debug files. */
#ifndef SS_ELF_IMAGE_H
#define SS_ELF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cache_bind.h"
#include "base/log.h"

typedef struct Elf Elf;

/* A PT_LOAD program header. */
struct elf_segment {
	uint64_t vaddr;	 /* p_vaddr */
	uint64_t memsz;	 /* p_memsz */
	uint64_t offset; /* p_offset */
	uint64_t filesz; /* p_filesz */
	uint32_t flags;	 /* PF_R | PF_W | PF_X */
};

/* A section's bytes. Invariant: data == NULL iff size == 0 (absent, or
 * SHT_NOBITS). data points into the image's mapping; it lives as long as
 * the image. */
struct elf_section {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;	 /* sh_addr (0 for non-alloc sections) */
	uint64_t offset; /* sh_offset */
};

#define ELF_BUILD_ID_MAX 64

struct elf_image {
	char *path;		/* file it came from, or a name for memory images */
	Elf *elf;		/* libelf handle over the bytes below */
	const uint8_t *bytes;	/* the whole image (mmap of the file, or a copy:
			   small files are read) */
	size_t size;
	bool bytes_mmapped;	/* bytes is an mmap to munmap, else malloc'ed */
	uint16_t e_type;	/* ET_EXEC, ET_DYN, ... */
	uint64_t e_entry;
	uint64_t dev, ino, mtime_ns; /* identity of the file (0 for memory) */
	uint64_t ctime_ns;	/* its change time: with the above, what a cache
				   entry made from it records (cache_bind.h) */
	bool found_by_build_id;	/* a debug file found by its build-id (a debug
				   directory's .build-id tree, debuginfod), not
				   through a name the module gives */

	uint8_t build_id[ELF_BUILD_ID_MAX];
	size_t build_id_len;	/* 0 when the image has none */

	struct elf_segment *segs; /* PT_LOAD headers in file order */
	size_t nsegs;

	struct elf_section eh_frame;
	struct elf_section eh_frame_hdr;
	struct elf_section debug_frame;
	struct elf_section text;
	struct elf_section plt;	    /* .plt */
	struct elf_section plt_sec; /* .plt.sec (IBT layouts), may be absent */
	struct elf_section plt_got; /* .plt.got, may be absent */
	struct elf_section gnu_debugdata; /* xz-compressed MiniDebugInfo */

	const char *debuglink;	/* .gnu_debuglink file name, NULL if none */
	uint32_t debuglink_crc;
	bool has_symtab;	/* a .symtab with entries */
	bool has_dwarf_info;	/* a .debug_info with bytes */
};

/* Opens the ELF file at path. Returns 0 and *out, or -errno with a message
 * naming the file and the problem (-ENOEXEC: not a valid x86_64 ELF). */
int elf_image__open(const char *path, const struct log_sink *log,
		    struct elf_image **out);
/* The two steps of elf_image__open, for a caller that first looks up the
 * file's identity (one path lookup instead of a stat and an open):
 * elf_file__open opens path read-only and fills *st (a regular file, else
 * -ENOEXEC or -EISDIR); elf_image__open_fd takes over fd (closed on every
 * return) and reads the image. */
struct stat;
int elf_file__open(const char *path, const struct log_sink *log, int *fd,
		   struct stat *st);
/* elf_file__open of path relative to the directory dirfd (or AT_FDCWD),
 * name naming the file in messages. */
int elf_file__openat(int dirfd, const char *path, const char *name,
		     const struct log_sink *log, int *fd, struct stat *st);
int elf_image__open_fd(int fd, const struct stat *st, const char *path,
		       const struct log_sink *log, struct elf_image **out);
/* An image from bytes in memory (copied). name labels it in messages. */
int elf_image__open_mem(const void *bytes, size_t len, const char *name,
			const struct log_sink *log, struct elf_image **out);
void elf_image__free(struct elf_image *img);

/* What a cache entry made from img is bound to: its file's identity and
 * its bytes (an image from memory: its bytes only). */
static inline struct cache_source elf_image__source(const struct elf_image *img)
{
	return (struct cache_source){ img->dev, img->ino, img->size,
				      img->mtime_ns, img->ctime_ns,
				      img->bytes, img->size };
}

/* The bias to add to link-time addresses of img to get run-time addresses,
 * for a mapping of the file at map_start from file offset map_offset (a
 * non-PIE executable, mapped at its link addresses, gets 0). pf_flags
 * (PF_X, PF_R, PF_W bits the PT_LOAD must have; 0 for any) picks the right
 * segment when two share a file page (old `-z noseparate-code` layouts,
 * where text and data may start on one page): executable and writable
 * mappings are never ambiguous. Returns 0, or -ENOENT when no PT_LOAD
 * covers map_offset. */
int elf_image__load_bias(const struct elf_image *img, uint64_t map_start,
			 uint64_t map_offset, uint32_t pf_flags, uint64_t *bias);

/* Finds and opens the separate debug file of img: first by build-id in
 * each of debug_dirs (DIR/.build-id/xx/yyyy.debug), then by .gnu_debuglink
 * next to the file, in its .debug/ subdirectory and in DIR/<dirname of the
 * file>/, checking the CRC. debug_dirs is NULL-terminated. Returns 0 with
 * *out (NULL when there is none, which is not an error) or -errno. */
int elf_image__open_debug(const struct elf_image *img,
			  const char *const *debug_dirs,
			  const struct log_sink *log, struct elf_image **out);

/* Asks the debuginfod servers of $DEBUGINFOD_URLS (libdebuginfod; its
 * cache in $DEBUGINFOD_CACHE_PATH or ~/.cache/debuginfod_client) for the
 * debug file of img by its build-id. *out is NULL when img has no build-id
 * or no server has the file (logged at info level, with the build-id). */
int elf_image__open_debug_remote(const struct elf_image *img,
				 const struct log_sink *log,
				 struct elf_image **out);

/* The path (malloc'ed) of a regular file holding the ELF image with
 * build-id id (len bytes) that a process had mapped from path: path itself
 * when its build-id matches (or len is 0 and it exists), else
 * DIR/.build-id/xx/yyyy of each of dirs (NULL-terminated), else, with
 * debuginfod, the executable the servers of $DEBUGINFOD_URLS have. NULL
 * when none is found. */
char *elf_find_by_build_id(const char *path, const uint8_t *id, size_t len,
			   const char *const *dirs, bool debuginfod,
			   const struct log_sink *log);

/* Opens the MiniDebugInfo embedded in .gnu_debugdata (xz-decompressed).
 * *out is NULL when the image has none. */
int elf_image__open_minidebug(const struct elf_image *img,
			      const struct log_sink *log,
			      struct elf_image **out);

/* If the separate debug image dbg was found by build-id and has
 * compressed sections, writes an uncompressed copy of it to
 * CACHE/debug/.build-id/xx/yyyy.debug (atomically) and
 * returns its path in *cached_path (malloc'ed), else *cached_path is NULL.
 * Failing to write the cache is not an error (logged at info level). */
int elf_debug_cache__store(const struct elf_image *dbg, const char *cache_dir,
			   const struct log_sink *log, char **cached_path);

/* The uncompressed copy of img's debug file in the cache, if there is
 * one the cache rules trust (base/cache_file.h) and of img's build-id;
 * *out NULL otherwise (a copy of another build-id is then rewritten by
 * the next store). Returns 0. */
int elf_debug_cache__open(const struct elf_image *img, const char *cache_dir,
			  const struct log_sink *log, struct elf_image **out);
/* The file bytes of [addr, addr + size) at link-time address addr (a
 * symbol's value): *bytes points into img->bytes, or is NULL where the
 * PT_LOAD covering it holds no file bytes there (.bss: zeros at run time).
 * Returns 0, -ENOENT (no PT_LOAD covers it whole) or -EPROTO (the file is
 * shorter than the segment says). */
int elf_image__vaddr_bytes(const struct elf_image *img, uint64_t addr, uint64_t size,
			   const uint8_t **bytes);

/* One entry of a symbol table, as elf_symbols__next reads it. */
struct elf_symbol {
	uint64_t value;		/* st_value: a link-time address */
	uint64_t size;		/* st_size */
	uint32_t name;		/* st_name: read by elf_symbols__name */
	uint8_t info;		/* st_info: STT_*, STB_* */
	uint16_t shndx;		/* st_shndx */
};

/* The entries of every symbol table of one type (SHT_DYNSYM or
 * SHT_SYMTAB) of an image, in section and then table order, read in place
 * from the image's bytes (no conversion: node's 109,000 .symtab entries
 * take ~0.3 ms so, ~3 ms through gelf_getsym); names only when asked for,
 * as most walks look at a symbol's value or size first. Invariant: at and
 * end bound whole entries of the table of scn inside img->bytes (at ==
 * end between tables; scn NULL before the first). */
typedef struct Elf_Scn Elf_Scn;
struct elf_symbols {
	const struct elf_image *img;
	uint32_t sh_type;
	Elf_Scn *scn;
	size_t strtab;		/* the section of the names (sh_link) */
	const uint8_t *at, *end;
};

void elf_symbols__init(struct elf_symbols *it, const struct elf_image *img,
		       uint32_t sh_type);
/* The next entry into *sym (the null entry of each table too); false
 * after the last. A table whose entries are not Elf64_Sym or that lies
 * outside the file is passed over. */
bool elf_symbols__next(struct elf_symbols *it, struct elf_symbol *sym);
/* The name of sym, the entry last read: NULL when it is not in its
 * string table. */
const char *elf_symbols__name(const struct elf_symbols *it,
			      const struct elf_symbol *sym);

/* The CRC-32 used by .gnu_debuglink (zlib's), continued from crc (0 to
 * start) over len bytes. */
uint32_t elf_crc32(uint32_t crc, const void *bytes, size_t len);

/* The CRC-32 used by .gnu_debuglink over a whole file. */
int elf_file_crc32(const char *path, uint32_t *crc);

#endif
