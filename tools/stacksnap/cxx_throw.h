/* cxx_throw.h - the C++ exception a thread is throwing, for the dump: a
 * thread inside __cxa_throw, std::terminate or __cxa_rethrow shows the
 * exception's type and its what() (stacksnap_cxx_exception__read). */
#ifndef STACKSNAP_TOOL_CXX_THROW_H
#define STACKSNAP_TOOL_CXX_THROW_H

#include <stdio.h>

#include "print.h"

/* Reads the exception of every thread of live process pid (res: unwound
 * and symbolized) that is throwing one, into res[i].exception. Returns 0
 * or -ENOMEM. */
int cxx_throw_read(pid_t pid, struct thread_result *res, size_t n);
/* "    [throwing std::runtime_error: what() \"...\"]" */
void cxx_throw_text(FILE *f, const struct stacksnap_cxx_exception *e);
/* {"type":...,"what":...,"object":"0x..."} or null */
void cxx_throw_json(FILE *f, const struct stacksnap_cxx_exception *e);

#endif
