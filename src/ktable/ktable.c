/* ktable.c - turns compiled unwind tables into BPF map images (one inner
 * array of row chunks and one of block-index entries per module, sized to the
 * module) and keeps the per-process mapping tables the in-kernel walk
 * resolves pcs with. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/log.h"
#include "ktable/kunwind_layout.h"
#include "ktable/ktable.h"
#include "table/unwind_table.h"

_Static_assert(UT_CFA_NONE == KU_CFA_NONE && UT_CFA_RSP == KU_CFA_RSP &&
		       UT_CFA_RBP == KU_CFA_RBP && UT_CFA_PLT == KU_CFA_PLT &&
		       UT_CFA_UNDEFINED_RA == KU_CFA_UNDEFINED_RA &&
		       UT_CFA_DWARF == KU_CFA_DWARF,
	       "BPF row kinds follow the table's");
_Static_assert(UT_RBP_SAME == KU_REG_SAME && UT_RBP_CFA_OFF == KU_REG_CFA_OFF &&
		       UT_RBP_UNDEFINED == KU_REG_UNDEFINED,
	       "BPF register rules follow the table's");
_Static_assert(MODULE_MAX_SIGRETURN <= KU_MAX_SIGRETURN,
	       "every trampoline of a module fits the BPF module entry");

/* One loaded module. While pending, its inner maps are filled (fds
 * open) but not yet in the outer maps, and its entry not yet written. */
struct ktable_module {
	struct module *mod;	/* holds a reference */
	uint32_t id;
	size_t rows;
	size_t bytes;		/* memlock of its two inner maps */
	struct ku_module entry;
	int rows_fd, blocks_fd;	/* -1 once published (or without rows) */
	bool pending;
};

/* Invariant: mods[i].id == i (ids are handed out in order and never
 * reused while the ktable lives, so a process table never names a module
 * whose entry was replaced). The fds are the shared maps, -1 when absent. */
struct ktable {
	struct stacksnap_ctx *ctx;
	int rows_fd, blocks_fd, modules_fd, ids_fd, procs_fd;
	int rows_tmpl_fd, blocks_tmpl_fd; /* inner-map templates */
	struct ktable_module *mods;
	size_t nmods, capmods;
	pid_t *procs;		/* pids with a table (for stats/cleanup) */
	size_t nprocs, capprocs;
	uint64_t compile_ns, load_ns;
};

size_t ktable__fd_memlock(int fd)
{
	char path[64], line[128];
	size_t val = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %zu", &val) == 1)
			break;
	fclose(f);
	return val;
}

static int create_map(struct ktable *kt, const char *name, enum bpf_map_type type,
		      uint32_t key_size, uint32_t value_size, uint32_t max,
		      uint32_t flags, int inner_fd)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);
	int fd;

	if (inner_fd >= 0)
		o.inner_map_fd = inner_fd;
	fd = bpf_map_create(type, name, key_size, value_size, max, &o);
	if (fd < 0) {
		int err = -errno;
		char why[320];

		log_err(&kt->ctx->log,
			"cannot create BPF map %s: %s%s%s%s", name, strerror(-err),
			err == -EPERM ? " (" : "",
			err == -EPERM ? stacksnap_why_not_permitted(STACKSNAP_REFUSED_BPF, 0, why,
								    sizeof(why)) : "",
			err == -EPERM ? ")" : "");
		return err;
	}
	return fd;
}

struct ktable *ktable__new(struct stacksnap_ctx *ctx)
{
	struct ktable *kt = calloc(1, sizeof(*kt));
	int fd;

