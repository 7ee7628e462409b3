/* events_writer.c - the streaming writer of trace events in the snapshot
 * container (`stacksnap trace --save`, stacksnap_trace_writer). The words
 * of each stack it keeps are chosen by stack_words.c; this file only
 * encodes them. */
#define _GNU_SOURCE

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/boot_id.h"
#include "base/clock_offset.h"
#include "base/log.h"
#include "base/opts.h"
#include "elf/elf_image.h"
#include "mem/compact_stack.h"
#include "runtime/runtime_steps.h"
#include "save/snapfile_writer.h"
#include "save/stack_words.h"
#include "snapfile/events_file.h"
#include "snapfile/snapshot_file.h"

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
	struct stack_words words; /* which words of a stack are kept */
	uint8_t *expanded;	/* a stack compacted in the kernel, expanded */
	size_t expanded_cap;
	struct stacksnap_runtime_step *steps; /* an event's, sorted */
	size_t steps_cap;
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
	char cmd[4096], host[256], boot_id[37];

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
	if (stack_words__init(&tw->words, tw->o.encoding, tw->o.max_frames, false)) {
		stacksnap_trace_writer__close(tw);
		errno = ENOMEM;
		return NULL;
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
	else if (tw->o.command)
		snprintf(cmd, sizeof(cmd), "%s", tw->o.command);
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
	/* The clock and the host, for wall-clock times and CTF traces. */
	if (gethostname(host, sizeof(host)))
		host[0] = 0;
	host[sizeof(host) - 1] = 0;
	boot_id_read(boot_id);
	byte_buf__u64(&tw->w.buf, (uint64_t)(tw->o.clock_offset_ns
					     ? tw->o.clock_offset_ns
					     : clock_realtime_offset_ns()));
	put_str(&tw->w.buf, boot_id);
	put_str(&tw->w.buf, host);
	snapfile_writer__end_section_crc(&tw->w);
	if (stacksnap_trace_writer__flush(tw)) {
		int err = errno;
		struct stat st;

		/* A file we made goes; a device (/dev/full) stays. */
		if (fstat(tw->fd, &st) == 0 && S_ISREG(st.st_mode))
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

int stacksnap_trace_writer__lost(struct stacksnap_trace_writer *tw, unsigned cpu,
				  uint64_t total)
{
	if (!tw)
		return fail(-EINVAL);
	if (tw->err)
		return fail(tw->err);
	/* Where it lies among the events is what a reader learns: the
	 * events before it were read before the count was. */
	snapfile_writer__begin_section(&tw->w, SNAPFILE_SEC_LOST, 1, SNAPFILE_SEC_CRC);
	byte_buf__u32(&tw->w.buf, cpu);
	byte_buf__u64(&tw->w.buf, total);
	snapfile_writer__end_section_crc(&tw->w);
	return tw->w.buf.failed ? fail(-ENOMEM) : 0;
}

/* An event's fields (tracepoint fields, syscall arguments, a uprobe's
 * name), at most EVENTS_MAX_FIELDS. */
static void put_fields(struct byte_buf *b, const struct stacksnap_trace_field *fields,
		       size_t nfields)
{
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
}

/* An event's runtime frames, named now: the process may be gone when the
 * file is shown. */
static void put_rframes(struct byte_buf *b, const struct stacksnap_trace_event *ev)
{
	size_t nr = ev->nrframes < EVENTS_MAX_RFRAMES ? ev->nrframes : EVENTS_MAX_RFRAMES;

	byte_buf__u16(b, (uint16_t)nr);
	for (size_t i = 0; i < nr; i++) {
		const struct stacksnap_runtime_frame *rf = &ev->rframes[i];
		size_t fl = rf->function ? strnlen(rf->function, 4095) : 0;
		size_t pl = rf->file ? strnlen(rf->file, 4095) : 0;

		byte_buf__u8(b, (uint8_t)rf->runtime |
				(rf->flags & STACKSNAP_RFRAME_VM ? EVENTS_RFRAME_VM : 0) |
				(rf->flags & STACKSNAP_RFRAME_INLINED ? EVENTS_RFRAME_INLINED : 0));
		byte_buf__u32(b, rf->native_index);
		byte_buf__u32(b, rf->line);
		byte_buf__u16(b, (uint16_t)fl);
		byte_buf__put(b, rf->function, fl);
		byte_buf__u16(b, rf->file ? (uint16_t)pl : EVENTS_NO_FILE);
		byte_buf__put(b, rf->file, pl);
	}
}

/* An event's runtime steps, sorted by (sp, pc) and unique (the reader
 * searches them; a walk repeated meets a frame twice). */
static void put_rsteps(struct stacksnap_trace_writer *tw,
		       const struct stacksnap_trace_event *ev)
{
	struct byte_buf *b = &tw->w.buf;
	size_t n = ev->nrsteps < EVENTS_MAX_RSTEPS ? ev->nrsteps : EVENTS_MAX_RSTEPS, u;

	if (n > tw->steps_cap) {
		void *p = realloc(tw->steps, n * sizeof(*tw->steps));

		if (!p) {
			b->failed = true;
			return;
		}
		tw->steps = p;
		tw->steps_cap = n;
	}
	memcpy(tw->steps, ev->rsteps, n * sizeof(*tw->steps));
	u = runtime_steps__sort_unique(tw->steps, n);
	byte_buf__u16(b, (uint16_t)u);
	for (size_t i = 0; i < u; i++) {
		byte_buf__u64(b, tw->steps[i].pc);
		byte_buf__u64(b, tw->steps[i].sp);
		byte_buf__u64(b, tw->steps[i].caller_pc);
		byte_buf__u64(b, tw->steps[i].caller_sp);
		byte_buf__u64(b, tw->steps[i].caller_fp);
	}
}

/* The thread's other stacks (flag EVENTS_HAS_MORE), after the runtime
 * frames: each kept by the pointers policy under a compact encoding, as
 * the snapshot writer keeps a thread's (exact's walk of the first copy
 * does not reach them). */
static int put_more_stacks(struct stacksnap_trace_writer *tw,
			   struct stacksnap_addrspace *as, const struct stacksnap_thread *th)
{
	struct stack_words pw = { .enc = tw->o.encoding == STACKSNAP_ENCODING_FULL
						 ? STACKSNAP_ENCODING_FULL
						 : STACKSNAP_ENCODING_POINTERS };
	struct byte_buf *b = &tw->w.buf;

	byte_buf__u8(b, (uint8_t)th->nmore_stacks);
	for (unsigned k = 0; k < th->nmore_stacks; k++) {
		const struct stacksnap_stack_range *m = &th->more_stacks[k];
		struct stacksnap_thread part = { .stack = m->bytes, .stack_len = m->len,
						 .stack_base = m->base };
		uint64_t *keep;
		size_t enc_at;
		int err;

		byte_buf__u64(b, m->base);
		byte_buf__u64(b, m->len);
		enc_at = b->n;
		byte_buf__u64(b, 0); /* stream length */
		if ((err = stack_words__choose(&pw, as, &part, &keep)))
			return err;
		snapfile__put_stack(b, &part, keep);
		free(keep);
		byte_buf__patch_u64(b, enc_at, b->n - enc_at - 8);
	}
	return 0;
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
		/* The words of the first copy pointing into these are kept
		 * (the signal frame's interrupted rsp). */
		for (size_t k = 0; k < ev->nmore_stacks && k < STACKSNAP_MORE_STACKS; k++)
			th.more_stacks[th.nmore_stacks++] = ev->more_stacks[k];
		if (th.nmore_stacks)
			flags |= EVENTS_HAS_MORE;
	} else {
		flags |= EVENTS_HAS_FRAMES;
	}
	regs = th.regs;
	if (tw->o.encoding != STACKSNAP_ENCODING_FULL && ev->as)
		stack_words__filter_regs(ev->as, &th, &regs);
	else if (tw->o.encoding != STACKSNAP_ENCODING_FULL)
		for (int i = 0; i < STACKSNAP_REG_COUNT; i++)
			if (i != STACKSNAP_REG_RIP && i != STACKSNAP_REG_RSP)
				regs.regs[i] = 0;
	comm_len = ev->comm ? strnlen(ev->comm, 255) : 0;
	if (ev->nrframes && ev->rframes)
		flags |= EVENTS_HAS_RFRAMES;
	/* Only with the stack they walk. */
	if (ev->nrsteps && ev->rsteps && (flags & EVENTS_HAS_STACK))
		flags |= EVENTS_HAS_RSTEPS;

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
		uint64_t *keep;

		err = stack_words__choose(&tw->words, ev->as, &th, &keep);
		if (err)
			return fail(err);
		snapfile__put_stack(b, &th, keep);
		free(keep);
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
	put_fields(b, fields, nfields);
	if (flags & EVENTS_HAS_RFRAMES)
		put_rframes(b, ev);
	if ((flags & EVENTS_HAS_MORE) && (err = put_more_stacks(tw, ev->as, &th)))
		return fail(err);
	if (flags & EVENTS_HAS_RSTEPS)
		put_rsteps(tw, ev);
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
	stack_words__free(&tw->words);
	free(tw->expanded);
	free(tw->steps);
	free(tw->pids);
	free(tw->kinds);
	free(tw->images);
	free(tw->path);
	free(tw);
	return err ? fail(err) : 0;
}
