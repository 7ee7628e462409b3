/* events_file.c - trace events in the snapshot container: the streaming
 * writer of `stacksnap trace --save` (stacksnap_trace_writer) and the
 * reader of its sections into a saved capture (stacksnap_saved__event). */
#define _GNU_SOURCE
#include "format/events_file.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/log.h"
#include "base/opts.h"
#include "capture/saved.h"
#include "elf/elf_image.h"
#include "format/snapshot_file.h"
#include "mem/compact_stack.h"

/* Buffered bytes are written once this many are pending. */
#define FLUSH_AT 65536

/* ------------------------------------------------------------------ */
/* Writer */

/* The generation of one process's address space last written.
 * Invariant: as_id < the writer's nas; hash is that of the mappings
 * the ADDRSPACE section as_id holds. */
struct pid_gen {
	pid_t pid;
	uint32_t gen;
	uint32_t as_id;
	uint64_t hash;
};

/* Invariant: w.buf holds the bytes not yet written (whole sections
 * only); off bytes are in the file and crc is the CRC-32 of those at
 * [32, off). err is the first write error: once set nothing more is
 * written and close returns it. */
struct stacksnap_trace_writer {
	struct stacksnap_ctx *ctx;
	char *path;
	int fd;
	struct snapfile_writer w;
	uint64_t off;
	uint32_t crc;
	int err;
	struct stacksnap_trace_writer_opts o;
	struct pid_gen *pids;
	size_t npids, cappids;
	uint32_t nas;		/* ADDRSPACE sections written */
	uint8_t *kinds;		/* kinds[i]: EVENT_KIND i written */
	size_t nkinds;
	uint64_t *images;	/* starts of the vDSO images written */
	size_t nimages;
	struct stacksnap_unwinder *uw; /* EXACT: the walk that marks words */
	struct stacksnap_frame *frames;
	uint8_t *expanded;	/* a stack compacted in the kernel, expanded */
	size_t expanded_cap;
};

static void put_str(struct byte_buf *b, const char *s)
{
	size_t n = strlen(s);

	byte_buf__u32(b, (uint32_t)n);
	byte_buf__put(b, s, n);
}

int stacksnap_trace_writer__flush(struct stacksnap_trace_writer *tw)
{
	struct byte_buf *b = &tw->w.buf;
	size_t skip;

	if (!tw)
		return fail(-EINVAL);
	if (!tw->err && b->failed)
		tw->err = -ENOMEM;
	if (tw->err) {
		b->n = 0;
		return fail(tw->err);
	}
	for (size_t at = 0; at < b->n;) {
		ssize_t r = write(tw->fd, b->p + at, b->n - at);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			tw->err = r < 0 ? -errno : -EIO;
			log_err(&tw->ctx->log, "%s: cannot write the events: %s", tw->path,
				strerror(-tw->err));
			b->n = 0;
			return fail(tw->err);
		}
		at += (size_t)r;
	}
	skip = tw->off < SNAPFILE_HEADER_SIZE ? SNAPFILE_HEADER_SIZE - (size_t)tw->off : 0;
	if (skip < b->n)
		tw->crc = elf_crc32(tw->crc, b->p + skip, b->n - skip);
	tw->off += b->n;
	b->n = 0;
	return 0;
}

