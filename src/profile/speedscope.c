/* speedscope.c - writes aggregated stacks as a speedscope file (its
 * published file format, https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile, each distinct stack once, root first, weighted by
 * its samples (nanoseconds when the sampling period is known). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/stacks.h"
#include "profile/writers.h"

struct by_name {
	const char *disp;	/* interned: equal names, equal pointers */
	uint32_t frame;
};

static int cmp_by_name(const void *a, const void *b)
{
	const struct by_name *x = a, *y = b;

	if (x->disp != y->disp)
		return (uintptr_t)x->disp < (uintptr_t)y->disp ? -1 : 1;
	return (x->frame > y->frame) - (x->frame < y->frame);
}

int speedscope_write(const struct stacksnap_stacks *st, FILE *f,
		     const struct stacksnap_stacks_write_opts *o)
{
	struct by_name *v = malloc((st->nframes + 1) * sizeof(*v));
	uint32_t *index = malloc((st->nframes + 1) * sizeof(*index));
	uint32_t *path = malloc(st->nnodes * sizeof(*path));
	uint64_t mult = st->o.period_ns ? st->o.period_ns : 1;
	const char *title = o->title ? o->title : "stacksnap";
	size_t nout = 0;
	bool first;

	if (!v || !index || !path) {
		free(v);
		free(index);
		free(path);
		return -ENOMEM;
	}
	/* One speedscope frame per shown name (what the flame graph merges). */
	for (size_t i = 0; i < st->nframes; i++)
		v[i] = (struct by_name){ st->frames[i].disp, (uint32_t)i };
	qsort(v, st->nframes, sizeof(*v), cmp_by_name);
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"exporter\":\"stacksnap " , f);
	fputs(stacksnap_version(), f);
	fputs("\",\"name\":", f);
	json_string(f, title);
	fputs(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", f);
	for (size_t i = 0; i < st->nframes; i++) {
		const struct sframe *fr = &st->frames[v[i].frame];

		if (i && v[i].disp == v[i - 1].disp) {
			index[v[i].frame] = (uint32_t)(nout - 1);
			continue;
		}
		index[v[i].frame] = (uint32_t)nout;
		fputs(nout++ ? ",{\"name\":" : "{\"name\":", f);
		json_string(f, fr->disp);
		if (fr->file) {
			fputs(",\"file\":", f);
			json_string(f, fr->file);
			if (fr->line > 0)
				fprintf(f, ",\"line\":%d", fr->line);
		} else if (fr->module) {
			fputs(",\"file\":", f);
			json_string(f, fr->module);
		}
		fputc('}', f);
	}
	fputs("]},\"profiles\":[{\"type\":\"sampled\",\"name\":", f);
	json_string(f, title);
	fprintf(f, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64
		",\"samples\":[", st->o.period_ns || !strcmp(st->o.sample_unit, "nanoseconds")
		? "nanoseconds" : "none",
		st->samples * mult);
	first = true;
	for (size_t i = 1; i < st->nnodes; i++) {
		size_t d = 0;

		if (!st->nodes[i].self)
			continue;
		for (uint32_t k = (uint32_t)i; k; k = st->nodes[k].parent)
			path[d++] = index[st->nodes[k].frame];
		fputs(first ? "[" : ",[", f);
		first = false;
		while (d-- > 0)
			fprintf(f, "%" PRIu32 "%s", path[d], d ? "," : "");
		fputc(']', f);
	}
	fputs("],\"weights\":[", f);
	first = true;
	for (size_t i = 1; i < st->nnodes; i++)
		if (st->nodes[i].self) {
			fprintf(f, "%s%" PRIu64, first ? "" : ",", st->nodes[i].self * mult);
			first = false;
		}
	fputs("]}]}\n", f);
	free(v);
	free(index);
	free(path);
	return 0;
}
