/* ctf_events.c - the public CTF writer (stacksnap_ctf_writer__*): trace
 * events, live or read back from an events file, symbolized and handed
 * to the CTF 1.8 writer (ctf_writer.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/module.h"
#include "base/boot_id.h"
#include "base/clock_offset.h"
#include "base/log.h"
#include "base/opts.h"
#include "base/vec.h"
#include "ctf/ctf_writer.h"
#include "stacksnap.h"

#define CTF_MAX_INLINE 32	/* as the CLI's printers */

/* Scratch reused from event to event. Invariant: ips, frames and
 * text_off have room for cap entries; text holds the frames' symbol
 * strings, NUL-terminated, at the offsets in text_off. */
struct stacksnap_ctf_writer {
	struct stacksnap_ctx *ctx;
	struct stacksnap_ctf_writer_opts o;
	struct ctf_writer *w;
	char *dir;
	uint64_t *ips;
	struct ctf_frame *frames;
	size_t *text_off;
	size_t cap;
	char *text;
	size_t text_n, text_cap;
};

int64_t stacksnap_clock_offset_ns(void)
{
	return clock_realtime_offset_ns();
}

struct stacksnap_ctf_writer *
stacksnap_ctf_writer__new(struct stacksnap_ctx *ctx, const char *dir,
			  const struct stacksnap_ctf_writer_opts *opts)
{
	struct stacksnap_ctf_writer *cw;
	struct ctf_writer_opts wo;
	char boot_id[37];
	int err;

	if (!ctx || !dir) {
		errno = EINVAL;
		return NULL;
	}
	cw = calloc(1, sizeof(*cw));
	if (!cw || !(cw->dir = strdup(dir))) {
		free(cw);
		errno = ENOMEM;
		return NULL;
	}
	cw->ctx = ctx;
	if (opts_in(&cw->o, sizeof(cw->o), opts, 0)) {
		free(cw->dir);
		free(cw);
		errno = EINVAL;
		return NULL;
	}
	if (!cw->o.boot_id)
		boot_id_read(boot_id); /* none: the trace's own uuid */
	wo = (struct ctf_writer_opts){
		.clock_uuid = cw->o.boot_id ? cw->o.boot_id : boot_id,
		.clock_absolute = !cw->o.no_clock_offset,
		.clock_offset_ns = cw->o.no_clock_offset ? 0
				   : cw->o.clock_offset_ns ? cw->o.clock_offset_ns
				   : clock_realtime_offset_ns(),
		.hostname = cw->o.hostname && *cw->o.hostname ? cw->o.hostname : NULL,
		.kernel_release = cw->o.kernel_release && *cw->o.kernel_release
					  ? cw->o.kernel_release : NULL,
	};
	cw->w = ctf_writer__open(dir, &wo);
	if (!cw->w) {
		err = errno;
		log_err(&ctx->log, "%s: cannot write a CTF trace there: %s", dir,
			strerror(err));
		free(cw->dir);
		free(cw);
		errno = err;
		return NULL;
	}
	return cw;
}

static int reserve(struct stacksnap_ctf_writer *cw, size_t n)
{
	size_t cap_ips = cw->cap, cap_frames = cw->cap, cap_off = cw->cap;

	if (n <= cw->cap)
		return 0;
	if (vec_reserve((void **)&cw->ips, &cap_ips, n, sizeof(*cw->ips)) ||
	    vec_reserve((void **)&cw->frames, &cap_frames, n, sizeof(*cw->frames)) ||
	    vec_reserve((void **)&cw->text_off, &cap_off, n, sizeof(*cw->text_off)))
		return -ENOMEM;
	/* Each grew to at least n; the smallest is what all three hold. */
	cw->cap = cap_ips < cap_frames ? cap_ips : cap_frames;
	cw->cap = cw->cap < cap_off ? cw->cap : cap_off;
	return 0;
}

/* Appends a formatted string to the text scratch; its offset in *off. */
static int text_add(struct stacksnap_ctf_writer *cw, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int text_add(struct stacksnap_ctf_writer *cw, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || vec_reserve((void **)&cw->text, &cw->text_cap,
				 cw->text_n + (size_t)n + 1, 1))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(cw->text + cw->text_n, (size_t)n + 1, fmt, ap);
	va_end(ap);
	*off = cw->text_n;
	cw->text_n += (size_t)n + 1;
	return 0;
}

/* The frames as ctf_frame strings: "<signal handler called>" for the
 * trampoline, "function+0xoffset", or "[unknown]" (no symbol, as perf
 * script says; "??" would read "\?\?" in babeltrace2, which escapes
 * trigraphs); the module's path
 * or "". One name per frame (no inline expansion), so the symbolized
 * frames line up with the raw pcs. */
