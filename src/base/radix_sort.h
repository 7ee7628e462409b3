/* radix_sort.h - a stable sort of fixed-size records by a 64-bit key. */
#ifndef SS_BASE_RADIX_SORT_H
#define SS_BASE_RADIX_SORT_H

#include <stddef.h>

/* Sorts n records of size bytes at base by the uint64_t at key_off in
 * each record, ascending; records with equal keys keep their order (as
 * glibc's merge-sort qsort does). An LSD radix sort, a byte a pass over
 * the bytes the largest key uses: ~4 passes for code addresses, where
 * qsort spent ~150 instructions a comparison (symbol tables, a table's
 * fragments). Returns 0, or -ENOMEM (base untouched). */
int radix_sort_u64(void *base, size_t n, size_t size, size_t key_off);

#endif
