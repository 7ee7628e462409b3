/* snapshot_reader.c - reads a stacksnap snapshot file (docs/snapshot-format.md)
 * back into a saved capture (stacksnap_saved__open): the container, the
 * PROCESS, MAPPINGS, IMAGE and THREADS sections, and the event sections of
 * an events file handed to its sibling reader (events_reader.c). */
#define _GNU_SOURCE
#include "saved/named_reader.h"
#include "saved/readers.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/log.h"
#include "base/opts.h"
#include "elf/elf_image.h"
#include "saved/saved.h"
#include "snapfile/compact_stack.h"
#include "snapfile/snapshot_file.h"
#include "symbolize/jit_symbols.h"
#include "symbolize/perf_map.h"

/* Errors name the file and the byte offset in it. */
#define BAD SAVED_BAD

/* The goroutines section (docs/go.md): counts bounded by the section's
 * size before anything is allocated; a bad section is an error. From
 * version SNAPFILE_GOROUTINES_LABELS each goroutine's labels follow all
 * the goroutines. */
static int read_goroutines(struct stacksnap_saved *s, struct cursor *c,
			   size_t base, unsigned version)
{
	uint32_t n = cursor_u32(c);
	struct cursor scan = *c;
	size_t nframes = 0, arena_len = cursor_left(c) + 1, at = 0, k = 0;
	size_t nlabels = 0;
	bool has_labels = version >= SNAPFILE_GOROUTINES_LABELS;

	/* A goroutine takes at least 8+4+4+8+4+4+4+4+4+4 bytes, a frame
	 * 8+4+4+4+4+4. */
	if (c->bad || s->goroutines || n > SNAPFILE_MAX_GOROUTINES ||
	    n > cursor_left(c) / 48) {
		BAD(s, base, "%s", s->goroutines ? "a second goroutines section"
						 : "goroutine count does not fit the section");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n && !scan.bad; i++) {
		uint32_t nf;

		cursor_skip(&scan, 8);
		for (int j = 0; j < 2; j++)
			cursor_skip(&scan, cursor_u32(&scan));
		cursor_skip(&scan, 12);
		for (int j = 0; j < 2; j++)
			cursor_skip(&scan, cursor_u32(&scan));
		cursor_skip(&scan, 4);
		cursor_skip(&scan, cursor_u32(&scan));
		nf = cursor_u32(&scan);
		if (nf > SNAPFILE_MAX_GFRAMES || nf > cursor_left(&scan) / 28) {
			BAD(s, base + cursor_offset(&scan),
			    "goroutine %u: frame count does not fit", i);
			return -EINVAL;
		}
		for (uint32_t f = 0; f < nf && !scan.bad; f++) {
			cursor_skip(&scan, 16);
			for (int j = 0; j < 2; j++)
				cursor_skip(&scan, cursor_u32(&scan));
			cursor_skip(&scan, 4);
		}
		nframes += nf;
	}
	for (uint32_t i = 0; has_labels && i < n && !scan.bad; i++) {
		uint32_t nl = cursor_u32(&scan);

		/* A pair takes at least two string lengths. */
		if (nl > SNAPFILE_MAX_GLABELS || nl > cursor_left(&scan) / 8) {
			BAD(s, base + cursor_offset(&scan),
			    "goroutine %u: label count does not fit", i);
			return -EINVAL;
		}
		for (uint32_t j = 0; j < 2 * nl; j++)
			cursor_skip(&scan, cursor_u32(&scan));
		nlabels += 2 * (size_t)nl;
	}
	if (scan.bad) {
		BAD(s, base + cursor_offset(&scan), "goroutines section truncated");
		return -EINVAL;
	}
	s->goroutines = calloc(n ? n : 1, sizeof(*s->goroutines));
	s->gframes = calloc(nframes ? nframes : 1, sizeof(*s->gframes));
	s->gstrings = malloc(arena_len * 2);
	s->glabels = calloc(nlabels ? nlabels : 1, sizeof(*s->glabels));
	if (!s->goroutines || !s->gframes || !s->gstrings || !s->glabels)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct stacksnap_goroutine *g = &s->goroutines[i];
		uint32_t nf;

		g->sz = sizeof(*g);
		g->goid = (int64_t)cursor_u64(c);
		g->status = readers__arena_str(c, s->gstrings, &at);
		g->wait_reason = readers__arena_str(c, s->gstrings, &at);
		g->wait_ns = (int64_t)cursor_u64(c);
		g->thread = (pid_t)cursor_u32(c);
		g->created_by = readers__arena_str(c, s->gstrings, &at);
		g->created_file = readers__arena_str(c, s->gstrings, &at);
		g->created_line = cursor_u32(c);
		g->end = readers__arena_str(c, s->gstrings, &at);
		nf = cursor_u32(c);
		g->frames = &s->gframes[k];
		g->nframes = nf;
		if (!g->status)
			g->status = "?";
		for (uint32_t f = 0; f < nf; f++) {
			struct stacksnap_runtime_frame *o = &s->gframes[k++];

			o->sz = sizeof(*o);
			o->runtime = STACKSNAP_RUNTIME_GO;
			o->pc = cursor_u64(c);
			o->native_index = cursor_u32(c);
			o->flags = cursor_u32(c);
			o->function = readers__arena_str(c, s->gstrings, &at);
			o->file = readers__arena_str(c, s->gstrings, &at);
			o->line = cursor_u32(c);
			if (!o->function)
				o->function = "??";
		}
	}
	k = 0;
	for (uint32_t i = 0; has_labels && i < n; i++) {
		struct stacksnap_goroutine *g = &s->goroutines[i];
		uint32_t nl = cursor_u32(c);

		g->labels = nl ? &s->glabels[k] : NULL;
		g->nlabels = nl;
		for (uint32_t j = 0; j < 2 * nl; j++, k++) {
			const char *v = readers__arena_str(c, s->gstrings, &at);

			s->glabels[k] = v ? v : ""; /* a value may be empty */
		}
	}
	s->ngoroutines = n;
	return 0;
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
	s->cmdline = readers__take_str(c, ' ', &nomem);
	s->kernel = readers__take_str(c, ' ', &nomem);
	s->version = readers__take_str(c, ' ', &nomem);
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
	if (cursor_left(c) >= 8) { /* events files: the clock and the host */
		s->info.clock_offset_ns = (int64_t)cursor_u64(c);
		free(s->boot_id);
		free(s->hostname);
		s->boot_id = readers__take_str(c, ' ', &nomem);
		s->hostname = readers__take_str(c, ' ', &nomem);
		if (nomem)
			return -ENOMEM;
		if (c->bad) {
			BAD(s, base + cursor_offset(c), "process section truncated");
			return -EINVAL;
		}
	}
	s->info.boot_id = s->boot_id ? s->boot_id : "";
	s->info.hostname = s->hostname ? s->hostname : "";
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

