/* perf_data.c - a reader of perf.data files (file and pipe layouts):
 * opening (and inflating perf record -z data), and the record stream,
 * delivered in perf's time order with the memory of two flush rounds; the
 * header's attributes and features are perf_data_header.c's. Every byte comes from outside: all reads go
 * through the bounds-checked cursor and errors name the file offset. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addrspace/module.h"
#include "base/opts.h"
#include "base/cursor.h"
#include "base/vec.h"
#include "perfdata/perf_data.h"
#include "perfdata/perf_data_reader.h"

#include <zstd.h>

static struct stacksnap_perf_data *
pd_new(struct stacksnap_ctx *ctx, const char *name,
       const struct stacksnap_perf_data_opts *opts)
{
	struct stacksnap_perf_data *pd;
	struct stacksnap_perf_data_opts o;

	if (!ctx || opts_in(&o, sizeof(o), opts, 0)) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ctx = ctx;
	snprintf(pd->name, sizeof(pd->name), "%s", name);
	pd->sort = !o.file_order;
	return pd;
}

#define PERF_REC_COMPRESSED2 83	/* with the size of its data */

/* The end of the whole records in buf[from..len) (from is at a record). */
static size_t whole_records(const uint8_t *buf, size_t from, size_t len)
{
	while (from + 8 <= len) {
		uint16_t rs;

		memcpy(&rs, buf + from + 6, 2);
		if (rs < 8 || rs > len - from)
			break;
		from += rs;
	}
	return from;
}

/* perf record -z writes records zstd-compressed, as one stream across the
 * COMPRESSED records (a frame may span several). When the data section
 * has any, it is inflated once into memory: the records in it are then
 * read as in any other file (offsets in messages are then offsets in the
 * inflated data, which the message says). */
static int inflate_compressed(struct stacksnap_perf_data *pd)
{
	uint64_t off;
	bool any = false;
	size_t cap = 0, len = 0, whole = 0; /* out[0..whole): whole records */
	uint8_t *out = NULL;
	ZSTD_DStream *z = NULL;
	int err = 0;

	/* A file says so in its header; a pipe-mode stream is scanned. */
	for (off = pd->pipe ? pd->data_off : pd->data_end;
	     !pd->compressed && off + 8 <= pd->data_end;) {
		uint32_t type;
		uint16_t size;

		memcpy(&type, pd->data + off, 4);
		memcpy(&size, pd->data + off + 6, 2);
		if (size < 8 || size > pd->data_end - off)
			return 0; /* the reader reports it, at its offset */
		if (type == PERF_REC_COMPRESSED || type == PERF_REC_COMPRESSED2) {
			any = true;
			break;
		}
		off += size;
	}
	if (!any && !pd->compressed)
		return 0;
	z = ZSTD_createDStream();
	if (!z || ZSTD_isError(ZSTD_initDStream(z)))
		goto nomem;
	for (off = pd->data_off; off + 8 <= pd->data_end;) {
		uint32_t type;
		uint16_t size;

		memcpy(&type, pd->data + off, 4);
		memcpy(&size, pd->data + off + 6, 2);
		if (size < 8 || size > pd->data_end - off) {
			err = pd_corrupt(pd, off, "record of %u bytes in a compressed recording", size);
			goto out;
		}
		const uint8_t *src = pd->data + off + 8;
		size_t slen = size - 8u;

		if (type == PERF_REC_COMPRESSED2) {
			uint64_t dsize;

			if (slen < 8) {
				err = pd_corrupt(pd, off, "compressed record of %u bytes", size);
				goto out;
			}
			memcpy(&dsize, src, 8);
			src += 8;
			slen -= 8;
			if (dsize < slen)
				slen = (size_t)dsize;
		} else if (type != PERF_REC_COMPRESSED) {
			src = pd->data + off;
			slen = size;
		}
		if (type != PERF_REC_COMPRESSED && type != PERF_REC_COMPRESSED2) {
			/* perf's records outside the compressed stream (round
			 * ends) may come while a record of the stream is only
			 * partly inflated: they go before that partial one. */
			whole = whole_records(out, whole, len);
			if (vec_reserve((void **)&out, &cap, len + slen, 1))
				goto nomem;
			memmove(out + whole + slen, out + whole, len - whole);
			memcpy(out + whole, src, slen);
			len += slen;
			whole += slen;
		} else {
			ZSTD_inBuffer in = { src, slen, 0 };

			/* Until the input is used and the output flushed (a
			 * full output buffer may leave bytes in the decoder,
			 * which must come before the next record copied). */
			bool full;

			do {
				if (vec_reserve((void **)&out, &cap, len + ZSTD_DStreamOutSize(), 1))
					goto nomem;
				ZSTD_outBuffer ob = { out + len, cap - len, 0 };
				size_t r = ZSTD_decompressStream(z, &ob, &in);

				if (ZSTD_isError(r)) {
					err = pd_corrupt(pd, off, "compressed record: zstd: %s",
						      ZSTD_getErrorName(r));
					goto out;
				}
				len += ob.pos;
				full = ob.pos == ob.size;
			} while (in.pos < in.size || full);
		}
		off += size;
	}
	/* A record cut by the end of the stream (perf stopped mid-chunk)
	 * is dropped, as perf drops it. */
	whole = whole_records(out, whole, len);
	if (whole < len)
		log_warn(&pd->ctx->log, "%s: the compressed data ends inside a record "
			 "(%zu bytes dropped)", pd->name, len - whole);
	len = whole;
	pd->file = pd->data;
	pd->file_len = pd->len;
	pd->inflated = out;
	pd->data = out;
	pd->len = len;
	pd->data_off = pd->pos = 0;
	pd->data_end = len;
	out = NULL;
	snprintf(pd->name + strnlen(pd->name, sizeof(pd->name) - 24),
		 24, " (inflated)");
	goto out;
nomem:
	err = fail(-ENOMEM);
out:
	free(out);
	ZSTD_freeDStream(z);
	return err;
}

