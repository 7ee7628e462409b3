/* process_map.c - a table of processes followed over time from events
 * (mmap, fork/clone, exec, exit, comm, as perf records them), and the
 * unwinding of one sample (registers + stack copy) against the mappings of
 * its process at the time. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "base/clock.h"
#include "base/opts.h"
#include "addrspace/addrspace.h"
#include "symbolize/jit_symbols.h"
#include "base/vec.h"
#include "mem/mem.h"
#include "mem/compact_stack.h"

/* One process. Invariant: as is never NULL; dead is set once its main
 * thread exited, and the entry is replaced when the pid comes back. */
struct proc {
	pid_t pid;
	bool dead;
	struct stacksnap_addrspace *as;
	uint64_t reread_ns;	/* last re-read of /proc/PID/maps on a miss */
	uint64_t miss_pc;	/* a pc still unmapped after that re-read */
};

/* One thread. comm is NUL-terminated (the kernel's TASK_COMM_LEN). */
struct thread {
	pid_t tid;
	pid_t pid;
	char comm[16];
};

/* Open-addressing tables keyed by pid / tid (never 0 or negative: slot
 * key 0 means empty). Nothing is deleted: a reused id overwrites its
 * entry, so memory follows the number of processes and threads seen,
 * never the number of samples. Invariant: n < cap / 2 + 1, cap a power of
 * two (or 0). */
struct stacksnap_procs {
	struct stacksnap_ctx *ctx;
	struct proc *procs;
	size_t nprocs, capprocs;
	struct thread *threads;
	size_t nthreads, capthreads;
	struct stacksnap_mem *copy;	/* reused for every sample */
	struct module *vdso;		/* our own vDSO image, NULL if none */
	bool vdso_tried;
	uint64_t generation;		/* code mappings changed */
	uint64_t rereads;		/* maps re-read by unwind_capture */
	uint8_t *expanded;		/* a compacted capture, expanded */
	size_t expanded_cap;
	bool from_records;		/* procs_set_from_records */
};

static size_t id_hash(pid_t id, size_t cap)
{
	return ((uint32_t)id * 2654435761u) & (cap - 1);
}

/* The slot for id in a table of elements of size elem whose first member
 * is the pid_t key: the one holding id, or the empty one where it goes. */
static void *slot_of(void *tab, size_t cap, size_t elem, pid_t id)
{
	for (size_t i = id_hash(id, cap);; i = (i + 1) & (cap - 1)) {
		pid_t *k = (pid_t *)((char *)tab + i * elem);

		if (*k == id || *k == 0)
			return k;
	}
}

/* Doubles a table when it is half full, rehashing its entries. */
static int table_grow(void **tab, size_t *n, size_t *cap, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 64;
	void *nt;

	if (*cap && *n + 1 < *cap / 2)
		return 0;
	nt = calloc(ncap, elem);
	if (!nt)
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		pid_t *k = (pid_t *)((char *)*tab + i * elem);

		if (*k)
			memcpy(slot_of(nt, ncap, elem, *k), k, elem);
	}
	free(*tab);
	*tab = nt;
	*cap = ncap;
	return 0;
}

static struct proc *proc_find(struct stacksnap_procs *p, pid_t pid)
{
	struct proc *e;

	if (!p->capprocs || pid <= 0)
		return NULL;
	e = slot_of(p->procs, p->capprocs, sizeof(*e), pid);
	return e->pid ? e : NULL;
}

static struct thread *thread_find(struct stacksnap_procs *p, pid_t tid)
{
	struct thread *t;

	if (!p->capthreads || tid <= 0)
		return NULL;
	t = slot_of(p->threads, p->capthreads, sizeof(*t), tid);
	return t->tid ? t : NULL;
}

/* The process pid, created empty (or from a copy of src) when new or dead
 * and a fresh one is asked for. */
