/* module.c - the context's module cache and the lazy parts of a module:
 * debug files, unwind table, symbols, line information. */
#define _GNU_SOURCE
#include "module.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/opts.h"
#include "symbolize/symbolize.h"
#include "table/table_cache.h"
#include "table/table_open.h"
#include "table/unwind_table.h"

static bool same_build_id(const struct elf_image *img, const uint8_t *id,
			  size_t len)
{
	return len && img->build_id_len == len &&
	       !memcmp(img->build_id, id, len);
}

static struct module *find_by_build_id(struct stacksnap_ctx *ctx,
				       const uint8_t *id, size_t len)
{
	for (struct module *m = ctx->modules; m; m = m->next)
		if (same_build_id(m->img, id, len))
			return m;
	return NULL;
}

/* A build-id is a name any file may give itself: a module found by one
 * is another file's only when its bytes are this one's (a copy in
 * another container); else the two are two modules, and nothing made
 * from one (table, symbols, BPF maps) serves the other. */
static bool same_bytes(const struct elf_image *a, const struct elf_image *b)
{
	return a->size == b->size && !memcmp(a->bytes, b->bytes, a->size);
}

/* A module of another file with id and the bytes of img. */
static struct module *find_same_content(struct stacksnap_ctx *ctx,
					const struct elf_image *img)
{
	for (struct module *m = ctx->modules; m; m = m->next)
		if (same_build_id(m->img, img->build_id, img->build_id_len) &&
		    same_bytes(m->img, img))
			return m;
	return NULL;
}

/* Before the file is opened, a caller's build-id finds a module only
 * when it was opened from the same path. */
static struct module *find_by_build_id_at(struct stacksnap_ctx *ctx,
					  const char *path, const uint8_t *id,
					  size_t len)
{
	for (struct module *m = ctx->modules; m; m = m->next)
		if (same_build_id(m->img, id, len) && !m->is_vdso &&
		    !strcmp(m->name, path))
			return m;
	return NULL;
}

bool module__cached(struct stacksnap_ctx *ctx, const uint8_t *id, size_t len)
{
	return find_by_build_id(ctx, id, len) != NULL;
}

static struct module *find_by_file(struct stacksnap_ctx *ctx,
				   const struct stat *st)
{
	for (struct module *m = ctx->modules; m; m = m->next) {
		const struct elf_image *img = m->img;
		uint64_t mtime = (uint64_t)st->st_mtim.tv_sec * 1000000000u +
				 (uint64_t)st->st_mtim.tv_nsec;

		if (!m->is_vdso && img->dev == st->st_dev &&
		    img->ino == st->st_ino && img->mtime_ns == mtime)
			return m;
	}
	return NULL;
}

static int module_add(struct stacksnap_ctx *ctx, const char *name,
		      struct elf_image *img, struct module **out)
{
	struct module *m = calloc(1, sizeof(*m));

	if (!m || !(m->name = strdup(name))) {
		free(m);
		elf_image__free(img);
		return -ENOMEM;
	}
	m->img = img;
	m->refs = 1;
	m->next = ctx->modules;
	ctx->modules = m;
	ctx->nmodules++;
	ctx->stats.modules++;
	*out = m;
	return 0;
}

int module__get_file(struct stacksnap_ctx *ctx, const char *path,
		     const char *open_path, const uint8_t *build_id,
		     size_t build_id_len, struct module **out)
{
	return module__get_file_at(ctx, path, AT_FDCWD, open_path, open_path,
				   build_id, build_id_len, out);
}

int module__get_file_at(struct stacksnap_ctx *ctx, const char *path,
			int dirfd, const char *rel, const char *open_path,
			const uint8_t *build_id, size_t build_id_len,
			struct module **out)
{
	struct elf_image *img;
	struct module *m;
	struct stat st;
	int fd, err;

