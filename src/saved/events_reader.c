/* events_reader.c - reads the trace-event sections of an events file
 * (stacksnap trace --save; docs/snapshot-format.md, "Events files") into
 * a saved capture, for the snapshot reader that meets them, and decodes
 * one event at a time (stacksnap_saved__event). */
#define _GNU_SOURCE
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
#include "base/vec.h"
#include "mem/compact_stack.h"
#include "runtime/runtime_steps.h"
#include "saved/saved.h"
#include "snapfile/compact_stack.h"
#include "snapfile/events_file.h"
#include "snapfile/snapshot_file.h"

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
	/* LOST sections in file order; before: the events read before it. */
	struct { uint32_t cpu; uint64_t total; size_t before; } *lost;
	size_t nlost, cap_lost;
	uint8_t *stack;
	size_t stack_cap;
	uint8_t *more[STACKSNAP_MORE_STACKS]; /* the other stacks' bytes */
	size_t more_cap[STACKSNAP_MORE_STACKS];
	struct stacksnap_trace_field fields[EVENTS_MAX_FIELDS];
	char *strs;		/* field names and strings, NUL-terminated */
	size_t strs_cap;
	struct stacksnap_frame frames[EVENTS_MAX_KFRAMES];
	uint64_t kpcs[EVENTS_MAX_KFRAMES];
	struct stacksnap_runtime_frame rframes[EVENTS_MAX_RFRAMES];
	char *rstrs;		/* the runtime frames' names, NUL-terminated */
	size_t rstrs_cap;
	/* The runtime steps of the event last decoded (sorted by (sp, pc),
	   unique), replayed by the stepper events_reader__steppers adds;
	   any: some event has steps. */
	struct stacksnap_runtime_step rsteps[EVENTS_MAX_RSTEPS];
	size_t nrsteps;
	bool any_rsteps;
	char comm[256];
};

#define BAD SAVED_BAD

static void events_free(void *source)
{
	struct saved_events *e = source;

	if (!e)
		return;
	for (size_t i = 0; i < e->nkinds; i++)
		free(e->kinds[i]);
	for (size_t i = 0; i < e->nas; i++)
		stacksnap_addrspace__free(e->as[i].as);
	free(e->kinds);
	free(e->as);
	free(e->ev);
	free(e->lost);
	free(e->stack);
	for (int k = 0; k < STACKSNAP_MORE_STACKS; k++)
		free(e->more[k]);
	free(e->strs);
	free(e->rstrs);
	free(e);
}

const struct saved_ops events_reader_ops = {
	.name = "events file",
	.free = events_free,
};

/* s's events, NULL when s is not (yet) an events file. */
static struct saved_events *events_in(const struct stacksnap_saved *s)
{
	return s && s->ops == &events_reader_ops ? s->source : NULL;
}

/* s's events, made at its first event section: from then on the events
 * reader's state is s's source. */
