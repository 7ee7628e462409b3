/* fuzz_maps_line.c - libFuzzer target for the /proc/PID/maps line parser
 * (saved maps files given to `stacksnap symbolize --maps` are outside
 * bytes): any input is parsed without reading past it, and a line it
 * accepts keeps its invariants. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/maps_line.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size + 1);
	struct maps_line ml;

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (maps_line__parse(line, &ml) == 0) {
		if (ml.start >= ml.end)
			abort();
		if (ml.path && (ml.path < line || ml.path > line + size ||
				strlen(ml.path) > size))
			abort();
	}
	free(line);
	return 0;
}