	if (!kt) {
		errno = ENOMEM;
		return NULL;
	}
	kt->ctx = ctx;
	kt->rows_fd = kt->blocks_fd = kt->modules_fd = kt->ids_fd = kt->procs_fd = -1;
	kt->rows_tmpl_fd = kt->blocks_tmpl_fd = -1;
	/* The same shapes as kunwind_walk.bpf.h declares. */
	if ((fd = create_map(kt, "ku_rows_tmpl", BPF_MAP_TYPE_ARRAY, 4,
			     sizeof(struct ku_chunk), 1, BPF_F_INNER_MAP, -1)) < 0)
		goto fail;
	kt->rows_tmpl_fd = fd;
	if ((fd = create_map(kt, "ku_blocks_tmpl", BPF_MAP_TYPE_ARRAY, 4,
			     sizeof(struct ku_block), 1, BPF_F_INNER_MAP, -1)) < 0)
		goto fail;
	kt->blocks_tmpl_fd = fd;
	if ((fd = create_map(kt, "ku_rows", BPF_MAP_TYPE_ARRAY_OF_MAPS, 4, 4,
			     KU_MAX_MODULES, 0, kt->rows_tmpl_fd)) < 0)
		goto fail;
	kt->rows_fd = fd;
	if ((fd = create_map(kt, "ku_blocks", BPF_MAP_TYPE_ARRAY_OF_MAPS, 4, 4,
			     KU_MAX_MODULES, 0, kt->blocks_tmpl_fd)) < 0)
		goto fail;
	kt->blocks_fd = fd;
	if ((fd = create_map(kt, "ku_modules", BPF_MAP_TYPE_ARRAY, 4,
			     sizeof(struct ku_module), KU_MAX_MODULES, 0, -1)) < 0)
		goto fail;
	kt->modules_fd = fd;
	if ((fd = create_map(kt, "ku_module_ids", BPF_MAP_TYPE_HASH,
			     KU_BUILD_ID_MAX, 4, KU_MAX_MODULES,
			     BPF_F_NO_PREALLOC, -1)) < 0)
		goto fail;
	kt->ids_fd = fd;
	if ((fd = create_map(kt, "ku_procs", BPF_MAP_TYPE_HASH, 4,
			     sizeof(struct ku_proc), KU_MAX_PROCS,
			     BPF_F_NO_PREALLOC, -1)) < 0)
		goto fail;
	kt->procs_fd = fd;
	return kt;
fail:
	ktable__free(kt);
	errno = -fd;
	return NULL;
}

void ktable__free(struct ktable *kt)
{
	if (!kt)
		return;

	int *fds[] = { &kt->rows_fd, &kt->blocks_fd, &kt->modules_fd,
		       &kt->ids_fd, &kt->procs_fd, &kt->rows_tmpl_fd,
		       &kt->blocks_tmpl_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	for (size_t i = 0; i < kt->nmods; i++) {
		if (kt->mods[i].rows_fd >= 0)
			close(kt->mods[i].rows_fd);
		if (kt->mods[i].blocks_fd >= 0)
			close(kt->mods[i].blocks_fd);
		module__put(kt->mods[i].mod);
	}
	free(kt->mods);
	free(kt->procs);
	free(kt);
}

int ktable__reuse_maps(struct ktable *kt, struct bpf_object *obj)
{
	const struct {
		const char *name;
		int fd;
	} maps[] = {
		{ "ku_rows", kt->rows_fd },	    { "ku_blocks", kt->blocks_fd },
		{ "ku_modules", kt->modules_fd },   { "ku_module_ids", kt->ids_fd },
		{ "ku_procs", kt->procs_fd },
	};

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, maps[i].name);
		int err;

		if (!m)
			continue;
		err = bpf_map__reuse_fd(m, maps[i].fd);
		if (err) {
			log_err(&kt->ctx->log, "BPF map %s: cannot share it: %s",
				maps[i].name, strerror(-err));
			return fail(err);
		}
	}
	return 0;
}

const struct unwind_table *ktable__module_table(struct stacksnap_ctx *ctx,
						struct module *m)
{
	return module__table_whole(ctx, m); /* every row goes into the maps */
}

/* Fills an array map with n values of size elem, keys 0..n-1. */
static int fill_array(int fd, const void *values, size_t n)
{
	uint32_t *keys = malloc(n * sizeof(*keys));
	__u32 count = (__u32)n;
	int err;

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		keys[i] = (uint32_t)i;
	err = bpf_map_update_batch(fd, keys, values, &count, NULL);
	free(keys);
	return err ? -errno : 0;
}

static void module_key(const struct module *m, uint8_t key[KU_BUILD_ID_MAX])
{
	memset(key, 0, KU_BUILD_ID_MAX);
	if (m->img->build_id_len) {
		memcpy(key, m->img->build_id,
		       m->img->build_id_len < KU_BUILD_ID_MAX ? m->img->build_id_len
							      : KU_BUILD_ID_MAX);
		return;
	}
	/* No build-id: the module cache already made the module unique
	 * (device, inode, mtime); a key that cannot be a SHA-1 build-id
	 * names it by its address here. */
	uintptr_t p = (uintptr_t)m;
	memcpy(key, "nobuildid", 9);
	memcpy(key + 12, &p, sizeof(p));
}

