/* dl_main.c - gdb-comparison target: calls into a library it dlopen()s
 * (path in argv[1]), which calls back into us, and we call the library's
 * blocking function: the stack crosses between the modules three times. */
#include <dlfcn.h>
#include "target.h"

typedef int (*dl_block_fn)(int);
typedef int (*dl_callback_fn)(int, dl_block_fn);
typedef int (*dl_entry_fn)(int, dl_callback_fn);

static NOINLINE int dl_main_callback(int n, dl_block_fn block)
{
	int r = block(n * 5 + 1);

	KEEP_FRAME();
	return r;
}

static NOINLINE int dl_main_caller(dl_entry_fn entry, int n)
{
	int r = entry(n, dl_main_callback);

	KEEP_FRAME();
	return r + 2;
}

static int (*volatile call_caller)(dl_entry_fn, int) = dl_main_caller;

int main(int argc, char **argv)
{
	void *lib;
	dl_entry_fn entry;
	int r;

	target_init();
	if (argc < 2) {
		fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	entry = (dl_entry_fn)dlsym(lib, "dl_lib_entry");
	if (!entry) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 2;
	}
	r = call_caller(entry, 4);
	KEEP_FRAME();
	return r;
}
