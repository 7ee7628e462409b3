/* vec.h - growable arrays: `T *items; size_t n, cap;` grown by VEC_PUSH. */
#ifndef SS_BASE_VEC_H
#define SS_BASE_VEC_H

#include <stddef.h>

/* Makes room for at least `need` elements of size `elem` in *items (with
 * capacity *cap), doubling. Returns 0 or -ENOMEM (items unchanged). */
int vec_reserve(void **items, size_t *cap, size_t need, size_t elem);

/* Appends one element slot (contents undefined) and returns it,
 * or NULL on -ENOMEM. Usage: struct row *r = VEC_PUSH(rows, n, cap); */
void *vec_push(void **items, size_t *n, size_t *cap, size_t elem);
#define VEC_PUSH(items, n, cap)                                                \
	((__typeof__(items))vec_push((void **)&(items), &(n), &(cap),          \
				     sizeof(*(items))))

#endif
