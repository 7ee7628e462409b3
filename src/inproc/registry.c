/* registry.c - the in-process backtrace's module registry: modules found
 * by glibc's lock-free _dl_find_object, their .eh_frame_hdr and .eh_frame
 * read from memory, the row caches a walk publishes lock-free for each
 * module it meets, and the unwind tables that stacksnap_backtrace_prepare
 * compiles outside signal context, published with release stores for the
 * signal-safe walk to find with acquire loads. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/log.h"
#include "base/opts.h"
#include "base/vec.h"
#include "inproc/inproc.h"
#include "stacksnap.h"

/* Registry size: modules with a table. A process that loads more distinct
 * modules walks the rest by interpreting their .eh_frame. */
#define REG_SLOTS 1024

/* One published module: its row cache, and its table once prepare has
 * compiled one. Invariant: claimed == 0 means empty (and ends a probe);
 * a writer (a walk or prepare) takes the slot by setting claimed with a
 * compare-and-swap, writes every field, then stores start (release):
 * start == 0 with claimed set is a slot being written, which a probe
 * steps over. After start is stored nothing changes but table, set once
 * from NULL (release; read with acquire) by prepare under prepare_lock.
 * A slot is never reused, so a reader that matched start reads a
 * consistent entry. A module unloaded and another loaded at the same
 * address is told apart by end, hdr and fingerprint; it goes into
 * another slot. Two walks meeting a new module at once may publish a
 * slot each: a probe finds the first, the other only costs its memory. */
struct reg_slot {
	_Atomic(uintptr_t) start; /* the module's dlfo_map_start */
	_Atomic(unsigned) claimed;
	uintptr_t end;
	const uint8_t *hdr;
	uint64_t fingerprint;	  /* of the .eh_frame_hdr's contents */
	_Atomic(struct unwind_table *) table;
	_Atomic(uint64_t) *row_cache; /* INPROC_ROW_CACHE words, or NULL */
	uint64_t bias;
};

static struct reg_slot slots[REG_SLOTS];
static pthread_mutex_t prepare_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(unsigned) nslots_used;	/* slots claimed */
static _Atomic(unsigned) ntables;	/* tables published by prepare */
/* Frames stepped by interpreting .eh_frame (no table yet), for stats. */
_Atomic(uint64_t) inproc_interpreted_frames;

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_datarel_sdata4 0x3b

/* Reads a value of .eh_frame_hdr in encoding enc at *p (inside [p, lim)),
 * the forms linkers write there: absolute or pc-relative or relative to
 * the header, 4 or 8 bytes. Advances *p. Returns 0 or -ENOENT. */
static int hdr_value(const uint8_t *hdr, const uint8_t **p, const uint8_t *lim,
		     uint8_t enc, uint64_t *out)
{
	const uint8_t *at = *p;
	uint64_t v;

	switch (enc & 0x0f) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		if (lim - at < 8)
			return -ENOENT;
		memcpy(&v, at, 8);
		*p = at + 8;
		break;
	case 0x03: { /* udata4 */
		uint32_t u;

		if (lim - at < 4)
			return -ENOENT;
		memcpy(&u, at, 4);
		v = u;
		*p = at + 4;
		break;
	}
	case 0x0b: { /* sdata4 */
		int32_t s;

		if (lim - at < 4)
			return -ENOENT;
		memcpy(&s, at, 4);
		v = (uint64_t)(int64_t)s;
		*p = at + 4;
		break;
	}
	default:
		return -ENOENT;
	}
	switch (enc & 0x70) {
	case 0x00:
		break;
	case 0x10: /* pcrel */
		v += (uintptr_t)at;
		break;
	case 0x30: /* datarel: relative to the header */
		v += (uintptr_t)hdr;
		break;
	default:
		return -ENOENT;
	}
	*out = v;
	return 0;
}

/* The parsed header: where .eh_frame is, and the search table. */
struct hdr_info {
	uintptr_t eh_frame;
	const uint8_t *table;	/* pairs of int32 (start, fde) relative to hdr */
	uint64_t count;
};

