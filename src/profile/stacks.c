/* stacks.c - aggregated stacks: interned frames and the call tree of
 * distinct stacks every profile format is written from, the folded-stack
 * reader, and the name-merged tree the pictures are drawn from. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/module.h"
#include "base/log.h"
#include "base/opts.h"
#include "base/vec.h"
#include "profile/stacks.h"

/* Interned strings live in chunks that never move. */
struct str_chunk {
	struct str_chunk *next;
	size_t used, cap;
	char bytes[];
};

static uint64_t hash_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_bytes(const void *p, size_t len)
{
	const uint8_t *s = p;
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}

static char *chunk_alloc(struct stacksnap_stacks *st, size_t len)
{
	struct str_chunk *c = st->chunks;

	if (!c || c->cap - c->used < len) {
		size_t cap = len > 65536 ? len : 65536;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = st->chunks;
		c->used = 0;
		c->cap = cap;
		st->chunks = c;
	}
	c->used += len;
	return c->bytes + c->used - len;
}

/* Open addressing over pointers to NUL-terminated strings. Invariant:
 * strs_cap is a power of two and nstrs < strs_cap / 2. */
const char *stacks_intern(struct stacksnap_stacks *st, const char *s, size_t len)
{
	uint64_t h = hash_bytes(s, len);
	size_t i;

	if ((st->nstrs + 1) * 2 >= st->strs_cap) {
		size_t ncap = st->strs_cap ? st->strs_cap * 2 : 1024;
		const char **ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return NULL;
		for (size_t k = 0; k < st->strs_cap; k++) {
			const char *o = st->strs[k];

			if (!o)
				continue;
			for (i = hash_bytes(o, strlen(o)) & (ncap - 1); ns[i];
			     i = (i + 1) & (ncap - 1))
				;
			ns[i] = o;
		}
		free(st->strs);
		st->strs = ns;
		st->strs_cap = ncap;
	}
	for (i = h & (st->strs_cap - 1); st->strs[i]; i = (i + 1) & (st->strs_cap - 1))
		if (!strncmp(st->strs[i], s, len) && !st->strs[i][len])
			return st->strs[i];
	char *p = chunk_alloc(st, len + 1);

	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = 0;
	st->strs[i] = p;
	st->nstrs++;
	return p;
}

static const char *intern0(struct stacksnap_stacks *st, const char *s, bool *oom)
{
	const char *r;

	if (!s)
		return NULL;
	r = stacks_intern(st, s, strlen(s));
	if (!r)
		*oom = true;
	return r;
}

struct stacksnap_stacks *stacksnap_stacks__new(const struct stacksnap_stacks_opts *opts)
{
	struct stacksnap_stacks *st;
	struct stacksnap_stacks_opts o;
	bool oom = false;

	if (opts_in(&o, sizeof(o), opts, 0)) {
		errno = EINVAL;
		return NULL;
	}
	st = calloc(1, sizeof(*st));
	if (!st || !(st->nodes = calloc(st->capnodes = 256, sizeof(*st->nodes))))
		goto nomem;
	st->nnodes = 1; /* the root */
	st->o = o;
	st->o.sample_type = intern0(st, o.sample_type ? o.sample_type : "samples", &oom);
	st->o.sample_unit = intern0(st, o.sample_unit ? o.sample_unit : "count", &oom);
	st->o.period_type = intern0(st, o.period_type ? o.period_type : "cpu", &oom);
	if (oom)
		goto nomem;
	return st;
nomem:
	stacksnap_stacks__free(st);
	errno = ENOMEM;
	return NULL;
}

void stacksnap_stacks__free(struct stacksnap_stacks *st)
{
	if (!st)
		return;
	while (st->chunks) {
		struct str_chunk *c = st->chunks;

		st->chunks = c->next;
		free(c);
	}
	free(st->strs);
	free(st->frames);
	free(st->frame_set);
	free(st->nodes);
	free(st->child_set);
	free(st);
}

uint64_t stacksnap_stacks__samples(const struct stacksnap_stacks *st)
{
	return st ? st->samples : 0;
}

size_t stacksnap_stacks__distinct(const struct stacksnap_stacks *st)
{
	return st ? st->distinct : 0;
}

