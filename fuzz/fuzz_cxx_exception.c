/* fuzz_cxx_exception.c - libFuzzer target for the reader of a C++
 * exception in flight (src/runtime/cxx_exception.c): the input is both the
 * thread's stack copy (its first 512 bytes) and the target's memory (all
 * of it, at the same address), so stack words point into it; every read
 * stays inside, strings end, and a result is terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cxx_exception.h"

#define BASE 0x10000u

struct image {
	const uint8_t *data;
	size_t size;
};

static int image_read(void *user, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = user;

	if (addr < BASE || addr - BASE > im->size || len > im->size - (addr - BASE))
		return -14;
	memcpy(buf, im->data + (addr - BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = { data, size };
	struct stacksnap_cxx_exception e = { .sz = sizeof(e) };
	size_t slen = size < 512 ? size : 512;

	if (cxx_exception_find(image_read, &im, data, slen, BASE, BASE, BASE + slen,
			       &e) == 0 &&
	    (!memchr(e.type, 0, sizeof(e.type)) || !memchr(e.what, 0, sizeof(e.what))))
		abort();
	return 0;
}
