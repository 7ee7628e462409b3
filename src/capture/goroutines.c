#define _GNU_SOURCE
/* goroutines.c - a Go program's goroutines in a capture: its runtime
 * opened before the freeze, the goroutine list read and every goroutine
 * unwound while every thread is stopped (src/runtime/go, docs/go.md). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/clock.h"
#include "capture/capture_internal.h"
#include "elf/elf_image.h"
#include "mem/mem.h"
#include "runtime/go/go_runtime.h"

/* A Go program's runtime and its goroutine list as read last. Invariant:
 * rt describes img; gs[0, n) and pub[0, n) correspond (pub NULL: no list
 * read), pub's frames point into frames[] and its strings into rt's
 * pclntab. */
struct stacksnap_goroutines {
	struct elf_image *img;
	struct go_runtime rt;
	uint64_t bias;
	/* The one unwinder walks the goroutines too, over the process's
	 * address space (its modules' tables opened before the freeze). */
	struct stacksnap_addrspace *as;
	struct stacksnap_unwinder *uw;
	struct goroutine *gs;
	size_t n;
	struct stacksnap_goroutine *pub;
	struct stacksnap_runtime_frame *frames;
	pid_t pid;
	const struct log_sink *log;
	struct stacksnap_mem *live;	/* goid_at's reads, made on first use */
	/* The list was read with every thread stopped; the wait objects are
	 * read after the thaw (capture__go_after_thaw), then published again
	 * at the list's time (pub_now). */
	bool waits_after;
	int64_t pub_now;
};

/* The executable's load bias: 0 unless it is position-independent. */
static uint64_t exe_bias(pid_t pid, const struct elf_image *img)
{
	char path[64], exe[PATH_MAX], line[PATH_MAX + 128];
	uint64_t bias = 0;
	ssize_t len;
	FILE *f;

	if (img->e_type != 3 /* ET_DYN */)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	len = readlink(path, exe, sizeof(exe) - 1);
	if (len <= 0)
		return 0;
	exe[len] = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char file[PATH_MAX] = "";

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &lo, &hi,
			   &off, file) == 4 && strcmp(file, exe) == 0 &&
		    elf_image__load_bias(img, lo, off, 0, &bias) == 0)
			break;
	}
	if (f)
		fclose(f);
	return bias;
}

/* Could the file be a Go program? Its section headers and their names
 * are read (three preads, where opening the image would cost much more in
 * every dump of a program that is not Go): false when they exist and none
 * is .gopclntab (.data.rel.ro.gopclntab in a PIE). */
static bool may_be_go(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *names = NULL;
	bool found = false, usable = false;
	size_t shbytes;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return false;
	}
	shbytes = (size_t)eh.e_shnum * sizeof(*sh);
	if (eh.e_shnum && eh.e_shnum <= 4096 &&
	    eh.e_shentsize == sizeof(*sh) && eh.e_shstrndx < eh.e_shnum &&
	    (sh = malloc(shbytes)) &&
	    pread(fd, sh, shbytes, (off_t)eh.e_shoff) == (ssize_t)shbytes &&
	    sh[eh.e_shstrndx].sh_size <= (1u << 20) &&
	    (names = calloc(1, sh[eh.e_shstrndx].sh_size + 1)) &&
	    pread(fd, names, sh[eh.e_shstrndx].sh_size,
		  (off_t)sh[eh.e_shstrndx].sh_offset) ==
		    (ssize_t)sh[eh.e_shstrndx].sh_size) {
		usable = true;
		for (unsigned i = 0; i < eh.e_shnum && !found; i++)
			found = sh[i].sh_name < sh[eh.e_shstrndx].sh_size &&
				(strcmp(names + sh[i].sh_name, ".gopclntab") == 0 ||
				 strcmp(names + sh[i].sh_name,
					".data.rel.ro.gopclntab") == 0);
	}
	free(sh);
	free(names);
	close(fd);
	/* Without usable section headers: look inside. */
	return found || !usable;
}

