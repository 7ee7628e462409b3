/* vec.c - growth of the arrays described in vec.h. */
#include "vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int vec_reserve(void **items, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (elem && ncap > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*items, ncap * elem);
	if (!p)
		return -ENOMEM;
	*items = p;
	*cap = ncap;
	return 0;
}

void *vec_push(void **items, size_t *n, size_t *cap, size_t elem)
{
	if (vec_reserve(items, cap, *n + 1, elem))
		return NULL;
	return (char *)*items + (*n)++ * elem;
}
