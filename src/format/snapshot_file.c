/* snapshot_file.c - the stacksnap snapshot file: writing a live capture
 * (stacksnap_snapshot__save) and reading one back into a saved capture
 * (stacksnap_saved__open), in the explicit little-endian container of
 * docs/snapshot-format.md. */
#define _GNU_SOURCE
#include "format/snapshot_file.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/log.h"
#include "base/opts.h"
#include "capture/saved.h"
#include "elf/elf_image.h"
#include "format/events_file.h"

/* Measured in BENCHMARKS.md ("Snapshot file sizes"). */
#define DEFAULT_ENCODING STACKSNAP_ENCODING_POINTERS

/* ------------------------------------------------------------------ */
/* Container writer */

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
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		log_err(log, "%s: cannot create: %s", tmp, strerror(errno));
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
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		log_err(log, "%s: cannot write the snapshot: %s", path, strerror(-err));
		unlink(tmp);
	}
	byte_buf__free(b);
	return err;
}

/* ------------------------------------------------------------------ */
/* Saving a live capture */

static void put_str(struct byte_buf *b, const char *s, size_t len)
{
	byte_buf__u32(b, (uint32_t)len);
	byte_buf__put(b, s, len);
}

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

static void put_process(struct snapfile_writer *w, const struct stacksnap_snapshot *snap,
			pid_t pid, enum stacksnap_stack_encoding enc)
{
	struct stacksnap_snapshot_stats st;
	struct timespec ts;
	struct utsname u;
	char cmd[4096];
	const char *ver = stacksnap_version();

	stacksnap_snapshot__stats(snap, &st);
	clock_gettime(CLOCK_REALTIME, &ts);
	if (uname(&u))
		u.release[0] = 0;
	snapfile__read_cmdline(pid, cmd, sizeof(cmd));
	snapfile_writer__begin_section(w, SNAPFILE_SEC_PROCESS, 1, 0);
	byte_buf__u32(&w->buf, (uint32_t)pid);
	byte_buf__u64(&w->buf, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
	byte_buf__u64(&w->buf, st.freeze_ns);
	byte_buf__u64(&w->buf, st.bytes_copied);
	byte_buf__u8(&w->buf, (uint8_t)enc);
	put_str(&w->buf, cmd, strlen(cmd));
	put_str(&w->buf, u.release, strlen(u.release));
	put_str(&w->buf, ver, strlen(ver));
	snapfile_writer__end_section(w);
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

static void put_mappings(struct snapfile_writer *w, struct stacksnap_addrspace *as)
{
	unsigned nimages;

	snapfile_writer__begin_section(w, SNAPFILE_SEC_MAPPINGS, 1, 0);
	nimages = snapfile__put_mapping_records(&w->buf, as);
	snapfile_writer__end_section(w);
	for (size_t i = 0; nimages && i < as->n; i++)
		if (as->maps[i].mod && as->maps[i].mod->is_vdso)
			snapfile__put_image(w, &as->maps[i], 0);
}

/* The memory source of the exact encoding's walk: the copy, with every
 * word read marked when it looks like a pointer. A word the unwinder read
 * that is not one is a callee-saved register's spill holding data (where
 * spilled secrets live); restored as 0 it changes no walk, as only a
 * pointer into the stack or code can be used as a CFA, frame pointer or
 * return address (cli_saved checks the walks are identical). */
struct read_record {
	struct stacksnap_addrspace *as;
	const uint8_t *bytes;
	size_t len;
	uint64_t base;
	uint64_t *keep;
};

static void mark_if_pointer(struct stacksnap_addrspace *as, const uint8_t *bytes,
			    size_t len, uint64_t base, uint64_t *keep, uint64_t a)
{
	uint64_t v;

	if (a < base || a - base + 8 > len)
		return;
	memcpy(&v, bytes + (a - base), 8);
	if (compact_stack__is_pointer(as, v, base, base + len))
		compact_stack__mark_range(keep, base, len, a, 8);
}

static int record_read(void *user, uint64_t addr, void *buf, size_t n)
{
	struct read_record *r = user;

	if (addr < r->base || addr - r->base > r->len || n > r->len - (addr - r->base))
		return -ENODATA; /* as a copy source answers: stack copy too small */
	memcpy(buf, r->bytes + (addr - r->base), n);
	for (uint64_t a = r->base + ((addr - r->base) & ~7ull); a < addr + n; a += 8)
		mark_if_pointer(r->as, r->bytes, r->len, r->base, r->keep, a);
	return 0;
}

/* Marks what the exact encoding keeps of thread th (see the header). */
static int mark_exact(struct stacksnap_addrspace *as, struct stacksnap_unwinder *uw,
		      struct stacksnap_frame *frames, size_t max,
		      const struct stacksnap_thread *th, uint64_t *keep)
{
	struct read_record rec = { as, th->stack, th->stack_len, th->stack_base, keep };
	struct stacksnap_mem *mem = stacksnap_mem__new_callback(record_read, &rec);
	enum stacksnap_end end;
	uint64_t lo, hi;
	int n;

	if (!mem)
		return -ENOMEM;
	n = stacksnap_unwind(uw, as, &th->regs, mem, frames, max, &end);
	stacksnap_mem__free(mem);
	if (n <= 0)
		return 0;
	lo = frames[0].sp;
	hi = lo;
	for (int i = 0; i < n; i++) {
		if (frames[i].sp > hi)
			hi = frames[i].sp;
		if (frames[i].cfa > hi)
			hi = frames[i].cfa;
	}
	/* On the copy's word grid, from the first frame's sp to the last CFA. */
	if (lo < th->stack_base)
		lo = th->stack_base;
	lo = th->stack_base + ((lo - th->stack_base) & ~7ull);
	for (uint64_t a = lo; a < hi; a += 8)
		mark_if_pointer(as, th->stack, th->stack_len, th->stack_base, keep, a);
	return 0;
}

/* Registers under a compact encoding: rip and rsp, and the others only
 * when they point into code or the stack (a register may hold a secret). */
void snapfile__filter_regs(struct stacksnap_addrspace *as, const struct stacksnap_thread *th,
			   struct stacksnap_regs *r)
{
	*r = th->regs;
	for (int i = 0; i < STACKSNAP_REG_COUNT; i++)
		if (i != STACKSNAP_REG_RIP && i != STACKSNAP_REG_RSP &&
		    !compact_stack__is_pointer(as, r->regs[i], th->stack_base,
					       th->stack_base + th->stack_len))
			r->regs[i] = 0;
}

int snapfile__encode_stack(struct stacksnap_addrspace *as,
			   const struct stacksnap_thread *th,
			   enum stacksnap_stack_encoding enc,
			   struct stacksnap_unwinder *uw,
			   struct stacksnap_frame *frames, size_t max_frames,
			   struct byte_buf *out)
{
	size_t stack_len = th->stack ? th->stack_len : 0;
	uint64_t *keep;
	int err = 0;

	if (!stack_len)
		return 0;
	if (enc == STACKSNAP_ENCODING_FULL) {
		compact_stack__encode(th->stack, stack_len, th->stack_base, NULL,
				      false, out);
		return 0;
	}
	keep = calloc(compact_stack__bitmap_u64s(stack_len) + 1, sizeof(*keep));
	if (!keep)
		return -ENOMEM;
	if (enc == STACKSNAP_ENCODING_POINTERS)
		compact_stack__mark_pointers(as, th->stack, stack_len, th->stack_base, keep);
	else
		err = mark_exact(as, uw, frames, max_frames, th, keep);
	if (!err)
		compact_stack__encode(th->stack, stack_len, th->stack_base, keep,
				      true, out);
	free(keep);
	return err;
}

static int put_threads(struct snapfile_writer *w, const struct stacksnap_snapshot *snap,
		       struct stacksnap_addrspace *as, const struct stacksnap_save_opts *o,
		       enum stacksnap_stack_encoding enc)
{
	size_t n = stacksnap_snapshot__thread_count(snap);
	unsigned max_frames = o->max_frames ? o->max_frames : 1024;
	struct stacksnap_unwinder *uw = NULL;
	struct stacksnap_frame *frames = NULL;
	int err = 0;

	if (enc == STACKSNAP_ENCODING_EXACT) {
		STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = max_frames,
			       .stack_scan = o->stack_scan);
		uw = stacksnap_unwinder__new(&uo);
		frames = calloc(max_frames, sizeof(*frames));
		if (!uw || !frames) {
			err = -ENOMEM;
			goto out;
		}
	}
	snapfile_writer__begin_section(w, SNAPFILE_SEC_THREADS, 1, 0);
	byte_buf__u8(&w->buf, (uint8_t)enc);
	byte_buf__u32(&w->buf, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, i);
		size_t rec = w->buf.n, nl = strnlen(th->name, sizeof(th->name));
		struct stacksnap_regs regs = th->regs;

		if (enc != STACKSNAP_ENCODING_FULL)
			snapfile__filter_regs(as, th, &regs);
		byte_buf__u32(&w->buf, 0); /* record length */
		byte_buf__u32(&w->buf, (uint32_t)th->tid);
		byte_buf__u8(&w->buf, (uint8_t)th->state);
		byte_buf__u8(&w->buf, (uint8_t)th->error);
		byte_buf__u8(&w->buf, (uint8_t)nl);
		byte_buf__put(&w->buf, th->name, nl);
		byte_buf__u32(&w->buf, regs.valid);
		for (int r = 0; r < STACKSNAP_REG_COUNT; r++)
			byte_buf__u64(&w->buf, regs.regs[r]);
		byte_buf__u64(&w->buf, th->stack_base);
		byte_buf__u64(&w->buf, th->stack ? th->stack_len : 0);
		size_t enc_at = w->buf.n;
		byte_buf__u64(&w->buf, 0); /* encoded length */
		err = snapfile__encode_stack(as, th, enc, uw, frames, max_frames, &w->buf);
		if (err)
			goto out;
		byte_buf__patch_u64(&w->buf, enc_at, w->buf.n - enc_at - 8);
		byte_buf__patch_u32(&w->buf, rec, (uint32_t)(w->buf.n - rec - 4));
	}
	snapfile_writer__end_section(w);
out:
	free(frames);
	stacksnap_unwinder__free(uw);
	return err;
}