static struct stacksnap_perf_data *pd_start(struct stacksnap_perf_data *pd)
{
	int err = pd_read_header(pd);

	if (!err)
		err = inflate_compressed(pd);

	if (err) {
		stacksnap_perf_data__free(pd);
		errno = -err;
		return NULL;
	}
	return pd;
}

struct stacksnap_perf_data *
stacksnap_perf_data__open_mem(struct stacksnap_ctx *ctx, const void *data,
			      size_t len, const struct stacksnap_perf_data_opts *opts)
{
	struct stacksnap_perf_data *pd = pd_new(ctx, "perf.data", opts);

	if (!pd)
		return NULL;
	if ((!data && len) || (uintptr_t)data % 8) {
		/* Records are read in place as arrays of u64. */
		free(pd);
		errno = EINVAL;
		return NULL;
	}
	pd->data = data;
	pd->len = len;
	return pd_start(pd);
}

struct stacksnap_perf_data *
stacksnap_perf_data__open(struct stacksnap_ctx *ctx, const char *path,
			  const struct stacksnap_perf_data_opts *opts)
{
	struct stacksnap_perf_data *pd;
	struct stat st;
	int fd, err;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	pd = pd_new(ctx, path, opts);
	if (!pd)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = errno;
		log_err(&ctx->log, "%s: cannot open: %s", path, strerror(err));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = EINVAL;
		log_err(&ctx->log, "%s: not a regular file (a pipe-mode stream "
			"must be saved to a file first)", path);
		goto fail;
	}
	pd->len = st.st_size;
	if (pd->len) {
		void *m = mmap(NULL, pd->len, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED) {
			err = errno;
			log_err(&ctx->log, "%s: cannot map: %s", path, strerror(err));
			goto fail;
		}
		/* Records are read once, front to back. */
		madvise(m, pd->len, MADV_SEQUENTIAL);
		pd->data = m;
		pd->mapped = true;
	}
	close(fd);
	return pd_start(pd);
