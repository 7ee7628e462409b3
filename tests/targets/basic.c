/* basic.c - gdb-comparison target: a plain C call chain that ends blocked
 * in pause(). Also built -static, with only .debug_frame, and stripped
 * with a debuglink file. */
#include "target.h"

/* Calls go through volatile pointers so no optimisation level can inline
 * or fold the chain; each level does different arithmetic so identical
 * code folding cannot merge two levels into one symbol. */
static int basic_block(int depth);
static int basic_level_three(int depth);
static int basic_level_two(int depth);
static int basic_level_one(int depth);
static int (*volatile call_block)(int) = basic_block;
static int (*volatile call_three)(int) = basic_level_three;
static int (*volatile call_two)(int) = basic_level_two;
static int (*volatile call_one)(int) = basic_level_one;

static NOINLINE int basic_block(int depth)
{
	target_ready(1);
	for (;;)
		pause();
	return depth;
}

static NOINLINE int basic_level_three(int depth)
{
	int r = call_block(depth + 3);

	KEEP_FRAME();
	return r * 7;
}

static NOINLINE int basic_level_two(int depth)
{
	int r = call_three(depth + 2);

	KEEP_FRAME();
	return r ^ 0x55;
}

static NOINLINE int basic_level_one(int depth)
{
	int r = call_two(depth + 1);

	KEEP_FRAME();
	return r - 11;
}

int main(void)
{
	int r;

	target_init();
	r = call_one(0);
	KEEP_FRAME();
	return r;
}
