/* perf_data_header.c - the header part of a perf.data file: the event
 * attributes, the build-id and event-description features, for the
 * record reader (perf_data.c). Every byte comes from outside: all reads go
 * through the bounds-checked cursor and errors name the file offset. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/module.h"
#include "base/cursor.h"
#include "base/log.h"
#include "base/opts.h"
#include "base/vec.h"
#include "perfdata/perf_data.h"
#include "perfdata/perf_data_reader.h"

int pd_corrupt(struct stacksnap_perf_data *pd, uint64_t off, const char *fmt, ...)
{
	char what[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(pd->errmsg, sizeof(pd->errmsg),
		 "%s: corrupt perf.data at offset %#" PRIx64 ": %s", pd->name,
		 off, what);
	log_err(&pd->ctx->log, "%s", pd->errmsg);
	pd->err = -EINVAL;
	return fail(-EINVAL);
}

static void default_name(struct perf_attr *a)
{
	static const char *const sw[] = { "cpu-clock", "task-clock",
					  "page-faults", "context-switches",
					  "cpu-migrations", "minor-faults",
					  "major-faults" };
	static const char *const hw[] = { "cycles", "instructions",
					  "cache-references", "cache-misses",
					  "branches", "branch-misses" };
	const char *n = "";

	if (a->type == 1 && a->config < sizeof(sw) / sizeof(sw[0]))
		n = sw[a->config];
	else if (a->type == 0 && a->config < sizeof(hw) / sizeof(hw[0]))
		n = hw[a->config];
	snprintf(a->name, sizeof(a->name), "%s", n);
}

/* Reads a perf_event_attr of attr_len bytes at c; fields past its own
 * size stay 0. */
int pd_parse_attr(struct stacksnap_perf_data *pd, struct cursor *c,
		      size_t attr_len, struct perf_attr *a)
{
	uint64_t off = cursor_offset(c);
	const uint8_t *p = cursor_take(c, attr_len);
	uint8_t buf[PA_SAMPLE_STACK_USER + 8] = { 0 };

	if (!p || attr_len < PA_READ_FORMAT + 8)
		return pd_corrupt(pd, off, "event attribute of %zu bytes", attr_len);
	memcpy(buf, p, attr_len < sizeof(buf) ? attr_len : sizeof(buf));
	memset(a, 0, sizeof(*a));
	uint32_t t;
	memcpy(&t, buf + PA_TYPE, 4);
	a->type = t;
	memcpy(&a->config, buf + PA_CONFIG, 8);
	memcpy(&a->sample_type, buf + PA_SAMPLE_TYPE, 8);
	memcpy(&a->read_format, buf + PA_READ_FORMAT, 8);
	uint64_t flags;
	memcpy(&flags, buf + PA_FLAGS, 8);
	a->sample_id_all = flags & PA_FLAG_SAMPLE_ID_ALL;
	memcpy(&a->branch_sample_type, buf + PA_BRANCH_SAMPLE_TYPE, 8);
	memcpy(&a->regs_user, buf + PA_SAMPLE_REGS_USER, 8);
	default_name(a);
	return 0;
}

int pd_add_attr(struct stacksnap_perf_data *pd, const struct perf_attr *a,
		    uint64_t off)
{
	struct perf_attr *slot;

	if (pd->nattrs >= MAX_ATTRS)
		return pd_corrupt(pd, off, "more than %d event attributes", MAX_ATTRS);
	if (pd->nattrs && (a->sample_id_all != pd->attrs[0].sample_id_all))
		return pd_corrupt(pd, off, "events disagree on sample_id_all");
	slot = VEC_PUSH(pd->attrs, pd->nattrs, pd->capattrs);
	if (!slot)
		return fail(-ENOMEM);
	*slot = *a;
	return 0;
}

int pd_add_id(struct stacksnap_perf_data *pd, uint64_t id, size_t attr)
{
	struct id_attr *e = VEC_PUSH(pd->ids, pd->nids, pd->capids);

	if (!e)
		return fail(-ENOMEM);
	e->id = id;
	e->attr = attr;
	pd->ids_sorted = false;
	return 0;
}

/* The file's attribute section: attr_size-byte entries, each an attribute
 * followed by the file section holding its sample ids. */
