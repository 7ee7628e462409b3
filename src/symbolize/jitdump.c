/* jitdump.c - reads perf's jitdump files (code loads, moves, debug info)
 * into code ranges sorted by start, incrementally as the writer appends. */
#define _GNU_SOURCE
#include "symbolize/jitdump.h"
#include "symbolize/jit_range.h"

#include <byteswap.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cursor.h"
#include "base/maps_line.h"
#include "base/radix_sort.h"
#include "base/vec.h"

/* Bounds on what one file may claim: a header that says it is larger is
 * not a jitdump header; a file larger than this is not read (V8 writes
 * every code object's bytes: a long-running service reaches tens of MiB). */
#define JITDUMP_MAX_HEADER 4096u
#define JITDUMP_MAX_FILE (1ull << 31)
/* The smallest debug entry: addr, line, discriminator, an empty name's NUL. */
#define JITDUMP_MIN_DEBUG_ENTRY 17u

/* Storage the codes point into: file bytes and line arrays. */
struct jitdump_block {
	struct jitdump_block *next;
	_Alignas(8) unsigned char data[];
};

/* A code_index -> loads[] slot table (open addressing, linear probing).
 * Invariant: used < cap / 2; a slot of value UINT32_MAX is empty. */
struct jitdump_index {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap, used;
};

/* Invariant: loads[] in record order (a move appends the moved copy);
 * codes[] is loads sorted by start with one entry per start (the latest);
 * consumed is the file offset after the last whole record read. */
struct jitdump {
	struct jitdump_header hdr;
	bool have_header;
	bool closed;		/* JIT_CODE_CLOSE read: nothing follows */
	struct jitdump_code *loads;
	size_t nloads, loads_cap;
	struct jitdump_code *codes;
	size_t ncodes;
	struct jit_range_index painted;	/* of codes[] */
	struct jitdump_index by_index;
	/* A debug-info record applies to the next code load (as in perf). */
	struct jitdump_line *pending_lines;
	uint32_t npending;
	struct jitdump_block *blocks;
	char *path;		/* NULL: from bytes */
	off_t consumed;
	off_t seen;		/* file size at the last read */
	dev_t dev;
	ino_t ino;
	const struct log_sink *log;
};

static void *block_alloc(struct jitdump *jd, size_t len)
{
	struct jitdump_block *b = malloc(sizeof(*b) + len);

	if (!b)
		return NULL;
	b->next = jd->blocks;
	jd->blocks = b;
	return b->data;
}

static uint32_t rd32(const struct jitdump *jd, struct cursor *c)
{
	uint32_t v = cursor_u32(c);

	return jd->hdr.byte_swapped ? bswap_32(v) : v;
}

static uint64_t rd64(const struct jitdump *jd, struct cursor *c)
{
	uint64_t v = cursor_u64(c);

	return jd->hdr.byte_swapped ? bswap_64(v) : v;
}

static size_t index_slot(const struct jitdump_index *ix, uint64_t key)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ull;

	return (size_t)(h >> 17) & (ix->cap - 1);
}

static int index_put(struct jitdump_index *ix, uint64_t key, uint32_t val)
{
	size_t s;

	if ((ix->used + 1) * 2 > ix->cap) {
		struct jitdump_index bigger = { 0 };

		bigger.cap = ix->cap ? ix->cap * 2 : 64;
		bigger.keys = malloc(bigger.cap * sizeof(*bigger.keys));
		bigger.vals = malloc(bigger.cap * sizeof(*bigger.vals));
		if (!bigger.keys || !bigger.vals) {
			free(bigger.keys);
			free(bigger.vals);
			return -ENOMEM;
		}
		memset(bigger.vals, 0xff, bigger.cap * sizeof(*bigger.vals));
		for (size_t i = 0; i < ix->cap; i++)
			if (ix->vals[i] != UINT32_MAX)
				index_put(&bigger, ix->keys[i], ix->vals[i]);
		free(ix->keys);
		free(ix->vals);
		*ix = bigger;
	}
	for (s = index_slot(ix, key); ix->vals[s] != UINT32_MAX;
	     s = (s + 1) & (ix->cap - 1)) {
		if (ix->keys[s] == key) {
			ix->vals[s] = val;
			return 0;
		}
	}
	ix->keys[s] = key;
	ix->vals[s] = val;
	ix->used++;
	return 0;
}

