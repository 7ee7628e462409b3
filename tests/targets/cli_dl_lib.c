/* cli_dl_lib.c - the library the cli_mt target dlopen()s: its entry calls
 * back into the program, through a frame of its own, so the walk crosses
 * between the two modules twice. */
#include "target.h"

static NOINLINE void cli_dl_inner(void (*back)(void))
{
	back();
	KEEP_FRAME();
}

static void (*volatile call_inner)(void (*)(void)) = cli_dl_inner;

#ifdef __cplusplus
extern "C"
#endif
__attribute__((visibility("default"))) NOINLINE void
cli_dl_entry(void (*back)(void))
{
	call_inner(back);
	KEEP_FRAME();
}