struct stacksnap_trace_writer *
stacksnap_trace_writer__new(struct stacksnap_ctx *ctx, const char *path,
			    const struct stacksnap_trace_writer_opts *opts)
{
	struct stacksnap_trace_writer *tw;
	struct timespec ts;
	struct utsname u;
	char cmd[4096];

	if (!ctx || !path) {
		errno = EINVAL;
		return NULL;
	}
	tw = calloc(1, sizeof(*tw));
	if (!tw || !(tw->path = strdup(path))) {
		free(tw);
		errno = ENOMEM;
		return NULL;
	}
	tw->ctx = ctx;
	tw->fd = -1;
	if (opts_in(&tw->o, sizeof(tw->o), opts, 0) ||
	    tw->o.encoding > STACKSNAP_ENCODING_FULL) {
		stacksnap_trace_writer__close(tw);
		errno = EINVAL;
		return NULL;
	}
	if (!tw->o.encoding)
		tw->o.encoding = STACKSNAP_ENCODING_POINTERS; /* as snapshots */
	if (!tw->o.max_frames)
		tw->o.max_frames = 256; /* the trace's default */
	if (tw->o.encoding == STACKSNAP_ENCODING_EXACT) {
		STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = tw->o.max_frames);
		tw->uw = stacksnap_unwinder__new(&uo);
		tw->frames = calloc(tw->o.max_frames, sizeof(*tw->frames));
		if (!tw->uw || !tw->frames) {
			stacksnap_trace_writer__close(tw);
			errno = ENOMEM;
			return NULL;
		}
	}
	/* Not a temporary name: the file is readable while it grows, and
	 * after a crash up to the last section written. */
	tw->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (tw->fd < 0) {
		int err = errno;

		log_err(&ctx->log, "%s: cannot create: %s", path, strerror(err));
		stacksnap_trace_writer__close(tw);
		errno = err;
		return NULL;
	}
	snapfile_writer__init(&tw->w);
	byte_buf__patch_u32(&tw->w.buf, SNAPFILE_OFF_MAJOR,
			    SNAPFILE_MAJOR | (uint32_t)SNAPFILE_MINOR_EVENTS << 16);
	clock_gettime(CLOCK_REALTIME, &ts);
	if (uname(&u))
		u.release[0] = 0;
	cmd[0] = 0;
	if (tw->o.pid > 0)
		snapfile__read_cmdline(tw->o.pid, cmd, sizeof(cmd));
	snapfile_writer__begin_section(&tw->w, SNAPFILE_SEC_PROCESS, 1, SNAPFILE_SEC_CRC);
	byte_buf__u32(&tw->w.buf, (uint32_t)tw->o.pid);
	byte_buf__u64(&tw->w.buf, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
	byte_buf__u64(&tw->w.buf, 0); /* freeze time: none */
	byte_buf__u64(&tw->w.buf, 0); /* bytes copied: per event */
	byte_buf__u8(&tw->w.buf, (uint8_t)tw->o.encoding);
	put_str(&tw->w.buf, cmd);
	put_str(&tw->w.buf, u.release);
	put_str(&tw->w.buf, stacksnap_version());
	byte_buf__u32(&tw->w.buf, tw->o.max_frames);
	byte_buf__u8(&tw->w.buf, (uint8_t)tw->o.unwind);
	snapfile_writer__end_section_crc(&tw->w);
	if (stacksnap_trace_writer__flush(tw)) {
		int err = errno;

		unlink(path);
		stacksnap_trace_writer__close(tw);
		errno = err;
		return NULL;
	}
	return tw;
}

/* The code mappings of as, as far as a reader rebuilds them. */
static uint64_t as_hash(const struct stacksnap_addrspace *as)
{
	uint64_t h = 1469598103934665603ull;

#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
	for (size_t i = 0; i < as->n; i++) {
		const struct as_map *m = &as->maps[i];

		MIX(m->start);
		MIX(m->end);
		MIX(m->offset);
		MIX(m->prot);
		MIX((uintptr_t)m->mod); /* the module holds the build-id */
		for (const char *p = m->path; p && *p; p++)
			MIX(*p);
	}
#undef MIX
	return h;
}

/* The ADDRSPACE section number of pid's current mappings, writing a new
 * generation first when they changed (exec, dlopen, a re-read). */
static uint32_t addrspace_id(struct stacksnap_trace_writer *tw, pid_t pid,
			     struct stacksnap_addrspace *as)
{
	uint64_t h;
	struct pid_gen *g = NULL;

	addrspace__resolve_all(as); /* the hash covers every module */
	h = as_hash(as);

