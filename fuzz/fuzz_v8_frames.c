/* fuzz_v8_frames.c - libFuzzer target for the V8 frame naming
 * (src/runtime/v8/v8_frames.c), which follows tagged pointers through a
 * node process's heap, and for the v8dbg constants' text form
 * (v8_layout.c): the input is that heap (a copy source at a fixed base,
 * every other read fails), read with node 20's layout, from a frame
 * pointer its first two bytes pick and at a pc its third byte picks
 * (base + 16 * byte; a baseline Code's pcs are walked beside its
 * bytecodes); the naming must end, bounded,
 * without reading past the bytes or looping. The same bytes are also
 * parsed as "name value" lines into a layout of their own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/v8/v8_frames.h"
#include "runtime/v8/v8_layout.h"
#include "stacksnap.h"
/* node 20's layout, as the unit test has it */
#include "../tests/unit/v8_node20.h"

#define BASE 0x10000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct v8_layout l;
	static int ready;
	struct v8_layout scratch;
	struct stacksnap_mem *mem;
	static struct v8_frame out[4];
	int n;
	const char *missing;
	uint16_t slot;

	if (!ready) {
		if (v8_node20_layout(&l, &missing))
			abort();
		/* Baseline frames' bytecode sizes (node's come from its
		   .symtab): 198 bytecodes, 1 to 5 bytes, wider scaled. */
		l.nbytecodes = 198;
		for (unsigned k = 0; k < 3; k++)
			for (unsigned b = 0; b < 198; b++)
				l.bytecode_sizes[k][b] = (uint8_t)(b < 4 ? 1 : 1 + (b % 5) * (k + 1));
		ready = 1;
	}
	v8_layout__init(&scratch);
	v8_layout__parse_text(&scratch, (const char *)data, size);
	(void)v8_layout__check(&scratch, &missing);
	if (size < 64)
		return 0;
	memcpy(&slot, data, sizeof(slot));
	if (!(mem = stacksnap_mem__new_copy(data, size, BASE)))
		return 0;
	n = v8_frame__name(&l, mem, BASE + 8 * (uint64_t)(slot % (size / 8)),
			   BASE + data[2] * 16ull, out, 4);
	if (n > 4)
		abort();
	for (int i = 0; i < n; i++)
		if (strlen(out[i].function) >= sizeof(out[i].function) ||
		    strlen(out[i].file) >= sizeof(out[i].file) ||
		    out[i].inlined != (i + 1 < n))
			abort();
	stacksnap_mem__free(mem);
	return 0;
}