struct stacksnap_goroutines *stacksnap_goroutines__open(struct stacksnap_ctx *ctx,
						       pid_t pid)
{
	const struct log_sink *log = ctx ? &ctx->log : NULL;
	struct stacksnap_goroutines *g;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (!may_be_go(path)) {
		errno = ENOENT;
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->pid = pid;
	g->log = log;
	if (elf_image__open(path, NULL, &g->img) != 0 ||
	    go_runtime__open(&g->rt, g->img, log) != 0) {
		elf_image__free(g->img);
		free(g);
		errno = ENOENT; /* not a Go program */
		return NULL;
	}
	g->bias = exe_bias(pid, g->img);
	if (ctx) {
		struct go_func f;

		g->as = stacksnap_addrspace__from_pid(ctx, pid);
		g->uw = stacksnap_unwinder__new(NULL);
		/* The program's module and table now, not during the freeze. */
		if (g->as && gopclntab__func_at(&g->rt.pcln, 0, &f) == 0) {
			const struct as_map *m = addrspace__find(g->as,
								 f.entry + g->bias);

			if (m && m->mod)
				module__table(ctx, m->mod);
		}
	}
	return g;
}

void capture__go_prepare(struct stacksnap_snapshot *s, struct stacksnap_ctx *ctx)
{
	s->go = stacksnap_goroutines__open(ctx, s->pid);
}

static int publish(struct stacksnap_goroutines *g)
{
	return go_goroutines__publish(&g->rt, g->gs, g->n, g->bias, g->pub_now,
				      &g->pub, &g->frames);
}

/* Forgets the list read last. */
static void clear(struct stacksnap_goroutines *g)
{
	go_goroutines__free(g->gs, g->n);
	free(g->pub);
	free(g->frames);
	g->gs = NULL;
	g->pub = NULL;
	g->frames = NULL;
	g->n = 0;
}

/* Reads the list and walks every goroutine (the caller holds the
 * threads stopped; with running, some ran meanwhile: a non-stop capture);
 * thr: the registers of threads running goroutines. */
static int read_list(struct stacksnap_goroutines *g,
		     const struct go_thread_regs *thr, size_t nthr,
		     bool running, bool frozen)
{
	struct stacksnap_mem *mem = stacksnap_mem__new_pid(g->pid);
	uint64_t len0 = 0;
	int err;

	clear(g);
	g->pub_now = (int64_t)clock_monotonic_ns();
	g->waits_after = false;
	if (!mem)
		return -ENOMEM;
	if (running)
		len0 = go_goroutines__list_len(&g->rt, mem, g->bias);
	err = go_goroutines__read(&g->rt, mem, g->bias, GO_MAX_GOROUTINES,
				  &g->gs, &g->n, g->log);
	if (err < 0) {
		log_warn(g->log, "pid %d: the goroutine list could not be read: "
			 "%s", (int)g->pid, strerror(-err));
		stacksnap_mem__free(mem);
		g->gs = NULL;
		g->n = 0;
		return err;
	}
	for (size_t i = 0; i < g->n && !err; i++)
		err = g->as && g->uw
			? go_goroutine__unwind_with(&g->rt, g->uw, g->as, mem,
						    g->bias, &g->gs[i], thr, nthr)
			: go_goroutine__unwind(&g->rt, mem, g->bias, &g->gs[i],
					       thr, nthr);
	/* What each waits on, once its frames tell a sync object apart:
	 * with every thread stopped, after the thaw (the objects' reads, a
	 * walk of runtime.semtable, added ~20% to a 64-goroutine freeze). */
	if (!err && frozen && !running)
		g->waits_after = true;
	else if (!err)
		err = go_goroutines__read_waits(&g->rt, mem, g->bias, g->gs,
						g->n);
	if (!err && running) {
		/* What changed under the read is said, never shown wrong. */
		size_t changed = go_goroutines__recheck(&g->rt, mem, g->gs,
							g->n);
		uint64_t len1 = go_goroutines__list_len(&g->rt, mem, g->bias);

		if (changed)
			log_warn(g->log, "pid %d: %zu of %zu goroutines changed "
				 "while the list was read without stopping "
				 "every thread (--nonstop): their stacks are "
				 "not shown", (int)g->pid, changed, g->n);
		if (len1 > len0 && len0)
			log_warn(g->log, "pid %d: %llu goroutines started while "
				 "the list was read without stopping every "
				 "thread (--nonstop): not listed", (int)g->pid,
				 (unsigned long long)(len1 - len0));
	}
	stacksnap_mem__free(mem);
	if (!err)
		err = publish(g);
	if (err < 0)
		clear(g);
	return err;
}

int stacksnap_goroutines__read(struct stacksnap_goroutines *g)
{
	return g ? read_list(g, NULL, 0, false, false) : fail(-EINVAL);
}

void capture__go_read(struct stacksnap_snapshot *s, const struct log_sink *log)
{
	struct go_thread_regs *thr = calloc(s->n ? s->n : 1, sizeof(*thr));
	size_t nthr = 0;
	bool running = false;	/* a thread read without stopping it */

	(void)log;
	if (!thr)
		return;
	for (size_t i = 0; i < s->n; i++) {
		const struct cap_thread *t = &s->threads[i];

		running |= t->pub.nonstop;
		if (!t->have_regs)
			continue;
		thr[nthr].tid = t->pub.tid;
		thr[nthr].rip = t->pub.regs.regs[STACKSNAP_REG_RIP];
		thr[nthr].rsp = t->pub.regs.regs[STACKSNAP_REG_RSP];
		thr[nthr].rbp = t->pub.regs.regs[STACKSNAP_REG_RBP];
		nthr++;
	}
	read_list(s->go, thr, nthr, running, true);
	free(thr);
}

void capture__go_after_thaw(struct stacksnap_snapshot *s)
{
	struct stacksnap_goroutines *g = s->go;
	struct stacksnap_mem *mem;

	if (!g || !g->waits_after)
		return;
	g->waits_after = false;
	if (!(mem = stacksnap_mem__new_pid(g->pid)))
		return;
	/* Objects of goroutines that ran meanwhile are dropped, said so. */
	if (!go_goroutines__read_waits(&g->rt, mem, g->bias, g->gs, g->n))
		go_goroutines__recheck_objects(&g->rt, mem, g->gs, g->n);
	stacksnap_mem__free(mem);
	free(g->pub);
	free(g->frames);
	g->pub = NULL;
	g->frames = NULL;
	if (publish(g) < 0)
		clear(g);
}

int64_t stacksnap_goroutines__goid_at(struct stacksnap_goroutines *g,
				      const uint64_t *regs)
{
	if (!g || !regs)
		return -1;
	if (!g->live && !(g->live = stacksnap_mem__new_pid(g->pid)))
		return -1;
	return go_goroutine__goid_at(&g->rt, g->live, regs[STACKSNAP_REG_R14],
				     regs[STACKSNAP_REG_RSP]);
}

/* Reads len bytes at addr of process pid: false when not all were read. */
static bool peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len;
}

