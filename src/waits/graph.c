/* graph.c - the cycles of the wait-for graph: each thread points at the
 * threads that hold what it waits for; a cycle is a deadlock. Knows only
 * threads and their holders, never what they wait on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "waits_internal.h"
#include "base/vec.h"

enum { WHITE, GREY, BLACK };

/* Records the cycle path[from, depth) (each waits for the next, the last
 * for the first), rotated to start at its smallest tid so that one cycle
 * reached from two threads is kept once. */
static int add_cycle(struct stacksnap_waits *w, struct wait_thread **path,
		     size_t from, size_t depth)
{
	size_t len = depth - from, low = from;

	for (size_t i = from; i < depth; i++)
		if (path[i]->th->tid < path[low]->th->tid)
			low = i;
	for (size_t c = 0; c < w->ncycles; c++) {
		size_t n = w->start[c + 1] - w->start[c];

		if (n == len && w->members[w->start[c]].tid == path[low]->th->tid)
			return 0;
	}
	if (!w->ncycles) {
		size_t *s = VEC_PUSH(w->start, w->ncycles, w->start_cap);

		if (!s)
			return -ENOMEM;
		*s = 0;
		w->ncycles = 0;
	}
	for (size_t k = 0; k < len; k++) {
		struct stacksnap_wait_owner *m = VEC_PUSH(w->members, w->nmembers,
							  w->members_cap);

		if (!m)
			return -ENOMEM;
		m->pid = w->pid;
		m->tid = path[from + (low - from + k) % len]->th->tid;
	}
	/* start[] holds ncycles + 1 entries: push the end of this one. */
	size_t n = w->ncycles + 1;
	size_t *s = VEC_PUSH(w->start, n, w->start_cap);

	if (!s)
		return -ENOMEM;
	*s = w->nmembers;
	w->ncycles++;
	return 0;
}

/* Depth-first from t; an edge to a thread on the path closes a cycle. */
static int visit(struct stacksnap_waits *w, struct wait_thread *t,
		 unsigned char *colour, struct wait_thread **path, size_t depth)
{
	int err;
	size_t me = (size_t)(t - w->threads);

	colour[me] = GREY;
	path[depth] = t;
	for (size_t i = 0; i < t->pub.nowners; i++) {
		const struct stacksnap_wait_owner *o = &t->pub.owners[i];
		struct wait_thread *next;

		if (!o->tid || o->pid != w->pid || !(next = waits__find(w, o->tid)))
			continue;
		size_t k = (size_t)(next - w->threads);

		if (colour[k] == GREY) {
			size_t from = depth;

			while (path[from] != next)
				from--;
			if ((err = add_cycle(w, path, from, depth + 1)) < 0)
				return err;
		} else if (colour[k] == WHITE &&
			   (err = visit(w, next, colour, path, depth + 1)) < 0) {
			return err;
		}
	}
	colour[me] = BLACK;
	return 0;
}

int waits_graph__cycles(struct stacksnap_waits *w)
{
	unsigned char *colour;
	struct wait_thread **path;
	int err = 0;

	if (!w->n)
		return 0;
	colour = calloc(w->n, 1);
	path = calloc(w->n, sizeof(*path));
	if (!colour || !path) {
		free(colour);
		free(path);
		return -ENOMEM;
	}
	for (size_t i = 0; i < w->n && !err; i++)
		if (colour[i] == WHITE)
			err = visit(w, &w->threads[i], colour, path, 0);
	free(colour);
	free(path);
	return err;
}
