/* mem.c - the memory sources: copy, live process (process_vm_readv with a
 * small page cache), own process, and callback. */
#define _GNU_SOURCE
#include "mem.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.h"

static int copy_read(struct stacksnap_mem *m, uint64_t addr, void *buf,
		     size_t len)
{
	/* mem_read already tried the copy: then the thread's other stacks,
	 * then the fallback. */
	for (size_t i = 0; i < m->nmore; i++) {
		const struct stacksnap_stack_range *r = &m->more[i];

		if (addr >= r->base && addr - r->base <= r->len &&
		    len <= r->len - (addr - r->base)) {
			memcpy(buf, r->bytes + (addr - r->base), len);
			return 0;
		}
	}
	if (m->fallback)
		return mem_read(m->fallback, addr, buf, len);
	return -ENODATA;
}

static const struct mem_ops copy_ops = { .read = copy_read };

/* One process_vm_readv of a whole page into the cache. */
static struct mem_page *pid_page(struct stacksnap_mem *m, uint64_t page)
{
	struct mem_page *p;

	for (unsigned i = 0; i < MEM_CACHE_PAGES; i++)
		if (m->pages[i].valid && m->pages[i].addr == page)
			return &m->pages[i];
	p = &m->pages[m->next_victim++ % MEM_CACHE_PAGES];
	struct iovec local = { p->data, MEM_PAGE };
	struct iovec remote = { (void *)(uintptr_t)page, MEM_PAGE };
	p->valid = process_vm_readv(m->pid, &local, 1, &remote, 1, 0) ==
		   MEM_PAGE;
	p->addr = page;
	return p->valid ? p : NULL;
}

