/* trace_print.c - the lines of `stacksnap trace` (an event, its fields,
 * its frames; JSON; the --count/--folded stacks), printed alike for a live
 * trace and for an events file read back by `stacksnap show`. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_out.h"
#include "print.h"
#include "trace_print.h"

/* The event line's fields: "write(fd: 1, buf: 0x..., count: 6)" for a
 * system call entry (as perf trace shows it), "NAME() = RET" for its exit,
 * "name=value ..." for other tracepoints. */
static void print_fields(struct trace_printer *t, const struct trace_line *ev)
{
	const struct stacksnap_trace_field *f = ev->fields;
	int n = ev->nfields;
	const char *colon = strchr(ev->name, ':');
	const char *ev_name = colon ? colon + 1 : ev->name;
	bool sys_enter = !strncmp(ev_name, "sys_enter_", 10);
	bool sys_exit = !strncmp(ev_name, "sys_exit_", 9);

	if (sys_enter || sys_exit)
		fprintf(t->out, " %s(", ev_name + (sys_enter ? 10 : 9));
	for (int i = 0; i < n; i++) {
		if ((sys_enter || sys_exit) && !strcmp(f[i].name, "__syscall_nr"))
			continue;
		if (sys_exit) {
			fprintf(t->out, ") = %" PRId64, (int64_t)f[i].value);
			return;
		}
		fputs(sys_enter ? (i > 1 ? ", " : "") : " ", t->out);
		fprintf(t->out, sys_enter ? "%s: " : "%s=", f[i].name);
		if (f[i].str)
			fprintf(t->out, "%s", f[i].str);
		else if (f[i].is_pointer || (sys_enter && f[i].value > 0xffffffffull &&
					     !f[i].is_signed))
			fprintf(t->out, "%#" PRIx64, f[i].value);
		else if (f[i].is_signed)
			fprintf(t->out, "%" PRId64, (int64_t)f[i].value);
		else
			fprintf(t->out, "%" PRIu64, f[i].value);
	}
	if (sys_enter)
		fputc(')', t->out);
}

static void json_fields(struct trace_printer *t, const struct trace_line *ev)
{
	const struct stacksnap_trace_field *f = ev->fields;
	int n = ev->nfields;

	fputs(",\"fields\":{", t->out);
	for (int i = 0; i < n; i++) {
		fputs(i ? "," : "", t->out);
		json_str(t->out, f[i].name);
		fputc(':', t->out);
		if (f[i].str)
			json_str(t->out, f[i].str);
		else if (f[i].is_signed)
			fprintf(t->out, "%" PRId64, (int64_t)f[i].value);
		else
			fprintf(t->out, "%" PRIu64, f[i].value);
	}
	fputc('}', t->out);
}

/* --unwind kernel|both with --json: the in-kernel walk's pcs (exact ones
 * marked) and end reason, and in both mode how it compares with the
 * copy's walk (the frames above). */
static void json_kernel_walk(struct trace_printer *t, const struct trace_line *line)
{
	static const char *const agree[] = {
		[STACKSNAP_TRACE_AGREE_SAME] = "same",
		[STACKSNAP_TRACE_AGREE_FALLBACK] = "fallback",
		[STACKSNAP_TRACE_AGREE_KERNEL_PREFIX] = "kernel-prefix",
		[STACKSNAP_TRACE_AGREE_USER_PREFIX] = "user-prefix",
		[STACKSNAP_TRACE_AGREE_DIFFER] = "differ",
	};
	const struct stacksnap_trace_event *ev = line->live;

	if (t->unwind == STACKSNAP_TRACE_UNWIND_USER || !line->kernel_end)
		return;
	fputs(",\"kernel\":{\"end\":", t->out);
	json_str(t->out, line->kernel_end);
	fputs(",\"pcs\":[", t->out);
	for (int i = 0; i < line->kernel_nframes; i++)
		fprintf(t->out, "%s\"0x%" PRIx64 "\"", i ? "," : "",
			(uint64_t)(line->kernel_pcs[i] & ~(1ull << 63)));
	fputs("],\"exact\":[", t->out);
	for (int i = 0, n = 0; i < line->kernel_nframes; i++)
		if (line->kernel_pcs[i] >> 63)
			fprintf(t->out, "%s%d", n++ ? "," : "", i);
	fputc(']', t->out);
	if (!ev) {
		fputc('}', t->out);
		return;
	}
	if (t->unwind == STACKSNAP_TRACE_UNWIND_BOTH && ev->agreement >= 0 &&
	    ev->agreement <= STACKSNAP_TRACE_AGREE_DIFFER)
		fprintf(t->out, ",\"agreement\":\"%s\",\"first_difference\":%d",
			agree[ev->agreement], ev->first_difference);
	if (ev->hybrid_nframes >= 0) {
		/* The hybrid: the kernel's frames, then user space from
		 * where it stopped; the same as the copy's own walk? */
		bool same = ev->hybrid_nframes == (int)ev->nframes;

		for (int i = 0; same && i < ev->hybrid_nframes; i++)
			same = ev->hybrid_frames[i].pc == ev->frames[i].pc;
		fprintf(t->out, ",\"hybrid\":{\"frames\":%d,\"end\":", ev->hybrid_nframes);
		json_str(t->out, stacksnap_end__str(ev->hybrid_end));
		fprintf(t->out, ",\"same_as_copy\":%s,\"pcs\":[", same ? "true" : "false");
		for (int i = 0; i < ev->hybrid_nframes; i++)
			fprintf(t->out, "%s\"0x%" PRIx64 "\"", i ? "," : "",
				ev->hybrid_frames[i].pc);
		fputs("]}", t->out);
	}
	fputc('}', t->out);
}


