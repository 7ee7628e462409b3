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


int trace_print_event(struct trace_printer *t, const struct trace_line *ev)
{
	struct thread_result r = {
		.frames = (struct stacksnap_frame *)ev->frames,
		.nframes = ev->nframes,
		.end = ev->end,
	};
	int err = 0;

	if (symbolize_thread(t->print, ev->as, &r))
		return -ENOMEM;
	if (t->counts) {
		err = profile_out_add_thread(t->counts, ev->as, ev->name, &r, 1);
	} else if (t->json) {
		fprintf(t->out, "{\"time\":%" PRIu64 ".%06" PRIu64 ",\"comm\":",
			ev->time_ns / 1000000000u, ev->time_ns % 1000000000u / 1000u);
		json_str(t->out, ev->comm);
		fprintf(t->out, ",\"pid\":%d,\"tid\":%d,\"cpu\":%u,\"event\":",
			(int)ev->pid, (int)ev->tid, ev->cpu);
		json_str(t->out, ev->name);
		json_fields(t, ev);
		fprintf(t->out, ",\"stack_bytes\":%u,\"complete\":%s,\"end\":",
			ev->stack_bytes, ev->end == STACKSNAP_END_COMPLETE ? "true" : "false");
		json_str(t->out, stacksnap_end__str(ev->end));
		fputs(",\"frames\":[", t->out);
		print_json_frames(t->out, &r);
		fputc(']', t->out);
		json_kernel_walk(t, ev);
		fputs("}\n", t->out);
	} else {
		fprintf(t->out, "%" PRIu64 ".%06" PRIu64 " %s %d/%d %s:",
			ev->time_ns / 1000000000u, ev->time_ns % 1000000000u / 1000u,
			ev->comm, (int)ev->pid, (int)ev->tid, ev->name);
		print_fields(t, ev);
		fputc('\n', t->out);
		print_text_frames(t->out, t->print, &r);
		fputc('\n', t->out);
	}
	free(r.out);
	return err;
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
