/* print_go.c - a Go program's goroutines in the dump's text and JSON
 * output (docs/go.md): after the threads, each as the runtime's own dump
 * shows it (id, status, wait, thread, frames with inlined calls, created
 * by). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "print.h"

static void print_wait(FILE *f, int64_t ns)
{
	if (ns < 0)
		return;
	if (ns >= 60000000000ll)
		fprintf(f, ", %lld minutes", (long long)(ns / 60000000000ll));
	else
		fprintf(f, ", %.1f s", ns / 1e9);
}

/* A wait object's words: "0xc000020060 (chan int, capacity 0, 0 queued,
 * 3 receivers waiting)", "0xc000012345 (sync.Mutex)". */
static void print_object_text(FILE *f, const struct stacksnap_go_object *o)
{
	fprintf(f, "0x%" PRIx64 " (", o->addr);
	if (o->capacity < 0) {
		fprintf(f, "%s)", o->type);
		return;
	}
	if (o->elem_type)
		fprintf(f, "chan %s, ", o->elem_type);
	fprintf(f, "capacity %" PRId64 ", %" PRId64 " queued", o->capacity,
		o->queued);
	if (o->closed)
		fputs(", closed", f);
	if (o->receivers)
		fprintf(f, ", %u%s receiver%s waiting", o->receivers,
			o->counts_cut ? "+" : "", o->receivers == 1 ? "" : "s");
	if (o->senders)
		fprintf(f, ", %u%s sender%s waiting", o->senders,
			o->counts_cut ? "+" : "", o->senders == 1 ? "" : "s");
	fputc(')', f);
}

void print_goroutines_text(FILE *f, const struct stacksnap_goroutine *gs,
			   size_t n, bool first)
{
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_goroutine *g = &gs[i];

		fprintf(f, "%sGoroutine %" PRId64 " [%s", first && !i ? "" : "\n",
			g->goid, g->status);
		print_wait(f, g->wait_ns);
		fputs("]", f);
		if (g->thread)
			fprintf(f, " on thread %d", (int)g->thread);
		fputs(":\n", f);
		const char *why, *kind = stacksnap_goroutine__wait_kind(g, &why);

		if (kind && strcmp(kind, "go-runtime")) {
			fprintf(f, "    waits for: %s", kind);
			for (size_t k = 0; k < g->nobjects; k++) {
				fputs(k ? ", " : " ", f);
				print_object_text(f, &g->objects[k]);
			}
			if (!g->nobjects && g->object_unknown)
				fprintf(f, " (%s)", g->object_unknown);
			fprintf(f, "; %s\n", why);
		}
		for (size_t k = 0; k < g->nframes; k++) {
			const struct stacksnap_runtime_frame *fr = &g->frames[k];

			fprintf(f, "#%-3u 0x%016" PRIx64 " in %s", fr->native_index,
				fr->pc, fr->function);
			if (fr->file)
				fprintf(f, " (%s:%u)", fr->file, fr->line);
			if (fr->flags & STACKSNAP_RFRAME_INLINED)
				fputs(" [inlined]", f);
			fputc('\n', f);
		}
		if (g->end)
			fprintf(f, "    [truncated: %s]\n", g->end);
		if (g->created_by) {
			fprintf(f, "    created by %s", g->created_by);
			if (g->created_file)
				fprintf(f, " (%s:%u)", g->created_file,
					g->created_line);
			fputc('\n', f);
		}
	}
	const char *note;

	if (stacksnap_goroutines__all_asleep(gs, n, &note))
		fprintf(f, "\nDeadlock: all goroutines are asleep, each waits for "
			   "another%s%s\n", note ? ", " : "", note ? note : "");
}

