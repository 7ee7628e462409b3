/* fuzz_python_linetable.c - libFuzzer target for the decoders of CPython's
 * line tables (the bytes come from the target's memory): 3.11+'s location
 * table, 3.10's co_linetable, 3.7-3.9's co_lnotab. Any table and offset
 * decode without reading past the table, and an offset before the first
 * instruction gives the first line. Input: 4 bytes first line (its top
 * byte picks the table's kind, mod 3), 4 bytes instruction offset, then
 * the table. */
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
	enum py_lines kind = (enum py_lines)(((uint32_t)first >> 24) % 3);
	first &= 0xffffff;	/* real first lines are small */
	/* An exact-size copy, so a read past the end is caught. */
	table = malloc(size - 8 ? size - 8 : 1);
	if (!table)
		return 0;
	memcpy(table, data + 8, size - 8);
	if (py_linetable__line_of(kind, table, size - 8, first, addrq,
				  &line) == 0 &&
	    addrq < 0 && line != first)
		abort();
	free(table);
	return 0;
}
