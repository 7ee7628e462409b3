/* profile_out.c - the profile outputs every source shares: the output
 * options, writing the aggregated stacks, adding walked threads to them,
 * and the stacks ranked for tables. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "print.h"
#include "profile_go.h"
#include "profile_out.h"

/* The format a file name says: -o out.svg, out.pb.gz (or .pb, .pprof),
 * out.json (speedscope's), out.folded; -1 for another name. */
static int format_of_name(const char *name)
{
	static const struct { const char *ext; int format; } exts[] = {
		{ ".svg", STACKSNAP_FORMAT_SVG }, { ".pb.gz", STACKSNAP_FORMAT_PPROF },
		{ ".pb", STACKSNAP_FORMAT_PPROF }, { ".pprof", STACKSNAP_FORMAT_PPROF },
		{ ".json", STACKSNAP_FORMAT_SPEEDSCOPE },
		{ ".folded", STACKSNAP_FORMAT_FOLDED },
	};
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t e = strlen(exts[i].ext);

		if (n > e && !strcmp(name + n - e, exts[i].ext))
			return exts[i].format;
	}
	return -1;
}

int profile_out_option(struct profile_out *po, const char *prefix, int c,
		       const char *arg)
{
	int f;

	switch (c) {
	case 'o':
		po->output = arg;
		/* Without --format (before or after), the name's extension
		 * says which profile; --format still decides. */
		if (!po->format_set && (f = format_of_name(arg)) >= 0) {
			po->format = (enum stacksnap_stacks_format)f;
			po->format_by_name = true;
		}
		return 0;
	case PROFILE_OUT_FORMAT:
		if (po->ctf_allowed && !strcmp(arg, "ctf")) {
			po->ctf = true;
			return 0;
		}
		if (stacksnap_stacks_format__parse(arg, &po->format)) {
			fprintf(stderr, "%s: --format '%s': expected folded, "
				"pprof, speedscope%s or svg\n", prefix, arg,
				po->ctf_allowed ? ", ctf" : "");
			return EXIT_USAGE;
		}
		po->format_set = true;
		return 0;
	case PROFILE_OUT_COLORS:
		if (!strcmp(arg, "module"))
			po->colors = STACKSNAP_COLOR_MODULE;
		else if (!strcmp(arg, "kind"))
			po->colors = STACKSNAP_COLOR_KIND;
		else {
			fprintf(stderr, "%s: --colors '%s': expected module or kind\n",
				prefix, arg);
			return EXIT_USAGE;
		}
		return 0;
	}
	return 1;
}

FILE *profile_out_open(const struct profile_out *po, const char *prefix)
{
	FILE *f = stdout;

	if (po->output && !(f = fopen(po->output, "we")))
		fprintf(stderr, "%s: cannot write %s: %s\n", prefix, po->output,
			strerror(errno));
	return f;
}

void profile_out_abandon(const struct profile_out *po, FILE *f)
{
	struct stat st;

	if (!f || f == stdout)
		return;
	if (po->output && !fstat(fileno(f), &st) && S_ISREG(st.st_mode) && !st.st_size)
		unlink(po->output);
	fclose(f);
}

int profile_out_write(const struct profile_out *po, const char *prefix, FILE *f,
		      const struct stacksnap_stacks *st, const char *title)
{
	int err;

	if (!f && !(f = profile_out_open(po, prefix)))
		return EXIT_ERROR;
	STACKSNAP_OPTS(stacksnap_stacks_write_opts, wo, .colors = po->colors,
		       .title = title);
	/* The writer's error is the write's cause (ENOSPC), named below. */
	err = stacksnap_stacks__write(st, f, po->format, &wo);
	if (f != stdout && fclose(f) && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "%s: writing %s: %s\n", prefix,
			po->output ? po->output : "standard output", strerror(-err));
		if (f == stdout)
			clearerr(f); /* said: not again, as EIO, when it is closed */
		return EXIT_ERROR;
	}
	return EXIT_OK;
}

int profile_out_add_thread(struct stacksnap_stacks *st,
			   struct stacksnap_addrspace *as, const char *root,
			   const struct thread_result *r, uint64_t count)
{
	return profile_out_add_thread_id(st, as, root, r, count, NULL);
}

