/* fp_lib.c - frame-pointer functions without CFI for the prologue helper's
 * test (built with -fno-omit-frame-pointer -fno-asynchronous-unwind-tables):
 * fp_outer calls fp_mid, which calls fp_leaf. */
int fp_leaf(int x);
int fp_mid(int x);
int fp_outer(int x);
volatile int fp_sink;

__attribute__((noinline)) int fp_leaf(int x)
{
	fp_sink += x;
	return fp_sink * 3;
}

__attribute__((noinline)) int fp_mid(int x)
{
	int r = fp_leaf(x + 1);
	fp_sink += r;
	return r + 1;
}

__attribute__((noinline)) int fp_outer(int x)
{
	int r = fp_mid(x * 2);
	fp_sink += r;
	return r - 1;
}

/* The wanderer's tail-call case: fp_tail_mid ends in a tail call (jmp) to
 * fp_tail_leaf from -O2 on, so a thread in fp_tail_leaf has fp_tail_outer's
 * return address (after its call to fp_tail_mid) above it. */
int fp_tail_leaf(int x);
int fp_tail_mid(int x);
int fp_tail_outer(int x);

__attribute__((noinline)) int fp_tail_leaf(int x)
{
	fp_sink += x;
	return fp_sink * 5;
}

__attribute__((noinline)) int fp_tail_mid(int x)
{
	fp_sink += 1;
	return fp_tail_leaf(x + 1);
}

__attribute__((noinline)) int fp_tail_outer(int x)
{
	int r = fp_tail_mid(x * 2);
	fp_sink += r;
	return r - 1;
}