static bool index_get(const struct jitdump_index *ix, uint64_t key,
		      uint32_t *val)
{
	if (!ix->cap)
		return false;
	for (size_t s = index_slot(ix, key); ix->vals[s] != UINT32_MAX;
	     s = (s + 1) & (ix->cap - 1)) {
		if (ix->keys[s] == key) {
			*val = ix->vals[s];
			return true;
		}
	}
	return false;
}

/* Appends a code range with lines (may be NULL), which it keeps, sorted,
 * after dropping those outside [start, end). */
static int add_code(struct jitdump *jd, uint64_t start, uint64_t size,
		    const char *name, uint64_t code_index,
		    struct jitdump_line *lines, uint32_t nlines)
{
	struct jitdump_code *c;
	uint32_t w = 0;

	if (jd->nloads >= UINT32_MAX - 1)
		return -E2BIG;
	c = VEC_PUSH(jd->loads, jd->nloads, jd->loads_cap);
	if (!c)
		return -ENOMEM;
	for (uint32_t i = 0; i < nlines; i++)
		if (lines[i].addr >= start && lines[i].addr - start < size)
			lines[w++] = lines[i];
	/* Sorted already, unless a move's shift wrapped some around. */
	for (uint32_t i = 1; i < w; i++) {
		if (lines[i - 1].addr > lines[i].addr) {
			if (radix_sort_u64(lines, w, sizeof(*lines),
					   offsetof(struct jitdump_line, addr)))
				return -ENOMEM;
			break;
		}
	}
	c->start = start;
	c->end = start + size;
	c->name = name;
	c->code_index = code_index;
	c->seq = (uint32_t)(jd->nloads - 1);
	c->lines = w ? lines : NULL;
	c->nlines = w;
	return index_put(&jd->by_index, code_index, c->seq);
}

/* V8 names its code "JS:<tier><function> <script>:<line>:<column>" (node
 * 20; older V8s used "LazyCompile:", "Function:"). */
static bool is_v8_name(const char *name)
{
	return !strncmp(name, "JS:", 3) || !strncmp(name, "LazyCompile:", 12) ||
	       !strncmp(name, "Function:", 9);
}

/* The script path in a V8 code name (after its last space, up to
 * ":line:column"), as [*path, *path + *len); false when there is none. */
static bool v8_name_script(const char *name, const char **path, size_t *len)
{
	const char *sp = strrchr(name, ' ');
	const char *end;
	int colons = 0;

	if (!sp)
		return false;
	end = sp + 1 + strlen(sp + 1);
	while (end > sp + 1 && colons < 2)
		if (*--end == ':')
			colons++;
	if (colons < 2)
		return false;
	*path = sp + 1;
	*len = (size_t)(end - (sp + 1));
	return *len > 0;
}

/* Two defects of V8's jitdump writer (node 20), undone for V8's code only:
 * - debug entries are code start + pc offset + 0x40 (the ELF header `perf
 *   inject` once placed before the code), where the specification and
 *   perf's own agent write the pc itself;
 * - a script's name is written from a buffer already freed, whose first
 *   16 bytes glibc's allocator has overwritten with its free-list words;
 *   the code's own name carries the script, which replaces a file name
 *   of the same length that agrees with it after those 16 bytes. */
static int undo_v8_quirks(struct jitdump *jd, uint64_t start,
			  const char *name, struct jitdump_line *lines,
			  uint32_t nlines)
{
	const char *script = NULL, *bad = NULL, *fixed = NULL;
	size_t len = 0;
	bool have_script;

	if (!is_v8_name(name))
		return 0;
	have_script = v8_name_script(name, &script, &len);
	for (uint32_t i = 0; i < nlines; i++) {
		const char *f = lines[i].file;

		if (lines[i].addr >= start + 0x40)
			lines[i].addr -= 0x40;
		if (!have_script || strlen(f) != len || len <= 16 ||
		    memcmp(f + 16, script + 16, len - 16) != 0 ||
		    !memcmp(f, script, 16))
			continue;
		/* Damaged bytes: '?' (read_damaged_name) or the allocator's
		 * words, which are not text. */
		if (f != bad) {
			char *copy = block_alloc(jd, len + 1);

			if (!copy)
				return -ENOMEM;
			memcpy(copy, script, len);
			copy[len] = '\0';
			bad = f;
			fixed = copy;
		}
		lines[i].file = fixed;
	}
	return 0;
}