fail:
	if (fd >= 0)
		close(fd);
	free(pd);
	errno = err;
	return NULL;
}

static int decode(struct stacksnap_perf_data *pd, uint64_t off,
		  struct stacksnap_perf_event *ev);

struct stacksnap_perf_data *
stacksnap_perf_data__open_attr(struct stacksnap_ctx *ctx, const void *attr,
			       size_t attr_size)
{
	struct stacksnap_perf_data *pd = pd_new(ctx, "perf ring buffer", NULL);
	struct perf_attr a;
	struct cursor c;

	if (!pd)
		return NULL;
	cursor_init(&c, attr, attr_size);
	if (!attr || pd_parse_attr(pd, &c, attr_size, &a) || pd_add_attr(pd, &a, 0)) {
		free(pd->attrs);
		free(pd);
		errno = EINVAL;
		return NULL;
	}
	pd->eof = true;
	return pd;
}

int stacksnap_perf_data__decode(struct stacksnap_perf_data *pd, const void *rec,
				size_t len, struct stacksnap_perf_event *ev)
{
	uint16_t size;

	if (!pd || !rec || !ev || len < 8 || len > sizeof(pd->scratch))
		return fail(-EINVAL);
	memcpy(&size, (const uint8_t *)rec + 6, 2);
	if (size < 8 || size > len)
		return pd_corrupt(pd, 0, "record of %u bytes in %zu", size, len);
	/* decode() reads the record at an offset of the stream: make the
	 * stream this one record. */
	pd->data = rec;
	pd->len = len;
	pd->err = 0;
	return decode(pd, 0, ev);
}

int stacksnap_perf_data__build_id(const struct stacksnap_perf_data *pd,
				  const char *filename, const uint8_t **id, size_t *len)
{
	if (!pd || !filename || !id || !len)
		return fail(-EINVAL);
	for (size_t i = 0; i < pd->nbids; i++)
		if (!strcmp(pd->bids[i].filename, filename)) {
			*id = pd->bids[i].id;
			*len = pd->bids[i].len;
			return 0;
		}
	return fail(-ENOENT);
}

void stacksnap_perf_data__free(struct stacksnap_perf_data *pd)
{
	if (!pd)
		return;
	if (pd->inflated) {
		free(pd->inflated);
		pd->data = pd->file;
		pd->len = pd->file_len;
	}
	if (pd->mapped)
		munmap((void *)pd->data, pd->len);
	free(pd->attrs);
	free(pd->ids);
	free(pd->bids);
	free(pd->pending);
	free(pd->ready);
	free(pd);
}

const char *stacksnap_perf_data__error(const struct stacksnap_perf_data *pd)
{
	return pd ? pd->errmsg : "";
}

static int cmp_id(const void *a, const void *b)
{
	const struct id_attr *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/* The attribute a record belongs to, from its sample id. */
static const struct perf_attr *attr_for_id(struct stacksnap_perf_data *pd,
					   uint64_t id)
{
	size_t lo = 0, hi = pd->nids;

	if (!pd->ids_sorted) {
		qsort(pd->ids, pd->nids, sizeof(*pd->ids), cmp_id);
		pd->ids_sorted = true;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pd->ids[mid].id < id)
			lo = mid + 1;
		else if (pd->ids[mid].id > id)
			hi = mid;
		else
			return &pd->attrs[pd->ids[mid].attr];
	}
	return NULL;
}

static unsigned popcount64(uint64_t v)
{
	return (unsigned)__builtin_popcountll(v);
}

