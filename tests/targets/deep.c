/* deep.c - gdb-comparison target: a recursion deeper than 5,000 frames
 * that blocks in nanosleep() at the bottom, so a complete walk has to go
 * through every frame. */
#include <time.h>
#include "target.h"

#define DEEP_DEPTH 6000

static int deep_recurse(int n);
/* Through a volatile pointer the compiler cannot see the recursion, so it
 * cannot turn it into a loop (gcc does that even for `f(n - 1) + 1`). */
static int (*volatile call_recurse)(int) = deep_recurse;

static NOINLINE int deep_bottom(int n)
{
	struct timespec ts = { 3600, 0 };

	target_ready(1);
	for (;;)
		nanosleep(&ts, NULL);
	return n;
}

static NOINLINE int deep_recurse(int n)
{
	int r;

	if (n == 0)
		return deep_bottom(n);
	r = call_recurse(n - 1);
	KEEP_FRAME();
	return r + n;
}

int main(void)
{
	int r;

	target_init();
	r = call_recurse(DEEP_DEPTH);
	KEEP_FRAME();
	return r;
}
