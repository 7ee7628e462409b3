/* addrspace.c - building address spaces from /proc/PID/maps or from the
 * caller's mappings, lookups, and symbolization of addresses. */
#define _GNU_SOURCE
#include "addrspace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>
#include <elf.h>

#include "base/clock.h"
#include "base/maps_line.h"
#include "base/mm_task.h"
#include "base/opts.h"
#include "base/vec.h"
#include "symbolize/jit_symbols.h"
#include "symbolize/symbolize.h"

static void map_release(struct as_map *m)
{
	module__put(m->mod);
	free(m->path);
}

static void maps_clear(struct stacksnap_addrspace *as)
{
	for (size_t i = 0; i < as->n; i++)
		map_release(&as->maps[i]);
	as->n = 0;
	as->last = 0;
}

static void map_resolve(struct stacksnap_addrspace *as, struct as_map *m);

const struct as_map *addrspace__find_slow(struct stacksnap_addrspace *as,
					  uint64_t addr)
{
	size_t lo = 0, hi = as->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < as->maps[mid].start)
			hi = mid;
		else if (addr >= as->maps[mid].end)
			lo = mid + 1;
		else {
			if (as->maps[mid].pending)
				map_resolve(as, &as->maps[mid]);
			as->last = mid;
			return &as->maps[mid];
		}
	}
	return NULL;
}

/* Removes [start, end) from every mapping, splitting where needed. */
static int maps_punch(struct stacksnap_addrspace *as, uint64_t start,
		      uint64_t end)
{
	for (size_t i = 0; i < as->n; i++) {
		struct as_map *m = &as->maps[i];

		if (m->end <= start || m->start >= end)
			continue;
		if (m->start < start && m->end > end) { /* split in two */
			struct as_map tail = *m;

			tail.start = end;
			tail.offset += end - m->start;
			tail.path = m->path ? strdup(m->path) : NULL;
			if (m->path && !tail.path)
				return -ENOMEM;
			if (tail.mod)
				tail.mod->refs++;
			m->end = start;
			if (!VEC_PUSH(as->maps, as->n, as->cap)) {
				map_release(&tail);
				return -ENOMEM;
			}
			as->maps[as->n - 1] = tail;
			continue;
		}
		if (m->start < start) {
			m->end = start;
		} else if (m->end > end) {
			m->offset += end - m->start;
			m->start = end;
		} else {
			map_release(m);
			as->maps[i--] = as->maps[--as->n];
		}
	}
	return 0;
}