/* The attribute of a record at rec (body of blen bytes after the header). */
static const struct perf_attr *record_attr(struct stacksnap_perf_data *pd,
					   uint32_t type, const uint8_t *body,
					   size_t blen)
{
	const struct perf_attr *a0 = &pd->attrs[0];
	uint64_t st = a0->sample_type, id;
	size_t pos;

	if (pd->nattrs == 1)
		return a0;
	if (type == PERF_REC_SAMPLE) {
		if (st & PS_IDENTIFIER)
			pos = 0;
		else if (st & PS_ID)
			pos = 8 * popcount64(st & (PS_IP | PS_TID | PS_TIME | PS_ADDR));
		else
			return a0;
	} else {
		if (!a0->sample_id_all)
			return a0;
		size_t back;

		if (st & PS_IDENTIFIER)
			back = 8;
		else if (st & PS_ID)
			back = 8 * popcount64(st & (PS_ID | PS_STREAM_ID | PS_CPU |
						    PS_IDENTIFIER));
		else
			return a0;
		if (back > blen)
			return NULL;
		pos = blen - back;
	}
	if (pos > blen || blen - pos < 8)
		return NULL;
	memcpy(&id, body + pos, 8);
	return attr_for_id(pd, id);
}

/* The sample_id_all trailer of a non-sample record: time and cpu. */
static void read_trailer(const struct perf_attr *a, const uint8_t *body,
			 size_t blen, struct stacksnap_perf_event *ev)
{
	uint64_t st = a->sample_type;
	size_t n = 8 * popcount64(st & (PS_TID | PS_TIME | PS_ID | PS_STREAM_ID |
					PS_CPU | PS_IDENTIFIER));
	struct cursor c;

	if (!a->sample_id_all || n > blen)
		return;
	cursor_init(&c, body + blen - n, n);
	if (st & PS_TID)
		cursor_skip(&c, 8);
	if (st & PS_TIME)
		ev->time = cursor_u64(&c);
	if (st & PS_ID)
		cursor_skip(&c, 8);
	if (st & PS_STREAM_ID)
		cursor_skip(&c, 8);
	if (st & PS_CPU)
		ev->cpu = cursor_u32(&c);
}

/* The time of a record for sorting; false when it has none. */
static bool record_time(struct stacksnap_perf_data *pd, uint32_t type,
			const uint8_t *body, size_t blen, uint64_t *t)
{
	const struct perf_attr *a;
	struct stacksnap_perf_event ev = { 0 };

	if (type >= PERF_REC_USER_START || !pd->nattrs)
		return false;
	a = record_attr(pd, type, body, blen);
	if (!a || !(a->sample_type & PS_TIME))
		return false;
	if (type == PERF_REC_SAMPLE) {
		size_t pos = 8 * popcount64(a->sample_type &
					    (PS_IDENTIFIER | PS_IP | PS_TID));
		if (pos + 8 > blen)
			return false;
		memcpy(t, body + pos, 8);
		return true;
	}
	if (!a->sample_id_all)
		return false;
	read_trailer(a, body, blen, &ev);
	*t = ev.time;
	return true;
}

static void fill_build_id(struct stacksnap_perf_data *pd,
			  struct stacksnap_mapping *m)
{
	if (m->build_id || !m->path)
		return;
	for (size_t i = 0; i < pd->nbids; i++)
		if (!strcmp(pd->bids[i].filename, m->path)) {
			m->build_id = pd->bids[i].id;
			m->build_id_len = pd->bids[i].len;
			return;
		}
}