void print_goroutines_json(FILE *f, const struct stacksnap_goroutine *gs,
			   size_t n)
{
	fputs("\"goroutines\":[", f);
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_goroutine *g = &gs[i];

		fprintf(f, "%s{\"goid\":%" PRId64 ",\"status\":", i ? "," : "",
			g->goid);
		json_str(f, g->status);
		fputs(",\"wait_reason\":", f);
		json_str(f, g->wait_reason);
		if (g->wait_ns >= 0)
			fprintf(f, ",\"wait_ns\":%" PRId64, g->wait_ns);
		else
			fputs(",\"wait_ns\":null", f);
		const char *why, *kind = stacksnap_goroutine__wait_kind(g, &why);

		fputs(",\"wait\":", f);
		if (kind) {
			fputs("{\"kind\":", f);
			json_str(f, kind);
			fputs(",\"no_owner\":", f);
			json_str(f, why);
			/* The object waited on (the first; a select's every
			 * channel in "objects"), or why it is not known. */
			if (g->nobjects)
				fprintf(f, ",\"object\":\"0x%" PRIx64 "\"",
					g->objects[0].addr);
			else
				fputs(",\"object\":null", f);
			fputs(",\"object_unknown\":", f);
			json_str(f, g->nobjects ? NULL : g->object_unknown);
			fputs(",\"objects\":[", f);
			for (size_t k = 0; k < g->nobjects; k++) {
				const struct stacksnap_go_object *o = &g->objects[k];

				fprintf(f, "%s{\"addr\":\"0x%" PRIx64 "\",\"type\":",
					k ? "," : "", o->addr);
				json_str(f, o->type);
				if (o->capacity >= 0)
					fprintf(f, ",\"capacity\":%" PRId64
						",\"queued\":%" PRId64
						",\"closed\":%s,\"receivers\":%u"
						",\"senders\":%u,\"counts_cut\":%s",
						o->capacity, o->queued,
						o->closed ? "true" : "false",
						o->receivers, o->senders,
						o->counts_cut ? "true" : "false");
				if (o->capacity >= 0) {
					fputs(",\"elem_type\":", f);
					json_str(f, o->elem_type);
				}
				fputc('}', f);
			}
			fputs("]}", f);
		} else {
			fputs("null", f);
		}
		if (g->thread)
			fprintf(f, ",\"thread\":%d", (int)g->thread);
		else
			fputs(",\"thread\":null", f);
		fputs(",\"created_by\":", f);
		if (g->created_by) {
			fputs("{\"function\":", f);
			json_str(f, g->created_by);
			fputs(",\"file\":", f);
			json_str(f, g->created_file);
			fprintf(f, ",\"line\":%u}", g->created_line);
		} else {
			fputs("null", f);
		}
		/* The program's profiler labels (pprof.Do), sorted by key. */
		fputs(",\"labels\":{", f);
		for (size_t k = 0; k < g->nlabels; k++) {
			if (k)
				fputc(',', f);
			json_str(f, g->labels[2 * k]);
			fputc(':', f);
			json_str(f, g->labels[2 * k + 1]);
		}
		fputc('}', f);
		fputs(",\"end\":", f);
		json_str(f, g->end);
		fputs(",\"frames\":[", f);
		for (size_t k = 0; k < g->nframes; k++) {
			const struct stacksnap_runtime_frame *fr = &g->frames[k];

			fprintf(f, "%s{\"runtime\":\"go\",\"pc\":\"0x%" PRIx64
				"\",\"function\":", k ? "," : "", fr->pc);
			json_str(f, fr->function);
			fputs(",\"file\":", f);
			json_str(f, fr->file);
			if (fr->line)
				fprintf(f, ",\"line\":%u", fr->line);
			else
				fputs(",\"line\":null", f);
			fprintf(f, ",\"inlined\":%s}",
				fr->flags & STACKSNAP_RFRAME_INLINED ? "true"
								     : "false");
		}
		fputs("]}", f);
	}
	fputc(']', f);
	/* Go's own "all goroutines are asleep": null when not. */
	const char *note;

	fputs(",\"goroutines_asleep\":", f);
	if (stacksnap_goroutines__all_asleep(gs, n, &note)) {
		fputs("{\"note\":", f);
		json_str(f, note);
		fputc('}', f);
	} else {
		fputs("null", f);
	}
}