static inline __attribute__((always_inline)) int
hdr_parse(const struct inproc_module *m, struct hdr_info *h)
{
	const uint8_t *hdr = m->hdr, *p, *lim = (const uint8_t *)m->end;
	uint64_t v;

	if (!hdr || (uintptr_t)hdr < m->start || lim - hdr < 4 || hdr[0] != 1)
		return -ENOENT;
	if (hdr[1] == 0x1b && hdr[2] == 0x03 && hdr[3] == 0x3b && lim - hdr >= 12) {
		/* What linkers write (pcrel sdata4 pointer, udata4 count,
		 * datarel sdata4 table), read directly: a walk parses the
		 * header of every module it meets (hdr_fingerprint). */
		int32_t ptr;
		uint32_t count;

		memcpy(&ptr, hdr + 4, 4);
		memcpy(&count, hdr + 8, 4);
		if (count > (uint64_t)(lim - (hdr + 12)) / 8)
			return -ENOENT;
		h->eh_frame = (uintptr_t)(hdr + 4) + (uintptr_t)(intptr_t)ptr;
		h->table = hdr + 12;
		h->count = count;
		return 0;
	}
	p = hdr + 4;
	if (hdr[1] == DW_EH_PE_omit || hdr_value(hdr, &p, lim, hdr[1], &v))
		return -ENOENT;
	h->eh_frame = (uintptr_t)v;
	h->table = NULL;
	h->count = 0;
	if (hdr[2] == DW_EH_PE_omit || hdr[3] != DW_EH_PE_datarel_sdata4 ||
	    hdr_value(hdr, &p, lim, hdr[2], &v))
		return 0; /* no usable search table */
	if (v > (uint64_t)(lim - p) / 8)
		return -ENOENT;
	h->table = p;
	h->count = v;
	return 0;
}

/* Tells a module's header apart from another's at the same address: its
 * size and first and last entries. */
static uint64_t hdr_fingerprint(const struct inproc_module *m)
{
	struct hdr_info h;
	uint64_t fp = 0xcbf29ce484222325ull;
	int32_t e[2];

	if (!m->hdr || hdr_parse(m, &h))
		return 0;
	fp = (fp ^ h.eh_frame) * 0x100000001b3ull;
	fp = (fp ^ h.count) * 0x100000001b3ull;
	if (h.count) {
		memcpy(e, h.table, 8);
		fp = (fp ^ (uint32_t)e[0] ^ (uint64_t)(uint32_t)e[1] << 32) *
		     0x100000001b3ull;
		memcpy(e, h.table + 8 * (h.count - 1), 8);
		fp = (fp ^ (uint32_t)e[0] ^ (uint64_t)(uint32_t)e[1] << 32) *
		     0x100000001b3ull;
	}
	return fp;
}

static size_t slot_hash(uintptr_t start)
{
	return (size_t)(((uint64_t)start >> 12) * 0x9e3779b97f4a7c15ull >> 54) &
	       (REG_SLOTS - 1);
}

/* The published slot for m, or NULL. */
static struct reg_slot *slot_find(const struct inproc_module *m, uint64_t fp)
{
	size_t h = slot_hash(m->start);

	for (size_t i = 0; i < REG_SLOTS; i++) {
		struct reg_slot *s = &slots[(h + i) & (REG_SLOTS - 1)];
		uintptr_t k = atomic_load_explicit(&s->start,
						   memory_order_acquire);

		if (!k) {
			if (!atomic_load_explicit(&s->claimed,
						  memory_order_acquire))
				return NULL;
			continue; /* being written */
		}
		if (k == m->start && s->end == m->end && s->hdr == m->hdr &&
		    s->fingerprint == fp)
			return s;
	}
	return NULL;
}

static const Elf64_Phdr *module_phdrs(const struct inproc_module *m,
				      unsigned *n);

/* Sets m->bias: the mapping start minus the page (4 KiB on x86_64) of the
 * first PT_LOAD's link-time address, where the loader maps it. */