int profile_out_add_thread_id(struct stacksnap_stacks *st,
			      struct stacksnap_addrspace *as, const char *root,
			      const struct thread_result *r, uint64_t count,
			      uint64_t *id)
{
	struct stacksnap_stack_frame stackbuf[64], *fr = stackbuf;
	size_t n = 0, rf = 0, need = r->nout + r->nrframes + 2;
	int err;

	if (need > 64 && !(fr = calloc(need, sizeof(*fr))))
		return -ENOMEM;
	for (size_t i = 0; i < r->nout; i++) {
		const struct stacksnap_frame *f = r->out[i].frame;
		const struct stacksnap_sym *s = &r->out[i].sym;
		bool exact = f == r->frames || (f->flags & STACKSNAP_FRAME_SIGNAL);
		size_t k = (size_t)(f - r->frames);
		STACKSNAP_OPTS(stacksnap_mapping, m);

		/* Python frames in place of the eval loop's (merged mode):
		   functions with their file and line, no module. */
		if (rf < r->nrframes && r->rframes[rf].native_index == k) {
			for (; rf < r->nrframes && r->rframes[rf].native_index == k; rf++)
				fr[n++] = (struct stacksnap_stack_frame){
					.name = r->rframes[rf].function,
					.file = r->rframes[rf].file,
					.line = (int)r->rframes[rf].line,
					.kind = STACKSNAP_KIND_USER,
				};
			while (i + 1 < r->nout && r->out[i + 1].frame == f)
				i++;
			continue;
		}
		fr[n] = (struct stacksnap_stack_frame){
			.name = s->function, .module = s->module,
			.addr = f->pc - !exact, .file = s->file, .line = s->line,
			.inlined = s->inlined,
			.kind = s->function || s->module ? STACKSNAP_KIND_USER
							 : STACKSNAP_KIND_UNKNOWN,
		};
		if (f->flags & STACKSNAP_FRAME_SIGRETURN) {
			fr[n].name = "<signal handler called>";
			fr[n].kind = STACKSNAP_KIND_USER;
		}
		if (as && stacksnap_addrspace__find_mapping(as, f->pc - !exact, &m) == 0) {
			fr[n].map_start = m.start;
			fr[n].map_end = m.end;
			fr[n].map_offset = m.offset;
			fr[n].build_id = m.build_id;
			fr[n].build_id_len = m.build_id_len;
		}
		n++;
	}
	for (; rf < r->nrframes; rf++)
		fr[n++] = (struct stacksnap_stack_frame){
			.name = r->rframes[rf].function, .file = r->rframes[rf].file,
			.line = (int)r->rframes[rf].line, .kind = STACKSNAP_KIND_USER,
		};
	if (r->end != STACKSNAP_END_COMPLETE)
		fr[n++] = (struct stacksnap_stack_frame){ .name = "[truncated]",
							  .kind = STACKSNAP_KIND_UNKNOWN };
	fr[n++] = (struct stacksnap_stack_frame){ .name = root, .kind = STACKSNAP_KIND_ROOT };
	err = stacksnap_stacks__add_id(st, fr, n, count, id);
	if (fr != stackbuf)
		free(fr);
	return err;
}

int profile_out_threads(const struct profile_out *po, const char *prefix,
			const struct stacksnap_goroutine *goroutines,
			size_t ngoroutines,
			struct stacksnap_addrspace *as,
			const struct thread_result *res, size_t n, const char *title)
{
	/* Goroutines alone: the sample type of Go's goroutine profile
	 * (profile --goroutines writes the same). */
	STACKSNAP_OPTS(stacksnap_stacks_opts, gopts, .sample_type = "goroutine",
		       .sample_unit = "count");
	struct stacksnap_stacks *st =
		stacksnap_stacks__new(ngoroutines && !n ? &gopts : NULL);
	size_t counted;
	int rc = EXIT_OK;

	for (size_t i = 0; st && i < n; i++) {
		const struct stacksnap_thread *th = res[i].thread;
		char name[32];

		if (th->error)
			continue; /* not captured: said by the caller */
		if (th->name[0])
			snprintf(name, sizeof(name), "%s", th->name);
		else
			snprintf(name, sizeof(name), ":%d", (int)th->tid);
		if (profile_out_add_thread(st, as, name, &res[i], 1)) {
			stacksnap_stacks__free(st);
			st = NULL;
		}
	}
	if (st && profile_go_add(st, goroutines, ngoroutines, &counted)) {
		stacksnap_stacks__free(st);
		st = NULL;
	}
	if (!st) {
		fprintf(stderr, "%s: out of memory\n", prefix);
		return EXIT_ERROR;
	}
	rc = profile_out_write(po, prefix, NULL, st, title);
	stacksnap_stacks__free(st);
	return rc;
}

static int top_add(const char *folded, uint64_t count, void *user)
{
	struct profile_top *t = user;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		void *v = realloc(t->v, cap * sizeof(*t->v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	if (!(t->v[t->n].text = strdup(folded)))
		return -ENOMEM;
	t->v[t->n++].count = count;
	return 0;
}

static int by_count(const void *a, const void *b)
{
	const struct profile_top *dummy = NULL;
	const __typeof__(dummy->v[0]) *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->text, y->text);
}

int profile_out_top(const struct stacksnap_stacks *st, struct profile_top *top)
{
	int err = stacksnap_stacks__visit_folded(st, top_add, top);

	if (err)
		return err;
	qsort(top->v, top->n, sizeof(*top->v), by_count);
	return 0;
}

void profile_out_top_free(struct profile_top *top)
{
	for (size_t i = 0; i < top->n; i++)
		free(top->v[i].text);
	free(top->v);
	memset(top, 0, sizeof(*top));
}
