/* fuzz_jitdump.c - libFuzzer target for the jitdump reader (jit-<pid>.dump
 * files are written by the process being examined: outside bytes): any
 * input is read without reading past it, and the code ranges and their
 * line tables keep their invariants; a lookup gives the newest range
 * holding the address. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/jitdump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct jitdump_code *c;
	struct jitdump *jd;
	size_t n;
	volatile size_t sink = 0;

	if (jitdump__from_bytes(data, size, NULL, &jd) != 0)
		return 0;
	c = jitdump__codes(jd, &n);
	for (size_t i = 0; i < n; i++) {
		const struct jitdump_line *line;
		const struct jitdump_code *hit;

		if (c[i].start >= c[i].end || !c[i].name)
			abort();
		if (i && c[i - 1].start >= c[i].start)
			abort();
		for (uint32_t k = 0; k < c[i].nlines; k++) {
			if (!c[i].lines[k].file ||
			    c[i].lines[k].addr < c[i].start ||
			    c[i].lines[k].addr >= c[i].end)
				abort();
			if (k && c[i].lines[k - 1].addr > c[i].lines[k].addr)
				abort();
			sink += strlen(c[i].lines[k].file);
		}
		hit = jitdump__lookup(jd, c[i].end - 1, &line);
		if (!hit || c[i].end - 1 < hit->start ||
		    c[i].end - 1 >= hit->end)
			abort();
		/* The newest range holding it, however the ranges nest. */
		for (size_t k = 0; k < n; k++)
			if (c[k].start <= c[i].end - 1 &&
			    c[i].end - 1 < c[k].end && c[k].seq > hit->seq)
				abort();
		if (line && (line->addr < hit->start || line->addr >= hit->end))
			abort();
		sink += strlen(c[i].name);
	}
	(void)sink;
	jitdump__free(jd);
	return 0;
}