/* Creates and fills module m's inner maps and reserves its id; the outer
 * maps and its module entry are written by commit_pending(), for every
 * module of a refresh at once: each write to a map-in-map from user space
 * waits for an RCU grace period (tens of ms on a loaded machine), a batch
 * waits once. */
static int load_pending(struct ktable *kt, struct module *m, uint32_t *id)
{
	const struct unwind_table *t;
	struct ktable_module *km;
	struct ku_chunk *chunks = NULL;
	struct ku_block *blocks = NULL;
	size_t nchunks;
	int err = 0;
	uint64_t t0;

	for (size_t i = 0; i < kt->nmods; i++) {
		if (kt->mods[i].mod == m) {
			*id = kt->mods[i].id;
			return 0;
		}
	}
	if (kt->nmods >= KU_MAX_MODULES)
		return -ENOSPC;
	if (kt->nmods == kt->capmods) {
		size_t cap = kt->capmods ? kt->capmods * 2 : 16;
		struct ktable_module *n = realloc(kt->mods, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		kt->mods = n;
		kt->capmods = cap;
	}
	t0 = clock_monotonic_ns();
	t = ktable__module_table(kt->ctx, m);
	kt->compile_ns += clock_monotonic_ns() - t0;
	t0 = clock_monotonic_ns();
	km = &kt->mods[kt->nmods];
	*km = (struct ktable_module){ .mod = m, .id = (uint32_t)kt->nmods,
				      .rows_fd = -1, .blocks_fd = -1,
				      .pending = true };
	km->entry.nsigreturn = m->nsigreturn;
	for (unsigned i = 0; i < m->nsigreturn; i++)
		km->entry.sigreturn[i] = m->sigreturn[i];
	if (t && t->nrows) {
		km->entry.lo = t->lo;
		km->entry.hi = t->hi;
		km->entry.nrows = (uint32_t)t->nrows;
		km->entry.nblocks = (uint32_t)t->nblocks;
		km->entry.block_shift = t->block_shift;
		km->rows = t->nrows;
		nchunks = (t->nrows + KU_CHUNK - 1) / KU_CHUNK;
		chunks = malloc(nchunks * sizeof(*chunks));
		blocks = malloc((t->nblocks + 1) * sizeof(*blocks));
		if (!chunks || !blocks) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < nchunks * KU_CHUNK; i++) {
			const struct unwind_row *r = &t->rows[i < t->nrows ? i : 0];
			struct ku_chunk *c = &chunks[i / KU_CHUNK];

			c->start[i % KU_CHUNK] = i < t->nrows ? t->starts[i] : KU_CHUNK_PAD;
			c->row[i % KU_CHUNK] = (struct ku_row){
				.cfa_off = r->cfa_off,
				.rbp_off = r->rbp_off,
				.rbx_off = r->rbx_off,
				.cfa_kind = r->cfa_kind,
				.reg_kinds = (uint8_t)(r->rbp_kind | r->rbx_kind << 4),
			};
		}
		for (size_t b = 0; b <= t->nblocks; b++)
			blocks[b] = (struct ku_block){
				.lo = t->block[b],
				.hi = t->block[b < t->nblocks ? b + 1 : b],
			};
		km->rows_fd = create_map(kt, "ku_mod_rows", BPF_MAP_TYPE_ARRAY, 4,
					 sizeof(struct ku_chunk), (uint32_t)nchunks,
					 BPF_F_INNER_MAP, -1);
		km->blocks_fd = create_map(kt, "ku_mod_blocks", BPF_MAP_TYPE_ARRAY,
					   4, sizeof(struct ku_block),
					   (uint32_t)t->nblocks + 1, BPF_F_INNER_MAP, -1);
		if (km->rows_fd < 0 || km->blocks_fd < 0) {
			err = km->rows_fd < 0 ? km->rows_fd : km->blocks_fd;
			goto out;
		}
		if ((err = fill_array(km->rows_fd, chunks, nchunks)) ||
		    (err = fill_array(km->blocks_fd, blocks, t->nblocks + 1)))
			goto out;
		km->bytes = ktable__fd_memlock(km->rows_fd) +
			    ktable__fd_memlock(km->blocks_fd);
	}
	m->refs++;
	*id = km->id;
	kt->nmods++;
out:
	kt->load_ns += clock_monotonic_ns() - t0;
	free(chunks);
	free(blocks);
	if (err) {
		log_err(&kt->ctx->log, "%s: cannot load its unwind table into BPF maps: %s",
			m->name, strerror(-err));
		if (km->rows_fd >= 0)
			close(km->rows_fd);
		if (km->blocks_fd >= 0)
			close(km->blocks_fd);
	}
	return err;
}

