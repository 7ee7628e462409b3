/* fuzz_go_waits.c - libFuzzer target: arbitrary bytes as a Go process's
 * memory at FUZZ_BASE, read as what goroutines wait on by
 * go_goroutines__read_waits (go1.19 layout): a goroutine in a channel
 * receive whose g.waiting is FUZZ_BASE (sudogs, a select's waitlink
 * chain, hchans, their wait queues and element types' names, all
 * pointing back into the input)
 * and one in a semacquire whose sudog is looked up in a runtime.semtable
 * at FUZZ_BASE (its treaps and waitlink chains). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"
#include "runtime/go/go_runtime.h"

#define FUZZ_BASE 0x100000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct go_runtime rt;
	struct goroutine g[3];
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(data, size, FUZZ_BASE);

	if (!mem)
		return 0;
	memset(&rt, 0, sizeof(rt));
	rt.have_layout = go_layout__for_version("go1.19", &rt.layout) == 0;
	rt.semtable = FUZZ_BASE;
	/* element types and their names inside the input */
	rt.types = FUZZ_BASE;
	rt.etypes = FUZZ_BASE + size;
	/* 251 roots of at least 16 bytes each, at most a cache line */
	rt.semtable_size = size / 251 >= 64 ? 251 * 64 : (size / 251) * 251;
	memset(g, 0, sizeof(g));
	for (int i = 0; i < 3; i++) {
		g[i].status = GO_GWAITING;
		g[i].g = FUZZ_BASE + 8 * (uint64_t)i;
	}
	g[0].waitreason = 14;	/* chan receive */
	g[0].waiting = FUZZ_BASE;
	g[1].waitreason = 9;	/* select */
	g[1].waiting = FUZZ_BASE + 64;
	g[2].waitreason = 18;	/* semacquire */
	if (go_goroutines__read_waits(&rt, mem, 0, g, 3) == 0)
		for (int i = 0; i < 3; i++) {
			if (g[i].nobjs > GO_MAX_WAIT_OBJECTS)
				__builtin_trap();
			if (g[i].obj_unknown)
				(void)strlen(g[i].obj_unknown);
			for (size_t k = 0; k < g[i].nobjs; k++)
				if (strlen(g[i].objs[k].elem_type) >=
				    sizeof(g[i].objs[k].elem_type))
					__builtin_trap();
		}
	for (int i = 0; i < 3; i++)
		free(g[i].objs);
	stacksnap_mem__free(mem);
	return 0;
}
