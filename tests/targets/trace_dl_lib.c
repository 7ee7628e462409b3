/* trace_dl_lib.c - the library trace_chains dlopen()s: a write() of 103
 * bytes from a chain of its own. */
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif
NOINLINE void tc_dl_b(int fd)
{
	static char buf[128];

	(void)!write(fd, buf, 103);
	KEEP_FRAME();
}

__attribute__((visibility("default"))) NOINLINE void tc_dl_entry(int fd)
{
	tc_dl_b(fd);
	KEEP_FRAME();
}
#ifdef __cplusplus
}
#endif
