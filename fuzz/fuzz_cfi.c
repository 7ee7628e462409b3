/* fuzz_cfi.c - libFuzzer target: arbitrary bytes as .eh_frame and as
 * .debug_frame through unwind_table__compile, lookups and eval_dwarf, as
 * .eh_frame_hdr + .eh_frame through a lazy table, and as either section
 * through a lazy table over an FDE index. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "table/unwind_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Memory reads come from the input itself, as if it were mapped at 0. */
struct fuzz_mem {
	const uint8_t *data;
	size_t size;
};

static int fuzz_read(void *user, uint64_t addr, void *buf, size_t len)
{
	const struct fuzz_mem *m = user;

	if (addr > m->size || len > m->size - addr)
		return -14; /* -EFAULT */
	memcpy(buf, m->data + addr, len);
	return 0;
}

static void exercise(const struct unwind_table *t, const uint8_t *data,
		     size_t size)
{
	struct fuzz_mem m = { data, size };
	struct stacksnap_regs regs, caller;
	uint64_t lo, hi, cfa;

	unwind_table__range(t, &lo, &hi);
	if (hi <= lo)
		return;
	for (unsigned i = 0; i < 16; i++) {
		uint64_t a = lo + (hi - lo) * i / 16;
		const struct unwind_row *r = unwind_table__lookup(t, a);

		if (!r || r->cfa_kind != UT_CFA_DWARF)
			continue;
		for (unsigned k = 0; k < STACKSNAP_REG_COUNT; k++)
			regs.regs[k] = (k * 0x9e3779b97f4a7c15ull) % (size + 1);
		regs.regs[STACKSNAP_REG_RIP] = a;
		regs.valid = (1u << STACKSNAP_REG_COUNT) - 1 - (i & 1);
		unwind_table__eval_dwarf(t, r, a, 0, &regs, fuzz_read, &m,
					 &caller, &cfa);
	}
	unwind_table__lookup(t, lo - 1);
	unwind_table__lookup(t, hi);
	unwind_table__lookup(t, hi - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int eh = 0; eh < 2; eh++) {
		struct cfi_input in = { .data = data, .size = size,
					.vaddr = 0x1000, .is_eh_frame = eh };
		struct unwind_table *t = NULL;

		if (unwind_table__compile(&in, 1, NULL, &t) == 0 && t) {
			exercise(t, data, size);
			unwind_table__free(t);
		}
	}
	/* A lazy table: the first 4 bytes say where the header starts;
	 * both sections share the input (as mapped at 0x1000). */
	if (size > 4) {
		uint32_t at;
		struct unwind_table *t = NULL;
		struct cfi_input in = { .data = data, .size = size,
					.vaddr = 0x1000, .is_eh_frame = 1 };

		memcpy(&at, data, 4);
		at %= (uint32_t)size;
		if (unwind_table__open_lazy(&in, data + at, size - at, 0x1000 + at,
					    NULL, &t) == 0 && t) {
			unwind_table__set_max_fills(t, 8 + (at & 7));
			exercise(t, data, size);
			unwind_table__complete(t);
			exercise(t, data, size);
			unwind_table__free(t);
		}
	}
	/* Lazy tables through an FDE index made in one pass, both formats. */
	for (int eh = 0; eh < 2; eh++) {
		struct cfi_input in = { .data = data, .size = size,
					.vaddr = 0x1000, .is_eh_frame = eh };
		struct unwind_table *t = NULL;

		if (unwind_table__open_lazy_index(&in, NULL, &t) == 0 && t) {
			unwind_table__set_max_fills(t, 8 + (size & 7));
			exercise(t, data, size);
			unwind_table__complete(t);
			exercise(t, data, size);
			unwind_table__free(t);
		}
	}
	return 0;
}
