/* debug_cache.c - uncompressed copies of separate debug files whose
 * sections are compressed (SHF_COMPRESSED, as Debian's -dbg packages ship
 * them), kept under CACHE/.build-id/xx/yyyy.debug so that later runs do not
 * inflate them again: for libc6-dbg's libc that is ~45 ms a run. The layout
 * is that of a debug directory, so the cache is searched like one. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cache_file.h"
#include "elf/elf_image.h"

/* Does the file at path have a compressed section? Reads only the ELF and
 * section headers, from the file itself (an opened image's headers may
 * have been rewritten in memory by libelf's decompression). */
static int has_compressed_sections(int fd, bool *yes)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;
	size_t len;

	*yes = false;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0)
		return -ENOEXEC;
	len = (size_t)eh.e_shnum * sizeof(*sh);
	sh = malloc(len);
	if (!sh)
		return -ENOMEM;
	if (pread(fd, sh, len, (off_t)eh.e_shoff) != (ssize_t)len) {
		free(sh);
		return -ENOEXEC;
	}
	for (size_t i = 0; i < eh.e_shnum; i++)
		if ((sh[i].sh_flags & SHF_COMPRESSED) && sh[i].sh_type != SHT_NOBITS)
			*yes = true;
	free(sh);
	return 0;
}

/* Creates the directories of path (0700, ours: cache_file's rules). */
static int mkdirs(char *path, const struct log_sink *log)
{
	char *slash = strrchr(path, '/');
	int err;

	if (!slash || slash == path)
		return 0;
	*slash = 0;
	err = cache_dir__prepare(path, log);
	*slash = '/';
	return err;
}

/* CACHE/debug/.build-id/xx/yyyy.debug for a build-id. (Before copies
 * were made only of files found by build-id they were under
 * CACHE/.build-id/: those are never read.) */
static int cached_name(const char *cache_dir, const uint8_t *id, size_t len,
		       char *path, size_t size)
{
	int n = snprintf(path, size, "%s/debug/.build-id/%02x/", cache_dir, id[0]);

	for (size_t i = 1; i < len && n > 0 && (size_t)n < size - 3; i++)
		n += snprintf(path + n, size - (size_t)n, "%02x", id[i]);
	if (n <= 0 || (size_t)n + sizeof(".debug") > size)
		return -ENAMETOOLONG;
	strcpy(path + n, ".debug");
	return 0;
}

int elf_debug_cache__open(const struct elf_image *img, const char *cache_dir,
			  const struct log_sink *log, struct elf_image **out)
{
	char path[4096];
	struct elf_image *dbg;
	int fd;

	*out = NULL;
	if (!cache_dir || !*cache_dir || img->build_id_len < 2 ||
	    cached_name(cache_dir, img->build_id, img->build_id_len, path,
			sizeof(path)))
		return 0;
	fd = cache_file__open(path, log, NULL);
	if (fd < 0)
		return 0;
	close(fd);
	if (elf_image__open(path, log, &dbg))
		return 0;
	if (dbg->build_id_len != img->build_id_len ||
	    memcmp(dbg->build_id, img->build_id, img->build_id_len)) {
		log_info(log, "%s: cached debug file of another build-id; "
			 "ignored and rewritten", path);
		elf_image__free(dbg);
		return 0;
	}
	dbg->found_by_build_id = true; /* a copy of such a file only */
	*out = dbg;
	return 0;
}

static int copy_file(int in, int out)
{
	char buf[1 << 16];
	ssize_t n;
	off_t off = 0;

	while ((n = pread(in, buf, sizeof(buf), off)) > 0) {
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));

			if (w < 0)
				return -errno;
			done += w;
		}
		off += n;
	}
	return n < 0 ? -errno : 0;
}

/* Inflates every compressed section of the ELF file open read-write at fd
 * and writes it back. */
static int inflate_in_place(int fd)
{
	Elf *e = elf_begin(fd, ELF_C_RDWR, NULL);
	Elf_Scn *scn = NULL;
	int err = 0;

	if (!e)
		return -ENOEXEC;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && sh.sh_type != SHT_NOBITS &&
		    elf_compress(scn, 0, 0) < 0) {
			err = -EINVAL;
			break;
		}
	}
	if (!err && elf_update(e, ELF_C_WRITE) < 0)
		err = -EIO;
	elf_end(e);
	return err;
}

int elf_debug_cache__store(const struct elf_image *dbg, const char *cache_dir,
			   const struct log_sink *log, char **cached_path)
{
	char path[4096], tmp[4096 + 32];
	bool compressed;
	static unsigned seq;
	int in, out, err;

	*cached_path = NULL;
	if (!cache_dir || !*cache_dir || dbg->build_id_len < 2 || !dbg->path)
		return 0;
	/* The copy serves every module with this build-id: only a file
	 * every such module's search finds first (by build-id, in the debug
	 * directories or from debuginfod) is copied, never one a module
	 * names through .gnu_debuglink beside itself, where whoever made
	 * the module may have put it. */
	if (!dbg->found_by_build_id) {
		log_debug(log, "%s: not found by build-id: not copied to the "
			  "debug-file cache", dbg->path);
		return 0;
	}
	in = open(dbg->path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return 0;
	err = has_compressed_sections(in, &compressed);
	if (err || !compressed) {
		close(in);
		return err == -ENOMEM ? err : 0;
	}
	if (cached_name(cache_dir, dbg->build_id, dbg->build_id_len, path,
			sizeof(path))) {
		close(in);
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%u", path, (int)getpid(), seq++);
	err = mkdirs(path, log);
	/* Exclusive and private: a concurrent writer has its own name. */
	out = err ? -1 : open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		log_info(log, "%s: cannot write the debug cache there: %s", cache_dir,
			 strerror(err ? -err : errno));
		close(in);
		return 0;
	}
	err = copy_file(in, out);
	close(in);
	if (!err)
		err = inflate_in_place(out);
	close(out);
	/* Atomic: a reader sees no file or a whole one. */
	if (err || rename(tmp, path)) {
		log_info(log, "%s: could not cache an uncompressed copy of %s",
			 cache_dir, dbg->path);
		unlink(tmp);
		return 0;
	}
	*cached_path = strdup(path);
	return *cached_path ? 0 : -ENOMEM;
}