int stacksnap_snapshot__save(const struct stacksnap_snapshot *snap,
			     struct stacksnap_addrspace *as, const char *path,
			     const struct stacksnap_save_opts *opts)
{
	struct stacksnap_save_opts o;
	struct snapfile_writer w;
	int err;

	if (!snap || !as || !path || opts_in(&o, sizeof(o), opts, 0) ||
	    o.encoding > STACKSNAP_ENCODING_FULL)
		return fail(-EINVAL);
	if (!o.encoding)
		o.encoding = DEFAULT_ENCODING;
	snapfile_writer__init(&w);
	put_process(&w, snap, as->pid, o.encoding);
	put_mappings(&w, as);
	err = put_threads(&w, snap, as, &o, o.encoding);
	if (err) {
		byte_buf__free(&w.buf);
		log_err(&as->ctx->log, "%s: out of memory writing the snapshot", path);
		return fail(err);
	}
	err = snapfile_writer__finish(&w, path, &as->ctx->log);
	return err ? fail(err) : 0;
}

/* ------------------------------------------------------------------ */
/* Reading */

/* Errors name the file and the byte offset in it. */
#define BAD SAVED_BAD

/* A string field: u32 length, bytes. Returns a malloc'ed copy or NULL
 * (bad set, or *nomem). */
