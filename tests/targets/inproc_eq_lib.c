/* inproc_eq_lib.c - the dlopen()ed library of inproc_eq: its entry calls
 * back into the main program through two frames of its own. */
#include "target.h"

typedef int (*inproc_cb)(int);

static NOINLINE int lib_middle(int n, inproc_cb cb)
{
	int r = cb(n + 1);

	KEEP_FRAME();
	return r * 3;
}

static int (*volatile call_middle)(int, inproc_cb) = lib_middle;

__attribute__((visibility("default"))) NOINLINE int
inproc_lib_entry(int n, inproc_cb cb)
{
	int r = call_middle(n, cb);

	KEEP_FRAME();
	return r + 5;
}
