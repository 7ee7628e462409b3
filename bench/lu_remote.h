/* lu_remote.h - the libunwind baselines shared by the benchmarks: a remote
 * address space whose accessors read a copied stack and the target's module
 * files (the copy-then-unwind way of tbstack-like tools), and helpers to
 * read /proc/PID/maps. Header-only (static functions): each benchmark is
 * one C file linked on its own. */
#ifndef STACKSNAP_BENCH_LU_REMOTE_H
#define STACKSNAP_BENCH_LU_REMOTE_H

#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <libunwind-ptrace.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LU_MAX_MAPS 4096
#define LU_REGS 17 /* x86_64 DWARF registers 0..16 (rip), libunwind's too */

/* One line of /proc/PID/maps; image is the whole backing file mapped
 * here (read-only), NULL until first needed or when there is none. */
struct lu_map {
	uint64_t start, end, offset;
	char path[256];
	int exec, writable;
	const uint8_t *image;
	size_t image_len;
	int image_failed;
};

struct lu_maps {
	struct lu_map map[LU_MAX_MAPS];
	int n;
};

/* One thread's capture: registers in DWARF order and the stack bytes
 * copied from base. */
struct lu_thread {
	int tid;
	uint64_t regs[LU_REGS];
	uint8_t *stack;
	size_t stack_len;
	uint64_t stack_base;
};

/* What the accessors read. libunwind's _UPT_find_proc_info passes its own
 * argument (the UPT handle) down to access_mem, not ours, so the accessors
 * find the current walk through this pointer instead (the benchmarks walk
 * one stack at a time). */
struct lu_walk {
	struct lu_maps *maps;
	const struct lu_thread *thread;
	void *upt; /* _UPT_create(pid): module lookup and names, no ptrace */
};
static struct lu_walk *lu_current;

static int lu_maps_read(struct lu_maps *m, int pid)
{
	char path[64], line[512];
	FILE *f;

	m->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f) && m->n < LU_MAX_MAPS) {
		struct lu_map *p = &m->map[m->n];
		char perms[8];
		int name_at = 0;

		memset(p, 0, sizeof(*p));
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
			   &p->start, &p->end, perms, &p->offset, &name_at) < 4)
			continue;
		if (name_at > 0) {
			snprintf(p->path, sizeof(p->path), "%s", line + name_at);
			p->path[strcspn(p->path, "\n")] = 0;
		}
		p->exec = perms[2] == 'x';
		p->writable = perms[1] == 'w';
		m->n++;
	}
	fclose(f);
	return 0;
}

static void lu_maps_release(struct lu_maps *m)
{
	for (int i = 0; i < m->n; i++)
		if (m->map[i].image)
			munmap((void *)m->map[i].image, m->map[i].image_len);
	m->n = 0;
}

static struct lu_map *lu_maps_find(struct lu_maps *m, uint64_t addr)
{
	int lo = 0, hi = m->n;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (addr < m->map[mid].start)
			hi = mid;
		else if (addr >= m->map[mid].end)
			lo = mid + 1;
		else
			return &m->map[mid];
	}
	return NULL;
}

/* Reads a word of a module from its file on disk, the way a copy-then-
 * unwind tool reads the CFI of a target it no longer has stopped. */
static int lu_read_module(struct lu_maps *m, uint64_t addr, uint64_t *val)
{
	struct lu_map *p = lu_maps_find(m, addr);

	/* Writable mappings (data, a shared file the target writes) are not
	 * the file's bytes any more: never read from disk. */
	if (!p || p->path[0] != '/' || p->writable || p->image_failed)
		return -1;
	if (!p->image) {
		int fd = open(p->path, O_RDONLY);
		struct stat st;

		p->image_failed = 1;
		if (fd < 0)
			return -1;
		if (fstat(fd, &st) == 0 && st.st_size > 0) {
			void *img = mmap(NULL, (size_t)st.st_size, PROT_READ,
					 MAP_PRIVATE, fd, 0);
			if (img != MAP_FAILED) {
				p->image = img;
				p->image_len = (size_t)st.st_size;
				p->image_failed = 0;
			}
		}
		close(fd);
		if (p->image_failed)
			return -1;
	}
	uint64_t off = addr - p->start + p->offset;
	if (off + 8 > p->image_len)
		return -1;
	memcpy(val, p->image + off, 8);
	return 0;
}

static int lu_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
			 int write, void *arg)
{
	const struct lu_thread *t = lu_current->thread;

	if (write)
		return -UNW_EINVAL;
	if (addr >= t->stack_base && addr + 8 <= t->stack_base + t->stack_len) {
		memcpy(val, t->stack + (addr - t->stack_base), 8);
		return 0;
	}
	uint64_t v;
	if (lu_read_module(lu_current->maps, addr, &v))
		return -UNW_EINVAL;
	*val = v;
	return 0;
}

static int lu_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val,
			 int write, void *arg)
{
	if (write || reg < 0 || reg >= LU_REGS)
		return -UNW_EBADREG;
	*val = lu_current->thread->regs[reg];
	return 0;
}

static int lu_access_fpreg(unw_addr_space_t as, unw_regnum_t reg,
			   unw_fpreg_t *val, int write, void *arg)
{
	return -UNW_EBADREG;
}

static int lu_find_proc_info(unw_addr_space_t as, unw_word_t ip,
			     unw_proc_info_t *pi, int need_unwind_info,
			     void *arg)
{
	return _UPT_find_proc_info(as, ip, pi, need_unwind_info,
				   lu_current->upt);
}

static void lu_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi,
			       void *arg)
{
	_UPT_put_unwind_info(as, pi, lu_current->upt);
}

static int lu_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dil,
				     void *arg)
{
	return -UNW_ENOINFO;
}

static int lu_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	return -UNW_EINVAL;
}

static int lu_get_proc_name(unw_addr_space_t as, unw_word_t ip, char *buf,
			    size_t len, unw_word_t *off, void *arg)
{
	return _UPT_get_proc_name(as, ip, buf, len, off, lu_current->upt);
}

static unw_accessors_t lu_copy_accessors = {
	.find_proc_info = lu_find_proc_info,
	.put_unwind_info = lu_put_unwind_info,
	.get_dyn_info_list_addr = lu_get_dyn_info_list_addr,
	.access_mem = lu_access_mem,
	.access_reg = lu_access_reg,
	.access_fpreg = lu_access_fpreg,
	.resume = lu_resume,
	.get_proc_name = lu_get_proc_name,
};

/* Walks the current thread's copy: pcs[] gets up to max frame pcs.
 * Returns the frame count; *step_ret is unw_step's last result (0 means
 * libunwind found the end of the stack, < 0 an error). */
static int lu_walk_copy(unw_addr_space_t as, struct lu_walk *w,
			uint64_t *pcs, int max, int *step_ret)
{
	unw_cursor_t c;
	int n = 0, r;

	lu_current = w;
	*step_ret = r = unw_init_remote(&c, as, w);
	if (r < 0)
		return 0;
	do {
		unw_word_t ip;

		unw_get_reg(&c, UNW_REG_IP, &ip);
		pcs[n++] = ip;
	} while (n < max && (r = unw_step(&c)) > 0);
	*step_ret = r;
	return n;
}

#endif