/* Publishes the pending modules: inner maps into the outer ones (one
 * batch each), then the module entries, which the walk checks first. */
static int commit_pending(struct ktable *kt)
{
	uint32_t *keys = NULL;
	int *rows = NULL, *blocks = NULL, err = 0;
	__u32 n = 0, count;
	uint64_t t0 = clock_monotonic_ns();

	keys = malloc(kt->nmods * sizeof(*keys));
	rows = malloc(kt->nmods * sizeof(*rows));
	blocks = malloc(kt->nmods * sizeof(*blocks));
	if (!keys || !rows || !blocks) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < kt->nmods; i++) {
		struct ktable_module *km = &kt->mods[i];

		if (km->pending && km->rows_fd >= 0) {
			keys[n] = km->id;
			rows[n] = km->rows_fd;
			blocks[n] = km->blocks_fd;
			n++;
		}
	}
	if (n) {
		count = n;
		if (bpf_map_update_batch(kt->rows_fd, keys, rows, &count, NULL)) {
			err = -errno;
			goto out;
		}
		count = n;
		if (bpf_map_update_batch(kt->blocks_fd, keys, blocks, &count, NULL)) {
			err = -errno;
			goto out;
		}
	}
	for (size_t i = 0; i < kt->nmods; i++) {
		struct ktable_module *km = &kt->mods[i];
		uint8_t key[KU_BUILD_ID_MAX];

		if (!km->pending)
			continue;
		km->entry.loaded = 1;
		if (bpf_map_update_elem(kt->modules_fd, &km->id, &km->entry, BPF_ANY)) {
			err = -errno;
			goto out;
		}
		module_key(km->mod, key);
		bpf_map_update_elem(kt->ids_fd, key, &km->id, BPF_ANY);
		km->pending = false;
		/* The outer maps hold the inner ones now. */
		if (km->rows_fd >= 0)
			close(km->rows_fd);
		if (km->blocks_fd >= 0)
			close(km->blocks_fd);
		km->rows_fd = km->blocks_fd = -1;
		log_debug(&kt->ctx->log, "%s: table loaded as BPF module %u (%zu rows)",
			  km->mod->name, km->id, km->rows);
	}
out:
	kt->load_ns += clock_monotonic_ns() - t0;
	if (err)
		log_err(&kt->ctx->log, "cannot publish unwind tables in BPF maps: %s",
			strerror(-err));
	free(keys);
	free(rows);
	free(blocks);
	return err;
}

int ktable__load_module(struct ktable *kt, struct module *m, uint32_t *id)
{
	int err = load_pending(kt, m, id);

	if (!err)
		err = commit_pending(kt);
	return err ? fail(err) : 0;
}

int ktable__set_process(struct ktable *kt, pid_t pid,
			struct stacksnap_addrspace *as)
{
	struct ku_proc *p = calloc(1, sizeof(*p));
	uint32_t key = (uint32_t)pid;
	int err = 0;

	if (!p)
		return fail(-ENOMEM);
	addrspace__resolve_all(as); /* every code mapping's module */
	for (size_t i = 0; i < as->n; i++) {
		const struct as_map *am = &as->maps[i];
		struct ku_map *km;

		if (!(am->prot & PROT_EXEC))
			continue;
		if (p->n == KU_MAX_MAPS) {
			log_warn(&kt->ctx->log,
				 "pid %d: more than %d executable mappings; "
				 "pcs above %#llx are not unwound in the kernel",
				 pid, KU_MAX_MAPS, (unsigned long long)am->start);
			err = -E2BIG;
			break;
		}
		km = &p->maps[p->n];
		km->start = am->start;
		km->end = am->end;
		km->bias = am->bias;
		km->module = KU_NO_MODULE;
		if (am->mod && load_pending(kt, am->mod, &km->module))
			km->module = KU_NO_MODULE; /* frame pointers there */
		p->n++;
	}
	if ((err = commit_pending(kt)))
		goto out;
	/* Rewrites are whole: a walk sees either the old or the new table. */
	if (bpf_map_update_elem(kt->procs_fd, &key, p, BPF_ANY)) {
		err = -errno;
		log_err(&kt->ctx->log, "pid %d: cannot write its BPF mapping table: %s",
			pid, strerror(errno));
	} else {
		bool known = false;

		for (size_t i = 0; i < kt->nprocs; i++)
			known |= kt->procs[i] == pid;
		if (!known) {
			if (kt->nprocs == kt->capprocs) {
				size_t cap = kt->capprocs ? kt->capprocs * 2 : 16;
				pid_t *n = realloc(kt->procs, cap * sizeof(*n));

				if (n) {
					kt->procs = n;
					kt->capprocs = cap;
				}
			}
			if (kt->nprocs < kt->capprocs)
				kt->procs[kt->nprocs++] = pid;
		}
	}
out:
	free(p);
	return err ? fail(err) : 0;
}

