/* fuzz_go_labels.c - libFuzzer target: arbitrary bytes as a Go process's
 * memory at FUZZ_BASE, read as a goroutine's profiler labels (g.labels at
 * FUZZ_BASE: a *labelMap, its hmap, buckets, overflow chains and strings,
 * all pointing back into the input) by go_goroutine__read_labels. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mem/mem.h"
#include "runtime/go/go_runtime.h"

#define FUZZ_BASE 0x100000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct go_runtime rt;
	struct goroutine g;
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(data, size, FUZZ_BASE);

	if (!mem)
		return 0;
	memset(&rt, 0, sizeof(rt));
	snprintf(rt.version, sizeof(rt.version), "go1.19.8");
	memset(&g, 0, sizeof(g));
	g.labels_ptr = FUZZ_BASE;
	if (go_goroutine__read_labels(&rt, mem, &g) == 0)
		for (size_t i = 0; i < 2 * g.nlabels; i++)
			(void)strlen(g.labels[i]);
	go_goroutine__free_labels(&g);
	stacksnap_mem__free(mem);
	return 0;
}
