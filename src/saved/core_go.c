/* core_go.c - a Go program's goroutines read back from its core dump: the
 * goroutine list and each goroutine's stack are in the dumped memory, so
 * `stacksnap --core` lists them as a live capture does (docs/go.md). */
#include <stdlib.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "runtime/go/go_runtime.h"
#include "saved/readers.h"

void core_go__read(struct stacksnap_saved *s, uint64_t entry)
{
	const struct log_sink *log = &s->ctx->log;
	struct stacksnap_unwinder *uw = NULL;
	struct go_thread_regs *thr = NULL;
	struct goroutine *gs = NULL;
	const struct as_map *m;
	struct go_runtime rt;
	size_t n = 0;

	if (!entry || !s->mem || !s->as ||
	    !(m = addrspace__find(s->as, entry)) || !m->mod ||
	    !module__go(s->ctx, m->mod) ||
	    go_runtime__open(&rt, m->mod->img, log) != 0)
		return; /* not a Go program */
	thr = calloc(s->n ? s->n : 1, sizeof(*thr));
	uw = stacksnap_unwinder__new(NULL);
	if (!thr || !uw)
		goto out;
	for (size_t i = 0; i < s->n; i++) {
		thr[i].tid = s->threads[i].tid;
		thr[i].rip = s->threads[i].regs.regs[STACKSNAP_REG_RIP];
		thr[i].rsp = s->threads[i].regs.regs[STACKSNAP_REG_RSP];
		thr[i].rbp = s->threads[i].regs.regs[STACKSNAP_REG_RBP];
	}
	if (go_goroutines__read(&rt, s->mem, m->bias, GO_MAX_GOROUTINES, &gs,
				&n, log) != 0) {
		log_warn(log, "%s: the goroutine list could not be read from "
			 "the core", s->path);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (go_goroutine__unwind_with(&rt, uw, s->as, s->mem, m->bias,
					      &gs[i], thr, s->n) < 0)
			goto out;
	/* Strings point into the module's pclntab, which s's address space
	 * keeps; how long each waited is not known after the fact. */
	if (go_goroutines__publish(&rt, gs, n, m->bias, 0, &s->goroutines,
				   &s->gframes) == 0)
		s->ngoroutines = n;
out:
	go_goroutines__free(gs, n);
	stacksnap_unwinder__free(uw);
	free(thr);
	go_runtime__close(&rt);
}
