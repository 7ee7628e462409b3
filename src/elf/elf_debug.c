/* elf_debug.c - finds an image's separate debug information: the build-id
 * tree, .gnu_debuglink (with its CRC-32), and xz MiniDebugInfo. */
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_image.h"
#include "elf/elf_internal.h"

/* MiniDebugInfo is a few hundred KB even for big libraries; anything far
 * larger is hostile or broken and must not exhaust memory. */
#define MINIDEBUG_MAX (256u << 20)

static uint32_t crc_table[256];

static void crc_table_init(void)
{
	/* Idempotent, so concurrent first calls are harmless. */
	if (crc_table[1])
		return;
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t elf_crc32(uint32_t crc, const void *bytes, size_t len)
{
	const uint8_t *b = bytes;
	uint32_t c = crc ^ 0xffffffffu;

	crc_table_init();
	for (size_t i = 0; i < len; i++)
		c = crc_table[(c ^ b[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

int elf_file_crc32(const char *path, uint32_t *crc)
{
	uint8_t buf[65536];
	uint32_t c = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return fail(-errno);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			int err = -errno;

			if (err == -EINTR)
				continue;
			close(fd);
			return fail(err);
		}
		c = elf_crc32(c, buf, (size_t)n);
	}
	close(fd);
	*crc = c;
	return 0;
}

static bool same_file(const struct elf_image *a, const struct elf_image *b)
{
	return a->ino && a->dev == b->dev && a->ino == b->ino;
}

/* Opens candidate path if it is the debug file of img by build-id (when
 * img has one) and, when want_crc, by CRC. Returns 1 and *out on a match. */
static int try_candidate(const struct elf_image *img, const char *path,
			 bool want_crc, const struct log_sink *log,
			 struct elf_image **out)
{
	struct elf_image *dbg;

	if (access(path, R_OK) != 0)
		return 0;
	if (want_crc) {
		uint32_t crc;

		if (elf_file_crc32(path, &crc) < 0)
			return 0;
		if (crc != img->debuglink_crc) {
			log_info(log, "%s: debug file %s has CRC %08x, expected %08x: ignored",
				 img->path, path, crc, img->debuglink_crc);
			return 0;
		}
	}
	if (elf_image__open(path, log, &dbg) < 0)
		return 0;
	if (same_file(img, dbg)) {
		elf_image__free(dbg);
		return 0;
	}
	if (img->build_id_len &&
	    (dbg->build_id_len != img->build_id_len ||
	     memcmp(dbg->build_id, img->build_id, img->build_id_len))) {
		log_info(log, "%s: debug file %s has another build-id: ignored",
			 img->path, path);
		elf_image__free(dbg);
		return 0;
	}
	*out = dbg;
	return 1;
}

static int by_build_id(const struct elf_image *img, const char *dir,
		       const struct log_sink *log, struct elf_image **out)
{
	char path[4096];
	int n;

	if (img->build_id_len < 2)
		return 0;
	n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", dir,
		     img->build_id[0]);
	for (size_t i = 1; i < img->build_id_len && n > 0 &&
			   (size_t)n < sizeof(path) - 3;
	     i++)
		n += snprintf(path + n, sizeof(path) - (size_t)n, "%02x",
			      img->build_id[i]);
	if (n <= 0 || (size_t)n + sizeof(".debug") > sizeof(path))
		return 0;
	strcpy(path + n, ".debug");
	if (!try_candidate(img, path, false, log, out))
		return 0;
	(*out)->found_by_build_id = true;
	return 1;
}

static int by_debuglink(const struct elf_image *img,
			const char *const *debug_dirs,
			const struct log_sink *log, struct elf_image **out)
{
	char dir[4096], path[8192];
	const char *slash;
	size_t dlen;

	if (!img->debuglink || strchr(img->debuglink, '/'))
		return 0; /* a path in the link is not the format: refuse it */
	slash = strrchr(img->path, '/');
	dlen = slash ? (size_t)(slash - img->path) : 1;
	if (dlen >= sizeof(dir))
		return 0;
	memcpy(dir, slash ? img->path : ".", dlen);
	dir[dlen] = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, img->debuglink);
	if (try_candidate(img, path, true, log, out))
		return 1;
	snprintf(path, sizeof(path), "%s/.debug/%s", dir, img->debuglink);
	if (try_candidate(img, path, true, log, out))
		return 1;
	for (size_t i = 0; debug_dirs && debug_dirs[i]; i++) {
		snprintf(path, sizeof(path), "%s%s%s/%s", debug_dirs[i],
			 dir[0] == '/' ? "" : "/", dir, img->debuglink);
		if (try_candidate(img, path, true, log, out))
			return 1;
	}
	return 0;
}

int elf_image__open_debug(const struct elf_image *img,
			  const char *const *debug_dirs,
			  const struct log_sink *log, struct elf_image **out)
{
	static const char *const default_dirs[] = { "/usr/lib/debug", NULL };

	*out = NULL;
	if (!debug_dirs)
		debug_dirs = default_dirs;
	for (size_t i = 0; debug_dirs[i]; i++)
		if (by_build_id(img, debug_dirs[i], log, out))
			return 0;
	by_debuglink(img, debug_dirs, log, out);
	if (!*out)
		log_debug(log, "%s: no separate debug file found", img->path);
	return 0;
}

int elf_image__open_minidebug(const struct elf_image *img,
			      const struct log_sink *log,
			      struct elf_image **out)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	uint8_t *buf = NULL, *grown;
	size_t cap = 0;
	lzma_ret r;
	char name[4200];

	*out = NULL;
	if (!img->gnu_debugdata.data)
		return 0;
	if (lzma_stream_decoder(&strm, MINIDEBUG_MAX, 0) != LZMA_OK)
		return fail(-ENOMEM);
	strm.next_in = img->gnu_debugdata.data;
	strm.avail_in = img->gnu_debugdata.size;
	do {
		if (strm.avail_out == 0) {
			size_t used = cap;

			if (cap >= MINIDEBUG_MAX) {
				log_warn(log, "%s: .gnu_debugdata inflates past %u MiB: ignored",
					 img->path, MINIDEBUG_MAX >> 20);
				goto bad;
			}
			cap = cap ? cap * 2 : img->gnu_debugdata.size * 4 + 4096;
			if (cap > MINIDEBUG_MAX)
				cap = MINIDEBUG_MAX;
			grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				lzma_end(&strm);
				return fail(-ENOMEM);
			}
			buf = grown;
			strm.next_out = buf + used;
			strm.avail_out = cap - used;
		}
		r = lzma_code(&strm, LZMA_FINISH);
	} while (r == LZMA_OK);
	if (r != LZMA_STREAM_END) {
		log_warn(log, "%s: .gnu_debugdata is not valid xz data (lzma error %d)",
			 img->path, (int)r);
		goto bad;
	}
	snprintf(name, sizeof(name), "%s[.gnu_debugdata]", img->path);
	{
		size_t len = strm.total_out;

		lzma_end(&strm);
		if (elf_image__open_owned(buf, len, false, name, log, out) < 0)
			return 0; /* a broken payload is not the caller's failure */
	}
	return 0;
bad:
	free(buf);
	lzma_end(&strm);
	return 0;
}