static char *get_str(struct cursor *c, bool *nomem)
{
	uint32_t len = cursor_u32(c);
	const uint8_t *p = cursor_take(c, len);
	char *s;

	if (!p)
		return NULL;
	s = malloc((size_t)len + 1);
	if (!s) {
		*nomem = true;
		return NULL;
	}
	memcpy(s, p, len);
	s[len] = 0;
	for (uint32_t i = 0; i < len; i++)
		if (!s[i])
			s[i] = ' ';
	return s;
}

static int read_process(struct stacksnap_saved *s, struct cursor *c, size_t base)
{
	bool nomem = false;

	s->info.pid = (pid_t)cursor_u32(c);
	s->info.time_ns = cursor_u64(c);
	s->info.freeze_ns = cursor_u64(c);
	s->info.bytes_copied = cursor_u64(c);
	s->info.encoding = cursor_u8(c);
	free(s->cmdline);
	free(s->kernel);
	free(s->version);
	s->cmdline = get_str(c, &nomem);
	s->kernel = get_str(c, &nomem);
	s->version = get_str(c, &nomem);
	if (nomem)
		return -ENOMEM;
	if (c->bad) {
		BAD(s, base + cursor_offset(c), "process section truncated");
		return -EINVAL;
	}
	if (cursor_left(c) >= 5) { /* events files: how the trace unwound */
		s->trace_max_frames = cursor_u32(c);
		s->trace_unwind = cursor_u8(c);
	}
	s->info.cmdline = s->cmdline;
	s->info.kernel = s->kernel;
	s->info.version = s->version;
	return 0;
}