static int decode_sample(struct stacksnap_perf_data *pd,
			 const struct perf_attr *a, struct cursor *c,
			 uint64_t off, struct stacksnap_perf_event *ev)
{
	uint64_t st = a->sample_type;

	ev->event_name = a->name;
	ev->sample_type = st;
	if (st & PS_IDENTIFIER)
		cursor_skip(c, 8);
	if (st & PS_IP)
		ev->ip = cursor_u64(c);
	if (st & PS_TID) {
		ev->pid = (pid_t)cursor_u32(c);
		ev->tid = (pid_t)cursor_u32(c);
	}
	if (st & PS_TIME)
		ev->time = cursor_u64(c);
	if (st & PS_ADDR)
		cursor_skip(c, 8);
	if (st & PS_ID)
		cursor_skip(c, 8);
	if (st & PS_STREAM_ID)
		cursor_skip(c, 8);
	if (st & PS_CPU) {
		ev->cpu = cursor_u32(c);
		cursor_skip(c, 4);
	}
	if (st & PS_PERIOD)
		ev->period = cursor_u64(c);
	if (st & PS_READ) {
		uint64_t rf = a->read_format;
		uint64_t per = 1 + !!(rf & PR_ID) + !!(rf & PR_LOST);

		if (rf & PR_GROUP) {
			uint64_t nr = cursor_u64(c);

			cursor_skip(c, 8 * popcount64(rf & (PR_TOTAL_TIME_ENABLED |
							   PR_TOTAL_TIME_RUNNING)));
			if (nr > cursor_left(c) / 8 / per)
				return pd_corrupt(pd, off, "sample read group of %" PRIu64
					       " values", nr);
			cursor_skip(c, nr * per * 8);
		} else {
			cursor_skip(c, 8 * (per + popcount64(rf & (PR_TOTAL_TIME_ENABLED |
								   PR_TOTAL_TIME_RUNNING))));
		}
	}
	if (st & PS_CALLCHAIN) {
		uint64_t nr = cursor_u64(c);

		if (nr > cursor_left(c) / 8)
			return pd_corrupt(pd, off, "callchain of %" PRIu64
				       " entries in a record of %u bytes", nr, ev->size);
		ev->callchain_nr = nr;
		ev->callchain = (const uint64_t *)cursor_take(c, nr * 8);
	}
	if (st & PS_RAW) {
		uint32_t n = cursor_u32(c);

		/* The kernel pads raw data so that the fields after it
		 * stay 8-byte aligned; they are handed out as u64 arrays. */
		if ((4 + (uint64_t)n) % 8 || !cursor_skip(c, n))
			return pd_corrupt(pd, off, "raw data of %u bytes", n);
	}
	if (st & PS_BRANCH_STACK) {
		uint64_t nr = cursor_u64(c);

		if (a->branch_sample_type & PERF_BRANCH_HW_INDEX)
			cursor_skip(c, 8);
		if (nr > cursor_left(c) / 24)
			return pd_corrupt(pd, off, "branch stack of %" PRIu64 " entries", nr);
		cursor_skip(c, nr * 24);
	}
	if (st & PS_REGS_USER) {
		ev->regs_abi = cursor_u64(c);
		ev->regs_mask = a->regs_user;
		if (ev->regs_abi) {
			size_t n = popcount64(a->regs_user);

			ev->regs = (const uint64_t *)cursor_take(c, n * 8);
			if (!ev->regs)
				return pd_corrupt(pd, off, "user registers cut short");
		}
	}
	if (st & PS_STACK_USER) {
		uint64_t size = cursor_u64(c);

		if (size) {
			if (size > cursor_left(c))
				return pd_corrupt(pd, off, "user stack of %" PRIu64
					       " bytes in a record of %u bytes",
					       size, ev->size);
			ev->stack = cursor_take(c, size);
			uint64_t dyn = cursor_u64(c);
			ev->stack_len = dyn < size ? dyn : size;
		}
	}
	if (c->bad)
		return pd_corrupt(pd, off, "sample record of %u bytes is too short "
			       "for its sample_type %#" PRIx64, ev->size, st);
	if (!ev->regs)
		ev->regs_abi = 0;
	return 0;
}

/* Decodes the record at off (its size already checked) into ev. */
static int decode(struct stacksnap_perf_data *pd, uint64_t off,
		  struct stacksnap_perf_event *ev)
{
	const uint8_t *rec = pd->data + off;
	uint32_t type;
	uint16_t misc, size;
	struct cursor c;

