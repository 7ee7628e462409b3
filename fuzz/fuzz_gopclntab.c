/* fuzz_gopclntab.c - libFuzzer target: arbitrary bytes as a Go pclntab
 * (any header version) mapped at FUZZ_VADDR, which also serves as the
 * funcdata base (go:func.*) so inline trees point back into the input:
 * function lookups, names, file:line, inline expansion, every pc-value
 * table, and the pcsp rows compiled from it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/gopclntab.h"
#include "table/go_pcsp.h"

#define FUZZ_VADDR 0x10000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gopclntab t;
	struct go_pcsp_func *funcs;
	struct go_pcsp_rows rows;
	size_t nf;

	if (gopclntab__init(&t, data, size, FUZZ_VADDR, NULL) != 0)
		return 0;
	t.gofunc = FUZZ_VADDR;
	gopclntab__add_region(&t, FUZZ_VADDR, data, size);
	for (uint64_t i = 0; i < t.nfunc && i < 64; i++) {
		struct go_func f;
		struct go_frame fr[8];

		if (gopclntab__func_at(&t, i, &f) != 0)
			continue;
		(void)gopclntab__func_name(&t, &f);
		for (unsigned k = 0; k < 8; k++) {
			uint64_t pc = f.entry + (f.end - f.entry) * k / 8;
			const char *file;
			int32_t line, v;

			(void)gopclntab__frames(&t, pc, fr, 8);
			(void)gopclntab__file_line(&t, &f, pc, &file, &line);
			(void)gopclntab__pcvalue(&t, &f, f.pcsp, pc, &v);
			(void)gopclntab__pcvalue(&t, &f,
				gopclntab__pcdata_table(&t, &f, 0), pc, &v);
		}
	}
	if (t.nfunc <= 4096 && gopclntab__pcsp_funcs(&t, &funcs, &nf) == 0) {
		if (go_pcsp__compile(funcs, nf, t.quantum, NULL, &rows) == 0) {
			for (size_t i = 0; i < nf && i < 64; i++)
				(void)go_pcsp__lookup(&rows, funcs[i].entry);
			go_pcsp__free(&rows);
		}
		free(funcs);
	}
	return 0;
}