static struct proc *proc_get(struct stacksnap_procs *p, pid_t pid,
			     const struct stacksnap_addrspace *src, bool fresh)
{
	struct proc *e = proc_find(p, pid);
	struct stacksnap_addrspace *as;

	if (e && !(fresh && (e->dead || src)))
		return e;
	if (pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	as = src ? addrspace__clone(src) : stacksnap_addrspace__new(p->ctx);
	if (!as)
		return NULL;
	/* JIT code of a recorded process is named from its perf map, as
	 * `perf script` names it (opened at the first such pc). */
	addrspace__set_jit(as, jit_symbols__new_recorded(pid, &p->ctx->log));
	if (!e) {
		if (table_grow((void **)&p->procs, &p->nprocs, &p->capprocs,
			       sizeof(*e))) {
			stacksnap_addrspace__free(as);
			errno = ENOMEM;
			return NULL;
		}
		e = slot_of(p->procs, p->capprocs, sizeof(*e), pid);
		p->nprocs++;
	} else {
		stacksnap_addrspace__free(e->as);
	}
	e->pid = pid;
	e->dead = false;
	e->as = as;
	p->generation++;
	return e;
}

static struct thread *thread_get(struct stacksnap_procs *p, pid_t tid)
{
	struct thread *t = thread_find(p, tid);

	if (t)
		return t;
	if (tid <= 0 || table_grow((void **)&p->threads, &p->nthreads,
				   &p->capthreads, sizeof(*t)))
		return NULL;
	t = slot_of(p->threads, p->capthreads, sizeof(*t), tid);
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	p->nthreads++;
	return t;
}

struct stacksnap_procs *stacksnap_procs__new(struct stacksnap_ctx *ctx,
					     const struct stacksnap_procs_opts *opts)
{
	struct stacksnap_procs *p;
	struct stacksnap_procs_opts o;

	if (!ctx || opts_in(&o, sizeof(o), opts, 0)) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->copy = stacksnap_mem__new_copy(NULL, 0, 0))) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->ctx = ctx;
	return p;
}

void stacksnap_procs__free(struct stacksnap_procs *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->capprocs; i++)
		if (p->procs[i].pid)
			stacksnap_addrspace__free(p->procs[i].as);
	free(p->procs);
	free(p->threads);
	stacksnap_mem__free(p->copy);
	module__put(p->vdso);
	free(p->expanded);
	free(p);
}

/* Bytes of our own vDSO image: up to the end of its section headers or
 * of its last segment, whichever is further (its ELF header is trusted:
 * the kernel made it). */
static size_t vdso_size(const void *base)
{
	const Elf64_Ehdr *eh = base;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)base + eh->e_phoff);
	size_t size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;

	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_offset + ph[i].p_filesz > size)
			size = ph[i].p_offset + ph[i].p_filesz;
	return size;
}

/* The vDSO of this process: samples recorded on this kernel ran the same
 * image, which perf does not save in the file. A build-id from the
 * recording that differs means another kernel: then there is none. */
static struct module *vdso_module(struct stacksnap_procs *p,
				  const struct stacksnap_mapping *map)
{
	if (!p->vdso_tried) {
		unsigned long base = getauxval(AT_SYSINFO_EHDR);
		struct elf_image *img;

		p->vdso_tried = true;
		if (base && !elf_image__open_mem((const void *)base,
						  vdso_size((const void *)base),
						  "[vdso]", &p->ctx->log, &img) &&
		    module__get_image(p->ctx, "[vdso]", img, &p->vdso))
			p->vdso = NULL;
	}
	if (p->vdso && map->build_id && map->build_id_len &&
	    (map->build_id_len < p->vdso->img->build_id_len ||
	     memcmp(map->build_id, p->vdso->img->build_id,
		    p->vdso->img->build_id_len)))
		return NULL;
	return p->vdso;
}