static int symbolize(struct stacksnap_ctf_writer *cw, const struct stacksnap_ctf_event *ev,
		     size_t n)
{
	unsigned flags = cw->o.sym_flags & ~(unsigned)STACKSNAP_SYM_LINES;

	cw->text_n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_frame *fr = &ev->frames[i];
		/* Room for a whole inline chain: without LINES the symbolizer
		 * reports its last entry (the containing function), which a
		 * shorter buffer would cut off. */
		struct stacksnap_sym syms[CTF_MAX_INLINE], sym = { 0 };
		int rc;

		cw->ips[i] = fr->pc;
		if (ev->as &&
		    stacksnap_addrspace__symbolize(ev->as, fr->pc,
						   i > 0 && !(fr->flags & STACKSNAP_FRAME_SIGNAL),
						   flags, syms, CTF_MAX_INLINE) > 0)
			sym = syms[0];
		if (fr->flags & STACKSNAP_FRAME_SIGRETURN)
			rc = text_add(cw, &cw->text_off[i], "<signal handler called>");
		else if (sym.function)
			rc = text_add(cw, &cw->text_off[i], "%s+0x%" PRIx64, sym.function,
				      sym.offset);
		else
			rc = text_add(cw, &cw->text_off[i], "[unknown]");
		if (rc)
			return rc;
		cw->frames[i].module = sym.module ? sym.module : "";
	}
	/* Pointers only now: the text may have moved as it grew. */
	for (size_t i = 0; i < n; i++)
		cw->frames[i].symbol = cw->text + cw->text_off[i];
	return 0;
}

int stacksnap_ctf_writer__add(struct stacksnap_ctf_writer *cw,
			      const struct stacksnap_ctf_event *ev_in)
{
	struct stacksnap_ctf_event ev;
	struct stacksnap_trace_field probe[2];
	struct ctf_event ce;
	size_t n;
	int rc;

	if (!cw || opts_in(&ev, sizeof(ev), ev_in, 0))
		return -EINVAL;
	n = ev.frames && ev.nframes > 0 ? (size_t)ev.nframes : 0;
	rc = reserve(cw, n);
	if (!rc)
		rc = symbolize(cw, &ev, n);
	if (rc)
		return rc;
	ce = (struct ctf_event){
		.name = ev.name, .time_ns = ev.time_ns, .cpu = ev.cpu,
		.pid = (int32_t)ev.pid, .tid = (int32_t)ev.tid, .comm = ev.comm,
		.fields = ev.fields, .nfields = ev.fields ? ev.nfields : 0,
		.ips = cw->ips, .nips = n, .frames = cw->frames, .nframes = n,
		.complete = ev.end == STACKSNAP_END_COMPLETE,
		.end = stacksnap_end__str(ev.end),
	};
	/* A uprobe's fields: the file and the function its name holds
	 * ("u:FILE:FUNC"; FUNC may hold "::", FILE is a path without ':'). */
	if (!ce.nfields && ev.name &&
	    (!strncmp(ev.name, "u:", 2) || !strncmp(ev.name, "ur:", 3))) {
		const char *file = strchr(ev.name, ':') + 1;
		const char *colon = strchr(file, ':');

		if (colon) {
			size_t off;

			rc = text_add(cw, &off, "%.*s", (int)(colon - file), file);
			if (rc)
				return rc;
			/* The text may have moved: the frames point again. */
			for (size_t i = 0; i < n; i++)
				cw->frames[i].symbol = cw->text + cw->text_off[i];
			probe[0] = (struct stacksnap_trace_field){ .name = "file",
								   .str = cw->text + off };
			probe[1] = (struct stacksnap_trace_field){ .name = "function",
								   .str = colon + 1 };
			ce.fields = probe;
			ce.nfields = 2;
		}
	}
	return ctf_writer__add(cw->w, &ce);
}

int stacksnap_ctf_writer__discarded(struct stacksnap_ctf_writer *cw, unsigned cpu,
				    uint64_t total)
{
	return cw ? ctf_writer__discarded(cw->w, cpu, total) : -EINVAL;
}

int stacksnap_ctf_writer__flush(struct stacksnap_ctf_writer *cw)
{
	int rc;

	if (!cw)
		return -EINVAL;
	rc = ctf_writer__flush(cw->w);
	if (rc)
		log_err(&cw->ctx->log, "%s: cannot write the CTF trace: %s", cw->dir,
			strerror(-rc));
	return rc;
}

int stacksnap_ctf_writer__close(struct stacksnap_ctf_writer *cw)
{
	int rc;

	if (!cw)
		return 0;
	rc = ctf_writer__close(cw->w);
	if (rc)
		log_err(&cw->ctx->log, "%s: cannot write the CTF trace: %s", cw->dir,
			strerror(-rc));
	free(cw->ips);
	free(cw->frames);
	free(cw->text_off);
	free(cw->text);
	free(cw->dir);
	free(cw);
	return rc;
}
