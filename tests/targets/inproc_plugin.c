/* inproc_plugin.c - a plug-in of inproc_stress, built as several files so
 * that dlclose() really unloads them while other threads are sampled: a
 * few frames of its own, then a call back into the program. */
#include "target.h"

typedef int (*plugin_cb)(int);

static NOINLINE int plugin_deeper(int n, plugin_cb cb)
{
	int r = n > 0 ? plugin_deeper(n - 1, cb) : cb(n);

	KEEP_FRAME();
	return r + 1;
}

__attribute__((visibility("default"))) NOINLINE int
plugin_work(int n, plugin_cb cb)
{
	int r = plugin_deeper(n, cb);

	KEEP_FRAME();
	return r;
}
