/* go_threads_cmp.c - unwinds and names every thread of a running Go
 * program built stripped (-ldflags='-s -w' or strip) twice from one
 * capture: through the running binary (pclntab names, pcsp rows) and
 * through UNSTRIPPED, an unstripped binary with the same code (ELF
 * symbols, Go's .debug_frame), mapped at the same addresses; prints both
 * and exits 1 when a frame's pc, stepper, name or offset, or a walk's end,
 * differs. Usage: go_threads_cmp PID UNSTRIPPED */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stacksnap.h"

#define MAX_FRAMES 256

static struct stacksnap_addrspace *redirected(struct stacksnap_ctx *ctx,
					       pid_t pid, const char *exe,
					       const char *other)
{
	struct stacksnap_addrspace *as = stacksnap_addrspace__new(ctx);
	char path[64], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (as && f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8], file[PATH_MAX] = "";
		uint32_t prot = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi,
			   perms, &off, file) < 4 || !file[0] || file[0] == '[')
			continue;
		prot |= perms[0] == 'r' ? PROT_READ : 0;
		prot |= perms[1] == 'w' ? PROT_WRITE : 0;
		prot |= perms[2] == 'x' ? PROT_EXEC : 0;
		{
			STACKSNAP_OPTS(stacksnap_mapping, m, .start = lo,
				       .end = hi, .offset = off,
				       .path = strcmp(file, exe) ? file : other,
				       .prot = prot);
			stacksnap_addrspace__add_mapping(as, &m);
		}
	}
	if (f)
		fclose(f);
	return as;
}

/* The frame's name: from the pclntab (the default for a Go module), or
 * with symtab from the ELF symbol table, spelled as the pclntab spells
 * it (no ".abi0" suffix of assembly functions). */
static void name(struct stacksnap_addrspace *as, const struct stacksnap_frame *f,
		 bool ret, bool symtab, char *buf, size_t len)
{
	struct stacksnap_sym s;
	char *abi;

	if (stacksnap_addrspace__symbolize(as, f->pc, ret,
					   symtab ? STACKSNAP_SYM_SYMTAB : 0,
					   &s, 1) > 0 && s.function)
		snprintf(buf, len, "%s+%#llx", s.function,
			 (unsigned long long)s.offset);
	else
		snprintf(buf, len, "??");
	if ((abi = strstr(buf, ".abi0+")))
		memmove(abi, abi + 5, strlen(abi + 5) + 1);
}

int main(int argc, char **argv)
{
	STACKSNAP_OPTS(stacksnap_snapshot_opts, sopts, .freeze_all = true);
	struct stacksnap_ctx *ca, *cb;
	struct stacksnap_snapshot *snap;
	struct stacksnap_addrspace *asa, *asb;
	struct stacksnap_unwinder *uw;
	static struct stacksnap_frame fa[MAX_FRAMES], fb[MAX_FRAMES];
	char exe[PATH_MAX], link[64];
	size_t frames = 0, differ = 0, threads = 0;
	ssize_t len;
	pid_t pid;

	if (argc != 3) {
		fprintf(stderr, "usage: go_threads_cmp PID UNSTRIPPED\n");
		return 2;
	}
	pid = atoi(argv[1]);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	if (len <= 0)
		return 2;
	exe[len] = 0;
	ca = stacksnap_ctx__new(NULL);
	cb = stacksnap_ctx__new(NULL);
	uw = stacksnap_unwinder__new(NULL);
	snap = stacksnap_snapshot__capture(ca, pid, &sopts);
	asa = stacksnap_addrspace__from_pid(ca, pid);
	asb = redirected(cb, pid, exe, argv[2]);
	if (!snap || !asa || !asb || !uw) {
		fprintf(stderr, "go_threads_cmp: capture: %s\n", strerror(errno));
		return 2;
	}
	for (size_t i = 0; i < stacksnap_snapshot__thread_count(snap); i++) {
		const struct stacksnap_thread *t = stacksnap_snapshot__thread(snap, i);
		struct stacksnap_mem *mem;
		enum stacksnap_end ea, eb;
		int na, nb;

		if (!t->stack)
			continue;
		mem = stacksnap_mem__new_copy(t->stack, t->stack_len,
					      t->stack_base);
		na = stacksnap_unwind(uw, asa, &t->regs, mem, fa, MAX_FRAMES, &ea);
		nb = stacksnap_unwind(uw, asb, &t->regs, mem, fb, MAX_FRAMES, &eb);
		stacksnap_mem__free(mem);
		threads++;
		printf("thread %d: %d frames (%s), unstripped %d (%s)\n", t->tid,
		       na, stacksnap_end__str(ea), nb, stacksnap_end__str(eb));
		if (na != nb || ea != eb)
			differ++;
		for (int k = 0; k < na || k < nb; k++) {
			char a[512] = "-", b[512] = "-";
			bool same;

			char c[512] = "-";

			if (k < na)
				name(asa, &fa[k], k > 0, false, a, sizeof(a));
			if (k < nb) {
				name(asb, &fb[k], k > 0, false, b, sizeof(b));
				name(asb, &fb[k], k > 0, true, c, sizeof(c));
				/* The ELF symbol names the same function. */
				if (strcmp(b, c) != 0) {
					printf("  #%-2d symtab: %s, pclntab: %s\n",
					       k, c, b);
					differ++;
				}
			}
			same = k < na && k < nb && fa[k].pc == fb[k].pc &&
			       fa[k].sp == fb[k].sp && !strcmp(a, b);
			frames++;
			differ += !same;
			printf("  #%-2d %#llx %s%s%s\n", k,
			       (unsigned long long)(k < na ? fa[k].pc : fb[k].pc),
			       a, same ? "" : "  != unstripped ", same ? "" : b);
		}
	}
	printf("%zu threads, %zu frames compared, %zu differ\n", threads,
	       frames, differ);
	stacksnap_addrspace__free(asa);
	stacksnap_addrspace__free(asb);
	stacksnap_snapshot__free(snap);
	stacksnap_unwinder__free(uw);
	stacksnap_ctx__free(ca);
	stacksnap_ctx__free(cb);
	return differ ? 1 : 0;
}
