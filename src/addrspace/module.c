/* module.c - the context's module cache and the lazy parts of a module:
 * debug files, unwind table, symbols, line information. */
#define _GNU_SOURCE
#include "module.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/opts.h"
#include "symbolize/symbolize.h"
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
	*out = m;
	return 0;
}

int module__get_file(struct stacksnap_ctx *ctx, const char *path,
		     const char *open_path, const uint8_t *build_id,
		     size_t build_id_len, struct module **out)
{
	struct elf_image *img;
	struct module *m;
	struct stat st;
	int err;

	if (build_id_len && (m = find_by_build_id(ctx, build_id, build_id_len)))
		goto found;
	if (stat(open_path, &st) == 0 && (m = find_by_file(ctx, &st)))
		goto found;
	err = elf_image__open(open_path, &ctx->log, &img);
	if (err)
		return err;
	if (build_id_len && img->build_id_len &&
	    !same_build_id(img, build_id, build_id_len))
		log_warn(&ctx->log,
			 "%s: build-id differs from the one recorded for the "
			 "mapping; the file changed since, symbols and unwind "
			 "data may be wrong",
			 path);
	/* Another path to the same file (a hard link, another sysroot). */
	if (img->build_id_len &&
	    (m = find_by_build_id(ctx, img->build_id, img->build_id_len))) {
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

	if (img->build_id_len &&
	    (m = find_by_build_id(ctx, img->build_id, img->build_id_len))) {
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
	if (m->debug_tried)
		return;
	m->debug_tried = true;
	if (elf_image__open_debug(m->img, (const char *const *)ctx->debug_dirs,
				  &ctx->log, &m->debug))
		m->debug = NULL;
	if (!m->debug && ctx->debuginfod &&
	    elf_image__open_debug_remote(m->img, &ctx->log, &m->debug))
		m->debug = NULL;
	if (m->debug && ctx->cache_dir &&
	    strncmp(m->debug->path, ctx->cache_dir, strlen(ctx->cache_dir)))
		use_debug_cache(ctx, m);
	/* MiniDebugInfo is a stripped-down stand-in for a debug file. */
	if (!m->debug &&
	    elf_image__open_minidebug(m->img, &ctx->log, &m->minidebug))
		m->minidebug = NULL;
}

/* x86_64 rt_sigreturn trampolines: `mov $15,%rax; syscall` (glibc) and
 * `mov $15,%eax; syscall` (musl and others). Finding them once per module
 * keeps the check off the per-frame path. */
static void find_sigreturn(struct module *m)
{
	static const uint8_t movq[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00,
					0x00, 0x00, 0x0f, 0x05 };
	static const uint8_t movl[] = { 0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	const struct elf_image *img = m->img;

	for (size_t i = 0; i < img->nsegs; i++) {
		const struct elf_segment *s = &img->segs[i];

		if (!(s->flags & 1 /* PF_X */) || s->offset > img->size ||
		    s->filesz > img->size - s->offset)
			continue;
		const uint8_t *code = img->bytes + s->offset;
		/* Both encodings end in `0f 00 00 00 0f 05` (the immediate 15
		 * and syscall): a needle rare in code, so memmem skips along. */
		for (const uint8_t *p = code;
		     (p = memmem(p, s->filesz - (size_t)(p - code), movl + 1, 6));
		     p++) {
			size_t at = (size_t)(p - code); /* at the immediate */
			size_t start;

			if (at >= 3 && !memcmp(p - 3, movq, sizeof(movq)))
				start = at - 3;
			else if (at >= 1 && !memcmp(p - 1, movl, sizeof(movl)))
				start = at - 1;
			else
				continue;
			if (m->nsigreturn < MODULE_MAX_SIGRETURN)
				m->sigreturn[m->nsigreturn++] = s->vaddr + start;
		}
	}
}

const struct unwind_table *module__table_slow(struct stacksnap_ctx *ctx,
					      struct module *m)
{
	struct cfi_input in[3];
	size_t n = 0;

	if (m->table_tried)
		return m->table;
	m->table_tried = true;
	find_sigreturn(m);
	if (m->img->eh_frame.size)
		in[n++] = (struct cfi_input){ m->img->eh_frame.data,
					      m->img->eh_frame.size,
					      m->img->eh_frame.vaddr, 1 };
	if (m->img->debug_frame.size)
		in[n++] = (struct cfi_input){ m->img->debug_frame.data,
					      m->img->debug_frame.size,
					      m->img->debug_frame.vaddr, 0 };
	if (!n) {
		log_info(&ctx->log, "%s: no CFI in the image itself", m->name);
		return NULL;
	}
	if (unwind_table__compile(in, n, &ctx->log, &m->table))
		m->table = NULL;
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
	if (!m->debug || !m->debug->debug_frame.size)
		return NULL;
	struct cfi_input in = { m->debug->debug_frame.data,
				m->debug->debug_frame.size,
				m->debug->debug_frame.vaddr, 0 };
	if (unwind_table__compile(&in, 1, &ctx->log, &m->debug_table))
		m->debug_table = NULL;
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
	if (symtab__build(imgs, 2, &ctx->log, &m->symtab))
		m->symtab = NULL;
	return m->symtab;
}

struct line_info *module__lines(struct stacksnap_ctx *ctx, struct module *m)
{
	if (m->lines_tried)
		return m->lines;
	m->lines_tried = true;
	module_open_debug(ctx, m);
	if (m->debug && m->debug->has_dwarf_info) {
		if (line_info__open(m->debug, &ctx->log, &m->lines))
			m->lines = NULL;
	} else if (m->img->has_dwarf_info) {
		if (line_info__open(m->img, &ctx->log, &m->lines))
			m->lines = NULL;
	}
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
	free(m->memo);
	line_info__free(m->lines);
	symtab__free(m->symtab);
	unwind_table__free(m->table);
	unwind_table__free(m->debug_table);
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
	ctx->ignore_deleted = o.ignore_deleted;
	ctx->debuginfod = o.debuginfod;
	/* The cache has a debug directory's layout: searched first. */
	char *dirs = NULL;
	if (asprintf(&dirs, "%s%s%s", o.cache_dir && *o.cache_dir ? o.cache_dir : "",
		     o.cache_dir && *o.cache_dir ? ":" : "",
		     o.debug_dirs ? o.debug_dirs : "/usr/lib/debug") < 0)
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

const char *stacksnap_version(void)
{
	return "0.1.0";
}
