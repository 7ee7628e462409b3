/* ctf_writer.c - the CTF 1.8 writer: the TSDL metadata (trace, clock,
 * stream and one event class per event name and field layout) and one
 * stream file per CPU, written packet by packet (docs/ctf.md). */
#define _GNU_SOURCE
#include "ctf/ctf_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock_offset.h"
#include "base/vec.h"

#define CTF_MAGIC 0xC1FC1FC1u
/* Packet header (magic, uuid, stream_id, stream_instance_id) and packet
 * context (timestamp_begin/end, content_size, packet_size,
 * packet_seq_num, events_discarded, cpu_id), all byte-aligned. */
#define CTF_PACKET_HEADER_BYTES (4 + 16 + 4 + 8)
#define CTF_PACKET_CONTEXT_BYTES (8 * 6 + 4)
#define CTF_DEFAULT_PACKET_BYTES (64 * 1024)
#define CTF_MAX_CPUS 65536

/* A growable byte buffer; p[0..n) is written. */
struct ctf_buf {
	uint8_t *p;
	size_t n, cap;
	bool oom;	/* an append failed: the contents are incomplete */
};

/* One CPU's stream file: closed packets, then the open one at
 * packet_off, packet_len bytes of events, of which the last events.n are
 * not on disk yet. Packets close at packet_bytes and when the discarded
 * count changes, never at a flush (a flush writes the open packet as it
 * is, its header rewritten), so where packets end depends only on the
 * events and the counts, not on when the trace was flushed: a trace
 * written again from an events file has the same packets. Invariant: the
 * open packet's nevents events have timestamps in [first_ts, last_ts];
 * last_ts never decreases over the stream's life. */
struct ctf_stream {
	unsigned cpu;
	int fd;
	struct ctf_buf events;
	uint64_t packet_off, packet_len;
	size_t nevents;		/* in the open packet */
	uint64_t first_ts, last_ts;
	bool has_ts;		/* last_ts is set (an event or packet was written) */
	uint64_t seq;		/* packets closed */
	uint64_t discarded;	/* running count of lost events of this cpu */
	uint64_t discarded_written; /* as the last packet closed said */
};

/* One event class: an event name with one layout of fields. sig spells
 * the layout ("name:kind:bits:base;..."), so an event whose fields
 * differ gets another class. */
struct ctf_class {
	char *name;
	char *sig;
	uint32_t id;
};

/* Invariant: streams[cpu] is NULL or that CPU's stream; classes[i].id
 * == i; metadata_dirty when classes were added since the metadata file
 * was last written. */
struct ctf_writer {
	int dirfd;
	struct ctf_writer_opts o;
	char *hostname, *kernel_release;
	char clock_uuid[37];	/* "" when the clock takes the trace's uuid */
	uint8_t uuid[16];
	struct ctf_stream **streams;
	size_t nstreams;
	struct ctf_class *classes;
	size_t nclasses, cap_classes;
	struct ctf_buf class_text;	/* TSDL of every event class */
	bool metadata_dirty;
	uint64_t latest_ts;	/* the latest timestamp written anywhere */
	int err;		/* first error, sticky */
};

static void buf_put(struct ctf_buf *b, const void *p, size_t len)
{
	if (b->oom)
		return;
	if (vec_reserve((void **)&b->p, &b->cap, b->n + len, 1)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->n, p, len);
	b->n += len;
}

/* Little-endian, as the metadata's byte_order says. */
static void buf_le(struct ctf_buf *b, uint64_t v, unsigned bytes)
{
	uint8_t le[8];

	for (unsigned i = 0; i < bytes; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	buf_put(b, le, bytes);
}

static void buf_str(struct ctf_buf *b, const char *s)
{
	buf_put(b, s ? s : "", strlen(s ? s : "") + 1);
}

static void buf_printf(struct ctf_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void buf_printf(struct ctf_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	buf_put(b, s, (size_t)n);
	free(s);
}

/* A TSDL string literal's contents: quotes and backslashes escaped,
 * control characters dropped. */
static void buf_tsdl_str(struct ctf_buf *b, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			continue;
		if (c == '"' || c == '\\')
			buf_put(b, "\\", 1);
		buf_put(b, &c, 1);
	}
}

/* A field name as a TSDL identifier, with the leading underscore LTTng
 * puts on every field: babeltrace2 and Trace Compass strip it again, so
 * the name shows as the tracepoint spells it and never clashes with a
 * TSDL keyword. */
static void buf_tsdl_ident(struct ctf_buf *b, const char *s)
{
	buf_put(b, "_", 1);
	if (!s || !*s) {
		buf_put(b, "field", 5);
		return;
	}
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			c = '_';
		buf_put(b, &c, 1);
	}
}

