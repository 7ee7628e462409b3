/* w_inline.c - a perf workload whose hot code is inlined at -O2: mix()
 * inlined into step() inlined into work(), called through a recursion
 * (outer) so that the inline chain sits under several real frames.
 * usage: w_inline MS (about MS milliseconds of work) */
#include <stdlib.h>
#include <stdio.h>
static volatile unsigned sink;
static inline __attribute__((always_inline)) unsigned mix(unsigned x) { for (int i = 0; i < 50; i++) x = x * 2654435761u + (x >> 13); return x; }
static inline __attribute__((always_inline)) unsigned step(unsigned x) { return mix(x ^ 0x5bd1e995u) + 1; }
__attribute__((noinline)) unsigned work(unsigned n) { unsigned s = 0; for (unsigned i = 0; i < n; i++) s += step(i); return s; }
__attribute__((noinline)) unsigned outer(unsigned n, int d) { if (d) return outer(n, d - 1) + 1; return work(n); }
int main(int argc, char **argv) { int ms = argc > 1 ? atoi(argv[1]) : 300; for (int k = 0; k < ms * 10; k++) sink += outer(20000, k % 5); return 0; }