static int module_bias(struct inproc_module *m)
{
	unsigned n;
	const Elf64_Phdr *ph = module_phdrs(m, &n);

	for (unsigned i = 0; ph && i < n; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		m->bias = m->start - (ph[i].p_vaddr & ~(uint64_t)4095);
		return 0;
	}
	return -ENOENT;
}

int inproc_module_find(uintptr_t addr, struct inproc_module *m)
{
	struct dl_find_object dlfo;
	struct reg_slot *s;

	if (_dl_find_object((void *)addr, &dlfo))
		return -ENOENT;
	m->start = (uintptr_t)dlfo.dlfo_map_start;
	m->end = (uintptr_t)dlfo.dlfo_map_end;
	m->hdr = dlfo.dlfo_eh_frame;
	m->table = NULL;
	m->row_cache = NULL;
	if (m->start >= m->end)
		return -ENOENT;
	if (atomic_load_explicit(&nslots_used, memory_order_acquire) &&
	    (s = slot_find(m, hdr_fingerprint(m)))) {
		m->table = atomic_load_explicit(&s->table,
						memory_order_acquire);
		m->row_cache = s->row_cache;
		m->bias = s->bias;
		return 0;
	}
	/* The bias from the module's own program headers rather than its
	 * link_map, which the loader frees on dlclose() (without a lock
	 * this side could take): the mapping starts at the page of the
	 * first PT_LOAD. */
	return module_bias(m);
}

/* The module's program headers, from its ELF header in memory (the first
 * PT_LOAD covers file offset 0), or NULL. */
static const Elf64_Phdr *module_phdrs(const struct inproc_module *m,
				      unsigned *n)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m->start;
	uintptr_t ph;

	if (m->end - m->start < sizeof(*eh) ||
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr))
		return NULL;
	ph = m->start + eh->e_phoff;
	if (eh->e_phoff > m->end - m->start ||
	    (m->end - ph) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return NULL;
	*n = eh->e_phnum;
	return (const Elf64_Phdr *)ph;
}

/* End of the PT_LOAD segment holding [addr, addr + len), or 0. */
static uintptr_t segment_end(const struct inproc_module *m, uintptr_t addr,
			     size_t len, bool exec)
{
	unsigned n;
	const Elf64_Phdr *ph = module_phdrs(m, &n);

	for (unsigned i = 0; ph && i < n; i++) {
		uintptr_t lo = (uintptr_t)(m->bias + ph[i].p_vaddr);
		uintptr_t hi = lo + ph[i].p_memsz;

		if (ph[i].p_type != PT_LOAD || addr < lo || addr >= hi ||
		    hi - addr < len || (exec && !(ph[i].p_flags & PF_X)))
			continue;
		return hi < m->end ? hi : m->end;
	}
	return 0;
}

bool inproc_module_mapped(const struct inproc_module *m, uintptr_t addr,
			  size_t len, bool exec)
{
	return segment_end(m, addr, len, exec) != 0;
}

int inproc_module_eh_frame(const struct inproc_module *m, struct cfi_input *in)
{
	struct hdr_info h;
	uintptr_t hi;

	if (hdr_parse(m, &h) || h.eh_frame < m->start || h.eh_frame >= m->end)
		return -ENOENT;
	hi = segment_end(m, h.eh_frame, 1, false);
	if (!hi)
		return -ENOENT;
	in->data = (const uint8_t *)h.eh_frame;
	in->size = hi - h.eh_frame;
	in->vaddr = h.eh_frame - m->bias;
	in->is_eh_frame = 1;
	return 0;
}

