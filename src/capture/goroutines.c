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
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/clock.h"
#include "capture/capture_internal.h"
#include "elf/elf_image.h"
#include "mem/mem.h"
#include "runtime/go/go_runtime.h"

/* Invariant: rt describes img; gs[0, n) and pub[0, n) correspond, pub's
 * frames point into frames[] and its strings into rt's pclntab. */
struct cap_go {
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

void capture__go_prepare(struct stacksnap_snapshot *s, struct stacksnap_ctx *ctx)
{
	const struct log_sink *log = ctx ? &ctx->log : NULL;
	struct cap_go *g;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)s->pid);
	if (!may_be_go(path))
		return;
	g = calloc(1, sizeof(*g));
	if (!g)
		return;
	if (elf_image__open(path, NULL, &g->img) != 0 ||
	    go_runtime__open(&g->rt, g->img, log) != 0) {
		elf_image__free(g->img);
		free(g);
		return; /* not a Go program */
	}
	g->bias = exe_bias(s->pid, g->img);
	if (ctx) {
		struct go_func f;

		g->as = stacksnap_addrspace__from_pid(ctx, s->pid);
		g->uw = stacksnap_unwinder__new(NULL);
		/* The program's module and table now, not during the freeze. */
		if (g->as && gopclntab__func_at(&g->rt.pcln, 0, &f) == 0) {
			const struct as_map *m = addrspace__find(g->as,
								 f.entry + g->bias);

			if (m && m->mod)
				module__table(ctx, m->mod);
		}
	}
	s->go = g;
}

/* The public goroutines of g->gs (frames in one array). */
static int publish(struct cap_go *g)
{
	size_t total = 0, k = 0;
	int64_t now = (int64_t)clock_monotonic_ns();

	for (size_t i = 0; i < g->n; i++)
		total += g->gs[i].nframes;
	g->pub = calloc(g->n ? g->n : 1, sizeof(*g->pub));
	g->frames = calloc(total ? total : 1, sizeof(*g->frames));
	if (!g->pub || !g->frames)
		return -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		const struct goroutine *gr = &g->gs[i];
		struct stacksnap_goroutine *p = &g->pub[i];
		uint32_t st = gr->status & ~(uint32_t)GO_GSCAN;
		struct go_gframe cb;
		uint32_t physical = 0;

		p->sz = sizeof(*p);
		p->goid = gr->goid;
		p->status = go_status_name(gr->status, gr->waitreason);
		p->wait_reason = st == GO_GWAITING && gr->waitreason
					 ? go_wait_reason(gr->waitreason) : NULL;
		p->wait_ns = gr->waitsince > 0 && gr->waitsince <= now
				     ? now - gr->waitsince : -1;
		p->thread = gr->m ? gr->tid : 0;
		/* The runtime names no creator for the main goroutine. */
		if (gr->goid != 1 &&
		    go_goroutine__created_by(&g->rt, gr, g->bias, &cb)) {
			p->created_by = cb.function;
			p->created_file = cb.file;
			p->created_line = cb.line > 0 ? (unsigned)cb.line : 0;
		}
		p->frames = &g->frames[k];
		p->nframes = gr->nframes;
		p->end = gr->end;
		for (size_t j = 0; j < gr->nframes; j++) {
			const struct go_gframe *f = &gr->frames[j];
			struct stacksnap_runtime_frame *o = &g->frames[k++];

			o->sz = sizeof(*o);
			o->runtime = STACKSNAP_RUNTIME_GO;
			o->native_index = physical;
			o->flags = f->inlined ? STACKSNAP_RFRAME_INLINED : 0;
			o->function = f->function;
			o->file = f->file;
			o->line = f->line > 0 ? (unsigned)f->line : 0;
			o->pc = f->pc;
			physical += !f->inlined;
		}
	}
	return 0;
}

void capture__go_read(struct stacksnap_snapshot *s, const struct log_sink *log)
{
	struct cap_go *g = s->go;
	struct go_thread_regs *thr = calloc(s->n ? s->n : 1, sizeof(*thr));
	struct stacksnap_mem *mem = stacksnap_mem__new_pid(s->pid);
	size_t nthr = 0;
	int err;

	if (!thr || !mem)
		goto out;
	for (size_t i = 0; i < s->n; i++) {
		const struct cap_thread *t = &s->threads[i];

		if (!t->have_regs)
			continue;
		thr[nthr].tid = t->pub.tid;
		thr[nthr].rip = t->pub.regs.regs[STACKSNAP_REG_RIP];
		thr[nthr].rsp = t->pub.regs.regs[STACKSNAP_REG_RSP];
		thr[nthr].rbp = t->pub.regs.regs[STACKSNAP_REG_RBP];
		nthr++;
	}
	err = go_goroutines__read(&g->rt, mem, g->bias, GO_MAX_GOROUTINES,
				  &g->gs, &g->n, log);
	if (err < 0) {
		log_warn(log, "pid %d: the goroutine list could not be read: "
			 "%s", (int)s->pid, strerror(-err));
		goto out;
	}
	for (size_t i = 0; i < g->n; i++)
		if ((g->as && g->uw
		     ? go_goroutine__unwind_with(&g->rt, g->uw, g->as, mem,
						 g->bias, &g->gs[i], thr, nthr)
		     : go_goroutine__unwind(&g->rt, mem, g->bias, &g->gs[i],
					    thr, nthr)) < 0)
			break;
	if (publish(g) < 0) {
		free(g->pub);
		g->pub = NULL;
		g->n = 0;
	}
out:
	stacksnap_mem__free(mem);
	free(thr);
}

void capture__go_free(struct stacksnap_snapshot *s)
{
	struct cap_go *g = s->go;

	if (!g)
		return;
	go_goroutines__free(g->gs, g->n);
	free(g->pub);
	free(g->frames);
	stacksnap_unwinder__free(g->uw);
	stacksnap_addrspace__free(g->as);
	go_runtime__close(&g->rt);
	elf_image__free(g->img);
	free(g);
	s->go = NULL;
}

size_t stacksnap_snapshot__goroutine_count(const struct stacksnap_snapshot *s)
{
	return s && s->go && s->go->pub ? s->go->n : 0;
}

const struct stacksnap_goroutine *
stacksnap_snapshot__goroutine(const struct stacksnap_snapshot *s, size_t i)
{
	if (i >= stacksnap_snapshot__goroutine_count(s))
		return NULL;
	return &s->go->pub[i];
}
