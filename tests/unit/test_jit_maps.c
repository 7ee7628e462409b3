/* test_jit_maps.c - the JIT symbol file readers: perf maps
 * (/tmp/perf-<pid>.map) and jitdump files, on files this test writes:
 * parsing, which entry wins, growth between reads, finding a live
 * process's files, and the speed of a 100k-line map. */
#define _GNU_SOURCE
#include <byteswap.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "symbolize/jitdump.h"
#include "symbolize/perf_map.h"

static const char *name_at(const struct perf_map *pm, uint64_t pc)
{
	const struct perf_map_entry *e = perf_map__lookup(pm, pc);

	return e ? e->name : NULL;
}

static int same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void perf_map_lines(void)
{
	static const char text[] =
		"1000 100 JS:~alpha /app/a.js:3:19\n"
		"0x2000 0x10 with 0x\n"
		"3000 20 name with  spaces\r\n"
		"not a line\n"
		"4000 0 zero size\n"
		"5000 10\n"
		"6000 10 \n"
		"ffffffffffffff00 1000 wraps\n"
		"10000000000000000 10 seventeen digits\n"
		"7000 10 last line without newline";
	struct perf_map *pm;
	size_t n;

	CHECK(perf_map__from_text(text, sizeof(text) - 1, &pm) == 0);
	if (!pm)
		return;
	CHECK(same(name_at(pm, 0x1000), "JS:~alpha /app/a.js:3:19"));
	CHECK(same(name_at(pm, 0x10ff), "JS:~alpha /app/a.js:3:19"));
	CHECK(name_at(pm, 0x1100) == NULL);
	CHECK(name_at(pm, 0xfff) == NULL);
	CHECK(same(name_at(pm, 0x200f), "with 0x"));
	CHECK(same(name_at(pm, 0x3000), "name with  spaces"));
	CHECK(name_at(pm, 0x4000) == NULL);
	CHECK(name_at(pm, 0x5000) == NULL);
	CHECK(name_at(pm, 0x6000) == NULL);
	CHECK(same(name_at(pm, 0x7008), "last line without newline"));
	perf_map__entries(pm, &n);
	CHECK_EQ_U64(n, 4);
	CHECKF(perf_map__bad_lines(pm) == 6, "%zu", perf_map__bad_lines(pm));
	perf_map__free(pm);

	CHECK(perf_map__from_text("", 0, &pm) == 0);
	CHECK(pm && name_at(pm, 0) == NULL);
	perf_map__free(pm);
}

/* Of two lines for one start the later wins; of overlapping ranges the
 * later line wins where it covers pc, the older one elsewhere. */
static void perf_map_later_wins(void)
{
	static const char text[] = "1000 100 old\n"
				   "1000 80 new\n"
				   "2000 1000 big old\n"
				   "2100 10 small newer\n"
				   "3000 10 small older\n"
				   "2f00 1000 big newer\n";
	struct perf_map *pm;

	CHECK(perf_map__from_text(text, sizeof(text) - 1, &pm) == 0);
	if (!pm)
		return;
	CHECK(same(name_at(pm, 0x1000), "new"));
	CHECK(name_at(pm, 0x1090) == NULL);
	CHECK(same(name_at(pm, 0x2105), "small newer"));
	CHECK(same(name_at(pm, 0x2200), "big old"));
	CHECK(same(name_at(pm, 0x3005), "big newer"));
	CHECK(same(name_at(pm, 0x2f10), "big newer"));
	perf_map__free(pm);
}

static void tmp_path(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "/tmp/test_jit_maps-%d-%s", (int)getpid(), what);
}

