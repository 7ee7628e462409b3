/* mem.h - memory sources behind one small ops table: a copied byte range,
 * live memory of another process, the calling process, or a callback.
 * Reads are bulk: the live source caches whole pages for the duration of
 * one walk instead of making a system call per word. */
#ifndef SS_MEM_MEM_H
#define SS_MEM_MEM_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "stacksnap.h"

struct stacksnap_mem;

/* What a kind of source does. read: must not be NULL; returns 0, -ENODATA
 * for an address outside a copied range, -EFAULT for unreadable memory.
 * invalidate: may be NULL; forgets cached bytes (called when a walk starts,
 * as a live target may have run since). free: may be NULL. */
struct mem_ops {
	int (*read)(struct stacksnap_mem *m, uint64_t addr, void *buf,
		    size_t len);
	void (*invalidate)(struct stacksnap_mem *m);
	void (*free)(struct stacksnap_mem *m);
};

#define MEM_CACHE_PAGES 4
#define MEM_PAGE 4096

/* A cached page of a live source. Invariant: valid implies data holds the
 * MEM_PAGE bytes at addr (page aligned). */
struct mem_page {
	uint64_t addr;
	int valid;
	uint8_t data[MEM_PAGE];
};

/* Invariant: for a copy source, bytes[0..len) are the target's bytes at
 * [base, base + len). copy bytes are checked first for every kind, so a
 * copy with a fallback is one source. */
struct stacksnap_mem {
	const struct mem_ops *ops;
	const uint8_t *bytes;	   /* copied range, or NULL */
	size_t len;
	uint64_t base;
	const struct stacksnap_stack_range *more; /* a copy source's other
				   copied ranges, tried after bytes; not owned */
	size_t nmore;
	struct stacksnap_mem *fallback; /* reads outside the copies; not owned */
	pid_t pid;		   /* live source */
	stacksnap_read_fn read_fn; /* callback source */
	void *read_user;
	struct mem_page *pages;	   /* live source's page cache */
	unsigned next_victim;	   /* round-robin replacement in pages */
};

int mem_read_slow(struct stacksnap_mem *m, uint64_t addr, void *buf,
		  size_t len);
void mem_invalidate(struct stacksnap_mem *m);

/* The unwinder's read: a copy hit is a bounds check and a memcpy. */
static inline int mem_read(struct stacksnap_mem *m, uint64_t addr, void *buf,
			   size_t len)
{
	if (m->bytes && addr >= m->base && addr - m->base <= m->len &&
	    len <= m->len - (addr - m->base)) {
		memcpy(buf, m->bytes + (addr - m->base), len);
		return 0;
	}
	return mem_read_slow(m, addr, buf, len);
}

/* The common case, a word inside the copy, without a memcpy call. */
static inline int mem_read_u64(struct stacksnap_mem *m, uint64_t addr,
			       uint64_t *v)
{
	if (m->bytes && addr - m->base < m->len &&
	    m->len - (addr - m->base) >= sizeof(*v)) {
		memcpy(v, m->bytes + (addr - m->base), sizeof(*v));
		return 0;
	}
	return mem_read_slow(m, addr, v, sizeof(*v));
}

/* One range of a batch read: len bytes at addr into buf; err is set to 0
 * or the range's -errno. */
struct mem_iov {
	uint64_t addr;
	void *buf;
	size_t len;
	int err;
};

/* Reads n ranges. A live source reads them in one process_vm_readv (per
 * IOV_MAX), bypassing its page cache: what a walk over many scattered
 * objects (one per thread) wants during a freeze, where each system call
 * counts; a range that fails is read again alone to say which. Other
 * sources read one by one. Returns the number of ranges that failed. */
size_t mem_read_many(struct stacksnap_mem *m, struct mem_iov *iov, size_t n);

/* stacksnap_read_fn adapter so lower modules can read through a source. */
int mem_read_cb(void *user, uint64_t addr, void *buf, size_t len);

#endif