/* One IMAGE section: mapping start, length, bytes. Found by start when a
 * mapping record of kind IMAGE asks for it. */
static bool find_image(const struct stacksnap_saved *s, const uint8_t *sections,
		       size_t len, uint64_t start, const uint8_t **img, size_t *img_len)
{
	struct cursor c;

	cursor_init(&c, sections, len);
	while (cursor_left(&c) >= SNAPFILE_SECTION_HEADER_SIZE) {
		uint32_t kind = cursor_u32(&c);
		cursor_u32(&c); /* version, flags */
		uint64_t plen = cursor_u64(&c);
		const uint8_t *p = plen <= cursor_left(&c) ? cursor_take(&c, plen) : NULL;
		struct cursor ic;

		if (!p)
			return false;
		if (kind != SNAPFILE_SEC_IMAGE)
			continue;
		cursor_init(&ic, p, plen);
		uint64_t at = cursor_u64(&ic), n = cursor_u64(&ic);
		if (!ic.bad && at == start && n <= cursor_left(&ic)) {
			*img = cursor_take(&ic, n);
			*img_len = n;
			return true;
		}
	}
	return false;
}

int snapfile__read_mappings(struct stacksnap_saved *s, struct cursor *c, size_t base,
			    const uint8_t *sections, size_t sections_len)
{
	uint32_t n = cursor_u32(c);

	if (c->bad || n > cursor_left(c) / 4) {
		BAD(s, base, "mapping count %u does not fit the section", n);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		size_t at = base + cursor_offset(c);
		uint32_t rlen = cursor_u32(c);
		const uint8_t *r = rlen <= cursor_left(c) ? cursor_take(c, rlen) : NULL;
		struct stacksnap_mapping mp = { .sz = sizeof(mp) };
		char path[4096];
		struct cursor rc;
		int err;

		if (!r) {
			BAD(s, at, "mapping %u: record length %u past the section", i, rlen);
			return -EINVAL;
		}
		cursor_init(&rc, r, rlen);
		mp.start = cursor_u64(&rc);
		mp.end = cursor_u64(&rc);
		mp.offset = cursor_u64(&rc);
		mp.prot = cursor_u32(&rc);
		uint8_t kind = cursor_u8(&rc);
		mp.build_id_len = cursor_u8(&rc);
		mp.build_id = cursor_take(&rc, mp.build_id_len);
		uint16_t plen = cursor_u16(&rc);
		const uint8_t *p = cursor_take(&rc, plen);
		/* Fields a newer minor version appends are skipped. */
		if (rc.bad || plen >= sizeof(path) || mp.end <= mp.start ||
		    mp.build_id_len > ELF_BUILD_ID_MAX || kind > SNAPFILE_MAP_ANON) {
			BAD(s, at, "mapping %u: %s", i,
			    rc.bad ? "record truncated"
			    : mp.end <= mp.start ? "end not above start"
						 : "bad field value");
			return -EINVAL;
		}
		memcpy(path, p, plen);
		path[plen] = 0;
		if (memchr(path, 0, plen)) {
			BAD(s, at, "mapping %u: NUL in its path", i);
			return -EINVAL;
		}
		mp.path = plen ? path : NULL;
		if (!mp.build_id_len)
			mp.build_id = NULL;
		if (kind == SNAPFILE_MAP_IMAGE) {
			const uint8_t *img = NULL;
			size_t img_len = 0;

			if (!find_image(s, sections, sections_len, mp.start, &img, &img_len)) {
				BAD(s, at, "mapping %u (%s): its image section is missing",
				    i, path);
				return -EINVAL;
			}
			err = saved__add_image(s, &mp, img, img_len, plen ? path : "[vdso]");
		} else {
			if (kind == SNAPFILE_MAP_ANON)
				mp.path = NULL;
			err = saved__add_mapping(s, &mp, false);
		}
		if (err)
			return err;
	}
	return 0;
}