/* Counting is per event, at up to hundreds of thousands a second: a stack
 * seen before (same process, address space, event, end and frames: pcs
 * and flags) is added again by its id, without symbolizing it or building
 * and interning its frames. An open-addressing table, grown at half full;
 * its size is the number of distinct stacks, as counts' is. */
struct memo_entry {
	uint64_t hash, id;
	pid_t pid;
	const void *as;
	char *name;
	int end, n;
	uint64_t pcs[];		/* n pcs, then n frame flags */
};

struct trace_memo {
	struct memo_entry **slot;
	size_t cap, used;
};

static uint64_t memo_hash(const struct trace_line *ev)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)ev->pid;

	h = (h ^ (uintptr_t)ev->as) * 1099511628211ull;
	h = (h ^ (uint64_t)ev->end) * 1099511628211ull;
	for (const char *c = ev->name; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	for (int i = 0; i < ev->nframes; i++)
		h = (h ^ ev->frames[i].pc ^ ((uint64_t)ev->frames[i].flags << 56)) *
		    1099511628211ull;
	return h;
}

static bool memo_equal(const struct memo_entry *e, uint64_t h,
		       const struct trace_line *ev)
{
	if (e->hash != h || e->pid != ev->pid || e->as != (const void *)ev->as ||
	    e->end != (int)ev->end || e->n != ev->nframes || strcmp(e->name, ev->name))
		return false;
	for (int i = 0; i < e->n; i++)
		if (e->pcs[i] != ev->frames[i].pc ||
		    e->pcs[e->n + i] != ev->frames[i].flags)
			return false;
	return true;
}

/* The slot of ev's stack: its entry, or the empty slot it would take. */
static struct memo_entry **memo_find(struct trace_memo *m, uint64_t h,
				     const struct trace_line *ev)
{
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
		if (!m->slot[i] || memo_equal(m->slot[i], h, ev))
			return &m->slot[i];
}

static int memo_grow(struct trace_memo *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	struct memo_entry **slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		struct memo_entry *e = m->slot[i];
		size_t j;

		if (!e)
			continue;
		for (j = e->hash & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
			;
		slot[j] = e;
	}
	free(m->slot);
	m->slot = slot;
	m->cap = cap;
	return 0;
}

/* Counts ev: 1 when it was a stack seen before (counted now), 0 when the
 * caller must add it (then memo_remember with its id), -ENOMEM. */
static int memo_count(struct trace_printer *t, const struct trace_line *ev,
		      uint64_t h)
{
	struct memo_entry **e;

	if (!t->memo && !(t->memo = calloc(1, sizeof(*t->memo))))
		return -ENOMEM;
	if ((t->memo->used + 1) * 2 > t->memo->cap && memo_grow(t->memo))
		return -ENOMEM;
	e = memo_find(t->memo, h, ev);
	if (!*e)
		return 0;
	return stacksnap_stacks__add_again(t->counts, (*e)->id, 1) ? -ENOMEM : 1;
}

static void memo_remember(struct trace_printer *t, const struct trace_line *ev,
			  uint64_t h, uint64_t id)
{
	struct memo_entry **slot = memo_find(t->memo, h, ev);
	struct memo_entry *e = malloc(sizeof(*e) + 2 * (size_t)ev->nframes * 8);

	if (!e || !(e->name = strdup(ev->name))) {
		free(e);
		return; /* not remembered: counted the long way next time */
	}
	e->hash = h;
	e->id = id;
	e->pid = ev->pid;
	e->as = ev->as;
	e->end = (int)ev->end;
	e->n = ev->nframes;
	for (int i = 0; i < e->n; i++) {
		e->pcs[i] = ev->frames[i].pc;
		e->pcs[e->n + i] = ev->frames[i].flags;
	}
	*slot = e;
	t->memo->used++;
}