	if (build_id_len &&
	    (m = find_by_build_id_at(ctx, path, build_id, build_id_len)))
		goto found;
	/* Opened, then known by its identity: one lookup of the path (under
	 * /proc/PID/root, the costly part of a module's opening), not two. */
	err = elf_file__openat(dirfd, rel, open_path, &ctx->log, &fd, &st);
	if (err)
		return err;
	if ((m = find_by_file(ctx, &st))) {
		close(fd);
		goto found;
	}
	err = elf_image__open_fd(fd, &st, open_path, &ctx->log, &img);
	if (err)
		return err;
	if (build_id_len && img->build_id_len &&
	    !same_build_id(img, build_id, build_id_len))
		log_warn(&ctx->log,
			 "%s: build-id differs from the one recorded for the "
			 "mapping; the file changed since, symbols and unwind "
			 "data may be wrong",
			 path);
	/* Another path to the same bytes (a copy, another sysroot). */
	if (img->build_id_len && (m = find_same_content(ctx, img))) {
		elf_image__free(img);
		goto found;
	}
	return module_add(ctx, path, img, out);
found:
	m->refs++;
	*out = m;
	return 0;
}

int module__get_image(struct stacksnap_ctx *ctx, const char *name,
		      struct elf_image *img, struct module **out)
{
	struct module *m;
	int err;

	if (img->build_id_len && (m = find_same_content(ctx, img))) {
		elf_image__free(img);
		m->refs++;
		*out = m;
		return 0;
	}
	err = module_add(ctx, name, img, out);
	if (!err)
		(*out)->is_vdso = true;
	return err;
}

void module__put(struct module *m)
{
	if (m && m->refs)
		m->refs--;
}

/* A compressed debug file found outside the cache: store an uncompressed
 * copy and use it (inflating once here, instead of in libdw every run). */
static void use_debug_cache(struct stacksnap_ctx *ctx, struct module *m)
{
	struct elf_image *copy;
	char *path = NULL;

	if (elf_debug_cache__store(m->debug, ctx->cache_dir, &ctx->log, &path) ||
	    !path)
		return;
	if (elf_image__open(path, &ctx->log, &copy) == 0) {
		if (copy->build_id_len == m->debug->build_id_len &&
		    !memcmp(copy->build_id, m->debug->build_id, copy->build_id_len)) {
			copy->found_by_build_id = true; /* copies are of such only */
			elf_image__free(m->debug);
			m->debug = copy;
		} else {
			elf_image__free(copy);
		}
	}
	free(path);
}

static void module_open_debug(struct stacksnap_ctx *ctx, struct module *m)
{
	uint64_t t0 = clock_monotonic_ns();

	if (m->debug_tried)
		return;
	m->debug_tried = true;
	/* The cache first, under its rules; then the debug directories. */
	elf_debug_cache__open(m->img, ctx->cache_dir, &ctx->log, &m->debug);
	if (!m->debug &&
	    elf_image__open_debug(m->img, (const char *const *)ctx->debug_dirs,
				  &ctx->log, &m->debug))
		m->debug = NULL;
	if (!m->debug && ctx->debuginfod &&
	    elf_image__open_debug_remote(m->img, &ctx->log, &m->debug))
		m->debug = NULL;
	if (m->debug && ctx->cache_dir &&
	    strncmp(m->debug->path, ctx->cache_dir, strlen(ctx->cache_dir))) {
		if (ctx->defer_cache_writes)
			m->debug_copy_pending = true;
		else
			use_debug_cache(ctx, m);
	}
	/* MiniDebugInfo is a stripped-down stand-in for a debug file. */
	if (!m->debug &&
	    elf_image__open_minidebug(m->img, &ctx->log, &m->minidebug))
		m->minidebug = NULL;
	ctx->stats.debug_ns += clock_monotonic_ns() - t0;
}

/* x86_64 rt_sigreturn trampolines: `mov $15,%rax; syscall` (glibc) and
 * `mov $15,%eax; syscall` (musl and others). Finding them once per module
 * keeps the check off the per-frame path. Scans the trampolines that start
 * in [from, to) of segment s. */
