/* lazy_main.c - calls an ifunc of lazy_lib.c for the first time through a
 * lazily bound PLT slot (linked with -z lazy), from a known chain. */
#include "target.h"

int lazy_entry(int n);

static NOINLINE int lazy_caller(int n)
{
	int r = lazy_entry(n);

	KEEP_FRAME();
	return r;
}

static int (*volatile call_caller)(int) = lazy_caller;

int main(int argc, char **argv)
{
	int r;

	target_init();
	r = call_caller(argc);
	KEEP_FRAME();
	return r == 42;
}
