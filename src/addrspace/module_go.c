/* module_go.c - a Go module's pclntab as a symbol source and its pcsp rows
 * as the unwind table of an image without CFI (docs/go.md). */
#include "addrspace/module.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/gopclntab.h"
#include "table/go_pcsp.h"
#include "table/unwind_table.h"

struct gopclntab *module__go(struct stacksnap_ctx *ctx, struct module *m)
{
	struct gopclntab *t;

	if (m->go_tried)
		return m->go;
	m->go_tried = true;
	if (m->is_vdso)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (gopclntab__open_elf(t, m->img, &ctx->log) != 0) {
		free(t);
		return NULL;
	}
	log_info(&ctx->log, "%s: Go program, %llu functions in its pclntab",
		 m->name, (unsigned long long)t->nfunc);
	m->go = t;
	return t;
}

struct unwind_table *module__go_table(struct stacksnap_ctx *ctx,
				      struct module *m)
{
	struct gopclntab *t = module__go(ctx, m);
	struct go_pcsp_func *funcs;
	struct go_pcsp_rows rows;
	struct unwind_table *table = NULL;
	size_t n;

	if (!t || gopclntab__pcsp_funcs(t, &funcs, &n) != 0)
		return NULL;
	if (go_pcsp__compile(funcs, n, t->quantum, &ctx->log, &rows) == 0) {
		if (go_pcsp__table(&rows, &table) == 0)
			log_info(&ctx->log, "%s: unwind table from the pcsp "
				 "tables of %zu functions", m->name, rows.funcs);
		go_pcsp__free(&rows);
	}
	free(funcs);
	return table;
}

int module__go_symbolize(struct stacksnap_ctx *ctx, struct module *m,
			 uint64_t vaddr, bool lines, struct stacksnap_sym *out,
			 size_t max)
{
	struct gopclntab *t = module__go(ctx, m);
	struct go_frame fr[16];
	int n;

	if (!t || !max)
		return 0;
	n = gopclntab__frames(t, vaddr, fr, 16);
	if (n <= 0)
		return 0;
	/* Inlined calls are frames, with or without --lines: the pclntab
	 * names them at no cost beyond the lookup (Go's traceback, pprof
	 * and the goroutine list show them too). */
	if ((size_t)n > max) {
		/* Keep the containing function last. */
		fr[max - 1] = fr[n - 1];
		n = (int)max;
	}
	for (int i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].function = fr[i].function;
		out[i].offset = vaddr - fr[i].entry;
		out[i].inlined = fr[i].inlined;
		if (lines) {
			out[i].file = fr[i].file;
			out[i].line = fr[i].line;
		}
	}
	return n;
}

bool module__go_is_bottom(struct stacksnap_ctx *ctx, struct module *m,
			  uint64_t call)
{
	/* Where a thread's stack switched (the callee runs on the system
	 * stack g0, what lies above is g0's stale words, never a caller:
	 * Go's own traceback stops there, topofstack in traceback.go), or
	 * where it started (goexit; a thread the runtime cloned, whose
	 * runtime.clone called mstart on its fresh stack). */
	static const char *const bottoms[] = {
		"runtime.mcall", "runtime.morestack", "runtime.systemstack",
		"runtime.asmcgocall", "runtime.goexit", "runtime.clone",
	};
	struct gopclntab *t = module__go(ctx, m);
	struct go_func f;
	const char *name;

	if (!t || gopclntab__find_func(t, call, &f) != 0 ||
	    !(name = gopclntab__func_name(t, &f)) || strncmp(name, "runtime.", 8))
		return false;
	for (size_t i = 0; i < sizeof(bottoms) / sizeof(bottoms[0]); i++)
		if (strcmp(name, bottoms[i]) == 0)
			return true;
	return false;
}

void module__go_free(struct module *m)
{
	free(m->go);
	m->go = NULL;
}
