/* snapfile_writer.c - the container writer of snapshot and events files
 * and the records both writers put (snapfile_writer.h): explicit
 * little-endian, docs/snapshot-format.md. */
#define _GNU_SOURCE
#include "save/snapfile_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "elf/elf_image.h"

/* ------------------------------------------------------------------ */
/* Container */

void snapfile_writer__init(struct snapfile_writer *w)
{
	memset(w, 0, sizeof(*w));
	byte_buf__put(&w->buf, SNAPFILE_MAGIC, 8);
	byte_buf__u16(&w->buf, SNAPFILE_MAJOR);
	byte_buf__u16(&w->buf, SNAPFILE_MINOR);
	byte_buf__u32(&w->buf, SNAPFILE_HEADER_SIZE);
	byte_buf__u64(&w->buf, 0); /* file length, patched by finish */
	byte_buf__u32(&w->buf, 0); /* CRC, patched by finish */
	byte_buf__u32(&w->buf, 0); /* section count, patched by finish */
}

void snapfile_writer__begin_section(struct snapfile_writer *w, uint32_t kind,
				    uint16_t version, uint16_t flags)
{
	w->open_section = w->buf.n;
	byte_buf__u32(&w->buf, kind);
	byte_buf__u16(&w->buf, version);
	byte_buf__u16(&w->buf, flags);
	byte_buf__u64(&w->buf, 0); /* payload length, patched at the end */
}

void snapfile_writer__end_section(struct snapfile_writer *w)
{
	size_t payload = w->open_section + SNAPFILE_SECTION_HEADER_SIZE;

	byte_buf__patch_u64(&w->buf, w->open_section + 8, w->buf.n - payload);
	w->open_section = 0;
	w->nsections++;
}

void snapfile_writer__end_section_crc(struct snapfile_writer *w)
{
	size_t payload = w->open_section + SNAPFILE_SECTION_HEADER_SIZE;

	if (!w->buf.failed)
		byte_buf__u32(&w->buf, elf_crc32(0, w->buf.p + payload, w->buf.n - payload));
	snapfile_writer__end_section(w);
}

int snapfile_writer__finish(struct snapfile_writer *w, const char *path,
			    const struct log_sink *log)
{
	struct byte_buf *b = &w->buf;
	char tmp[4096];
	int fd, err = 0;

	if (b->failed) {
		byte_buf__free(b);
		log_err(log, "%s: out of memory writing the snapshot", path);
		return -ENOMEM;
	}
	byte_buf__patch_u64(b, SNAPFILE_OFF_FILE_LEN, b->n);
	byte_buf__patch_u32(b, SNAPFILE_OFF_NSECTIONS, w->nsections);
	byte_buf__patch_u32(b, SNAPFILE_OFF_CRC,
			    elf_crc32(0, b->p + SNAPFILE_HEADER_SIZE,
				      b->n - SNAPFILE_HEADER_SIZE));
	/* A file is written whole under a temporary name, then renamed; what
	 * is not a file (a device: /dev/stdout, /dev/full; a pipe) is
	 * written to, never replaced by a rename. */
	struct stat st;
	bool direct = stat(path, &st) == 0 && !S_ISREG(st.st_mode);

	if (direct)
		snprintf(tmp, sizeof(tmp), "%s", path);
	else
		snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	fd = open(tmp, direct ? O_WRONLY | O_TRUNC | O_CLOEXEC
			      : O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		log_err(log, "%s: cannot create: %s", path, strerror(errno));
		byte_buf__free(b);
		return err;
	}
	for (size_t off = 0; off < b->n;) {
		ssize_t r = write(fd, b->p + off, b->n - off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)r;
	}
	if (close(fd) && !err)
		err = -errno;
	if (!err && !direct && rename(tmp, path))
		err = -errno;
	if (err) {
		log_err(log, "%s: cannot write the snapshot: %s", path, strerror(-err));
		if (!direct)
			unlink(tmp);
	}
	byte_buf__free(b);
	return err;
}

/* ------------------------------------------------------------------ */
/* Records both writers put */

/* The command line with its NULs as spaces. */
void snapfile__read_cmdline(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	buf[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = 0;
}

unsigned snapfile__put_mapping_records(struct byte_buf *b, struct stacksnap_addrspace *as)
{
	unsigned nimages = 0;

	addrspace__resolve_all(as); /* every mapping's build-id */
	byte_buf__u32(b, (uint32_t)as->n);
	for (size_t i = 0; i < as->n; i++) {
		const struct as_map *m = &as->maps[i];
		const struct elf_image *img = m->mod ? m->mod->img : NULL;
		const char *path = m->path ? m->path : "";
		size_t rec = b->n, plen = strlen(path);
		uint8_t kind = m->mod && m->mod->is_vdso ? SNAPFILE_MAP_IMAGE
			       : m->path && m->path[0] == '/' ? SNAPFILE_MAP_FILE
							     : SNAPFILE_MAP_ANON;

		byte_buf__u32(b, 0); /* record length */
		byte_buf__u64(b, m->start);
		byte_buf__u64(b, m->end);
		byte_buf__u64(b, m->offset);
		byte_buf__u32(b, m->prot);
		byte_buf__u8(b, kind);
		byte_buf__u8(b, img ? (uint8_t)img->build_id_len : 0);
		if (img)
			byte_buf__put(b, img->build_id, img->build_id_len);
		byte_buf__u16(b, (uint16_t)(plen > 4095 ? 4095 : plen));
		byte_buf__put(b, path, plen > 4095 ? 4095 : plen);
		byte_buf__patch_u32(b, rec, (uint32_t)(b->n - rec - 4));
		if (kind == SNAPFILE_MAP_IMAGE)
			nimages++;
	}
	return nimages;
}

void snapfile__put_image(struct snapfile_writer *w, const struct as_map *m,
			 uint16_t flags)
{
	snapfile_writer__begin_section(w, SNAPFILE_SEC_IMAGE, 1, flags);
	byte_buf__u64(&w->buf, m->start);
	byte_buf__u64(&w->buf, m->mod->img->size);
	byte_buf__put(&w->buf, m->mod->img->bytes, m->mod->img->size);
	if (flags & SNAPFILE_SEC_CRC)
		snapfile_writer__end_section_crc(w);
	else
		snapfile_writer__end_section(w);
}

void snapfile__put_stack(struct byte_buf *out, const struct stacksnap_thread *th,
			 const uint64_t *keep)
{
	size_t stack_len = th->stack ? th->stack_len : 0;

	if (stack_len)
		compact_stack__encode(th->stack, stack_len, th->stack_base, keep,
				      keep != NULL, out);
}