/* Writes all of len bytes at offset off, or sets the writer's error. */
static void write_at(struct ctf_writer *w, int fd, const void *p, size_t len, uint64_t off)
{
	const uint8_t *q = p;

	while (len && !w->err) {
		ssize_t n = pwrite(fd, q, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->err = n < 0 ? -errno : -EIO;
			return;
		}
		q += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
}

/* Writes a packet header and context at off for len bytes of events. */
static void write_header(struct ctf_writer *w, struct ctf_stream *s, uint64_t off,
			 uint64_t begin, uint64_t end, uint64_t discarded, uint64_t len)
{
	struct ctf_buf head = { 0 };
	uint64_t bits = (CTF_PACKET_HEADER_BYTES + CTF_PACKET_CONTEXT_BYTES + len) * 8;

	buf_le(&head, CTF_MAGIC, 4);
	buf_put(&head, w->uuid, 16);
	buf_le(&head, 0, 4);		/* stream_id: the one stream class */
	buf_le(&head, s->cpu, 8);	/* stream_instance_id */
	buf_le(&head, begin, 8);
	buf_le(&head, end, 8);
	buf_le(&head, bits, 8);		/* content_size */
	buf_le(&head, bits, 8);		/* packet_size: no padding */
	buf_le(&head, s->seq, 8);
	buf_le(&head, discarded, 8);
	buf_le(&head, s->cpu, 4);
	if (head.oom)
		w->err = w->err ? w->err : -ENOMEM;
	else
		write_at(w, s->fd, head.p, head.n, off);
	free(head.p);
}

/* Before anything else of a stream reaches its file: an empty packet
 * with a discarded count of 0 at time t (its first event's, or the
 * stream's first count's). A reader counts what was discarded between
 * two packets: a count in a stream's first packet would only say "may
 * have discarded". */
static void stream_start(struct ctf_writer *w, struct ctf_stream *s, uint64_t t)
{
	if (s->seq)
		return;
	write_header(w, s, s->packet_off, t, t, 0, 0);
	s->packet_off += CTF_PACKET_HEADER_BYTES + CTF_PACKET_CONTEXT_BYTES;
	s->seq++;
}

/* Writes the open packet as it is (its events not on disk yet, then its
 * header with the count the packets closed so far said). */
static void stream_sync(struct ctf_writer *w, struct ctf_stream *s)
{
	if (s->events.oom) {
		w->err = w->err ? w->err : -ENOMEM;
		return;
	}
	if (!s->nevents)
		return;
	stream_start(w, s, s->first_ts);
	write_at(w, s->fd, s->events.p, s->events.n, s->packet_off + CTF_PACKET_HEADER_BYTES +
		 CTF_PACKET_CONTEXT_BYTES + s->packet_len - s->events.n);
	write_header(w, s, s->packet_off, s->first_ts, s->last_ts, s->discarded_written,
		     s->packet_len);
	s->events.n = 0;
}

/* Closes the open packet (with events, or none when only the discarded
 * count changed) with the stream's discarded count. */
static void stream_close_packet(struct ctf_writer *w, struct ctf_stream *s)
{
	uint64_t begin, end;

	if (!s->nevents && s->discarded == s->discarded_written)
		return;
	if (s->nevents) {
		begin = s->first_ts;
		end = s->last_ts;
	} else {
		/* An empty packet carrying a new discarded count: at the
		 * stream's last time (or the trace's, for a stream without
		 * events yet), so packets stay in time order. */
		if (!s->has_ts) {
			s->last_ts = w->latest_ts;
			s->has_ts = true;
		}
		begin = end = s->last_ts;
	}
	stream_start(w, s, begin);
	stream_sync(w, s);
	write_header(w, s, s->packet_off, begin, end, s->discarded, s->packet_len);
	s->packet_off += CTF_PACKET_HEADER_BYTES + CTF_PACKET_CONTEXT_BYTES + s->packet_len;
	s->packet_len = 0;
	s->nevents = 0;
	s->seq++;
	s->discarded_written = s->discarded;
}

static struct ctf_stream *stream_get(struct ctf_writer *w, unsigned cpu)
{
	struct ctf_stream *s;
	char name[32];

	if (cpu >= CTF_MAX_CPUS) {
		errno = EINVAL;
		return NULL;
	}
	if (cpu < w->nstreams && w->streams[cpu])
		return w->streams[cpu];
	if (cpu >= w->nstreams) {
		size_t n = cpu + 1;
		struct ctf_stream **p = realloc(w->streams, n * sizeof(*p));

		if (!p)
			return NULL;
		memset(p + w->nstreams, 0, (n - w->nstreams) * sizeof(*p));
		w->streams = p;
		w->nstreams = n;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(name, sizeof(name), "stream_%u", cpu);
	s->fd = openat(w->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (s->fd < 0) {
		free(s);
		return NULL;
	}
	s->cpu = cpu;
	w->streams[cpu] = s;
	return s;
}

/* The TSDL type of one tracepoint field (tsdl non-NULL), and its part of
 * a class signature (sig non-NULL). */
static void field_type(const struct stacksnap_trace_field *f, struct ctf_buf *tsdl,
		       struct ctf_buf *sig)
{
	unsigned bits = f->size == 1 || f->size == 2 || f->size == 4 ? f->size * 8 : 64;

	if (f->str) {
		if (tsdl)
			buf_printf(tsdl, "string");
		if (sig)
			buf_printf(sig, "s;");
		return;
	}
	if (tsdl)
		buf_printf(tsdl, "integer { size = %u; align = 8; signed = %s; base = %u; }",
			   bits, f->is_signed ? "true" : "false", f->is_pointer ? 16 : 10);
	if (sig)
		buf_printf(sig, "%c%u%s;", f->is_signed ? 'i' : 'u', bits, f->is_pointer ? "x" : "");
}

static int class_signature(const struct ctf_event *ev, struct ctf_buf *sig)
{
	for (size_t i = 0; i < ev->nfields; i++) {
		buf_printf(sig, "%s:", ev->fields[i].name ? ev->fields[i].name : "");
		field_type(&ev->fields[i], NULL, sig);
	}
	buf_put(sig, "", 1);
	return sig->oom ? -ENOMEM : 0;
}

/* The class of ev (made and described in the metadata when new). */
static int class_of(struct ctf_writer *w, const struct ctf_event *ev, uint32_t *id)
{
	struct ctf_buf sig = { 0 };
	const char *name = ev->name ? ev->name : "";
	struct ctf_class *c;
	int rc = class_signature(ev, &sig);

	if (rc) {
		free(sig.p);
		return rc;
	}
	/* Searched from the newest: a trace has few classes, and the one of
	 * the last events is usually among the newest. */
	for (size_t i = w->nclasses; i-- > 0;) {
		c = &w->classes[i];
		if (!strcmp(c->name, name) && !strcmp(c->sig, (char *)sig.p)) {
			*id = c->id;
			free(sig.p);
			return 0;
		}
	}
	if (w->nclasses > UINT16_MAX) {
		free(sig.p);
		return -E2BIG;
	}
	c = VEC_PUSH(w->classes, w->nclasses, w->cap_classes);
	if (!c) {
		free(sig.p);
		return -ENOMEM;
	}
	c->id = (uint32_t)(w->nclasses - 1);
	c->sig = (char *)sig.p;
	c->name = strdup(name);
	if (!c->name) {
		free(c->sig);
		w->nclasses--;
		return -ENOMEM;
	}
	buf_printf(&w->class_text, "\nevent {\n\tname = \"");
	buf_tsdl_str(&w->class_text, name);
	buf_printf(&w->class_text, "\";\n\tid = %" PRIu32 ";\n\tstream_id = 0;\n"
		   "\tfields := struct {\n", c->id);
	for (size_t i = 0; i < ev->nfields; i++) {
		buf_printf(&w->class_text, "\t\t");
		field_type(&ev->fields[i], &w->class_text, NULL);
		buf_printf(&w->class_text, " ");
		buf_tsdl_ident(&w->class_text, ev->fields[i].name);
		buf_printf(&w->class_text, ";\n");
	}
	buf_printf(&w->class_text, "\t};\n};\n");
	if (w->class_text.oom)
		return -ENOMEM;
	w->metadata_dirty = true;
	*id = c->id;
	return 0;
}

static void meta_env_str(struct ctf_buf *b, const char *key, const char *val)
{
	if (!val)
		return;
	buf_printf(b, "\t%s = \"", key);
	buf_tsdl_str(b, val);
	buf_printf(b, "\";\n");
}

/* The whole metadata text: a plain-text TSDL file (no packetized
 * metadata), rewritten whole when event classes were added. */
static int write_metadata(struct ctf_writer *w)
{
	struct ctf_buf m = { 0 };
	char uuid[37];
	int64_t off = w->o.clock_offset_ns;
	int64_t off_s = off / 1000000000, off_ns = off % 1000000000;
	int fd;

	if (off_ns < 0) {
		off_s--;
		off_ns += 1000000000;
	}
	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 w->uuid[0], w->uuid[1], w->uuid[2], w->uuid[3], w->uuid[4], w->uuid[5],
		 w->uuid[6], w->uuid[7], w->uuid[8], w->uuid[9], w->uuid[10],
		 w->uuid[11], w->uuid[12], w->uuid[13], w->uuid[14], w->uuid[15]);
	buf_printf(&m,
		"/* CTF 1.8 */\n"
		"/* Written by stacksnap: trace events with their user call stacks. */\n\n"
		"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
		"typealias integer { size = 64; align = 8; signed = false; base = 16; } := uint64_hex_t;\n\n"
		"trace {\n"
		"\tmajor = 1;\n"
		"\tminor = 8;\n"
		"\tuuid = \"%s\";\n"
		"\tbyte_order = le;\n"
		"\tpacket.header := struct {\n"
		"\t\tuint32_t magic;\n"
		"\t\tuint8_t uuid[16];\n"
		"\t\tuint32_t stream_id;\n"
		"\t\tuint64_t stream_instance_id;\n"
		"\t};\n"
		"};\n\n"
		"env {\n"
		"\tdomain = \"stacksnap\";\n"
		"\ttracer_name = \"stacksnap\";\n"
		"\ttracer_major = 1;\n"
		"\ttracer_minor = 0;\n", uuid);
	meta_env_str(&m, "hostname", w->hostname);
	meta_env_str(&m, "kernel_release", w->kernel_release);
	buf_printf(&m,
		"};\n\n"
		"clock {\n"
		"\tname = \"monotonic\";\n"
		"\tuuid = \"%s\";\n"
		"\tdescription = \"CLOCK_MONOTONIC; offset: CLOCK_REALTIME - CLOCK_MONOTONIC at the start\";\n"
		"\tfreq = 1000000000;\n"
		"\tprecision = 1;\n"
		"\toffset_s = %" PRId64 ";\n"
		"\toffset = %" PRId64 ";\n"
		"\tabsolute = %s;\n"
		"};\n\n"
		"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;\n\n"
		"struct packet_context {\n"
		"\tuint64_clock_monotonic_t timestamp_begin;\n"
		"\tuint64_clock_monotonic_t timestamp_end;\n"
		"\tuint64_t content_size;\n"
		"\tuint64_t packet_size;\n"
		"\tuint64_t packet_seq_num;\n"
		"\tuint64_t events_discarded;\n"
		"\tuint32_t cpu_id;\n"
		"};\n\n"
		"struct event_header {\n"
		"\tuint16_t id;\n"
		"\tuint64_clock_monotonic_t timestamp;\n"
		"};\n\n"
		"/* A symbolized frame: \"function+0xoffset\" and the module's path. */\n"
		"struct frame {\n"
		"\tstring _symbol;\n"
		"\tstring _module;\n"
		"};\n\n"
		"stream {\n"
		"\tid = 0;\n"
		"\tpacket.context := struct packet_context;\n"
		"\tevent.header := struct event_header;\n"
		"\tevent.context := struct {\n"
		"\t\tint32_t _pid;\n"
		"\t\tint32_t _tid;\n"
		"\t\tstring _procname;\n"
		"\t\tuint32_t _callstack_user_length;\n"
		"\t\tuint64_hex_t _callstack_user[_callstack_user_length];\n"
		"\t\tuint32_t _frames_length;\n"
		"\t\tstruct frame _frames[_frames_length];\n"
		"\t\tuint8_t _complete;\n"
		"\t\tstring _end;\n"
		"\t};\n"
		"};\n",
		w->clock_uuid[0] ? w->clock_uuid : uuid, off_s, off_ns,
		w->o.clock_absolute ? "true" : "false");
	if (w->class_text.n)
		buf_put(&m, w->class_text.p, w->class_text.n);
	if (m.oom) {
		free(m.p);
		return -ENOMEM;
	}
	/* Replaced whole by a rename: a reader never sees half of it. */
	fd = openat(w->dirfd, "metadata.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		free(m.p);
		return -errno;
	}
	write_at(w, fd, m.p, m.n, 0);
	free(m.p);
	if (close(fd) && !w->err)
		w->err = -errno;
	if (w->err)
		return w->err;
	if (renameat(w->dirfd, "metadata.tmp", w->dirfd, "metadata"))
		return -errno;
	w->metadata_dirty = false;
	return 0;
}

/* s is a uuid in its text form (8-4-4-4-12 hex digits). */
static bool is_uuid(const char *s)
{
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		char c = s[i];

		if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
					(c >= 'A' && c <= 'F')))
			return false;
	}
	return !s[36];
}