static int map_cmp(const void *a, const void *b)
{
	const struct as_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void maps_sort(struct stacksnap_addrspace *as)
{
	qsort(as->maps, as->n, sizeof(*as->maps), map_cmp);
	as->last = 0;
}

static bool is_special(const char *path)
{
	return !path || !*path || path[0] == '[';
}

/* mod with the bias of a mapping of it, or NULL (its reference dropped,
 * a warning) when no PT_LOAD matches the mapping. */
static struct module *module_biased(struct stacksnap_addrspace *as,
				    struct module *mod, uint64_t start,
				    uint64_t end, uint64_t offset, uint64_t *bias)
{
	if (mod && elf_image__load_bias(mod->img, start, offset, PF_X, bias)) {
		log_warn(&as->ctx->log,
			 "%s: mapping %#" PRIx64 "-%#" PRIx64 " at offset %#" PRIx64
			 " matches no PT_LOAD segment; ignoring its module",
			 mod->name, start, end, offset);
		module__put(mod);
		return NULL;
	}
	return mod;
}

/* Adds one mapping: ties file-backed executable mappings to modules
 * (or, deferred, marks the mapping pending: opened when first found). A
 * module that cannot be opened is reported and the mapping kept as
 * anonymous code, so one bad file does not fail the whole space. */
/* How add_one() treats a code mapping without a module: its file opened
 * now, when first looked up (pending), or never (a file known not to be
 * the one mapped: its frames name it without functions). */
enum add_open { ADD_OPEN_NOW, ADD_OPEN_LATER, ADD_OPEN_NEVER };

static int add_one(struct stacksnap_addrspace *as,
		   const struct stacksnap_mapping *mp, struct module *mod,
		   enum add_open defer)
{
	struct as_map m = { .start = mp->start, .end = mp->end,
			    .offset = mp->offset, .inode = mp->inode,
			    .prot = mp->prot ? mp->prot : PROT_READ | PROT_EXEC };
	int err;

	if (mp->end <= mp->start)
		return -EINVAL;
	if (mp->path && strcmp(mp->path, "[anon]") &&
	    !(m.path = strdup(mp->path)))
		return -ENOMEM;
	if (defer == ADD_OPEN_LATER && !mod && (m.prot & PROT_EXEC) && m.path &&
	    m.path[0] == '/')
		m.pending = true;
	else if (defer == ADD_OPEN_NOW && !mod && (m.prot & PROT_EXEC) &&
		 !is_special(mp->path)) {
		err = module__get_file(as->ctx, mp->path, mp->path,
				       mp->build_id, mp->build_id_len, &mod);
		if (err == -ENOMEM)
			goto fail;
		if (err)
			mod = NULL; /* elf_image__open logged why */
	}
	m.mod = mod = module_biased(as, mod, mp->start, mp->end, mp->offset,
				    &m.bias);
	err = maps_punch(as, mp->start, mp->end);
	if (err)
		goto fail;
	if (!VEC_PUSH(as->maps, as->n, as->cap)) {
		err = -ENOMEM;
		goto fail;
	}
	as->maps[as->n - 1] = m;
	return 0;
fail:
	module__put(mod);
	free(m.path);
	return err;
}

static struct stacksnap_addrspace *as_new(struct stacksnap_ctx *ctx, pid_t pid)
{
	struct stacksnap_addrspace *as;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	as = calloc(1, sizeof(*as));
	if (!as) {
		errno = ENOMEM;
		return NULL;
	}
	as->ctx = ctx;
	as->pid = pid;
	as->mm_pid = pid;
	as->root_fd = -1;
	return as;
}

struct stacksnap_addrspace *stacksnap_addrspace__new(struct stacksnap_ctx *ctx)
{
	return as_new(ctx, 0);
}

int stacksnap_addrspace__add_mapping(struct stacksnap_addrspace *as,
				     const struct stacksnap_mapping *map)
{
	int err;

	struct stacksnap_mapping m;

	if (!as || !map ||
	    opts_in(&m, sizeof(m), map, offsetof(struct stacksnap_mapping, path)))
		return fail(-EINVAL);
	err = add_one(as, &m, NULL, ADD_OPEN_NOW);
	if (err)
		return fail(err);
	maps_sort(as);
	return 0;
}

int stacksnap_addrspace__remove_range(struct stacksnap_addrspace *as,
				      uint64_t start, uint64_t end)
{
	int err;

	if (!as || end <= start)
		return fail(-EINVAL);
	err = maps_punch(as, start, end);
	maps_sort(as);
	return err ? fail(err) : 0;
}

/* The vDSO is not a file: read its image out of the target. */
static int add_vdso(struct stacksnap_addrspace *as,
		    const struct stacksnap_mapping *mp)
{
	size_t len = mp->end - mp->start;
	struct elf_image *img;
	struct module *mod;
	void *buf;
	int err;

	if (len > (64u << 20))
		return -EFBIG;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)mp->start, len };
	if (process_vm_readv(as->mm_pid, &local, 1, &remote, 1, 0) != (ssize_t)len) {
		err = -errno;
		free(buf);
		log_warn(&as->ctx->log, "pid %d: cannot read the vDSO: %s",
			 (int)as->pid, strerror(-err));
		return err;
	}
	err = elf_image__open_mem(buf, len, "[vdso]", &as->ctx->log, &img);
	free(buf);
	if (err)
		return err;
	err = module__get_image(as->ctx, "[vdso]", img, &mod);
	if (err)
		return err;
	return add_one(as, mp, mod, ADD_OPEN_NOW);
}

