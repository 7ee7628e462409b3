/* fuzz_sym_cache.c - libFuzzer target: arbitrary bytes as a symbol cache
 * file through sym_cache__decode (as they are, then with their checksums
 * made right, so that the checks behind them are reached), then every
 * access a lookup makes: blocks, records, names, function pieces. */
#include <stdlib.h>
#include <string.h>

#include "symbolize/sym_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const uint8_t *b, size_t size)
{
	struct sym_cache *c = NULL;
	const struct sym_cache_view *v;
	uint32_t id_len = 0;
	uint64_t key;

	if (size < SYM_CACHE_HDR_SIZE)
		return;
	/* The key the header names, so the fuzzer gets past it. */
	memcpy(&id_len, b + 16, 4);
	memcpy(&key, b + 64, 8);
	if (sym_cache__decode(b, size, b + 24, id_len, key, &c, NULL) || !c)
		return;
	v = sym_cache__view(c);
	for (unsigned t = 0; t < v->ntables; t++)
		for (size_t i = 0; i < v->nrecs[t] && i < 4096; i++) {
			const struct sym_rec *r = &v->recs[t][i];

			if (sym_cache__check(c, r, sizeof(*r)))
				(void)sym_cache__string(c, r->name_off, r->name_len);
		}
	for (size_t i = 0; i < v->nranges && i < 4096; i++)
		(void)sym_cache__check(c, &v->ranges[i], sizeof(v->ranges[i]));
	for (size_t i = 0; i < v->nfuncs && i < 4096; i++)
		if (sym_cache__check(c, &v->funcs[i], sizeof(v->funcs[i])) &&
		    v->funcs[i].name_off != SYM_FUNC_NONE)
			(void)sym_cache__string(c, v->funcs[i].name_off, 0);
	(void)sym_cache__check_all(c);
	sym_cache__free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	decode(data, size);
	if (size < SYM_CACHE_HDR_SIZE || !(copy = malloc(size)))
		return 0;
	memcpy(copy, data, size);
	sym_cache__seal(copy, size);
	decode(copy, size);
	free(copy);
	return 0;
}