	memcpy(&type, rec, 4);
	memcpy(&misc, rec + 4, 2);
	memcpy(&size, rec + 6, 2);
	if ((uintptr_t)rec % 8) {
		memcpy(pd->scratch, rec, size);
		rec = (const uint8_t *)pd->scratch;
	}
	memset(ev, 0, sizeof(*ev));
	ev->record_type = type;
	ev->misc = misc;
	ev->offset = off;
	ev->size = size;
	ev->pid = ev->tid = ev->ppid = ev->ptid = -1;
	ev->map.sz = sizeof(ev->map);
	ev->event_name = "";
	cursor_init(&c, rec + 8, size - 8);
	if (type >= PERF_REC_USER_START || !pd->nattrs)
		return 0;
	const struct perf_attr *a = record_attr(pd, type, rec + 8, size - 8);
	if (!a)
		return pd_corrupt(pd, off, "record of type %u has an unknown sample id",
			       type);
	if (type != PERF_REC_SAMPLE)
		read_trailer(a, rec + 8, size - 8, ev);
	switch (type) {
	case PERF_REC_MMAP:
	case PERF_REC_MMAP2:
		ev->type = STACKSNAP_PERF_MMAP;
		ev->pid = (pid_t)cursor_u32(&c);
		ev->tid = (pid_t)cursor_u32(&c);
		ev->map.start = cursor_u64(&c);
		uint64_t len = cursor_u64(&c);
		ev->map.end = ev->map.start + len;
		ev->map.offset = cursor_u64(&c);
		if (type == PERF_REC_MMAP2) {
			if (misc & PERF_MISC_MMAP_BUILD_ID) {
				uint8_t blen = cursor_u8(&c);

				cursor_skip(&c, 3);
				ev->map.build_id = cursor_take(&c, 20);
				ev->map.build_id_len = blen > 20 ? 20 : blen;
				if (!blen)
					ev->map.build_id = NULL;
			} else {
				uint32_t maj = cursor_u32(&c), min = cursor_u32(&c);

				ev->map.dev = ((uint64_t)maj << 8) | min;
				ev->map.inode = cursor_u64(&c);
				cursor_skip(&c, 8); /* ino_generation */
			}
			ev->map.prot = cursor_u32(&c);
			cursor_skip(&c, 4); /* flags */
			/* PROT_NONE (a guard area) must not read as 0,
			 * which stacksnap_mapping takes for r-x. */
			if (!ev->map.prot)
				ev->map.prot = PROT_READ;
		} else {
			ev->map.prot = misc & PERF_MISC_MMAP_DATA
					       ? PROT_READ | PROT_WRITE
					       : PROT_READ | PROT_EXEC;
		}
		ev->map.path = (const char *)c.p;
		if (c.bad || !memchr(c.p, 0, cursor_left(&c)) || len == 0 ||
		    ev->map.end < ev->map.start)
			return pd_corrupt(pd, off, "mmap record of %u bytes is malformed",
				       size);
		fill_build_id(pd, &ev->map);
		return 0;
	case PERF_REC_COMM:
		ev->type = STACKSNAP_PERF_COMM;
		ev->pid = (pid_t)cursor_u32(&c);
		ev->tid = (pid_t)cursor_u32(&c);
		ev->comm = (const char *)c.p;
		ev->exec = misc & PERF_MISC_COMM_EXEC;
		if (c.bad || !memchr(c.p, 0, cursor_left(&c)))
			return pd_corrupt(pd, off, "comm record without a name");
		return 0;
	case PERF_REC_FORK:
	case PERF_REC_EXIT:
		ev->type = type == PERF_REC_FORK ? STACKSNAP_PERF_FORK
						 : STACKSNAP_PERF_EXIT;
		ev->pid = (pid_t)cursor_u32(&c);
		ev->ppid = (pid_t)cursor_u32(&c);
		ev->tid = (pid_t)cursor_u32(&c);
		ev->ptid = (pid_t)cursor_u32(&c);
		ev->time = cursor_u64(&c);
		if (c.bad)
			return pd_corrupt(pd, off, "fork/exit record of %u bytes", size);
		return 0;
	case PERF_REC_LOST:
		ev->type = STACKSNAP_PERF_LOST;
		cursor_skip(&c, 8);
		ev->lost = cursor_u64(&c);
		return 0;
	case PERF_REC_SAMPLE:
		ev->type = STACKSNAP_PERF_SAMPLE;
		return decode_sample(pd, a, &c, off, ev);
	}
	return 0;
}