/* Releases the descriptor of the target's root, if held. */
static void root_close(struct stacksnap_addrspace *as)
{
	if (as->root_fd >= 0) {
		close(as->root_fd);
		as->ctx->root_fds--;
	}
	as->root_fd = -1;
	as->root_tried = false;
}

/* The descriptor of the target's root, opened at the first call; -1 when
 * it cannot be had (the target gone, no permission, too many held): files
 * are then opened by their /proc/PID/root paths, as before. */
static int root_fd(struct stacksnap_addrspace *as)
{
	char proc[32];

	if (as->root_tried)
		return as->root_fd;
	as->root_tried = true;
	if (as->ctx->root_fds >= AS_MAX_ROOT_FDS)
		return -1;
	snprintf(proc, sizeof(proc), "/proc/%d/root", (int)as->mm_pid);
	as->root_fd = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (as->root_fd >= 0)
		as->ctx->root_fds++;
	return as->root_fd;
}

/* Where to read the file behind a mapping of the target: under the
 * target's root; for a file deleted since it was mapped, the bytes actually
 * mapped through /proc/PID/map_files, or (ignore_deleted, tbstack's
 * --ignore-deleted) whatever file now has its path. NULL: nothing to read,
 * the mapping's frames are unknown. The name is written to buf; *dirfd and
 * *rel say how to open it (under the target's root: relative to a
 * descriptor of the root, when there is one). */
static const char *file_to_open(struct stacksnap_addrspace *as,
				const char *path, unsigned long long start,
				unsigned long long end, char *buf, size_t size,
				int *dirfd, const char **rel)
{
	static const char del[] = " (deleted)";
	const size_t l = strlen(path), dl = sizeof(del) - 1;
	const char *root = as->ctx->sysroot;
	const int pid = (int)as->mm_pid;
	int len = (int)l, prefix;

	*dirfd = AT_FDCWD;
	*rel = buf;
	if (l > dl && !strcmp(path + l - dl, del)) {
		snprintf(buf, size, "/proc/%d/map_files/%llx-%llx", pid, start,
			 end);
		if (access(buf, R_OK) == 0)
			return buf;
		log_info(&as->ctx->log,
			 "pid %d: %s: not readable through map_files (%s): %s",
			 pid, path, strerror(errno),
			 as->ctx->ignore_deleted
				 ? "opening the file now at its path"
				 : "its frames are unknown (--ignore-deleted "
				   "opens the file now at its path)");
		if (!as->ctx->ignore_deleted)
			return NULL;
		len = (int)(l - dl);
	}
	if (root) {
		snprintf(buf, size, "%s%.*s", root, len, path);
		return buf;
	}
	prefix = snprintf(buf, size, "/proc/%d/root", pid);
	snprintf(buf + prefix, size - (size_t)prefix, "%.*s", len, path);
	/* The walk from a descriptor of the root is the walk after the magic
	 * link (the target's mount namespace, its symbolic links), without
	 * the link: path is absolute (a pending mapping's). */
	if (path[0] == '/' && path[1] != '/' && root_fd(as) >= 0) {
		*dirfd = as->root_fd;
		*rel = buf + prefix + 1;
	}
	return buf;
}

/* The file of a mapping whose process exited between reading its maps
 * and a pc landing in the mapping (files are opened lazily, and a capture
 * outlives its target) before the space held a descriptor of its root
 * (one held still opens the target's files): /proc/PID/root is gone, so
 * the path is opened as this process sees it, when it is still the file
 * mapped (same inode as the maps line; the module's build-id checks the
 * rest). */
/* pid has exited: gone from /proc, or a zombie its parent has not reaped
 * yet (its /proc/PID/root is gone already). */
static bool pid_exited(pid_t pid)
{
	char path[32], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	p = strrchr(buf, ')');
	return p && p[1] && (p[2] == 'Z' || p[2] == 'X');
}