	for (size_t i = 0; i < tw->npids && !g; i++)
		if (tw->pids[i].pid == pid)
			g = &tw->pids[i];
	if (g && g->hash == h)
		return g->as_id;
	if (!g) {
		if (tw->npids == tw->cappids) {
			size_t cap = tw->cappids ? tw->cappids * 2 : 16;
			struct pid_gen *p = realloc(tw->pids, cap * sizeof(*p));

			if (!p) {
				tw->w.buf.failed = true;
				return 0;
			}
			tw->pids = p;
			tw->cappids = cap;
		}
		g = &tw->pids[tw->npids++];
		*g = (struct pid_gen){ .pid = pid };
	}
	/* The vDSO's image first, once per place it is mapped at. */
	for (size_t i = 0; i < as->n; i++) {
		const struct as_map *m = &as->maps[i];
		bool seen = false;

		if (!m->mod || !m->mod->is_vdso)
			continue;
		for (size_t k = 0; k < tw->nimages && !seen; k++)
			seen = tw->images[k] == m->start;
		if (seen)
			continue;
		uint64_t *im = realloc(tw->images, (tw->nimages + 1) * sizeof(*im));
		if (!im) {
			tw->w.buf.failed = true;
			return 0;
		}
		tw->images = im;
		tw->images[tw->nimages++] = m->start;
		snapfile__put_image(&tw->w, m, SNAPFILE_SEC_CRC);
	}
	snapfile_writer__begin_section(&tw->w, SNAPFILE_SEC_ADDRSPACE, 1, SNAPFILE_SEC_CRC);
	byte_buf__u32(&tw->w.buf, (uint32_t)pid);
	byte_buf__u32(&tw->w.buf, ++g->gen);
	snapfile__put_mapping_records(&tw->w.buf, as);
	snapfile_writer__end_section_crc(&tw->w);
	g->hash = h;
	g->as_id = tw->nas++;
	return g->as_id;
}

static void put_kind(struct stacksnap_trace_writer *tw, unsigned event, const char *name)
{
	if (event < tw->nkinds && tw->kinds[event])
		return;
	if (event >= tw->nkinds) {
		uint8_t *k = realloc(tw->kinds, event + 1);

		if (!k) {
			tw->w.buf.failed = true;
			return;
		}
		memset(k + tw->nkinds, 0, event + 1 - tw->nkinds);
		tw->kinds = k;
		tw->nkinds = event + 1;
	}
	tw->kinds[event] = 1;
	snapfile_writer__begin_section(&tw->w, SNAPFILE_SEC_EVENT_KIND, 1, SNAPFILE_SEC_CRC);
	byte_buf__u32(&tw->w.buf, event);
	put_str(&tw->w.buf, name);
	snapfile_writer__end_section_crc(&tw->w);
}

