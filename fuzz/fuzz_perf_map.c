/* fuzz_perf_map.c - libFuzzer target for the perf map reader
 * (/tmp/perf-<pid>.map files are written by the process being examined:
 * outside bytes): any input parses without reading past it, the entries
 * keep their invariants, and every entry's start and last byte are found
 * by a lookup, in the newest entry holding them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/perf_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct perf_map_entry *e;
	struct perf_map *pm;
	size_t n;

	if (perf_map__from_text((const char *)data, size, &pm) != 0)
		return 0;
	e = perf_map__entries(pm, &n);
	for (size_t i = 0; i < n; i++) {
		const struct perf_map_entry *hit;

		if (e[i].start >= e[i].end || !e[i].name || !e[i].name[0])
			abort();
		if (i && e[i - 1].start >= e[i].start)
			abort();
		if (strlen(e[i].name) > size)
			abort();
		hit = perf_map__lookup(pm, e[i].start);
		if (!hit || hit->start > e[i].start || e[i].start >= hit->end)
			abort();
		/* The newest entry holding its last byte, however the
		 * entries nest. */
		hit = perf_map__lookup(pm, e[i].end - 1);
		if (!hit || hit->start > e[i].end - 1 || e[i].end - 1 >= hit->end)
			abort();
		for (size_t k = 0; k < n; k++)
			if (e[k].start <= e[i].end - 1 &&
			    e[i].end - 1 < e[k].end && e[k].seq > hit->seq)
				abort();
		perf_map__lookup(pm, e[i].end);
		perf_map__lookup(pm, e[i].start - 1);
	}
	perf_map__free(pm);
	return 0;
}
