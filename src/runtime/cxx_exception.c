/* cxx_exception.c - a C++ exception in flight, read from the target's
 * memory (cxx_exception.h).
 *
 * x86_64 layout of the Itanium C++ ABI (libstdc++ and libc++abi alike):
 * the thrown object follows its __cxa_exception header, whose last member
 * is the 32-byte _Unwind_Exception (exception_class first); 80 bytes of
 * header come before it, exceptionType (a std::type_info *) first. A
 * std::type_info is { vptr, const char *name }; __si_class_type_info adds
 * the base's type_info. std::runtime_error and std::logic_error keep what()
 * as a reference-counted string whose pointer follows the vptr. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/opts.h"
#include "runtime/cxx_exception.h"
#include "symbolize/symbolize.h"

#define CXX_PRIMARY_CLASS 0x474e5543432b2b00ull /* "GNUCC++\0" */
#define CXX_HEADER_BEFORE_UNWIND 80	/* exceptionType .. adjustedPtr */
#define CXX_UNWIND_SIZE 32		/* _Unwind_Exception */
#define CXX_MAX_BASES 16		/* a deeper chain is not followed */
#define TI_NAME "typeinfo name for "

/* A NUL-terminated string of at most size - 1 bytes at addr, read in
 * pieces (a string near the end of a mapping). false when none ends. */
static bool read_string(cxx_read_fn read, void *user, uint64_t addr,
			char *buf, size_t size)
{
	size_t got = 0;

	while (got + 1 < size) {
		size_t want = 64 < size - 1 - got ? 64 : size - 1 - got;

		if (read(user, addr + got, buf + got, want)) {
			/* The rest of the piece may cross into no mapping. */
			for (; want && read(user, addr + got, buf + got, 1) == 0; want--)
				if (!buf[got++])
					return true;
			return false;
		}
		for (size_t i = 0; i < want; i++)
			if (!buf[got + i])
				return true;
		got += want;
	}
	return false;
}

static bool read_u64(cxx_read_fn read, void *user, uint64_t addr, uint64_t *v)
{
	return read(user, addr, v, sizeof(*v)) == 0;
}

/* A mangled type name as a type_info holds it: printable, not empty. */
static bool plausible_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e)
			return false;
	return true;
}

/* what() of an object of type t: the message of std::runtime_error or
 * std::logic_error when t is one of them or descends from one through
 * single, public, non-virtual inheritance (each link a
 * __si_class_type_info, whose vptr is the one the std type's own
 * type_info has). */
static void read_what(cxx_read_fn read, void *user, uint64_t t, uint64_t object,
		      char *what, size_t size)
{
	uint64_t vptr[CXX_MAX_BASES];
	size_t n = 0;
	char name[64];

	for (uint64_t cur = t; cur && n < CXX_MAX_BASES; n++) {
		uint64_t name_ptr, msg;

		if (!read_u64(read, user, cur, &vptr[n]) ||
		    !read_u64(read, user, cur + 8, &name_ptr) ||
		    !read_string(read, user, name_ptr, name, sizeof(name)))
			return;
		if (!strcmp(name, "St13runtime_error") || !strcmp(name, "St11logic_error")) {
			/* Every link below it an __si_class_type_info too. */
			for (size_t i = 0; i < n; i++)
				if (vptr[i] != vptr[n])
					return;
			if (read_u64(read, user, object + 8, &msg) &&
			    !read_string(read, user, msg, what, size))
				what[0] = 0;
			return;
		}
		if (!read_u64(read, user, cur + 16, &cur))
			return;
	}
}

int cxx_exception_find(cxx_read_fn read, void *user, const uint8_t *stack,
		       size_t len, uint64_t base, uint64_t lo, uint64_t hi,
		       struct stacksnap_cxx_exception *out)
{
	if (lo < base)
		lo = base;
	if (hi > base + len)
		hi = base + len;
	lo = (lo + 7) & ~7ull;
	for (uint64_t a = lo; a + 8 <= hi; a += 8) {
		uint64_t w, cls, type, name_ptr;
		char mangled[sizeof(out->type)], sym[sizeof(mangled) + 4];
		char *dm;

		memcpy(&w, stack + (a - base), sizeof(w));
		if (w < CXX_HEADER_BEFORE_UNWIND || (w & 7) ||
		    !read_u64(read, user, w, &cls) || cls != CXX_PRIMARY_CLASS ||
		    !read_u64(read, user, w - CXX_HEADER_BEFORE_UNWIND, &type) ||
		    !read_u64(read, user, type + 8, &name_ptr) ||
		    !read_string(read, user, name_ptr, mangled, sizeof(mangled)) ||
		    !plausible_name(mangled))
			continue;
		out->object = w + CXX_UNWIND_SIZE;
		/* A type's mangling is demangled as its type_info name's
		 * symbol, _ZTS + mangling: "typeinfo name for TYPE". */
		snprintf(sym, sizeof(sym), "_ZTS%s", mangled);
		dm = demangle(sym);
		snprintf(out->type, sizeof(out->type), "%s",
			 dm && !strncmp(dm, TI_NAME, strlen(TI_NAME))
				 ? dm + strlen(TI_NAME) : mangled);
		free(dm);
		out->what[0] = 0;
		read_what(read, user, type, out->object, out->what, sizeof(out->what));
		return 0;
	}
	return -ENOENT;
}

static int live_read(void *user, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(*(pid_t *)user, &local, 1, &remote, 1, 0) ==
			       (ssize_t)len ? 0 : -EFAULT;
}

int stacksnap_cxx_exception__read(pid_t pid, const struct stacksnap_thread *th,
				  uint64_t lo, uint64_t hi,
				  struct stacksnap_cxx_exception *out)
{
	struct stacksnap_cxx_exception e = { .sz = sizeof(e) };
	int err;

	if (pid <= 0 || !th || !out || out->sz < offsetof(struct stacksnap_cxx_exception, type))
		return -(errno = EINVAL);
	if (!th->stack)
		return -(errno = ENOENT);
	err = cxx_exception_find(live_read, &pid, th->stack, th->stack_len,
				 th->stack_base, lo, hi, &e);
	if (err)
		return -(errno = -err);
	return opts_out(out, &e, sizeof(e), offsetof(struct stacksnap_cxx_exception, type))
		       ? -(errno = EINVAL) : 0;
}