static struct module *gone_file(struct stacksnap_addrspace *as,
				const struct as_map *m)
{
	struct module *mod = NULL;
	struct stat st;

	if (!as->pid || !m->inode || !pid_exited(as->mm_pid) ||
	    stat(m->path, &st) || (uint64_t)st.st_ino != m->inode ||
	    module__get_file(as->ctx, m->path, m->path, NULL, 0, &mod))
		return NULL;
	log_info(&as->ctx->log, "pid %d exited: %s opened at its path (the "
		 "inode mapped)", (int)as->pid, m->path);
	return mod;
}

/* Opens the module of a pending mapping of the target (its file under the
 * target's root, or the bytes mapped when it was deleted since). */
static void map_resolve(struct stacksnap_addrspace *as, struct as_map *m)
{
	char buf[4096 + 64];
	const char *op, *rel;
	struct module *mod = NULL;
	uint64_t t0 = clock_monotonic_ns();
	int dirfd;

	m->pending = false;
	op = file_to_open(as, m->path, m->start, m->end, buf, sizeof(buf),
			  &dirfd, &rel);
	if (op && module__get_file_at(as->ctx, m->path, dirfd, rel, op, NULL, 0,
				      &mod) == 0)
		m->mod = module_biased(as, mod, m->start, m->end, m->offset,
				       &m->bias);
	else if (op && !as->ctx->sysroot && (mod = gone_file(as, m)))
		m->mod = module_biased(as, mod, m->start, m->end, m->offset,
				       &m->bias);
	as->ctx->stats.module_ns += clock_monotonic_ns() - t0;
}

void addrspace__resolve_all(struct stacksnap_addrspace *as)
{
	for (size_t i = 0; as && i < as->n; i++)
		if (as->maps[i].pending)
			map_resolve(as, &as->maps[i]);
}

/* Parses /proc/PID/maps into the address space. */
static int read_maps(struct stacksnap_addrspace *as)
{
	char fname[64], line[4096 + 256], iobuf[16384];
	FILE *f;
	int err = 0;

	/* Through a live thread when the main one has exited. */
	as->mm_pid = mm_task_of(as->pid);
	snprintf(fname, sizeof(fname), "/proc/%d/maps", (int)as->mm_pid);
	f = fopen(fname, "re");
	if (!f) {
		err = -errno;
		/* A process gone (profile -a, trace: short processes exit
		 * before their first sample is read) is no error here: the
		 * caller gets -ESRCH and says what it means to it. */
		if (err == -ENOENT || err == -ESRCH)
			log_debug(&as->ctx->log, "pid %d: cannot read %s: %s (gone)",
				  (int)as->pid, fname, strerror(errno));
		else if (err == -EACCES || err == -EPERM) {
			char why[320];

			log_err(&as->ctx->log, "pid %d: not permitted to read %s (%s)",
				(int)as->pid, fname,
				stacksnap_why_not_permitted(STACKSNAP_REFUSED_PTRACE, as->pid,
							    why, sizeof(why)));
		} else
			log_err(&as->ctx->log, "pid %d: cannot read %s: %s",
				(int)as->pid, fname, strerror(errno));
		/* No such process: ESRCH, as every call taking a pid says. */
		return err == -ENOENT ? -ESRCH : err;
	}
	/* procfs fills each read() by finding its place in the mappings
	 * again: stdio's 1 KiB (st_blksize 0) took 45 reads for clangd's 400
	 * mappings; procfs gives at most a page a call: 12 now. */
	setvbuf(f, iobuf, _IOFBF, sizeof(iobuf));
	as->nrw = 0;
	while (fgets(line, sizeof(line), f)) {
		struct stacksnap_mapping mp = { .sz = sizeof(mp) };
		struct maps_line ml;

		if (maps_line__parse(line, &ml))
			continue;
		uint64_t start = ml.start, end = ml.end;
		if (ml.prot & PROT_WRITE) {
			struct as_rw_range *r = VEC_PUSH(as->rw, as->nrw, as->caprw);

			if (!r) {
				err = -ENOMEM;
				break;
			}
			r->start = start;
			r->end = end;
		}
		mp.start = start;
		mp.end = end;
		mp.offset = ml.offset;
		mp.inode = ml.inode;
		mp.prot = ml.prot;
		mp.path = ml.path;
		if (!(mp.prot & PROT_EXEC))
			continue; /* only code needs a module */
		if (mp.path && !strcmp(mp.path, "[vdso]")) {
			err = add_vdso(as, &mp);
			if (err == -ENOMEM)
				break;
			err = 0;
			continue;
		}
		/* Files are opened when a pc falls in them (map_resolve): a
		 * dump of a process with 70 libraries meets a handful. */
		err = add_one(as, &mp, NULL, ADD_OPEN_LATER);
		if (err == -ENOMEM)
			break;
		err = 0;
	}
	fclose(f);
	maps_sort(as);
	return err;
}

