/* perf_map.c - reads perf's JIT map files (/tmp/perf-<pid>.map) into a
 * sorted array of named code ranges, incrementally as the writer appends. */
#define _GNU_SOURCE
#include "symbolize/perf_map.h"
#include "symbolize/jit_range.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/radix_sort.h"
#include "base/vec.h"

/* Lines longer than this are not map lines (a name of 64 KiB is not a
 * function name); the bound also caps what one bad line costs. */
#define PERF_MAP_MAX_LINE 65536
/* How many entries before the binary search's hit are looked at for an
 * older, larger entry that also covers pc (a newer one nested inside it
 * may have ended before pc). Bounded so a lookup stays O(log n). */

/* Text read so far, kept because entries point into it. */
struct perf_map_chunk {
	struct perf_map_chunk *next;
	char text[];
};

/* Invariant: entries[0..n) sorted by start, starts unique (of lines with
 * one start only the last is kept); every name points into a chunk.
 * consumed is the file offset after the last complete line read: a line
 * being written (no newline yet) is parsed but read again next time, and
 * its complete form wins as the later line. */
struct perf_map {
	struct perf_map_entry *entries;
	size_t n, cap;
	struct jit_range_index painted;	/* of entries[] */
	struct perf_map_chunk *chunks;
	uint32_t next_seq;
	size_t bad_lines;
	char *path;		/* NULL: from text */
	off_t consumed;
	off_t seen;		/* the file's size at the last read */
	dev_t dev;
	ino_t ino;
	const struct log_sink *log;
};

/* Parses a hex number with optional 0x; *p moves past it. False when
 * there are no digits or more than 16. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* Parses one line [line, end) (no newline) in place: the name is
 * NUL-terminated at end, which must be writable. */
static int parse_line(struct perf_map *pm, char *line, char *end)
{
	const char *p = line;
	uint64_t start, size;
	struct perf_map_entry *e;

	if (end > line && end[-1] == '\r')
		end--;
	if (end - line > PERF_MAP_MAX_LINE)
		goto bad;
	if (!parse_hex(&p, end, &start) || p >= end || *p != ' ')
		goto bad;
	p++;
	if (!parse_hex(&p, end, &size) || p >= end || *p != ' ')
		goto bad;
	p++;
	/* A NUL in the name ends it: an empty one names nothing. */
	if (size == 0 || start + size < start || p >= end || *p == '\0')
		goto bad;
	e = VEC_PUSH(pm->entries, pm->n, pm->cap);
	if (!e)
		return -ENOMEM;
	*end = '\0';
	e->start = start;
	e->end = start + size;
	e->name = p;
	e->seq = pm->next_seq++;
	return 0;
bad:
	if (end > line)
		pm->bad_lines++;
	pm->next_seq++;
	return 0;
}

/* Parses the whole of text[0..len), which the map keeps (a NUL must fit at
 * text[len]). Returns the length up to and including the last newline. */
static int parse_text(struct perf_map *pm, char *text, size_t len,
		      size_t *complete)
{
	char *p = text, *end = text + len;

	*complete = 0;
	/* Lines are ~40-80 bytes: one allocation instead of doublings. */
	if (vec_reserve((void **)&pm->entries, &pm->cap, pm->n + len / 48 + 1,
			sizeof(*pm->entries)))
		return -ENOMEM;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *line_end = nl ? nl : end;
		int err = parse_line(pm, p, line_end);

		if (err)
			return err;
		if (!nl)
			break;
		p = nl + 1;
		*complete = (size_t)(p - text);
	}
	return 0;
}

/* Sorts entries by start (stable: lines of one start stay in file order,
 * whatever was read before first) and keeps the last line of each start. */
static int sort_entries(struct perf_map *pm)
{
	size_t w = 0, i = 1;
	int err;

	/* HotSpot writes its map in address order: no sort needed. */
	while (i < pm->n && pm->entries[i - 1].start <= pm->entries[i].start)
		i++;
	if (i < pm->n) {
		err = radix_sort_u64(pm->entries, pm->n, sizeof(*pm->entries),
				     offsetof(struct perf_map_entry, start));
		if (err)
			return err;
	}
	for (i = 0; i < pm->n; i++) {
		if (w && pm->entries[w - 1].start == pm->entries[i].start)
			w--;
		pm->entries[w++] = pm->entries[i];
	}
	pm->n = w;
	return jit_range__index(&pm->painted, pm->entries, w,
				sizeof(*pm->entries),
				offsetof(struct perf_map_entry, seq));
}

static struct perf_map_chunk *new_chunk(struct perf_map *pm, size_t len)
{
	struct perf_map_chunk *c = malloc(sizeof(*c) + len + 1);

	if (!c)
		return NULL;
	c->next = pm->chunks;
	pm->chunks = c;
	c->text[len] = '\0';
	return c;
}

int perf_map__from_text(const char *text, size_t len, struct perf_map **out)
{
	struct perf_map *pm = calloc(1, sizeof(*pm));
	struct perf_map_chunk *c;
	size_t complete;
	int err = -ENOMEM;

	if (!pm)
		return fail(-ENOMEM);
	c = new_chunk(pm, len);
	if (!c)
		goto out;
	memcpy(c->text, text, len);
	err = parse_text(pm, c->text, len, &complete);
	if (!err)
		err = sort_entries(pm);
out:
	if (err) {
		perf_map__free(pm);
		return fail(err);
	}
	*out = pm;
	return 0;
}