int snapshot_reader__read_mappings(struct stacksnap_saved *s, struct cursor *c,
				   size_t base, const uint8_t *sections,
				   size_t sections_len)
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

/* The JIT symbols the writer kept (SNAPFILE_SEC_JIT_SYMBOLS): the names
 * of the saved stacks' JIT code, read into a perf map the address space
 * names anonymous code from. A record that is not a name (empty, a NUL
 * or a newline in it, end not above start) is skipped. */
static int read_jit_symbols(struct stacksnap_saved *s, struct cursor *c, size_t base)
{
	uint32_t n = cursor_u32(c);
	struct perf_map *pm;
	struct jit_symbols *js;
	char *text, *p;
	int err;

	/* A record is at least 8 + 8 + 2 + 1 bytes. */
	if (c->bad || n > cursor_left(c) / 19) {
		BAD(s, base, "JIT symbols: count does not fit the section");
		return -EINVAL;
	}
	/* Each line is at most 16 + 1 + 16 + 1 + name + 1 bytes. */
	p = text = malloc(cursor_left(c) + (size_t)n * 35 + 1);
	if (!text)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t start = cursor_u64(c), end = cursor_u64(c);
		uint16_t len = cursor_u16(c);
		const char *name = (const char *)cursor_take(c, len);

		if (c->bad) {
			free(text);
			BAD(s, base, "JIT symbols: record %u truncated", i);
			return -EINVAL;
		}
		if (!len || end <= start || memchr(name, 0, len) ||
		    memchr(name, '\n', len))
			continue;
		p += sprintf(p, "%llx %llx ", (unsigned long long)start,
			     (unsigned long long)(end - start));
		memcpy(p, name, len);
		p += len;
		*p++ = '\n';
	}
	err = perf_map__from_text(text, (size_t)(p - text), &pm);
	free(text);
	if (err)
		return err;
	if (!(js = jit_symbols__from_map(pm)))
		return -ENOMEM;
	addrspace__set_jit(s->as, js);
	return 0;
}

/* A THREADS section of version 2 or later appends each thread's other
 * stacks to its record; in version 1 whatever follows the stack is a
 * newer writer's field, skipped. */
#define THREADS_VERSION_MORE_STACKS 2

