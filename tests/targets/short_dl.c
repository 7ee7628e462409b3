/* short_dl.c - a short-lived traced process: dlopen()s the library named
 * by argv[1] (trace_dl_lib.c), writes 103 bytes to /dev/null from it and
 * exits at once (with argv[2] "close", dlclose()s it first): by the time
 * a tracer reads the write's event, neither the library nor the process
 * may be mapped any more. argv[3], when given, is how many milliseconds
 * of CPU the library spins after the write (for profilers). */
#include <dlfcn.h>
#include <fcntl.h>
#include "target.h"

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	void (*entry)(int) = h ? (void (*)(int))dlsym(h, "tc_dl_entry") : NULL;
	int fd = open("/dev/null", O_WRONLY);

	if (!entry || fd < 0)
		return 2;
	entry(fd);
	KEEP_FRAME();
	if (argc > 3) {
		void (*spin)(int) = (void (*)(int))dlsym(h, "tc_dl_spin");

		if (!spin)
			return 2;
		spin(atoi(argv[3]));
		KEEP_FRAME();
	}
	if (argc > 2 && strcmp(argv[2], "close") == 0)
		dlclose(h);
	return 0;
}