int ktable__remove_process(struct ktable *kt, pid_t pid)
{
	uint32_t key = (uint32_t)pid;

	for (size_t i = 0; i < kt->nprocs; i++) {
		if (kt->procs[i] == pid) {
			kt->procs[i] = kt->procs[--kt->nprocs];
			break;
		}
	}
	if (bpf_map_delete_elem(kt->procs_fd, &key) && errno != ENOENT)
		return fail(-errno);
	return 0;
}

void ktable__stats(struct ktable *kt, struct ktable_stats *st)
{
	int fixed[] = { kt->rows_fd, kt->blocks_fd, kt->modules_fd, kt->ids_fd,
			kt->rows_tmpl_fd, kt->blocks_tmpl_fd };

	memset(st, 0, sizeof(*st));
	st->modules = (unsigned)kt->nmods;
	st->procs = (unsigned)kt->nprocs;
	for (size_t i = 0; i < kt->nmods; i++) {
		st->rows += kt->mods[i].rows;
		st->table_bytes += kt->mods[i].bytes;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		st->fixed_bytes += ktable__fd_memlock(fixed[i]);
	/* The process tables allocate per entry (no prealloc): count them
	 * at their value size. */
	st->fixed_bytes += kt->nprocs * sizeof(struct ku_proc);
	st->compile_ns = kt->compile_ns;
	st->load_ns = kt->load_ns;
}

bool ktable__can_continue(unsigned end)
{
	return end == KU_END_DWARF || end == KU_END_NO_CFI || end == KU_END_BAD_CFI ||
	       end == KU_END_BAD_MEMORY;
}

int ktable__continue_walk(struct stacksnap_procs *procs, struct stacksnap_unwinder *uw,
			  pid_t pid, pid_t tid, const struct ku_end_state *es,
			  const void *stack, size_t stack_len, uint64_t stack_start,
			  struct stacksnap_frame *frames, size_t max,
			  enum stacksnap_end *end)
{
	struct stacksnap_regs regs = { .valid = 0 };
	uint64_t pc = es->pc & ~KU_PC_EXACT;
	int n;

	if (!ktable__can_continue(es->end))
		return -ENOENT;
	if (!stack || es->sp < stack_start || es->sp >= stack_start + stack_len)
		return -ERANGE;
	/* The user-space walk takes its first pc as exact (looked up at
	 * pc); a return address is looked up at pc - 1, inside the call:
	 * start there, then give the frame its pc back. */
	regs.regs[STACKSNAP_REG_RIP] = es->pc & KU_PC_EXACT ? pc : pc - 1;
	regs.regs[STACKSNAP_REG_RSP] = es->sp;
	regs.regs[STACKSNAP_REG_RBP] = es->rbp;
	regs.regs[STACKSNAP_REG_RBX] = es->rbx;
	regs.valid = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP |
		     (es->valid & KU_VALID_RBP ? 1u << STACKSNAP_REG_RBP : 0) |
		     (es->valid & KU_VALID_RBX ? 1u << STACKSNAP_REG_RBX : 0);
	STACKSNAP_OPTS(stacksnap_sample, s, .pid = pid, .tid = tid, .regs = &regs,
		       .stack = stack, .stack_len = stack_len,
		       .stack_start = stack_start);
	n = stacksnap_procs__unwind_sample(procs, uw, &s, frames, max, end);
	if (n > 0)
		frames[0].pc = pc;
	return n;
}