static int read_threads(struct stacksnap_saved *s, struct cursor *c, size_t base)
{
	uint8_t enc = cursor_u8(c);
	uint32_t n = cursor_u32(c);
	struct cursor scan = *c;
	size_t total = 0, off = 0;

	/* A record is at least 4 + 4+3 + 4 + 17*8 + 3*8 bytes. */
	if (c->bad || n > cursor_left(c) / 175 || enc > STACKSNAP_ENCODING_FULL) {
		BAD(s, base, c->bad ? "threads section truncated"
			     : enc > STACKSNAP_ENCODING_FULL ? "unknown stack encoding"
							    : "thread count does not fit the section");
		return -EINVAL;
	}
	/* First pass: the decoded sizes, bounded before anything is allocated. */
	for (uint32_t i = 0; i < n; i++) {
		size_t at = base + cursor_offset(&scan);
		uint32_t rlen = cursor_u32(&scan);
		const uint8_t *r = rlen <= cursor_left(&scan) ? cursor_take(&scan, rlen) : NULL;
		struct cursor rc;

		if (!r) {
			BAD(s, at, "thread %u: record length %u past the section", i, rlen);
			return -EINVAL;
		}
		cursor_init(&rc, r, rlen);
		cursor_skip(&rc, 4 + 2);
		cursor_skip(&rc, cursor_u8(&rc));
		cursor_skip(&rc, 4 + 8 * STACKSNAP_REG_COUNT + 8);
		uint64_t len = cursor_u64(&rc);
		if (rc.bad || len > SNAPFILE_MAX_STACK || total + len > SNAPFILE_MAX_STACKS) {
			BAD(s, at, "thread %u: %s", i, rc.bad ? "record truncated"
				   : "stack length beyond the reader's limit (64 MiB a "
				     "thread, 256 MiB in all)");
			return -EINVAL;
		}
		total += (size_t)((len + 7) & ~7ull);
	}
	s->threads = calloc(n ? n : 1, sizeof(*s->threads));
	s->stacks = calloc(1, total ? total : 1);
	if (!s->threads || !s->stacks)
		return -ENOMEM;
	s->info.encoding = enc;
	for (uint32_t i = 0; i < n; i++) {
		struct stacksnap_thread *th = &s->threads[s->n];
		size_t at = base + cursor_offset(c);
		uint32_t rlen = cursor_u32(c);
		const uint8_t *r = cursor_take(c, rlen);
		struct cursor rc;
		size_t bad_off;

		cursor_init(&rc, r, rlen);
		th->tid = (pid_t)cursor_u32(&rc);
		th->state = (char)cursor_u8(&rc);
		th->error = cursor_u8(&rc);
		uint8_t nl = cursor_u8(&rc);
		const uint8_t *name = cursor_take(&rc, nl);
		if (name) {
			size_t k = nl < sizeof(th->name) - 1 ? nl : sizeof(th->name) - 1;
			memcpy(th->name, name, k);
			th->name[k] = 0;
		}
		th->regs.valid = cursor_u32(&rc);
		for (int k = 0; k < STACKSNAP_REG_COUNT; k++)
			th->regs.regs[k] = cursor_u64(&rc);
		th->stack_base = cursor_u64(&rc);
		th->stack_len = (size_t)cursor_u64(&rc);
		uint64_t elen = cursor_u64(&rc);
		const uint8_t *e = elen <= cursor_left(&rc) ? cursor_take(&rc, elen) : NULL;
		if (!e && elen) {
			BAD(s, at, "thread %u (tid %d): encoded stack of %" PRIu64
				   " bytes past its record", i, (int)th->tid, elen);
			return -EINVAL;
		}
		if (th->stack_len) {
			struct cursor ec;

			th->stack = s->stacks + off;
			cursor_init(&ec, e, elen);
			if (compact_stack__decode(&ec, s->stacks + off, th->stack_len,
						  th->stack_base,
						  enc != STACKSNAP_ENCODING_FULL, &bad_off)) {
				BAD(s, at + (size_t)(e - r) + 4 + bad_off,
				    "thread %u (tid %d): corrupt stack encoding", i, (int)th->tid);
				return -EINVAL;
			}
			off += (th->stack_len + 7) & ~(size_t)7;
		}
		s->n++;
	}
	return 0;
}