/* The length of name without its trailing parameter list and what follows
 * it (" const", " [clone .cold]"): the last '(' at nesting depth 0, not
 * after a space, after which no "::" comes at depth 0. Parentheses
 * inside <...>, {...} and [...] (function types in template arguments,
 * "{lambda()#1}") and those that name an operator ("operator()",
 * "operator<") are not one; a local entity's enclosing function
 * ("f(int)::S::g()") keeps its list. */
static size_t name_without_params(const char *name)
{
	size_t n = strlen(name), cut = n;
	int depth = 0;

	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!strncmp(name + i, "operator", 8) &&
		    (i == 0 || name[i - 1] == ':' || name[i - 1] == ' ') &&
		    !(name[i + 8] == '_' || (name[i + 8] >= 'a' && name[i + 8] <= 'z') ||
		      (name[i + 8] >= 'A' && name[i + 8] <= 'Z') ||
		      (name[i + 8] >= '0' && name[i + 8] <= '9'))) {
			/* The operator's symbol is part of the name. */
			i += 8;
			while (name[i] == ' ')
				i++;
			if (!strncmp(name + i, "()", 2) || !strncmp(name + i, "[]", 2))
				i += 1;
			else
				while (i + 1 < n && strchr("<>=!+-*/%^&|~,->", name[i + 1]) &&
				       strchr("<>=!+-*/%^&|~,->", name[i]))
					i++;
			continue;
		}
		if (c == '<' || c == '{' || c == '[')
			depth++;
		else if ((c == '>' || c == '}' || c == ']') && depth > 0)
			depth--;
		else if (c == '(' && depth == 0) {
			int d = 1;
			size_t j = i + 1;

			if (!strncmp(name + j, "anonymous namespace)", 20)) {
				i = j + 19;
				continue;
			}
			for (; j < n && d; j++)
				d += name[j] == '(' ? 1 : name[j] == ')' ? -1 : 0;
			/* After a space: a part of the name the dump prints
			   whole ("StubRoutines (1)", "... (old version:
			   class redefined)"), not a parameter list. */
			if (i == 0 || name[i - 1] != ' ')
				cut = i;
			i = j - 1;
		} else if (c == ':' && name[i + 1] == ':' && depth == 0) {
			cut = n;
		}
	}
	while (cut > 0 && cut < n && name[cut - 1] == ' ')
		cut--;
	return cut;
}

/* The name folded stacks and flame graphs show, as stackcollapse-perf.pl
 * tidies perf script's: without the trailing parameter list (Java
 * lambdas' ".(...)." aside), ';' made ':'. */
static const char *display_name(struct stacksnap_stacks *st,
				const struct stacksnap_stack_frame *f)
{
	const char *name = f->name;
	char tmp[256];
	size_t n;

	if (f->kind == STACKSNAP_KIND_LABEL) {
		int len = snprintf(tmp, sizeof(tmp), "%s=%s", name ? name : "",
				   f->file ? f->file : "");

		for (char *p = tmp; *p; p++)
			if (*p == ';')
				*p = ':';
		return stacks_intern(st, tmp, len < 0 ? 0
					      : (size_t)len < sizeof(tmp)
					      ? (size_t)len : sizeof(tmp) - 1);
	}
	if (!name) {
		const char *b = f->module ? strrchr(f->module, '/') : NULL;

		if (!f->module)
			return stacks_intern(st, "[unknown]", 9);
		snprintf(tmp, sizeof(tmp), "[%s]", b ? b + 1 : f->module);
		return stacks_intern(st, tmp, strlen(tmp));
	}
	n = strstr(name, ".(") ? strlen(name) : name_without_params(name);
	if (!memchr(name, ';', n))
		return stacks_intern(st, name, n);
	char *c = strndup(name, n);
	const char *r;

	if (!c)
		return NULL;
	for (char *p = c; *p; p++)
		if (*p == ';')
			*p = ':';
	r = stacks_intern(st, c, n);
	free(c);
	return r;
}

static uint64_t frame_hash(const struct sframe *f)
{
	uint64_t h = (uint64_t)(uintptr_t)f->name;

	h = hash_mix(h, (uintptr_t)f->module);
	h = hash_mix(h, (uintptr_t)f->file);
	h = hash_mix(h, (uintptr_t)f->build_id);
	h = hash_mix(h, f->addr);
	h = hash_mix(h, f->map_start);
	h = hash_mix(h, f->map_end ^ f->map_offset << 1);
	h = hash_mix(h, (uint64_t)f->line << 16 | f->kind << 1 | f->inlined);
	return h;
}

