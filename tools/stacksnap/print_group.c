/* print_group.c - threads whose stacks are identical, grouped: one block
 * per distinct stack in the text output (pt-pmp's `sort | uniq -c` over a
 * dump), and the JSON's "groups". */
#include "print_group.h"
#include "print_waits.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

/* A hash of what same_stack() compares (pcs, counts, the end). */
static uint64_t stack_hash(const struct thread_result *r)
{
	uint64_t h = mix((uint64_t)r->thread->error, (uint64_t)r->end);

	if (r->thread->error)
		return h;
	h = mix(h, r->nout);
	h = mix(h, r->nrframes);
	for (size_t i = 0; i < r->nout; i++)
		h = mix(h, r->out[i].frame->pc);
	return h;
}

/* Whether a and b print the same stack: the same error, or the same lines
 * (pc, name, module, file:line, inlined, signal frame), the same runtime
 * frames, ends, exception and wait channel. Ids, names and states may
 * differ: the group's header lists them. */
static bool same_stack(const struct thread_result *a, const struct thread_result *b)
{
	if (a->thread->error != b->thread->error || !a->exception != !b->exception ||
	    (a->exception && (a->exception->object != b->exception->object ||
			      strcmp(a->exception->type, b->exception->type) ||
			      strcmp(a->exception->what, b->exception->what))))
		return false;
	if (a->thread->error)
		return true;
	if (a->end != b->end || a->nout != b->nout || a->nrframes != b->nrframes ||
	    !same_str(a->rend, b->rend) || a->holds_gil != b->holds_gil ||
	    !same_str(a->wchan, b->wchan) || !print_wait_same(a, b) ||
	    a->rname_java != b->rname_java)
		return false;
	for (size_t i = 0; i < a->nout; i++) {
		const struct out_frame *x = &a->out[i], *y = &b->out[i];

		if (x->frame->pc != y->frame->pc ||
		    (x->frame->flags ^ y->frame->flags) & STACKSNAP_FRAME_SIGRETURN ||
		    x->frame->trust != y->frame->trust ||
		    (x->frame - a->frames) != (y->frame - b->frames) ||
		    !same_str(x->sym.function, y->sym.function) ||
		    x->sym.offset != y->sym.offset || x->sym.inlined != y->sym.inlined ||
		    !same_str(x->sym.module, y->sym.module) ||
		    !same_str(x->sym.file, y->sym.file) || x->sym.line != y->sym.line ||
		    x->jit_start != y->jit_start || x->jit_end != y->jit_end)
			return false;
	}
	for (size_t i = 0; i < a->nrframes; i++) {
		const struct stacksnap_runtime_frame *x = &a->rframes[i], *y = &b->rframes[i];

		if (x->native_index != y->native_index || x->flags != y->flags ||
		    x->runtime != y->runtime || x->pc != y->pc || x->line != y->line ||
		    !same_str(x->function, y->function) || !same_str(x->file, y->file))
			return false;
	}
	return true;
}

/* Most threads first; equal counts by their first thread's id. */
static int cmp_groups(const void *pa, const void *pb)
{
	const struct thread_group *a = pa, *b = pb;

	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return (a->first > b->first) - (a->first < b->first);
}

int thread_groups(const struct thread_result *r, size_t n,
		  struct thread_grouping *out)
{
	size_t *next = malloc((n ? n : 1) * sizeof(*next));
	size_t *last = malloc((n ? n : 1) * sizeof(*last));
	uint64_t *hash = malloc((n ? n : 1) * sizeof(*hash));
	struct thread_group *g = calloc(n ? n : 1, sizeof(*g));
	size_t ng = 0, k = 0;

	memset(out, 0, sizeof(*out));
	out->members = malloc((n ? n : 1) * sizeof(*out->members));
	if (!next || !last || !hash || !g || !out->members) {
		free(next), free(last), free(hash), free(g), free(out->members);
		out->members = NULL;
		return -1;
	}
	/* Each thread joins the first earlier group with its stack (r is in
	 * tid order: a group's members too); a chain through next[]. */
	for (size_t i = 0; i < n; i++) {
		size_t j;

		hash[i] = stack_hash(&r[i]);
		next[i] = SIZE_MAX;
		for (j = 0; j < ng; j++)
			if (hash[g[j].first] == hash[i] && same_stack(&r[g[j].first], &r[i]))
				break;
		if (j == ng) {
			g[ng].first = i;
			last[ng++] = i;
		} else {
			next[last[j]] = i;
			last[j] = i;
		}
		g[j].n++;
	}
	qsort(g, ng, sizeof(*g), cmp_groups);
	for (size_t j = 0; j < ng; j++) {
		size_t i = g[j].first;

		g[j].first = k;
		for (; i != SIZE_MAX; i = next[i])
			out->members[k++] = i;
	}
	free(next), free(last), free(hash);
	out->groups = g;
	out->ngroups = ng;
	return 0;
}

