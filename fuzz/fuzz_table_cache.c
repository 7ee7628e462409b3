/* fuzz_table_cache.c - libFuzzer target: arbitrary bytes as a table cache
 * file through table_cache__decode and the checks of every chunk of rows
 * (as they are, then with their checksums made right, so that the checks
 * behind them are reached) and lookups in whatever table they accept. */
#include <stdlib.h>
#include <string.h>

#include "table/table_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const uint8_t *b, size_t size)
{
	struct cfi_input in[2];
	struct table_cache_key key = { .inputs = in };
	uint64_t sig[TABLE_CACHE_MAX_SIGRETURN];
	unsigned nsig;
	struct unwind_table *t = NULL;
	uint32_t n = 0;

	if (size < 200)
		return;
	/* The key the header names, so the fuzzer gets past it. */
	memcpy(&n, b + 20, 4);
	key.build_id = b + 24;
	key.build_id_len = n;
	memcpy(&n, b + 96, 4);
	key.ninputs = n;
	for (size_t i = 0; i < 2; i++) {
		memset(&in[i], 0, sizeof(in[i]));
		memcpy(&in[i].vaddr, b + 104 + 16 * i, 8);
		memcpy(&in[i].size, b + 112 + 16 * i, 8);
		in[i].is_eh_frame = (b[100] >> i) & 1;
	}
	if (table_cache__decode(b, size, &key, sig, &nsig, &t, NULL) || !t)
		return;
	/* The key's inputs have no bytes here: a table whose chunk fails
	 * its check would compile them, so lookups run only on a table
	 * whose every chunk passed. */
	if (unwind_table__check_all(t, NULL)) {
		unwind_table__free(t);
		return;
	}
	uint64_t lo, hi;
	unwind_table__range(t, &lo, &hi);
	for (unsigned i = 0; i <= 64; i++)
		unwind_table__lookup(t, lo - 1 + (hi - lo + 1) * i / 64);
	unwind_table__free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	decode(data, size);
	if (size < 200 || !(copy = malloc(size)))
		return 0;
	memcpy(copy, data, size);
	table_cache__seal(copy, size);
	decode(copy, size);
	free(copy);
	return 0;
}