static void append(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

/* The writer appends (a line may be half written when read); a file
 * replaced by a shorter one is read again whole. */
static void perf_map_grows(void)
{
	char path[256];
	struct perf_map *pm = NULL;

	tmp_path(path, sizeof(path), "grow.map");
	unlink(path);
	CHECK(perf_map__open_path(path, NULL, &pm) == -ENOENT);
	append(path, "1000 10 first\n2000 10 sec");
	CHECK(perf_map__open_path(path, NULL, &pm) == 0);
	if (!pm)
		return;
	CHECK(same(name_at(pm, 0x1000), "first"));
	CHECK(same(name_at(pm, 0x2000), "sec"));
	CHECK(perf_map__refresh(pm) == 0);
	append(path, "ond\n3000 10 third\n");
	CHECK(perf_map__refresh(pm) == 1);
	CHECK(same(name_at(pm, 0x2000), "second"));
	CHECK(same(name_at(pm, 0x3000), "third"));
	CHECK(same(name_at(pm, 0x1000), "first"));
	CHECK(perf_map__refresh(pm) == 0);

	unlink(path);
	append(path, "4000 10 fourth\n");
	CHECK(perf_map__refresh(pm) >= 0);
	CHECK(name_at(pm, 0x1000) == NULL);
	CHECK(same(name_at(pm, 0x4000), "fourth"));
	perf_map__free(pm);
	unlink(path);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A map of 100,000 lines (a large V8 or JVM service's) must not dominate
 * a dump: it is read once per capture. */
static void perf_map_100k_lines(void)
{
	char path[256];
	struct perf_map *pm = NULL;
	FILE *f;
	double t0, t1, t2;
	int found = 0;

	tmp_path(path, sizeof(path), "100k.map");
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	/* Written out of order with some restarts, as code is reused. */
	for (unsigned i = 0; i < 100000; i++) {
		unsigned k = (i * 7919u) % 100000u;

		fprintf(f, "%llx %x LazyCompile:*fn_%u /srv/app/lib/module_%u.js:%u:%u\n",
			0x7f0000000000ull + (unsigned long long)k * 0x100,
			0xc0, k, k % 97, k % 1000, k % 80);
	}
	fclose(f);
	t0 = now_ms();
	CHECK(perf_map__open_path(path, NULL, &pm) == 0);
	t1 = now_ms();
	if (!pm)
		return;
	for (unsigned k = 0; k < 100000; k += 37) {
		char want[32];

		snprintf(want, sizeof(want), "LazyCompile:*fn_%u ", k);
		const char *got = name_at(pm, 0x7f0000000000ull + k * 0x100 + 5);

		found += got && strncmp(got, want, strlen(want)) == 0;
	}
	t2 = now_ms();
	CHECK(found == (100000 + 36) / 37);
	printf("     100k-line perf map: parsed in %.1f ms, %d lookups in "
	       "%.3f ms\n", t1 - t0, found, t2 - t1);
	/* Generous for a loaded 2-core machine: ~10 ms unloaded. */
	CHECKF(t1 - t0 < 500, "%.1f ms", t1 - t0);
	perf_map__free(pm);
	unlink(path);
}

static void ns_pid_and_live_map(void)
{
	pid_t ns = 0;
	char path[64];
	struct perf_map *pm = NULL;

	CHECK(proc_ns_pid(getpid(), &ns) == 0);
	CHECK(ns == getpid());
	CHECK(proc_ns_pid(0x7ffffff0, &ns) == -ESRCH);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	CHECK(perf_map__open_pid(getpid(), NULL, &pm) == -ENOENT);
	append(path, "abc0 10 live\n");
	CHECK(perf_map__open_pid(getpid(), NULL, &pm) == 0);
	CHECK(pm && same(name_at(pm, 0xabc4), "live"));
	CHECK(pm && strstr(perf_map__path(pm), "/root/tmp/perf-"));
	perf_map__free(pm);
	unlink(path);
}

/* A jitdump file under construction, in either byte order. */
struct jd_writer {
	unsigned char buf[8192];
	size_t len;
	int swap;
};

static void put(struct jd_writer *w, const void *p, size_t n)
{
	if (w->len + n > sizeof(w->buf))
		abort();
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void put32(struct jd_writer *w, uint32_t v)
{
	if (w->swap)
		v = bswap_32(v);
	put(w, &v, 4);
}

static void put64(struct jd_writer *w, uint64_t v)
{
	if (w->swap)
		v = bswap_64(v);
	put(w, &v, 8);
}

static void put_header(struct jd_writer *w, uint32_t version)
{
	put32(w, JITDUMP_MAGIC);
	put32(w, version);
	put32(w, JITDUMP_HEADER_SIZE + 8); /* a longer header: skipped */
	put32(w, 62);			   /* EM_X86_64 */
	put32(w, 0);
	put32(w, 4242);
	put64(w, 1);
	put64(w, 0);
	put64(w, 0xdeadbeef); /* the header's extra bytes */
}

/* Record header with the size patched in by rec_end. */
static size_t rec_begin(struct jd_writer *w, uint32_t id)
{
	size_t at = w->len;

	put32(w, id);
	put32(w, 0);
	put64(w, 7);
	return at;
}

static void rec_end(struct jd_writer *w, size_t at)
{
	uint32_t size = (uint32_t)(w->len - at);

	if (w->swap)
		size = bswap_32(size);
	memcpy(w->buf + at + 4, &size, 4);
}

static void put_load(struct jd_writer *w, uint64_t addr, uint64_t size,
		     uint64_t index, const char *name)
{
	size_t at = rec_begin(w, JIT_CODE_LOAD);
	static const unsigned char code[4] = { 0x90, 0x90, 0x90, 0xc3 };

	put32(w, 4242);
	put32(w, 4243);
	put64(w, addr);
	put64(w, addr);
	put64(w, size);
	put64(w, index);
	put(w, name, strlen(name) + 1);
	put(w, code, sizeof(code));
	rec_end(w, at);
}

static void put_move(struct jd_writer *w, uint64_t from, uint64_t to,
		     uint64_t size, uint64_t index)
{
	size_t at = rec_begin(w, JIT_CODE_MOVE);

	put32(w, 4242);
	put32(w, 4243);
	put64(w, to);
	put64(w, from);
	put64(w, to);
	put64(w, size);
	put64(w, index);
	rec_end(w, at);
}

struct jd_entry {
	uint64_t addr;
	uint32_t line;
	const char *file;
};

static void put_debug(struct jd_writer *w, uint64_t code_addr,
		      const struct jd_entry *e, size_t n)
{
	size_t at = rec_begin(w, JIT_CODE_DEBUG_INFO);

	put64(w, code_addr);
	put64(w, n);
	for (size_t i = 0; i < n; i++) {
		put64(w, e[i].addr);
		put32(w, e[i].line);
		put32(w, 0);
		put(w, e[i].file, strlen(e[i].file) + 1);
	}
	rec_end(w, at);
}

static void build_dump(struct jd_writer *w, int swap)
{
	static const struct jd_entry lines[] = {
		{ 0x1010, 12, "/app/b.js" },
		{ 0x1000, 10, "/app/b.js" }, /* out of order: sorted */
		{ 0x1020, 14, "\xff" },	     /* the previous file */
		{ 0x5000, 99, "/elsewhere" }, /* outside the code: dropped */
	};
	size_t at;

	memset(w, 0, sizeof(*w));
	w->swap = swap;
	put_header(w, 1);
	put_debug(w, 0x1000, lines, 4);
	put_load(w, 0x1000, 0x40, 1, "JS:*beta /app/b.js:10");
	put_load(w, 0x2000, 0x20, 2, "JS:~gamma");
	at = rec_begin(w, 77); /* an unknown record: skipped by its size */
	put64(w, 0x1234);
	rec_end(w, at);
	put_move(w, 0x1000, 0x9000, 0x40, 1);
	put_load(w, 0x2000, 0x10, 3, "JS:*gamma2"); /* same start: wins */
}

static void check_dump(struct jitdump *jd)
{
	const struct jitdump_code *c;
	const struct jitdump_line *l;

	c = jitdump__lookup(jd, 0x1015, &l);
	CHECK(c && same(c->name, "JS:*beta /app/b.js:10"));
	CHECK(l && l->line == 12 && same(l->file, "/app/b.js"));
	c = jitdump__lookup(jd, 0x103f, &l);
	CHECK(l && l->line == 14 && same(l->file, "/app/b.js"));
	CHECK(c && c->nlines == 3);
	c = jitdump__lookup(jd, 0x9005, &l);
	CHECK(c && same(c->name, "JS:*beta /app/b.js:10"));
	CHECK(l && l->line == 10);
	c = jitdump__lookup(jd, 0x2004, &l);
	CHECK(c && same(c->name, "JS:*gamma2") && !l);
	CHECK(jitdump__lookup(jd, 0x2018, &l) == NULL);
	CHECK(jitdump__lookup(jd, 0x1040, &l) == NULL);
	CHECK(jitdump__header(jd)->pid == 4242);
	CHECK(jitdump__header(jd)->elf_mach == 62);
}

static void jitdump_records(void)
{
	struct jd_writer w;
	struct jitdump *jd = NULL;

	for (int swap = 0; swap < 2; swap++) {
		build_dump(&w, swap);
		CHECK(jitdump__from_bytes(w.buf, w.len, NULL, &jd) == 0);
		if (!jd)
			continue;
		check_dump(jd);
		CHECK(jitdump__header(jd)->byte_swapped == swap);
		jitdump__free(jd);
		jd = NULL;
	}
}

/* A large range with more than a few newer, smaller ones inside it (code
 * reused piecemeal): an address of the large one past the small ones is
 * the large one's in both readers (a scan back over the last 16 entries
 * lost it: fuzz_jitdump's finding, kept in fuzz/corpus/fuzz_jitdump). */
static void nested_ranges(void)
{
	char text[4096];
	size_t len = 0;
	struct jd_writer w = { .len = 0 };
	struct jitdump *jd = NULL;
	const struct jitdump_line *l;
	const struct jitdump_code *c;
	struct perf_map *pm = NULL;

	put_header(&w, 1);
	len += (size_t)snprintf(text + len, sizeof(text) - len,
				"10000 10000 big\n");
	put_load(&w, 0x10000, 0x10000, 1, "big");
	for (int i = 0; i < 40; i++) {
		char name[24];

		snprintf(name, sizeof(name), "small%d", i);
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"%x 10 %s\n", 0x10100 + i * 0x100, name);
		put_load(&w, 0x10100 + (uint64_t)i * 0x100, 0x10, 100 + (uint64_t)i,
			 name);
	}
	CHECK(perf_map__from_text(text, len, &pm) == 0);
	if (pm) {
		CHECK(same(name_at(pm, 0x1ffff), "big"));
		CHECK(same(name_at(pm, 0x10105), "small0"));
		CHECK(same(name_at(pm, 0x10120), "big"));
		CHECK(same(name_at(pm, 0x12805), "small39"));
		CHECK(name_at(pm, 0x20000) == NULL);
		perf_map__free(pm);
	}
	CHECK(jitdump__from_bytes(w.buf, w.len, NULL, &jd) == 0);
	if (!jd)
		return;
	c = jitdump__lookup(jd, 0x1ffff, &l);
	CHECK(c && same(c->name, "big"));
	c = jitdump__lookup(jd, 0x12805, &l);
	CHECK(c && same(c->name, "small39"));
	CHECK(jitdump__lookup(jd, 0x20000, &l) == NULL);
	jitdump__free(jd);
}

static void jitdump_bad_files(void)
{
	struct jd_writer w;
	struct jitdump *jd = NULL;
	size_t at;
	uint32_t bad_size = 8;

	build_dump(&w, 0);
	w.buf[0] ^= 1;
	CHECK(jitdump__from_bytes(w.buf, w.len, NULL, &jd) == -EINVAL);
	CHECK(jitdump__from_bytes(w.buf, 10, NULL, &jd) == -EINVAL);

	memset(&w, 0, sizeof(w));
	put_header(&w, 2);
	CHECK(jitdump__from_bytes(w.buf, w.len, NULL, &jd) == -EPROTONOSUPPORT);

	/* A record cut short (still being written) ends the read quietly. */
	build_dump(&w, 0);
	CHECK(jitdump__from_bytes(w.buf, w.len - 3, NULL, &jd) == 0);
	if (jd) {
		const struct jitdump_line *l;
		const struct jitdump_code *c = jitdump__lookup(jd, 0x2004, &l);

		CHECK(c && same(c->name, "JS:~gamma"));
		jitdump__free(jd);
		jd = NULL;
	}

	/* A size smaller than a record header, and a name without its NUL,
	 * end the records there; what came before stays. */
	memset(&w, 0, sizeof(w));
	put_header(&w, 1);
	put_load(&w, 0x1000, 0x10, 1, "ok");
	at = rec_begin(&w, JIT_CODE_LOAD);
	memcpy(w.buf + at + 4, &bad_size, 4);
	put_load(&w, 0x3000, 0x10, 3, "after");
	CHECK(jitdump__from_bytes(w.buf, w.len, NULL, &jd) == 0);
	if (jd) {
		const struct jitdump_line *l;
		size_t n;

		CHECK(jitdump__lookup(jd, 0x1000, &l) != NULL);
		jitdump__codes(jd, &n);
		CHECK(n == 1);
		jitdump__free(jd);
		jd = NULL;
	}
	memset(&w, 0, sizeof(w));
	put_header(&w, 1);
	put_load(&w, 0x1000, 0x10, 1, "ok");
	at = rec_begin(&w, JIT_CODE_LOAD);
	put32(&w, 1);
	put32(&w, 1);
	put64(&w, 0x2000);
	put64(&w, 0x2000);
	put64(&w, 0x10);
	put64(&w, 2);
	put(&w, "nonul", 5);
	rec_end(&w, at);
	CHECK(jitdump__from_bytes(w.buf, w.len, NULL, &jd) == 0);
	if (jd) {
		size_t n;

		jitdump__codes(jd, &n);
		CHECK(n == 1);
		jitdump__free(jd);
		jd = NULL;
	}

	/* A debug record claiming more entries than its bytes hold. */
	memset(&w, 0, sizeof(w));
	put_header(&w, 1);
	at = rec_begin(&w, JIT_CODE_DEBUG_INFO);
	put64(&w, 0x1000);
	put64(&w, 1ull << 60);
	rec_end(&w, at);
	put_load(&w, 0x1000, 0x10, 1, "after");
	CHECK(jitdump__from_bytes(w.buf, w.len, NULL, &jd) == 0);
	jitdump__free(jd);
	jd = NULL;

	/* After JIT_CODE_CLOSE nothing is read. */
	memset(&w, 0, sizeof(w));
	put_header(&w, 1);
	at = rec_begin(&w, JIT_CODE_CLOSE);
	rec_end(&w, at);
	put_load(&w, 0x1000, 0x10, 1, "after close");
	CHECK(jitdump__from_bytes(w.buf, w.len, NULL, &jd) == 0);
	if (jd) {
		const struct jitdump_line *l;

		CHECK(jitdump__lookup(jd, 0x1000, &l) == NULL);
		jitdump__free(jd);
	}
}

/* V8's writer (node 20): debug entries 0x40 past the pc, and script names
 * written from a freed buffer whose first 16 bytes are the allocator's
 * (NULs among them); the code's name, which carries the script, repairs
 * them. Not V8's code keeps its entries as written. */
static void jitdump_v8_quirks(void)
{
	static const char script[] = "/srv/0123456789/app/main.js";
	char damaged[sizeof(script)];
	struct jd_writer w;
	struct jitdump *jd = NULL;
	size_t at;

	memcpy(damaged, script, sizeof(script));
	memcpy(damaged, "\x19\x86\x01\0\0\0\0\0\x34\x3c\xac\0\x11\x9d\x96\xf6", 16);
	memset(&w, 0, sizeof(w));
	put_header(&w, 1);
	at = rec_begin(&w, JIT_CODE_DEBUG_INFO);
	put64(&w, 0x1000);
	put64(&w, 2);
	for (int i = 0; i < 2; i++) {
		put64(&w, 0x1000 + 0x40 + (uint64_t)i * 0x10);
		put32(&w, 7 + (uint32_t)i);
		put32(&w, 0);
		put(&w, damaged, sizeof(damaged));
	}
	rec_end(&w, at);
	put_load(&w, 0x1000, 0x40, 1, "JS:*main /srv/0123456789/app/main.js:5:1");
	put_debug(&w, 0x2000, (const struct jd_entry[]){ { 0x2040, 3, "/x.c" } }, 1);
	put_load(&w, 0x2000, 0x80, 2, "not_v8");
	CHECK(jitdump__from_bytes(w.buf, w.len, NULL, &jd) == 0);
	if (!jd)
		return;
	{
		const struct jitdump_line *l;
		const struct jitdump_code *c = jitdump__lookup(jd, 0x1004, &l);

		CHECK(c && l && l->line == 7 && same(l->file, script));
		c = jitdump__lookup(jd, 0x1012, &l);
		CHECK(c && l && l->line == 8 && same(l->file, script));
		c = jitdump__lookup(jd, 0x2030, &l);
		CHECK(c && !l);
		c = jitdump__lookup(jd, 0x2044, &l);
		CHECK(c && l && l->line == 3 && same(l->file, "/x.c"));
	}
	jitdump__free(jd);
}

static void write_bytes(const char *path, const void *b, size_t n, int append_)
{
	int fd = open(path, O_WRONLY | O_CREAT | (append_ ? O_APPEND : O_TRUNC),
		      0600);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, b, n) == (ssize_t)n);
	close(fd);
}

/* Read while written, then found through this process's own mapping of
 * it, as perf finds a process's dump. */
static void jitdump_grows_and_live(void)
{
	char dir[256], path[300];
	struct jd_writer w;
	struct jitdump *jd = NULL;
	const struct jitdump_line *l;
	size_t half;
	void *map;
	int fd;

	tmp_path(dir, sizeof(dir), "dumpdir");
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, (int)getpid());
	build_dump(&w, 0);
	half = w.len / 2;
	write_bytes(path, w.buf, half, 0);
	CHECK(jitdump__open_path(path, NULL, &jd) == 0);
	if (!jd)
		return;
	CHECK(jitdump__lookup(jd, 0x9000, &l) == NULL);
	write_bytes(path, w.buf + half, w.len - half, 1);
	CHECK(jitdump__refresh(jd) > 0);
	check_dump(jd);
	CHECK(jitdump__refresh(jd) == 0);
	jitdump__free(jd);
	jd = NULL;

	CHECK(jitdump__open_pid(getpid(), NULL, &jd) == -ENOENT);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(map != MAP_FAILED);
	CHECK(jitdump__open_pid(getpid(), NULL, &jd) == 0);
	if (jd) {
		check_dump(jd);
		CHECK(strstr(jitdump__path(jd), "/root/"));
		jitdump__free(jd);
	}
	if (map != MAP_FAILED)
		munmap(map, 4096);
	if (fd >= 0)
		close(fd);
	unlink(path);
	rmdir(dir);
}

TEST_MAIN("jit_maps", TEST(perf_map_lines), TEST(perf_map_later_wins),
	  TEST(perf_map_grows), TEST(perf_map_100k_lines),
	  TEST(ns_pid_and_live_map), TEST(jitdump_records), TEST(nested_ranges),
	  TEST(jitdump_bad_files), TEST(jitdump_v8_quirks), TEST(jitdump_grows_and_live))
