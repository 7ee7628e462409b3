/* trace_go.c - the goroutine a traced event's thread ran in a Go program:
 * a reader per process, opened at its first event (nothing kept for other
 * programs but their pid), asked for the g in the event's r14. */
#include <errno.h>
#include <stdlib.h>

#include "trace_go.h"

/* Processes remembered: beyond it every event of a new one opens again. */
#define TRACE_GO_MAX 4096

int64_t trace_go_goid(struct trace_go *tg, pid_t pid, const uint64_t *regs)
{
	struct stacksnap_goroutines *g = NULL;
	size_t i;
	int64_t goid;

	for (i = 0; i < tg->n && tg->v[i].pid != pid; i++)
		;
	if (i < tg->n) {
		g = tg->v[i].g;
	} else {
		g = stacksnap_goroutines__open(NULL, pid);
		if (tg->n == tg->cap && tg->cap < TRACE_GO_MAX) {
			size_t cap = tg->cap ? tg->cap * 2 : 16;
			void *v = realloc(tg->v, cap * sizeof(*tg->v));

			if (v) {
				tg->v = v;
				tg->cap = cap;
			}
		}
		if (tg->n < tg->cap) {
			tg->v[tg->n].pid = pid;
			tg->v[tg->n++].g = g;
		} else {
			goid = stacksnap_goroutines__goid_at(g, regs);
			stacksnap_goroutines__free(g);
			return goid > 0 ? goid : 0;
		}
	}
	goid = g ? stacksnap_goroutines__goid_at(g, regs) : -1;
	return goid > 0 ? goid : 0;
}

void trace_go_free(struct trace_go *tg)
{
	for (size_t i = 0; i < tg->n; i++)
		stacksnap_goroutines__free(tg->v[i].g);
	free(tg->v);
	tg->v = NULL;
	tg->n = tg->cap = 0;
}
