/* go_goroutines.c - prints the goroutines of a live Go process (id,
 * status, wait reason, thread, frames with inlined calls, created by) in
 * the shape of the runtime's own dump, for tests/integration/go_goroutines:
 * the threads are held stopped while the list is read. Lines starting with
 * '#' say where layouts and the list came from. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stacksnap.h"
#include "elf/elf_image.h"
#include "runtime/go/go_runtime.h"

static void log_to_stderr(enum stacksnap_log_level level, const char *msg,
			  void *user)
{
	(void)level;
	(void)user;
	fprintf(stderr, "go_goroutines: %s\n", msg);
}

/* The load bias of the executable: its lowest mapping from offset 0. */
static uint64_t exe_bias(pid_t pid, const struct elf_image *img,
			 const char *exe)
{
	char path[64], line[4096];
	FILE *f;
	uint64_t bias = 0;

	if (img->e_type != 3 /* ET_DYN */)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8], file[PATH_MAX];

		file[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi,
			   perms, &off, file) >= 4 && strcmp(file, exe) == 0 &&
		    elf_image__load_bias(img, lo, off, 0, &bias) == 0)
			break;
	}
	if (f)
		fclose(f);
	return bias;
}

static void print_frame(const struct go_gframe *f, bool inlined_marker)
{
	printf("%s(%s)\n\t%s:%d", f->function, inlined_marker ? "..." : "",
	       f->file ? f->file : "?", f->line);
	if (!f->inlined)
		printf(" +%#llx pc=%#llx sp=%#llx",
		       (unsigned long long)(f->pc - f->entry),
		       (unsigned long long)f->pc, (unsigned long long)f->sp);
	printf("\n");
}

int main(int argc, char **argv)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = log_to_stderr,
		       .log_level = STACKSNAP_LOG_WARN);
	STACKSNAP_OPTS(stacksnap_snapshot_opts, sopts, .hold = true,
		       .no_copy = true, .freeze_all = true);
	struct log_sink sink = { log_to_stderr, NULL, STACKSNAP_LOG_WARN };
	struct stacksnap_ctx *ctx;
	struct stacksnap_snapshot *snap;
	struct stacksnap_mem *mem;
	struct elf_image *img;
	struct go_runtime rt;
	struct go_thread_regs *thr;
	struct goroutine *gs = NULL;
	size_t ngs = 0, nthr;
	char exe[PATH_MAX], link[64];
	ssize_t len;
	uint64_t bias;
	pid_t pid;
	int err;
	unsigned fpc = 0, fpm = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: go_goroutines PID\n");
		return 2;
	}
	pid = atoi(argv[1]);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	if (len <= 0) {
		perror(link);
		return 1;
	}
	exe[len] = 0;
	if (elf_image__open(exe, &sink, &img) != 0 ||
	    go_runtime__open(&rt, img, &sink) != 0) {
		fprintf(stderr, "go_goroutines: %s is not a Go program\n", exe);
		return 1;
	}
	printf("# version %s layout %s allgs %#llx from %s\n",
	       rt.version[0] ? rt.version : "?",
	       rt.have_layout ? rt.layout.source : "none",
	       (unsigned long long)rt.allgs, rt.allgs_source);
	bias = exe_bias(pid, img, exe);
	ctx = stacksnap_ctx__new(&copts);
	snap = ctx ? stacksnap_snapshot__capture(ctx, pid, &sopts) : NULL;
	if (!snap) {
		fprintf(stderr, "go_goroutines: capture: %s\n", strerror(errno));
		return 1;
	}
	nthr = stacksnap_snapshot__thread_count(snap);
	thr = calloc(nthr ? nthr : 1, sizeof(*thr));
	for (size_t i = 0; i < nthr; i++) {
		const struct stacksnap_thread *t =
			stacksnap_snapshot__thread(snap, i);

		thr[i].tid = t->tid;
		thr[i].rip = t->regs.regs[STACKSNAP_REG_RIP];
		thr[i].rsp = t->regs.regs[STACKSNAP_REG_RSP];
		thr[i].rbp = t->regs.regs[STACKSNAP_REG_RBP];
	}
	/* Everything that can change is read while the threads are held. */
	mem = stacksnap_mem__new_pid(pid);
	err = go_goroutines__read(&rt, mem, bias, GO_MAX_GOROUTINES, &gs, &ngs,
				  &sink);
	for (size_t i = 0; err == 0 && i < ngs; i++)
		go_goroutine__unwind(&rt, mem, bias, &gs[i], thr, nthr);
	stacksnap_snapshot__release(snap);
	if (err < 0) {
		fprintf(stderr, "go_goroutines: reading the goroutines: %s\n",
			strerror(-err));
		return 1;
	}
	for (size_t i = 0; i < ngs; i++) {
		const struct goroutine *g = &gs[i];
		struct go_gframe cb;

		printf("goroutine %lld [%s]:", (long long)g->goid,
		       go_status_name(g->status, g->waitreason));
		if (g->tid)
			printf(" thread=%d", g->tid);
		if (g->waitsince)
			printf(" waitsince=%lld", (long long)g->waitsince);
		printf("\n");
		for (size_t k = 0; k < g->nframes; k++)
			print_frame(&g->frames[k], g->frames[k].inlined);
		if (g->end)
			printf("# end: %s\n", g->end);
		/* The runtime prints no creator for goroutine 1. */
		if (g->goid != 1 && go_goroutine__created_by(&rt, g, bias, &cb))
			printf("created by %s\n\t%s:%d +%#llx\n", cb.function,
			       cb.file ? cb.file : "?", cb.line,
			       (unsigned long long)(cb.pc - cb.entry));
		printf("\n");
		fpc += g->fp_checked;
		fpm += g->fp_mismatch;
	}
	printf("# %zu goroutines; frame pointers checked %u, mismatched %u\n",
	       ngs, fpc, fpm);
	go_goroutines__free(gs, ngs);
	free(thr);
	stacksnap_mem__free(mem);
	stacksnap_snapshot__free(snap);
	stacksnap_ctx__free(ctx);
	go_runtime__close(&rt);
	elf_image__free(img);
	return 0;
}