int inproc_hdr_search(const struct inproc_module *m, const struct cfi_input *eh,
		      uintptr_t pc, size_t *fde_off)
{
	struct hdr_info h;
	int64_t rel;
	size_t lo = 0, hi;
	int32_t e[2];
	uintptr_t fde;

	if (hdr_parse(m, &h) || !h.count)
		return -ENOENT;
	rel = (int64_t)(pc - (uintptr_t)m->hdr);
	memcpy(e, h.table, 8);
	if (rel < e[0])
		return -ENOENT;
	/* Last entry whose start is <= pc. */
	hi = h.count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		memcpy(e, h.table + 8 * mid, 8);
		if (e[0] <= rel)
			lo = mid;
		else
			hi = mid;
	}
	memcpy(e, h.table + 8 * lo, 8);
	fde = (uintptr_t)m->hdr + (intptr_t)e[1];
	if (fde < (uintptr_t)eh->data || fde - (uintptr_t)eh->data >= eh->size)
		return -ENOENT;
	*fde_off = fde - (uintptr_t)eh->data;
	return 0;
}

/* dl_iterate_phdr collects one address inside each module (its
 * .eh_frame_hdr); the compiling happens after, outside the loader lock. */
struct collect {
	uintptr_t *addrs;
	size_t n, cap;
	int err;
};

static int collect_module(struct dl_phdr_info *info, size_t size, void *user)
{
	struct collect *c = user;

	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		uintptr_t *a;

		if (info->dlpi_phdr[i].p_type != PT_GNU_EH_FRAME)
			continue;
		a = VEC_PUSH(c->addrs, c->n, c->cap);
		if (!a) {
			c->err = -ENOMEM;
			return 1;
		}
		*a = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	}
	return 0;
}

#define ROW_CACHE_BYTES (INPROC_ROW_CACHE * sizeof(_Atomic(uint64_t)))

/* A zeroed row cache from mmap: a plain system call, without the locks
 * of malloc, so that a walk in a signal handler may make one. NULL when
 * the module spans 4 GiB or more (the tags are 32 bits of pc - start) or
 * on failure. */
static _Atomic(bool) row_cache_failed; /* mmap failed: walks stop trying */

