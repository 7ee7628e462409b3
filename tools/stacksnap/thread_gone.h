/* thread_gone.h - threads that exited while the capture ran
 * (thread_gone.c): left out of the dump, not a partial capture. */
#ifndef STACKSNAP_TOOL_THREAD_GONE_H
#define STACKSNAP_TOOL_THREAD_GONE_H

#include <stdbool.h>
#include <sys/types.h>

#include "print.h"

/* Whether thread tid of pid has exited (its /proc entry is gone, or it is
 * a zombie about to be): a thread the capture lost that still exists is
 * a partial capture, said on stderr. */
bool thread_gone(pid_t pid, pid_t tid);
/* Leaves the threads of res[0..n) that exited during the capture (no
 * frames, STACKSNAP_THREAD_GONE and gone now) out; returns the new n. */
size_t drop_gone_threads(pid_t pid, struct thread_result *res, size_t n);

#endif
