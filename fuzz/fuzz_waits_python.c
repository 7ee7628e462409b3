/* fuzz_waits_python.c - libFuzzer target for the CPython lock object
 * search of the wait graph (waits_python__find_lock): the input is the
 * target's memory at BASE and, word by word, the candidates; every read
 * outside it fails. Nothing is read past the input, and a lock found is
 * one of the candidates, holds the semaphore and is named by its type. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "waits/wait_python.h"

#define BASE 0x10000ull

struct fake {
	const uint8_t *data;
	size_t size;
};

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fake *f = ctx;

	if (addr < BASE || addr - BASE > f->size || len > f->size - (addr - BASE))
		return -EFAULT;
	memcpy(buf, f->data + (addr - BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fake f = { data, size };
	uint64_t cands[PY_LOCK_MAX_CANDS + 8], sem = 0, v;
	size_t n = 0;
	struct py_lock_obj o;

	if (size >= 8)
		memcpy(&sem, data, 8);
	for (size_t i = 8; i + 8 <= size && n < sizeof(cands) / sizeof(cands[0]); i += 8)
		memcpy(&cands[n++], data + i, 8);
	if (waits_python__find_lock(cands, n, sem, rd, &f, &o) != 1)
		return 0;
	bool found = false;

	for (size_t i = 0; i < n && i < PY_LOCK_MAX_CANDS && !found; i++)
		found = cands[i] == o.addr;
	if (!found || rd(&f, o.addr + 16, &v, 8) || v != sem)
		abort();
	if (!o.rlock && (o.owner || o.count))
		abort();
	return 0;
}
