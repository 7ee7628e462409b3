/* print_group.h - threads with identical stacks grouped (print_group.c):
 * the text output's one block per distinct stack and the JSON's "groups".
 * A group never hides a difference: its threads' frames (pc, name, module,
 * line, inlined, signal frame), runtime frames, ends, exceptions and wait
 * channels are all equal; only their ids, names and states differ, and
 * the header lists them. */
#ifndef STACKSNAP_TOOL_PRINT_GROUP_H
#define STACKSNAP_TOOL_PRINT_GROUP_H

#include "print.h"

struct thread_group {
	size_t first;	/* its first member in thread_grouping.members */
	size_t n;	/* its threads, >= 1 */
};

/* Groups of threads, most threads first (equal counts: by the first
 * thread's id); members are indices into the results, in their order. */
struct thread_grouping {
	struct thread_group *groups;
	size_t ngroups;
	size_t *members;
};

/* Groups r[0..n) (sorted by tid). Returns 0, or -1 out of memory. */
int thread_groups(const struct thread_result *r, size_t n,
		  struct thread_grouping *out);
void thread_grouping_free(struct thread_grouping *g);
/* "1201-1250 (worker), 1251 (holder)" and "S,R" of members m[0..n). */
void print_group_threads(FILE *f, const struct thread_result *r,
			 const size_t *m, size_t n);
void print_group_states(FILE *f, const struct thread_result *r,
			const size_t *m, size_t n);
/* The text dump, one block per group (a group of one as print_text()
 * prints it). Returns 0, or -1 out of memory (nothing printed). */
int print_text_grouped(FILE *f, const struct options *o,
		       const struct thread_result *r, size_t n);
/* ,"groups":[{"count":N,"tids":[...]},...] */
void print_groups_json(FILE *f, const struct thread_result *r, size_t n);

#endif