int stacksnap_trace_writer__add(struct stacksnap_trace_writer *tw,
				const struct stacksnap_trace_event *ev,
				const struct stacksnap_trace_field *fields,
				size_t nfields)
{
	const struct stacksnap_capture *cap;
	struct stacksnap_thread th = { 0 };
	struct stacksnap_regs regs;
	struct byte_buf *b;
	uint32_t as_id = UINT32_MAX;
	uint16_t flags = 0;
	size_t comm_len, enc_at;
	int err;

	if (!tw || !ev || !ev->capture || (nfields && !fields))
		return fail(-EINVAL);
	if (tw->err)
		return fail(tw->err);
	cap = ev->capture;
	b = &tw->w.buf;
	if (ev->as)
		as_id = addrspace_id(tw, ev->pid, ev->as);
	put_kind(tw, ev->event, ev->name);
	memcpy(th.regs.regs, cap->regs, sizeof(th.regs.regs));
	th.regs.valid = (1u << STACKSNAP_REG_COUNT) - 1;
	th.stack_base = cap->stack_start;
	/* No address space tells pointers from data: no stack is kept. */
	if (tw->o.unwind != STACKSNAP_TRACE_UNWIND_KERNEL && ev->as &&
	    (cap->flags & STACKSNAP_CAPTURE_REGS)) {
		flags |= EVENTS_HAS_STACK;
		if (cap->flags & STACKSNAP_CAPTURE_COMPACT) {
			if (cap->stack_len > tw->expanded_cap) {
				uint8_t *x = realloc(tw->expanded, cap->stack_len);

				if (!x)
					return fail(-ENOMEM);
				tw->expanded = x;
				tw->expanded_cap = cap->stack_len;
			}
			if (compact_stack__expand(ev->stack, cap->data_len, cap->stack_len,
						  tw->expanded))
				return fail(-EINVAL);
			th.stack = tw->expanded;
			th.stack_len = cap->stack_len;
			flags |= EVENTS_POISON;
		} else {
			th.stack = ev->stack;
			th.stack_len = cap->data_len;
		}
	} else {
		flags |= EVENTS_HAS_FRAMES;
	}
	regs = th.regs;
	if (tw->o.encoding != STACKSNAP_ENCODING_FULL && ev->as)
		snapfile__filter_regs(ev->as, &th, &regs);
	else if (tw->o.encoding != STACKSNAP_ENCODING_FULL)
		for (int i = 0; i < STACKSNAP_REG_COUNT; i++)
			if (i != STACKSNAP_REG_RIP && i != STACKSNAP_REG_RSP)
				regs.regs[i] = 0;
	comm_len = ev->comm ? strnlen(ev->comm, 255) : 0;

	snapfile_writer__begin_section(&tw->w, SNAPFILE_SEC_EVENT, 1, SNAPFILE_SEC_CRC);
	byte_buf__u64(b, ev->time_ns);
	byte_buf__u32(b, (uint32_t)ev->pid);
	byte_buf__u32(b, (uint32_t)ev->tid);
	byte_buf__u32(b, ev->cpu);
	byte_buf__u32(b, ev->event);
	byte_buf__u32(b, as_id);
	byte_buf__u16(b, flags);
	byte_buf__u8(b, (uint8_t)ev->end);
	byte_buf__u8(b, (uint8_t)comm_len);
	byte_buf__put(b, ev->comm, comm_len);
	byte_buf__u32(b, cap->stack_len);
	byte_buf__u8(b, (uint8_t)tw->o.encoding);
	byte_buf__u32(b, regs.valid);
	for (int i = 0; i < STACKSNAP_REG_COUNT; i++)
		byte_buf__u64(b, regs.regs[i]);
	byte_buf__u64(b, th.stack_base);
	byte_buf__u64(b, th.stack ? th.stack_len : 0);
	enc_at = b->n;
	byte_buf__u64(b, 0); /* stream length */
	if (th.stack) {
		err = snapfile__encode_stack(ev->as, &th, tw->o.encoding, tw->uw, tw->frames,
					     tw->o.max_frames, b);
		if (err)
			return fail(err);
	}
	byte_buf__patch_u64(b, enc_at, b->n - enc_at - 8);
	int nf = flags & EVENTS_HAS_FRAMES ? ev->nframes : 0;
	if (nf > EVENTS_MAX_KFRAMES)
		nf = EVENTS_MAX_KFRAMES;
	byte_buf__u16(b, (uint16_t)nf);
	for (int i = 0; i < nf; i++) {
		byte_buf__u64(b, ev->frames[i].pc);
		byte_buf__u8(b, ev->frames[i].stepper);
		byte_buf__u8(b, ev->frames[i].trust);
		byte_buf__u8(b, ev->frames[i].flags);
	}
	int nk = ev->kernel_pcs ? ev->kernel_nframes : 0;
	if (nk > EVENTS_MAX_KFRAMES)
		nk = EVENTS_MAX_KFRAMES;
	byte_buf__u16(b, (uint16_t)nk);
	for (int i = 0; i < nk; i++)
		byte_buf__u64(b, ev->kernel_pcs[i]);
	if (nfields > EVENTS_MAX_FIELDS)
		nfields = EVENTS_MAX_FIELDS;
	byte_buf__u16(b, (uint16_t)nfields);
	for (size_t i = 0; i < nfields; i++) {
		const struct stacksnap_trace_field *f = &fields[i];
		size_t nl = f->name ? strnlen(f->name, 255) : 0;

		byte_buf__u8(b, (uint8_t)nl);
		byte_buf__put(b, f->name, nl);
		byte_buf__u8(b, (f->is_signed ? EVENTS_FIELD_SIGNED : 0) |
				(f->is_pointer ? EVENTS_FIELD_POINTER : 0) |
				(f->str ? EVENTS_FIELD_STRING : 0));
		byte_buf__u8(b, (uint8_t)(f->size > 255 ? 255 : f->size));
		if (f->str) {
			size_t sl = strnlen(f->str, 4095);

			byte_buf__u16(b, (uint16_t)sl);
			byte_buf__put(b, f->str, sl);
		} else {
			byte_buf__u64(b, f->value);
		}
	}
	snapfile_writer__end_section_crc(&tw->w);
	if (b->failed)
		return stacksnap_trace_writer__flush(tw); /* sets and returns -ENOMEM */
	return b->n >= FLUSH_AT ? stacksnap_trace_writer__flush(tw) : 0;
}

