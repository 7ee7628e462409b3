/* stacks.h - the aggregated-stacks structure shared by every profile
 * writer (folded, pprof, speedscope, SVG; writers.h): interned frames, the
 * call tree of distinct stacks, and the name-merged tree the pictures are
 * drawn from. */
#ifndef SS_PROFILE_STACKS_H
#define SS_PROFILE_STACKS_H

#include <stdint.h>
#include <stdio.h>

#include "stacksnap.h"

/* One distinct frame. Strings are interned in the owning stacks (equal
 * strings are equal pointers); disp is the name the pictures and folded
 * stacks show: the function tidied as stackcollapse-perf.pl tidies it
 * (no parameter list, ';' made ':'), "[module]" when only the module is
 * known, "[unknown]" otherwise. */
struct sframe {
	const char *name, *module, *file, *disp;
	const uint8_t *build_id;
	uint8_t build_id_len;
	uint8_t kind;
	bool inlined;
	int line;
	uint64_t addr, map_start, map_end, map_offset;
	uint64_t hash;
};

/* A node of the call tree: the stack from the root down to it. Node 0 is
 * the root (no frame). Invariant: parent < own index; total = self + the
 * totals of the children. */
struct snode {
	uint32_t parent, frame;
	uint64_t self, total;
};

struct stacksnap_stacks {
	struct stacksnap_stacks_opts o;	/* strings point into pool */
	struct sframe *frames;
	size_t nframes, capframes;
	uint32_t *frame_set;		/* frame index + 1; 0 empty */
	size_t frame_set_cap;		/* power of two, > 2 * nframes */
	struct snode *nodes;
	size_t nnodes, capnodes;
	uint32_t *child_set;		/* node index + 1, keyed (parent, frame) */
	size_t child_set_cap;		/* power of two, > 2 * nnodes */
	const char **strs;		/* interned strings (hash set) */
	size_t nstrs, strs_cap;
	struct str_chunk *chunks;	/* the bytes of interned strings */
	uint64_t samples;
	size_t distinct;		/* nodes with self > 0 */
};

/* Interns s[0..len) (copied once). NULL on -ENOMEM. */
const char *stacks_intern(struct stacksnap_stacks *st, const char *s, size_t len);

/* The name-merged tree the SVG and speedscope draw: children of a node
 * with the same disp are one node; children sorted by disp. For a
 * differential graph, base's stacks are merged in too, into base_total
 * (nodes only base has get total 0). first_child/next_sibling chain the
 * children in order; node 0 is the root. */
struct mnode {
	const struct sframe *frame;	/* a representative frame (NULL: root) */
	uint32_t parent, first_child, next_sibling, depth;
	uint64_t self, total, base_total;
};
struct mtree {
	struct mnode *n;
	size_t nn, cap;
	unsigned max_depth;
};
int mtree_build(struct mtree *t, const struct stacksnap_stacks *st,
		const struct stacksnap_stacks *base);
void mtree_free(struct mtree *t);

#endif