static int read_attrs(struct stacksnap_perf_data *pd, uint64_t attr_size,
		      uint64_t off, uint64_t size)
{
	if (attr_size < PA_READ_FORMAT + 8 + 16 || attr_size > 4096)
		return pd_corrupt(pd, 16, "attribute entry size %" PRIu64, attr_size);
	if (off > pd->len || size > pd->len - off)
		return pd_corrupt(pd, 40, "attribute section %#" PRIx64 "+%#" PRIx64
			       " is outside the file (%zu bytes)", off, size, pd->len);
	if (size / attr_size == 0 || size % attr_size)
		return pd_corrupt(pd, 48, "attribute section of %" PRIu64
			       " bytes for entries of %" PRIu64, size, attr_size);
	for (uint64_t i = 0; i < size / attr_size; i++) {
		struct cursor c;
		struct perf_attr a;
		uint64_t at = off + i * attr_size;

		cursor_init(&c, pd->data, pd->len);
		cursor_skip(&c, at);
		if (pd_parse_attr(pd, &c, attr_size - 16, &a))
			return pd->err ? pd->err : -ENOMEM;
		uint64_t ids_off = cursor_u64(&c), ids_size = cursor_u64(&c);
		if (ids_off > pd->len || ids_size > pd->len - ids_off || ids_size % 8)
			return pd_corrupt(pd, at + attr_size - 16, "sample ids at %#" PRIx64
				       "+%#" PRIx64 " are outside the file",
				       ids_off, ids_size);
		if (pd_add_attr(pd, &a, at))
			return pd->err ? pd->err : -ENOMEM;
		for (uint64_t j = 0; j < ids_size / 8; j++) {
			uint64_t id;

			memcpy(&id, pd->data + ids_off + j * 8, 8);
			if (pd_add_id(pd, id, pd->nattrs - 1))
				return -ENOMEM;
		}
	}
	return 0;
}

/* One build-id record (feature section or pipe record) at c, of size
 * bytes including its header. */
int pd_read_build_id(struct stacksnap_perf_data *pd, struct cursor *c,
			 uint64_t off, uint16_t misc, uint16_t size)
{
	struct build_id *b;
	const uint8_t *id;
	const char *fname;

	if (size < 8 + 4 + 24 + 1 || size > cursor_left(c) + 8)
		return pd_corrupt(pd, off, "build-id record of %u bytes", size);
	cursor_skip(c, 4); /* pid */
	id = cursor_take(c, 24);
	fname = (const char *)cursor_take(c, size - 8 - 4 - 24);
	if (!id || !fname || !memchr(fname, 0, size - 8 - 4 - 24))
		return pd_corrupt(pd, off, "build-id record without a file name");
	b = VEC_PUSH(pd->bids, pd->nbids, pd->capbids);
	if (!b)
		return fail(-ENOMEM);
	b->filename = fname;
	b->len = misc & PERF_MISC_BUILD_ID_SIZE ? id[20] : 20;
	if (b->len > 20)
		b->len = 20;
	memcpy(b->id, id, b->len);
	return 0;
}

static int read_build_ids(struct stacksnap_perf_data *pd, uint64_t off,
			  uint64_t size)
{
	struct cursor c;

	cursor_init(&c, pd->data + off, size);
	while (cursor_left(&c) >= 8) {
		uint64_t at = off + cursor_offset(&c);
		cursor_u32(&c);
		uint16_t misc = cursor_u16(&c), rsize = cursor_u16(&c);

		if (pd_read_build_id(pd, &c, at, misc, rsize))
			return pd->err ? pd->err : -ENOMEM;
	}
	return 0;
}

/* perf's header string: u32 length (padded), then the bytes. */
static const char *header_string(struct cursor *c)
{
	uint32_t len = cursor_u32(c);
	const char *s = (const char *)cursor_take(c, len);

	return s && len && memchr(s, 0, len) ? s : NULL;
}