static bool frame_eq(const struct sframe *a, const struct sframe *b)
{
	return a->name == b->name && a->module == b->module && a->file == b->file &&
	       a->build_id == b->build_id && a->addr == b->addr &&
	       a->map_start == b->map_start && a->map_end == b->map_end &&
	       a->map_offset == b->map_offset && a->line == b->line &&
	       a->kind == b->kind && a->inlined == b->inlined;
}

/* Doubles an index set (entries are index + 1) rehashing with key(). */
static int set_grow(uint32_t **set, size_t *cap, const void *owner,
		    uint64_t (*key)(const void *owner, uint32_t idx))
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	uint32_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t k = 0; k < *cap; k++) {
		uint32_t v = (*set)[k];
		size_t i;

		if (!v)
			continue;
		for (i = key(owner, v - 1) & (ncap - 1); ns[i]; i = (i + 1) & (ncap - 1))
			;
		ns[i] = v;
	}
	free(*set);
	*set = ns;
	*cap = ncap;
	return 0;
}

static uint64_t frame_key(const void *owner, uint32_t idx)
{
	return ((const struct stacksnap_stacks *)owner)->frames[idx].hash;
}

static uint64_t child_hash(uint32_t parent, uint32_t frame)
{
	return hash_mix(hash_mix(0x1234567, parent), frame);
}

static uint64_t child_key(const void *owner, uint32_t idx)
{
	const struct snode *n = &((const struct stacksnap_stacks *)owner)->nodes[idx];

	return child_hash(n->parent, n->frame);
}

/* The index of the frame equal to f, added when new; -1 on ENOMEM. */
static int64_t frame_index(struct stacksnap_stacks *st,
			   const struct stacksnap_stack_frame *in)
{
	struct sframe f = { 0 };
	bool oom = false;
	size_t i;

	f.name = intern0(st, in->name, &oom);
	f.module = intern0(st, in->module, &oom);
	f.file = intern0(st, in->file, &oom);
	if (in->build_id && in->build_id_len) {
		size_t bl = in->build_id_len > 64 ? 64 : in->build_id_len;
		char hex[129];

		static const char digits[] = "0123456789abcdef";

		/* No sprintf: this runs for every frame of every sample. */
		for (size_t k = 0; k < bl; k++) {
			hex[2 * k] = digits[in->build_id[k] >> 4];
			hex[2 * k + 1] = digits[in->build_id[k] & 15];
		}
		hex[2 * bl] = 0;
		/* Interned as hex text: equal ids are equal pointers. */
		f.build_id = (const uint8_t *)stacks_intern(st, hex, 2 * bl);
		f.build_id_len = (uint8_t)bl;
		oom |= !f.build_id;
	}
	if (oom)
		return -1;
	f.kind = in->kind;
	f.inlined = in->inlined;
	f.line = in->file ? in->line : 0;
	f.addr = in->addr;
	f.map_start = in->map_start;
	f.map_end = in->map_end;
	f.map_offset = in->map_offset;
	f.hash = frame_hash(&f);
	if ((st->nframes + 1) * 2 >= st->frame_set_cap &&
	    set_grow(&st->frame_set, &st->frame_set_cap, st, frame_key))
		return -1;
	for (i = f.hash & (st->frame_set_cap - 1); st->frame_set[i];
	     i = (i + 1) & (st->frame_set_cap - 1))
		if (frame_eq(&st->frames[st->frame_set[i] - 1], &f))
			return st->frame_set[i] - 1;
	if (st->nframes >= UINT32_MAX - 1)
		return -1;
	f.disp = display_name(st, in);
	if (!f.disp)
		return -1;
	struct sframe *slot = VEC_PUSH(st->frames, st->nframes, st->capframes);

	if (!slot)
		return -1;
	*slot = f;
	st->frame_set[i] = (uint32_t)st->nframes;
	return (int64_t)st->nframes - 1;
}