/* Reads path from byte `from` to its end into a new chunk. *len is the
 * bytes read, *st the file's stat. -ENOENT when the file is gone. */
static int read_from(struct perf_map *pm, off_t from, char **text,
		     size_t *len, struct stat *st)
{
	int fd = open(pm->path, O_RDONLY | O_CLOEXEC);
	struct perf_map_chunk *c;
	size_t want, got = 0;
	int err = 0;

	*text = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) != 0) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		err = -EINVAL;
		goto out;
	}
	if (st->st_size <= from)
		goto out;
	want = (size_t)(st->st_size - from);
	c = new_chunk(pm, want);
	if (!c) {
		err = -ENOMEM;
		goto out;
	}
	/* The writer may append while this reads: stop at the size seen. */
	while (got < want) {
		ssize_t r = pread(fd, c->text + got, want - got, from + got);

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
	c->text[got] = '\0';
	*text = c->text;
	*len = got;
out:
	close(fd);
	return err;
}

static void drop_all(struct perf_map *pm)
{
	while (pm->chunks) {
		struct perf_map_chunk *c = pm->chunks;

		pm->chunks = c->next;
		free(c);
	}
	pm->n = 0;
	jit_range__index_free(&pm->painted);
	pm->consumed = pm->seen = 0;
}

int perf_map__refresh(struct perf_map *pm)
{
	struct stat st;
	size_t len, complete, before;
	char *text;
	int err;

	if (!pm->path)
		return 0;
	if (stat(pm->path, &st) != 0)
		return fail(-errno);
	if (pm->chunks && (st.st_dev != pm->dev || st.st_ino != pm->ino ||
			   st.st_size < pm->consumed)) {
		log_debug(pm->log, "%s: replaced or truncated; read again",
			  pm->path);
		drop_all(pm);
	}
	if (pm->chunks && st.st_size == pm->seen)
		return 0;
	before = pm->n;
	err = read_from(pm, pm->consumed, &text, &len, &st);
	if (err)
		return fail(err);
	pm->dev = st.st_dev;
	pm->ino = st.st_ino;
	pm->seen = st.st_size;
	if (!text)
		return 0;
	err = parse_text(pm, text, len, &complete);
	if (!err)
		err = sort_entries(pm);
	if (err)
		return fail(err);
	pm->consumed += (off_t)complete;
	return pm->n > before ? (int)(pm->n - before) : 0;
}

int perf_map__open_path(const char *path, const struct log_sink *log,
			struct perf_map **out)
{
	struct perf_map *pm = calloc(1, sizeof(*pm));
	int err;

	if (!pm)
		return fail(-ENOMEM);
	pm->log = log;
	pm->path = strdup(path);
	if (!pm->path) {
		perf_map__free(pm);
		return fail(-ENOMEM);
	}
	err = perf_map__refresh(pm);
	if (err < 0) {
		perf_map__free(pm);
		return fail(err);
	}
	log_debug(log, "%s: %zu JIT symbols (%zu lines skipped)", path, pm->n,
		  pm->bad_lines);
	*out = pm;
	return 0;
}

int proc_ns_pid(pid_t pid, pid_t *nspid)
{
	char path[64], line[256];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return fail(errno == ENOENT ? -ESRCH : -errno);
	*nspid = pid;
	while (fgets(line, sizeof(line), f)) {
		char *last = NULL, *tok, *save = NULL;

		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		for (tok = strtok_r(line + 6, " \t\n", &save); tok;
		     tok = strtok_r(NULL, " \t\n", &save))
			last = tok;
		if (last) {
			long v = strtol(last, NULL, 10);

			if (v > 0)
				*nspid = (pid_t)v;
			else
				err = -EINVAL;
		}
		break;
	}
	fclose(f);
	return err ? fail(err) : 0;
}

int perf_map__open_pid(pid_t pid, const struct log_sink *log,
		       struct perf_map **out)
{
	char path[96];
	pid_t nspid;
	int err;

	err = proc_ns_pid(pid, &nspid);
	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", (int)pid,
		 (int)nspid);
	err = perf_map__open_path(path, log, out);
	/* Without access to /proc/PID/root (another user's process read by
	 * a user allowed to ptrace it but not to cross its root), a process
	 * in our own pid namespace has its map in our /tmp. */
	if ((err == -EACCES || err == -EPERM) && nspid == pid) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
		err = perf_map__open_path(path, log, out);
	}
	return err;
}

const struct perf_map_entry *perf_map__lookup(const struct perf_map *pm,
					      uint64_t pc)
{
	ptrdiff_t i = jit_range__find(&pm->painted, pc);

	return i < 0 ? NULL : &pm->entries[i];
}

const struct perf_map_entry *perf_map__entries(const struct perf_map *pm,
					       size_t *n)
{
	*n = pm->n;
	return pm->entries;
}

size_t perf_map__bad_lines(const struct perf_map *pm)
{
	return pm->bad_lines;
}

const char *perf_map__path(const struct perf_map *pm)
{
	return pm->path;
}

void perf_map__free(struct perf_map *pm)
{
	if (!pm)
		return;
	drop_all(pm);
	free(pm->entries);
	jit_range__index_free(&pm->painted);
	free(pm->path);
	free(pm);
}