/* EVENT_DESC: the event names, matched to attributes by their ids. */
static int read_event_desc(struct stacksnap_perf_data *pd, uint64_t off,
			   uint64_t size)
{
	struct cursor c;

	cursor_init(&c, pd->data + off, size);
	uint32_t nr = cursor_u32(&c), asz = cursor_u32(&c);
	for (uint32_t i = 0; i < nr && !c.bad; i++) {
		struct perf_attr a;
		if (asz < PA_READ_FORMAT + 8 || asz > cursor_left(&c) ||
		    pd_parse_attr(pd, &c, asz, &a)) {
			pd->err = 0; /* names are optional: keep defaults */
			return 0;
		}
		uint32_t nids = cursor_u32(&c);
		const char *name = header_string(&c);
		if (!name || nids > cursor_left(&c) / 8)
			return 0;
		for (uint32_t j = 0; j < nids; j++) {
			uint64_t id = cursor_u64(&c);

			for (size_t k = 0; k < pd->nids; k++)
				if (pd->ids[k].id == id)
					snprintf(pd->attrs[pd->ids[k].attr].name,
						 MAX_NAME, "%s", name);
		}
		if (nids == 0 && i < pd->nattrs)
			snprintf(pd->attrs[i].name, MAX_NAME, "%s", name);
	}
	return 0;
}

static int read_features(struct stacksnap_perf_data *pd, const uint64_t feat[4])
{
	uint64_t at = pd->data_end;

	for (unsigned bit = 0; bit < 256; bit++) {
		if (!(feat[bit / 64] >> (bit % 64) & 1))
			continue;
		struct cursor c;
		cursor_init(&c, pd->data, pd->len);
		if (!cursor_skip(&c, at) || cursor_left(&c) < 16)
			return pd_corrupt(pd, at, "feature section table is cut short "
				       "(the file is truncated)");
		uint64_t off = cursor_u64(&c), size = cursor_u64(&c);
		if (off > pd->len || size > pd->len - off)
			return pd_corrupt(pd, at, "feature %u at %#" PRIx64 "+%#" PRIx64
				       " is outside the file (%zu bytes)", bit, off,
				       size, pd->len);
		if (bit == PERF_FEAT_BUILD_ID && read_build_ids(pd, off, size))
			return pd->err ? pd->err : -ENOMEM;
		if (bit == PERF_FEAT_EVENT_DESC && read_event_desc(pd, off, size))
			return -ENOMEM;
		at += 16;
	}
	return 0;
}

int pd_read_header(struct stacksnap_perf_data *pd)
{
	struct cursor c;

	cursor_init(&c, pd->data, pd->len);
	uint64_t magic = cursor_u64(&c), hsize = cursor_u64(&c);
	if (c.bad || magic != PERF_MAGIC2) {
		if (!c.bad && magic == __builtin_bswap64(PERF_MAGIC2))
			return pd_corrupt(pd, 0, "big-endian perf.data is not supported");
		return pd_corrupt(pd, 0, "not a perf.data file (no PERFILE2 magic)");
	}
	if (hsize == PERF_PIPE_HEADER_SIZE) {
		pd->pipe = true;
		pd->data_off = pd->pos = PERF_PIPE_HEADER_SIZE;
		pd->data_end = pd->len;
		return 0;
	}
	if (hsize < PERF_FILE_HEADER_SIZE || hsize > pd->len)
		return pd_corrupt(pd, 8, "header size %" PRIu64 " (file of %zu bytes)",
			       hsize, pd->len);
	uint64_t attr_size = cursor_u64(&c);
	uint64_t aoff = cursor_u64(&c), asize = cursor_u64(&c);
	uint64_t doff = cursor_u64(&c), dsize = cursor_u64(&c);
	cursor_skip(&c, 16); /* event_types: unused since 2010 */
	uint64_t feat[4];
	for (int i = 0; i < 4; i++)
		feat[i] = cursor_u64(&c);
	if (doff > pd->len || dsize > pd->len - doff)
		return pd_corrupt(pd, 56, "data section %#" PRIx64 "+%#" PRIx64
			       " is outside the file (%zu bytes; truncated?)",
			       doff, dsize, pd->len);
	if (doff % 8)
		return pd_corrupt(pd, 56, "data section at unaligned offset %#" PRIx64,
			       doff);
	pd->data_off = pd->pos = doff;
	pd->data_end = doff + dsize;
	pd->compressed = feat[PERF_FEAT_COMPRESSED / 64] >> (PERF_FEAT_COMPRESSED % 64) & 1;
	if (read_attrs(pd, attr_size, aoff, asize))
		return pd->err ? pd->err : -ENOMEM;
	return read_features(pd, feat);
}