static int parse(struct stacksnap_saved *s)
{
	const uint8_t *b = s->image;
	size_t len = s->image_len;
	struct cursor c;
	uint64_t file_len;
	uint32_t crc, nsec;
	uint16_t major, minor;
	uint32_t hsize;
	bool have_threads = false, streamed;
	int err;

	cursor_init(&c, b, len);
	const uint8_t *magic = cursor_take(&c, 8);
	if (!magic || memcmp(magic, SNAPFILE_MAGIC, 8)) {
		BAD(s, 0, "not a stacksnap snapshot file (bad magic)");
		return -EINVAL;
	}
	major = cursor_u16(&c);
	minor = cursor_u16(&c);
	hsize = cursor_u32(&c);
	file_len = cursor_u64(&c);
	crc = cursor_u32(&c);
	nsec = cursor_u32(&c);
	if (c.bad) {
		BAD(s, len, "header truncated (%zu of %d bytes)", len, SNAPFILE_HEADER_SIZE);
		return -EINVAL;
	}
	if (major != SNAPFILE_MAJOR) {
		BAD(s, SNAPFILE_OFF_MAJOR, "format version %u.%u; this stacksnap reads "
			"version %d (use a %s stacksnap)", major, minor, SNAPFILE_MAJOR,
		    major > SNAPFILE_MAJOR ? "newer" : "matching");
		return major > SNAPFILE_MAJOR ? -ENOTSUP : -EINVAL;
	}
	if (hsize < SNAPFILE_HEADER_SIZE || hsize > len) {
		BAD(s, SNAPFILE_OFF_HEADER_SIZE, "header size %u is wrong", hsize);
		return -EINVAL;
	}
	/* An events file whose writer never closed it (killed, crashed)
	 * has no length, checksum or count yet: its sections, each with its
	 * own checksum, are read up to the last complete one. */
	streamed = minor >= SNAPFILE_MINOR_EVENTS && !file_len && !crc && !nsec;
	if (!streamed && file_len != len) {
		BAD(s, SNAPFILE_OFF_FILE_LEN, "file is %zu bytes, its header says %" PRIu64
			" (truncated or appended to)", len, file_len);
		return -EINVAL;
	}
	if (!streamed &&
	    elf_crc32(0, b + SNAPFILE_HEADER_SIZE, len - SNAPFILE_HEADER_SIZE) != crc) {
		BAD(s, SNAPFILE_OFF_CRC, "checksum mismatch: the file is corrupt");
		return -EINVAL;
	}
	s->info.format_version = major * 100u + minor;
	/* Sections: checked in one pass, so later passes may trust lengths. */
	const uint8_t *sections = b + hsize;
	size_t sections_len = len - hsize;
	cursor_init(&c, sections, sections_len);
	for (uint32_t i = 0; streamed ? cursor_left(&c) > 0 : i < nsec; i++) {
		size_t at = hsize + cursor_offset(&c);
		uint32_t kind = cursor_u32(&c);
		uint16_t ver = cursor_u16(&c), flags = cursor_u16(&c);
		uint64_t plen = cursor_u64(&c);
		const uint8_t *p = !c.bad && plen <= cursor_left(&c) ? cursor_take(&c, plen) : NULL;
		struct cursor pc;

		if (!p && streamed) {
			/* The write the writer was killed in: what came before
			 * is whole (each section checked on its own). */
			log_warn(&s->ctx->log, "%s: offset %zu: the file ends inside "
				 "section %u: its writer did not finish (killed?); "
				 "read up to there", s->path, at, i);
			s->cut_at = at;
			break;
		}
		if (!p) {
			BAD(s, at, "section %u: %s", i, c.bad ? "header truncated"
							       : "length past the end of the file");
			return -EINVAL;
		}
		if (flags & SNAPFILE_SEC_CRC) {
			uint32_t want;

			if (plen < 4) {
				BAD(s, at, "section %u: too short for its checksum", i);
				return -EINVAL;
			}
			plen -= 4;
			memcpy(&want, p + plen, 4);
			want = le32toh(want);
			if (elf_crc32(0, p, plen) != want) {
				BAD(s, at, "section %u (kind %u): checksum mismatch: the "
					   "section is corrupt", i, kind);
				return -EINVAL;
			}
		} else if (streamed) {
			BAD(s, at, "section %u: a streamed file's sections carry "
				   "checksums; this one does not", i);
			return -EINVAL;
		}
		cursor_init(&pc, p, plen);
		size_t pbase = at + SNAPFILE_SECTION_HEADER_SIZE;
		err = 0;
		switch (kind) {
		case SNAPFILE_SEC_PROCESS:
			err = read_process(s, &pc, pbase);
			break;
		case SNAPFILE_SEC_MAPPINGS:
			err = snapfile__read_mappings(s, &pc, pbase, sections, sections_len);
			break;
		case SNAPFILE_SEC_IMAGE:
			break; /* read with the mapping that names it */
		case SNAPFILE_SEC_THREADS:
			if (have_threads) {
				BAD(s, at, "a second threads section");
				return -EINVAL;
			}
			have_threads = true;
			err = read_threads(s, &pc, pbase);
			break;
		case SNAPFILE_SEC_EVENT:
		case SNAPFILE_SEC_ADDRSPACE:
		case SNAPFILE_SEC_EVENT_KIND:
			err = events__read_section(s, kind, &pc, pbase, sections,
						   sections_len);
			break;
		default:
			if (flags & SNAPFILE_SEC_REQUIRED) {
				BAD(s, at, "section kind %u (version %u) is required but "
					   "unknown to this stacksnap (use a newer one)",
				    kind, ver);
				return -ENOTSUP;
			}
			break; /* kinds of newer versions: skipped */
		}
		if (err)
			return err;
	}
	if (cursor_left(&c) && !s->cut_at) {
		BAD(s, hsize + cursor_offset(&c), "%zu bytes after the last section",
		    cursor_left(&c));
		return -EINVAL;
	}
	return 0;
}