int stacksnap_mapping__parse_line(char *line, struct stacksnap_mapping *out)
{
	struct stacksnap_mapping mp = { .sz = sizeof(mp) };
	struct maps_line ml;

	if (!line || !out || maps_line__parse(line, &ml))
		return fail(-EINVAL);
	mp.start = ml.start;
	mp.end = ml.end;
	mp.offset = ml.offset;
	mp.path = ml.path;
	mp.prot = ml.prot;
	mp.inode = ml.inode;
	mp.dev = makedev(ml.dev_major, ml.dev_minor);
	return opts_out(out, &mp, sizeof(mp), offsetof(struct stacksnap_mapping, path))
		? fail(-EINVAL) : 0;
}

struct stacksnap_addrspace *stacksnap_addrspace__from_pid(struct stacksnap_ctx *ctx,
							  pid_t pid)
{
	struct stacksnap_addrspace *as;
	int err;

	if (pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	as = as_new(ctx, pid);
	if (!as)
		return NULL;
	err = read_maps(as);
	if (err) {
		stacksnap_addrspace__free(as);
		errno = -err;
		return NULL;
	}
	return as;
}

int stacksnap_addrspace__refresh(struct stacksnap_addrspace *as)
{
	struct as_map *old;
	size_t nold;
	int err;

	if (!as || !as->pid)
		return fail(-EINVAL);
	/* Keep the old references until the new maps hold theirs, so
	 * modules that did not change are found in the cache as they are. */
	old = as->maps;
	nold = as->n;
	as->maps = NULL;
	as->n = as->cap = 0;
	root_close(as); /* the root now, should the target have changed it */
	err = read_maps(as);
	for (size_t i = 0; i < nold; i++)
		map_release(&old[i]);
	free(old);
	return err ? fail(err) : 0;
}

int addrspace__add_with_module(struct stacksnap_addrspace *as,
			       const struct stacksnap_mapping *map,
			       struct module *mod)
{
	int err;

	mod->refs++; /* add_one consumes one reference, also on failure */
	err = add_one(as, map, mod, ADD_OPEN_NOW);
	maps_sort(as);
	return err;
}

int addrspace__add_unopened(struct stacksnap_addrspace *as,
			    const struct stacksnap_mapping *map)
{
	int err = add_one(as, map, NULL, ADD_OPEN_NEVER);

	maps_sort(as);
	return err;
}

struct stacksnap_addrspace *addrspace__clone(const struct stacksnap_addrspace *src)
{
	struct stacksnap_addrspace *as = as_new(src->ctx, src->pid);

	if (!as)
		return NULL;
	as->maps = calloc(src->n ? src->n : 1, sizeof(*as->maps));
	if (!as->maps)
		goto nomem;
	as->cap = src->n ? src->n : 1;
	for (size_t i = 0; i < src->n; i++) {
		struct as_map m = src->maps[i];

		if (m.path && !(m.path = strdup(m.path)))
			goto nomem;
		if (m.mod)
			m.mod->refs++;
		as->maps[as->n++] = m;
	}
	return as;
nomem:
	stacksnap_addrspace__free(as);
	errno = ENOMEM;
	return NULL;
}

int addrspace__merge_new(struct stacksnap_addrspace *dst, struct stacksnap_addrspace *src)
{
	size_t added = 0;

	for (size_t i = 0; i < src->n; i++) {
		struct as_map *m = &src->maps[i];
		bool overlaps = false;

		for (size_t k = 0; k < dst->n && !overlaps; k++)
			overlaps = dst->maps[k].start < m->end && m->start < dst->maps[k].end;
		if (overlaps)
			continue;
		/* Opened as src's (its pid names the files), then moved. */
		if (m->pending)
			map_resolve(src, m);
		if (!VEC_PUSH(dst->maps, dst->n, dst->cap))
			return -ENOMEM;
		/* Moved: src no longer holds its module or path. */
		dst->maps[dst->n - 1] = *m;
		m->mod = NULL;
		m->path = NULL;
		added++;
	}
	if (added)
		maps_sort(dst);
	return (int)added;
}

void stacksnap_addrspace__free(struct stacksnap_addrspace *as)
{
	if (!as)
		return;
	maps_clear(as);
	root_close(as);
	free(as->maps);
	free(as->rw);
	jit_symbols__free(as->jit);
	free(as);
}

size_t addrspace__writable(const struct stacksnap_addrspace *as,
			   const struct as_rw_range **out)
{
	*out = as->rw;
	return as->pid ? as->nrw : 0;
}

struct jit_symbols *addrspace__jit(struct stacksnap_addrspace *as)
{
	if (!as->jit && as->pid)
		as->jit = jit_symbols__new(as->pid, &as->ctx->log);
	return as->jit;
}

void addrspace__set_jit(struct stacksnap_addrspace *as, struct jit_symbols *js)
{
	jit_symbols__free(as->jit);
	as->jit = js;
}

/* Anonymous executable memory: no path in /proc/PID/maps, "//anon" in
 * perf.data's mmap events, "[anon:NAME]" when named with prctl. */
static bool is_anon_code(const struct as_map *m)
{
	return !m->mod && (m->prot & PROT_EXEC) &&
	       (!m->path || !strcmp(m->path, "//anon") ||
		!strncmp(m->path, "[anon", 5));
}

const char *stacksnap_addrspace__jit_file(struct stacksnap_addrspace *as,
					  uint64_t pc, bool is_return)
{
	uint64_t lookup = is_return ? pc - 1 : pc;
	const struct as_map *m = as ? addrspace__find(as, lookup) : NULL;
	struct jit_symbol js;

	if (!m || !is_anon_code(m) || !addrspace__jit(as) ||
	    !jit_symbols__lookup(as->jit, lookup, &js))
		return NULL;
	return js.source;
}

/* A pc in anonymous executable memory is JIT code: named from the live
 * process's perf map or jitdump (file:line with STACKSNAP_SYM_LINES when
 * the dump has them), never from a neighbouring module's symbols. */
static void symbolize_jit(struct stacksnap_addrspace *as, uint64_t pc,
			  uint64_t lookup, unsigned flags,
			  struct stacksnap_sym *out)
{
	struct jit_symbol js;

	out->module = STACKSNAP_MODULE_JIT;
	if (!addrspace__jit(as) || !jit_symbols__lookup(as->jit, lookup, &js))
		return;
	out->function = js.name;
	out->offset = pc - js.start;
	if ((flags & STACKSNAP_SYM_LINES) && js.file) {
		out->file = js.file;
		out->line = (int)js.line;
	}
}

int stacksnap_addrspace__symbolize(struct stacksnap_addrspace *as, uint64_t pc,
				   bool is_return, unsigned flags,
				   struct stacksnap_sym *out, size_t max)
{
	uint64_t lookup = is_return ? pc - 1 : pc;
	int no_demangle = !!(flags & STACKSNAP_SYM_NO_DEMANGLE);
	const struct as_map *m;
	struct module *mod;
	int n = 0;

	/* Unknown bits are refused, as libbpf does: a caller built against
	 * a newer header asks for what this library cannot do. Every
	 * STACKSNAP_SYM_* flag belongs in the mask. */
	const unsigned known = STACKSNAP_SYM_LINES | STACKSNAP_SYM_NO_DEMANGLE |
			       STACKSNAP_SYM_SYMTAB;

	if (!as || !out || !max || (flags & ~known))
		return fail(-EINVAL);
	m = addrspace__find(as, lookup);
	if (!m)
		return 0;
	memset(out, 0, sizeof(*out));
	out->module = m->path;
	if (!(mod = m->mod)) {
		/* A file not opened (gone, not permitted): its file offset,
		 * which is the link address in the usual ELF layout (what
		 * addr2line takes), not the offset in the mapping; anonymous
		 * code: from the mapping's start. */
		out->module_offset = pc - m->start +
				     (m->path && m->path[0] == '/' ? m->offset : 0);
		if (is_anon_code(m))
			symbolize_jit(as, pc, lookup, flags, out);
		return 1;
	}
	uint64_t vaddr = lookup - m->bias;
	bool symtab_only = flags & STACKSNAP_SYM_SYMTAB;
	/* A Go program: its pclntab names every function, stripped or not,
	 * with inlined calls as Go's traceback gives them (docs/go.md). */
	if (!symtab_only && module__go(as->ctx, mod)) {
		n = module__go_symbolize(as->ctx, mod, vaddr,
					 flags & STACKSNAP_SYM_LINES, out, max);
		for (int i = 0; i < n; i++) {
			out[i].offset += pc - lookup;
			out[i].module = m->path ? m->path : mod->name;
			out[i].module_offset = pc - m->bias;
		}
		if (n > 0)
			return n;
		memset(out, 0, sizeof(*out));
		out->module = m->path;
	}
	/* The default (names only): memoized, as stacks repeat their pcs. */
	bool memo = !symtab_only && !(flags & STACKSNAP_SYM_LINES);
	uint64_t key = module__memo_key(vaddr, no_demangle);
	if (memo && (module__memo_get(mod, key, &out->function, &out->offset) ||
		     (!no_demangle && module__function(as->ctx, mod, vaddr, key,
						       &out->function, &out->offset)))) {
		if (out->function)
			out->offset += pc - lookup;
		out->module = m->path ? m->path : mod->name;
		out->module_offset = pc - m->bias;
		return 1;
	}
	struct symtab *st = module__symtab(as->ctx, mod);
	struct line_info *li = symtab_only ? NULL : module__lines(as->ctx, mod);
	bool lines = !symtab_only && (flags & STACKSNAP_SYM_LINES);

	/* Names come from DWARF where there is some, as debuggers show them;
	 * without --lines only the containing function is reported. */
	if (symtab_only) {
		uint64_t start = 0;

		out->function = symtab__lookup(st, vaddr, no_demangle, &start);
		out->offset = out->function ? vaddr - start : 0;
		n = 1;
		/* A stripped Go program: the pclntab is its symbol table. */
		if (!out->function &&
		    module__go_symbolize(as->ctx, mod, vaddr, false, out, 1) > 0)
			out->module = m->path;
	} else {
		n = st || li ? symbolize__lookup(st, li, vaddr,
						 (no_demangle ? SYM_NO_DEMANGLE : 0) |
							 (lines ? 0 : SYM_NO_LINES | SYM_FUNCTION_ONLY),
						 out, max)
			     : 0;
	}
	if (n <= 0) {
		memset(out, 0, sizeof(*out));
		n = 1;
	} else if (!lines) {
		out[0] = out[n - 1];
		out[0].file = NULL;
		out[0].line = out[0].column = 0;
		out[0].inlined = false;
		n = 1;
	}
	if (memo)
		module__memo_put(mod, key, out[0].function, out[0].offset);
	for (int i = 0; i < n; i++) {
		if (out[i].function)
			out[i].offset += pc - lookup; /* offsets are of pc itself */
		out[i].module = m->path ? m->path : mod->name;
		out[i].module_offset = pc - m->bias;
	}
	return n;
}
