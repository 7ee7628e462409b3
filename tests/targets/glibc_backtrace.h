/* glibc_backtrace.h - glibc's own backtrace(), the oracle of the in-process
 * targets: looked up by its version so that a sanitizer's interceptor of it
 * is not what answers, and called once here, since its first call loads
 * libgcc_s and allocates, which a signal handler must not. */
#ifndef GLIBC_BACKTRACE_H
#define GLIBC_BACKTRACE_H

#include <dlfcn.h>
#include <execinfo.h>

typedef int (*glibc_backtrace_fn)(void **, int);

static inline glibc_backtrace_fn glibc_backtrace_warm(void)
{
	void *warm[4];
	glibc_backtrace_fn f = (glibc_backtrace_fn)dlvsym(
		dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), "backtrace",
		"GLIBC_2.2.5");

	if (!f)
		f = backtrace;
	f(warm, 4);
	return f;
}

#endif
