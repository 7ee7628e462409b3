/* watch_waits.h - what `stacksnap watch` says of waits at the end of a
 * run (watch_waits.c): the threads that waited for the same holder at
 * every sample, and the deadlocks seen at every sample. */
#ifndef STACKSNAP_TOOL_WATCH_WAITS_H
#define STACKSNAP_TOOL_WATCH_WAITS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "stacksnap.h"

struct watch_waits;

/* A thread's OS name (comm), as the caller knows it; *rname (not NULL)
 * gets its runtime's name of it or NULL, *rkind then "Python" or "Java". */
typedef const char *(*watch_waits_name_fn)(void *user, pid_t tid, const char **rname,
					   const char **rkind);

/* For process pid, names from name(user, tid). NULL on -ENOMEM. */
struct watch_waits *watch_waits__new(struct stacksnap_ctx *ctx, pid_t pid,
				     watch_waits_name_fn name, void *user);
/* One thread of the sample being walked (from the walk's callback: th is
 * copied when it may wait). 0 or -ENOMEM. */
int watch_waits__add(struct watch_waits *ww, const struct stacksnap_walked_thread *th);
/* The sample's walk ended (ok: it counts as a sample): its waits read
 * (locks only, after the thaw) and compared with the first sample's. */
void watch_waits__sample(struct watch_waits *ww, struct stacksnap_addrspace *as, bool ok);
/* The waits and deadlocks seen at every one of the samples, as lines
 * after the table (nothing when none). */
void watch_waits__print_text(FILE *f, const struct watch_waits *ww, uint64_t elapsed_ns);
/* ,\n "persistent_waits": [...], "persistent_deadlocks": [...] */
void watch_waits__print_json(FILE *f, const struct watch_waits *ww);
void watch_waits__free(struct watch_waits *ww);

#endif
