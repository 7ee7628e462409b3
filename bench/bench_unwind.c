/* bench_unwind.c - warm unwinding speed: ns per frame for stacks copied
 * from this process (40 and 2,000 frames deep), the way a profiler would
 * unwind a sample, with the tables already compiled. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "stacksnap.h"

#define NOINLINE __attribute__((noinline))
#define COPY (256 << 10)

static struct stacksnap_regs regs;
static uint8_t *copy;
static uint64_t copy_base;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOINLINE static void snap(void)
{
	uint64_t rip, rsp, rbp;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(rip), "=r"(rsp), "=r"(rbp));
	regs.regs[STACKSNAP_REG_RIP] = rip;
	regs.regs[STACKSNAP_REG_RSP] = rsp;
	regs.regs[STACKSNAP_REG_RBP] = rbp;
	regs.valid = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP |
		     1u << STACKSNAP_REG_RBP;
	struct iovec l = { copy, COPY }, r = { (void *)(uintptr_t)rsp, COPY };
	/* The stack may be shorter than COPY above rsp: shrink until it reads. */
	while (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)l.iov_len)
		l.iov_len = r.iov_len = l.iov_len / 2;
	copy_base = rsp;
}

static volatile int sink;
NOINLINE static void depth(int n)
{
	if (n > 0)
		depth(n - 1);
	else
		snap();
	sink++;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void run(struct stacksnap_addrspace *as, int d, const char *label)
{
	static struct stacksnap_frame frames[4096];
	struct stacksnap_unwinder *uw;
	struct stacksnap_mem *mem;
	enum stacksnap_end end;
	double per[15];
	int n = 0;

	depth(d);
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = 4096);
	uw = stacksnap_unwinder__new(&uo);
	mem = stacksnap_mem__new_copy(copy, COPY, copy_base);
	uint64_t t0 = now_ns();
	n = stacksnap_unwind(uw, as, &regs, mem, frames, 4096, &end);
	printf("%-28s first walk %.3f ms (compiles the tables of modules met for the first time)\n",
	       label, (now_ns() - t0) / 1e6);
	for (int b = 0; b < 15; b++) {
		int iters = d > 100 ? 200 : 20000;

		if (getenv("BENCH_QUICK")) /* under valgrind: count, not time */
			iters = d > 100 ? 1 : 20;
		uint64_t start = now_ns();
		for (int i = 0; i < iters; i++)
			stacksnap_unwind(uw, as, &regs, mem, frames, 4096, &end);
		per[b] = (double)(now_ns() - start) / iters / n;
	}
	qsort(per, 15, sizeof(per[0]), cmp);
	printf("%-28s warm: %d frames, %s, median %6.1f ns/frame  (min %.1f, max %.1f; 15 batches)\n",
	       label, n, stacksnap_end__str(end), per[7], per[0], per[14]);
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
}

int main(void)
{
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(NULL);
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, getpid());

	copy = malloc(COPY);
	if (!ctx || !as || !copy)
		return 1;
	printf("== bench_unwind: warm unwind of a copied stack (compiled tables)\n");
	run(as, 40, "40 deep");
	run(as, 2000, "2000 deep");
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	free(copy);
	return 0;
}