int stacksnap_procs__mmap(struct stacksnap_procs *p, pid_t pid,
			  const struct stacksnap_mapping *map)
{
	struct proc *e;
	int err;

	struct stacksnap_mapping m;

	if (!p || !map ||
	    opts_in(&m, sizeof(m), map, offsetof(struct stacksnap_mapping, path)))
		return fail(-EINVAL);
	e = proc_get(p, pid, NULL, false);
	if (!e)
		return fail(-errno);
	m.sz = sizeof(m);
	if (m.prot && !(m.prot & PROT_EXEC)) {
		/* A data mapping over code replaces it. Only code needs a
		 * module; data mappings are not kept. */
		if (!addrspace__find(e->as, m.start) &&
		    !addrspace__find(e->as, m.end - 1))
			return 0;
		p->generation++;
		return stacksnap_addrspace__remove_range(e->as, m.start, m.end);
	}
	p->generation++;
	if (m.path && !strcmp(m.path, "[vdso]")) {
		struct module *vdso = vdso_module(p, &m);

		if (vdso) {
			err = addrspace__add_with_module(e->as, &m, vdso);
			return err ? fail(err) : 0;
		}
	}
	return stacksnap_addrspace__add_mapping(e->as, &m);
}

int stacksnap_procs__munmap(struct stacksnap_procs *p, pid_t pid,
			    uint64_t start, uint64_t end)
{
	struct proc *e;

	if (!p)
		return fail(-EINVAL);
	e = proc_find(p, pid);
	if (!e)
		return 0;
	p->generation++;
	return stacksnap_addrspace__remove_range(e->as, start, end);
}

int stacksnap_procs__fork(struct stacksnap_procs *p, pid_t ppid, pid_t ptid,
			  pid_t pid, pid_t tid)
{
	struct thread *t, *parent;

	if (!p || pid <= 0 || tid <= 0)
		return fail(-EINVAL);
	if (pid != ppid) {
		struct proc *pe = proc_find(p, ppid);

		/* Without a known parent the child starts empty; its
		 * mmaps follow. */
		if (!proc_get(p, pid, pe ? pe->as : NULL, true))
			return fail(-errno);
	} else if (!proc_get(p, pid, NULL, false)) {
		return fail(-errno);
	}
	t = thread_get(p, tid);
	if (!t)
		return fail(-ENOMEM);
	parent = thread_find(p, ptid);
	t->pid = pid;
	if (parent && parent != t)
		memcpy(t->comm, parent->comm, sizeof(t->comm));
	return 0;
}

int stacksnap_procs__comm(struct stacksnap_procs *p, pid_t pid, pid_t tid,
			  const char *comm, bool exec)
{
	struct thread *t;

	if (!p || !comm)
		return fail(-EINVAL);
	if (exec) {
		struct proc *e = proc_find(p, pid);

		/* execve() replaced the image: the mmaps of the new one
		 * follow this record. */
		if (e && e->as->n)
			stacksnap_addrspace__remove_range(e->as, 0, UINT64_MAX);
		else if (!e && !proc_get(p, pid, NULL, false))
			return fail(-errno);
		p->generation++;
	}
	t = thread_get(p, tid);
	if (!t)
		return fail(-ENOMEM);
	t->pid = pid;
	strncpy(t->comm, comm, sizeof(t->comm) - 1);
	t->comm[sizeof(t->comm) - 1] = 0;
	return 0;
}

int stacksnap_procs__exit(struct stacksnap_procs *p, pid_t pid, pid_t tid)
{
	struct proc *e;

	if (!p)
		return fail(-EINVAL);
	e = proc_find(p, pid);
	if (e && pid == tid)
		e->dead = true;
	return 0;
}

int stacksnap_procs__attach_pid(struct stacksnap_procs *p, pid_t pid)
{
	struct stacksnap_addrspace *as;
	struct proc *e;

	if (!p || pid <= 0)
		return fail(-EINVAL);
	as = stacksnap_addrspace__from_pid(p->ctx, pid);
	if (!as)
		return fail(-errno);
	e = proc_get(p, pid, NULL, false);
	if (!e) {
		int err = -errno;

		stacksnap_addrspace__free(as);
		return fail(err);
	}
	stacksnap_addrspace__free(e->as);
	e->as = as;
	e->dead = false;
	p->generation++;
	return 0;
}