void thread_grouping_free(struct thread_grouping *g)
{
	free(g->members);
	free(g->groups);
	memset(g, 0, sizeof(*g));
}

/* "1201-1250 (worker), 1251 (holder)": runs of consecutive ids with the
 * same name (and runtime name) as one range. */
void print_group_threads(FILE *f, const struct thread_result *r,
			 const size_t *m, size_t n)
{
	for (size_t i = 0; i < n;) {
		const struct thread_result *a = &r[m[i]];
		size_t j = i + 1;

		while (j < n && r[m[j]].thread->tid == r[m[j - 1]].thread->tid + 1 &&
		       !strcmp(r[m[j]].thread->name, a->thread->name) &&
		       same_str(r[m[j]].rname, a->rname))
			j++;
		fprintf(f, "%s%d", i ? ", " : "", (int)a->thread->tid);
		if (j - i > 1)
			fprintf(f, "-%d", (int)r[m[j - 1]].thread->tid);
		fprintf(f, " (%s", a->thread->name);
		if (a->rname)
			fprintf(f, ", %s thread \"%s\"", a->rname_java ? "Java" : "Python",
				a->rname);
		fputc(')', f);
		i = j;
	}
}

/* The states of a group's threads, each letter once ("S", "S,R"). */
void print_group_states(FILE *f, const struct thread_result *r,
			const size_t *m, size_t n)
{
	char seen[16];
	size_t ns = 0;

	for (size_t i = 0; i < n; i++) {
		char c = r[m[i]].thread->state ? r[m[i]].thread->state : '?';

		if (memchr(seen, c, ns) || ns == sizeof(seen))
			continue;
		fprintf(f, "%s%c", ns ? "," : "", c);
		seen[ns++] = c;
	}
}

int print_text_grouped(FILE *f, const struct options *o,
		       const struct thread_result *r, size_t n)
{
	struct thread_grouping g;

	if (thread_groups(r, n, &g))
		return -1;
	for (size_t j = 0; j < g.ngroups; j++) {
		const size_t *m = &g.members[g.groups[j].first];
		const struct thread_result *a = &r[m[0]];

		if (g.groups[j].n == 1) {
			print_thread_text(f, o, a, !j, r, n);
			continue;
		}
		fprintf(f, "%s%zu threads: ", j ? "\n" : "", g.groups[j].n);
		print_group_threads(f, r, m, g.groups[j].n);
		fputs(" state ", f);
		print_group_states(f, r, m, g.groups[j].n);
		if (a->wchan)
			fprintf(f, " (%s)", a->wchan);
		fprintf(f, "%s:\n", a->holds_gil ? " [holds the GIL]" : "");
		/* How long its threads have waited: the range. */
		uint64_t lo = 0, hi = 0;

		for (size_t k = 0; k < g.groups[j].n; k++) {
			const struct stacksnap_wait *w = r[m[k]].wait;
			uint64_t ns = w ? w->waited_ns : 0;

			if (!ns) {
				lo = hi = 0;	/* one not known: none said */
				break;
			}
			lo = !lo || ns < lo ? ns : lo;
			hi = ns > hi ? ns : hi;
		}
		print_thread_body(f, o, a, r, n, lo, hi);
	}
	thread_grouping_free(&g);
	return 0;
}

void print_groups_json(FILE *f, const struct thread_result *r, size_t n)
{
	struct thread_grouping g;

	if (thread_groups(r, n, &g))
		return;
	fputs(",\"groups\":[", f);
	for (size_t j = 0; j < g.ngroups; j++) {
		const size_t *m = &g.members[g.groups[j].first];

		fprintf(f, "%s{\"count\":%zu,\"tids\":[", j ? "," : "", g.groups[j].n);
		for (size_t i = 0; i < g.groups[j].n; i++)
			fprintf(f, "%s%d", i ? "," : "", (int)r[m[i]].thread->tid);
		fputs("]}", f);
	}
	fputc(']', f);
	thread_grouping_free(&g);
}