static int pid_read(struct stacksnap_mem *m, uint64_t addr, void *buf,
		    size_t len)
{
	uint8_t *out = buf;

	if (addr + len < addr)
		return -EFAULT;
	if (len > 2 * MEM_PAGE) { /* big reads bypass the cache */
		struct iovec local = { buf, len };
		struct iovec remote = { (void *)(uintptr_t)addr, len };
		ssize_t n = process_vm_readv(m->pid, &local, 1, &remote, 1, 0);
		return n == (ssize_t)len ? 0 : -EFAULT;
	}
	while (len) {
		uint64_t page = addr & ~(uint64_t)(MEM_PAGE - 1);
		size_t off = addr - page, n = MEM_PAGE - off;
		struct mem_page *p = pid_page(m, page);

		if (!p)
			return -EFAULT;
		if (n > len)
			n = len;
		memcpy(out, p->data + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

static void pid_invalidate(struct stacksnap_mem *m)
{
	for (unsigned i = 0; i < MEM_CACHE_PAGES; i++)
		m->pages[i].valid = 0;
}

static void pid_free(struct stacksnap_mem *m)
{
	free(m->pages);
}

static const struct mem_ops pid_ops = { .read = pid_read,
					.invalidate = pid_invalidate,
					.free = pid_free };

/* Reading our own memory must survive unmapped addresses (a corrupt stack
 * can point anywhere), so it goes through process_vm_readv on ourselves,
 * which fails cleanly instead of faulting. */
static int self_read(struct stacksnap_mem *m, uint64_t addr, void *buf,
		     size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
			       (ssize_t)len
		       ? 0
		       : -EFAULT;
}

static const struct mem_ops self_ops = { .read = self_read };

static int callback_read(struct stacksnap_mem *m, uint64_t addr, void *buf,
			 size_t len)
{
	int err = m->read_fn(m->read_user, addr, buf, len);

	return err > 0 ? -EIO : err;
}

static const struct mem_ops callback_ops = { .read = callback_read };

int mem_read_slow(struct stacksnap_mem *m, uint64_t addr, void *buf,
		  size_t len)
{
	return m->ops->read(m, addr, buf, len);
}

void mem_invalidate(struct stacksnap_mem *m)
{
	for (; m; m = m->fallback)
		if (m->ops->invalidate)
			m->ops->invalidate(m);
}

#define MEM_BATCH 64	/* iovecs per process_vm_readv (< IOV_MAX) */

size_t mem_read_many(struct stacksnap_mem *m, struct mem_iov *iov, size_t n)
{
	size_t failed = 0;

	for (size_t i = 0; i < n;) {
		size_t cnt = 0, total = 0;

		/* Copies first: a range the copy holds needs no read. */
		if (m->ops != &pid_ops ||
		    (m->bytes && iov[i].addr >= m->base &&
		     iov[i].addr - m->base <= m->len &&
		     iov[i].len <= m->len - (iov[i].addr - m->base))) {
			iov[i].err = mem_read(m, iov[i].addr, iov[i].buf, iov[i].len);
			failed += iov[i].err != 0;
			i++;
			continue;
		}
		struct iovec local[MEM_BATCH], remote[MEM_BATCH];
		while (i + cnt < n && cnt < MEM_BATCH) {
			const struct mem_iov *v = &iov[i + cnt];

			local[cnt] = (struct iovec){ v->buf, v->len };
			remote[cnt] = (struct iovec){ (void *)(uintptr_t)v->addr, v->len };
			total += v->len;
			cnt++;
		}
		ssize_t got = process_vm_readv(m->pid, local, cnt, remote, cnt, 0);
		if (got == (ssize_t)total) {
			for (size_t k = 0; k < cnt; k++)
				iov[i + k].err = 0;
		} else {
			/* A range failed part way: each one alone says which. */
			for (size_t k = 0; k < cnt; k++) {
				struct mem_iov *v = &iov[i + k];
				struct iovec l = { v->buf, v->len };
				struct iovec r = { (void *)(uintptr_t)v->addr, v->len };

				v->err = process_vm_readv(m->pid, &l, 1, &r, 1, 0) ==
						 (ssize_t)v->len ? 0 : -EFAULT;
				failed += v->err != 0;
			}
		}
		i += cnt;
	}
	return failed;
}

int mem_read_cb(void *user, uint64_t addr, void *buf, size_t len)
{
	return mem_read(user, addr, buf, len);
}

static struct stacksnap_mem *mem_new(const struct mem_ops *ops)
{
	struct stacksnap_mem *m = calloc(1, sizeof(*m));

	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->ops = ops;
	return m;
}

struct stacksnap_mem *stacksnap_mem__new_copy(const void *bytes, size_t len,
					      uint64_t base)
{
	struct stacksnap_mem *m;

	if (!bytes && len) {
		errno = EINVAL;
		return NULL;
	}
	m = mem_new(&copy_ops);
	if (m && stacksnap_mem__set_copy(m, bytes, len, base)) {
		free(m);
		return NULL;
	}
	return m;
}

int stacksnap_mem__set_copy(struct stacksnap_mem *m, const void *bytes,
			    size_t len, uint64_t base)
{
	/* A self source reads the process's own memory: a copy put in front
	 * of it would silently make it another kind of source. */
	if (!m || m->ops == &self_ops || (!bytes && len) || base + len < base)
		return fail(-EINVAL);
	m->bytes = bytes;
	m->len = len;
	m->base = base;
	return 0;
}

struct stacksnap_mem *stacksnap_mem__new_pid(pid_t pid)
{
	struct stacksnap_mem *m;

	if (pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	m = mem_new(&pid_ops);
	if (!m)
		return NULL;
	m->pid = pid;
	m->pages = calloc(MEM_CACHE_PAGES, sizeof(*m->pages));
	if (!m->pages) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

struct stacksnap_mem *stacksnap_mem__new_self(void)
{
	return mem_new(&self_ops);
}

struct stacksnap_mem *stacksnap_mem__new_callback(stacksnap_read_fn read,
						  void *user)
{
	struct stacksnap_mem *m;

	if (!read) {
		errno = EINVAL;
		return NULL;
	}
	m = mem_new(&callback_ops);
	if (m) {
		m->read_fn = read;
		m->read_user = user;
	}
	return m;
}

int stacksnap_mem__set_fallback(struct stacksnap_mem *m,
				struct stacksnap_mem *fallback)
{
	if (!m || m == fallback || m->ops != &copy_ops)
		return fail(-EINVAL);
	m->fallback = fallback;
	return 0;
}

int stacksnap_mem__set_more(struct stacksnap_mem *m,
			    const struct stacksnap_stack_range *ranges, size_t n)
{
	if (!m || m->ops != &copy_ops || (!ranges && n))
		return fail(-EINVAL);
	for (size_t i = 0; i < n; i++)
		if ((!ranges[i].bytes && ranges[i].len) ||
		    ranges[i].base + ranges[i].len < ranges[i].base)
			return fail(-EINVAL);
	m->more = ranges;
	m->nmore = n;
	return 0;
}

int stacksnap_mem__read(struct stacksnap_mem *m, uint64_t addr, void *buf,
			size_t len)
{
	int err;

	if (!m || (!buf && len))
		return fail(-EINVAL);
	err = mem_read(m, addr, buf, len);
	return err ? fail(err) : 0;
}

void stacksnap_mem__free(struct stacksnap_mem *m)
{
	if (!m)
		return;
	if (m->ops->free)
		m->ops->free(m);
	free(m);
}