struct stacksnap_addrspace *stacksnap_procs__addrspace(struct stacksnap_procs *p,
							pid_t pid)
{
	struct proc *e;

	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	e = proc_get(p, pid, NULL, false);
	return e ? e->as : NULL;
}

const char *stacksnap_procs__comm_of(struct stacksnap_procs *p, pid_t tid)
{
	struct thread *t = p ? thread_find(p, tid) : NULL;

	return t && t->comm[0] ? t->comm : NULL;
}

uint64_t stacksnap_procs__generation(const struct stacksnap_procs *p)
{
	return p ? p->generation : 0;
}

int stacksnap_procs__unwind_sample(struct stacksnap_procs *p,
				   struct stacksnap_unwinder *uw,
				   const struct stacksnap_sample *s,
				   struct stacksnap_frame *frames, size_t max,
				   enum stacksnap_end *end)
{
	struct stacksnap_regs regs;
	struct stacksnap_sample smp;
	struct proc *e;

	if (!p || !uw || !s ||
	    opts_in(&smp, sizeof(smp), s, offsetof(struct stacksnap_sample, stack_start)))
		return fail(-EINVAL);
	s = &smp; /* fields past the caller's struct read as zero */
	if (s->regs)
		regs = *s->regs;
	else if (s->perf_regs)
		stacksnap_regs__from_perf(&regs, s->perf_regs_mask, s->perf_regs);
	else
		return fail(-EINVAL);
	uint64_t start = s->stack_start ? s->stack_start : regs.regs[STACKSNAP_REG_RSP];
	e = proc_get(p, s->pid, NULL, false);
	if (!e)
		return fail(-errno);
	stacksnap_mem__set_copy(p->copy, s->stack, s->stack ? s->stack_len : 0,
				start);
	return stacksnap_unwind(uw, e->as, &regs, p->copy, frames, max, end);
}

int stacksnap_addrspace__find_mapping(struct stacksnap_addrspace *as,
				      uint64_t addr, struct stacksnap_mapping *out)
{
	const struct as_map *m;
	struct stacksnap_mapping r = { .sz = sizeof(r) };

	if (!as || !out || out->sz < offsetof(struct stacksnap_mapping, path))
		return fail(-EINVAL);
	m = addrspace__find(as, addr);
	if (!m)
		return fail(-ENOENT); /* errno too, as every negative return */
	r.start = m->start;
	r.end = m->end;
	r.offset = m->offset;
	r.path = m->path ? m->path : m->mod ? m->mod->name : NULL;
	r.prot = m->prot;
	if (m->mod && m->mod->img->build_id_len) {
		r.build_id = m->mod->img->build_id;
		r.build_id_len = m->mod->img->build_id_len;
	}
	return opts_out(out, &r, sizeof(r), offsetof(struct stacksnap_mapping, path))
		       ? fail(-EINVAL) : 0;
}

int stacksnap_procs__apply_perf_event(struct stacksnap_procs *p,
				      const struct stacksnap_perf_event *ev)
{
	if (!p || !ev)
		return fail(-EINVAL);
	switch (ev->type) {
	case STACKSNAP_PERF_MMAP:
		if (ev->pid <= 0)
			return 0; /* the kernel's and modules' maps */
		return stacksnap_procs__mmap(p, ev->pid, &ev->map);
	case STACKSNAP_PERF_COMM:
		return stacksnap_procs__comm(p, ev->pid, ev->tid, ev->comm,
					     ev->exec);
	case STACKSNAP_PERF_FORK:
		return stacksnap_procs__fork(p, ev->ppid, ev->ptid, ev->pid,
					     ev->tid);
	case STACKSNAP_PERF_EXIT:
		return stacksnap_procs__exit(p, ev->pid, ev->tid);
	default:
		return 0;
	}
}