static struct stacksnap_saved *open_parsed(struct stacksnap_saved *s,
					   const struct stacksnap_saved_opts *opts)
{
	struct stacksnap_saved_opts o;
	int err;

	if (opts_in(&o, sizeof(o), opts, 0))
		err = -EINVAL;
	else
		err = parse(s);
	if (err) {
		stacksnap_saved__free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

struct stacksnap_saved *stacksnap_saved__open(struct stacksnap_ctx *ctx,
					      const char *path,
					      const struct stacksnap_saved_opts *opts)
{
	struct stacksnap_saved *s;
	int err;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	s = saved__new(ctx, path);
	if (!s)
		return NULL;
	err = saved__map_file(s, path);
	if (err) {
		stacksnap_saved__free(s);
		errno = -err;
		return NULL;
	}
	return open_parsed(s, opts);
}

struct stacksnap_saved *stacksnap_saved__open_mem(struct stacksnap_ctx *ctx,
						  const void *bytes, size_t len,
						  const struct stacksnap_saved_opts *opts)
{
	struct stacksnap_saved *s;
	void *copy;

	if (!bytes && len) {
		errno = EINVAL;
		return NULL;
	}
	s = saved__new(ctx, NULL);
	if (!s)
		return NULL;
	copy = malloc(len ? len : 1);
	if (!copy) {
		stacksnap_saved__free(s);
		errno = ENOMEM;
		return NULL;
	}
	if (len)
		memcpy(copy, bytes, len);
	s->image = copy;
	s->image_len = len;
	s->image_owned = true;
	return open_parsed(s, opts);
}
