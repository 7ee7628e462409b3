/* cxx_throw.c - the C++ exception a thread is throwing (cxx_throw.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cxx_throw.h"

/* Functions of the C++ runtime that run while an exception is in flight
 * and keep it reachable from their frames. */
static bool throwing(const char *fn)
{
	static const char *const names[] = {
		"__cxa_throw", "__cxa_rethrow", "__cxa_call_terminate",
		"std::terminate", "__cxxabiv1::__terminate", "std::rethrow_exception",
	};

	for (size_t i = 0; fn && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(fn, names[i], strlen(names[i])) &&
		    (!fn[strlen(names[i])] || fn[strlen(names[i])] == '('))
			return true;
	return false;
}

int cxx_throw_read(pid_t pid, struct thread_result *res, size_t n)
{
	for (size_t t = 0; t < n; t++) {
		struct thread_result *r = &res[t];
		const struct stacksnap_frame *last = NULL;

		if (r->thread->error)
			continue;
		for (size_t i = 0; i < r->nout; i++)
			if (throwing(r->out[i].sym.function))
				last = r->out[i].frame;
		if (!last)
			continue;
		/* From the innermost frame to the caller of the outermost
		 * throwing frame (its words hold what it saved). */
		size_t k = (size_t)(last - r->frames);
		uint64_t hi = k + 1 < (size_t)r->nframes ? r->frames[k + 1].sp + 256
							 : UINT64_MAX;

		r->exception = calloc(1, sizeof(*r->exception));
		if (!r->exception)
			return -ENOMEM;
		r->exception->sz = sizeof(*r->exception);
		if (stacksnap_cxx_exception__read(pid, r->thread, r->frames[0].sp, hi,
						  r->exception)) {
			free(r->exception);
			r->exception = NULL;
		}
	}
	return 0;
}

void cxx_throw_text(FILE *f, const struct stacksnap_cxx_exception *e)
{
	fprintf(f, "    [throwing %s", e->type);
	if (e->what[0]) {
		fputs(": what() \"", f);
		for (const char *p = e->what; *p; p++)
			fprintf(f, *p == '"' || *p == '\\' ? "\\%c" : (unsigned char)*p < 0x20
				? "\\x%02x" : "%c", (unsigned char)*p);
		fputc('"', f);
	}
	fputs("]\n", f);
}

void cxx_throw_json(FILE *f, const struct stacksnap_cxx_exception *e)
{
	if (!e) {
		fputs("null", f);
		return;
	}
	fputs("{\"type\":", f);
	json_str(f, e->type);
	fputs(",\"what\":", f);
	json_str(f, e->what[0] ? e->what : NULL);
	fprintf(f, ",\"object\":\"0x%" PRIx64 "\"}", e->object);
}