/* The miss re-read under the kernel's records: the maps as they are now
 * fill the gaps of e's mappings, which stay as the records made them (a
 * library dlclose()d since, still in the events queued before). */
static int reread_merge(struct stacksnap_procs *p, struct proc *e)
{
	struct stacksnap_addrspace *now = stacksnap_addrspace__from_pid(p->ctx, e->pid);
	int added;

	if (!now)
		return -errno;
	added = addrspace__merge_new(e->as, now);
	stacksnap_addrspace__free(now);
	if (added < 0)
		return added;
	if (added)
		p->generation++;
	return 0;
}

void procs_set_from_records(struct stacksnap_procs *p, bool on)
{
	p->from_records = on;
}

int stacksnap_procs__unwind_capture(struct stacksnap_procs *p,
				    struct stacksnap_unwinder *uw, pid_t pid,
				    const struct stacksnap_capture *cap,
				    const void *stack, struct stacksnap_frame *frames,
				    size_t max, enum stacksnap_end *end)
{
	struct stacksnap_regs regs;
	int n;

	if (!p || !cap || !end || !(cap->flags & STACKSNAP_CAPTURE_REGS))
		return fail(-EINVAL);
	if (cap->flags & STACKSNAP_CAPTURE_COMPACT) {
		if (cap->stack_len > p->expanded_cap) {
			uint8_t *b = realloc(p->expanded, cap->stack_len);

			if (!b)
				return fail(-ENOMEM);
			p->expanded = b;
			p->expanded_cap = cap->stack_len;
		}
		if (compact_stack__expand(stack, cap->data_len, cap->stack_len, p->expanded))
			return fail(-EINVAL);
		stack = p->expanded;
	}
	memcpy(regs.regs, cap->regs, sizeof(regs.regs));
	regs.valid = (1u << STACKSNAP_REG_COUNT) - 1;
	STACKSNAP_OPTS(stacksnap_sample, s, .pid = pid, .tid = pid, .regs = &regs,
		       .stack = stack,
		       .stack_len = cap->flags & STACKSNAP_CAPTURE_COMPACT ? cap->stack_len
									  : cap->data_len,
		       .stack_start = cap->stack_start);
	n = stacksnap_procs__unwind_sample(p, uw, &s, frames, max, end);
	if (n >= 0 && (*end == STACKSNAP_END_NO_MODULE || *end == STACKSNAP_END_BAD_PC ||
		       *end == STACKSNAP_END_NO_CFI)) {
		/* The walk met a pc outside every known mapping (or code
		 * without unwind information, which may be the same): a
		 * library mapped since the maps were read (dlopen, or ld.so
		 * after exec). Re-read at once for a new place of failure, at
		 * most every 10 ms for one that a re-read did not cure (JIT
		 * code, a uretprobe trampoline). */
		struct proc *e = proc_find(p, pid);
		uint64_t now = clock_monotonic_ns();
		uint64_t where = n ? frames[n - 1].pc : regs.regs[STACKSNAP_REG_RIP];

		if (e && !e->dead && (where != e->miss_pc || now - e->reread_ns > 10000000u) &&
		    (p->from_records ? reread_merge(p, e) : stacksnap_procs__attach_pid(p, pid)) == 0) {
			e = proc_find(p, pid);
			e->reread_ns = now;
			p->rereads++;
			n = stacksnap_procs__unwind_sample(p, uw, &s, frames, max, end);
			e->miss_pc = n >= 0 && *end != STACKSNAP_END_COMPLETE ? where : 0;
		}
	}
	return n;
}

uint64_t procs_rereads(const struct stacksnap_procs *p)
{
	return p->rereads;
}

bool procs_alive(const struct stacksnap_procs *p, pid_t pid)
{
	const struct proc *e = proc_find((struct stacksnap_procs *)p, pid);

	return e && !e->dead;
}

void procs_set_more(struct stacksnap_procs *p,
		    const struct stacksnap_stack_range *ranges, size_t n)
{
	stacksnap_mem__set_more(p->copy, ranges, n);
}