static struct saved_events *events_of(struct stacksnap_saved *s)
{
	struct saved_events *e = events_in(s);

	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (e) {
		s->ops = &events_reader_ops;
		s->source = e;
	}
	return e;
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
	err = snapshot_reader__read_mappings(s, c, base + 8, sections, sections_len);
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

/* Decodes an event's stack stream (elen bytes at p, at file offset off)
 * into e->stack (slen bytes). */
static int decode_stack(struct stacksnap_saved *s, struct saved_events *e, size_t off,
			const uint8_t *p, uint64_t elen, uint64_t slen,
			uint64_t stack_base, uint8_t enc, uint16_t flags)
{
	struct cursor sc;
	size_t bad_off;

	if (slen > e->stack_cap) {
		uint8_t *b = realloc(e->stack, slen);

		if (!b)
			return -ENOMEM;
		e->stack = b;
		e->stack_cap = slen;
	}
	memset(e->stack, 0, slen);
	cursor_init(&sc, p, elen);
	if (compact_stack__decode(&sc, e->stack, slen, stack_base,
				  enc != STACKSNAP_ENCODING_FULL, &bad_off)) {
		BAD(s, off + bad_off, "event %zu: corrupt stack encoding", e->n);
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
	return 0;
}

/* Decodes an event's nfields fields, at fields_at in its record, into
 * e->fields. Two passes: strings first (strs may move), then the
 * pointers into them. */
static int decode_fields(struct stacksnap_saved *s, struct saved_events *e,
			 const struct saved_event_at *a, size_t fields_at,
			 uint16_t nfields, size_t *end_at)
{
	struct cursor c;
	size_t used;

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
	*end_at = cursor_offset(&c);
	return 0;
}

/* Decodes an event's runtime frames, at at in its record, into
 * e->rframes (*n of them). Two passes, as decode_fields. */
static int decode_rframes(struct stacksnap_saved *s, struct saved_events *e,
			  const struct saved_event_at *a, size_t at, size_t *n,
			  size_t *end_at)
{
	struct cursor c;
	uint16_t nr = 0;

	for (int pass = 0; pass < 2; pass++) {
		size_t used = 0;

		cursor_init(&c, a->p, a->len);
		cursor_skip(&c, at);
		nr = cursor_u16(&c);
		if (nr > EVENTS_MAX_RFRAMES) {
			BAD(s, a->off + at, "event %zu: more runtime frames than a writer writes",
			    e->n);
			return -EINVAL;
		}
		for (unsigned i = 0; i < nr; i++) {
			uint8_t kind = cursor_u8(&c);
			uint32_t native = cursor_u32(&c), line = cursor_u32(&c);
			uint16_t fl = cursor_u16(&c);
			const uint8_t *fn = cursor_take(&c, fl);
			uint16_t pl = cursor_u16(&c);
			const uint8_t *file = pl == EVENTS_NO_FILE ? NULL : cursor_take(&c, pl);
			size_t need = fl + 1u + (pl == EVENTS_NO_FILE ? 0 : pl + 1u);
			char *ns;

			if (c.bad) {
				BAD(s, a->off + cursor_offset(&c),
				    "event %zu: runtime frame %u truncated", e->n, i);
				return -EINVAL;
			}
			if (used + need > e->rstrs_cap) {
				size_t cap = (used + need) * 2;
				char *p = realloc(e->rstrs, cap);

				if (!p)
					return -ENOMEM;
				e->rstrs = p;
				e->rstrs_cap = cap;
			}
			ns = e->rstrs + used;
			used += need;
			if (pass == 0)
				continue;
			memcpy(ns, fn, fl);
			ns[fl] = 0;
			e->rframes[i] = (struct stacksnap_runtime_frame){
				.sz = sizeof(e->rframes[i]),
				.runtime = kind & ~(EVENTS_RFRAME_VM | EVENTS_RFRAME_INLINED),
				.flags = (kind & EVENTS_RFRAME_VM ? STACKSNAP_RFRAME_VM : 0) |
					 (kind & EVENTS_RFRAME_INLINED ? STACKSNAP_RFRAME_INLINED : 0),
				.native_index = native, .function = ns, .line = line,
			};
			if (file) {
				memcpy(ns + fl + 1, file, pl);
				ns[fl + 1 + pl] = 0;
				e->rframes[i].file = ns + fl + 1;
			}
		}
	}
	*n = nr;
	*end_at = cursor_offset(&c);
	return 0;
}

/* Decodes an event's runtime steps, at at in its record, into
 * e->rsteps. */
static int decode_rsteps(struct stacksnap_saved *s, struct saved_events *e,
			 const struct saved_event_at *a, size_t at)
{
	struct cursor c;
	uint16_t n;

	cursor_init(&c, a->p, a->len);
	cursor_skip(&c, at);
	n = cursor_u16(&c);
	if (!cursor_count_fits(&c, n, EVENTS_MAX_RSTEPS, 40)) {
		BAD(s, a->off + at, "event %zu: runtime steps %s", e->n,
		    c.bad || n <= EVENTS_MAX_RSTEPS ? "truncated"
						    : "more than a writer writes");
		return -EINVAL;
	}
	if (!readers__take_steps(&c, e->rsteps, n)) {
		e->nrsteps = 0;
		BAD(s, a->off + at, "event %zu: runtime steps not sorted", e->n);
		return -EINVAL;
	}
	e->nrsteps = n;
	return 0;
}

/* Decodes an event's other stacks (flag EVENTS_HAS_MORE), at at in its
 * record, into e->more and out's more_stacks; *end: where they end. */
static int decode_more(struct stacksnap_saved *s, struct saved_events *e,
		       const struct saved_event_at *a, size_t at, uint8_t enc,
		       struct stacksnap_saved_event *out, size_t *end)
{
	struct cursor c;
	uint8_t n;

	cursor_init(&c, a->p, a->len);
	cursor_skip(&c, at);
	n = cursor_u8(&c);
	if (c.bad || n > STACKSNAP_MORE_STACKS) {
		BAD(s, a->off + at, "event %zu: %s", e->n,
		    c.bad ? "other stacks truncated" : "more other stacks than a writer writes");
		return -EINVAL;
	}
	for (unsigned k = 0; k < n; k++) {
		uint64_t base = cursor_u64(&c), len = cursor_u64(&c), elen = cursor_u64(&c);
		size_t stream_at = cursor_offset(&c), bad_off;
		const uint8_t *p = elen <= cursor_left(&c) ? cursor_take(&c, elen) : NULL;
		struct cursor sc;

		if (c.bad || !p || len > SNAPFILE_MAX_EVENT_STACK) {
			BAD(s, a->off + stream_at, "event %zu: other stack %u: %s", e->n, k,
			    len > SNAPFILE_MAX_EVENT_STACK ? "longer than the reader's limit (1 MiB)"
							    : "truncated");
			return -EINVAL;
		}
		if (len > e->more_cap[k]) {
			uint8_t *b = realloc(e->more[k], len);

			if (!b)
				return -ENOMEM;
			e->more[k] = b;
			e->more_cap[k] = len;
		}
		if (len)
			memset(e->more[k], 0, len);
		cursor_init(&sc, p, elen);
		if (compact_stack__decode(&sc, e->more[k], len, base,
					  enc != STACKSNAP_ENCODING_FULL, &bad_off)) {
			BAD(s, a->off + stream_at + bad_off,
			    "event %zu: other stack %u: corrupt stack encoding", e->n, k);
			return -EINVAL;
		}
		out->more_stacks[k] = (struct stacksnap_stack_range){ e->more[k], len, base };
	}
	out->nmore_stacks = n;
	*end = cursor_offset(&c);
	return 0;
}

/* Decodes the event at a into out (NULL: only check it). Returns 0,
 * -EINVAL (logged with the offset), -ENOMEM. */
static int decode_event(struct stacksnap_saved *s, struct saved_events *e,
			const struct saved_event_at *a, struct stacksnap_saved_event *out)
{
	struct stacksnap_saved_event ev = { .sz = sizeof(ev) };
	struct cursor c;
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
		int err = decode_stack(s, e, a->off + stream_at, p, elen, slen,
				       ev.stack_base, enc, flags);

		if (err)
			return err;
		ev.stack = e->stack;
		ev.stack_len = slen;
	} else if (flags & EVENTS_HAS_STACK) {
		/* An empty copy (a thread sampled as it starts, its stack
		 * pointer at the end of its stack) is still a copy: the walk
		 * from the registers alone is the one the trace made. */
		static const uint8_t empty[1];

		ev.stack = empty;
		ev.stack_len = 0;
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
	size_t fields_end;
	int err = decode_fields(s, e, a, cursor_offset(&c), nfields, &fields_end);

	if (err)
		return err;
	ev.fields = e->fields;
	ev.nfields = nfields;
	size_t more_at = fields_end, rsteps_at;
	if (flags & EVENTS_HAS_RFRAMES) {
		if ((err = decode_rframes(s, e, a, fields_end, &ev.nrframes, &more_at)))
			return err;
		ev.rframes = e->rframes;
	}
	rsteps_at = more_at;
	/* Only with the copy it goes with. */
	if ((flags & EVENTS_HAS_MORE) && ev.stack &&
	    (err = decode_more(s, e, a, more_at, enc, &ev, &rsteps_at)))
		return err;
	/* The steps of the event decoded last (an older file: none); as
	   the other stacks, only with the copy they walk. */
	e->nrsteps = 0;
	if ((flags & EVENTS_HAS_RSTEPS) && ev.stack) {
		if ((err = decode_rsteps(s, e, a, rsteps_at)))
			return err;
		e->any_rsteps = true;
	}
	/* Fields a newer writer appends to the record are skipped. */
	if (out && opts_out(out, &ev, sizeof(ev), offsetof(struct stacksnap_saved_event, as)))
		return -EINVAL;
	return 0;
}

int events_reader__read_section(struct stacksnap_saved *s, uint32_t kind,
				struct cursor *c, size_t base,
				const uint8_t *sections, size_t sections_len)
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
	if (kind == SNAPFILE_SEC_LOST) {
		uint32_t cpu = cursor_u32(c);
		uint64_t total = cursor_u64(c);

		if (c->bad) {
			BAD(s, base, "lost events: truncated");
			return -EINVAL;
		}
		if (!VEC_PUSH(e->lost, e->nlost, e->cap_lost))
			return -ENOMEM;
		e->lost[e->nlost - 1].cpu = cpu;
		e->lost[e->nlost - 1].total = total;
		e->lost[e->nlost - 1].before = e->n;
		return 0;
	}
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
	const struct saved_events *e = events_in(s);

	return e ? e->n : 0;
}

int stacksnap_saved__event(struct stacksnap_saved *s, size_t i,
			   struct stacksnap_saved_event *ev)
{
	struct saved_events *e = events_in(s);

