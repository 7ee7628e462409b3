/* kunwind_dl.c - the library kunwind_target dlopen()s: dl_entry > dl_b >
 * the target's marker. */
#ifdef __cplusplus
extern "C" {
#endif
void marker(void);
void dl_entry(void);
#ifdef __cplusplus
}
#endif

__attribute__((noinline)) static void dl_b(void)
{
	marker();
	__asm__ volatile("" ::: "memory");
}

void dl_entry(void)
{
	dl_b();
	__asm__ volatile("" ::: "memory");
}