int stacksnap_trace_writer__close(struct stacksnap_trace_writer *tw)
{
	int err = 0;

	if (!tw)
		return 0;
	if (tw->fd >= 0) {
		uint8_t h[16];

		stacksnap_trace_writer__flush(tw);
		err = tw->err;
		/* Now whole: its length, checksum and section count. */
		for (int i = 0; i < 8; i++)
			h[i] = (uint8_t)(tw->off >> (8 * i));
		for (int i = 0; i < 4; i++) {
			h[8 + i] = (uint8_t)(tw->crc >> (8 * i));
			h[12 + i] = (uint8_t)(tw->w.nsections >> (8 * i));
		}
		if (!err && pwrite(tw->fd, h, 16, SNAPFILE_OFF_FILE_LEN) != 16)
			err = -errno;
		if (close(tw->fd) && !err)
			err = -errno;
		if (err && !tw->err)
			log_err(&tw->ctx->log, "%s: cannot complete the events file: %s",
				tw->path, strerror(-err));
	}
	byte_buf__free(&tw->w.buf);
	stacksnap_unwinder__free(tw->uw);
	free(tw->frames);
	free(tw->expanded);
	free(tw->pids);
	free(tw->kinds);
	free(tw->images);
	free(tw->path);
	free(tw);
	return err ? fail(err) : 0;
}

/* ------------------------------------------------------------------ */
/* Reader */

/* One generation of a process's address space. */
struct saved_as {
	pid_t pid;
	unsigned gen;
	struct stacksnap_addrspace *as;
};

/* One EVENT section's payload (checked when read) in the mapped file. */
struct saved_event_at {
	const uint8_t *p;
	size_t len, off;
};

/* Invariant: every ev[i] decodes without error (checked by read_event
 * when its section was read) and names an address space < nas or none;
 * the scratch below holds the event last decoded. */
struct saved_events {
	char **kinds;
	size_t nkinds;
	struct saved_as *as;
	size_t nas;
	struct saved_event_at *ev;
	size_t n, cap;
	uint8_t *stack;
	size_t stack_cap;
	struct stacksnap_trace_field fields[EVENTS_MAX_FIELDS];
	char *strs;		/* field names and strings, NUL-terminated */
	size_t strs_cap;
	struct stacksnap_frame frames[EVENTS_MAX_KFRAMES];
	uint64_t kpcs[EVENTS_MAX_KFRAMES];
	char comm[256];
};

#define BAD SAVED_BAD

void events__free(struct saved_events *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nkinds; i++)
		free(e->kinds[i]);
	for (size_t i = 0; i < e->nas; i++)
		stacksnap_addrspace__free(e->as[i].as);
	free(e->kinds);
	free(e->as);
	free(e->ev);
	free(e->stack);
	free(e->strs);
	free(e);
}