	if (!e || !ev || i >= e->n)
		return fail(-EINVAL);
	int err = decode_event(s, e, &e->ev[i], ev);
	return err ? fail(err) : 0;
}

size_t stacksnap_saved__lost_count(const struct stacksnap_saved *s)
{
	const struct saved_events *e = events_in(s);

	return e ? e->nlost : 0;
}

int stacksnap_saved__lost(const struct stacksnap_saved *s, size_t i,
			  struct stacksnap_saved_lost *out)
{
	const struct saved_events *e = events_in(s);
	struct stacksnap_saved_lost l = { .sz = sizeof(l) };

	if (!e || !out || i >= e->nlost)
		return fail(-EINVAL);
	l.cpu = e->lost[i].cpu;
	l.total = e->lost[i].total;
	l.before_event = e->lost[i].before;
	return opts_out(out, &l, sizeof(l), offsetof(struct stacksnap_saved_lost, before_event) +
			sizeof(l.before_event)) ? fail(-EINVAL) : 0;
}

unsigned stacksnap_saved__trace_max_frames(const struct stacksnap_saved *s)
{
	return events_in(s) ? s->trace_max_frames : 0;
}

unsigned stacksnap_saved__trace_unwind(const struct stacksnap_saved *s)
{
	return events_in(s) ? s->trace_unwind : 0;
}

/* The decoded event's step of the frame at (rip, rsp), replayed; a
 * frame 0's too: the trace's stepper logged every step it took. */
static int replay_step(void *user, const struct stacksnap_regs *regs,
		       bool exact_pc, struct stacksnap_mem *mem,
		       struct stacksnap_regs *caller)
{
	const struct saved_events *e = user;

	(void)mem;
	return runtime_steps__replay(e->rsteps, e->nrsteps, regs, exact_pc, false, caller);
}

int events_reader__steppers(const struct stacksnap_saved *s,
			    struct stacksnap_unwinder *uw)
{
	const struct saved_events *e = events_in(s);
	/* As the trace's hotspot stepper: after CFI, before the analysis
	   and frame-pointer steppers. */
	STACKSNAP_OPTS(stacksnap_stepper_opts, o, .name = "hotspot",
		       .step = replay_step, .user = (void *)e,
		       .priority = STACKSNAP_PRIO_ANALYSIS + 30,
		       .trust = STACKSNAP_TRUST_CFI);
	int id;

	if (!e || !e->any_rsteps)
		return 0;
	id = stacksnap_unwinder__add_stepper(uw, &o);
	return id < 0 ? id : 1;
}