static int read_threads(struct stacksnap_saved *s, struct cursor *c, size_t base,
			unsigned version)
{
	bool has_more = version >= THREADS_VERSION_MORE_STACKS;
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
		/* The other stacks appended to the record (none in older
		 * files): their lengths count in the same bounds. */
		cursor_skip(&rc, cursor_u64(&rc));
		uint8_t nmore = has_more && cursor_left(&rc) ? cursor_u8(&rc) : 0;
		for (uint8_t k = 0; k < nmore && !rc.bad && len <= SNAPFILE_MAX_STACK; k++) {
			uint64_t mlen;

			cursor_skip(&rc, 8);
			mlen = cursor_u64(&rc);
			if (mlen > SNAPFILE_MAX_STACK)
				len = mlen;
			else
				len += (mlen + 7) & ~7ull;
			cursor_skip(&rc, cursor_u64(&rc));
		}
		if (nmore > STACKSNAP_MORE_STACKS) {
			BAD(s, at, "thread %u: %u other stacks (at most %u)", i,
			    nmore, STACKSNAP_MORE_STACKS);
			return -EINVAL;
		}
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
		/* Bounded by the first pass. */
		th->nmore_stacks = has_more && cursor_left(&rc) ? cursor_u8(&rc) : 0;
		for (unsigned k = 0; k < th->nmore_stacks; k++) {
			struct stacksnap_stack_range *m = &th->more_stacks[k];
			struct cursor ec;

			m->base = cursor_u64(&rc);
			m->len = (size_t)cursor_u64(&rc);
			elen = cursor_u64(&rc);
			e = elen <= cursor_left(&rc) ? cursor_take(&rc, elen) : NULL;
			cursor_init(&ec, e, e ? elen : 0);
			m->bytes = s->stacks + off;
			if (rc.bad || m->base + m->len < m->base ||
			    compact_stack__decode(&ec, s->stacks + off, m->len, m->base,
						  enc != STACKSNAP_ENCODING_FULL, &bad_off)) {
				BAD(s, at, "thread %u (tid %d): corrupt encoding of its "
					   "other stack %u", i, (int)th->tid, k);
				return -EINVAL;
			}
			off += (m->len + 7) & ~(size_t)7;
		}
		s->n++;
	}
	return 0;
}

/* One section of a checked length: its payload in pc, its header at file
 * offset at. Returns 0 (kinds of newer versions skipped), or -errno
 * (logged). */
static int read_section(struct stacksnap_saved *s, uint32_t kind, uint16_t ver,
			uint16_t flags, struct cursor *pc, size_t at,
			const uint8_t *sections, size_t sections_len, bool *have_threads)
{
	size_t base = at + SNAPFILE_SECTION_HEADER_SIZE; /* the payload's */
	int err = 0;

	switch (kind) {
	case SNAPFILE_SEC_PROCESS:
		err = read_process(s, pc, base);
		break;
	case SNAPFILE_SEC_MAPPINGS:
		err = snapshot_reader__read_mappings(s, pc, base, sections, sections_len);
		break;
	case SNAPFILE_SEC_IMAGE:
		break; /* read with the mapping that names it */
	case SNAPFILE_SEC_THREADS:
		if (*have_threads) {
			BAD(s, at, "a second threads section");
			return -EINVAL;
		}
		*have_threads = true;
		err = read_threads(s, pc, base, ver);
		break;
	case SNAPFILE_SEC_GOROUTINES:
		err = read_goroutines(s, pc, base, ver);
		break;
	case SNAPFILE_SEC_RUNTIME:
		err = runtime_reader__read_section(s, pc, base, ver);
		break;
	case SNAPFILE_SEC_JAVA:
	case SNAPFILE_SEC_NAMED:
		err = named_reader__read_section(s, pc, base,
						 kind == SNAPFILE_SEC_NAMED);
		break;
	case SNAPFILE_SEC_JIT_SYMBOLS:
		err = read_jit_symbols(s, pc, base);
		break;
	case SNAPFILE_SEC_WAITS:
		err = waits_reader__read_section(s, pc, base);
		break;
	case SNAPFILE_SEC_EVENT:
	case SNAPFILE_SEC_ADDRSPACE:
	case SNAPFILE_SEC_EVENT_KIND:
	case SNAPFILE_SEC_LOST:
		err = events_reader__read_section(s, kind, pc, base, sections, sections_len);
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
	return err;
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
		err = read_section(s, kind, ver, flags, &pc, at, sections, sections_len,
				   &have_threads);
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

/* A snapshot file keeps no reader state beyond s itself. */
const struct saved_ops snapshot_reader_ops = {
	.name = "snapshot file",
};

static struct stacksnap_saved *open_parsed(struct stacksnap_saved *s,
					   const struct stacksnap_saved_opts *opts)
{
	struct stacksnap_saved_opts o;
	int err;

	s->ops = &snapshot_reader_ops; /* an events file's reader takes over */
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