static struct saved_events *events_of(struct stacksnap_saved *s)
{
	if (!s->events)
		s->events = calloc(1, sizeof(*s->events));
	return s->events;
}

static int read_kind(struct stacksnap_saved *s, struct saved_events *e,
		     struct cursor *c, size_t base)
{
	uint32_t idx = cursor_u32(c), len = cursor_u32(c);
	const uint8_t *name = cursor_take(c, len);

	if (!name || idx > 65535 || len > 4095 || memchr(name, 0, len)) {
		BAD(s, base, "event kind: %s", !name ? "truncated" : "bad index or name");
		return -EINVAL;
	}
	if (idx >= e->nkinds) {
		char **k = realloc(e->kinds, (idx + 1) * sizeof(*k));

		if (!k)
			return -ENOMEM;
		memset(k + e->nkinds, 0, (idx + 1 - e->nkinds) * sizeof(*k));
		e->kinds = k;
		e->nkinds = idx + 1;
	}
	free(e->kinds[idx]);
	e->kinds[idx] = strndup((const char *)name, len);
	return e->kinds[idx] ? 0 : -ENOMEM;
}

static int read_addrspace(struct stacksnap_saved *s, struct saved_events *e,
			  struct cursor *c, size_t base, const uint8_t *sections,
			  size_t sections_len)
{
	struct stacksnap_addrspace *keep = s->as, *as;
	struct saved_as *a;
	pid_t pid = (pid_t)cursor_u32(c);
	unsigned gen = cursor_u32(c);
	int err;

	if (c->bad) {
		BAD(s, base, "address space section truncated");
		return -EINVAL;
	}
	as = stacksnap_addrspace__new(s->ctx);
	a = realloc(e->as, (e->nas + 1) * sizeof(*a));
	if (!as || !a) {
		stacksnap_addrspace__free(as);
		if (a)
			e->as = a;
		return -ENOMEM;
	}
	e->as = a;
	/* The mappings reader fills s->as: point it at this generation. */
	s->as = as;
	err = snapfile__read_mappings(s, c, base + 8, sections, sections_len);
	s->as = keep;
	if (err) {
		stacksnap_addrspace__free(as);
		return err;
	}
	e->as[e->nas++] = (struct saved_as){ pid, gen, as };
	return 0;
}

/* Room for n more bytes of strings. */
static char *strs_take(struct saved_events *e, size_t *used, size_t n)
{
	if (*used + n > e->strs_cap) {
		size_t cap = (*used + n) * 2;
		char *p = realloc(e->strs, cap);

		if (!p)
			return NULL;
		e->strs = p;
		e->strs_cap = cap;
	}
	*used += n;
	return e->strs + *used - n;
}

/* Decodes the event at a into out (NULL: only check it). Returns 0,
 * -EINVAL (logged with the offset), -ENOMEM. */