void trace_printer_free(struct trace_printer *t)
{
	if (!t->memo)
		return;
	for (size_t i = 0; i < t->memo->cap; i++)
		if (t->memo->slot[i]) {
			free(t->memo->slot[i]->name);
			free(t->memo->slot[i]);
		}
	free(t->memo->slot);
	free(t->memo);
	t->memo = NULL;
}

int trace_print_event(struct trace_printer *t, const struct trace_line *ev)
{
	struct thread_result r = {
		.frames = (struct stacksnap_frame *)ev->frames,
		.nframes = ev->nframes,
		.end = ev->end,
		.rframes = (struct stacksnap_runtime_frame *)ev->rframes,
		.nrframes = ev->nrframes,
		.rend = ev->runtime_end,
	};
	int err = 0;
	uint64_t h = 0, id;
	/* The memo knows native pcs only: a stack with Python frames is
	 * counted the long way (its Python frames differ at the same pcs). */
	bool memo = t->counts && !ev->nrframes;

	if (memo) {
		h = memo_hash(ev);
		err = memo_count(t, ev, h);
		if (err)
			return err < 0 ? err : 0;
	}
	if (symbolize_thread(t->print, ev->as, &r))
		return -ENOMEM;
	if (t->counts) {
		err = profile_out_add_thread_id(t->counts, ev->as, ev->name, &r, 1, &id);
		if (!err && memo)
			memo_remember(t, ev, h, id);
	} else if (t->json) {
		fprintf(t->out, "{\"time\":%" PRIu64 ".%06" PRIu64 ",\"comm\":",
			ev->time_ns / 1000000000u, ev->time_ns % 1000000000u / 1000u);
		json_str(t->out, ev->comm);
		fprintf(t->out, ",\"pid\":%d,\"tid\":%d,\"cpu\":%u,\"event\":",
			(int)ev->pid, (int)ev->tid, ev->cpu);
		json_str(t->out, ev->name);
		if (ev->goid > 0)
			fprintf(t->out, ",\"goid\":%lld", (long long)ev->goid);
		json_fields(t, ev);
		fprintf(t->out, ",\"stack_bytes\":%u,\"complete\":%s,\"end\":",
			ev->stack_bytes, ev->end == STACKSNAP_END_COMPLETE ? "true" : "false");
		json_str(t->out, stacksnap_end__str(ev->end));
		fputs(",\"frames\":[", t->out);
		print_json_frames_mode(t->out, &r, t->print->runtime);
		fputc(']', t->out);
		if (ev->runtime_end) {
			fputs(",\"runtime_end\":", t->out);
			json_str(t->out, ev->runtime_end);
		}
		json_kernel_walk(t, ev);
		fputs("}\n", t->out);
	} else {
		fprintf(t->out, "%" PRIu64 ".%06" PRIu64 " %s %d/%d %s:",
			ev->time_ns / 1000000000u, ev->time_ns % 1000000000u / 1000u,
			ev->comm, (int)ev->pid, (int)ev->tid, ev->name);
		if (ev->goid > 0)
			fprintf(t->out, " goroutine=%lld", (long long)ev->goid);
		print_fields(t, ev);
		fputc('\n', t->out);
		print_text_frames(t->out, t->print, &r);
		fputc('\n', t->out);
	}
	free(r.out);
	return err;
}

int trace_print_counts_said(struct trace_printer *t, bool folded, const char *who,
			    const char *path)
{
	int r = trace_print_counts(t, folded);

	if (!r)
		return EXIT_OK;
	if (r == -ENOMEM)
		fprintf(stderr, "%s: out of memory\n", who);
	else {
		fprintf(stderr, "%s: writing %s: %s\n", who,
			path ? path : cli_stdout_path ? cli_stdout_path : "standard output",
			strerror(-r));
		clearerr(t->out);
	}
	return EXIT_ERROR;
}

int trace_print_counts(struct trace_printer *t, bool folded)
{
	STACKSNAP_OPTS(stacksnap_stacks_write_opts, wo);
	struct profile_top top = { 0 };

	if (folded)
		return stacksnap_stacks__write(t->counts, t->out, STACKSNAP_FORMAT_FOLDED, &wo);
	if (profile_out_top(t->counts, &top)) {
		profile_out_top_free(&top);
		return -ENOMEM;
	}
	for (size_t i = 0; i < top.n; i++) {
		const char *key = top.v[i].text, *first = strchr(key, ';');
		const char *end = key + strlen(key);

		fprintf(t->out, "%10" PRIu64 "  %.*s\n", top.v[i].count,
			(int)(first ? first - key : end - key), key);
		while (first && end > first) {
			const char *p = end;

			while (p > first && p[-1] != ';')
				p--;
			fprintf(t->out, "            %.*s\n", (int)(end - p), p);
			end = p - 1;
		}
		fputc('\n', t->out);
	}
	profile_out_top_free(&top);
	return 0;
}