/* Removes what a previous trace left in dir (metadata, stream files), so
 * that no stream of another trace is read with this one. */
static int clear_dir(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int rc = 0;

	if (!d) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, "metadata") && strcmp(de->d_name, "metadata.tmp") &&
		    strncmp(de->d_name, "stream_", 7))
			continue;
		if (unlinkat(dirfd, de->d_name, 0) && !rc)
			rc = -errno;
	}
	closedir(d);
	return rc;
}

struct ctf_writer *ctf_writer__open(const char *dir, const struct ctf_writer_opts *o)
{
	struct ctf_writer *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return NULL;
	w->dirfd = -1;
	if (o)
		w->o = *o;
	if (!w->o.packet_bytes)
		w->o.packet_bytes = CTF_DEFAULT_PACKET_BYTES;
	if ((w->o.hostname && !(w->hostname = strdup(w->o.hostname))) ||
	    (w->o.kernel_release && !(w->kernel_release = strdup(w->o.kernel_release))))
		goto fail;
	if (w->o.clock_uuid && is_uuid(w->o.clock_uuid))
		memcpy(w->clock_uuid, w->o.clock_uuid, sizeof(w->clock_uuid));
	w->o.clock_uuid = NULL; /* not kept: the caller's string */
	w->o.hostname = w->o.kernel_release = NULL;
	if (mkdir(dir, 0755) && errno != EEXIST)
		goto fail;
	w->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->dirfd < 0)
		goto fail;
	rc = clear_dir(w->dirfd);
	if (rc) {
		errno = -rc;
		goto fail;
	}
	if (getrandom(w->uuid, sizeof(w->uuid), 0) != (ssize_t)sizeof(w->uuid)) {
		/* No entropy source: time and pid still tell traces apart. */
		uint64_t t = (uint64_t)clock_realtime_offset_ns() ^ (uint64_t)getpid();

		for (int i = 0; i < 16; i++)
			w->uuid[i] = (uint8_t)(t >> (8 * (i % 8))) ^ (uint8_t)i;
	}
	w->uuid[6] = (uint8_t)((w->uuid[6] & 0x0f) | 0x40); /* version 4 */
	w->uuid[8] = (uint8_t)((w->uuid[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	rc = write_metadata(w);
	if (rc) {
		errno = -rc;
		goto fail;
	}
	return w;
fail:
	rc = errno;
	if (w->dirfd >= 0)
		close(w->dirfd);
	free(w->hostname);
	free(w->kernel_release);
	free(w);
	errno = rc;
	return NULL;
}

int ctf_writer__add(struct ctf_writer *w, const struct ctf_event *ev)
{
	struct ctf_stream *s;
	struct ctf_buf *b;
	size_t before;
	uint64_t ts;
	uint32_t id;
	int rc;

	if (w->err)
		return w->err;
	s = stream_get(w, ev->cpu);
	if (!s)
		return w->err = -errno;
	rc = class_of(w, ev, &id);
	if (rc)
		return w->err = rc;
	ts = ev->time_ns;
	if (s->has_ts && ts < s->last_ts)
		ts = s->last_ts;
	b = &s->events;
	before = b->n;
	buf_le(b, id, 2);
	buf_le(b, ts, 8);
	buf_le(b, (uint32_t)ev->pid, 4);
	buf_le(b, (uint32_t)ev->tid, 4);
	buf_str(b, ev->comm);
	buf_le(b, ev->nips, 4);
	for (size_t i = 0; i < ev->nips; i++)
		buf_le(b, ev->ips[i], 8);
	buf_le(b, ev->nframes, 4);
	for (size_t i = 0; i < ev->nframes; i++) {
		buf_str(b, ev->frames[i].symbol);
		buf_str(b, ev->frames[i].module);
	}
	buf_le(b, ev->complete, 1);
	buf_str(b, ev->end);
	for (size_t i = 0; i < ev->nfields; i++) {
		const struct stacksnap_trace_field *f = &ev->fields[i];

		if (f->str)
			buf_str(b, f->str);
		else
			buf_le(b, f->value,
			       f->size == 1 || f->size == 2 || f->size == 4 ? f->size : 8);
	}
	if (b->oom)
		return w->err = -ENOMEM;
	s->packet_len += b->n - before;
	if (!s->nevents)
		s->first_ts = ts;
	s->nevents++;
	s->last_ts = ts;
	s->has_ts = true;
	if (ts > w->latest_ts)
		w->latest_ts = ts;
	/* The metadata must describe a class before a reader meets it. */
	if (s->packet_len >= w->o.packet_bytes) {
		if (w->metadata_dirty && (rc = write_metadata(w)))
			return w->err = rc;
		stream_close_packet(w, s);
	}
	return w->err;
}

int ctf_writer__discarded(struct ctf_writer *w, unsigned cpu, uint64_t total)
{
	struct ctf_stream *s;

	if (w->err)
		return w->err;
	s = stream_get(w, cpu);
	if (!s)
		return w->err = -errno;
	if (total <= s->discarded)
		return 0;
	s->discarded = total;
	/* The packet closes here, whenever the trace is flushed: where the
	 * count changed is part of the trace. */
	if (w->metadata_dirty) {
		int rc = write_metadata(w);

		if (rc)
			return w->err = rc;
	}
	stream_close_packet(w, s);
	return w->err;
}

int ctf_writer__flush(struct ctf_writer *w)
{
	int rc;

	if (w->err)
		return w->err;
	if (w->metadata_dirty && (rc = write_metadata(w)))
		return w->err = rc;
	for (size_t i = 0; i < w->nstreams && !w->err; i++)
		if (w->streams[i])
			stream_sync(w, w->streams[i]);
	return w->err;
}

int ctf_writer__close(struct ctf_writer *w)
{
	int rc;

	if (!w)
		return 0;
	if (!w->err && w->metadata_dirty)
		w->err = write_metadata(w);
	for (size_t i = 0; i < w->nstreams && !w->err; i++)
		if (w->streams[i])
			stream_close_packet(w, w->streams[i]);
	rc = w->err;
	for (size_t i = 0; i < w->nstreams; i++) {
		struct ctf_stream *s = w->streams[i];

		if (!s)
			continue;
		if (close(s->fd) && !rc)
			rc = -errno;
		free(s->events.p);
		free(s);
	}
	for (size_t i = 0; i < w->nclasses; i++) {
		free(w->classes[i].name);
		free(w->classes[i].sig);
	}
	free(w->classes);
	free(w->streams);
	free(w->class_text.p);
	free(w->hostname);
	free(w->kernel_release);
	close(w->dirfd);
	free(w);
	return rc;
}
