/* saved.c - the object a saved capture is read into (snapshot files,
 * events files and core dumps alike): its accessors, and the address space rebuilt from
 * recorded mappings, finding each module's file by path or build-id. */
#define _GNU_SOURCE
#include "saved/saved.h"
#include "saved/named_reader.h"
#include "saved/readers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elf.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/log.h"
#include "elf/elf_image.h"
#include "base/opts.h"
#include "runtime/runtime_steps.h"

struct stacksnap_saved *saved__new(struct stacksnap_ctx *ctx, const char *path)
{
	struct stacksnap_saved *s;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path ? path : "(memory)")) ||
	    !(s->as = stacksnap_addrspace__new(ctx))) {
		if (s)
			free(s->path);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->ctx = ctx;
	s->info.sz = sizeof(s->info);
	s->info.cmdline = s->info.kernel = s->info.version = "";
	return s;
}

int saved__map_file(struct stacksnap_saved *s, const char *path)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0) {
		err = -errno;
		log_err(&s->ctx->log, "%s: cannot open: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		log_err(&s->ctx->log, "%s: not a regular file", path);
		return -EINVAL;
	}
	if (st.st_size == 0) {
		close(fd);
		log_err(&s->ctx->log, "%s: empty file", path);
		return -EINVAL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	err = -errno;
	close(fd);
	if (p == MAP_FAILED) {
		log_err(&s->ctx->log, "%s: cannot map: %s", path, strerror(-err));
		return err;
	}
	s->image = p;
	s->image_len = (size_t)st.st_size;
	s->image_mmapped = true;
	s->image_owned = true;
	return 0;
}

/* A build-id in hex, at most ELF_BUILD_ID_MAX bytes of it. */
static void hex_of(const uint8_t *id, size_t len, char *out)
{
	size_t n = len < ELF_BUILD_ID_MAX ? len : ELF_BUILD_ID_MAX;

	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

static void build_id_hex(const struct stacksnap_mapping *mp, char *out)
{
	hex_of(mp->build_id, mp->build_id_len, out);
	if (!mp->build_id_len)
		strcpy(out, "none recorded");
}

/* The build-id (hex) of the ELF file at path into out; false when there is
 * no such file, it is no ELF file or it has no build-id. */
static bool file_build_id(const char *path, const struct log_sink *log,
			  char out[2 * ELF_BUILD_ID_MAX + 1])
{
	struct elf_image *img;
	struct stat st;
	bool ok;

	if (stat(path, &st) || !S_ISREG(st.st_mode) ||
	    elf_image__open(path, log, &img))
		return false;
	ok = img->build_id_len > 0;
	hex_of(img->build_id, img->build_id_len, out);
	elf_image__free(img);
	return ok;
}

int saved__add_mapping(struct stacksnap_saved *s,
		       const struct stacksnap_mapping *mp, bool prot_from_file)
{
	struct stacksnap_ctx *ctx = s->ctx;
	struct stacksnap_mapping anon = *mp;
	struct module *mod;
	char *found;
	int err;

	if (!mp->path || mp->path[0] != '/') {
		anon.build_id = NULL;
		anon.build_id_len = 0;
		return stacksnap_addrspace__add_mapping(s->as, &anon) == -ENOMEM
			       ? -ENOMEM : 0;
	}
	/* A module already met (another mapping of the file) is not looked
	 * for again. Paths are under the context's sysroot, if any (a copy
	 * of the capturing host's files). */
	char rooted[4096 + 256];
	snprintf(rooted, sizeof(rooted), "%s%s", ctx->sysroot ? ctx->sysroot : "",
		 mp->path);
	found = mp->build_id_len && module__cached(ctx, mp->build_id, mp->build_id_len)
			? strdup(rooted)
			: elf_find_by_build_id(rooted, mp->build_id, mp->build_id_len,
					       (const char *const *)ctx->debug_dirs,
					       ctx->debuginfod, &ctx->log);
	if (found) {
		err = module__get_file(ctx, mp->path, found, mp->build_id,
				       mp->build_id_len, &mod);
		free(found);
		if (err == -ENOMEM)
			return err;
		if (!err && prot_from_file) {
			uint64_t bias;

			if (elf_image__load_bias(mod->img, mp->start, mp->offset,
						 PF_X, &bias)) {
				module__put(mod); /* not code */
				return 0;
			}
			anon.prot = PROT_READ | PROT_EXEC;
			err = addrspace__add_with_module(s->as, &anon, mod);
			module__put(mod);
			return err == -ENOMEM ? err : 0;
		}
		if (!err) {
			err = addrspace__add_with_module(s->as, mp, mod);
			module__put(mod);
			return err == -ENOMEM ? err : 0;
		}
	} else if (prot_from_file) {
		return 0; /* unknown whether it is code: nothing to name */
	} else {
		char hex[2 * ELF_BUILD_ID_MAX + 16], there[2 * ELF_BUILD_ID_MAX + 1];

		build_id_hex(mp, hex);
		if (file_build_id(rooted, &ctx->log, there)) {
			/* Rebuilt since the capture: the file is named, not
			 * taken for anonymous (JIT) code. */
			log_warn(&ctx->log,
				 "%s (build-id %s): the file at its path is another "
				 "build (build-id %s: rebuilt since the capture?), and "
				 "this one is not in the debug directories or the "
				 "cache%s; its frames name the file without functions "
				 "(keep the captured build, or give --debug-dir)",
				 mp->path, hex, there,
				 ctx->debuginfod ? ", nor through debuginfod" : "");
			return addrspace__add_unopened(s->as, mp) == -ENOMEM
				       ? -ENOMEM : 0;
		}
		log_warn(&ctx->log,
			 "%s (build-id %s): not found at its path, by build-id in "
			 "the debug directories and the cache%s; its frames stay "
			 "addresses (copy the file there, or set DEBUGINFOD_URLS)",
			 mp->path, hex, ctx->debuginfod ? ", or through debuginfod" : "");
	}
	/* Kept as code without a module: the unwinder knows it is code. */
	anon.path = NULL;
	anon.build_id = NULL;
	anon.build_id_len = 0;
	return stacksnap_addrspace__add_mapping(s->as, &anon) == -ENOMEM ? -ENOMEM : 0;
}

int saved__add_image(struct stacksnap_saved *s,
		     const struct stacksnap_mapping *mp, const uint8_t *bytes,
		     size_t len, const char *name)
{
	struct elf_image *img;
	struct module *mod;
	int err;

	err = elf_image__open_mem(bytes, len, name, &s->ctx->log, &img);
	if (!err)
		err = module__get_image(s->ctx, name, img, &mod);
	if (err) {
		struct stacksnap_mapping anon = *mp;

		if (err == -ENOMEM)
			return err;
		anon.path = NULL;
		return stacksnap_addrspace__add_mapping(s->as, &anon) == -ENOMEM
			       ? -ENOMEM : 0;
	}
	err = addrspace__add_with_module(s->as, mp, mod);
	module__put(mod);
	return err == -ENOMEM ? err : 0;
}

int stacksnap_saved__info(const struct stacksnap_saved *s,
			  struct stacksnap_saved_info *info)
{
	if (!s || !info)
		return fail(-EINVAL);
	return opts_out(info, &s->info, sizeof(s->info),
			offsetof(struct stacksnap_saved_info, time_ns))
		       ? fail(-EINVAL) : 0;
}

size_t stacksnap_saved__thread_count(const struct stacksnap_saved *s)
{
	return s ? s->n : 0;
}

const struct stacksnap_thread *stacksnap_saved__thread(const struct stacksnap_saved *s,
						       size_t i)
{
	return s && i < s->n ? &s->threads[i] : NULL;
}

size_t stacksnap_saved__goroutine_count(const struct stacksnap_saved *s)
{
	return s ? s->ngoroutines : 0;
}

const struct stacksnap_goroutine *
stacksnap_saved__goroutine(const struct stacksnap_saved *s, size_t i)
{
	return s && i < s->ngoroutines ? &s->goroutines[i] : NULL;
}

struct stacksnap_addrspace *stacksnap_saved__addrspace(const struct stacksnap_saved *s)
{
	return s ? s->as : NULL;
}

struct stacksnap_mem *stacksnap_saved__memory(const struct stacksnap_saved *s)
{
	return s ? s->mem : NULL;
}

void stacksnap_saved__free(struct stacksnap_saved *s)
{
	if (!s)
		return;
	if (s->ops && s->ops->free)
		s->ops->free(s->source);
	stacksnap_mem__free(s->mem);
	stacksnap_addrspace__free(s->as);
	runtime_reader__free(s->runtime);
	named_reader__free(s->named);
	waits_reader__free(s->waits);
	free(s->threads);
	free(s->stacks);
	free(s->goroutines);
	free(s->gframes);
	free(s->gstrings);
	free(s->glabels);
	free(s->cmdline);
	free(s->kernel);
	free(s->version);
	free(s->boot_id);
	free(s->hostname);
	free(s->path);
	if (s->image_owned && s->image_mmapped)
		munmap((void *)s->image, s->image_len);
	else if (s->image_owned)
		free((void *)s->image);
	free(s);
}

char *readers__take_str(struct cursor *c, char nul_as, bool *nomem)
{
	uint32_t len = cursor_u32(c);
	const uint8_t *p = cursor_take(c, len);
	char *s;

	if (!p)
		return NULL;
	s = malloc((size_t)len + 1);
	if (!s) {
		*nomem = true;
		return NULL;
	}
	memcpy(s, p, len);
	s[len] = 0;
	for (uint32_t i = 0; i < len; i++)
		if (!s[i])
			s[i] = nul_as;
	return s;
}

const char *readers__arena_str(struct cursor *c, char *arena, size_t *at)
{
	uint32_t len = cursor_u32(c);
	const uint8_t *p = cursor_take(c, len);
	char *d;

	if (!p || !len)
		return NULL;
	d = arena + *at;
	memcpy(d, p, len);
	d[len] = 0;
	for (uint32_t i = 0; i < len; i++)
		if (!d[i])
			d[i] = ' ';
	*at += (size_t)len + 1;
	return d;
}

char *readers__take_opt_str(struct cursor *c, bool *nomem)
{
	char *s = readers__take_str(c, '?', nomem);

	if (s && !s[0]) {
		free(s);
		s = NULL;
	}
	return s;
}

bool readers__take_steps(struct cursor *c, struct stacksnap_runtime_step *steps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct stacksnap_runtime_step *st = &steps[i];

		st->pc = cursor_u64(c);
		st->sp = cursor_u64(c);
		st->caller_pc = cursor_u64(c);
		st->caller_sp = cursor_u64(c);
		st->caller_fp = cursor_u64(c);
		/* The replay's search needs them sorted and unique. */
		if (i && runtime_step__cmp(&st[-1], st) >= 0)
			return false;
	}
	return !c->bad;
}