static int decode_event(struct stacksnap_saved *s, struct saved_events *e,
			const struct saved_event_at *a, struct stacksnap_saved_event *out)
{
	struct stacksnap_saved_event ev = { .sz = sizeof(ev) };
	struct cursor c;
	size_t used = 0, bad_off;
	uint32_t kind, as_id;
	uint16_t flags;
	uint8_t clen, enc;
	const uint8_t *p;

	cursor_init(&c, a->p, a->len);
	ev.time_ns = cursor_u64(&c);
	ev.pid = (pid_t)cursor_u32(&c);
	ev.tid = (pid_t)cursor_u32(&c);
	ev.cpu = cursor_u32(&c);
	kind = cursor_u32(&c);
	as_id = cursor_u32(&c);
	flags = cursor_u16(&c);
	ev.end = cursor_u8(&c);
	clen = cursor_u8(&c);
	p = cursor_take(&c, clen);
	if (p) {
		memcpy(e->comm, p, clen);
		e->comm[clen] = 0;
	}
	ev.comm = e->comm;
	ev.stack_bytes = cursor_u32(&c);
	enc = cursor_u8(&c);
	ev.regs.valid = cursor_u32(&c);
	for (int i = 0; i < STACKSNAP_REG_COUNT; i++)
		ev.regs.regs[i] = cursor_u64(&c);
	ev.stack_base = cursor_u64(&c);
	uint64_t slen = cursor_u64(&c), elen = cursor_u64(&c);
	if (c.bad) {
		BAD(s, a->off, "event %zu: record truncated", e->n);
		return -EINVAL;
	}
	if (kind >= e->nkinds || !e->kinds[kind] ||
	    (as_id != UINT32_MAX && as_id >= e->nas) || !enc ||
	    enc > STACKSNAP_ENCODING_FULL || slen > SNAPFILE_MAX_EVENT_STACK ||
	    elen > cursor_left(&c)) {
		BAD(s, a->off, "event %zu: %s", e->n,
		    kind >= e->nkinds || !e->kinds[kind] ? "names an event kind not defined before it"
		    : as_id != UINT32_MAX && as_id >= e->nas ? "names an address space not defined before it"
		    : slen > SNAPFILE_MAX_EVENT_STACK ? "stack longer than the reader's limit (1 MiB)"
		    : elen > cursor_left(&c) ? "stack encoding past its record"
					     : "unknown stack encoding");
		return -EINVAL;
	}
	ev.name = e->kinds[kind];
	if (as_id != UINT32_MAX) {
		ev.as = e->as[as_id].as;
		ev.generation = e->as[as_id].gen;
	}
	size_t stream_at = cursor_offset(&c);
	p = cursor_take(&c, elen);
	if (slen && (flags & EVENTS_HAS_STACK)) {
		struct cursor sc;

		if (slen > e->stack_cap) {
			uint8_t *b = realloc(e->stack, slen);

			if (!b)
				return -ENOMEM;
			e->stack = b;
			e->stack_cap = slen;
		}
		memset(e->stack, 0, slen);
		cursor_init(&sc, p, elen);
		if (compact_stack__decode(&sc, e->stack, slen, ev.stack_base,
					  enc != STACKSNAP_ENCODING_FULL, &bad_off)) {
			BAD(s, a->off + stream_at + bad_off, "event %zu: corrupt stack encoding",
			    e->n);
			return -EINVAL;
		}
		/* Compacted in the kernel: what it left out read as its
		 * poison during the live walk, and must again. */
		if (flags & EVENTS_POISON)
			for (size_t i = 0; i + 8 <= slen; i += 8) {
				uint64_t v;

				memcpy(&v, e->stack + i, 8);
				if (!v) {
					v = COMPACT_STACK_DROPPED;
					memcpy(e->stack + i, &v, 8);
				}
			}
		ev.stack = e->stack;
		ev.stack_len = slen;
	}
	uint16_t nf = cursor_u16(&c);
	for (unsigned i = 0; i < nf && !c.bad && i < EVENTS_MAX_KFRAMES; i++) {
		e->frames[i] = (struct stacksnap_frame){ .pc = cursor_u64(&c) };
		e->frames[i].stepper = cursor_u8(&c);
		e->frames[i].trust = cursor_u8(&c);
		e->frames[i].flags = cursor_u8(&c);
	}
	uint16_t nk = cursor_u16(&c);
	for (unsigned i = 0; i < nk && !c.bad && i < EVENTS_MAX_KFRAMES; i++)
		e->kpcs[i] = cursor_u64(&c);
	uint16_t nfields = cursor_u16(&c);
	if (c.bad || nf > EVENTS_MAX_KFRAMES || nk > EVENTS_MAX_KFRAMES ||
	    nfields > EVENTS_MAX_FIELDS) {
		BAD(s, a->off, "event %zu: %s", e->n, c.bad ? "record truncated"
			   : "more frames or fields than a writer writes");
		return -EINVAL;
	}
	ev.frames = e->frames;
	ev.nframes = nf;
	ev.kernel_pcs = e->kpcs;
	ev.kernel_nframes = nk;
	/* Two passes over the fields: strings first (strs may move), then
	 * the pointers into them. */
	size_t fields_at = cursor_offset(&c);
	for (int pass = 0; pass < 2; pass++) {
		cursor_init(&c, a->p, a->len);
		cursor_skip(&c, fields_at);
		used = 0;
		for (unsigned i = 0; i < nfields; i++) {
			struct stacksnap_trace_field *f = &e->fields[i];
			uint8_t nl = cursor_u8(&c);
			const uint8_t *name = cursor_take(&c, nl);
			uint8_t ff = cursor_u8(&c), size = cursor_u8(&c);
			uint16_t sl = ff & EVENTS_FIELD_STRING ? cursor_u16(&c) : 0;
			const uint8_t *str = ff & EVENTS_FIELD_STRING ? cursor_take(&c, sl) : NULL;
			uint64_t v = ff & EVENTS_FIELD_STRING ? 0 : cursor_u64(&c);
			char *ns, *ss = NULL;

			if (c.bad) {
				BAD(s, a->off + cursor_offset(&c), "event %zu: field %u truncated",
				    e->n, i);
				return -EINVAL;
			}
			if (!(ns = strs_take(e, &used, nl + 1u + (str ? sl + 1u : 0))))
				return -ENOMEM;
			if (pass == 0)
				continue;
			memcpy(ns, name, nl);
			ns[nl] = 0;
			if (str) {
				ss = ns + nl + 1;
				memcpy(ss, str, sl);
				ss[sl] = 0;
			}
			*f = (struct stacksnap_trace_field){
				.name = ns, .value = v, .str = ss, .size = size,
				.is_signed = ff & EVENTS_FIELD_SIGNED,
				.is_pointer = ff & EVENTS_FIELD_POINTER,
			};
		}
	}
	ev.fields = e->fields;
	ev.nfields = nfields;
	/* Fields a newer writer appends to the record are skipped. */
	if (out && opts_out(out, &ev, sizeof(ev), offsetof(struct stacksnap_saved_event, as)))
		return -EINVAL;
	return 0;
}

