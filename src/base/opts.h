/* opts.h - the caller's side of a versioned struct (first field `size_t
 * sz`, filled by STACKSNAP_OPTS): reading one the caller passed in, and
 * writing one the caller passed out, whatever header it was built with. */
#ifndef SS_BASE_OPTS_H
#define SS_BASE_OPTS_H

#include <stddef.h>

/* Copies the caller's struct at src into dst, the library's own version
 * (dst_size bytes): zero past what the caller's struct has; a newer,
 * larger struct is accepted only when its fields this library does not
 * know are zero (a caller asking for a feature we lack must hear so).
 * src may be NULL: dst all zero. min is the smallest sz accepted. Returns
 * 0 or -EINVAL. */
int opts_in(void *dst, size_t dst_size, const void *src, size_t min);

/* Copies the library's struct src (src_size bytes, its sz field set to
 * the library's size) into the caller's dst, only as far as the caller's
 * dst->sz says, and leaves dst->sz as the caller set it. Returns 0, or
 * -EINVAL when dst->sz is below min. */
int opts_out(void *dst, const void *src, size_t src_size, size_t min);

#endif
