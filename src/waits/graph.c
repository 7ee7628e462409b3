/* graph.c - the cycles of a wait-for graph given as edges between
 * (pid, tid) nodes: each thread points at the holders of what it waits
 * for; a cycle is a deadlock. A process as a whole (tid 0) is a node too,
 * pointing at its waiting threads (the caller adds those edges), so a
 * cycle may run through a pipe or a file lock held by another process.
 * Knows nothing of what an edge means. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "waits_internal.h"
#include "base/vec.h"

enum { WHITE, GREY, BLACK };

/* The search's state. Invariant: nodes sorted, unique; edges sorted by
 * from, edge_start[k] the first edge out of nodes[k]. */
struct search {
	struct stacksnap_wait_owner *nodes;
	size_t nnodes;
	struct stacksnap_wait_edge *edges;
	size_t nedges;
	size_t *edge_start;
	unsigned char *colour;
	size_t *path, *next;
	/* Out: members of every cycle, and each cycle's start (n + 1). */
	struct stacksnap_wait_owner *members;
	size_t nmembers, members_cap;
	size_t *starts;
	size_t nstarts, starts_cap;
};

static int cmp_owner(const void *a, const void *b)
{
	const struct stacksnap_wait_owner *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_edge(const void *a, const void *b)
{
	return cmp_owner(&((const struct stacksnap_wait_edge *)a)->from,
			 &((const struct stacksnap_wait_edge *)b)->from);
}

static size_t node_of(const struct search *s, const struct stacksnap_wait_owner *o)
{
	const struct stacksnap_wait_owner *n =
		bsearch(o, s->nodes, s->nnodes, sizeof(*o), cmp_owner);

	return (size_t)(n - s->nodes);
}

/* Records the cycle path[from, depth) (threads only), rotated to start at
 * its smallest node so that one cycle reached twice is kept once. */
static int add_cycle(struct search *s, size_t from, size_t depth)
{
	size_t low = SIZE_MAX, len = 0, first = s->nmembers;

	for (size_t i = from; i < depth; i++)
		if (s->nodes[s->path[i]].tid && (low == SIZE_MAX || s->path[i] < s->path[low]))
			low = i;
	if (low == SIZE_MAX)
		return 0;
	for (size_t k = 0; k < depth - from; k++) {
		size_t i = from + (low - from + k) % (depth - from);
		struct stacksnap_wait_owner *m;

		if (!s->nodes[s->path[i]].tid)
			continue;
		if (!(m = VEC_PUSH(s->members, s->nmembers, s->members_cap)))
			return -ENOMEM;
		*m = s->nodes[s->path[i]];
		len++;
	}
	for (size_t c = 0; c + 1 < s->nstarts; c++)
		if (s->starts[c + 1] - s->starts[c] == len &&
		    !memcmp(&s->members[s->starts[c]], &s->members[first],
			    len * sizeof(*s->members))) {
			s->nmembers = first;
			return 0;
		}
	size_t *end = VEC_PUSH(s->starts, s->nstarts, s->starts_cap);

	if (!end)
		return -ENOMEM;
	*end = s->nmembers;
	return 0;
}

/* Depth first from root, without recursion (a convoy of 100,000 threads
 * each waiting for the next is one path): path[0, depth) the nodes on
 * it, next[k] the next edge of path[k] to follow. An edge to a node on
 * the path (grey) closes a cycle. */
static int visit(struct search *s, size_t root)
{
	size_t depth = 1;
	int err;

	s->path[0] = root;
	s->next[0] = s->edge_start[root];
	s->colour[root] = GREY;
	while (depth) {
		size_t me = s->path[depth - 1], e = s->next[depth - 1]++;

		if (e >= s->edge_start[me + 1]) {
			s->colour[me] = BLACK;
			depth--;
			continue;
		}
		size_t k = node_of(s, &s->edges[e].to);

		if (s->colour[k] == GREY) {
			size_t from = depth - 1;

			while (s->path[from] != k)
				from--;
			if ((err = add_cycle(s, from, depth)) < 0)
				return err;
		} else if (s->colour[k] == WHITE) {
			s->colour[k] = GREY;
			s->path[depth] = k;
			s->next[depth++] = s->edge_start[k];
		}
	}
	return 0;
}

int stacksnap_wait_cycles(const struct stacksnap_wait_edge *edges, size_t n,
			  struct stacksnap_wait_owner **members, size_t **starts,
			  size_t *ncycles)
{
	struct search s;
	int err = -ENOMEM;

	memset(&s, 0, sizeof(s));
	*members = NULL;
	*starts = NULL;
	*ncycles = 0;
	if (!n)
		return 0;
	s.nodes = malloc(2 * n * sizeof(*s.nodes));
	s.edges = malloc(n * sizeof(*s.edges));
	s.starts = malloc(sizeof(*s.starts));
	if (!s.nodes || !s.edges || !s.starts)
		goto out;
	s.starts_cap = s.nstarts = 1;
	s.starts[0] = 0;
	memcpy(s.edges, edges, n * sizeof(*edges));
	s.nedges = n;
	qsort(s.edges, n, sizeof(*s.edges), cmp_edge);
	for (size_t i = 0; i < n; i++) {
		s.nodes[2 * i] = edges[i].from;
		s.nodes[2 * i + 1] = edges[i].to;
	}
	qsort(s.nodes, 2 * n, sizeof(*s.nodes), cmp_owner);
	for (size_t i = 0; i < 2 * n; i++)
		if (!s.nnodes || cmp_owner(&s.nodes[s.nnodes - 1], &s.nodes[i]))
			s.nodes[s.nnodes++] = s.nodes[i];
	s.edge_start = calloc(s.nnodes + 1, sizeof(*s.edge_start));
	s.colour = calloc(s.nnodes, 1);
	s.path = calloc(s.nnodes, sizeof(*s.path));
	s.next = calloc(s.nnodes, sizeof(*s.next));
	if (!s.edge_start || !s.colour || !s.path || !s.next)
		goto out;
	for (size_t k = 0, e = 0; k <= s.nnodes; k++) {
		while (k < s.nnodes && e < n && cmp_owner(&s.edges[e].from, &s.nodes[k]) < 0)
			e++;
		s.edge_start[k] = k < s.nnodes ? e : n;
	}
	err = 0;
	for (size_t k = 0; k < s.nnodes && !err; k++)
		if (s.colour[k] == WHITE)
			err = visit(&s, k);
out:
	free(s.nodes);
	free(s.edges);
	free(s.edge_start);
	free(s.colour);
	free(s.path);
	free(s.next);
	if (err) {
		free(s.members);
		free(s.starts);
		return fail(err);
	}
	*members = s.members;
	*starts = s.starts;
	*ncycles = s.nstarts - 1;
	return 0;
}

int waits_graph__cycles(struct stacksnap_waits *w)
{
	struct stacksnap_wait_edge *edges = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	for (size_t i = 0; i < w->n; i++) {
		const struct wait_thread *t = &w->threads[i];

		for (size_t k = 0; k < t->pub.nowners; k++) {
			struct stacksnap_wait_edge *e = VEC_PUSH(edges, n, cap);

			if (!e) {
				free(edges);
				return -ENOMEM;
			}
			e->from.pid = w->pid;
			e->from.tid = t->th->tid;
			e->to = t->pub.owners[k];
		}
	}
	if (stacksnap_wait_cycles(edges, n, &w->members, &w->start, &w->ncycles))
		err = -errno;
	free(edges);
	return err;
}
