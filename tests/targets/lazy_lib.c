/* lazy_lib.c - the shared library of the lazy target: lazy_entry is an
 * ifunc, so its resolver runs when the main program's first call binds the
 * PLT slot lazily, called by ld.so's _dl_fixup from _dl_runtime_resolve,
 * whose CFA is kept in rbx after it realigns the stack; the resolver
 * blocks there. */
#include <poll.h>
#include "target.h"

static int lazy_impl(int n)
{
	return n + 1;
}

static NOINLINE void lazy_block(void)
{
	target_ready(1);
	for (;;)
		poll(NULL, 0, -1);
}

static NOINLINE void *lazy_resolver_inner(void)
{
	lazy_block();
	KEEP_FRAME();
	return (void *)lazy_impl;
}

static void *lazy_resolver(void)
{
	void *r = lazy_resolver_inner();

	KEEP_FRAME();
	return r;
}

__attribute__((visibility("default"))) int lazy_entry(int n)
	__attribute__((ifunc("lazy_resolver")));
