/* pprof.c - writes aggregated stacks as a pprof profile (profile.proto,
 * gzipped), encoded with protobuf-c from the generated profile.pb-c.h:
 * samples, locations with their addresses, mappings with file, range,
 * offset and build-id (so a backend can symbolize again), and functions
 * with file and line when known. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile/stacks.h"
#include "profile/writers.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

/* A small open-addressing map from a 64-bit key (hash of what identifies
 * the entry) to an index, with a caller's equality check. Invariant: cap
 * is a power of two, n < cap / 2; vals hold index + 1, 0 is empty. */
struct idmap {
	uint64_t *keys;
	uint32_t *vals;
	size_t n, cap;
};

static int idmap_init(struct idmap *m, size_t expect)
{
	m->cap = 16;
	while (m->cap < expect * 2 + 2)
		m->cap *= 2;
	m->n = 0;
	m->keys = calloc(m->cap, sizeof(*m->keys));
	m->vals = calloc(m->cap, sizeof(*m->vals));
	return m->keys && m->vals ? 0 : -ENOMEM;
}

static void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
}

/* The slot of key for which eq(user, index) holds, or the empty slot
 * where it belongs. Sized up front (idmap_init), so never full. */
static size_t idmap_find(const struct idmap *m, uint64_t key,
			 bool (*eq)(const void *user, uint32_t idx), const void *user)
{
	size_t i = (key * 0x9e3779b97f4a7c15ull >> 20) & (m->cap - 1);

	for (; m->vals[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key && eq(user, m->vals[i] - 1))
			return i;
	return i;
}

/* Everything being built. Arrays are sized by the number of frames (an
 * upper bound of functions, mappings and locations) and of strings. */
struct pp {
	const struct stacksnap_stacks *st;
	char **strs;
	size_t nstrs;
	struct idmap strmap;		/* string pointer -> index */
	Function *funcs;
	Function **funcp;
	size_t nfuncs;
	struct idmap funcmap;
	const struct sframe **func_frame; /* a frame naming each function */
	Mapping *maps;
	Mapping **mapp;
	size_t nmaps;
	struct idmap mapmap;
	const struct sframe **map_frame;
	uint32_t *loc_of_frame;		/* frame index -> location id (0: none) */
	Location *locs;
	Location **locp;
	Line *lines;
	Line **linep;
	size_t nlocs;
	const char *cur;		/* the string being looked up */
	const struct sframe *cur_frame;
};

static bool str_eq(const void *user, uint32_t idx)
{
	const struct pp *p = user;

	return !strcmp(p->strs[idx], p->cur);
}

static int64_t str_index(struct pp *p, const char *s)
{
	size_t slot;

	if (!s || !*s)
		return 0;
	p->cur = s;
	slot = idmap_find(&p->strmap, (uintptr_t)s, str_eq, p);
	if (!p->strmap.vals[slot]) {
		p->strs[p->nstrs] = (char *)s;
		p->strmap.keys[slot] = (uintptr_t)s;
		p->strmap.vals[slot] = (uint32_t)++p->nstrs;
	}
	return p->strmap.vals[slot] - 1;
}

static const char *func_name(const struct sframe *f)
{
	return f->name ? f->name : f->disp;
}

static bool func_eq(const void *user, uint32_t idx)
{
	const struct pp *p = user;

	return func_name(p->func_frame[idx]) == func_name(p->cur_frame) &&
	       p->func_frame[idx]->file == p->cur_frame->file;
}

static bool map_eq(const void *user, uint32_t idx)
{
	const struct sframe *a = ((const struct pp *)user)->map_frame[idx];
	const struct sframe *b = ((const struct pp *)user)->cur_frame;

	return a->module == b->module && a->build_id == b->build_id &&
	       a->map_start == b->map_start && a->map_end == b->map_end &&
	       a->map_offset == b->map_offset;
}

static uint64_t function_id(struct pp *p, const struct sframe *f)
{
	uint64_t key = (uintptr_t)func_name(f) * 31 + (uintptr_t)f->file;
	size_t slot;

	p->cur_frame = f;
	slot = idmap_find(&p->funcmap, key, func_eq, p);
	if (!p->funcmap.vals[slot]) {
		Function *fn = &p->funcs[p->nfuncs];

		perftools__profiles__function__init(fn);
		fn->id = p->nfuncs + 1;
		fn->name = fn->system_name = str_index(p, func_name(f));
		fn->filename = str_index(p, f->file);
		p->func_frame[p->nfuncs] = f;
		p->funcp[p->nfuncs] = fn;
		p->funcmap.keys[slot] = key;
		p->funcmap.vals[slot] = (uint32_t)++p->nfuncs;
	}
	return p->funcmap.vals[slot];
}

static uint64_t mapping_id(struct pp *p, const struct sframe *f)
{
	uint64_t key = (uintptr_t)f->module ^ (uintptr_t)f->build_id * 7 ^
		       f->map_start * 13 ^ f->map_end * 17 ^ f->map_offset;
	size_t slot;

	if (!f->module)
		return 0;
	p->cur_frame = f;
	slot = idmap_find(&p->mapmap, key, map_eq, p);
	if (!p->mapmap.vals[slot]) {
		Mapping *m = &p->maps[p->nmaps];

		perftools__profiles__mapping__init(m);
		m->id = p->nmaps + 1;
		m->memory_start = f->map_start;
		m->memory_limit = f->map_end;
		m->file_offset = f->map_offset;
		m->filename = str_index(p, f->module);
		m->build_id = str_index(p, (const char *)f->build_id);
		p->map_frame[p->nmaps] = f;
		p->mapp[p->nmaps] = m;
		p->mapmap.keys[slot] = key;
		p->mapmap.vals[slot] = (uint32_t)++p->nmaps;
	}
	Mapping *m = p->mapp[p->mapmap.vals[slot] - 1];

	m->has_functions |= f->name != NULL;
	m->has_filenames |= f->file != NULL;
	m->has_line_numbers |= f->line > 0;
	m->has_inline_frames |= f->inlined;
	return p->mapmap.vals[slot];
}

static uint64_t location_id(struct pp *p, uint32_t fi)
{
	const struct sframe *f = &p->st->frames[fi];

	if (!p->loc_of_frame[fi]) {
		Location *l = &p->locs[p->nlocs];
		Line *ln = &p->lines[p->nlocs];

		perftools__profiles__location__init(l);
		perftools__profiles__line__init(ln);
		l->id = p->nlocs + 1;
		l->mapping_id = mapping_id(p, f);
		l->address = f->addr;
		ln->function_id = function_id(p, f);
		ln->line = f->line;
		p->linep[p->nlocs] = ln;
		l->n_line = 1;
		l->line = &p->linep[p->nlocs];
		p->locp[p->nlocs] = l;
		p->loc_of_frame[fi] = (uint32_t)++p->nlocs;
	}
	return p->loc_of_frame[fi];
}

/* gzip (RFC 1952) of buf onto f. */
static int gzip_write(FILE *f, const uint8_t *buf, size_t len)
{
	uint8_t out[65536];
	z_stream z = { 0 };
	int zr, err = 0;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)buf;
	z.avail_in = (uInt)len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		if (fwrite(out, 1, sizeof(out) - z.avail_out, f) !=
		    sizeof(out) - z.avail_out) {
			err = errno ? -errno : -EIO; /* ENOSPC: said as such */
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	return err;
}

/* The samples of a profile being built: one per call-tree node with self
 * samples, its location ids (the frames from it to the root) and values.
 * Invariant: li <= the sum of the depths of those nodes (locids' size). */
struct pp_samples {
	Sample *samples;
	Sample **sampp;
	Label *labels;
	Label **labelp;
	uint64_t *locids;
	int64_t *values;
	uint32_t *depth;	/* of each call-tree node */
	size_t n, nvals, li;
	size_t lj;		/* labels used (<= the sum of the depths) */
};

/* The tables of p and ps, sized for st. Returns 0 or -ENOMEM (what was
 * allocated is freed by pp_free). */
static int pp_alloc(struct pp *p, struct pp_samples *ps, const struct stacksnap_stacks *st)
{
	size_t nf = st->nframes + 1, nloc_total = 0;

	/* Strings: every interned one at most, plus a few of our own. */
	p->strs = calloc(st->nstrs + 16, sizeof(*p->strs));
	p->funcs = calloc(nf, sizeof(*p->funcs));
	p->funcp = calloc(nf, sizeof(*p->funcp));
	p->func_frame = calloc(nf, sizeof(*p->func_frame));
	p->maps = calloc(nf, sizeof(*p->maps));
	p->mapp = calloc(nf, sizeof(*p->mapp));
	p->map_frame = calloc(nf, sizeof(*p->map_frame));
	p->loc_of_frame = calloc(nf, sizeof(*p->loc_of_frame));
	p->locs = calloc(nf, sizeof(*p->locs));
	p->locp = calloc(nf, sizeof(*p->locp));
	p->lines = calloc(nf, sizeof(*p->lines));
	p->linep = calloc(nf, sizeof(*p->linep));
	ps->samples = calloc(st->distinct + 1, sizeof(*ps->samples));
	ps->sampp = calloc(st->distinct + 1, sizeof(*ps->sampp));
	ps->values = calloc((st->distinct + 1) * ps->nvals, sizeof(*ps->values));
	/* Location ids of every sample: at most the sum of the depths. */
	ps->depth = calloc(st->nnodes, sizeof(*ps->depth));
	if (ps->depth)
		for (size_t i = 1; i < st->nnodes; i++) {
			ps->depth[i] = ps->depth[st->nodes[i].parent] + 1;
			if (st->nodes[i].self)
				nloc_total += ps->depth[i];
		}
	ps->locids = calloc(nloc_total + 1, sizeof(*ps->locids));
	/* Labels (root and LABEL frames): at most one a frame too. */
	ps->labels = calloc(nloc_total + 1, sizeof(*ps->labels));
	ps->labelp = calloc(nloc_total + 1, sizeof(*ps->labelp));
	if (!p->strs || !p->funcs || !p->funcp || !p->func_frame || !p->maps ||
	    !p->mapp || !p->map_frame || !p->loc_of_frame || !p->locs || !p->locp ||
	    !p->lines || !p->linep || !ps->samples || !ps->sampp || !ps->labels ||
	    !ps->labelp || !ps->values || !ps->depth || !ps->locids ||
	    idmap_init(&p->strmap, st->nstrs + 16) || idmap_init(&p->funcmap, nf) ||
	    idmap_init(&p->mapmap, nf))
		return -ENOMEM;
	return 0;
}

static void pp_free(struct pp *p, struct pp_samples *ps)
{
	free(ps->depth);
	free(ps->locids);
	free(ps->values);
	free(ps->labelp);
	free(ps->labels);
	free(ps->sampp);
	free(ps->samples);
	idmap_free(&p->strmap);
	idmap_free(&p->funcmap);
	idmap_free(&p->mapmap);
	free(p->linep);
	free(p->lines);
	free(p->locp);
	free(p->locs);
	free(p->loc_of_frame);
	free(p->map_frame);
	free(p->mapp);
	free(p->maps);
	free(p->func_frame);
	free(p->funcp);
	free(p->funcs);
	free(p->strs);
}

/* pprof takes the first mapping for the main binary (its "File:"): the
 * executable (a module not named *.so*) with the most samples is made
 * mapping 1. */
static void put_main_mapping(struct pp *p, const struct stacksnap_stacks *st)
{
	const struct snode *outer = NULL;

	for (size_t i = 1; i < st->nnodes; i++) {
		const struct snode *n = &st->nodes[i];
		const struct sframe *fr = &st->frames[n->frame];

		if (fr->kind == STACKSNAP_KIND_USER && fr->module && fr->module[0] == '/' &&
		    !strstr(fr->module, ".so") && (!outer || n->total > outer->total))
			outer = n;
	}
	if (outer)
		mapping_id(p, &st->frames[outer->frame]);
}

/* One sample per node with self samples: its locations from the node to
 * the root, the thread's name and the LABEL frames as labels, its count
 * (and time). */
static void put_samples(struct pp *p, struct pp_samples *ps,
			const struct stacksnap_stacks *st, int64_t thread_key)
{
	for (size_t i = 1; i < st->nnodes; i++) {
		const struct snode *n = &st->nodes[i];
		Sample *s = &ps->samples[ps->n];

		if (!n->self)
			continue;
		perftools__profiles__sample__init(s);
		s->location_id = &ps->locids[ps->li];
		for (uint32_t k = (uint32_t)i; k; k = st->nodes[k].parent) {
			uint32_t fi = st->nodes[k].frame;

			/* A process or thread name is a label, not a frame;
			 * so is a LABEL frame (its key and value). */
			if (st->frames[fi].kind == STACKSNAP_KIND_ROOT ||
			    st->frames[fi].kind == STACKSNAP_KIND_LABEL) {
				const struct sframe *lf = &st->frames[fi];
				Label *l = &ps->labels[ps->lj];

				perftools__profiles__label__init(l);
				if (lf->kind == STACKSNAP_KIND_LABEL) {
					l->key = str_index(p, lf->name);
					l->str = str_index(p, lf->file);
				} else {
					l->key = thread_key;
					l->str = str_index(p, lf->disp);
				}
				ps->labelp[ps->lj++] = l;
				if (!s->n_label++)
					s->label = &ps->labelp[ps->lj - 1];
				continue;
			}
			ps->locids[ps->li++] = location_id(p, fi);
			s->n_location_id++;
		}
		s->value = &ps->values[ps->n * ps->nvals];
		s->n_value = ps->nvals;
		s->value[0] = (int64_t)n->self;
		if (ps->nvals > 1)
			s->value[1] = (int64_t)(n->self * st->o.period_ns);
		ps->sampp[ps->n++] = s;
	}
}

int pprof_write(const struct stacksnap_stacks *st, FILE *f,
		const struct stacksnap_stacks_write_opts *o)
{
	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType vt[2], period_type = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	ValueType *vtp[2] = { &vt[0], &vt[1] };
	struct pp p = { .st = st };
	struct pp_samples ps = { .nvals = st->o.period_ns ? 2 : 1 };
	uint8_t *buf = NULL;
	size_t len;
	int err = -ENOMEM;

	if (pp_alloc(&p, &ps, st))
		goto out;
	p.strs[p.nstrs++] = (char *)"";
	for (int i = 0; i < 2; i++)
		perftools__profiles__value_type__init(&vt[i]);
	vt[0].type = str_index(&p, st->o.sample_type);
	vt[0].unit = str_index(&p, st->o.sample_unit);
	if (st->o.period_ns) {
		vt[1].type = period_type.type = str_index(&p, st->o.period_type);
		vt[1].unit = period_type.unit = str_index(&p, "nanoseconds");
		prof.period_type = &period_type;
		prof.period = (int64_t)st->o.period_ns;
	}
	int64_t thread_key = str_index(&p, "thread");

	put_main_mapping(&p, st);
	put_samples(&p, &ps, st, thread_key);
	if (o->title)
		str_index(&p, o->title);
	prof.n_sample_type = ps.nvals;
	prof.sample_type = vtp;
	prof.n_sample = ps.n;
	prof.sample = ps.sampp;
	prof.n_mapping = p.nmaps;
	prof.mapping = p.mapp;
	prof.n_location = p.nlocs;
	prof.location = p.locp;
	prof.n_function = p.nfuncs;
	prof.function = p.funcp;
	prof.n_string_table = p.nstrs;
	prof.string_table = p.strs;
	prof.time_nanos = (int64_t)st->o.time_ns;
	prof.duration_nanos = (int64_t)st->o.duration_ns;
	len = perftools__profiles__profile__get_packed_size(&prof);
	buf = malloc(len ? len : 1);
	if (!buf)
		goto out;
	perftools__profiles__profile__pack(&prof, buf);
	err = gzip_write(f, buf, len);
out:
	free(buf);
	pp_free(&p, &ps);
	return err;
}