int events__read_section(struct stacksnap_saved *s, uint32_t kind, struct cursor *c,
			 size_t base, const uint8_t *sections, size_t sections_len)
{
	struct saved_events *e = events_of(s);
	struct saved_event_at a;
	int err;

	if (!e)
		return -ENOMEM;
	if (kind == SNAPFILE_SEC_EVENT_KIND)
		return read_kind(s, e, c, base);
	if (kind == SNAPFILE_SEC_ADDRSPACE)
		return read_addrspace(s, e, c, base, sections, sections_len);
	a = (struct saved_event_at){ c->p, cursor_left(c), base };
	err = decode_event(s, e, &a, NULL);
	if (err)
		return err;
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 256;
		struct saved_event_at *p = realloc(e->ev, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		e->ev = p;
		e->cap = cap;
	}
	e->ev[e->n++] = a;
	return 0;
}

size_t stacksnap_saved__event_count(const struct stacksnap_saved *s)
{
	return s && s->events ? s->events->n : 0;
}

int stacksnap_saved__event(struct stacksnap_saved *s, size_t i,
			   struct stacksnap_saved_event *ev)
{
	if (!s || !ev || !s->events || i >= s->events->n)
		return fail(-EINVAL);
	int err = decode_event(s, s->events, &s->events->ev[i], ev);
	return err ? fail(err) : 0;
}

unsigned stacksnap_saved__trace_max_frames(const struct stacksnap_saved *s)
{
	return s && s->events ? s->trace_max_frames : 0;
}

unsigned stacksnap_saved__trace_unwind(const struct stacksnap_saved *s)
{
	return s && s->events ? s->trace_unwind : 0;
}