static int read_code_load(struct jitdump *jd, struct cursor *r)
{
	uint64_t code_addr, code_size, code_index;
	const char *name;
	struct jitdump_line *lines = jd->pending_lines;
	uint32_t nlines = jd->npending;

	rd32(jd, r); /* pid */
	rd32(jd, r); /* tid */
	rd64(jd, r); /* vma */
	code_addr = rd64(jd, r);
	code_size = rd64(jd, r);
	code_index = rd64(jd, r);
	name = cursor_cstr(r);
	if (r->bad)
		return -EINVAL;
	jd->pending_lines = NULL;
	jd->npending = 0;
	if (code_size == 0 || code_addr + code_size < code_addr)
		return 0; /* names nothing */
	if (undo_v8_quirks(jd, code_addr, name, lines, nlines))
		return -ENOMEM;
	return add_code(jd, code_addr, code_size, name, code_index, lines,
			nlines);
}

static int read_code_move(struct jitdump *jd, struct cursor *r)
{
	uint64_t old_addr, new_addr, code_size, code_index;
	struct jitdump_line *lines = NULL;
	const struct jitdump_code *from;
	uint32_t slot;

	rd32(jd, r); /* pid */
	rd32(jd, r); /* tid */
	rd64(jd, r); /* vma */
	old_addr = rd64(jd, r);
	new_addr = rd64(jd, r);
	code_size = rd64(jd, r);
	code_index = rd64(jd, r);
	if (r->bad)
		return -EINVAL;
	if (!index_get(&jd->by_index, code_index, &slot)) {
		log_debug(jd->log, "jitdump: move of unknown code index %llu",
			  (unsigned long long)code_index);
		return 0;
	}
	if (code_size == 0 || new_addr + code_size < new_addr)
		return 0;
	from = &jd->loads[slot];
	if (from->nlines) {
		lines = block_alloc(jd, from->nlines * sizeof(*lines));
		if (!lines)
			return -ENOMEM;
		for (uint32_t i = 0; i < from->nlines; i++) {
			lines[i] = from->lines[i];
			lines[i].addr = lines[i].addr - old_addr + new_addr;
		}
	}
	return add_code(jd, new_addr, code_size, from->name, code_index, lines,
			from->nlines);
}

/* The span of debug entries' addresses a plausible record stays in. */
#define JITDUMP_MAX_CODE_SPAN (1ull << 30)

/* A file name of V8's freed buffer (see undo_v8_quirks): its first 16
 * bytes, which may hold NULs, are not the name's. The name's own NUL is
 * the first after them. Returns the name with those bytes as '?', in a
 * block, or NULL (-ENOMEM or no NUL: *bad set). */
static const char *read_damaged_name(struct jitdump *jd, struct cursor *r,
				     bool *bad)
{
	const uint8_t *p = r->p, *nul;
	char *copy;
	size_t len;

	if (cursor_left(r) <= 16 ||
	    !(nul = memchr(p + 16, 0, cursor_left(r) - 16))) {
		*bad = true;
		return NULL;
	}
	len = (size_t)(nul - p);
	copy = block_alloc(jd, len + 1);
	if (!copy)
		return NULL;
	memset(copy, '?', 16);
	memcpy(copy + 16, p + 16, len - 16);
	copy[len] = '\0';
	cursor_skip(r, len + 1);
	return copy;
}

/* Reads nr entries into lines. damaged: names are read as V8's freed
 * buffers where their first 16 bytes hold a NUL. Returns 0, 1 when the
 * entries do not fit the record (bad sizes, addresses away from
 * code_addr), or -ENOMEM. */
static int read_debug_entries(struct jitdump *jd, struct cursor r,
			      uint64_t code_addr, uint64_t nr, bool damaged,
			      struct jitdump_line *lines)
{
	const char *prev_file = "";

