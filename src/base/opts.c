/* opts.c - versioned structs between the library and callers built
 * against other versions of its header. */
#include "opts.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

int opts_in(void *dst, size_t dst_size, const void *src, size_t min)
{
	size_t sz;

	memset(dst, 0, dst_size);
	if (!src)
		return 0;
	memcpy(&sz, src, sizeof(sz));
	if (sz < min || sz < sizeof(size_t))
		return -EINVAL;
	for (size_t i = dst_size; i < sz; i++)
		if (((const uint8_t *)src)[i])
			return -EINVAL;
	memcpy(dst, src, sz < dst_size ? sz : dst_size);
	return 0;
}

int opts_out(void *dst, const void *src, size_t src_size, size_t min)
{
	size_t sz;

	memcpy(&sz, dst, sizeof(sz));
	if (sz < min || sz < sizeof(size_t))
		return -EINVAL;
	memcpy((uint8_t *)dst + sizeof(size_t), (const uint8_t *)src + sizeof(size_t),
	       (sz < src_size ? sz : src_size) - sizeof(size_t));
	return 0;
}