/* Is gp a g of thread tid whose stack [lo, hi) holds sp? Its stack
 * bounds and g.m read, then that m's procid (3 small reads). */
static bool g_holds(const struct stacksnap_goroutines *g, uint64_t gp,
		    int32_t tid, uint64_t sp, uint64_t *hi)
{
	const struct go_layout *l = &g->rt.layout;
	uint64_t lo, top, m, procid;

	if (!gp || (gp & 7) || !peek(g->pid, gp + l->g_stack_lo, &lo, 8) ||
	    !peek(g->pid, gp + l->g_stack_hi, &top, 8) || lo >= top ||
	    sp < lo || sp >= top || top - lo > GO_MAX_STACK ||
	    !peek(g->pid, gp + l->g_m, &m, 8) || !m || (m & 7) ||
	    !peek(g->pid, m + l->m_procid, &procid, 8) ||
	    procid != (uint64_t)(uint32_t)tid)
		return false;
	*hi = top;
	return true;
}

uint64_t capture__go_stack_top(const struct stacksnap_snapshot *s,
			       const struct cap_thread *t)
{
	const struct stacksnap_goroutines *g = s->go;
	uint64_t sp = t->pub.regs.regs[STACKSNAP_REG_RSP], gp, hi;

	if (!g || !g->rt.have_layout)
		return 0;
	/* Go code keeps its g in r14 (the register ABI), and the runtime's
	 * assembly calls into the kernel leave it there. */
	if (g_holds(g, t->pub.regs.regs[STACKSNAP_REG_R14], t->pub.tid, sp, &hi))
		return hi;
	/* A thread the runtime started itself (no cgo): g in its TLS slot,
	 * at -8 from the thread pointer (runtime.settls). */
	if (t->fs_base > 8 && peek(g->pid, t->fs_base - 8, &gp, 8) &&
	    g_holds(g, gp, t->pub.tid, sp, &hi))
		return hi;
	return 0;
}

void stacksnap_goroutines__free(struct stacksnap_goroutines *g)
{
	if (!g)
		return;
	stacksnap_mem__free(g->live);
	clear(g);
	stacksnap_unwinder__free(g->uw);
	stacksnap_addrspace__free(g->as);
	go_runtime__close(&g->rt);
	elf_image__free(g->img);
	free(g);
}

void capture__go_free(struct stacksnap_snapshot *s)
{
	stacksnap_goroutines__free(s->go);
	s->go = NULL;
}

size_t stacksnap_goroutines__count(const struct stacksnap_goroutines *g)
{
	return g && g->pub ? g->n : 0;
}

const struct stacksnap_goroutine *
stacksnap_goroutines__get(const struct stacksnap_goroutines *g, size_t i)
{
	return i < stacksnap_goroutines__count(g) ? &g->pub[i] : NULL;
}

size_t stacksnap_snapshot__goroutine_count(const struct stacksnap_snapshot *s)
{
	return s ? stacksnap_goroutines__count(s->go) : 0;
}

const struct stacksnap_goroutine *
stacksnap_snapshot__goroutine(const struct stacksnap_snapshot *s, size_t i)
{
	return s ? stacksnap_goroutines__get(s->go, i) : NULL;
}