	for (uint64_t i = 0; i < nr; i++) {
		const char *file;
		bool bad = false;

		lines[i].addr = rd64(jd, &r);
		lines[i].line = rd32(jd, &r);
		rd32(jd, &r); /* discriminator */
		if (r.bad || lines[i].addr - code_addr > JITDUMP_MAX_CODE_SPAN)
			return 1;
		if (damaged && cursor_left(&r) > 16 &&
		    memchr(r.p, 0, 16) && !(r.p[0] == 0xff && r.p[1] == 0)) {
			file = read_damaged_name(jd, &r, &bad);
			if (!file && !bad)
				return -ENOMEM;
		} else {
			file = cursor_cstr(&r);
		}
		if (!file)
			return 1;
		/* "\xff" repeats the previous entry's file (perf's
		 * convention, which saves the name's bytes). */
		if ((unsigned char)file[0] == 0xff && file[1] == '\0')
			file = prev_file;
		lines[i].file = prev_file = file;
	}
	return cursor_left(&r) < 8 ? 0 : 1;
}

static int read_debug_info(struct jitdump *jd, struct cursor *r)
{
	uint64_t nr, code_addr;
	struct jitdump_line *lines;
	int err;

	code_addr = rd64(jd, r); /* perf applies the record to the next load */
	nr = rd64(jd, r);
	if (r->bad)
		return -EINVAL;
	if (nr > cursor_left(r) / JITDUMP_MIN_DEBUG_ENTRY)
		return -EINVAL;
	jd->pending_lines = NULL;
	jd->npending = 0;
	if (!nr)
		return 0;
	lines = block_alloc(jd, (size_t)nr * sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	err = read_debug_entries(jd, *r, code_addr, nr, false, lines);
	if (err == 1)
		err = read_debug_entries(jd, *r, code_addr, nr, true, lines);
	if (err < 0)
		return err;
	if (err) {
		log_debug(jd->log, "jitdump: debug info for %#llx does not "
			  "fit its record; ignored",
			  (unsigned long long)code_addr);
		return 0;
	}
	if (radix_sort_u64(lines, (size_t)nr, sizeof(*lines),
			   offsetof(struct jitdump_line, addr)))
		return -ENOMEM;
	jd->pending_lines = lines;
	jd->npending = (uint32_t)nr;
	return 0;
}

static int read_header(struct jitdump *jd, struct cursor *c)
{
	uint32_t magic, total;

	if (cursor_left(c) < JITDUMP_HEADER_SIZE)
		return -EAGAIN;
	magic = cursor_u32(c);
	if (magic == bswap_32(JITDUMP_MAGIC))
		jd->hdr.byte_swapped = 1;
	else if (magic != JITDUMP_MAGIC)
		return -EINVAL;
	jd->hdr.version = rd32(jd, c);
	total = rd32(jd, c);
	jd->hdr.elf_mach = rd32(jd, c);
	rd32(jd, c); /* pad1 */
	jd->hdr.pid = rd32(jd, c);
	jd->hdr.timestamp = rd64(jd, c);
	jd->hdr.flags = rd64(jd, c);
	if (total < JITDUMP_HEADER_SIZE || total > JITDUMP_MAX_HEADER)
		return -EINVAL;
	if (jd->hdr.version > JITDUMP_VERSION || jd->hdr.version == 0)
		return -EPROTONOSUPPORT;
	if (!cursor_skip(c, total - JITDUMP_HEADER_SIZE))
		return -EAGAIN;
	jd->have_header = true;
	return 0;
}

/* Reads records from bytes[0..len) (kept by the dump); *used is the length
 * of the whole records read. A record cut short ends the read quietly (the
 * writer is still writing it); a malformed one ends it with a message. */
static int read_records(struct jitdump *jd, const uint8_t *bytes, size_t len,
			size_t *used)
{
	struct cursor c;
	int err = 0;

	cursor_init(&c, bytes, len);
	*used = 0;
	if (!jd->have_header) {
		err = read_header(jd, &c);
		if (err == -EAGAIN)
			return len ? -EINVAL : 0;
		if (err)
			return err;
		*used = cursor_offset(&c);
	}
	while (!jd->closed && cursor_left(&c) >= JITDUMP_RECORD_HEADER_SIZE) {
		struct cursor r;
		const uint8_t *start = c.p;
		uint32_t id, size;

		id = rd32(jd, &c);
		size = rd32(jd, &c);
		rd64(jd, &c); /* timestamp */
		if (size < JITDUMP_RECORD_HEADER_SIZE) {
			log_warn(jd->log,
				 "jitdump: record at offset %zu: size %u is "
				 "smaller than a record header; reading stops",
				 (size_t)(start - bytes), size);
			jd->closed = true;
			break;
		}
		if (size - JITDUMP_RECORD_HEADER_SIZE > cursor_left(&c))
			break; /* still being written */
		cursor_init(&r, c.p, size - JITDUMP_RECORD_HEADER_SIZE);
		cursor_skip(&c, size - JITDUMP_RECORD_HEADER_SIZE);
		switch (id) {
		case JIT_CODE_LOAD:
			err = read_code_load(jd, &r);
			break;
		case JIT_CODE_MOVE:
			err = read_code_move(jd, &r);
			break;
		case JIT_CODE_DEBUG_INFO:
			err = read_debug_info(jd, &r);
			break;
		case JIT_CODE_CLOSE:
			jd->closed = true;
			break;
		default: /* unwinding info, later kinds: skipped by size */
			break;
		}
		if (err == -EINVAL) {
			log_warn(jd->log,
				 "jitdump: record %u at offset %zu is "
				 "malformed; reading stops",
				 id, (size_t)(start - bytes));
			jd->closed = true;
			err = 0;
			break;
		}
		if (err)
			return err;
		*used = cursor_offset(&c);
	}
	return 0;
}

/* Rebuilds codes[] from loads[]. */
static int sort_codes(struct jitdump *jd)
{
	struct jitdump_code *codes;
	size_t w = 0;

	codes = realloc(jd->codes, (jd->nloads ? jd->nloads : 1) *
					   sizeof(*codes));
	if (!codes)
		return -ENOMEM;
	jd->codes = codes;
	if (jd->nloads)
		memcpy(codes, jd->loads, jd->nloads * sizeof(*codes));
	if (radix_sort_u64(codes, jd->nloads, sizeof(*codes),
			   offsetof(struct jitdump_code, start)))
		return -ENOMEM;
	for (size_t i = 0; i < jd->nloads; i++) {
		if (w && codes[w - 1].start == codes[i].start)
			w--;
		codes[w++] = codes[i];
	}
	jd->ncodes = w;
	return jit_range__index(&jd->painted, codes, w, sizeof(*codes),
				offsetof(struct jitdump_code, seq));
}

/* Takes bytes (a block of the dump) and reads what it holds. */
static int take_bytes(struct jitdump *jd, const uint8_t *bytes, size_t len,
		      size_t *used)
{
	int err = read_records(jd, bytes, len, used);

	if (!err)
		err = sort_codes(jd);
	return err;
}

int jitdump__from_bytes(const void *data, size_t len,
			const struct log_sink *log, struct jitdump **out)
{
	struct jitdump *jd = calloc(1, sizeof(*jd));
	uint8_t *copy;
	size_t used;
	int err = -ENOMEM;

	if (!jd)
		return fail(-ENOMEM);
	jd->log = log;
	copy = block_alloc(jd, len ? len : 1);
	if (!copy)
		goto out;
	memcpy(copy, data, len);
	err = take_bytes(jd, copy, len, &used);
	if (!err && !jd->have_header)
		err = -EINVAL;
out:
	if (err) {
		jitdump__free(jd);
		return fail(err);
	}
	*out = jd;
	return 0;
}

int jitdump__refresh(struct jitdump *jd)
{
	struct stat st;
	size_t want, got = 0, used, before = jd->ncodes;
	uint8_t *bytes;
	int fd, err = 0;

	if (!jd->path || jd->closed)
		return 0;
	fd = open(jd->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno);
	if (fstat(fd, &st) != 0) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto out;
	}
	if (jd->have_header && (st.st_dev != jd->dev || st.st_ino != jd->ino ||
				st.st_size < jd->consumed)) {
		log_warn(jd->log, "%s: replaced or truncated; not read again",
			 jd->path);
		goto out;
	}
	if (jd->have_header && st.st_size == jd->seen)
		goto out;
	if ((uint64_t)st.st_size > JITDUMP_MAX_FILE) {
		log_warn(jd->log, "%s: %lld bytes: larger than a jitdump file "
			 "this reads", jd->path, (long long)st.st_size);
		err = -EFBIG;
		goto out;
	}
	jd->dev = st.st_dev;
	jd->ino = st.st_ino;
	jd->seen = st.st_size;
	if (st.st_size <= jd->consumed)
		goto out;
	want = (size_t)(st.st_size - jd->consumed);
	bytes = block_alloc(jd, want);
	if (!bytes) {
		err = -ENOMEM;
		goto out;
	}
	while (got < want) {
		ssize_t r = pread(fd, bytes + got, want - got,
				  jd->consumed + (off_t)got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	err = take_bytes(jd, bytes, got, &used);
	if (!err)
		jd->consumed += (off_t)used;
out:
	close(fd);
	if (err)
		return fail(err);
	return jd->ncodes > before ? (int)(jd->ncodes - before) : 0;
}

int jitdump__open_path(const char *path, const struct log_sink *log,
		       struct jitdump **out)
{
	struct jitdump *jd = calloc(1, sizeof(*jd));
	int err;

	if (!jd)
		return fail(-ENOMEM);
	jd->log = log;
	jd->path = strdup(path);
	err = jd->path ? jitdump__refresh(jd) : -ENOMEM;
	if (err >= 0 && !jd->have_header)
		err = -EINVAL; /* empty, or shorter than a header */
	if (err < 0) {
		if (err == -EINVAL)
			log_warn(log, "%s: not a jitdump file", path);
		else if (err == -EPROTONOSUPPORT)
			log_warn(log, "%s: jitdump version %u (this reads 1)",
				 path, jd->hdr.version);
		jitdump__free(jd);
		return fail(err);
	}
	log_debug(log, "%s: %zu JIT code ranges%s", path, jd->ncodes,
		  jd->hdr.byte_swapped ? " (byte-swapped file)" : "");
	*out = jd;
	return 0;
}

/* Is the last component of path "jit-<digits>.dump"? */
static bool is_jitdump_name(const char *path)
{
	const char *base = strrchr(path, '/');
	const char *p;

	base = base ? base + 1 : path;
	if (strncmp(base, "jit-", 4) != 0)
		return false;
	p = base + 4;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return strcmp(p, ".dump") == 0;
}

int jitdump__open_pid(pid_t pid, const struct log_sink *log,
		      struct jitdump **out)
{
	char maps[64], line[4096 + 128], path[4096 + 64];
	struct maps_line ml;
	FILE *f;
	int err = -ENOENT;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	if (!f)
		return fail(errno == ENOENT ? -ESRCH : -errno);
	while (fgets(line, sizeof(line), f)) {
		if (maps_line__parse(line, &ml) != 0 || !ml.path ||
		    ml.path[0] != '/' || !is_jitdump_name(ml.path))
			continue;
		/* The path as the process sees it, in its mount namespace. */
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid,
			 ml.path);
		err = jitdump__open_path(path, log, out);
		if (err == -ENOENT || err == -EACCES || err == -EPERM) {
			/* Deleted since, or its root not ours to cross: the
			 * mapping itself still reaches the file. */
			snprintf(path, sizeof(path),
				 "/proc/%d/map_files/%llx-%llx", (int)pid,
				 (unsigned long long)ml.start,
				 (unsigned long long)ml.end);
			err = jitdump__open_path(path, log, out);
		}
		break;
	}
	fclose(f);
	return err ? fail(err) : 0;
}

const struct jitdump_code *jitdump__lookup(const struct jitdump *jd,
					   uint64_t pc,
					   const struct jitdump_line **line)
{
	ptrdiff_t i = jit_range__find(&jd->painted, pc);
	const struct jitdump_code *best = i < 0 ? NULL : &jd->codes[i];
	size_t lo, hi;

	*line = NULL;
	if (best && best->nlines) {
		lo = 0;
		hi = best->nlines;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (best->lines[mid].addr <= pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo)
			*line = &best->lines[lo - 1];
	}
	return best;
}

const struct jitdump_code *jitdump__codes(const struct jitdump *jd, size_t *n)
{
	*n = jd->ncodes;
	return jd->codes;
}

const struct jitdump_header *jitdump__header(const struct jitdump *jd)
{
	return &jd->hdr;
}

const char *jitdump__path(const struct jitdump *jd)
{
	return jd->path;
}

void jitdump__free(struct jitdump *jd)
{
	if (!jd)
		return;
	while (jd->blocks) {
		struct jitdump_block *b = jd->blocks;

		jd->blocks = b->next;
		free(b);
	}
	free(jd->loads);
	free(jd->codes);
	jit_range__index_free(&jd->painted);
	free(jd->by_index.keys);
	free(jd->by_index.vals);
	free(jd->path);
	free(jd);
}