static void scan_sigreturn(struct module *m, const struct elf_segment *s,
			   uint64_t from, uint64_t to)
{
	static const uint8_t movq[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00,
					0x00, 0x00, 0x0f, 0x05 };
	static const uint8_t movl[] = { 0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	const struct elf_image *img = m->img;

	if (s->offset > img->size || s->filesz > img->size - s->offset)
		return;
	const uint8_t *code = img->bytes + s->offset;
	/* The needle starts 1 (movl) or 3 (movq) bytes into a trampoline:
	 * search from its first possible place to the end of the last one
	 * that may start before to. */
	size_t lo = from - s->vaddr + 1, hi = to - s->vaddr + 3 + 6;

	if (lo > s->filesz)
		return;
	if (hi > s->filesz)
		hi = s->filesz;
	/* Both encodings end in `0f 00 00 00 0f 05` (the immediate 15 and
	 * syscall): a needle rare in code, so memmem skips along. */
	for (const uint8_t *p = code + lo;
	     hi > (size_t)(p - code) &&
	     (p = memmem(p, hi - (size_t)(p - code), movl + 1, 6));
	     p++) {
		size_t at = (size_t)(p - code); /* at the immediate */
		size_t start;

		if (at >= 3 && !memcmp(p - 3, movq, sizeof(movq)))
			start = at - 3;
		else if (at >= 1 && !memcmp(p - 1, movl, sizeof(movl)))
			start = at - 1;
		else
			continue;
		if (s->vaddr + start < from || s->vaddr + start >= to)
			continue;
		if (m->nsigreturn < MODULE_MAX_SIGRETURN)
			m->sigreturn[m->nsigreturn++] = s->vaddr + start;
		m->sig_check = true;
	}
}

static void find_sigreturn(struct module *m)
{
	for (size_t i = 0; i < m->img->nsegs; i++) {
		const struct elf_segment *s = &m->img->segs[i];

		if (s->flags & 1 /* PF_X */)
			scan_sigreturn(m, s, s->vaddr, s->vaddr + s->filesz);
	}
}

/* Code up to this size is scanned for trampolines at once even with a
 * lazy table (~10 us): then no frame in the module pays the page test
 * (~20 instructions, a tenth of a warm step). */
#define MODULE_SIGRETURN_EAGER (64u << 10)

/* For modules with a lazy table: scanning all of libLLVM's 50 MB of code
 * for trampolines would cost more than the walk; scan the pages walks
 * reach. */
static void lazy_sigreturn(struct module *m)
{
	uint64_t lo = UINT64_MAX, hi = 0, code = 0;

	for (size_t i = 0; i < m->img->nsegs; i++) {
		const struct elf_segment *s = &m->img->segs[i];

		if (!(s->flags & 1) || !s->filesz)
			continue;
		if (s->vaddr < lo)
			lo = s->vaddr;
		if (s->vaddr + s->filesz > hi)
			hi = s->vaddr + s->filesz;
		code += s->filesz;
	}
	if (lo >= hi)
		return;
	if (code <= MODULE_SIGRETURN_EAGER) {
		find_sigreturn(m);
		return;
	}
	m->sig_lo = lo & ~4095ull;
	m->sig_pages = (size_t)((hi - m->sig_lo + 4095) >> 12);
	m->sig_scanned = calloc((m->sig_pages + 63) / 64, sizeof(uint64_t));
	if (!m->sig_scanned) {
		find_sigreturn(m); /* the slow way, then */
		return;
	}
	m->sig_lazy = true;
	m->sig_check = true;
}

bool module__is_sigreturn_lazy(struct module *m, uint64_t vaddr)
{
	size_t p;

	if (vaddr >= m->sig_lo && (p = (size_t)((vaddr - m->sig_lo) >> 12)) < m->sig_pages &&
	    !(m->sig_scanned[p / 64] & (1ull << (p % 64)))) {
		uint64_t from = m->sig_lo + ((uint64_t)p << 12), to = from + 4096;

		m->sig_scanned[p / 64] |= 1ull << (p % 64);
		for (size_t i = 0; i < m->img->nsegs; i++) {
			const struct elf_segment *s = &m->img->segs[i];
			uint64_t a = from > s->vaddr ? from : s->vaddr;
			uint64_t b = to < s->vaddr + s->filesz ? to : s->vaddr + s->filesz;

			if ((s->flags & 1) && a < b)
				scan_sigreturn(m, s, a, b);
		}
	}
	for (unsigned i = 0; i < m->nsigreturn; i++)
		if (m->sigreturn[i] == vaddr)
			return true;
	return false;
}

/* With a table cache, modules whose .eh_frame is larger than this get a
 * lazy table; smaller ones are compiled whole, to be stored (without a
 * cache every table is lazy: src/table/table_open.c). */
#define MODULE_LAZY_MIN_CFI (256u << 10)

/* A module that scanned its code for trampolines page by page scans the
 * rest: for a table file, which records them all, and for callers of
 * module__table_whole, which export them. */
static void sigreturn_complete(struct module *m)
{
	if (!m->sig_lazy)
		return;
	m->nsigreturn = 0;
	m->sig_lazy = false;
	m->sig_check = false;
	find_sigreturn(m);
}

/* A cache file's trampolines are read into the module's array. */
_Static_assert(MODULE_MAX_SIGRETURN >= TABLE_CACHE_MAX_SIGRETURN,
	       "the module keeps every trampoline a table cache file holds");

/* table_source's scan_sigreturn: the whole code scanned. */
static void scan_sigreturn_of(void *m)
{
	find_sigreturn(m);
}

/* What the module's table is made from: the image's CFI sections, its
 * search table, build-id and trampolines, and the context's cache. */
static void table_source_of(struct stacksnap_ctx *ctx, struct module *m,
			    struct table_source *src)
{
	const struct elf_image *img = m->img;

	*src = (struct table_source){
		.name = m->name,
		.eh_frame_hdr = img->eh_frame_hdr.data,
		.eh_frame_hdr_size = img->eh_frame_hdr.size,
		.eh_frame_hdr_vaddr = img->eh_frame_hdr.vaddr,
		.build_id = img->build_id,
		.build_id_len = img->build_id_len,
		.file = elf_image__source(img),
		.cache_dir = ctx->cache_dir,
		.lazy_min_cfi = ctx->lazy_min_cfi,
		.log = &ctx->log,
		.sigreturn = m->sigreturn,
		.nsigreturn = &m->nsigreturn,
		.scan_sigreturn = scan_sigreturn_of,
		.user = m,
	};
	if (img->eh_frame.size)
		src->inputs[src->ninputs++] = (struct cfi_input){
			img->eh_frame.data, img->eh_frame.size,
			img->eh_frame.vaddr, 1 };
	if (img->debug_frame.size)
		src->inputs[src->ninputs++] = (struct cfi_input){
			img->debug_frame.data, img->debug_frame.size,
			img->debug_frame.vaddr, 0 };
}

/* Keeps a whole table on disk for the next run (once per module), with
 * every trampoline of the module. */
static void store_table(struct stacksnap_ctx *ctx, struct module *m)
{
	struct table_source src;

	if (m->table_from_go)
		return; /* made from the pclntab, not from CFI: not cached */
	table_source_of(ctx, m, &src);
	if (!unwind_table__store_due(&src, m->table, m->table_on_disk))
		return;
	sigreturn_complete(m);
	unwind_table__store(&src, m->table, &m->table_on_disk, &ctx->stats);
}

const struct unwind_table *module__table_slow(struct stacksnap_ctx *ctx,
					      struct module *m)
{
	struct table_source src;

	if (m->table_tried)
		return m->table;
	m->table_tried = true;
	uint64_t t0 = clock_monotonic_ns();
	table_source_of(ctx, m, &src);
	switch (unwind_table__open(&src, &ctx->stats, &m->table,
				   &m->table_on_disk)) {
	case TABLE_ORIGIN_CACHE:
		m->sig_check = m->nsigreturn > 0;
		break;
	case TABLE_ORIGIN_LAZY:
		lazy_sigreturn(m);
		break;
	case TABLE_ORIGIN_NONE:
	case TABLE_ORIGIN_WHOLE:
		break; /* the code was scanned for trampolines */
	}
	/* A Go program without CFI (-ldflags='-s -w'): its pcsp tables. */
	if (!m->table && (m->table = module__go_table(ctx, m)))
		m->table_from_go = true;
	ctx->stats.table_ns += clock_monotonic_ns() - t0;
	return m->table;
}

const struct unwind_table *module__table_whole(struct stacksnap_ctx *ctx,
					       struct module *m)
{
	if (!module__table(ctx, m))
		return NULL;
	if (unwind_table__is_lazy(m->table) || m->table->unchecked) {
		uint64_t t0 = clock_monotonic_ns();
		bool compiles = unwind_table__is_lazy(m->table);
		int err = unwind_table__complete(m->table);

		ctx->stats.table_ns += clock_monotonic_ns() - t0;
		if (err)
			return NULL;
		/* A table from the cache is checked whole now (and compiled
		 * whole when a chunk failed). */
		if (compiles || unwind_table__needs_rewrite(m->table))
			ctx->stats.tables_whole++;
		store_table(ctx, m);
	}
	sigreturn_complete(m);
	return m->table;
}

/* The .debug_frame of the separate debug file, for code the image's own
 * CFI does not cover (a program built without unwind tables, then
 * stripped). Asked for only on a miss in the image's table, so modules
 * fully covered by .eh_frame never open their debug file for unwinding. */
const struct unwind_table *module__debug_table(struct stacksnap_ctx *ctx,
					       struct module *m)
{
	if (m->debug_table_tried)
		return m->debug_table;
	m->debug_table_tried = true;
	module_open_debug(ctx, m);
	if (!m->debug || !m->debug->debug_frame.size) {
		/* A cgo program linked with -s -w: the C objects' .eh_frame
		 * is the image's CFI and Go's .debug_frame is gone, so Go's
		 * code has its pcsp rows only (docs/go.md). */
		if (!m->table_from_go && m->img && !m->img->debug_frame.size)
			m->debug_table = module__go_table(ctx, m);
		return m->debug_table;
	}
	struct cfi_input in = { m->debug->debug_frame.data,
				m->debug->debug_frame.size,
				m->debug->debug_frame.vaddr, 0 };
	uint64_t t0 = clock_monotonic_ns();
	if (in.size >= ctx->lazy_min_cfi &&
	    unwind_table__open_lazy_index(&in, &ctx->log, &m->debug_table) == 0) {
		ctx->stats.tables_lazy++;
	} else if (unwind_table__compile(&in, 1, &ctx->log, &m->debug_table)) {
		m->debug_table = NULL;
	} else {
		ctx->stats.tables_whole++;
	}
	ctx->stats.table_ns += clock_monotonic_ns() - t0;
	return m->debug_table;
}

struct symtab *module__symtab(struct stacksnap_ctx *ctx, struct module *m)
{
	if (m->symtab_tried)
		return m->symtab;
	m->symtab_tried = true;
	module_open_debug(ctx, m);
	/* The loaded image first: like gdb, its symbols win ties. */
	const struct elf_image *imgs[2] = {
		m->img, m->debug ? m->debug : m->minidebug
	};
	uint64_t t0 = clock_monotonic_ns();
	bool cached;
	if (symtab__open(imgs, 2, ctx->cache_dir, &ctx->log, &m->symtab, &cached))
		m->symtab = NULL;
	if (cached) {
		ctx->stats.symtabs_cached++;
		log_info(&ctx->log, "%s: symbols from the symbol cache", m->name);
	}
	ctx->stats.symtab_ns += clock_monotonic_ns() - t0;
	return m->symtab;
}

bool module__function(struct stacksnap_ctx *ctx, struct module *m,
		      uint64_t vaddr, uint64_t key, const char **function,
		      uint64_t *offset)
{
	if (!symtab__function(module__symtab(ctx, m), vaddr, function, offset))
		return false;
	module__memo_put(m, key, *function, *offset);
	return true;
}

struct line_info *module__lines(struct stacksnap_ctx *ctx, struct module *m)
{
	if (m->lines_tried)
		return m->lines;
	m->lines_tried = true;
	module_open_debug(ctx, m);
	uint64_t t0 = clock_monotonic_ns();
	if (m->debug && m->debug->has_dwarf_info) {
		if (line_info__open_cached(m->debug, m->symtab, &ctx->log, &m->lines))
			m->lines = NULL;
	} else if (m->img->has_dwarf_info) {
		if (line_info__open_cached(m->img, m->symtab, &ctx->log, &m->lines))
			m->lines = NULL;
	}
	ctx->stats.dwarf_ns += clock_monotonic_ns() - t0;
	return m->lines;
}

int module__read_code(const struct module *m, uint64_t vaddr, void *buf,
		      size_t len)
{
	const struct elf_image *img = m->img;

	for (size_t i = 0; i < img->nsegs; i++) {
		const struct elf_segment *s = &img->segs[i];

		if (vaddr < s->vaddr || vaddr - s->vaddr >= s->filesz ||
		    len > s->filesz - (vaddr - s->vaddr))
			continue;
		uint64_t off = s->offset + (vaddr - s->vaddr);
		if (off > img->size || len > img->size - off)
			return -EFAULT;
		memcpy(buf, img->bytes + off, len);
		return 0;
	}
	return -EFAULT;
}

#define MEMO_MAX (1u << 20) /* entries; past that, lookups just are not memoized */

static size_t memo_slot(uint64_t key, size_t cap)
{
	key ^= key >> 29;
	key *= 0xbf58476d1ce4e5b9ull;
	key ^= key >> 32;
	return (size_t)key & (cap - 1);
}

bool module__memo_get(const struct module *m, uint64_t key,
		      const char **function, uint64_t *offset)
{
	if (!m->memo_cap)
		return false;
	for (size_t i = memo_slot(key, m->memo_cap);; i = (i + 1) & (m->memo_cap - 1)) {
		const struct sym_memo *e = &m->memo[i];

		if (!e->key)
			return false;
		if (e->key == key) {
			*function = e->function;
			*offset = e->offset;
			return true;
		}
	}
}

void module__memo_put(struct module *m, uint64_t key, const char *function,
		      uint64_t offset)
{
	if ((m->memo_n + 1) * 2 > m->memo_cap) {
		size_t ncap = m->memo_cap ? m->memo_cap * 2 : 256;
		struct sym_memo *nm;

		if (ncap > 2 * (size_t)MEMO_MAX || !(nm = calloc(ncap, sizeof(*nm))))
			return;
		for (size_t i = 0; i < m->memo_cap; i++) {
			struct sym_memo *e = &m->memo[i];
			size_t j;

			if (!e->key)
				continue;
			for (j = memo_slot(e->key, ncap); nm[j].key; j = (j + 1) & (ncap - 1))
				;
			nm[j] = *e;
		}
		free(m->memo);
		m->memo = nm;
		m->memo_cap = ncap;
	}
	size_t i = memo_slot(key, m->memo_cap);
	while (m->memo[i].key && m->memo[i].key != key)
		i = (i + 1) & (m->memo_cap - 1);
	if (!m->memo[i].key)
		m->memo_n++;
	m->memo[i] = (struct sym_memo){ key, function, offset };
}

static void module_free(struct module *m)
{
	free(m->sig_scanned);
	free(m->memo);
	line_info__free(m->lines);
	symtab__free(m->symtab);
	unwind_table__free(m->table);
	unwind_table__free(m->debug_table);
	module__go_free(m);
	elf_image__free(m->minidebug);
	elf_image__free(m->debug);
	elf_image__free(m->img);
	free(m->name);
	free(m);
}

/* ---- the context ---- */

static int split_dirs(const char *dirs, char ***out)
{
	size_t n = 1;
	char *copy, *save = NULL, **v;

	for (const char *p = dirs; *p; p++)
		n += *p == ':';
	v = calloc(n + 1, sizeof(*v));
	copy = strdup(dirs);
	if (!v || !copy) {
		free(v);
		free(copy);
		return -ENOMEM;
	}
	n = 0;
	for (char *tok = strtok_r(copy, ":", &save); tok;
	     tok = strtok_r(NULL, ":", &save))
		if (!(v[n++] = strdup(tok))) {
			free(copy);
			for (size_t i = 0; i < n; i++)
				free(v[i]);
			free(v);
			return -ENOMEM;
		}
	free(copy);
	*out = v;
	return 0;
}

struct stacksnap_ctx *stacksnap_ctx__new(const struct stacksnap_ctx_opts *opts)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_ctx_opts o;

	if (opts_in(&o, sizeof(o), opts, 0)) {
		errno = EINVAL;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->log = (struct log_sink){ o.log, o.log_user, o.log_level };
	ctx->lazy_min_cfi = MODULE_LAZY_MIN_CFI;
	ctx->ignore_deleted = o.ignore_deleted;
	ctx->debuginfod = o.debuginfod;
	/* The cache has a debug directory's layout, but is searched first
	 * on its own (module_open_debug), under its ownership rules. */
	char *dirs = NULL;
	if (asprintf(&dirs, "%s", o.debug_dirs ? o.debug_dirs : "/usr/lib/debug") < 0)
		dirs = NULL;
	if (!dirs || split_dirs(dirs, &ctx->debug_dirs) ||
	    (o.sysroot && !(ctx->sysroot = strdup(o.sysroot))) ||
	    (o.cache_dir && *o.cache_dir && !(ctx->cache_dir = strdup(o.cache_dir)))) {
		free(dirs);
		stacksnap_ctx__free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	free(dirs);
	return ctx;
}

void stacksnap_ctx__free(struct stacksnap_ctx *ctx)
{
	if (!ctx)
		return;
	while (ctx->modules) {
		struct module *m = ctx->modules;

		/* A lazy table that went whole (a long-lived user) is worth
		 * keeping for the next run; with writes deferred,
		 * write_caches keeps it (a replay's detached writer). */
		if (m->table && !ctx->defer_cache_writes)
			store_table(ctx, m);
		if (ctx->cache_dir && !ctx->defer_cache_writes &&
		    symtab__store_pending(m->symtab, false))
			symtab__store(m->symtab, m->lines, false, ctx->cache_dir,
				      &ctx->log);
		ctx->modules = m->next;
		module_free(m);
	}
	for (char **d = ctx->debug_dirs; d && *d; d++)
		free(*d);
	free(ctx->debug_dirs);
	free(ctx->sysroot);
	free(ctx->cache_dir);
	free(ctx);
}

int stacksnap_ctx__stats(const struct stacksnap_ctx *ctx,
			 struct stacksnap_ctx_stats *st)
{
	struct stacksnap_ctx_stats s;

	if (!ctx || !st)
		return fail(-EINVAL);
	s = ctx->stats;
	s.sz = sizeof(s);
	for (const struct module *m = ctx->modules; m; m = m->next)
		if (m->table) {
			s.lazy_fdes += (unsigned)unwind_table__lazy_fills(m->table);
			s.table_ns += m->table->fill_ns; /* during walks */
		}
	return opts_out(st, &s, sizeof(s), sizeof(size_t)) ? fail(-EINVAL) : 0;
}

void stacksnap_ctx__defer_cache_writes(struct stacksnap_ctx *ctx, bool on)
{
	if (!ctx)
		return;
	ctx->defer_cache_writes = on;
	/* Every table is lazy then: the whole tables are compiled and kept
	 * by write_caches, off the caller's path. */
	ctx->lazy_min_cfi = on && ctx->cache_dir ? 0 : MODULE_LAZY_MIN_CFI;
}

/* Does module__lines find DWARF (once the debug file was looked for)? */
static bool has_dwarf(const struct module *m)
{
	return (m->debug && m->debug->has_dwarf_info) || m->img->has_dwarf_info;
}

/* A table write_caches would keep: lazy (it completes it first), or
 * completed by the run itself (a lazy table past its fills) and not
 * kept yet. */
static bool table_pending(const struct stacksnap_ctx *ctx, const struct module *m)
{
	return ctx->cache_dir && m->table && !m->table_on_disk &&
	       m->img->build_id_len && !m->table->unchecked;
}

unsigned stacksnap_ctx__pending_cache_writes(const struct stacksnap_ctx *ctx)
{
	unsigned n = 0;

	for (const struct module *m = ctx ? ctx->modules : NULL; m; m = m->next)
		n += m->debug_copy_pending + table_pending(ctx, m) +
		     (ctx->cache_dir && symtab__store_pending(m->symtab, has_dwarf(m)));
	return n;
}

int stacksnap_ctx__write_caches(struct stacksnap_ctx *ctx)
{
	int n = 0;

	if (!ctx)
		return fail(-EINVAL);
	for (struct module *m = ctx->modules; m; m = m->next) {
		char *path = NULL;

		if (table_pending(ctx, m) && module__table_whole(ctx, m)) {
			store_table(ctx, m); /* completed before: kept now */
			n++;
		}
		/* Symbols with the CU index of the module's DWARF. */
		if (ctx->cache_dir && symtab__store_pending(m->symtab, has_dwarf(m)) &&
		    symtab__store(m->symtab, module__lines(ctx, m), has_dwarf(m),
				  ctx->cache_dir, &ctx->log) == 0)
			n++;
		if (!m->debug_copy_pending || !m->debug)
			continue;
		m->debug_copy_pending = false;
		if (elf_debug_cache__store(m->debug, ctx->cache_dir, &ctx->log,
					   &path) == 0 && path)
			n++;
		free(path);
	}
	return n;
}

const char *stacksnap_version(void)
{
	return "0.1.0";
}