static _Atomic(uint64_t) *row_cache_new(const struct inproc_module *m)
{
	void *p;

	if (m->end - m->start >= UINT32_MAX)
		return NULL;
	p = mmap(NULL, ROW_CACHE_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Claims a free slot for m (compare-and-swap: walks and prepare may
 * race), fills it and publishes it. Lock-free and allocation-free.
 * Returns the slot, or NULL when the registry is full. */
static struct reg_slot *slot_publish(const struct inproc_module *m,
				     uint64_t fp, struct unwind_table *t,
				     _Atomic(uint64_t) *cache)
{
	size_t h = slot_hash(m->start);

	/* One slot stays free so that a probe always ends. */
	if (atomic_fetch_add_explicit(&nslots_used, 1, memory_order_relaxed) >=
	    REG_SLOTS - 1) {
		atomic_fetch_sub_explicit(&nslots_used, 1, memory_order_relaxed);
		return NULL;
	}
	for (size_t i = 0; i < REG_SLOTS; i++) {
		struct reg_slot *s = &slots[(h + i) & (REG_SLOTS - 1)];
		unsigned free_ = 0;

		if (atomic_load_explicit(&s->claimed, memory_order_relaxed) ||
		    !atomic_compare_exchange_strong_explicit(
			    &s->claimed, &free_, 1, memory_order_acquire,
			    memory_order_relaxed))
			continue;
		s->end = m->end;
		s->hdr = m->hdr;
		s->fingerprint = fp;
		atomic_store_explicit(&s->table, t, memory_order_relaxed);
		s->row_cache = cache;
		s->bias = m->bias;
		atomic_store_explicit(&s->start, m->start, memory_order_release);
		return s;
	}
	atomic_fetch_sub_explicit(&nslots_used, 1, memory_order_relaxed);
	return NULL; /* cannot happen: the count keeps one slot free */
}

int inproc_module_publish_cache(struct inproc_module *m)
{
	_Atomic(uint64_t) *cache;

	if (!m->hdr || m->row_cache)
		return -ENOENT;
	if (atomic_load_explicit(&nslots_used, memory_order_relaxed) >=
	    REG_SLOTS - 1)
		return -ENOSPC;
	/* Once mmap has failed, walks make no more system calls for this
	 * (prepare still tries). */
	if (atomic_load_explicit(&row_cache_failed, memory_order_relaxed))
		return -ENOMEM;
	cache = row_cache_new(m);
	if (!cache) {
		if (m->end - m->start < UINT32_MAX)
			atomic_store_explicit(&row_cache_failed, true,
					      memory_order_relaxed);
		return -ENOMEM;
	}
	if (!slot_publish(m, hdr_fingerprint(m), NULL, cache)) {
		munmap(cache, ROW_CACHE_BYTES);
		return -ENOSPC;
	}
	m->row_cache = cache;
	return 0;
}

/* Compiles and publishes the table of the module holding addr, unless
 * it has one: into the slot a walk published for the module (whose row
 * cache is then emptied, so that the table's rows replace the
 * interpreted ones), or a new slot. Called with prepare_lock held.
 * Returns 1 when a table was published, 0 when none was needed or
 * possible, or -ENOMEM. */
static int prepare_module(uintptr_t addr)
{
	struct inproc_module m;
	struct cfi_input in;
	struct unwind_table *t;
	_Atomic(uint64_t) *cache = NULL;
	struct reg_slot *s;
	uint64_t fp;
	int err;

	if (inproc_module_find(addr, &m) || !m.hdr)
		return 0;
	fp = hdr_fingerprint(&m);
	s = slot_find(&m, fp);
	if ((s && atomic_load_explicit(&s->table, memory_order_acquire)) ||
	    inproc_module_eh_frame(&m, &in))
		return 0;
	if (!s && atomic_load_explicit(&nslots_used, memory_order_relaxed) >=
		  REG_SLOTS - 1)
		return 0; /* full: this module stays interpreted */
	err = unwind_table__compile(&in, 1, NULL, &t);
	if (err)
		return err == -ENOMEM ? err : 0;
	/* A walk may have published the module's cache meanwhile. */
	if (!s)
		s = slot_find(&m, fp);
	if (s) {
		atomic_store_explicit(&s->table, t, memory_order_release);
		for (size_t i = 0; s->row_cache && i < INPROC_ROW_CACHE; i++)
			atomic_store_explicit(&s->row_cache[i], 0,
					      memory_order_relaxed);
		atomic_fetch_add_explicit(&ntables, 1, memory_order_relaxed);
		return 1;
	}
	cache = row_cache_new(&m);
	if (!cache && m.end - m.start < UINT32_MAX) {
		unwind_table__free(t);
		return -ENOMEM;
	}
	if (!slot_publish(&m, fp, t, cache)) {
		unwind_table__free(t);
		if (cache)
			munmap(cache, ROW_CACHE_BYTES);
		return 0;
	}
	atomic_fetch_add_explicit(&ntables, 1, memory_order_relaxed);
	return 1;
}

int stacksnap_backtrace_prepare(void)
{
	struct collect c = { 0 };
	int n = 0, err = 0;

	dl_iterate_phdr(collect_module, &c);
	if (c.err) {
		free(c.addrs);
		return fail(c.err);
	}
	pthread_mutex_lock(&prepare_lock);
	for (size_t i = 0; i < c.n; i++) {
		int rc = prepare_module(c.addrs[i]);

		if (rc < 0) {
			err = rc;
			break;
		}
		n += rc;
	}
	pthread_mutex_unlock(&prepare_lock);
	free(c.addrs);
	return err ? fail(err) : n;
}

int stacksnap_backtrace_stats(struct stacksnap_backtrace_stats *st)
{
	struct stacksnap_backtrace_stats s = { .sz = sizeof(s) };

	if (!st)
		return fail(-EINVAL);
	s.tables = atomic_load_explicit(&ntables, memory_order_relaxed);
	s.interpreted_frames = atomic_load_explicit(&inproc_interpreted_frames,
						    memory_order_relaxed);
	if (opts_out(st, &s, sizeof(s), sizeof(size_t)))
		return fail(-EINVAL);
	return 0;
}