/* The child of parent for frame, added when new; -1 on ENOMEM. */
static int64_t child_index(struct stacksnap_stacks *st, uint32_t parent, uint32_t frame)
{
	uint64_t h = child_hash(parent, frame);
	size_t i;

	if ((st->nnodes + 1) * 2 >= st->child_set_cap &&
	    set_grow(&st->child_set, &st->child_set_cap, st, child_key))
		return -1;
	for (i = h & (st->child_set_cap - 1); st->child_set[i];
	     i = (i + 1) & (st->child_set_cap - 1)) {
		const struct snode *n = &st->nodes[st->child_set[i] - 1];

		if (n->parent == parent && n->frame == frame)
			return st->child_set[i] - 1;
	}
	if (st->nnodes >= UINT32_MAX - 1)
		return -1;
	struct snode *n = VEC_PUSH(st->nodes, st->nnodes, st->capnodes);

	if (!n)
		return -1;
	*n = (struct snode){ .parent = parent, .frame = frame };
	st->child_set[i] = (uint32_t)st->nnodes;
	return (int64_t)st->nnodes - 1;
}

/* count more samples of the stack ending at node. */
static void add_at(struct stacksnap_stacks *st, uint32_t node, uint64_t count)
{
	if (!st->nodes[node].self && count)
		st->distinct++;
	st->nodes[node].self += count;
	for (uint32_t k = node;; k = st->nodes[k].parent) {
		st->nodes[k].total += count;
		if (!k)
			break;
	}
	st->samples += count;
}

int stacksnap_stacks__add_id(struct stacksnap_stacks *st,
			     const struct stacksnap_stack_frame *frames, size_t n,
			     uint64_t count, uint64_t *id)
{
	uint32_t node = 0;

	if (!st || (n && !frames))
		return fail(-EINVAL);
	for (size_t i = n; i-- > 0;) {
		int64_t f = frame_index(st, &frames[i]);
		int64_t c = f < 0 ? -1 : child_index(st, node, (uint32_t)f);

		if (c < 0)
			return fail(-ENOMEM);
		node = (uint32_t)c;
	}
	add_at(st, node, count);
	if (id)
		*id = node;
	return 0;
}

int stacksnap_stacks__add(struct stacksnap_stacks *st,
			  const struct stacksnap_stack_frame *frames, size_t n,
			  uint64_t count)
{
	return stacksnap_stacks__add_id(st, frames, n, count, NULL);
}

int stacksnap_stacks__add_again(struct stacksnap_stacks *st, uint64_t id,
				uint64_t count)
{
	if (!st || id >= st->nnodes)
		return fail(-EINVAL);
	add_at(st, (uint32_t)id, count);
	return 0;
}

int stacksnap_stacks__add_folded(struct stacksnap_stacks *st,
				 struct stacksnap_ctx *ctx, const char *text,
				 size_t len)
{
	const struct log_sink *log = ctx ? &ctx->log : NULL;
	struct stacksnap_stack_frame *fr = NULL;
	size_t cap = 0, lineno = 0;
	int stacks = 0, err = 0;
	char *name = NULL;
	size_t namecap = 0;

	if (!st || (len && !text))
		return fail(-EINVAL);
	for (size_t pos = 0; pos < len && !err;) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - line) : len - pos;
		size_t nfr = 0;

		pos += ll + (nl != NULL);
		lineno++;
		if (ll && line[ll - 1] == '\r')
			ll--;
		if (!ll || line[0] == '#')
			continue;
		/* "stack COUNT": the count after the last space. */
		const char *sp = memrchr(line, ' ', ll);
		uint64_t count = 0;
		bool bad = !sp || sp == line || sp + 1 == line + ll;

		/* Decimal digits to the line's end, read within it (the text
		 * need not end in a NUL: strtoull could read past it). */
		for (const char *d = sp ? sp + 1 : line; !bad && d < line + ll; d++) {
			if (*d < '0' || *d > '9' || count > (UINT64_MAX - (uint64_t)(*d - '0')) / 10)
				bad = true;
			else
				count = count * 10 + (uint64_t)(*d - '0');
		}
		if (bad) {
			log_err(log, "folded stacks: line %zu: expected \"frame;frame;... COUNT\"",
				lineno);
			err = -EINVAL;
			break;
		}
		if ((size_t)(sp - line) + 1 > namecap) {
			char *nn = realloc(name, (namecap = (size_t)(sp - line) + 1));

			if (!nn) {
				err = -ENOMEM;
				break;
			}
			name = nn;
		}
		memcpy(name, line, (size_t)(sp - line));
		name[sp - line] = 0;
		/* Frames outermost first in the text; innermost first for add. */
		for (char *tok = name, *next; tok; tok = next) {
			next = strchr(tok, ';');
			if (next)
				*next++ = 0;
			if (nfr >= cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct stacksnap_stack_frame *nf = realloc(fr, ncap * sizeof(*nf));

				if (!nf) {
					err = -ENOMEM;
					break;
				}
				fr = nf;
				cap = ncap;
			}
			size_t tl = strlen(tok);
			bool kernel = tl > 4 && !strcmp(tok + tl - 4, "_[k]");

			if (kernel)
				tok[tl - 4] = 0;
			uint8_t kind = kernel ? STACKSNAP_KIND_KERNEL
				       : nfr == 0 ? STACKSNAP_KIND_ROOT
				       : STACKSNAP_KIND_USER;

			fr[nfr++] = (struct stacksnap_stack_frame){ .name = tok, .kind = kind };
		}
		if (err)
			break;
		for (size_t a = 0, b = nfr; a + 1 < b; a++, b--) {
			struct stacksnap_stack_frame t = fr[a];

			fr[a] = fr[b - 1];
			fr[b - 1] = t;
		}
		err = stacksnap_stacks__add(st, fr, nfr, count);
		stacks++;
	}
	free(fr);
	free(name);
	return err ? fail(err) : stacks;
}

