/* fuzz_python_linetable.c - libFuzzer target for the decoder of CPython's
 * location table (co_linetable bytes come from the target's memory):
 * any table and offset decode without reading past the table, and a line
 * found for an offset stays within what the deltas can reach. Input: 4
 * bytes first line, 4 bytes instruction offset, then the table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/python/python.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first, addrq;
	uint8_t *table;
	int line;

	if (size < 8)
		return 0;
	memcpy(&first, data, 4);
	memcpy(&addrq, data + 4, 4);
	first &= 0xffffff;	/* real first lines are small */
	/* An exact-size copy, so a read past the end is caught. */
	table = malloc(size - 8 ? size - 8 : 1);
	if (!table)
		return 0;
	memcpy(table, data + 8, size - 8);
	if (py_linetable__line(table, size - 8, first, addrq, &line) == 0 &&
	    addrq < 0 && line != first)
		abort();
	free(table);
	return 0;
}
