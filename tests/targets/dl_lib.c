/* dl_lib.c - the shared library of the dl_main target: its entry calls
 * back into the main program, which calls our blocking function, which
 * waits in poll(). */
#include <poll.h>
#include "target.h"

typedef int (*dl_block_fn)(int);
typedef int (*dl_callback_fn)(int, dl_block_fn);

static NOINLINE int dl_lib_block(int n)
{
	target_ready(1);
	for (;;)
		poll(NULL, 0, -1);
	return n;
}

static NOINLINE int dl_lib_middle(int n, dl_callback_fn callback)
{
	int r = callback(n, dl_lib_block);

	KEEP_FRAME();
	return r + 9;
}

static int (*volatile call_middle)(int, dl_callback_fn) = dl_lib_middle;

__attribute__((visibility("default"))) NOINLINE int
dl_lib_entry(int n, dl_callback_fn callback)
{
	int r = call_middle(n + 1, callback);

	KEEP_FRAME();
	return r * 3;
}
