/* hotspot_frames.c - names one native frame of a JVM thread as its Java
 * frame, from the blob of the code cache that holds its pc. */
#define _GNU_SOURCE
#include "runtime/java/hotspot_frames.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* "pkg.Class.method" of method (its signature dropped: jstack's form),
 * its class's source file, and with bci >= 0 the line of bci. */
int hotspot_frame__method(struct hotspot_code *hc, uint64_t method, int bci,
			  struct hotspot_frame *out)
{
	char *paren;
	int line = 0, err;

	err = hotspot_code__method_name(hc, method, out->function,
					sizeof(out->function));
	if (err)
		return err;
	if ((paren = strchr(out->function, '(')))
		*paren = '\0';
	/* Read after the thaw: a class unloaded or redefined since the
	   capture may have freed the method, its name then wrong. Said in
	   the frame, not printed as the method. */
	out->state = hotspot_code__method_check(hc, method);
	if (out->state == HOTSPOT_METHOD_STALE) {
		snprintf(out->function, sizeof(out->function), "%s",
			 "?? (Java method no longer its class's: class unloaded "
			 "or redefined after the capture)");
		return 0;
	}
	/* The source file is the class's: known for compiled frames too
	   (their line needs the nmethod's scope descriptors). */
	if (hotspot_code__line(hc, method, bci, &line, out->file,
			       sizeof(out->file)) == 0 && line > 0)
		out->line = (unsigned)line;
	/* An old version (RedefineClasses): the frame runs it; the name is
	   right, the code is not the class's current code. */
	if (out->state == HOTSPOT_METHOD_OLD) {
		size_t len = strlen(out->function);

		snprintf(out->function + len, sizeof(out->function) - len, "%s",
			 " (old version: class redefined)");
	}
	return 0;
}

int hotspot_frame__name(struct hotspot_code *hc, struct stacksnap_mem *slots,
			uint64_t pc, uint64_t fp, struct hotspot_frame *out)
{
	struct hotspot_blob blob;
	uint64_t method = 0;
	int bci = -1, err;

	memset(out, 0, sizeof(*out));
	if ((err = hotspot_code__blob(hc, pc, &blob)))
		return err;
	out->blob = blob.start;
	if (blob.method) {
		out->kind = strcmp(blob.name, "native nmethod") ?
			HOTSPOT_FRAME_COMPILED : HOTSPOT_FRAME_NATIVE_WRAPPER;
		return hotspot_frame__method(hc, blob.method, -1, out);
	}
	if (blob.is_interpreter && fp &&
	    hotspot_code__interpreter_method(hc, slots, fp, &method) == 0 && method) {
		out->kind = HOTSPOT_FRAME_INTERPRETED;
		if (hotspot_code__interpreter_bci(hc, slots, fp, method, &bci))
			bci = -1;
		if (hotspot_frame__method(hc, method, bci, out) == 0)
			return 0;
		memset(out, 0, sizeof(*out));
		out->blob = blob.start;
	}
	/* A stub, an adapter, or an interpreter frame whose Method* slot
	   did not read as a method: the blob's own name says what it is. */
	out->kind = HOTSPOT_FRAME_STUB;
	snprintf(out->function, sizeof(out->function), "%s",
		 blob.name[0] ? blob.name : "CodeBlob");
	return 0;
}