/* Pipe-mode records that describe the stream rather than the process:
 * attributes and build-ids come inline instead of in the header. */
static int pipe_record(struct stacksnap_perf_data *pd, uint64_t off,
		       uint32_t type, uint16_t misc, uint16_t size)
{
	struct cursor c;

	cursor_init(&c, pd->data + off + 8, size - 8);
	if (type == PERF_REC_HEADER_ATTR) {
		struct perf_attr a;
		uint32_t asz;

		memcpy(&asz, pd->data + off + 8 + PA_SIZE,
		       size >= 8 + PA_SIZE + 4 ? 4 : 0);
		if (size < 8 + PA_SIZE + 4 || asz < PA_READ_FORMAT + 8 ||
		    asz > size - 8u)
			return pd_corrupt(pd, off, "attribute record of %u bytes", size);
		if (pd_parse_attr(pd, &c, asz, &a) || pd_add_attr(pd, &a, off))
			return pd->err ? pd->err : -ENOMEM;
		while (cursor_left(&c) >= 8)
			if (pd_add_id(pd, cursor_u64(&c), pd->nattrs - 1))
				return -ENOMEM;
	} else if (type == PERF_REC_HEADER_BUILD_ID) {
		return pd_read_build_id(pd, &c, off, misc, size);
	}
	return 0;
}

/* Reads records up to the end of the next round (or of the data),
 * queueing them; handles what perf adds to the stream itself. */
static int scan_round(struct stacksnap_perf_data *pd)
{
	while (pd->pos < pd->data_end) {
		uint64_t off = pd->pos;
		uint32_t type;
		uint16_t misc, size;

		if (pd->data_end - off < 8)
			return pd_corrupt(pd, off, "record header cut short (the data "
				       "section ends at %#" PRIx64 ")", pd->data_end);
		memcpy(&type, pd->data + off, 4);
		memcpy(&misc, pd->data + off + 4, 2);
		memcpy(&size, pd->data + off + 6, 2);
		/* The kernel pads its records to 8 bytes; perf's own
		 * records in pipe mode may not be. */
		if (size < 8 || (size % 8 && !(pd->pipe && type >= PERF_REC_USER_START)))
			return pd_corrupt(pd, off, "record of type %u has size %u",
				       type, size);
		if (size > pd->data_end - off)
			return pd_corrupt(pd, off, "record of type %u and %u bytes goes "
				       "past the end of the data at %#" PRIx64
				       " (the file is truncated)", type, size,
				       pd->data_end);
		pd->pos += size;
		if (type == PERF_REC_COMPRESSED)
			return pd_corrupt(pd, off, "compressed records (perf record -z) "
				       "are not supported; record without -z");
		if (type == PERF_REC_AUXTRACE) {
			uint64_t aux;

			if (size < 16)
				return pd_corrupt(pd, off, "auxtrace record of %u bytes", size);
			memcpy(&aux, pd->data + off + 8, 8);
			if (aux % 8 || aux > pd->data_end - pd->pos)
				return pd_corrupt(pd, off, "auxtrace data of %" PRIu64
					       " bytes", aux);
			pd->pos += aux;
			continue;
		}
		if (pd->pipe && pipe_record(pd, off, type, misc, size))
			return pd->err ? pd->err : -ENOMEM;
		if (type == PERF_REC_FINISHED_ROUND && pd->sort)
			return 1;
		if (type >= PERF_REC_USER_START)
			continue;
		if (!pd->nattrs)
			return pd_corrupt(pd, off, "record of type %u before any event "
				       "attribute", type);
		struct queued *q = VEC_PUSH(pd->pending, pd->npending, pd->cappending);
		if (!q)
			return fail(-ENOMEM);
		q->offset = off;
		q->seq = pd->seq++;
		q->time = 0;
		if (pd->sort) {
			uint64_t t;

			if (!record_time(pd, type, pd->data + off + 8, size - 8, &t)) {
				/* A record without a time: perf delivers these
				 * as they come. Keep them in their place. */
				t = pd->max_time;
			}
			q->time = t;
			if (t > pd->max_time)
				pd->max_time = t;
		}
		if (!pd->sort)
			return 1;
	}
	pd->eof = true;
	return 0;
}

