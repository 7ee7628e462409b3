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