/* ---- the name-merged tree ---- */

static int64_t mchild(struct mtree *t, uint32_t parent, const struct sframe *fr)
{
	uint32_t prev = 0, cur = t->n[parent].first_child;

	/* Children kept sorted by name: flame graphs order siblings
	 * alphabetically, so equal stacks line up across graphs. */
	while (cur) {
		int c = strcmp(t->n[cur].frame->disp, fr->disp);

		if (!c)
			return cur;
		if (c > 0)
			break;
		prev = cur;
		cur = t->n[cur].next_sibling;
	}
	struct mnode *m = VEC_PUSH(t->n, t->nn, t->cap);
	uint32_t idx = (uint32_t)(t->nn - 1);

	if (!m)
		return -1;
	*m = (struct mnode){ .frame = fr, .parent = parent, .next_sibling = cur,
			     .depth = t->n[parent].depth + 1 };
	if (prev)
		t->n[prev].next_sibling = idx;
	else
		t->n[parent].first_child = idx;
	if (m->depth > t->max_depth)
		t->max_depth = m->depth;
	return idx;
}

static int mtree_merge(struct mtree *t, const struct stacksnap_stacks *st, bool base)
{
	uint32_t *map = malloc(st->nnodes * sizeof(*map));

	if (!map)
		return -ENOMEM;
	map[0] = 0;
	/* parent < child: one pass in index order maps every node. */
	for (size_t i = 1; i < st->nnodes; i++) {
		const struct snode *s = &st->nodes[i];
		int64_t m = mchild(t, map[s->parent], &st->frames[s->frame]);

		if (m < 0) {
			free(map);
			return -ENOMEM;
		}
		map[i] = (uint32_t)m;
		if (base) {
			t->n[m].base_total += s->total;
		} else {
			t->n[m].total += s->total;
			t->n[m].self += s->self;
		}
	}
	if (base)
		t->n[0].base_total += st->nodes[0].total;
	else
		t->n[0].total += st->nodes[0].total;
	free(map);
	return 0;
}

int mtree_build(struct mtree *t, const struct stacksnap_stacks *st,
		const struct stacksnap_stacks *base)
{
	memset(t, 0, sizeof(*t));
	if (!VEC_PUSH(t->n, t->nn, t->cap))
		return -ENOMEM;
	t->n[0] = (struct mnode){ 0 };
	if (mtree_merge(t, st, false) || (base && mtree_merge(t, base, true))) {
		mtree_free(t);
		return -ENOMEM;
	}
	return 0;
}

void mtree_free(struct mtree *t)
{
	free(t->n);
	memset(t, 0, sizeof(*t));
}