static int cmp_queued(const void *a, const void *b)
{
	const struct queued *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Is q[0..n) in cmp_queued's order already (one thread's records, or
 * CPUs that took turns): the sort is then for nothing. */
static bool queued_sorted(const struct queued *q, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (cmp_queued(&q[i - 1], &q[i]) > 0)
			return false;
	return true;
}

/* Moves the due part of pending into ready: everything at the end of the
 * data, else what is not later than the largest time of the rounds before
 * this one (perf's rule: a later round may still hold earlier records). */
static int refill(struct stacksnap_perf_data *pd)
{
	size_t due = 0;

	pd->nready = pd->next_ready = 0;
	while (!pd->nready) {
		if (pd->eof && !pd->npending)
			return 0;
		uint64_t limit = pd->flush_limit;
		if (!pd->eof) {
			int r = scan_round(pd);

			if (r < 0)
				return r;
		}
		if (!pd->sort) {
			due = pd->npending;
		} else {
			if (pd->npending && !queued_sorted(pd->pending, pd->npending))
				qsort(pd->pending, pd->npending,
				      sizeof(*pd->pending), cmp_queued);
			due = 0;
			if (pd->eof)
				due = pd->npending;
			else
				while (due < pd->npending &&
				       pd->pending[due].time <= limit)
					due++;
			pd->flush_limit = pd->max_time;
		}
		if (vec_reserve((void **)&pd->ready, &pd->capready, due ? due : 1,
				sizeof(*pd->ready)))
			return fail(-ENOMEM);
		if (due) /* pending may still be NULL */
			memcpy(pd->ready, pd->pending, due * sizeof(*pd->ready));
		if (due && pd->npending > due)
			memmove(pd->pending, pd->pending + due,
				(pd->npending - due) * sizeof(*pd->pending));
		pd->npending -= due;
		pd->nready = due;
	}
	return 1;
}

#define PREFETCH_BYTES 2048

int stacksnap_perf_data__next(struct stacksnap_perf_data *pd,
			      struct stacksnap_perf_event *ev)
{
	int r;

	if (!pd || !ev)
		return fail(-EINVAL);
	if (pd->err)
		return fail(pd->err);
	if (pd->next_ready == pd->nready) {
		r = refill(pd);
		if (r <= 0)
			return r;
	}
	/* The next record's first lines (header, callchain, registers, the
	 * top of its stack copy) fetched while this one is unwound and
	 * printed: a replay reads each record once, from memory the caches
	 * have not seen. */
	if (pd->next_ready + 1 < pd->nready) {
		const uint8_t *nx = pd->data + pd->ready[pd->next_ready + 1].offset;

		for (unsigned i = 0; i < PREFETCH_BYTES; i += 64)
			__builtin_prefetch(nx + i);
	}
	r = decode(pd, pd->ready[pd->next_ready++].offset, ev);
	return r < 0 ? r : 1;
}
